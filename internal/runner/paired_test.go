package runner

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/rdmasuite/rdmasuite/internal/pairing"
	"github.com/rdmasuite/rdmasuite/reports"
)

// runningPods makes the fake cluster run what the suite creates: a
// server pod is Running with an IP, a client pod has Succeeded. It
// returns the pods created, in order.
func runningPods(kube *fake.Clientset) func() []*corev1.Pod {
	return onCreatePod(kube, func(p *corev1.Pod) {
		if strings.Contains(p.Name, "-s-") {
			p.Status.Phase, p.Status.PodIP = corev1.PodRunning, "10.0.0.1"
		} else {
			p.Status.Phase = corev1.PodSucceeded
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "probe", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{}}}}
			// The client ran: the running server ends too (the tests'
			// pairs run one at a time).
			gvr := corev1.SchemeGroupVersion.WithResource("pods")
			if o, err := kube.Tracker().List(gvr, corev1.SchemeGroupVersion.WithKind("Pod"), p.Namespace); err == nil {
				for _, sp := range o.(*corev1.PodList).Items {
					if sp.Status.Phase == corev1.PodRunning {
						sp.Status = p.Status
						_ = kube.Tracker().Update(gvr, &sp, p.Namespace)
					}
				}
			}
		}
	})
}

// onCreatePod makes the fake cluster keep every pod the suite creates,
// with the status set gives it; it returns the pods created, in order.
func onCreatePod(kube *fake.Clientset, set func(p *corev1.Pod)) func() []*corev1.Pod {
	var mu sync.Mutex
	var pods []*corev1.Pod
	kube.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		p := a.(k8stesting.CreateAction).GetObject().(*corev1.Pod).DeepCopy()
		mu.Lock()
		pods = append(pods, p.DeepCopy())
		mu.Unlock()
		set(p)
		return true, p, kube.Tracker().Create(corev1.SchemeGroupVersion.WithResource("pods"), p, p.Namespace)
	})
	return func() []*corev1.Pod {
		mu.Lock()
		defer mu.Unlock()
		return append([]*corev1.Pod(nil), pods...)
	}
}

// Bandwidth, latency and message rate selected together run in one server
// and one client pod per node pair: the server serves one run per feature
// (--then, each named), the client runs each feature's own flags in turn,
// and every feature still gets a check per op of every pair; the features
// that come later start no pod at all.
func TestPairedFeaturesShareOnePodPairPerNodePair(t *testing.T) {
	kube := fake.NewClientset(testNode("a", 8), testNode("b", 8), testNode("c", -1))
	created := runningPods(kube)
	cfg := testConfig(t)
	cfg.Selected = map[string][]string{VariantSharedDev: {PairedMsgRate, PairedBandwidth, PairedLatency}}
	r := New(kube, cfg, "t-shared")
	var lines []string
	r.Progress = func(l string) { lines = append(lines, l) }
	v := r.Cfg.VariantList()[0]
	executePlan(r)
	got := map[string][]reports.Check{
		"bandwidth": r.Paired(context.Background(), v, PairedBandwidth),
		"latency":   r.Paired(context.Background(), v, PairedLatency),
		"msgrate":   r.Paired(context.Background(), v, PairedMsgRate),
	}
	pods := created()
	if len(pods) != 4 {
		t.Fatalf("%d pods for a ring of 2 nodes and 3 features, want 4 (a server and a client per pair)", len(pods))
	}
	for _, p := range pods {
		args := strings.Join(p.Spec.Containers[0].Args, " ")
		if !strings.HasPrefix(p.Name, "pair-shared-dev-") || strings.Count(args, " --then ") != 2 ||
			!strings.Contains(args, "--run-name bandwidth") || !strings.Contains(args, "--run-name latency") || !strings.Contains(args, "--run-name msgrate") {
			t.Errorf("pod %s: %s", p.Name, args)
		}
		if strings.Contains(p.Name, "-c-") {
			runs := strings.Split(args, " --then ")
			if !strings.Contains(runs[0], "--op write,read --size 65536") || !strings.Contains(runs[1], "--latency") ||
				!strings.Contains(runs[1], "--op write,read,send") || !strings.Contains(runs[2], "--qps 4 --iters 5000") {
				t.Errorf("client runs out of order or missing their flags: %q", runs)
			}
			// Every run's QPs get the ACK timeout (a Config without one:
			// perftest's default).
			for _, run := range runs {
				if !strings.Contains(run, "--qp-timeout 14") {
					t.Errorf("client run without --qp-timeout 14: %q", run)
				}
			}
		}
	}
	want := map[string]int{"bandwidth": 2 * 2, "latency": 2 * 3, "msgrate": 2}
	for name, cs := range got {
		pairs := 0
		for _, c := range cs {
			if c.Status == reports.Pass {
				t.Errorf("%s passed on a fake cluster: %+v", name, c)
			}
			if len(c.Nodes) == 2 {
				pairs++
				if !strings.HasPrefix(c.ID, name+"/") {
					t.Errorf("%s got another feature's check %s", name, c.ID)
				}
			}
		}
		if pairs != want[name] {
			t.Errorf("%s: %d pair checks, want %d: %+v", name, pairs, want[name], cs)
		}
		if rows := byNode(cs)["c"]; len(rows) == 0 || rows[0].Status != reports.Fail {
			t.Errorf("%s: node c without the resource has no failing row: %+v", name, rows)
		}
	}
	if len(lines) == 0 || !strings.Contains(lines[0], "plan [shared-dev]: bandwidth, latency, msgrate share one server/client pod pair per node pair: 2 pair(s), 4 pod starts (12 with a pod pair per feature)") {
		t.Errorf("no plan line: %q", lines)
	}
}

