package runner

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/rdmasuite/rdmasuite/reports"
)

// The latency feature pairs nodes as bandwidth does: a node without the
// resource fails its latency rows, the pairs run lat- pods whose probe
// measures latency; on the fake clientset the server never runs, so every
// pair is an error, never a pass. One node cannot form a pair: not-run.
func TestLatencyNodesAndPods(t *testing.T) {
	kube := fake.NewClientset(testNode("a", 8), testNode("b", 8), testNode("c", -1))
	var pods []*corev1.Pod
	kube.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		pods = append(pods, a.(k8stesting.CreateAction).GetObject().(*corev1.Pod).DeepCopy())
		return false, nil, nil
	})
	r := New(kube, testConfig(t), "t-lat")
	cs := r.Paired(context.Background(), r.Cfg.VariantList()[0], PairedLatency)
	rows := byNode(cs)
	if len(rows["c"]) != 3 || rows["c"][2].ID != "latency/send" {
		t.Fatalf("node c: one row per op of --lat-ops (write, read, send): %+v", rows["c"])
	}
	for _, c := range cs {
		if !strings.HasPrefix(c.ID, "latency/") || c.Status == reports.Pass {
			t.Errorf("%+v", c)
		}
	}
	if len(pods) != 2 {
		t.Fatalf("%d pods, want a server per pair of the ring of 2", len(pods))
	}
	for _, p := range pods {
		if args := strings.Join(p.Spec.Containers[0].Args, " "); !strings.HasPrefix(p.Name, "lat-shared-dev-s-") || !strings.Contains(args, "bw server") || !strings.Contains(args, "--latency") {
			t.Errorf("server pod %s: %s", p.Name, args)
		}
	}
	one := New(fake.NewClientset(testNode("a", 8)), testConfig(t), "t-lat1")
	for _, c := range one.Paired(context.Background(), one.Cfg.VariantList()[0], PairedLatency) {
		if c.Status != reports.NotRun {
			t.Errorf("one node: %+v", c)
		}
	}
}

// The message-rate feature pairs nodes as bandwidth does: a node without
// the resource fails its row, the pairs run mps- pods; on the fake
// clientset the server never runs, so no pair passes.
func TestMsgRateNodesAndPods(t *testing.T) {
	kube := fake.NewClientset(testNode("a", 8), testNode("b", 8), testNode("c", -1))
	var pods []*corev1.Pod
	kube.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		pods = append(pods, a.(k8stesting.CreateAction).GetObject().(*corev1.Pod).DeepCopy())
		return false, nil, nil
	})
	r := New(kube, testConfig(t), "t-mps")
	cs := r.Paired(context.Background(), r.Cfg.VariantList()[0], PairedMsgRate)
	rows := byNode(cs)
	if len(rows["c"]) != 1 || rows["c"][0].ID != "msgrate/write" || rows["c"][0].Status != reports.Fail {
		t.Fatalf("node c: %+v", rows["c"])
	}
	for _, c := range cs {
		if c.ID != "msgrate/write" || c.Status == reports.Pass {
			t.Errorf("%+v", c)
		}
	}
	if len(pods) != 2 {
		t.Fatalf("%d pods, want a server per pair of the ring of 2", len(pods))
	}
	for _, p := range pods {
		if args := strings.Join(p.Spec.Containers[0].Args, " "); !strings.HasPrefix(p.Name, "mps-shared-dev-s-") || !strings.Contains(args, "bw server") || strings.Contains(args, "--latency") {
			t.Errorf("server pod %s: %s", p.Name, args)
		}
	}
}
