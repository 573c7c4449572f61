package runner

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	authv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/rdmasuite/rdmasuite/internal/podrun"
	"github.com/rdmasuite/rdmasuite/reports"
	"github.com/rdmasuite/rdmasuite/workloads/bw"
	"github.com/rdmasuite/rdmasuite/workloads/mr"
	"github.com/rdmasuite/rdmasuite/workloads/podenv"
	"github.com/rdmasuite/rdmasuite/workloads/probeout"
)

// mayCreateSub answers the runner's access reviews: the pods
// subresources in allowed may be created, pods and nodes watched (as
// suites/deploy grants), nothing else.
func mayCreateSub(kube *fake.Clientset, allowed ...string) {
	kube.PrependReactor("create", "selfsubjectaccessreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		r := a.(k8stesting.CreateAction).GetObject().(*authv1.SelfSubjectAccessReview).DeepCopy()
		ra := r.Spec.ResourceAttributes
		r.Status.Allowed = ra != nil && ra.Verb == "create" && ra.Resource == "pods" && slices.Contains(allowed, ra.Subresource) ||
			ra != nil && ra.Verb == "watch" && (ra.Resource == "pods" || ra.Resource == "nodes") // suites/deploy grants both
		return true, r, nil
	})
}

// nodePodsCluster runs what the suite creates: every pod Running with an
// IP of its own (10.0.0.1, .2, … in creation order), except those fail
// names, which never start.
func nodePodsCluster(kube *fake.Clientset, fail ...string) func() []*corev1.Pod {
	var mu sync.Mutex
	n := 0
	return onCreatePod(kube, func(p *corev1.Pod) {
		for _, f := range fail {
			if strings.Contains(p.Name, f) {
				p.Status.Phase = corev1.PodFailed
				p.Status.Reason = "UnexpectedAdmissionError"
				// The kubelet's words when the device plugin cannot
				// allocate (https://github.com/Project-HAMi/HAMi/issues/596).
				p.Status.Message = "Pod Allocate failed due to requested number of devices unavailable for " + res + ". Requested: 1, Available: 0, which is unexpected"
				return
			}
		}
		mu.Lock()
		n++
		p.Status.PodIP = fmt.Sprintf("10.0.0.%d", n)
		mu.Unlock()
		p.Status.Phase = corev1.PodRunning
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "probe", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
	})
}

// fakeExec plays the probe in the node pods: a server run waits for a
// client run that dials its pod's IP (or its context's end); a client run
// dials (waiting a little for the server to listen, as the probe's dial
// retries), prints out and ends with exit. Every run is framed as the
// probe frames a named run. hang names pods whose server runs never end by
// themselves; dropEnd cuts the client's output before its end frame and
// reports exit 0, as client-go reads a stream that broke without a status;
// cutClients and cutServers do that to the first so many client or server
// runs only.
type fakeExec struct {
	kube    *fake.Clientset
	out     string // a client run's output
	srvOut  string // a server run's output ("server of POD" when empty)
	exit    int
	hang    string
	dropEnd bool
	mrOut   string // an mr run's output
	mrExit  int
	mrFail  string // pods whose mr exec breaks
	// clientOut, when set, is a client run's output by its node, its
	// server's node and how many client runs its node ran before.
	clientOut func(client, server string, nth int) string
	runsOf    map[string]int

	// cutClients, cutServers: how many of the first client or server runs
	// end their stream without their end frame, with exit 0.
	cutClients, cutServers int
	// onServer, when set, is called as a server run starts in pod; when
	// it returns true the pod was lost (the hook deleted it, evicted it,
	// turned its node NotReady): the run's stream breaks as a killed
	// container's does, at its context's end or after a while.
	onServer func(pod string) bool
	// notStarted: how many of the first client runs never start (the API
	// server refused the exec: podrun.ErrNotStarted).
	notStarted int

	mu        sync.Mutex
	calls     []string                 // "pod: command"
	listening map[string]chan struct{} // server pod → its running run's client end
	created   int                      // pods that existed at the first exec
}

// runNames are the --run-name values of a command, in order.
func runNames(cmd []string) []string {
	var names []string
	for i, a := range cmd {
		if a == "--run-name" && i+1 < len(cmd) {
			names = append(names, cmd[i+1])
		}
	}
	return names
}

