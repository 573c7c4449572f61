package doctor

import (
	"github.com/rdmasuite/rdmasuite/reports"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func node(name string, wait string, taints ...corev1.Taint) corev1.Node {
	return corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{MOFEDWaitLabel: wait}},
		Spec: corev1.NodeSpec{Taints: taints},
		Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{
			"rdma/rdma_shared_device_a": resource.MustParse("63"), "nvidia.com/gpu": resource.MustParse("8")}}}
}

func pod(ns, name, nodeName, container string, ready bool, waiting string, restarts int32) corev1.Pod {
	p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.PodSpec{NodeName: nodeName, Containers: []corev1.Container{{Name: container}}}}
	st := corev1.ConditionFalse
	if ready {
		st = corev1.ConditionTrue
	}
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: st}}
	cs := corev1.ContainerStatus{Name: container, RestartCount: restarts}
	if waiting != "" {
		cs.State.Waiting = &corev1.ContainerStateWaiting{Reason: waiting}
	} else {
		cs.State.Running = &corev1.ContainerStateRunning{}
	}
	p.Status.ContainerStatuses = []corev1.ContainerStatus{cs}
	return p
}

func policy(tolerations []any, env []any) *unstructured.Unstructured {
	spec := map[string]any{"ofedDriver": map[string]any{"env": env}}
	if tolerations != nil {
		spec["tolerations"] = tolerations
	}
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "mellanox.com/v1alpha1", "kind": "NicClusterPolicy",
		"metadata": map[string]any{"name": "nic-cluster-policy"}, "spec": spec}}
	return u
}

func healthy() State {
	return State{
		Nodes:     []corev1.Node{node("node-1", "false"), node("node-2", "false")},
		Resources: []string{"rdma/rdma_shared_device_a", "nvidia.com/gpu"},
		Pods: []corev1.Pod{
			pod("nvidia-network-operator", "mofed-ubuntu22.04-ds-aaaa", "node-1", "mofed-container", true, "", 0),
			pod("nvidia-network-operator", "mofed-ubuntu22.04-ds-bbbb", "node-2", "mofed-container", true, "", 0),
		},
		Logs:   map[string]string{},
		Policy: policy(nil, nil),
		Roles:  DefaultRoles,
	}
}

func ids(fs []Finding) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.ID+"@"+f.Node)
	}
	return out
}

func TestHealthyClusterHasNoFinding(t *testing.T) {
	if fs := Diagnose(healthy()); len(fs) != 0 {
		t.Fatalf("healthy cluster: %v", ids(fs))
	}
}

// No NicClusterPolicy: a check that did not run (not-run), unless the
// operator said the cluster manages RDMA drivers without the Network Operator.
func TestMissingPolicyUnlessNoNetworkOperator(t *testing.T) {
	s := healthy()
	s.Policy, s.PolicyErr = nil, "the cluster has no NicClusterPolicy CRD"
	fs := Diagnose(s)
	if len(fs) != 1 || fs[0].ID != NoNicClusterPolicy || fs[0].Node != "" {
		t.Fatalf("missing policy: %v", ids(fs))
	}
	if cs := Checks(s, fs, 0); cs[0].Status != reports.NotRun {
		t.Fatalf("missing policy reported %s, want not-run", cs[0].Status)
	}
	s.NoNetworkOperator = true
	if fs := Diagnose(s); len(fs) != 0 {
		t.Fatalf("no Network Operator expected, yet: %v", ids(fs))
	}
}

