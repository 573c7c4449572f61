// Package doctor maps what the suite observes (node labels, taints and
// allocatable, operator pods and their logs, the NicClusterPolicy, host
// probe reports) to the known root causes from the incident write-ups. The
// catalogue is data: every finding has a stable id, a severity, the cause
// and the fix.
package doctor

// Severity of a finding.
type Severity string

const (
	Critical Severity = "critical" // RDMA/GPU capacity of the node is lost
	Warning  Severity = "warning"  // degraded or at risk
	Info     Severity = "info"     // a consequence of another finding
)

// Entry is one known failure mode.
type Entry struct {
	ID       string
	Severity Severity
	Seed     string // incident write-up it comes from
	Cause    string
	Fix      string
}

// Finding ids.
const (
	MOFEDWaitStuck      = "mofed-wait-stuck"
	UntoleratedTaint    = "nicclusterpolicy-untolerated-taint"
	ResourceMissing     = "rdma-resource-missing"
	StorageModules      = "mofed-storage-modules"
	MOFEDCrashLoop      = "mofed-crashloop"
	MOFEDNotReady       = "mofed-not-ready"
	PeermemRace         = "peermem-before-mofed"
	GPUOperatorCascade  = "gpu-operator-init-cascade"
	PortDown            = "rdma-port-down"
	IOPressureOutlier   = "io-pressure-outlier"
	NoNicClusterPolicy  = "nicclusterpolicy-missing"
	StorageModulesNoFix = "mofed-storage-modules-unload-set"
)

// Catalogue is the table of known root causes.
var Catalogue = map[string]Entry{
	MOFEDWaitStuck: {MOFEDWaitStuck, Critical, "002",
		"network.nvidia.com/operator.mofed.wait=true: the Network Operator has not seen the MOFED driver pod ready on this node, so the RDMA device plugin stays locked and no RDMA resource is advertised",
		"find out why the MOFED pod is not ready on the node (see the other findings: untolerated taint, crash loop); the label turns false by itself once it is"},
	UntoleratedTaint: {UntoleratedTaint, Critical, "002",
		"the node has a taint the NicClusterPolicy does not tolerate: the MOFED driver pod cannot be scheduled there, mofed.wait stays true forever and RDMA resources are never advertised",
		"add the taint to NicClusterPolicy spec.tolerations, e.g. kubectl patch nicclusterpolicy nic-cluster-policy --type=merge -p '{\"spec\":{\"tolerations\":[{\"key\":\"<key>\",\"operator\":\"Exists\",\"effect\":\"<effect>\"}]}}' (try --dry-run=server first; with Helm/ArgoCD change values.yaml)"},
	ResourceMissing: {ResourceMissing, Critical, "002",
		"the node does not advertise the configured RDMA/GPU resource (allocatable missing or 0): pods asking for it cannot be scheduled there",
		"check the RDMA shared device plugin / SR-IOV device plugin / GPU device plugin pod on the node and its config (resource name, selectors); they only start once mofed.wait=false"},
	StorageModules: {StorageModules, Critical, "000",
		"storage modules (rpcrdma, xprtrdma, nvme_rdma, nvmet_rdma, ib_isert, ib_srpt) were loaded before MOFED (e.g. by an NFS-over-RDMA mount): the MOFED container refuses to replace the in-tree RDMA stack (\"Storage modules are loaded for current driver, terminating\") and crash-loops",
		"set UNLOAD_STORAGE_MODULES=true in NicClusterPolicy spec.ofedDriver.env (kubectl edit nicclusterpolicy nic-cluster-policy). Side effect: NFS-over-RDMA I/O stalls while MOFED restarts (27 s observed, no data lost)"},
	StorageModulesNoFix: {StorageModulesNoFix, Warning, "000",
		"storage modules are loaded and UNLOAD_STORAGE_MODULES=true is set, yet the MOFED pod still fails on them: the unload itself failed (modules in use by a mounted NFS-over-RDMA share)",
		"unmount or quiesce the NFS-over-RDMA mounts on the node, then delete the MOFED pod so it retries; expect an NFS I/O stall during the driver reload"},
	MOFEDCrashLoop: {MOFEDCrashLoop, Critical, "000",
		"the MOFED driver pod is crash-looping for a reason not in the catalogue (see its log in the evidence)",
		"read the MOFED container log (kubectl logs -n <ns> <pod> -c mofed-container --previous) and the node's dmesg"},
	MOFEDNotReady: {MOFEDNotReady, Warning, "002",
		"the MOFED driver pod on the node is not Running and Ready",
		"wait for the driver build/load to finish (it can take minutes after a kernel upgrade); if it stays, read its events and log"},
	PeermemRace: {PeermemRace, Critical, "001/003",
		"the GPU driver container loaded nvidia_peermem before MOFED created /run/mellanox/drivers/.driver-ready (both operators start at once after a kernel upgrade): modprobe fails with \"could not insert 'nvidia_peermem': Invalid argument\" and the driver pod crash-loops",
		"make the GPU Operator wait for MOFED: set driver.rdma.enabled=true with the Network Operator's MOFED (the driver then waits for /run/mellanox/drivers/.driver-ready), or delete the nvidia-driver-daemonset pod once .driver-ready exists so it restarts in order"},
	GPUOperatorCascade: {GPUOperatorCascade, Info, "001",
		"GPU Operator pods on this node are stuck in Init because they wait for the driver (.driver-ctr-ready, toolkit-ready never created)",
		"fix the driver pod's failure; these pods start by themselves afterwards"},
	PortDown: {PortDown, Critical, "002",
		"an RDMA port on the node is not ACTIVE/LinkUp (ibstat shows State: Down): no traffic can use it",
		"check cable and switch port; for InfiniBand check the subnet manager (sminfo); mlxlink -d <dev> shows the physical state"},
	IOPressureOutlier: {IOPressureOutlier, Warning, "004",
		"this node alone shows high I/O pressure (PSI) / iowait while its peers on the same shared storage are clean: a per-node problem below the VM (e.g. a hypervisor hardware-offload failure on its storage traffic path), not the shared disk",
		"compare nfsstat -m on this node and a healthy peer; if identical, report the node (VM id) and the disk to the infrastructure provider with the PSI evidence"},
	NoNicClusterPolicy: {NoNicClusterPolicy, Info, "002",
		"no NicClusterPolicy found (Network Operator not installed, or its CRD missing): the tolerations and MOFED env checks did not run",
		"install the NVIDIA Network Operator, or ignore if RDMA drivers are managed outside Kubernetes"},
}