// framed is out for every named run, each with its begin and end frames;
// without its last end frame when cut (an unnamed run: out as it is).
func framed(names []string, out string, exit int, cut bool) string {
	if len(names) == 0 {
		return out // the probe frames named runs only
	}
	var b strings.Builder
	for k, n := range names {
		fmt.Fprintf(&b, "rdmaprobe-run begin %d/%d %s\n%s", k+1, len(names), n, out)
		if cut && k == len(names)-1 {
			break
		}
		fmt.Fprintf(&b, "rdmaprobe-run end %d/%d %s exit=%d\n", k+1, len(names), n, exit)
	}
	return b.String()
}

func (f *fakeExec) Exec(ctx context.Context, ns, pod, container string, cmd []string) (podrun.ExecResult, error) {
	gvr := corev1.SchemeGroupVersion.WithResource("pods")
	o, _ := f.kube.Tracker().List(gvr, corev1.SchemeGroupVersion.WithKind("Pod"), ns)
	pods := o.(*corev1.PodList).Items
	f.mu.Lock()
	if f.calls == nil {
		f.created = len(pods)
		f.listening = map[string]chan struct{}{}
	}
	f.calls = append(f.calls, pod+": "+strings.Join(cmd, " "))
	f.mu.Unlock()
	if container != podrun.ContainerName || len(cmd) < 3 || cmd[0] != probeBinary {
		return podrun.ExecResult{}, fmt.Errorf("fake: no such command %q in container %s", cmd, container)
	}
	names := runNames(cmd)
	if cmd[1] == "mr" {
		if f.mrFail != "" && strings.Contains(pod, f.mrFail) {
			return podrun.ExecResult{}, fmt.Errorf("fake: the exec stream to %s broke", pod)
		}
		return podrun.ExecResult{Output: f.mrOut, Exit: f.mrExit, Exited: true}, nil
	}
	switch cmd[2] {
	case "server":
		if f.onServer != nil && f.onServer(pod) {
			select {
			case <-ctx.Done():
			case <-time.After(5 * time.Second):
			}
			return podrun.ExecResult{Output: "rdmaprobe bw server: waiting\n"}, fmt.Errorf("fake: the exec stream to %s broke: container killed", pod)
		}
		if f.hang != "" && strings.Contains(pod, f.hang) {
			<-ctx.Done()
			return podrun.ExecResult{Output: "rdmaprobe bw server: waiting\n"}, ctx.Err()
		}
		done := make(chan struct{})
		f.mu.Lock()
		f.listening[pod] = done
		f.mu.Unlock()
		select {
		case <-done:
			out := f.srvOut
			if out == "" {
				out = "server of " + pod + "\n"
			}
			return podrun.ExecResult{Output: framed(names, out, 0, f.cut(&f.cutServers)), Exited: true}, nil
		case <-ctx.Done():
			return podrun.ExecResult{}, ctx.Err()
		}
	case "client":
		if f.cut(&f.notStarted) {
			return podrun.ExecResult{}, fmt.Errorf("%w: the API server did not accept the exec for 1m30s: dial tcp 10.0.0.254:6443: connect: connection refused", podrun.ErrNotStarted)
		}
		host := cmd[len(cmd)-1]
		for _, p := range pods {
			if p.Status.PodIP != host {
				continue
			}
			for range 200 {
				f.mu.Lock()
				done := f.listening[p.Name]
				delete(f.listening, p.Name)
				f.mu.Unlock()
				if ctx.Err() != nil {
					return podrun.ExecResult{}, ctx.Err() // cut: the stream ends
				}
				if done != nil {
					close(done)
					out := f.out
					if f.clientOut != nil {
						client := ""
						for _, q := range pods {
							if q.Name == pod {
								client = q.Spec.NodeName
							}
						}
						f.mu.Lock()
						if f.runsOf == nil {
							f.runsOf = map[string]int{}
						}
						nth := f.runsOf[client]
						f.runsOf[client]++
						f.mu.Unlock()
						out = f.clientOut(client, p.Spec.NodeName, nth)
					}
					return podrun.ExecResult{Output: framed(names, out, f.exit, f.dropEnd || f.cut(&f.cutClients)), Exit: f.exit, Exited: true}, nil
				}
				time.Sleep(10 * time.Millisecond)
			}
		}
		return podrun.ExecResult{Output: framed(names, "dial "+host+": connection refused\n", 1, false), Exit: 1, Exited: true}, nil
	}
	return podrun.ExecResult{}, fmt.Errorf("fake: unknown mode %q", cmd[2])
}

