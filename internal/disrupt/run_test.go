package disrupt

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/rdmasuite/rdmasuite/reports"
	"github.com/rdmasuite/rdmasuite/workloads/probeout"
	"github.com/rdmasuite/rdmasuite/workloads/stall"
)

// sim stands in for kubelet, the DaemonSet controller, the PV binder and
// the probe: pods start when created, writers print steady and progress,
// `stall stop` ends them with an envelope, the verify pod ends with one,
// and a deleted MOFED pod is replaced (Ready 30 s later unless stuck).
type sim struct {
	t     *testing.T
	cs    *fake.Clientset
	clk   *fakeClock
	o     Options
	mu    sync.Mutex
	logs  map[string]string
	born  map[string]time.Time
	pods  map[string]*corev1.Pod // as created
	stops [][]string
	// stuck: nodes whose new MOFED pod never becomes Ready.
	stuck map[string]bool
	// hung: nodes whose writer, once stopped, prints an ongoing-stall
	// result and then never exits (its process held in a hung NFS call).
	hung map[string]bool
	// unreported: nodes whose writer, once stopped, prints its whole
	// result and exits, but whose pod the kubelet keeps showing Running
	// (the runtime never reported the exit: containerd 1.6 with crun, run
	// M of 2026-11-30).
	unreported map[string]bool
	// silent: writers never print the steady line.
	silent    bool
	deletedAt map[string]time.Time // node → when its MOFED pod went
	readyAt   map[string]time.Time
	printed   []string // the progress lines, in order
	// verifies are the `stall verify` execs in the held verify pods;
	// verifyExec, when set, answers them instead of a clean verification.
	verifies   [][]string
	verifyExec func(cmd []string) (string, string, error)
}

func newSim(t *testing.T, targets ...string) *sim {
	clk := newClock()
	now := clk.Now()
	var objs []runtime.Object
	for _, n := range []string{"node-a", "node-b", "node-c"} {
		objs = append(objs, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n, Labels: map[string]string{"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}}},
			mofedPod("mofed-"+n, "uid-"+n, n, true, now.Add(-time.Hour)))
	}
	objs = append(objs, boundPVC("default", "rdmasuite-nfs", "pv-1"), pvWith("pv-1", nfsSource(), "nfsvers=4.1", "proto=rdma,port=20049"))
	s := &sim{t: t, cs: fake.NewClientset(objs...), clk: clk, logs: map[string]string{}, born: map[string]time.Time{},
		pods: map[string]*corev1.Pod{}, stuck: map[string]bool{}, hung: map[string]bool{}, deletedAt: map[string]time.Time{}, readyAt: map[string]time.Time{}}
	s.o = baseOptions()
	s.o.Targets = targets
	s.o.Selected = []string{"node-a", "node-b", "node-c"}
	s.o.Thresholds = thresholdSet(t)
	s.cs.PrependReactor("create", "persistentvolumeclaims", func(a k8stesting.Action) (bool, runtime.Object, error) {
		a.(k8stesting.CreateAction).GetObject().(*corev1.PersistentVolumeClaim).Status.Phase = corev1.ClaimBound
		return false, nil, nil
	})
	s.cs.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		p := a.(k8stesting.CreateAction).GetObject().(*corev1.Pod)
		if p.Namespace != s.o.Namespace {
			return false, nil, nil
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		s.pods[p.Name] = p.DeepCopy()
		s.born[p.Name] = s.clk.Now()
		p.Status.Phase = corev1.PodRunning
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "probe", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
		// A verify pod that runs the verification itself ends with its
		// envelope; a held one (rdmaprobe say) runs until exec'd and deleted.
		if p.Labels["rdmasuite.io/role"] == "stall-verify" && p.Spec.Containers[0].Args[0] == "stall" {
			p.Status.Phase = corev1.PodSucceeded
			p.Status.ContainerStatuses[0].State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0}}
			s.logs[p.Name] = s.verifyEnvelope(argAfter(p.Spec.Containers[0].Args, "--writer-id"))
		}
		return false, nil, nil
	})
	clk.hook(s.controllers)
	return s
}

