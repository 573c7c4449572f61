package doctor

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Test fixtures: a healthy two-node GPU/RDMA cluster run by both operators,
// which cases break one fact at a time.

var t0 = time.Date(2026, 9, 8, 17, 16, 2, 0, time.UTC)

const (
	netNS = "nvidia-network-operator"
	gpuNS = "nvidia-gpu-operator"
)

func rdmaNode(name string) corev1.Node {
	return corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
		MOFEDWaitLabel: "false", MellanoxNICLabel: "true", GPUPresentLabel: "true"}},
		Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{
			"rdma/rdma_shared_device_a": resource.MustParse("63"), "nvidia.com/gpu": resource.MustParse("8")}}}
}

func cpuNode(name string, taints ...corev1.Taint) corev1.Node {
	return corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"node-role.kubernetes.io/control-plane": ""}},
		Spec: corev1.NodeSpec{Taints: taints}}
}

func pod(ns, name, nodeName string, containers ...string) corev1.Pod {
	p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: corev1.PodSpec{NodeName: nodeName}}
	for _, c := range containers {
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: c})
		p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{Name: c, Ready: true,
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}})
	}
	p.Status.Phase = corev1.PodRunning
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	return p
}

func mofedPod(node string) corev1.Pod {
	return pod(netNS, "mofed-ubuntu22.04-ds-"+node, node, "mofed-container")
}

func driverPod(node string) corev1.Pod {
	return pod(gpuNS, "nvidia-driver-daemonset-"+node, node, "nvidia-driver-ctr", "nvidia-peermem-ctr")
}

// crashing turns a pod's first container into a crash loop that last
// failed at `at`.
func crashing(p corev1.Pod, restarts int32, at time.Time) corev1.Pod {
	cs := &p.Status.ContainerStatuses[0]
	cs.Ready, cs.RestartCount = false, restarts
	cs.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}
	cs.LastTerminationState.Terminated = &corev1.ContainerStateTerminated{ExitCode: 1, FinishedAt: metav1.NewTime(at)}
	p.Status.Conditions[0].Status = corev1.ConditionFalse
	return p
}

// inInit puts the pod in Init, waiting in the named init container after
// the ones before it completed.
func inInit(p corev1.Pod, done []string, waitingIn string) corev1.Pod {
	for _, c := range done {
		p.Spec.InitContainers = append(p.Spec.InitContainers, corev1.Container{Name: c})
		p.Status.InitContainerStatuses = append(p.Status.InitContainerStatuses, corev1.ContainerStatus{Name: c,
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0}}})
	}
	p.Spec.InitContainers = append(p.Spec.InitContainers, corev1.Container{Name: waitingIn})
	p.Status.InitContainerStatuses = append(p.Status.InitContainerStatuses, corev1.ContainerStatus{Name: waitingIn,
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}})
	for i := range p.Status.ContainerStatuses {
		p.Status.ContainerStatuses[i].Ready = false
		p.Status.ContainerStatuses[i].State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "PodInitializing"}}
	}
	p.Status.Phase = corev1.PodPending
	p.Status.Conditions[0].Status = corev1.ConditionFalse
	return p
}

// pendingFor makes a DaemonSet-style pod the scheduler could not place.
func pendingFor(p corev1.Pod, node, message string) corev1.Pod {
	p.Spec.NodeName = ""
	p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{node}}}}}}}}
	p.Status = corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{
		{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable", Message: message}}}
	return p
}

func withEnv(p corev1.Pod, name, value string) corev1.Pod {
	p.Spec.Containers[0].Env = append(p.Spec.Containers[0].Env, corev1.EnvVar{Name: name, Value: value})
	return p
}

const sharedDevConfig = `{"configList":[{"resourceName":"rdma_shared_device_a","rdmaHcaMax":63,"selectors":{"ifNames":["ens1f0"]}},` +
	`{"resourceName":"rdma_shared_device_b","rdmaHcaMax":63,"selectors":{"ifNames":["ens2f0"]}}]}`

func policy(tolerations []any, env []any) *unstructured.Unstructured {
	spec := map[string]any{"ofedDriver": map[string]any{"env": env},
		"rdmaSharedDevicePlugin": map[string]any{"config": sharedDevConfig}}
	if tolerations != nil {
		spec["tolerations"] = tolerations
	}
	return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "mellanox.com/v1alpha1", "kind": "NicClusterPolicy",
		"metadata": map[string]any{"name": "nic-cluster-policy"}, "spec": spec}}
}

func healthyHost() HostFacts {
	ready := t0.Add(-time.Hour)
	return HostFacts{DriverReady: true, DriverReadyAt: &ready, PeermemLoaded: true,
		MemoryPeerClients: []string{"nv_mem"}, IO: &PSIAverages{Avg10: 0.4, Avg60: 0.3, Avg300: 0.2},
		RDMARead: true, RDMAClassPresent: true, RDMADevices: []string{"mlx5_0", "mlx5_1"}}
}

// healthy is two RDMA/GPU nodes with both operators Ready and clean hosts.
func healthy() State {
	return State{
		Nodes: []corev1.Node{rdmaNode("node-1"), rdmaNode("node-2")},
		Pods:  []corev1.Pod{mofedPod("node-1"), mofedPod("node-2"), driverPod("node-1"), driverPod("node-2")},
		Logs:  map[string]string{}, Policy: policy(nil, nil), Roles: DefaultRoles,
		Hosts: map[string]HostFacts{"node-1": healthyHost(), "node-2": healthyHost()},
	}
}

// replacePod swaps the pod with the same name (or appends it).
func (s *State) replacePod(p corev1.Pod) {
	for i := range s.Pods {
		if s.Pods[i].Namespace == p.Namespace && s.Pods[i].Name == p.Name {
			s.Pods[i] = p
			return
		}
	}
	s.Pods = append(s.Pods, p)
}

func (s *State) removePod(name string) {
	for i := range s.Pods {
		if s.Pods[i].Name == name {
			s.Pods = append(s.Pods[:i], s.Pods[i+1:]...)
			return
		}
	}
}

func (s *State) log(p corev1.Pod, container, text string) {
	s.Logs[LogKey(p.Namespace, p.Name, container)] = text
}

func (s *State) host(node string, edit func(*HostFacts)) {
	h := s.Hosts[node]
	edit(&h)
	s.Hosts[node] = h
}

// realWorld returns a testdata/realworld excerpt without its comment lines
// (# source: / # what: say where it comes from).
func realWorld(t *testing.T, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "realworld", name))
	if err != nil {
		t.Fatal(err)
	}
	var keep []string
	for _, l := range strings.Split(string(data), "\n") {
		if !strings.HasPrefix(l, "#") {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "\n")
}

func ids(fs []Finding) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.ID+"@"+f.Node)
	}
	return out
}

// realWorldGrep returns the excerpt's lines matching pattern (a file can
// hold several outputs: a describe, a container log, a later fix).
func realWorldGrep(t *testing.T, name, pattern string) string {
	t.Helper()
	re := regexp.MustCompile(pattern)
	var keep []string
	for _, l := range strings.Split(realWorld(t, name), "\n") {
		if re.MatchString(l) {
			keep = append(keep, l)
		}
	}
	if len(keep) == 0 {
		t.Fatalf("%s: no line matches %q", name, pattern)
	}
	return strings.Join(keep, "\n")
}