// cut says whether this run is one of the first *n to be cut.
func (f *fakeExec) cut(n *int) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if *n > 0 {
		*n--
		return true
	}
	return false
}

func (f *fakeExec) commands() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

// With the right to exec, a variant's paired features start one pod per
// node (and a same-node client pod per node under --loopback) before the
// first round, all of them at once, and run every round's server and
// client in them: the client dials its server pod's IP, each run is the
// probe's own command line, the evidence names the node pods, the plan
// line and the mode line say so, and the pods are deleted at the end.
func TestNodePodsServeEveryRoundOfAVariant(t *testing.T) {
	kube := fake.NewClientset(testNode("a", 8), testNode("b", 8), testNode("c", 8))
	mayCreateSub(kube, "exec", "attach")
	created := nodePodsCluster(kube)
	cfg := testConfig(t)
	cfg.Loopback = true
	cfg.Selected = map[string][]string{VariantSharedDev: {PairedBandwidth, PairedLatency}}
	r := New(kube, cfg, "t-nodepods")
	ex := &fakeExec{kube: kube, out: "fake-client-output-marker\n", exit: 1}
	r.Exec = ex
	r.Attach = &fakeAttach{kube: kube}
	var lines []string
	r.Progress = func(l string) { lines = append(lines, l) }
	v := r.Cfg.VariantList()[0]
	executePlan(r)
	bwChecks := r.Paired(context.Background(), v, PairedBandwidth)
	latChecks := r.Paired(context.Background(), v, PairedLatency)

	pods := created()
	if len(pods) != 6 || ex.created != 6 {
		t.Fatalf("%d pods created, %d before the first run; want 6 and 6 (a pod per node and a same-node client pod per node, all before the first round)", len(pods), ex.created)
	}
	for _, p := range pods {
		args := strings.Join(p.Spec.Containers[0].Args, " ")
		if !strings.HasPrefix(args, "hold --max ") || p.Spec.Containers[0].Resources.Limits.Name(res, "") == nil ||
			p.Spec.Containers[0].Resources.Limits.Name(res, "").Value() != 1 {
			t.Errorf("pod %s: args %q limits %v", p.Name, args, p.Spec.Containers[0].Resources.Limits)
		}
	}
	cmds := ex.commands()
	servers, clients, both := 0, 0, 0
	for _, c := range cmds {
		switch {
		case strings.Contains(c, " bw server "):
			servers++
			if strings.Contains(c, "--run-name bandwidth --then") && strings.Contains(c, "--run-name latency") {
				both++
			}
		case strings.Contains(c, " bw client "):
			clients++
		}
	}
	// The ring of 3: 3 cross-node pairs (in 3 rounds), and 3 same-node
	// pairs for bandwidth alone.
	if servers != 6 || clients != 6 || both != 3 {
		t.Errorf("%d server and %d client runs, %d servers with both features; want 6, 6 and 3: %q", servers, clients, both, cmds)
	}
	// Every client dialled a pod that ran a server at that moment (the
	// fake's client fails on a pod where no server listens).
	for _, c := range append(bwChecks, latChecks...) {
		if strings.Contains(c.Reason+strings.Join(c.Evidence, " "), "connection refused") {
			t.Errorf("%s: a client dialled a pod with no server listening: %s", c.ID, c.Reason)
		}
		if c.Status == reports.Pass {
			t.Errorf("passed on a fake probe: %+v", c)
		}
	}
	marked := 0
	for _, c := range bwChecks {
		if len(c.Nodes) != 2 {
			continue
		}
		ev := strings.Join(c.Evidence, "\n")
		if !strings.Contains(ev, "pair-shared-dev-") {
			t.Errorf("%s: evidence does not name the node pods: %s", c.ID, ev)
		}
		if strings.Contains(ev+c.Reason, "fake-client-output-marker") {
			marked++
		}
	}
	if marked == 0 {
		t.Errorf("no pair check carries the client run's output: %+v", bwChecks)
	}
	all := strings.Join(lines, "\n")
	if !strings.Contains(all, "plan [shared-dev]: bandwidth, latency run in one probe pod per node (3 node(s) and a same-node client pod on 3)") ||
		!strings.Contains(all, "6 pair(s) in 4 round(s), 6 pod starts before the first round") ||
		strings.Count(all, "pairs: one probe pod per node and variant runs every round's server and client over pods/exec") != 1 ||
		!strings.Contains(all, "node pods [shared-dev]: 6 of 6 running after ") {
		t.Errorf("plan or mode line missing: %q", lines)
	}
	left, _ := kube.CoreV1().Pods(r.Namespace()).List(context.Background(), metav1.ListOptions{})
	if len(left.Items) != 0 {
		t.Errorf("%d node pods left after the variant", len(left.Items))
	}
}