// verifyEnvelope is a verification of every writer in ids (comma-separated):
// all intact.
func (s *sim) verifyEnvelope(ids string) string {
	var vs []stall.Verification
	for _, id := range strings.Split(ids, ",") {
		vs = append(vs, stall.Verification{OK: true, WriterID: id, Checked: 5000})
	}
	return envelope(s.t, &Result{Mode: "verify", Verifications: vs})
}

// exitStatusErr is a command's non-zero exit as client-go's exec reports it.
type exitStatusErr int

func (e exitStatusErr) Error() string {
	return fmt.Sprintf("command terminated with exit code %d", int(e))
}
func (e exitStatusErr) ExitStatus() int { return int(e) }

func argAfter(args []string, flag string) string {
	for i, a := range args {
		if a == flag && i+1 < len(args) {
			return args[i+1]
		}
	}
	return ""
}

func envelope(t *testing.T, r *Result) string {
	var b bytes.Buffer
	if err := probeout.Write(&b, stall.ProbeName, r); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// controllers runs on every clock tick: the DaemonSet replaces a deleted
// MOFED pod at once; the new pod is Ready 30 s later unless its node is stuck.
func (s *sim) controllers(now time.Time) {
	ctx := context.Background()
	pods := s.cs.CoreV1().Pods(mofedNS)
	for _, n := range []string{"node-a", "node-b", "node-c"} {
		old, err := pods.Get(ctx, "mofed-"+n, metav1.GetOptions{})
		if err == nil && string(old.UID) == "uid-"+n {
			continue // the original is still there
		}
		if err != nil {
			s.mu.Lock()
			s.deletedAt[n] = now
			s.mu.Unlock()
			p := mofedPod("mofed-"+n, "uid-"+n+"-2", n, false, now)
			if _, err := pods.Create(ctx, p, metav1.CreateOptions{}); err != nil {
				s.t.Error(err)
			}
			continue
		}
		s.mu.Lock()
		due := !s.stuck[n] && now.Sub(s.deletedAt[n]) >= 30*time.Second && !podReady(old)
		s.mu.Unlock()
		if due {
			setReady(old, true, now)
			s.mu.Lock()
			s.readyAt[n] = now
			s.mu.Unlock()
			if _, err := pods.UpdateStatus(ctx, old, metav1.UpdateOptions{}); err != nil {
				s.t.Error(err)
			}
		}
	}
}

// writerLogs: steady at once, then an acknowledged count that freezes on
// the target from its driver's deletion until 10 s after it is Ready.
func (s *sim) writerLogs(pod string, now time.Time) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if out, done := s.logs[pod]; done {
		return out
	}
	p := s.pods[pod]
	if p == nil || s.silent {
		return ""
	}
	node := p.Spec.NodeName
	target := argAfter(p.Spec.Containers[0].Args, "--watch-file") != ""
	upTo := now
	if del, ok := s.deletedAt[node]; ok && target && now.After(del) {
		ready, back := s.readyAt[node]
		if !back || now.Before(ready.Add(10*time.Second)) {
			upTo = del
		}
	}
	n := int(upTo.Sub(s.born[pod]).Seconds() * 100)
	return fmt.Sprintf("stall: steady\nstall: write %d records acknowledged, 0 I/O errors, last op 1.2 ms\n", n)
}

func (s *sim) env() Env {
	return Env{Kube: s.cs, Clock: s.clk, Poll: time.Second,
		Printf: func(format string, a ...any) {
			s.mu.Lock()
			defer s.mu.Unlock()
			s.printed = append(s.printed, fmt.Sprintf(format, a...))
		},
		Logs: func(_ context.Context, ns, pod, container string, _ bool, _ int64) (string, error) {
			if ns != s.o.Namespace {
				return "driver log\n", nil
			}
			return s.writerLogs(pod, s.clk.Now()), nil
		},
		Exec: execFunc(s.exec)}
}

