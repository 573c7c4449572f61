package podrun

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// refusedAtAdmission is a pod the kubelet refused because the device plugin
// could not allocate its device, as the kubelet reports it: phase Failed,
// reason UnexpectedAdmissionError, no container ever created. The message's
// shape is the kubelet's ("Pod Allocate failed due to …, which is
// unexpected"), as quoted in https://github.com/Project-HAMi/HAMi/issues/596
// ("Allocate failed due to requested number of devices unavailable for
// nvidia.com/gpu. Requested: 1, Available: 0, which is unexpected") and
// https://github.com/kubernetes/kubernetes/issues/97131 ("Pod Allocate
// failed due to device plugin GetPreferredAllocation rpc failed …").
const admissionMsg = "Pod Allocate failed due to requested number of devices unavailable for rdma/rdma_shared_device_a. " +
	"Requested: 1, Available: 0, which is unexpected"

func refusedAtAdmission() *fake.Clientset {
	cs := fake.NewClientset()
	cs.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		p := a.(k8stesting.CreateAction).GetObject().(*corev1.Pod).DeepCopy()
		p.Status = corev1.PodStatus{Phase: corev1.PodFailed, Reason: "UnexpectedAdmissionError", Message: admissionMsg}
		return true, p, cs.Tracker().Create(corev1.SchemeGroupVersion.WithResource("pods"), p, p.Namespace)
	})
	return cs
}

// A pod that never started is reported with its own status reason and
// message, whether the suite waited for it to run (a node's probe pod, a
// server) or to finish (a run-once probe: no exit, no output, never a
// result that reads as an empty run).
func TestPodRefusedAtAdmissionSaysWhy(t *testing.T) {
	s := Spec{Name: "p", Namespace: "ns", RunID: "r", Node: "n1", Image: "img:1"}
	want := []string{"UnexpectedAdmissionError", admissionMsg}
	_, _, err := StartHolding(context.Background(), refusedAtAdmission(), s, 5*time.Second)
	for _, w := range want {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("start: %v; want it to quote %q", err, w)
		}
	}
	res, err := Run(context.Background(), refusedAtAdmission(), s, 5*time.Second)
	for _, w := range append(want, "failed before its container ran") {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("run: phase %s exit %d logs %q, err %v; want an error quoting %q", res.Phase, res.ExitCode, res.Logs, err, w)
		}
	}

	// The pod's other own reasons: unschedulable, a container that cannot
	// be created.
	p := &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodPending,
		Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable",
			Message: "0/4 nodes are available: 4 Insufficient rdma/rdma_shared_device_a."}},
		ContainerStatuses: []corev1.ContainerStatus{{Name: "probe", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{
			Reason: "CreateContainerConfigError", Message: `secret "nccl-env" not found`}}}}}}
	d := Describe(p)
	for _, w := range []string{"PodScheduled=Unschedulable: 0/4 nodes are available", "CreateContainerConfigError", `secret "nccl-env" not found`} {
		if !strings.Contains(d, w) {
			t.Errorf("Describe() = %q, missing %q", d, w)
		}
	}
}