// A node whose pod cannot start costs its own pairs only: they fail with
// the pod's reason, the other pairs run, nothing passes on a missing side.
func TestNodePodThatDidNotStartFailsOnlyItsPairs(t *testing.T) {
	kube := fake.NewClientset(testNode("a", 8), testNode("b", 8), testNode("c", 8), testNode("d", 8))
	mayCreateSub(kube, "exec")
	nodePodsCluster(kube, "-n-c")
	cfg := testConfig(t)
	cfg.Selected = map[string][]string{VariantSharedDev: {PairedBandwidth}}
	r := New(kube, cfg, "t-nodepod-fail")
	ex := &fakeExec{kube: kube, out: "x\n", exit: 1}
	r.Exec = ex
	var lines []string
	r.Progress = func(l string) { lines = append(lines, l) }
	executePlan(r)
	cs := r.Paired(context.Background(), r.Cfg.VariantList()[0], PairedBandwidth)
	if all := strings.Join(lines, "\n"); !strings.Contains(all, "node pods [shared-dev]: 3 of 4 running after ") || !strings.Contains(all, "not started on c (their pairs fail with the reason)") {
		t.Errorf("no line names the node whose pod did not start: %q", lines)
	}
	withC, without := 0, 0
	for _, c := range cs {
		if len(c.Nodes) != 2 || !strings.HasPrefix(c.ID, "bandwidth/") || strings.Contains(c.ID, "link") {
			continue
		}
		if c.Status == reports.Pass {
			t.Errorf("%s passed: %+v", c.ID, c)
		}
		if slices.Contains(c.Nodes, "c") {
			withC++
			if c.Status != reports.Error || !strings.Contains(c.Reason, "did not run to completion") ||
				!strings.Contains(c.Reason, "probe pod rdmasuite-t-nodepod-fail/pair-shared-dev-n-c-") || !strings.Contains(c.Reason, "before the suite could run anything in it") ||
				!strings.Contains(c.Reason, "UnexpectedAdmissionError: Pod Allocate failed due to requested number of devices unavailable for "+res+". Requested: 1, Available: 0, which is unexpected") {
				t.Errorf("pair with c: %s %s", c.Status, c.Reason)
			}
		} else {
			without++
			if strings.Contains(c.Reason, "-n-c-") {
				t.Errorf("pair without c blames c's pod: %s", c.Reason)
			}
		}
	}
	if withC == 0 || without == 0 {
		t.Fatalf("%d checks of pairs with c, %d without; want both: %+v", withC, without, cs)
	}
	for _, c := range ex.commands() {
		if strings.HasPrefix(c, "pair-shared-dev-n-c") {
			t.Errorf("ran in the pod that never started: %s", c)
		}
	}
}

// A server run that does not end after its client's is cut off, its pair
// does not pass, and its pod serves no later pair (its process may still
// hold the port): those pairs say so instead of meeting a stale server.
func TestServerRunThatDidNotEndRetiresItsPod(t *testing.T) {
	old := serverWaitAfter
	serverWaitAfter = func(bool) time.Duration { return 100 * time.Millisecond }
	defer func() { serverWaitAfter = old }()
	kube := fake.NewClientset(testNode("a", 8), testNode("b", 8))
	mayCreateSub(kube, "exec")
	nodePodsCluster(kube)
	cfg := testConfig(t)
	cfg.Loopback = true
	cfg.Selected = map[string][]string{VariantSharedDev: {PairedBandwidth}}
	r := New(kube, cfg, "t-nodepod-hang")
	r.Exec = &fakeExec{kube: kube, out: "x\n", exit: 0, hang: "-n-a"}
	executePlan(r)
	cs := r.Paired(context.Background(), r.Cfg.VariantList()[0], PairedBandwidth)
	cut, retired := 0, 0
	for _, c := range cs {
		if c.Status == reports.Pass {
			t.Errorf("%s passed: %+v", c.ID, c)
		}
		if strings.Contains(strings.Join(c.Evidence, " "), "its run did not end within 100ms after its client's") {
			cut++
		}
		if strings.Contains(c.Reason, "is still busy") && strings.Contains(c.Reason, "takes part in no later pair") {
			retired++
		}
	}
	// Round 1 or 2 has a's server cut off; the loopback round's a → a
	// pair finds a's pod retired.
	if cut == 0 || retired == 0 {
		t.Fatalf("%d checks cut off, %d retired; want both: %+v", cut, retired, cs)
	}
}