// A paired feature the run did not list runs alone, in its own pods, as
// it always did: no --then, its own pod prefix.
func TestPairedFeatureNotInThePlanRunsAlone(t *testing.T) {
	kube := fake.NewClientset(testNode("a", 8), testNode("b", 8))
	created := runningPods(kube)
	cfg := testConfig(t)
	cfg.Selected = map[string][]string{VariantSharedDev: {PairedBandwidth}}
	r := New(kube, cfg, "t-alone")
	r.Paired(context.Background(), r.Cfg.VariantList()[0], PairedLatency)
	for _, p := range created() {
		if args := strings.Join(p.Spec.Containers[0].Args, " "); !strings.HasPrefix(p.Name, "lat-") || strings.Contains(args, "--then") || strings.Contains(args, "--run-name") {
			t.Errorf("pod %s: %s", p.Name, args)
		}
	}
}

func TestPairGroupsMergeSharedPairsAndKeepOthersApart(t *testing.T) {
	ab, ba := pairing.Pair{Server: "a", Client: "b"}, pairing.Pair{Server: "b", Client: "a"}
	bc, cb := pairing.Pair{Server: "b", Client: "c"}, pairing.Pair{Server: "c", Client: "b"}
	groups := pairGroups([]string{PairedBandwidth, PairedLatency, PairedGPUDirect}, map[string][][]pairing.Pair{
		PairedBandwidth: {{ab, bc}, {ba, cb}},
		PairedLatency:   {{ab, bc}, {ba, cb}},
		PairedGPUDirect: {{ab}, {ba, pairing.Pair{Server: "a", Client: "c"}}},
	}, PairedBandwidth, []string{"a"})
	if len(groups) != 4 {
		t.Fatalf("groups: %+v", groups)
	}
	if f := groups[0][0].feats; strings.Join(f, ",") != "bandwidth,latency,gpudirect" {
		t.Errorf("a→b carries %v", f)
	}
	if f := groups[0][1].feats; strings.Join(f, ",") != "bandwidth,latency" {
		t.Errorf("b→c carries %v", f)
	}
	if g := groups[2]; len(g) != 1 || g[0].p.Client != "c" || g[0].p.Server != "a" || strings.Join(g[0].feats, ",") != "gpudirect" {
		t.Errorf("gpudirect's own pair: %+v", g)
	}
	if g := groups[3]; len(g) != 1 || !g[0].loopback || g[0].p.Server != "a" || g[0].p.Client != "a" {
		t.Errorf("same-node group: %+v", g)
	}
	if l := PlanLine("shared-dev", groups); !strings.Contains(l, "6 pair(s), 12 pod starts (24 with a pod pair per feature)") {
		t.Errorf("plan: %s", l)
	}
}

// framedRun is one run of a multi-run probe's output.
func framedRun(k, n int, name string, body string, exit int) string {
	return "rdmaprobe-run begin " + itoa(k) + "/" + itoa(n) + " " + name + "\n" + body + "rdmaprobe-run end " + itoa(k) + "/" + itoa(n) + " " + name + " exit=" + itoa(exit) + "\n"
}

func itoa(i int) string { return strconv.Itoa(i) }

func TestSplitSideAttributesExitAndErrorsPerRun(t *testing.T) {
	names := []string{"bandwidth", "latency"}
	// Each run its own status; the pod's exit is the first failure's.
	s := splitSide(framedRun(1, 2, "bandwidth", "bw out\n", 3)+framedRun(2, 2, "latency", "lat out\n", 0), 3, nil, names)
	if s[0].exit != 3 || s[1].exit != 0 || s[0].err != nil || s[1].err != nil || s[0].logs != "bw out\n" || s[1].logs != "lat out\n" {
		t.Errorf("%+v", s)
	}
	// The pod failed and no run says why: no run may pass on it.
	s = splitSide(framedRun(1, 2, "bandwidth", "", 0)+framedRun(2, 2, "latency", "", 0), 1, nil, names)
	if s[0].exit != 1 || s[1].exit != 1 {
		t.Errorf("an unexplained pod failure must reach every run: %+v", s)
	}
	// The pod's deadline hit in run 2: run 1 ended cleanly and keeps its
	// result, run 2 carries the pod's error.
	deadline := errors.New("context deadline exceeded")
	s = splitSide(framedRun(1, 2, "bandwidth", "", 0)+"rdmaprobe-run begin 2/2 latency\npartial\n", 137, deadline, names)
	if s[0].exit != 0 || s[0].err != nil || s[1].err != deadline || s[1].exit != 137 {
		t.Errorf("%+v", s)
	}
	// A probe that died in run 1 of a pod that says 0 (a cut log): both
	// runs say why they have nothing.
	s = splitSide("rdmaprobe-run begin 1/2 bandwidth\n", 0, nil, names)
	if s[0].err == nil || !strings.Contains(s[0].err.Error(), "never ended") || s[1].err == nil || !strings.Contains(s[1].err.Error(), "never began") {
		t.Errorf("%+v", s)
	}
	// Frames that do not match the runs asked for: nobody's output.
	s = splitSide(framedRun(1, 2, "latency", "x\n", 0), 0, nil, names)
	for _, r := range s {
		if r.err == nil || r.logs != "" || !strings.Contains(r.err.Error(), "could not be attributed") {
			t.Errorf("%+v", r)
		}
	}
}

