package doctor

import (
	"time"

	"github.com/rdmasuite/rdmasuite/thresholds"
	"github.com/rdmasuite/rdmasuite/workloads/node"
	"github.com/rdmasuite/rdmasuite/workloads/portcounters"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// HostFacts is what the host probe (rdmaprobe node) saw on one node, reduced
// to what the rules need.
type HostFacts struct {
	StorageModulesLoaded []string
	// DriverReady: /run/mellanox/drivers/.driver-ready exists; DriverReadyAt
	// is its modification time (when MOFED last declared itself ready).
	DriverReady   bool
	DriverReadyAt *time.Time
	PeermemLoaded bool
	// MemoryPeerClients are the subdirectories of /sys/kernel/mm/memory_peers
	// (nvidia_peermem registers "nv_mem"): a registered peer-memory client.
	MemoryPeerClients []string
	// RDMARead: the host probe read /sys/class/infiniband (absent or not);
	// RDMADevices are the RDMA devices it found there. A zero HostFacts
	// (RDMARead false) says nothing about them.
	RDMARead         bool
	RDMAClassPresent bool
	RDMADevices      []string
	PortsDown        []string // "mlx5_1/1: 1: DOWN (2: Polling)"
	PortsUnknown     []string // ports whose state could not be read
	// IO is PSI io "some" (percent of time some task stalled on I/O) over
	// 10 s, 60 s and 300 s; nil when the kernel has no PSI, IOUnavailable
	// then says why.
	IO            *PSIAverages
	IOUnavailable string
	IOWaitPct     *float64 // iowait over the probe's sampling window (evidence only)
	// PortsAtRest are every RDMA port's counter deltas over the probe's
	// sampling window, read while the suite ran nothing on the node
	// (port-errors-at-rest). PortsAtRestNotRead says why there are none
	// although the node has ports (a window of 0, a probe older than the
	// suite); both empty say nothing (no port, or facts from elsewhere).
	PortsAtRest        []PortAtRest
	PortsAtRestNotRead string
	// Devices are the RDMA devices with their host configuration (PCIe
	// path, NUMA node, nearest GPU, each port's LID/SM, MTU, GIDs, ECN,
	// PFC), as the probe reported them.
	Devices []node.Device
	// ReadCost says how long the probe's reads took ("reads took 85 ms,
	// RDMA 60 ms, 2048 GID entries"), shown beside the node's pass.
	ReadCost string
}

// PortAtRest is one port's counter deltas at rest, or why they are unknown.
type PortAtRest struct {
	Port string // "mlx5_0/1", as PortsDown names it
	// Deltas is nil when the port could not be read on one side; Err then
	// says why (never a zero).
	Deltas *portcounters.Deltas
	Err    string
}

// PSIAverages are the kernel's exponentially decaying averages of a PSI line.
type PSIAverages struct {
	Avg10, Avg60, Avg300 float64
}

// State is everything the doctor looks at.
type State struct {
	Nodes []corev1.Node
	// Resources, when set, are extended resources every selected node must
	// advertise (an explicit flag). When empty, what a node must advertise
	// is derived from the cluster (see expectedResources).
	Resources []string
	// Operator pods (Network Operator's MOFED, GPU Operator's driver and
	// friends), including Pending ones aimed at a selected node, and the
	// last log lines of every container of the unhealthy ones, keyed by
	// LogKey.
	Pods []corev1.Pod
	Logs map[string]string
	// NicClusterPolicy as unstructured (its schema differs between Network
	// Operator versions); nil when absent. PolicyErr says why it is absent.
	Policy    *unstructured.Unstructured
	PolicyErr string
	// SriovPolicies are the SR-IOV Network Operator's
	// SriovNetworkNodePolicies (their resource names); SriovErr says why
	// they were not read (no CRD, no permission), "" when they were.
	SriovPolicies []unstructured.Unstructured
	SriovErr      string
	// NoNetworkOperator: the operator said RDMA drivers are managed outside
	// Kubernetes (host MOFED or inbox), so a missing NicClusterPolicy and a
	// missing .driver-ready are the expected state.
	NoNetworkOperator bool
	Hosts             map[string]HostFacts
	// APIOnly: no host facts are gathered by design (rdmasuite doctor): the
	// node check is doctor/node-api, judged on the API facts alone, and no
	// host-level row is written (the command says how to run those).
	APIOnly bool
	// HostsMissing says, per node, why its host facts are absent from Hosts
	// (probe refused by PodSecurity, --node-probe=false, API-only doctor).
	HostsMissing map[string]string
	// UnusedPorts are RDMA ports the operator declared unused or disabled
	// on purpose: "mlx5_3/1", "mlx5_3" (every port) or "node-7:mlx5_3/1".
	UnusedPorts []string
	Roles       Roles
	// SKUs is each node's thresholds SKU (its name and pinned host
	// configuration), when the caller knows it: nodes are compared with
	// the others of their SKU. A node without one is compared with the
	// nodes of the same HCA types.
	SKUs map[string]NodeSKU
}

// NodeSKU is the SKU a node was matched to.
type NodeSKU struct {
	Name string
	Host thresholds.HostExpect
}

// Roles recognise operator pods by name prefix, container and label.
type Roles struct {
	MOFEDPrefixes  []string
	MOFEDContainer string
	// GPUDriverNames are pod name prefixes: the ClusterPolicy's
	// nvidia-driver-daemonset and the NVIDIADriver CRD's nvidia-gpu-driver-.
	GPUDriverNames      []string
	GPUDriverContainers []string
	// GPUDriverLabel is app.kubernetes.io/component=nvidia-driver, set on
	// driver pods by both deployment styles.
	GPUDriverLabel string
	GPUNamespaces  []string
}

// DefaultRoles match the NVIDIA Network Operator and GPU Operator defaults.
var DefaultRoles = Roles{
	MOFEDPrefixes:       []string{"mofed-", "nvidia-doca-driver", "doca-driver-"},
	MOFEDContainer:      "mofed-container",
	GPUDriverNames:      []string{"nvidia-driver-daemonset", "nvidia-gpu-driver-"},
	GPUDriverContainers: []string{"nvidia-driver-ctr", "nvidia-peermem-ctr"},
	GPUDriverLabel:      "nvidia-driver",
	GPUNamespaces:       []string{"gpu-operator", "nvidia-gpu-operator"},
}

// Labels and markers the rules read.
const (
	MOFEDWaitLabel = "network.nvidia.com/operator.mofed.wait"
	// MellanoxNICLabel is Node Feature Discovery's label for a Mellanox
	// (PCI vendor 15b3) device: the Network Operator's default node
	// selector for its driver and device plugins.
	MellanoxNICLabel = "feature.node.kubernetes.io/pci-15b3.present"
	// GPUPresentLabel is set by the GPU Operator's NFD rules on GPU nodes.
	GPUPresentLabel = "nvidia.com/gpu.present"
	GPUResource     = "nvidia.com/gpu"
)

// LogKey is how State.Logs is keyed.
func LogKey(ns, pod, container string) string { return ns + "/" + pod + "/" + container }
