package runner

import (
	"context"
	"errors"
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

	"github.com/rdmasuite/rdmasuite/reports"
)

// faultRun runs bandwidth over a ring of six healthy nodes in node pods;
// lose is called as each server run starts (pod, its node) and returns
// true when it took the pod or node away.
func faultRun(t *testing.T, lose func(kube *fake.Clientset, pod, node string) bool) ([]reports.Check, []string, time.Duration) {
	t.Helper()
	noAwait(t)
	return faultRun2(t, lose)
}

// faultRun2 is faultRun with the pairs waiting for busy pods as the
// runner does.
func faultRun2(t *testing.T, lose func(kube *fake.Clientset, pod, node string) bool) ([]reports.Check, []string, time.Duration) {
	t.Helper()
	kube := fake.NewClientset(testNode("a", 8), testNode("b", 8), testNode("c", 8), testNode("d", 8), testNode("e", 8), testNode("f", 8))
	mayCreateSub(kube, "exec")
	nodePodsCluster(kube)
	cfg := testConfig(t)
	cfg.Concurrency = 0
	cfg.Confirm = false
	cfg.Selected = map[string][]string{VariantSharedDev: {PairedBandwidth}}
	r := New(kube, cfg, "t-fault")
	var mu sync.Mutex
	var lines []string
	r.Progress = func(s string) {
		mu.Lock()
		lines = append(lines, s)
		mu.Unlock()
	}
	good, srv := passingPair(t, cfg.BWOps, cfg.BWSizes, 1, 200, 196)
	r.Exec = &fakeExec{kube: kube, srvOut: srv, out: good, onServer: func(pod string) bool {
		p, err := kube.CoreV1().Pods(r.Namespace()).Get(context.Background(), pod, metav1.GetOptions{})
		if err != nil {
			return true
		}
		return lose(kube, pod, p.Spec.NodeName)
	}}
	ctx := context.Background()
	start := time.Now()
	r.BuildPlan(ctx)
	r.Execute(ctx)
	cs := r.Paired(ctx, r.Cfg.VariantList()[0], PairedBandwidth)
	return cs, lines, time.Since(start)
}

// noAwait keeps the test's pairs from waiting for a pod busy until a
// known time (minutes on a real cluster): they fail saying until when.
func noAwait(t *testing.T) {
	old := awaitLimit
	awaitLimit = 0
	t.Cleanup(func() { awaitLimit = old })
}

// loseOnce is a faultRun hook that takes node's pod or node away (lose)
// as its first server run starts, and only then.
func loseOnce(node string, lose func(kube *fake.Clientset, pod, node string)) func(*fake.Clientset, string, string) bool {
	var once sync.Once
	return func(kube *fake.Clientset, pod, n string) bool {
		lost := false
		if n == node {
			once.Do(func() {
				lost = true
				lose(kube, pod, n)
			})
		}
		return lost
	}
}

// namesTheLoss says a cut pair's reason names the loss: the watch saw it
// and cut the run ("its run was cut: …"), or, where it saw it only after
// the run failed, one read of the API found it ("its run failed and …").
func namesTheLoss(reason, loss string) bool {
	return strings.Contains(reason, loss) && (strings.Contains(reason, "its run was cut: ") || strings.Contains(reason, "its run failed and "))
}

// opRows are node n's bandwidth/write rows as client (Nodes[0]) and as
// server (Nodes[1]). In the ring of six, b, d and f serve in round 1 and
// are clients in round 2.
func opRows(cs []reports.Check, n string) (asClient, asServer []reports.Check) {
	for _, c := range cs {
		if c.ID != "bandwidth/write" || len(c.Nodes) < 2 {
			continue
		}
		switch n {
		case c.Nodes[0]:
			asClient = append(asClient, c)
		case c.Nodes[1]:
			asServer = append(asServer, c)
		}
	}
	return
}

