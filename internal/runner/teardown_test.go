package runner

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/rdmasuite/rdmasuite/internal/cluster"
)

// The run's next pods wait for its earlier ones to terminate: the wait is
// said in the progress log and counted as the pod teardown phase.
func TestNextPodsWaitForTheRunsTerminatingPods(t *testing.T) {
	now := metav1.Now()
	going := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pair-shared-dev-n-a", Namespace: cluster.RunNamespace("t-td"),
		DeletionTimestamp: &now, Finalizers: []string{"test/hold"},
		Labels: map[string]string{cluster.ManagedByLabel: cluster.ManagedBy, cluster.RunLabel: "t-td"}}}
	kube := fake.NewClientset(going)
	lists := 0
	kube.PrependReactor("list", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		if lists++; lists == 3 {
			_ = kube.Tracker().Delete(corev1.SchemeGroupVersion.WithResource("pods"), going.Namespace, going.Name)
		}
		return false, nil, nil
	})
	r := New(kube, testConfig(t), "t-td")
	var lines []string
	r.Progress = func(l string) { lines = append(lines, l) }
	r.awaitTerminated(context.Background(), "node pods [hostdev]")
	if len(lines) != 1 || !strings.Contains(lines[0], "node pods [hostdev]: the run's earlier pods terminated in") {
		t.Fatalf("progress: %q", lines)
	}
	if p := r.phases[PhasePodTeardown]; p.Count != 1 || p.TotalSec < 1 {
		t.Fatalf("teardown phase %+v: want one wait of at least a second", p)
	}
}
