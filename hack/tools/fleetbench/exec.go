package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
	utilexec "k8s.io/client-go/util/exec"

	"github.com/rdmasuite/rdmasuite/internal/podrun"
)

// countingExec wraps the runner's Execer (podrun.RemoteExec over the
// instrumented client, so the recorder sees each exec's request too) and
// records what the default path costs in streams: how many are open at
// once, how many ran, which failed, and how long each took beside the
// simulated probe time.
type countingExec struct {
	next podrun.Execer
	st   *execStats
}

// execStats are a run's exec streams. An epoch is a stretch in which at
// least one stream is open: the runner runs a round's pairs at once and the
// next round only after every run of this one ended, so epochs are rounds
// (and a confirmation round, if any), in order.
type execStats struct {
	mu                   sync.Mutex
	open, peak           int
	total, errs, nonZero int
	firstErr             string
	epochs               []epoch
	client, server       []time.Duration // each exec's duration, by role
}

type epoch struct {
	first, last       time.Time
	cpuFirst, cpuLast time.Duration
	execs             int
}

func (c countingExec) Exec(ctx context.Context, namespace, pod, container string, cmd []string) (podrun.ExecResult, error) {
	start := c.st.begin()
	res, err := c.next.Exec(ctx, namespace, pod, container, cmd)
	c.st.end(start, slices.Contains(cmd, "client"), res, err)
	return res, err
}

func (s *execStats) begin() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	if s.open == 0 {
		s.epochs = append(s.epochs, epoch{first: now, cpuFirst: cpuTime()})
	}
	s.open++
	s.peak = max(s.peak, s.open)
	s.total++
	s.epochs[len(s.epochs)-1].execs++
	return now
}

func (s *execStats) end(start time.Time, client bool, res podrun.ExecResult, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	s.open--
	ep := &s.epochs[len(s.epochs)-1]
	ep.last, ep.cpuLast = now, cpuTime()
	if client {
		s.client = append(s.client, now.Sub(start))
	} else {
		s.server = append(s.server, now.Sub(start))
	}
	switch {
	case err != nil:
		s.errs++
		if s.firstErr == "" {
			s.firstErr = err.Error()
		}
	case res.Exit != 0:
		s.nonZero++
		if s.firstErr == "" {
			s.firstErr = "exit " + strings.TrimSpace(res.Output)
		}
	}
}

// current is the epoch open now (-1: none): the round an exec request
// sent now belongs to.
func (s *execStats) current() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.open == 0 {
		return -1
	}
	return len(s.epochs) - 1
}

// quantiles are the p50, p95 and max of ds (zero when empty).
func quantiles(ds []time.Duration) (p50, p95, top time.Duration) {
	if len(ds) == 0 {
		return 0, 0, 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2], s[min(len(s)-1, len(s)*95/100)], s[len(s)-1]
}

// procCPU is the CPU time of the control plane's processes (by name, from
// -procs) and of their reaped children (kwok's exec'd stand-ins): on the
// bench's one machine they share its cores with the runner, and a run
// whose every core was busy measured the machine, not the runner.
type procCPU map[string][2]time.Duration // name → own, children

func readProcCPU(pids map[string]int) procCPU {
	out := procCPU{}
	for name, pid := range pids {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		// Fields after the command's closing parenthesis: utime, stime,
		// cutime, cstime are the 14th-17th fields of the line (proc(5)).
		s := string(b)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
		if len(f) < 15 {
			continue
		}
		tick := func(i int) time.Duration {
			v, _ := strconv.ParseInt(f[i], 10, 64)
			return time.Duration(v) * time.Second / clkTck
		}
		out[name] = [2]time.Duration{tick(11) + tick(12), tick(13) + tick(14)}
	}
	return out
}

// machineBusy is the CPU time every process of the machine used so far
// (/proc/stat: all but idle and iowait): beside the bench's own, it shows
// what others took from the same cores during a run.
func machineBusy() time.Duration {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	var busy int64
	for i, v := range f[1:] {
		n, _ := strconv.ParseInt(v, 10, 64)
		if i != 3 && i != 4 && i < 8 { // user nice system idle iowait irq softirq steal
			busy += n
		}
	}
	return time.Duration(busy) * time.Second / clkTck
}

// clkTck is USER_HZ, 100 on every Linux the bench runs on.
const clkTck = 100

func parseProcs(s string) (map[string]int, error) {
	out := map[string]int{}
	if s == "" {
		return out, nil
	}
	for _, kv := range strings.Split(s, ",") {
		name, pid, ok := strings.Cut(kv, "=")
		n, err := strconv.Atoi(pid)
		if !ok || err != nil {
			return nil, fmt.Errorf("-procs %q: want name=pid,…", s)
		}
		out[name] = n
	}
	return out, nil
}

// cpuLine says where the machine's CPU went during a run.
func cpuLine(before, after procCPU, runner, wall, machine time.Duration) string {
	var parts []string
	total := runner
	for _, name := range slices.Sorted(maps.Keys(after)) {
		a, b := after[name], before[name]
		own, kids := a[0]-b[0], a[1]-b[1]
		total += own + kids
		p := fmt.Sprintf("%s %.1f s", name, own.Seconds())
		if kids > 0 {
			p += fmt.Sprintf(" (+ its exec'd processes %.1f s)", kids.Seconds())
		}
		parts = append(parts, p)
	}
	cores := runtime.NumCPU()
	avail := float64(cores) * wall.Seconds()
	return fmt.Sprintf("CPU during the run: runner %.1f s, %s; %.1f s in all of the %d cores × %.1f s wall = %.1f s (%.0f%% busy); "+
		"the machine's every process %.1f s (%.0f%%: %.1f s not the bench's)",
		runner.Seconds(), strings.Join(parts, ", "), total.Seconds(), cores, wall.Seconds(), avail, 100*total.Seconds()/avail,
		machine.Seconds(), 100*machine.Seconds()/avail, (machine - total).Seconds())
}

// spdyExec is podrun.RemoteExec over SPDY only (-exec-protocol spdy): an
// experiment, not the suite's way (podrun.StreamExecutor tries WebSocket
// first, as kubectl does). The API server proxies a SPDY exec to the
// kubelet as bytes, where a WebSocket exec is translated to SPDY in the API
// server; the bench compares what each costs the API server per stream.
type spdyExec struct {
	config *rest.Config
	kube   kubernetes.Interface
}

func (e spdyExec) Exec(ctx context.Context, namespace, pod, container string, cmd []string) (podrun.ExecResult, error) {
	req := e.kube.CoreV1().RESTClient().Post().Resource("pods").Namespace(namespace).Name(pod).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{Container: container, Command: cmd, Stdout: true, Stderr: true}, scheme.ParameterCodec)
	ex, err := remotecommand.NewSPDYExecutor(e.config, "POST", req.URL())
	if err != nil {
		return podrun.ExecResult{}, err
	}
	// Standard error is dropped: the stand-in prints nothing there, and
	// the envelope lines stay whole without podrun's line merger.
	var out bytes.Buffer
	err = ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: &out, Stderr: io.Discard})
	res := podrun.ExecResult{Output: out.String()}
	var code utilexec.CodeExitError
	switch {
	case err == nil:
		res.Exited = true
	case errors.As(err, &code):
		res.Exit, res.Exited = code.Code, true
	default:
		return res, fmt.Errorf("exec in pod %s/%s: %w", namespace, pod, err)
	}
	return res, nil
}