// A probe pod deleted in the middle of its measurement: that pair's rows
// are errors naming the deletion, the node's later pair is not run with
// the same reason (nothing measured, nothing blamed), and every other
// pair is measured and passes.
func TestAProbePodDeletedMidMeasurementIsNamedAndNotMeasuredAgain(t *testing.T) {
	cs, _, took := faultRun(t, loseOnce("b", func(kube *fake.Clientset, pod, node string) {
		if err := kube.CoreV1().Pods("rdmasuite-t-fault").Delete(context.Background(), pod, metav1.DeleteOptions{}); err != nil {
			t.Error(err)
		}
	}))
	if took > 20*time.Second {
		t.Errorf("the run took %s: a lost pod held it", took)
	}
	asClient, asServer := opRows(cs, "b")
	if len(asServer) == 0 || len(asClient) == 0 {
		t.Fatalf("b's rows: client %d, server %d", len(asClient), len(asServer))
	}
	for _, c := range append(asServer, asClient...) {
		if c.Lost == nil || c.Lost.Node != "b" || !strings.Contains(c.Lost.What, "was deleted") {
			t.Errorf("%v: lost %+v, want b's pod (no evidence against its partner)", c.Nodes, c.Lost)
		}
	}
	for _, c := range asServer {
		if c.Status != reports.Error || !namesTheLoss(c.Reason, "was deleted") {
			t.Errorf("the cut pair %v: %s %q", c.Nodes, c.Status, c.Reason)
		}
	}
	for _, c := range asClient {
		if c.Status != reports.NotRun || !strings.Contains(c.Reason, "not measured: pod ") || !strings.Contains(c.Reason, "was deleted") {
			t.Errorf("b's later pair %v: %s %q", c.Nodes, c.Status, c.Reason)
		}
	}
	// The others pass; the lost pod's partner, whose run was cut too, is
	// busy until its process has ended (here the pairs do not wait for
	// it: TestThePartnerOfALostPodIsMeasuredAfterItsCutRunEnds) and says
	// which loss.
	for _, c := range cs {
		if c.ID != "bandwidth/write" || c.Nodes[0] == "b" || c.Nodes[1] == "b" || c.Status == reports.Pass {
			continue
		}
		if !strings.Contains(c.Reason, "busy until") || !strings.Contains(c.Reason, "was cut when pod ") {
			t.Errorf("an unaffected pair %v: %s %q", c.Nodes, c.Status, c.Reason)
		}
	}
	run := reports.Run{Schema: reports.Schema, RunID: "t", Checks: cs}
	if err := run.Validate(); err != nil {
		t.Fatal(err)
	}
	if run.ExitCode() == reports.ExitPassed {
		t.Error("a run that lost a pod passed")
	}
}

// A node drained in the middle of the run: cordoned, its pod evicted
// through the Eviction API (the DisruptionTarget condition the API server
// sets). The cut pair says evicted and cordoned; its later pair is not run.
func TestADrainedNodeIsNamedAsADrain(t *testing.T) {
	cs, _, _ := faultRun(t, loseOnce("d", func(kube *fake.Clientset, pod, node string) {
		ctx := context.Background()
		n, _ := kube.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		n.Spec.Unschedulable = true
		if _, err := kube.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{}); err != nil {
			t.Error(err)
		}
		p, _ := kube.CoreV1().Pods("rdmasuite-t-fault").Get(ctx, pod, metav1.GetOptions{})
		now := metav1.Now()
		p.DeletionTimestamp = &now
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.DisruptionTarget,
			Status: corev1.ConditionTrue, Reason: "EvictionByEvictionAPI", Message: "Eviction API: evicting"})
		if _, err := kube.CoreV1().Pods("rdmasuite-t-fault").Update(ctx, p, metav1.UpdateOptions{}); err != nil {
			t.Error(err)
		}
	}))
	asClient, asServer := opRows(cs, "d")
	for _, c := range append(asServer, asClient...) {
		if !strings.Contains(c.Reason, "evicted through the Eviction API (a drain") {
			t.Errorf("d's pair %v: %s %q", c.Nodes, c.Status, c.Reason)
		}
	}
	// The cordon is context from the node's own watch: the cut pair may be
	// named before that event arrives, its later pair is not.
	for _, c := range asClient {
		if !strings.Contains(c.Reason, "node d is cordoned") {
			t.Errorf("d's later pair %v: %q lacks the cordon", c.Nodes, c.Reason)
		}
	}
	for _, c := range asClient {
		if c.Status != reports.NotRun {
			t.Errorf("d's later pair %v: %s, want not-run", c.Nodes, c.Status)
		}
	}
}

