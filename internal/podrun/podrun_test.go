package podrun

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
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

// Issue 28.1: waiting on a pod is a watch, not a poll: a whole round of
// pods (hundreds at once) must not queue behind the client's rate limit.
// The fake API counts what the waiters ask: one list and one watch per
// wait, and no GET per interval, however long the pod takes.
func TestWaitingWatchesInsteadOfPolling(t *testing.T) {
	cs := fake.NewClientset()
	var gets, lists, watches atomic.Int32
	cs.PrependReactor("get", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() == "" { // not the log read
			gets.Add(1)
		}
		return false, nil, nil
	})
	cs.PrependReactor("list", "pods", func(k8stesting.Action) (bool, runtime.Object, error) { lists.Add(1); return false, nil, nil })
	cs.PrependWatchReactor("pods", func(k8stesting.Action) (bool, watch.Interface, error) { watches.Add(1); return false, nil, nil })
	s := Spec{Name: "srv", Namespace: "ns", RunID: "r", Image: "img:1"}
	go func() { // the kubelet: running after 1.5 s, done after 3 s
		time.Sleep(1500 * time.Millisecond)
		setPhase(t, cs, "srv", corev1.PodRunning, "10.0.0.7")
		time.Sleep(1500 * time.Millisecond)
		setPhase(t, cs, "srv", corev1.PodSucceeded, "10.0.0.7")
	}()
	pod, took, err := Start(context.Background(), cs, s, 10*time.Second)
	if err != nil || pod.Status.PodIP != "10.0.0.7" || took < time.Second {
		t.Fatalf("start: %v %v %v", pod, took, err)
	}
	res, err := Wait(context.Background(), cs, pod, 10*time.Second)
	if err != nil || res.Phase != corev1.PodSucceeded {
		t.Fatalf("wait: %+v %v", res, err)
	}
	if gets.Load() > 4 || watches.Load() < 2 { // the simulated kubelet's own 2 GETs count too
		t.Fatalf("%d GETs, %d lists, %d watches over 3 s of waiting: polling, not watching", gets.Load(), lists.Load(), watches.Load())
	}
}

func setPhase(t *testing.T, cs *fake.Clientset, name string, phase corev1.PodPhase, ip string) {
	p, err := cs.CoreV1().Pods("ns").Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Error(err)
		return
	}
	p.Status.Phase, p.Status.PodIP = phase, ip
	if phase == corev1.PodSucceeded {
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "probe", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0}}}}
	}
	if _, err := cs.CoreV1().Pods("ns").UpdateStatus(context.Background(), p, metav1.UpdateOptions{}); err != nil {
		t.Error(err)
	}
}
