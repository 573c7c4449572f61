package cluster

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// The run's cluster-scoped PVs go with its namespace; the operator's PVs
// and other runs' are never touched.
func TestDeleteRunNamespaceDeletesTheRunsPVs(t *testing.T) {
	pv := func(name string, labels map[string]string) *corev1.PersistentVolume {
		return &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	}
	mine := map[string]string{ManagedByLabel: ManagedBy, RunLabel: "r1"}
	cs := fake.NewClientset(runNS("r1", time.Now(), nil),
		pv("rdmasuite-r1-stall-pv-1", mine),
		pv("rdmasuite-r2-stall-pv-1", map[string]string{ManagedByLabel: ManagedBy, RunLabel: "r2"}),
		pv("pv-1", nil))
	if err := DeleteRunNamespace(context.Background(), cs, "r1", time.Second); err != nil {
		t.Fatal(err)
	}
	list, _ := cs.CoreV1().PersistentVolumes().List(context.Background(), metav1.ListOptions{})
	var left []string
	for _, p := range list.Items {
		left = append(left, p.Name)
	}
	if len(left) != 2 || left[0] != "pv-1" || left[1] != "rdmasuite-r2-stall-pv-1" {
		t.Fatalf("left %v", left)
	}
}