// A node that turns NotReady: the run in flight there is cut at once
// (not held for its budget), and its later pair is not run.
func TestANodeTurningNotReadyCutsItsRunAndIsNotMeasuredAgain(t *testing.T) {
	cs, _, took := faultRun(t, loseOnce("f", func(kube *fake.Clientset, pod, node string) {
		ctx := context.Background()
		n, _ := kube.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionUnknown,
			Reason: "NodeStatusUnknown", Message: "Kubelet stopped posting node status."}}
		if _, err := kube.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
			t.Error(err)
		}
	}))
	if took > 20*time.Second {
		t.Errorf("the run took %s", took)
	}
	asClient, asServer := opRows(cs, "f")
	for _, c := range asServer {
		if c.Status != reports.Error || !namesTheLoss(c.Reason, "node f turned NotReady") || c.Lost == nil || c.Lost.Node != "f" {
			t.Errorf("f's cut pair %v: %s %q", c.Nodes, c.Status, c.Reason)
		}
	}
	for _, c := range asClient {
		if c.Status != reports.NotRun || !strings.Contains(c.Reason, "node f turned NotReady") {
			t.Errorf("f's later pair %v: %s %q", c.Nodes, c.Status, c.Reason)
		}
	}
}

// Without the right to watch (an operator's narrower Role), the run says
// what it cannot follow and still measures every pair.
func TestWithoutTheRightToWatchTheRunSaysSoAndMeasures(t *testing.T) {
	kube := fake.NewClientset(testNode("a", 8), testNode("b", 8), testNode("c", 8))
	kube.PrependReactor("create", "selfsubjectaccessreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		r := a.(k8stesting.CreateAction).GetObject().(*authv1.SelfSubjectAccessReview).DeepCopy()
		r.Status.Allowed = r.Spec.ResourceAttributes.Verb == "create"
		return true, r, nil
	})
	nodePodsCluster(kube)
	cfg := testConfig(t)
	cfg.Confirm = false
	cfg.Selected = map[string][]string{VariantSharedDev: {PairedBandwidth}}
	r := New(kube, cfg, "t-nowatch")
	var lines []string
	r.Progress = func(s string) { lines = append(lines, s) }
	good, srv := passingPair(t, cfg.BWOps, cfg.BWSizes, 1, 200, 196)
	r.Exec = &fakeExec{kube: kube, srvOut: srv, out: good}
	ctx := context.Background()
	r.BuildPlan(ctx)
	r.Execute(ctx)
	cs := r.Paired(ctx, r.Cfg.VariantList()[0], PairedBandwidth)
	said := false
	for _, l := range lines {
		said = said || strings.Contains(l, "the suite may not watch pods in namespace rdmasuite-t-nowatch (suites/deploy's Role grants it): a pod or node lost during the rounds")
	}
	if !said {
		t.Errorf("no line says the run cannot watch: %q", lines)
	}
	for _, c := range cs {
		if c.ID == "bandwidth/write" && c.Status != reports.Pass {
			t.Errorf("%v: %s %q", c.Nodes, c.Status, c.Reason)
		}
	}
}

