package podrun

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

func TestPodIsUnprivilegedAndLabelled(t *testing.T) {
	p := Pod(Spec{Name: "p", Namespace: "ns", RunID: "r1", Node: "n1", Image: "img:1",
		Args: []string{"env"}, Resources: map[string]int64{"rdma/rdma_shared_device_a": 1},
		AddCaps: []corev1.Capability{"IPC_LOCK"}})
	c := p.Spec.Containers[0]
	if *c.SecurityContext.Privileged || *c.SecurityContext.AllowPrivilegeEscalation {
		t.Fatal("probe pod is privileged")
	}
	if got := c.Resources.Limits["rdma/rdma_shared_device_a"]; got.Value() != 1 {
		t.Fatalf("rdma limit = %v", got)
	}
	if p.Labels["rdmasuite.io/run"] != "r1" || p.Labels["app.kubernetes.io/managed-by"] != "rdmasuite" {
		t.Fatalf("labels = %v", p.Labels)
	}
	if c.SecurityContext.Capabilities.Add[0] != "IPC_LOCK" || p.Spec.NodeName != "n1" {
		t.Fatal("caps or node not set")
	}
}

// A pod that never finishes must time out with the pod's state as evidence
// and must be deleted anyway.
func TestRunTimesOutAndDeletes(t *testing.T) {
	cs := fake.NewClientset()
	s := Spec{Name: "p", Namespace: "ns", RunID: "r", Image: "img:1"}
	_, err := Run(context.Background(), cs, s, 600*time.Millisecond)
	if !errors.Is(err, ErrTimeout) {
		t.Fatalf("err = %v, want ErrTimeout", err)
	}
	if _, gerr := cs.CoreV1().Pods("ns").Get(context.Background(), "p", metav1.GetOptions{}); gerr == nil {
		t.Fatal("pod left behind after timeout")
	}
}

func TestDescribeNamesWaitingReason(t *testing.T) {
	p := &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodPending,
		Conditions:        []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable", Message: "0/2 nodes are available: 2 Insufficient rdma/rdma_shared_device_a."}},
		ContainerStatuses: []corev1.ContainerStatus{{Name: "probe", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ErrImagePull"}}}}}}
	d := Describe(p)
	for _, want := range []string{"Unschedulable", "Insufficient rdma/rdma_shared_device_a", "ErrImagePull"} {
		if !strings.Contains(d, want) {
			t.Errorf("Describe() = %q, missing %q", d, want)
		}
	}
}

// A pod the run stops waiting for (internal deadline, interrupt) says so,
// not "did not finish in time" against its own timeout.
func TestRunStoppedByTheRunsDeadline(t *testing.T) {
	cs := fake.NewClientset()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err := Run(ctx, cs, Spec{Name: "p", Namespace: "ns", Node: "n1", Image: "img"}, time.Minute)
	if err == nil || !strings.Contains(err.Error(), "context deadline exceeded") || !strings.Contains(err.Error(), "internal deadline") {
		t.Fatalf("%v", err)
	}
	if _, err := cs.CoreV1().Pods("ns").Get(context.Background(), "p", metav1.GetOptions{}); err == nil {
		t.Fatal("the pod must be deleted when the run stops waiting")
	}
}
