package doctor

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
)

// Gathering keeps the pods the rules need: a Pending DaemonSet pod aimed at
// a selected node (its scheduler message is the evidence), not pods of
// other nodes; and the logs of every container of an unhealthy pod, init
// containers included (nvidia-peermem-ctr, mofed-validation).
func TestGatherKeepsPendingPodsAndEveryContainersLog(t *testing.T) {
	n1, n2, other := rdmaNode("node-1"), rdmaNode("node-2"), rdmaNode("node-9")
	n1.Labels["pool"], n2.Labels["pool"] = "gpu", "gpu"
	pending := pendingFor(mofedPod("node-2"), "node-2", "0/3 nodes are available: 1 node(s) had untolerated taint {a: b}")
	elsewhere := pendingFor(mofedPod("node-9"), "node-9", "x")
	drv := inInit(driverPod("node-1"), nil, "mofed-validation")
	healthyMOFED := mofedPod("node-1")
	cs := fake.NewClientset(&n1, &n2, &other, &pending, &elsewhere, &drv, &healthyMOFED)
	s, err := Gather(context.Background(), cs, nil, GatherOptions{NodeSelector: "pool=gpu", NetworkOperatorNS: netNS, GPUOperatorNS: []string{gpuNS}})
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, p := range s.Pods {
		names[p.Name] = true
	}
	if !names[pending.Name] || names[elsewhere.Name] || !names[drv.Name] || !names[healthyMOFED.Name] || len(s.Pods) != 3 {
		t.Fatalf("pods gathered: %v", names)
	}
	for _, c := range []string{"mofed-validation", "nvidia-driver-ctr", "nvidia-peermem-ctr"} {
		if s.Logs[LogKey(gpuNS, drv.Name, c)] == "" {
			t.Errorf("no log gathered for %s of the unhealthy driver pod: %v", c, s.Logs)
		}
	}
	if _, ok := s.Logs[LogKey(netNS, healthyMOFED.Name, "mofed-container")]; ok {
		t.Error("a Ready pod's log was gathered")
	}
	v := NewView(s)
	if got := v.Node("node-2").MOFED; len(got) != 1 || got[0].Name != pending.Name {
		t.Fatalf("the Pending pod is not attributed to node-2: %v", got)
	}
}

// The suite's default selection narrows the doctor to the
// run's nodes by name (Nodes), so a node outside it is not judged and its
// pods are not gathered.
func TestGatherNarrowsToTheRunsNodes(t *testing.T) {
	n1, n2 := rdmaNode("node-1"), rdmaNode("node-2")
	p2 := mofedPod("node-2")
	cs := fake.NewClientset(&n1, &n2, &p2)
	s, err := Gather(context.Background(), cs, nil, GatherOptions{Nodes: []string{"node-1"}, NetworkOperatorNS: netNS})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Nodes) != 1 || s.Nodes[0].Name != "node-1" || len(s.Pods) != 0 {
		t.Fatalf("nodes %d, pods %d: want node-1 alone and no pod of node-2", len(s.Nodes), len(s.Pods))
	}
	if s, _ := Gather(context.Background(), cs, nil, GatherOptions{NetworkOperatorNS: netNS}); len(s.Nodes) != 2 {
		t.Fatalf("without Nodes every node is judged: %d", len(s.Nodes))
	}
}

// Right after a crash the dead container's log may be gone and its
// successor silent: a restarted container's empty logs are read again, so
// a crash-looping MOFED's reason is not lost; a container that never
// restarted is read once.
func TestCrashLogReadAgainAfterARestart(t *testing.T) {
	oldRead, oldWait := readLogs, logRetryWait
	defer func() { readLogs, logRetryWait = oldRead, oldWait }()
	logRetryWait = time.Millisecond
	reads := 0
	readLogs = func(_ context.Context, _ kubernetes.Interface, _ *corev1.Pod, _ string, previous bool, _ GatherOptions) string {
		reads++
		if reads > 4 && !previous { // the successor prints on the third attempt
			return "Storage modules are loaded for current driver, terminating"
		}
		return ""
	}
	p := &corev1.Pod{Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{Name: "mofed-container", RestartCount: 1}}}}
	if got := containerLogs(context.Background(), nil, p, "mofed-container", GatherOptions{}); !strings.Contains(got, "Storage modules") || reads != 6 {
		t.Fatalf("restarted container: %q after %d reads", got, reads)
	}
	reads = 0
	readLogs = func(context.Context, kubernetes.Interface, *corev1.Pod, string, bool, GatherOptions) string {
		reads++
		return ""
	}
	if got := containerLogs(context.Background(), nil, p, "mofed-container", GatherOptions{}); got != "" || reads != 2*logAttempts {
		t.Fatalf("a silent restarted container: %q after %d reads, want %d", got, reads, 2*logAttempts)
	}
	reads = 0
	p.Status.ContainerStatuses[0].RestartCount = 0
	if containerLogs(context.Background(), nil, p, "mofed-container", GatherOptions{}); reads != 2 {
		t.Fatalf("a container that never restarted was read %d times, want 2", reads)
	}
}