// Without the right to exec, or with --node-pods=false, the run falls
// back to a pod pair per pair (beside each other with the right to
// attach) and says why, once.
func TestNoExecRightFallsBackToPairPods(t *testing.T) {
	for _, tc := range []struct {
		off    bool
		grants []string
		why    string
	}{
		{false, []string{"attach"}, "the suite may not create pods/exec in namespace rdmasuite-t-noexec; grant it"},
		{true, []string{"attach", "exec"}, "over pods/attach: --node-pods=false"},
	} {
		fallsBackToPairPods(t, tc.off, tc.grants, tc.why)
	}
}

func fallsBackToPairPods(t *testing.T, off bool, grants []string, why string) {
	kube := fake.NewClientset(testNode("a", 8), testNode("b", 8))
	mayCreateSub(kube, grants...)
	created := startedPods(kube)
	cfg := testConfig(t)
	cfg.NoNodePods = off
	cfg.Selected = map[string][]string{VariantSharedDev: {PairedBandwidth}}
	r := New(kube, cfg, "t-noexec")
	ex := &fakeExec{kube: kube}
	r.Exec = ex
	r.Attach = &fakeAttach{kube: kube}
	var lines []string
	r.Progress = func(l string) { lines = append(lines, l) }
	executePlan(r)
	r.Paired(context.Background(), r.Cfg.VariantList()[0], PairedBandwidth)
	if len(ex.commands()) != 0 {
		t.Errorf("exec'd without the right: %q", ex.commands())
	}
	if n := len(created()); n != 4 {
		t.Errorf("%d pods, want 4 (a server and a client per pair)", n)
	}
	all := strings.Join(lines, "\n")
	if !strings.Contains(all, why) || !strings.Contains(all, "pairs: two pods per pair and round, the client beside its server") {
		t.Errorf("no line saying why: %q", lines)
	}
}

// The plan with node pods: at 256 nodes in a ring, 256 pod starts (not
// 512) for 2 rounds, in one wave by default and 32 at --concurrency 4
// (2 × 4 pods at a time); the estimate counts those pod waves, not one
// per round. Nothing is created but the access review.
func TestPlanWithNodePodsCountsOnePodPerNode(t *testing.T) {
	var objs []runtime.Object
	for i := range 256 {
		objs = append(objs, testNode(fmt.Sprintf("gpu-%03d", i), 8))
	}
	for _, tc := range []struct {
		conc     int
		podWaves string
	}{{0, "1 wave(s) of ≈ 15s"}, {4, "32 wave(s) of ≈ 15s"}} {
		cs := fake.NewClientset(objs...)
		mayCreateSub(cs, "exec")
		cfg := testConfig(t)
		cfg.Concurrency = tc.conc
		cfg.Selected = map[string][]string{VariantSharedDev: {PairedBandwidth}}
		r := New(cs, cfg, "plan")
		r.Exec = &fakeExec{kube: cs}
		r.BuildPlan(context.Background())
		got := strings.Join(r.PlanLines(context.Background(), false), "\n")
		for _, want := range []string{"run in one probe pod per node (256 node(s))", "256 pair(s) in 2 round(s), 256 pod starts before the first round (512 with a pod pair per pair and feature)",
			"the node pods' start, " + tc.podWaves} {
			if !strings.Contains(got, want) {
				t.Errorf("concurrency %d: plan lacks %q:\n%s", tc.conc, want, got)
			}
		}
		for _, a := range cs.Actions() {
			if a.GetVerb() != "list" && a.GetVerb() != "get" && a.GetResource().Resource != "selfsubjectaccessreviews" {
				t.Fatalf("the plan did %s %s", a.GetVerb(), a.GetResource().Resource)
			}
		}
	}
}

