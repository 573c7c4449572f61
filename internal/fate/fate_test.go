package fate

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

func pod(name, node string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", Labels: map[string]string{"run": "x"}},
		Spec: corev1.PodSpec{NodeName: node}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
}

func node(name string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}}
}

// The pod records of real evictions: the DisruptionTarget condition the
// API server sets on an Eviction API call (kubectl drain) and the kubelet's
// node-pressure eviction (phase Failed, reason Evicted, the message it
// writes, e.g. kubernetes/kubernetes#108978's "The node was low on
// resource: memory.").
func TestPodLostQuotesThePodsOwnRecord(t *testing.T) {
	now := metav1.NewTime(time.Date(2026, 12, 6, 20, 1, 2, 0, time.UTC))
	drained := pod("p", "n1")
	drained.DeletionTimestamp = &now
	drained.Status.Conditions = []corev1.PodCondition{{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue,
		Reason: "EvictionByEvictionAPI", Message: "Eviction API: evicting"}}
	pressure := pod("q", "n2")
	pressure.Status.Phase, pressure.Status.Reason, pressure.Status.Message = corev1.PodFailed, "Evicted", "The node was low on resource: memory. "
	deleted := pod("r", "n3")
	deleted.DeletionTimestamp = &now
	ended := pod("s", "n4")
	ended.Status.Phase = corev1.PodSucceeded
	ended.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "probe", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed"}}}}
	for _, c := range []struct {
		p    *corev1.Pod
		want []string
	}{
		{drained, []string{"pod p on n1 was evicted through the Eviction API", "a drain", "Eviction API: evicting", "since 20:01:02Z"}},
		{pressure, []string{"pod q on n2 failed: Evicted: The node was low on resource: memory."}},
		{deleted, []string{"pod r on n3 is being deleted since 20:01:02Z, not by the suite"}},
		{ended, []string{"pod s on n4 ended (phase Succeeded; container probe exited 0 (Completed))"}},
		{pod("ok", "n5"), nil},
	} {
		got := PodLost(c.p)
		if (got == "") != (c.want == nil) {
			t.Errorf("%s: PodLost = %q", c.p.Name, got)
		}
		for _, w := range c.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: %q lacks %q", c.p.Name, got, w)
			}
		}
	}
}

func TestNodeLostOnNotReadyAndDeletionNotOnCordon(t *testing.T) {
	n := node("n1")
	if NodeLost(n) != "" || Cordoned(n) != "" {
		t.Fatal("a Ready, schedulable node is lost or cordoned")
	}
	n.Spec.Unschedulable = true
	if NodeLost(n) != "" {
		t.Error("a cordon alone is a loss: the pods there keep running")
	}
	if !strings.Contains(Cordoned(n), "node n1 is cordoned") {
		t.Errorf("Cordoned = %q", Cordoned(n))
	}
	n.Status.Conditions[0] = corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionUnknown,
		Reason: "NodeStatusUnknown", Message: "Kubelet stopped posting node status.",
		LastTransitionTime: metav1.NewTime(time.Date(2026, 12, 6, 20, 0, 0, 0, time.UTC))}
	if got := NodeLost(n); got != "node n1 turned NotReady at 20:00:00Z (Ready=Unknown: NodeStatusUnknown: Kubelet stopped posting node status.)" {
		t.Errorf("NodeLost = %q", got)
	}
}

// The watch sees a pod deleted and a node turning NotReady while a run
// is in flight, and cuts the run's context with the reason.
func TestWatchCutsARunWhosePodOrNodeIsLost(t *testing.T) {
	kube := fake.NewClientset(pod("a", "n1"), pod("b", "n2"), pod("c", "n3"), node("n1"), node("n2"), node("n3"), node("other"))
	ctx := context.Background()
	w := Start(ctx, kube, "ns", "run=x", "", []string{"n1", "n2", "n3"})
	defer w.Stop()
	if !w.WaitSynced(ctx, 10*time.Second) {
		t.Fatal("the watch did not sync")
	}
	if why := w.Lost("a", "n1"); why != "" {
		t.Fatalf("a healthy pod is lost: %s", why)
	}
	cctx, cut, stop := w.CutWhenLost(ctx, [2]string{"a", "n1"}, [2]string{"b", "n2"})
	defer stop()
	if err := kube.CoreV1().Pods("ns").Delete(ctx, "b", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-cctx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the run was not cut when its server pod was deleted")
	}
	if why := cut(); !strings.Contains(why, "pod b was deleted") {
		t.Errorf("cut by %q", why)
	}
	n3 := node("n3")
	n3.Status.Conditions[0].Status = corev1.ConditionFalse
	n3.Status.Conditions[0].Reason = "KubeletNotReady"
	if _, err := kube.CoreV1().Nodes().UpdateStatus(ctx, n3, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for w.Lost("c", "n3") == "" && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if why := w.Lost("c", "n3"); !strings.Contains(why, "node n3 turned NotReady") {
		t.Errorf("NotReady node: %q", why)
	}
	if why := w.Lost("a", "n1"); why != "" {
		t.Errorf("the untouched pod is lost: %s", why)
	}
	// A node the run does not measure is not followed.
	if len(w.nodes) != 1 {
		t.Errorf("lost nodes %v", w.nodes)
	}
}

// After a failure the watch may not have seen the event yet: Explain
// reads the pod and node once.
func TestExplainReadsThePodAndNodeWhenTheWatchHasNotSeenIt(t *testing.T) {
	n := node("n1")
	n.Spec.Unschedulable = true
	kube := fake.NewClientset(n)
	w := newWatch([]string{"n1"}) // never started: knows nothing
	got := w.Explain(context.Background(), kube, "ns", "gone", "n1")
	for _, want := range []string{"pod gone was deleted", "node n1 is cordoned"} {
		if !strings.Contains(got, want) {
			t.Errorf("Explain = %q, lacks %q", got, want)
		}
	}
	kube = fake.NewClientset(pod("p", "n1"), node("n1"))
	if got := w.Explain(context.Background(), kube, "ns", "p", "n1"); got != "" {
		t.Errorf("Explain of a healthy pod = %q", got)
	}
}