type execFunc func(ctx context.Context, ns, pod, container string, cmd []string) (string, string, error)

func (f execFunc) Exec(ctx context.Context, ns, pod, container string, cmd []string) (string, string, error) {
	return f(ctx, ns, pod, container, cmd)
}

// exec `stall stop`: the writer ends with exit 0 and its envelope; exec
// `stall verify` in the held verify pod prints a verification (or what
// s.verifyExec says).
func (s *sim) exec(ctx context.Context, ns, pod, container string, cmd []string) (string, string, error) {
	s.mu.Lock()
	p := s.pods[pod]
	if p != nil && p.Labels["rdmasuite.io/role"] == "stall-verify" && len(cmd) > 2 && strings.Join(cmd[:3], " ") == ProbeBinary+" stall verify" {
		s.verifies = append(s.verifies, append([]string{pod}, cmd...))
		fail := s.verifyExec
		s.mu.Unlock()
		if fail != nil {
			return fail(cmd)
		}
		return s.verifyEnvelope(argAfter(cmd, "--writer-id")), "", nil
	}
	s.stops = append(s.stops, append([]string{pod}, cmd...))
	s.mu.Unlock()
	if p == nil || container != "probe" || cmd[0] != ProbeBinary || strings.Join(cmd[1:3], " ") != "stall stop" {
		return "", "", fmt.Errorf("unexpected exec %v in %s/%s", cmd, pod, container)
	}
	id := argAfter(p.Spec.Containers[0].Args, "--writer-id")
	stalled := argAfter(p.Spec.Containers[0].Args, "--watch-file") != ""
	res := writerResult(id, 27, stalled)
	s.mu.Lock()
	hung := s.hung[p.Spec.NodeName]
	s.mu.Unlock()
	if hung {
		res.LongestGap.Ongoing, res.StallOngoing, res.Verification = true, true, nil
		s.mu.Lock()
		s.logs[pod] = stallEnvelope(s.t, res, probeout.Errorf(probeout.KindTimeout, "I/O on /data/%s.rec still hung 30s after the stop (signal)", id))
		s.mu.Unlock()
		return "", "", nil // the process never exits: the pod stays Running
	}
	s.mu.Lock()
	s.logs[pod] = "stall: steady\n" + envelope(s.t, res)
	unreported := s.unreported[p.Spec.NodeName]
	s.mu.Unlock()
	if unreported {
		return "", "", nil
	}
	live, err := s.cs.CoreV1().Pods(ns).Get(ctx, pod, metav1.GetOptions{})
	if err != nil {
		return "", "", err
	}
	live.Status.Phase = corev1.PodSucceeded
	live.Status.ContainerStatuses[0].State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0}}
	_, err = s.cs.CoreV1().Pods(ns).UpdateStatus(ctx, live, metav1.UpdateOptions{})
	return "", "", err
}

// left fails the test for anything the run left behind.
func (s *sim) left(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	if pods, _ := s.cs.CoreV1().Pods(s.o.Namespace).List(ctx, metav1.ListOptions{}); len(pods.Items) > 0 {
		t.Errorf("%d pods left in the run namespace", len(pods.Items))
	}
	if pvcs, _ := s.cs.CoreV1().PersistentVolumeClaims(s.o.Namespace).List(ctx, metav1.ListOptions{}); len(pvcs.Items) > 0 {
		t.Errorf("the run's PVC was left")
	}
	pvs, _ := s.cs.CoreV1().PersistentVolumes().List(ctx, metav1.ListOptions{})
	if len(pvs.Items) != 1 || pvs.Items[0].Name != "pv-1" {
		t.Errorf("PVs after the run: %d (want only the operator's pv-1)", len(pvs.Items))
	}
	if pvc, _ := s.cs.CoreV1().PersistentVolumeClaims("default").Get(ctx, "rdmasuite-nfs", metav1.GetOptions{}); pvc == nil {
		t.Errorf("the operator's PVC is gone")
	}
}