// passingPair is a client's and a server's bw output in which every one of
// rails rail pairs measured every op at every size at gbps (figures as the
// probe computes them), as one run.
func passingPair(t *testing.T, ops []string, sizes []int, rails int, rate, gbps float64) (cli, srv string) {
	t.Helper()
	c := bw.ProbeOutput{Role: "client", Requested: bw.Requested{Sizes: sizes, RailMode: bw.RailsSame}, Rails: []bw.RailResult{}}
	s := bw.ProbeOutput{Role: "server", Rails: []bw.RailResult{}}
	for i := range rails {
		l := bw.Rail{Index: i, Device: fmt.Sprintf("mlx5_%d", i), Port: 1, State: "ACTIVE", LinkLayer: "InfiniBand", RateGbps: rate}
		p := l
		c.Found, s.Found = append(c.Found, l), append(s.Found, p)
		rr := bw.RailResult{Local: l, Peer: &p}
		for _, op := range ops {
			rep := bw.Report{Role: "client", Params: bw.Params{Op: bw.Op(op), Sizes: sizes}}
			for _, size := range sizes {
				const n = 100000
				elapsed := time.Duration(float64(size) * n * 8 / (gbps * 1e9) * float64(time.Second))
				f := bw.Compute(size, n, elapsed, elapsed/n)
				rep.Results = append(rep.Results, bw.SizeResult{Local: f, Total: f})
			}
			rr.Runs = append(rr.Runs, rep)
		}
		c.Rails = append(c.Rails, rr)
		s.Rails = append(s.Rails, bw.RailResult{Local: p, Peer: &l, Runs: []bw.Report{}})
	}
	var cb, sb strings.Builder
	if err := probeout.WriteError(&cb, bw.ProbeName, c, nil); err != nil {
		t.Fatal(err)
	}
	if err := probeout.WriteError(&sb, bw.ProbeName, s, nil); err != nil {
		t.Fatal(err)
	}
	return cb.String(), sb.String()
}

// A measurement that met its bar passes through the node pods as through
// a pair's own pods: the framed outputs of the exec'd runs are split and
// judged. The same client output cut before its end frame, with the exit
// 0 that client-go reports for a stream that broke without a status, is
// not a pass: the run's end was never seen.
func TestMeasuredPairPassesInNodePodsAndACutStreamDoesNot(t *testing.T) {
	for _, cut := range []bool{false, true} {
		kube := fake.NewClientset(testNode("a", 8), testNode("b", 8))
		mayCreateSub(kube, "exec")
		nodePodsCluster(kube)
		cfg := testConfig(t)
		cfg.Selected = map[string][]string{VariantSharedDev: {PairedBandwidth}}
		r := New(kube, cfg, "t-nodepod-pass")
		cli, srv := passingPair(t, cfg.BWOps, cfg.BWSizes, 8, 200, 196)
		r.Exec = &fakeExec{kube: kube, out: cli, srvOut: srv, dropEnd: cut}
		executePlan(r)
		cs := r.Paired(context.Background(), r.Cfg.VariantList()[0], PairedBandwidth)
		passed, ops := 0, 0
		for _, c := range cs {
			if c.ID != "bandwidth/write" && c.ID != "bandwidth/read" {
				continue
			}
			ops++
			if c.Status == reports.Pass {
				passed++
			} else if !cut {
				t.Errorf("a measured pair did not pass: %s %s %s: %s", c.ID, c.Nodes, c.Status, c.Reason)
			}
			if cut && c.Status == reports.Pass {
				t.Errorf("cut stream: %s %s passed: %s", c.ID, c.Nodes, c.Evidence)
			}
			// The first pair's run never ended; the second pair meets
			// that pod retired.
			if cut && !strings.Contains(c.Reason, "began and never ended") && !strings.Contains(c.Reason, "is still busy") {
				t.Errorf("cut stream: %s %s: the reason does not say the run never ended: %s", c.ID, c.Nodes, c.Reason)
			}
		}
		if ops == 0 || (!cut && passed != ops) {
			t.Errorf("cut %v: %d of %d op checks passed", cut, passed, ops)
		}
	}
}

