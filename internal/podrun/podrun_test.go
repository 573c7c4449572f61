package podrun

import (
	"context"
	"errors"
	"fmt"
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

// Waiting on a pod is a watch, not a poll: a whole round of
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

// A run-once pod is finished when its containers have exited, before the
// kubelet reports the terminal phase (which waits for the sandbox's
// teardown); not while one still runs, and never for a pod that restarts.
func TestFinishedAtContainerExit(t *testing.T) {
	exited := corev1.ContainerStatus{Name: "probe", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 3}}}
	running := corev1.ContainerStatus{Name: "side", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}
	pod := func(policy corev1.RestartPolicy, phase corev1.PodPhase, containers int, st ...corev1.ContainerStatus) *corev1.Pod {
		p := &corev1.Pod{Spec: corev1.PodSpec{RestartPolicy: policy}, Status: corev1.PodStatus{Phase: phase, ContainerStatuses: st}}
		for i := 0; i < containers; i++ {
			p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: fmt.Sprint("c", i)})
		}
		return p
	}
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		want bool
	}{
		{"exited, phase still Running", pod(corev1.RestartPolicyNever, corev1.PodRunning, 1, exited), true},
		{"terminal phase", pod(corev1.RestartPolicyNever, corev1.PodFailed, 1), true},
		{"one of two still running", pod(corev1.RestartPolicyNever, corev1.PodRunning, 2, exited, running), false},
		{"second container not reported yet", pod(corev1.RestartPolicyNever, corev1.PodRunning, 2, exited), false},
		{"restarts on failure", pod(corev1.RestartPolicyOnFailure, corev1.PodRunning, 1, exited), false},
		{"no containers", pod(corev1.RestartPolicyNever, corev1.PodRunning, 0), false},
		{"nil", nil, false},
	} {
		if got := Finished(tc.pod); got != tc.want {
			t.Errorf("%s: Finished = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// Wait returns at the container's exit, with its exit code, while the
// reported phase still says Running (on the bed's host nodes it has even
// read Pending): the result's phase is the terminal one that exit means.
func TestWaitEndsAtContainerExit(t *testing.T) {
	cs := fake.NewClientset()
	s := Spec{Name: "cli", Namespace: "ns", RunID: "r", Image: "img:1"}
	created, err := cs.CoreV1().Pods("ns").Create(context.Background(), Pod(s), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		time.Sleep(300 * time.Millisecond)
		p, _ := cs.CoreV1().Pods("ns").Get(context.Background(), "cli", metav1.GetOptions{})
		p.Status.Phase = corev1.PodRunning
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "probe", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 3}}}}
		if _, err := cs.CoreV1().Pods("ns").UpdateStatus(context.Background(), p, metav1.UpdateOptions{}); err != nil {
			t.Error(err)
		}
	}()
	res, err := Wait(context.Background(), cs, created, 5*time.Second)
	if err != nil || res.ExitCode != 3 || res.Phase != corev1.PodFailed || res.Pod.Status.Phase != corev1.PodRunning {
		t.Fatalf("wait: exit %d phase %s err %v", res.ExitCode, res.Phase, err)
	}
}

// Start says a server pod ended before its client ran as soon as its
// container has exited, not once the phase turns terminal: a pod Running
// with an IP whose server is gone must not pass for started.
func TestStartSeesAnExitedServer(t *testing.T) {
	cs := fake.NewClientset()
	s := Spec{Name: "srv", Namespace: "ns", RunID: "r", Image: "img:1"}
	go func() {
		time.Sleep(300 * time.Millisecond)
		p, err := cs.CoreV1().Pods("ns").Get(context.Background(), "srv", metav1.GetOptions{})
		if err != nil {
			t.Error(err)
			return
		}
		p.Status.Phase, p.Status.PodIP = corev1.PodRunning, "10.0.0.7"
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "probe", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1}}}}
		if _, err := cs.CoreV1().Pods("ns").UpdateStatus(context.Background(), p, metav1.UpdateOptions{}); err != nil {
			t.Error(err)
		}
	}()
	if _, _, err := Start(context.Background(), cs, s, 5*time.Second); err == nil || !strings.Contains(err.Error(), "ended before its client ran") {
		t.Fatalf("start of an exited server: %v", err)
	}
}