func (s *sim) uid(node string) string {
	p, err := s.cs.CoreV1().Pods(mofedNS).Get(context.Background(), "mofed-"+node, metav1.GetOptions{})
	if err != nil {
		return "gone"
	}
	return string(p.UID)
}

func TestRunTwoTargetsOneAfterTheOther(t *testing.T) {
	s := newSim(t, "node-a", "node-b")
	start := time.Now()
	cs := Run(context.Background(), s.env(), s.o)
	if time.Since(start) > 2*time.Second {
		t.Fatalf("the run slept for real: %s", time.Since(start))
	}
	if len(cs) != 4 {
		t.Fatalf("%d checks", len(cs))
	}
	for _, c := range cs {
		if c.Status != reports.Pass {
			t.Errorf("%s %v: %s %s%s", c.ID, c.Nodes, c.Status, c.Diagnosis, c.Reason)
		}
	}
	if got := cs[0].Nodes[0] + " " + cs[1].Nodes[0] + " " + cs[2].Nodes[0] + " " + cs[3].Nodes[0]; got != "node-a node-b node-b node-a" {
		t.Fatalf("targets and peers: %s", got)
	}
	ev := evidence(cs[0])
	for _, want := range []string{"new pod mofed-node-a Ready at T+32.0 s", "progress seen again at T+42.0 s", "cross-node verification on node-b"} {
		if !strings.Contains(ev, want) {
			t.Errorf("evidence lacks %q:\n%s", want, ev)
		}
	}
	if s.uid("node-a") != "uid-node-a-2" || s.uid("node-b") != "uid-node-b-2" || s.uid("node-c") != "uid-node-c" {
		t.Fatalf("MOFED pods: %s %s %s", s.uid("node-a"), s.uid("node-b"), s.uid("node-c"))
	}
	if len(s.stops) != 4 {
		t.Fatalf("stops: %v", s.stops)
	}
	// Each round's verification ran by exec in its held pod on the peer,
	// over both writers' files, from the volume's root.
	if len(s.verifies) != 2 {
		t.Fatalf("verify execs: %v", s.verifies)
	}
	for _, v := range s.verifies {
		if !strings.HasPrefix(argAfter(v, "--dir"), "/data/rdmasuite-run1/stall-node-") || !slices.Contains(v, "--remove-on-ok") ||
			len(strings.Split(argAfter(v, "--writer-id"), ",")) != 2 || !strings.HasPrefix(v[0], "stall-v-") {
			t.Errorf("verify exec %v", v)
		}
	}
	// The stop is a SIGTERM to the writer (its container's PID 1), never a
	// file on the volume, which a driver that did not come back leaves hung.
	if argAfter(s.stops[0], "--signal-pid") != "1" || argAfter(s.stops[0], "--dir") != "" {
		t.Fatalf("stop %v", s.stops[0])
	}
	// The target writer watches the readiness file through a read-only
	// host mount of its directory; the peer does not; both mount the PVC.
	_, wantClaim := ScopedNames(s.o.RunID, "")
	for name, p := range s.pods {
		c := p.Spec.Containers[0]
		if c.SecurityContext.Privileged != nil && *c.SecurityContext.Privileged {
			t.Errorf("%s is privileged", name)
		}
		var claim string
		for _, v := range p.Spec.Volumes {
			if v.PersistentVolumeClaim != nil {
				claim = v.PersistentVolumeClaim.ClaimName
			}
		}
		sub := c.VolumeMounts[len(c.VolumeMounts)-1]
		if p.Labels["rdmasuite.io/role"] == "stall-verify" {
			// The verifier mounts the volume's root so it can delete the
			// round's files and directory once they verified; it idles
			// until the runner execs the verification in it.
			if claim != wantClaim || sub.MountPath != "/data" || sub.SubPath != "" || c.Args[0] != "say" || argAfter(c.Args, "--sleep") == "" {
				t.Errorf("%s mounts claim %q at %+v, args %v", name, claim, sub, c.Args)
			}
			continue
		}
		if claim != wantClaim || sub.MountPath != "/data" || !strings.HasPrefix(sub.SubPath, "rdmasuite-run1/stall-node-") || argAfter(c.Args, "--dir") != "/data" {
			t.Errorf("%s mounts claim %q at %+v, args %v", name, claim, sub, c.Args)
		}
		if p.Labels["rdmasuite.io/role"] != "stall-writer" {
			continue
		}
		watch := argAfter(c.Args, "--watch-file")
		target := strings.Contains(sub.SubPath, p.Spec.NodeName)
		if target != (watch != "") {
			t.Errorf("%s on %s: watch %q", name, p.Spec.NodeName, watch)
		}
		if watch != "" {
			if watch != "/host/run/mellanox/drivers/.driver-ready" || p.Spec.Volumes[0].HostPath == nil || p.Spec.Volumes[0].HostPath.Path != "/run/mellanox/drivers" ||
				!c.VolumeMounts[0].ReadOnly || c.VolumeMounts[0].MountPath != "/host/run/mellanox/drivers" {
				t.Errorf("%s: watch %q volumes %+v mounts %+v", name, watch, p.Spec.Volumes, c.VolumeMounts)
			}
		}
	}
	s.left(t)
}