func TestSeed002UntoleratedTaint(t *testing.T) {
	s := healthy()
	s.Nodes[1] = node("node-2", "true", corev1.Taint{Key: "crater.raids.io/account", Value: "exclusive", Effect: corev1.TaintEffectNoSchedule})
	s.Pods = s.Pods[:1] // the MOFED pod cannot be scheduled on node-2
	fs := Diagnose(s)
	got := strings.Join(ids(fs), " ")
	if got != "mofed-wait-stuck@node-2 nicclusterpolicy-untolerated-taint@node-2" {
		t.Fatalf("findings %s", got)
	}
	if !strings.Contains(fs[1].Fix, "spec\":{\"tolerations") || !strings.Contains(strings.Join(fs[1].Evidence, " "), "crater.raids.io/account") {
		t.Fatalf("%+v", fs[1])
	}
	// With the toleration in place the taint is no longer a finding.
	s.Policy = policy([]any{map[string]any{"key": "crater.raids.io/account", "operator": "Exists", "effect": "NoSchedule"}}, nil)
	if got := strings.Join(ids(Diagnose(s)), " "); got != "mofed-wait-stuck@node-2" {
		t.Fatalf("tolerated: %s", got)
	}
}

func TestSeed002ResourceMissing(t *testing.T) {
	s := healthy()
	delete(s.Nodes[0].Status.Allocatable, "rdma/rdma_shared_device_a")
	s.Nodes[1].Status.Allocatable["nvidia.com/gpu"] = resource.MustParse("0")
	if got := strings.Join(ids(Diagnose(s)), " "); got != "rdma-resource-missing@node-1 rdma-resource-missing@node-2" {
		t.Fatalf("%s", got)
	}
}

func TestSeed000StorageModulesCrashLoop(t *testing.T) {
	s := healthy()
	s.Pods[0] = pod("nvidia-network-operator", "mofed-ubuntu22.04-ds-aaaa", "node-1", "mofed-container", false, "CrashLoopBackOff", 12)
	s.Logs[LogKey("nvidia-network-operator", "mofed-ubuntu22.04-ds-aaaa", "mofed-container")] =
		"Storage modules are loaded for current driver, terminating\nprior driver reload failure due to UNLOAD_STORAGE_MODULES"
	s.Nodes[0].Labels[MOFEDWaitLabel] = "true"
	fs := Diagnose(s)
	if got := strings.Join(ids(fs), " "); got != "mofed-storage-modules@node-1 mofed-wait-stuck@node-1" {
		t.Fatalf("%s", got)
	}
	if !strings.Contains(fs[0].Fix, "UNLOAD_STORAGE_MODULES=true") || !strings.Contains(fs[0].Fix, "spec.ofedDriver.env") {
		t.Fatalf("fix %q", fs[0].Fix)
	}
	s.Policy = policy(nil, []any{map[string]any{"name": "UNLOAD_STORAGE_MODULES", "value": "true"}})
	if fs := Diagnose(s); fs[0].ID != StorageModulesNoFix {
		t.Fatalf("with the env set: %v", ids(fs))
	}
}

func TestSeed001PeermemRaceAndCascade(t *testing.T) {
	s := healthy()
	drv := pod("nvidia-gpu-operator", "nvidia-driver-daemonset-418.94-564xm", "node-2", "nvidia-driver-ctr", false, "CrashLoopBackOff", 64)
	tk := pod("nvidia-gpu-operator", "nvidia-container-toolkit-daemonset-sxfkr", "node-2", "toolkit", false, "PodInitializing", 0)
	tk.Spec.InitContainers = []corev1.Container{{Name: "driver-validation"}}
	tk.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: "driver-validation", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
	s.Pods = append(s.Pods, drv, tk)
	s.Logs[LogKey(drv.Namespace, drv.Name, "nvidia-driver-ctr")] = "Loading NVIDIA driver kernel modules...\nmodprobe: ERROR: could not insert 'nvidia_peermem': Invalid argument"
	fs := Diagnose(s)
	if got := strings.Join(ids(fs), " "); got != "gpu-operator-init-cascade@node-2 peermem-before-mofed@node-2" {
		t.Fatalf("%s", got)
	}
}