// A client run the API server never started (it refused connections past
// the start window) fails its pair with that reason and leaves both pods
// free: nothing ran in the client's; the server only listens, on a port
// no later run of its pod uses, until its --timeout. Every other pair is
// measured.
func TestARunThatNeverStartedLeavesItsPodFree(t *testing.T) {
	kube := fake.NewClientset(testNode("a", 8), testNode("b", 8), testNode("c", 8), testNode("d", 8))
	mayCreateSub(kube, "exec")
	nodePodsCluster(kube)
	cfg := testConfig(t)
	cfg.Concurrency = 1 // one pair at a time: the first client run is the first pair's
	cfg.Confirm = false
	cfg.Selected = map[string][]string{VariantSharedDev: {PairedBandwidth}}
	noAwait(t)
	r := New(kube, cfg, "t-notstarted")
	good, srv := passingPair(t, cfg.BWOps, cfg.BWSizes, 1, 200, 196)
	ex := &fakeExec{kube: kube, srvOut: srv, out: good, notStarted: 1}
	r.Exec = ex
	ctx := context.Background()
	r.BuildPlan(ctx)
	r.Execute(ctx)
	cs := r.Paired(ctx, r.Cfg.VariantList()[0], PairedBandwidth)
	never, passed := 0, 0
	for _, c := range cs {
		if c.ID != "bandwidth/write" {
			continue
		}
		switch {
		case c.Status == reports.Error && strings.Contains(c.Reason, "did not accept the exec"):
			never++
		case c.Status == reports.Pass:
			passed++
		default:
			t.Errorf("%v: %s %q", c.Nodes, c.Status, c.Reason)
		}
	}
	if never != 1 || passed != 3 {
		t.Errorf("never started %d (want 1), passed %d (want 3: no pod left busy)", never, passed)
	}
	// Each server run of a pod has a port of its own.
	ports := map[string]map[string]bool{}
	for _, c := range ex.commands() {
		pod, cmd, _ := strings.Cut(c, ": ")
		if !strings.Contains(cmd, " bw server ") {
			continue
		}
		f := strings.Fields(cmd)
		for i := range f[:len(f)-1] {
			if f[i] == "--port" {
				if ports[pod] == nil {
					ports[pod] = map[string]bool{}
				}
				if ports[pod][f[i+1]] {
					t.Errorf("pod %s serves twice on port %s", pod, f[i+1])
				}
				ports[pod][f[i+1]] = true
			}
		}
	}
	p := &nodePod{name: "p", node: "n"}
	p.setBusyUntil(errors.New("busy"), time.Now().Add(-time.Second))
	if p.busyErr() != nil {
		t.Error("a pod whose busy run has ended by its own bound is still busy")
	}
	p.setBusy(errors.New("busy for good"))
	if p.busyErr() == nil {
		t.Error("a pod left busy for good is free")
	}
}

// The partner of a lost pod is not lost: its run was cut, its process
// ends by its own timeouts, and its later pair waits for that and is
// measured (here the bound is shortened to a second).
func TestThePartnerOfALostPodIsMeasuredAfterItsCutRunEnds(t *testing.T) {
	oldFree, oldLimit := survivorFree, awaitLimit
	survivorFree, awaitLimit = func(int) time.Duration { return time.Second }, time.Minute
	defer func() { survivorFree, awaitLimit = oldFree, oldLimit }()
	cs, _, _ := faultRun2(t, loseOnce("b", func(kube *fake.Clientset, pod, node string) {
		if err := kube.CoreV1().Pods("rdmasuite-t-fault").Delete(context.Background(), pod, metav1.DeleteOptions{}); err != nil {
			t.Error(err)
		}
	}))
	// b served a (a→b is [a b]); a is client again in no later round, but
	// serves f in round 2 ([f a]): measured after waiting.
	for _, c := range cs {
		if c.ID != "bandwidth/write" {
			continue
		}
		involvesB := c.Nodes[0] == "b" || c.Nodes[1] == "b"
		if !involvesB && c.Status != reports.Pass {
			t.Errorf("%v: %s %q (the lost pod's partner must be measured after its cut run ended)", c.Nodes, c.Status, c.Reason)
		}
	}
}