// The first target's driver never comes back: its check fails with the
// state, the writers are still stopped and judged, the second target is
// not touched, and nothing is left behind.
func TestRunStopsDisruptingWhenADriverDoesNotComeBack(t *testing.T) {
	s := newSim(t, "node-a", "node-b")
	s.stuck["node-a"] = true
	cs := Run(context.Background(), s.env(), s.o)
	if len(cs) != 4 {
		t.Fatalf("%d checks", len(cs))
	}
	if c := cs[0]; c.Status != reports.Fail || !strings.HasPrefix(c.Diagnosis, "the MOFED driver on node-a did not come back Ready within 10m0s") ||
		!strings.Contains(evidence(c), "driver log") {
		t.Fatalf("%+v", c)
	}
	if cs[1].Status != reports.Pass {
		t.Errorf("the peer measured fine: %s %s%s", cs[1].Status, cs[1].Diagnosis, cs[1].Reason)
	}
	for _, c := range cs[2:] {
		if c.Status != reports.NotRun || c.Reason != "not disrupted: the driver on node-a did not come back; fix it first" || c.Nodes[len(c.Nodes)-1] != "node-b" {
			t.Errorf("%+v", c)
		}
	}
	if s.uid("node-b") != "uid-node-b" {
		t.Fatal("node-b was disrupted after node-a's driver did not come back")
	}
	if len(s.stops) != 2 {
		t.Fatalf("the writers must still be stopped: %v", s.stops)
	}
	s.left(t)
}

// The driver does not come back and the target's writer, once signalled,
// prints its result (stall still open) but cannot exit: that result is
// judged (the ongoing stall), and the evidence says the process is stuck.
func TestRunHungWriterStillReports(t *testing.T) {
	s := newSim(t, "node-a")
	s.stuck["node-a"], s.hung["node-a"] = true, true
	s.o.PodTimeout = 10 * time.Minute
	cs := Run(context.Background(), s.env(), s.o)
	c := cs[0]
	ev := evidence(c)
	if c.Status != reports.Fail || !strings.Contains(ev, "printed its result but had not exited") || strings.Contains(ev, "no result") ||
		!strings.Contains(ev, "ongoing") && !strings.Contains(c.Diagnosis+ev, "still stalled") {
		t.Fatalf("%s %s\n%s", c.Status, c.Diagnosis, ev)
	}
	// Its result is final once printed: the run does not sit out the
	// pod timeout waiting for a process the kernel holds.
	var waited float64
	if _, err := fmt.Sscanf(ev[strings.Index(ev, "had not exited ")+len("had not exited "):], "%g s after the stop", &waited); err != nil || waited >= 60 {
		t.Fatalf("waited %g s (err %v) for a writer that had printed its result:\n%s", waited, err, ev)
	}
}