func TestHostFacts(t *testing.T) {
	s := healthy()
	s.Hosts = map[string]HostFacts{
		"node-1": {StorageModulesLoaded: []string{"rpcrdma", "xprtrdma"}, DriverReady: false},
		"node-2": {DriverReady: true, PortsDown: []string{"mlx5_1/1: 1: DOWN (2: Polling)"}},
	}
	if got := strings.Join(ids(Diagnose(s)), " "); got != "mofed-storage-modules@node-1 rdma-port-down@node-2" {
		t.Fatalf("%s", got)
	}
	s.Hosts = map[string]HostFacts{"node-1": {PeermemLoaded: true}, "node-2": {PeermemLoaded: true, DriverReady: true}}
	if got := strings.Join(ids(Diagnose(s)), " "); got != "peermem-before-mofed@node-1" {
		t.Fatalf("%s", got)
	}
}

func f(v float64) *float64 { return &v }

func TestSeed004PressureOutlier(t *testing.T) {
	s := healthy()
	s.Hosts = map[string]HostFacts{
		"vm-1": {DriverReady: true, IOSomeAvg10: f(0.8), IOWaitPct: f(1.1)},
		"vm-2": {DriverReady: true, IOSomeAvg10: f(1.2), IOWaitPct: f(0.9)},
		"vm-3": {DriverReady: true, IOSomeAvg10: f(46.0), IOWaitPct: f(38.0)},
		"vm-4": {DriverReady: true, IOSomeAvg10: f(0.5), IOWaitPct: f(1.4)},
	}
	fs := Diagnose(s)
	if got := strings.Join(ids(fs), " "); got != "io-pressure-outlier@vm-3" {
		t.Fatalf("%s", got)
	}
	if ev := strings.Join(fs[0].Evidence, " "); !strings.Contains(ev, "46.0%") || !strings.Contains(ev, "modified z-score") {
		t.Fatalf("evidence %q", ev)
	}
	// Uniformly busy nodes are not outliers; nor is a cluster of idle ones.
	for _, h := range []string{"vm-1", "vm-2", "vm-4"} {
		x := s.Hosts[h]
		x.IOSomeAvg10, x.IOWaitPct = f(44), f(37)
		s.Hosts[h] = x
	}
	if fs := Diagnose(s); len(fs) != 0 {
		t.Fatalf("uniform load flagged: %v", ids(fs))
	}
}

func TestCatalogueComplete(t *testing.T) {
	for id, e := range Catalogue {
		if e.ID != id || e.Cause == "" || e.Fix == "" || e.Severity == "" || e.Seed == "" {
			t.Errorf("catalogue entry %s incomplete: %+v", id, e)
		}
	}
}

// Defect: when the host probe could not run (PodSecurity refused the
// privileged pod, --node-probe=false, the API-only CLI) the node still got
// "doctor/node pass". A node check passes only with API and host facts.
func TestNodeCheckNeedsHostFacts(t *testing.T) {
	s := healthy()
	s.Hosts = map[string]HostFacts{"node-1": {DriverReady: true}}
	s.HostsMissing = map[string]string{"node-2": "pods \"node-x\" is forbidden: violates PodSecurity \"baseline:latest\": privileged"}
	got := map[string]reports.Check{}
	for _, c := range Checks(s, Diagnose(s), 0) {
		if c.ID == "doctor/node" {
			got[c.Nodes[0]] = c
		}
	}
	if len(got) != len(s.Nodes) {
		t.Fatalf("every node needs a doctor/node row: %v", got)
	}
	if got["node-1"].Status != reports.Pass {
		t.Errorf("node-1 had both sources: %+v", got["node-1"])
	}
	if c := got["node-2"]; c.Status != reports.NotRun || !strings.Contains(c.Reason, "PodSecurity") {
		t.Errorf("node-2's host probe was refused: %+v", c)
	}
	s.Hosts, s.HostsMissing = nil, nil
	for _, c := range Checks(s, Diagnose(s), 0) {
		if c.ID == "doctor/node" && c.Status == reports.Pass {
			t.Errorf("no host facts at all, yet %s passed", c.Nodes[0])
		}
	}
}
