package main

import (
	"context"
	"fmt"
	"maps"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

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
func cpuLine(before, after procCPU, runner, wall time.Duration) string {
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
	return fmt.Sprintf("CPU during the run: runner %.1f s, %s; %.1f s in all of the %d cores × %.1f s wall = %.1f s (%.0f%% busy)",
		runner.Seconds(), strings.Join(parts, ", "), total.Seconds(), cores, wall.Seconds(), float64(cores)*wall.Seconds(),
		100*total.Seconds()/(float64(cores)*wall.Seconds()))
}