// With memlock selected beside the paired features (MemlockFeature), the
// memlock probe runs in each node's probe pod after the rounds, dropping
// CAP_IPC_LOCK itself (the pod holds it for the paired features), and
// Memlock starts no pod of its own for those nodes; a node whose exec
// broke is measured in a pod of its own, as before.
func TestMemlockRidesInTheNodePods(t *testing.T) {
	kube := fake.NewClientset(testNode("a", 8), testNode("b", 8), testNode("c", 8))
	mayCreateSub(kube, "exec", "attach")
	created := nodePodsCluster(kube)
	cfg := testConfig(t)
	cfg.Selected = map[string][]string{VariantSharedDev: {PairedBandwidth, MemlockFeature}}
	r := New(kube, cfg, "t-memlock-rides")
	res := mr.Probe(func(int64) error { return nil }, "mlx5_0", mr.Sizes(4096, 4<<20), 1<<20,
		podenv.Limits{Soft: podenv.Unlimited, Hard: podenv.Unlimited}, false, 0)
	res.DroppedIPCLock = true
	var env strings.Builder
	if err := probeout.Write(&env, "mr", res); err != nil {
		t.Fatal(err)
	}
	ex := &fakeExec{kube: kube, out: "x\n", exit: 1, mrOut: env.String(), mrFail: "-c-"}
	r.Exec = ex
	r.Attach = &fakeAttach{kube: kube}
	v := r.Cfg.VariantList()[0]
	executePlan(r)
	r.Paired(context.Background(), v, PairedBandwidth)
	nodePods := len(created())
	mrExecs := 0
	for _, c := range ex.commands() {
		if strings.Contains(c, " mr ") {
			mrExecs++
			if !strings.Contains(c, " --drop-ipc-lock") || !strings.HasPrefix(c, "pair-shared-dev-") {
				t.Errorf("memlock run %q: want it in a node pod with --drop-ipc-lock", c)
			}
		}
	}
	if mrExecs != 3 {
		t.Errorf("%d memlock runs exec'd, want one per node pod (3): %q", mrExecs, ex.commands())
	}
	cs := r.Memlock(context.Background(), v)
	var own []string
	for _, p := range created()[nodePods:] {
		own = append(own, p.Spec.NodeName)
	}
	if !slices.Equal(own, []string{"c"}) {
		t.Errorf("memlock started pods on %q; want only c, whose node-pod exec broke", own)
	}
	rows := map[string]int{}
	for _, c := range cs {
		n := strings.Join(c.Nodes, ",")
		rows[n]++
		if n == "c" {
			continue
		}
		ev := strings.Join(c.Evidence, "\n")
		if c.Status != reports.Pass || !strings.Contains(ev, "--drop-ipc-lock") || !strings.Contains(ev, "exec'd in the node's probe pod") {
			t.Errorf("%s on %s: %s %q, evidence %q", c.ID, n, c.Status, c.Reason, ev)
		}
	}
	if rows["a"] != 2 || rows["b"] != 2 || rows["c"] != 2 {
		t.Errorf("memlock rows per node %v, want 2 each", rows)
	}
}

// --memlock-ipc-lock asks for memlock pods that hold IPC_LOCK: node pods
// of a variant without it cannot stand in for them.
func TestMemlockDoesNotRideInPodsWithoutTheCapabilityItNeeds(t *testing.T) {
	kube := fake.NewClientset(testNode("a", 8))
	cfg := testConfig(t)
	cfg.MemlockIPCLock = true
	cfg.Selected = map[string][]string{VariantSharedDev: {PairedBandwidth, MemlockFeature}}
	r := New(kube, cfg, "t-memlock-caps")
	ex := &fakeExec{kube: kube, mrOut: "x\n"}
	r.Exec = ex
	v := r.Cfg.VariantList()[0]
	np := &nodePods{main: map[string]*nodePod{"a": {name: "pair-a", node: "a"}}}
	byName := map[string]corev1.Node{"a": *testNode("a", 8)}
	v.NeedsCaps = false
	r.memlockInNodePods(context.Background(), v, np, byName)
	if n := len(ex.commands()); n != 0 {
		t.Errorf("memlock ran in %d pod(s) without IPC_LOCK although --memlock-ipc-lock asked for it", n)
	}
	v.NeedsCaps = true
	r.memlockInNodePods(context.Background(), v, np, byName)
	if cmds := ex.commands(); len(cmds) != 1 || strings.Contains(cmds[0], "--drop-ipc-lock") {
		t.Errorf("with IPC_LOCK in the pods and --memlock-ipc-lock: want one run that keeps the capability, got %q", cmds)
	}
}
