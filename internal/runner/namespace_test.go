package runner

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/rdmasuite/rdmasuite/internal/cluster"
	"github.com/rdmasuite/rdmasuite/internal/doctor"
	"github.com/rdmasuite/rdmasuite/internal/names"
)

// Without --namespace a run lives in its own namespace under the names it
// always had.
func TestOwnNamespaceKeepsNamesAsTheyWere(t *testing.T) {
	r := New(fake.NewClientset(), testConfig(t), "t1")
	if r.Namespace() != "rdmasuite-t1" || r.SharedNamespace() {
		t.Fatalf("namespace %q shared %v", r.Namespace(), r.SharedNamespace())
	}
	if r.Object("mr-shared-dev", "gpu-a", res) != names.Object("mr-shared-dev", "gpu-a", res) || r.Name("smoke-rdma") != "smoke-rdma" {
		t.Fatalf("names changed: %s %s", r.Object("mr-shared-dev", "gpu-a", res), r.Name("smoke-rdma"))
	}
	v := r.Cfg.VariantList()[0]
	if worldName(v, []string{"a", "b"}, r.scoped(nil)...) != worldName(v, []string{"a", "b"}) {
		t.Fatal("world names changed")
	}
}

// With --namespace two runs (or a kept failure and the next run) share one
// namespace: every object goes there, carries its run's labels, and no
// name of one run is a name of the other.
func TestSharedNamespaceRunsNeverClash(t *testing.T) {
	kube := fake.NewClientset(testNode("gpu-a", 8), testNode("gpu-b", 8))
	var pods []*corev1.Pod
	kube.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		pods = append(pods, a.(k8stesting.CreateAction).GetObject().(*corev1.Pod).DeepCopy())
		return false, nil, nil
	})
	cfg := testConfig(t)
	cfg.Namespace, cfg.PodTimeout, cfg.NodeProbe = "rdma-conformance", 50*time.Millisecond, true
	byRun := map[string]map[string]bool{}
	for _, id := range []string{"r1", "r2"} {
		r := New(kube, cfg, id)
		if r.Namespace() != "rdma-conformance" || !r.SharedNamespace() {
			t.Fatalf("namespace %q shared %v", r.Namespace(), r.SharedNamespace())
		}
		v := r.Cfg.VariantList()[0]
		before := len(pods)
		r.Memlock(context.Background(), v)
		nodes, _ := r.SelectedNodes(context.Background())
		r.ProbeHosts(context.Background(), doctor.State{Nodes: nodes})
		byRun[id] = map[string]bool{}
		for _, p := range pods[before:] {
			if p.Namespace != "rdma-conformance" || p.Labels[cluster.RunLabel] != id || p.Labels[cluster.ManagedByLabel] != cluster.ManagedBy {
				t.Errorf("run %s pod %s/%s labels %v", id, p.Namespace, p.Name, p.Labels)
			}
			byRun[id][p.Name] = true
		}
		if len(byRun[id]) != 4 {
			t.Fatalf("run %s: %d pods (memlock and host probe on 2 nodes)", id, len(byRun[id]))
		}
		if r.Name("smoke-rdma") != "smoke-rdma-"+id {
			t.Errorf("fixed name %s", r.Name("smoke-rdma"))
		}
	}
	for n := range byRun["r1"] {
		if byRun["r2"][n] {
			t.Errorf("both runs name a pod %s", n)
		}
	}
	a, b := New(kube, cfg, "r1"), New(kube, cfg, "r2")
	v := a.Cfg.VariantList()[0]
	if wa, wb := worldName(v, []string{"x", "y"}, a.scoped(nil)...), worldName(v, []string{"x", "y"}, b.scoped(nil)...); wa == wb || len(wa) > 48 {
		t.Errorf("world names %s %s", wa, wb)
	}
}

func TestNamespaceFlagValidated(t *testing.T) {
	cfg := testConfig(t)
	cfg.Namespace = "Not_A_Namespace"
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "--namespace") {
		t.Fatalf("got %v", err)
	}
	cfg.Namespace = "rdma-conformance"
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
}