// The writer printed its whole result, but its pod never ended within the
// limit: the result is not judged without the exit status that goes with
// it, and the check says what was printed and why it was not used, never
// that the writer left nothing.
func TestRunWriterWhosePodNeverEndsIsNotJudged(t *testing.T) {
	s := newSim(t, "node-a")
	s.unreported = map[string]bool{"node-a": true}
	s.o.PodTimeout = 2 * time.Minute
	cs := Run(context.Background(), s.env(), s.o)
	c := cs[0]
	why := c.Reason + c.Diagnosis
	if c.Status != reports.Error || !strings.Contains(why, "printed its result") || !strings.Contains(why, "did not end within 2m0s of the stop") ||
		!strings.Contains(why, "exit status") || strings.Contains(why, "is its I/O still hung") {
		t.Fatalf("%s %q %q", c.Status, c.Reason, c.Diagnosis)
	}
	if c.Measured != nil {
		t.Fatalf("an unjudged writer's figures were reported: %+v", c.Measured)
	}
}

// Writers that never reach steady state: nothing is disrupted.
func TestRunWritersNeverSteady(t *testing.T) {
	s := newSim(t, "node-a")
	s.silent = true
	cs := Run(context.Background(), s.env(), s.o)
	if len(cs) != 2 || cs[0].Status != reports.NotRun || !strings.Contains(cs[0].Reason, "never wrote steadily") || !strings.Contains(cs[0].Reason, SteadyLine) {
		t.Fatalf("%+v", cs)
	}
	if s.uid("node-a") != "uid-node-a" {
		t.Fatal("the driver was restarted although the writers never wrote")
	}
	s.left(t)
}