// A run stopped while the shared pods run (the first feature's call) says
// that the features riding along were never judged: none of them may
// vanish from the results.
func TestStopDuringSharedPairsNamesTheRidingFeatures(t *testing.T) {
	kube := fake.NewClientset(testNode("a", 8), testNode("b", 8))
	started, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	kube.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		once.Do(func() { close(started) })
		<-release
		return false, nil, nil
	})
	cfg := testConfig(t)
	cfg.Selected = map[string][]string{VariantSharedDev: {PairedBandwidth, PairedLatency, PairedMsgRate}}
	r := New(kube, cfg, "t-stop")
	done := make(chan struct{})
	go func() {
		defer close(done)
		executePlan(r)
	}()
	<-started
	if n := r.RecordUnfinished("interrupt"); n != 3 {
		t.Errorf("%d unfinished features recorded, want bandwidth, latency and msgrate", n)
	}
	ids := map[string]bool{}
	for _, c := range r.Checks() {
		ids[c.ID] = c.Status == reports.Error
	}
	if !ids["bandwidth"] || !ids["latency"] || !ids["msgrate"] {
		t.Errorf("unfinished rows: %v", ids)
	}
	close(release)
	<-done
	if n := r.RecordUnfinished("after"); n != 0 {
		t.Errorf("%d features still marked running after the session", n)
	}
}

// The plan before the run: rounds, waves at the concurrency,
// an estimate, and nothing created. 256 nodes in a ring are 2 rounds of
// 128 disjoint pairs: 2 waves at the default, 64 at --concurrency 4.
func TestPlanIsRoundsNotPairs(t *testing.T) {
	var objs []runtime.Object
	for i := range 256 {
		objs = append(objs, testNode(fmt.Sprintf("gpu-%03d", i), 8))
	}
	for _, tc := range []struct {
		conc  int
		waves string
	}{{0, "2 wave(s)"}, {4, "64 wave(s)"}} {
		cs := fake.NewClientset(objs...)
		cfg := testConfig(t)
		cfg.Concurrency = tc.conc
		cfg.Selected = map[string][]string{VariantSharedDev: {PairedBandwidth}}
		r := New(cs, cfg, "plan")
		r.BuildPlan(context.Background())
		got := strings.Join(r.PlanLines(context.Background(), false), "\n")
		for _, want := range []string{"256 pair(s), 512 pod starts", "256 node(s) measured", "2 round(s) of up to 128 pair(s)", tc.waves, "8 rail(s) per pair, one after another", "estimated ≈ "} {
			if !strings.Contains(got, want) {
				t.Errorf("concurrency %d: plan lacks %q:\n%s", tc.conc, want, got)
			}
		}
		if pods, _ := cs.CoreV1().Pods("").List(context.Background(), metav1.ListOptions{}); len(pods.Items) != 0 {
			t.Fatalf("the plan created %d pods", len(pods.Items))
		}
		for _, a := range cs.Actions() {
			if a.GetVerb() != "list" && a.GetVerb() != "get" {
				t.Fatalf("the plan did %s %s", a.GetVerb(), a.GetResource().Resource)
			}
		}
	}
}

// A same-node pair's checks read as loopback by id and by traits, and the
// pair check they came from keeps its own traits.
func TestAsLoopback(t *testing.T) {
	pair := reports.Check{ID: "bandwidth/write", Traits: &reports.Traits{Pair: true, Op: "write", HeatUnit: "Gb/s", Localize: true}}
	loop := asLoopback(pair)
	if loop.ID != "bandwidth/write/loopback" || loop.Traits == nil || *loop.Traits != (reports.Traits{Pair: true, Loopback: true, Op: "write", HeatUnit: "Gb/s", Localize: true}) {
		t.Errorf("loopback check %s %+v", loop.ID, loop.Traits)
	}
	if pair.Traits.Loopback {
		t.Error("the pair check's traits changed")
	}
	if c := asLoopback(reports.Check{ID: "latency/link"}); c.ID != "latency/link/loopback" || c.Traits != nil || !c.Is().Loopback {
		t.Errorf("a check without traits: %s %+v", c.ID, c.Is())
	}
}

// executePlan builds the runner's plan from its selection and runs it, as
// the lifecycle does before the features.
func executePlan(r *Runner) {
	r.BuildPlan(context.Background())
	r.Execute(context.Background())
}
