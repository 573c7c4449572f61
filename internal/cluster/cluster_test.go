package cluster

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

func runNS(id string, created time.Time, extra map[string]string) *corev1.Namespace {
	l := map[string]string{ManagedByLabel: ManagedBy, RunLabel: id}
	for k, v := range extra {
		l[k] = v
	}
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: RunNamespace(id), Labels: l, CreationTimestamp: metav1.NewTime(created)}}
}

// A go test timeout or a kill leaks the namespace; cleanup finds such runs
// by label and age, and never touches namespaces that are not the suite's.
func TestStaleRunsByLabelAndAge(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	cs := fake.NewClientset(
		runNS("old1", now.Add(-5*time.Hour), nil),
		runNS("kept", now.Add(-3*time.Hour), map[string]string{KeptLabel: "true"}),
		runNS("fresh", now.Add(-10*time.Minute), nil),
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "rdmasuite-lookalike", CreationTimestamp: metav1.NewTime(now.Add(-9 * time.Hour))}},
	)
	got, err := StaleRuns(context.Background(), cs, 2*time.Hour, "", now)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].RunID != "kept" || !got[0].Kept || got[1].RunID != "old1" {
		t.Fatalf("%+v", got)
	}
	one, _ := StaleRuns(context.Background(), cs, 2*time.Hour, "fresh", now)
	if len(one) != 1 || one[0].Name != "rdmasuite-fresh" {
		t.Fatalf("--run picks one run whatever its age: %+v", one)
	}
	if err := MarkKept(context.Background(), cs, "fresh", "2 checks failed"); err != nil {
		t.Fatal(err)
	}
	ns, _ := cs.CoreV1().Namespaces().Get(context.Background(), "rdmasuite-fresh", metav1.GetOptions{})
	if ns.Labels[KeptLabel] != "true" || ns.Annotations["rdmasuite.io/kept-because"] != "2 checks failed" {
		t.Fatalf("%+v", ns.ObjectMeta)
	}
}