// A MOFED pod that is not Ready before the test: not-run, not deleted.
func TestRunDriverNotReadyBefore(t *testing.T) {
	s := newSim(t, "node-a")
	p, _ := s.cs.CoreV1().Pods(mofedNS).Get(context.Background(), "mofed-node-a", metav1.GetOptions{})
	setReady(p, false, s.clk.Now())
	if _, err := s.cs.CoreV1().Pods(mofedNS).UpdateStatus(context.Background(), p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	cs := Run(context.Background(), s.env(), s.o)
	if cs[0].Status != reports.NotRun || !strings.Contains(cs[0].Reason, "not Ready before the test") || s.uid("node-a") != "uid-node-a" {
		t.Fatalf("%+v", cs[0])
	}
	s.left(t)
}

// A cancelled run still stops and collects the writers, records the
// round as interrupted, and cleans up.
func TestRunCancelledWhileWaitingForTheDriver(t *testing.T) {
	s := newSim(t, "node-a", "node-b")
	s.stuck["node-a"] = true
	ctx, cancel := context.WithCancel(context.Background())
	s.clk.hook(func(now time.Time) {
		s.mu.Lock()
		del, ok := s.deletedAt["node-a"]
		s.mu.Unlock()
		if ok && now.Sub(del) > time.Minute {
			cancel()
		}
	})
	cs := Run(ctx, s.env(), s.o)
	if cs[0].Status != reports.Error || !strings.Contains(cs[0].Reason, "the run stopped before a new MOFED pod was Ready") {
		t.Fatalf("%+v", cs[0])
	}
	if cs[2].Status != reports.NotRun || !strings.HasPrefix(cs[2].Reason, "not disrupted: the run stopped") {
		t.Fatalf("%+v", cs[2])
	}
	if len(s.stops) != 2 {
		t.Fatalf("stops %v", s.stops)
	}
	s.left(t)
}

// Both writers are signalled at once: each stop exec here returns only
// once the other has begun, as an exec into a pod on a hung node may not
// return for its whole limit; one after another, the first would give up.
func TestRunSignalsTheWritersAtOnce(t *testing.T) {
	s := newSim(t, "node-a")
	env := s.env()
	var mu sync.Mutex
	began := 0
	both := make(chan struct{})
	var alone []string
	env.Exec = execFunc(func(ctx context.Context, ns, pod, container string, cmd []string) (string, string, error) {
		mu.Lock()
		if began++; began == 2 {
			close(both)
		}
		mu.Unlock()
		select {
		case <-both:
		case <-time.After(5 * time.Second):
			mu.Lock()
			alone = append(alone, pod)
			mu.Unlock()
			return "", "", fmt.Errorf("the other writer's stop did not begin while %s's ran", pod)
		}
		return s.exec(ctx, ns, pod, container, cmd)
	})
	cs := Run(context.Background(), env, s.o)
	if len(alone) > 0 {
		t.Fatalf("writers stopped one after another: %v", alone)
	}
	if len(s.stops) != 2 || cs[0].Status != reports.Pass {
		t.Fatalf("stops %v, %s %s", s.stops, cs[0].Status, cs[0].Diagnosis)
	}
	s.left(t)
}

// A round's progress lines split its minutes: writers steady, driver back,
// writers stopped, verification, each with how long it took, so a slow
// round can be read from the log alone.
func TestRunProgressSplitsTheRound(t *testing.T) {
	s := newSim(t, "node-a")
	Run(context.Background(), s.env(), s.o)
	want := []string{"writers stall-w-", "both writers write steadily ", "deleted MOFED pod ", "new MOFED pod mofed-node-a Ready 32.0 s after the deletion",
		"writers stopped and their results read in ", "cross-node verification on node-b took "}
	i := 0
	for _, l := range s.printed {
		if i < len(want) && strings.Contains(l, want[i]) {
			i++
		}
	}
	if i < len(want) {
		t.Fatalf("no line with %q in order; printed:\n%s", want[i], strings.Join(s.printed, "\n"))
	}
}

// The verification exec'd in the held pod is judged as a verify pod's: a
// file that failed (exit 3) fails the round naming it; an exec that could
// not run is an error naming the exec, never a pass; a held pod that could
// not be created leaves the verification to a pod of its own.
func TestRunHeldVerifyOutcomes(t *testing.T) {
	s := newSim(t, "node-a")
	s.verifyExec = func(cmd []string) (string, string, error) {
		vs := []stall.Verification{{OK: true, WriterID: "node-a", Checked: 5000},
			{WriterID: "node-b", Checked: 4000, FirstBad: &stall.BadRecord{Slot: 4000, Problem: stall.Lost, Detail: "beyond end of file"}}}
		return envelope(t, &Result{Mode: "verify", Verifications: vs}), "", exitStatusErr(3)
	}
	cs := Run(context.Background(), s.env(), s.o)
	if cs[0].Status != reports.Fail || !strings.Contains(cs[0].Diagnosis, "read back on node-b, node-b's file is not intact") {
		t.Fatalf("a file that failed its verification: %s %s", cs[0].Status, cs[0].Diagnosis)
	}
	s.left(t)

	s = newSim(t, "node-a")
	s.verifyExec = func([]string) (string, string, error) {
		return "", "error: unable to upgrade connection", errors.New("exec stream failed")
	}
	cs = Run(context.Background(), s.env(), s.o)
	if cs[0].Status != reports.Error || !strings.Contains(cs[0].Reason+cs[0].Diagnosis, "exec /usr/local/bin/rdmaprobe stall verify in stall-v-node-b-node-a") {
		t.Fatalf("an exec that could not run: %s %s %s", cs[0].Status, cs[0].Diagnosis, cs[0].Reason)
	}
	s.left(t)

	s = newSim(t, "node-a")
	refused := false
	s.cs.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		p := a.(k8stesting.CreateAction).GetObject().(*corev1.Pod)
		if p.Labels["rdmasuite.io/role"] == "stall-verify" && p.Spec.Containers[0].Args[0] == "say" {
			refused = true
			return true, nil, errors.New("admission webhook refused the pod")
		}
		return false, nil, nil
	})
	cs = Run(context.Background(), s.env(), s.o)
	if !refused || cs[0].Status != reports.Pass || len(s.verifies) != 0 {
		t.Fatalf("held pod refused (%v): %s %s, verify execs %v", refused, cs[0].Status, cs[0].Diagnosis, s.verifies)
	}
	s.left(t)
}
