package lifecycle

import (
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/rdmasuite/rdmasuite/internal/latest"
	"github.com/rdmasuite/rdmasuite/internal/nodemark"
	"github.com/rdmasuite/rdmasuite/internal/runner"
	"github.com/rdmasuite/rdmasuite/reports/pushgateway"
	"github.com/rdmasuite/rdmasuite/thresholds"
	"github.com/rdmasuite/rdmasuite/workloads/bw"
)

// Flags are the suite's own flags (after -args). e2e-framework's flags
// (--kubeconfig, --labels, --feature, --assess, --fail-fast, …) work as
// documented there.
type Flags struct {
	// The doctor's (TestPreflight): what every node must advertise, the
	// ports left unused on purpose, the operators' namespaces.
	PreflightRes, UnusedPorts, NetOpNS, GPUOpNS *string
	NetOp                                       *bool

	Image           *string
	RDMARes         *string
	PodTimeout      *time.Duration
	NodeLabels      *string
	CleanupWait     *time.Duration
	Namespace       *string
	Variants        *string
	HostdevRes      *string
	HostdevNet      *string
	HostdevNetdev   *string
	Device          *string
	GPUs            *int
	BWOps           *string
	BWSizes         *string
	BWQPs           *int
	BWDuration      *time.Duration
	BWIters         *int
	LatOps          *string
	MsgRateSizes    *string
	MsgRateQPs      *int
	MsgRateIters    *int
	LatSizes        *string
	LatIters        *int
	Pairing         *string
	Rails           *string
	RailParallel    *bool
	QPTimeout       *int
	Concurrency     *int
	Loopback        *bool
	Confirm         *bool
	NodePods        *bool
	DryRun          *bool
	Thresholds      *string
	ThresholdsRepl  *bool
	ThresholdsOver  *string
	SKU             *string
	MemlockRequired *string
	MemlockMax      *string
	MemlockIPCLock  *bool
	ReportDir       *string
	ResultsCM       *string
	Pushgateway     *string
	PushJob         *string
	PushGrouping    *string
	AllowNotRun     *string
	KeepOnFailure   *bool
	NodeProbe       *bool
	NodeProbePath   *string
	NodeProbeWin    *string
	NodeAnnotations *bool
	NodeMarkValid   *time.Duration
	TaintFailed     *bool
	TaintEffect     *string
	AllowDisruptive *bool
	DisruptNodes    *string
	StallPeer       *string
	StallPVC        *string
	StallPVCNS      *string
	MOFEDNS         *string
	MOFEDSelector   *string
	MOFEDContainer  *string
	DriverReadyFile *string
	DriverTimeout   *time.Duration
	StallSteady     *time.Duration
	StallAfter      *time.Duration
	StallDurability *string
	StallForce      *bool
	NCCLCollectives *string
	NCCLMinBytes    *string
	NCCLMaxBytes    *string
	NCCLIters       *int
	NCCLWarmup      *int
	NCCLWorlds      *string
	NCCLTimeout     *time.Duration
	GPUDirectOps    *string
	GPUDirectMem    *string
}

// Register defines every suite flag on fs. Call it before any other
// package registers flags there (at package initialisation), so that
// --help can list the suite's flags first (internal/suiteflags).
func Register(fs *flag.FlagSet) *Flags {
	f := &Flags{}
	f.Image = fs.String("image", runner.DefaultProbeImage(), "rdmaprobe image the probe pods run (default: the released probe image of this suite's version; build your own with make images)")
	f.RDMARes = fs.String("rdma-resource", "rdma/rdma_shared_device_a", "extended resource(s) of the RDMA shared device plugin, comma-separated")
	f.PodTimeout = fs.Duration("pod-timeout", 2*time.Minute, "how long one probe pod may take from create to finish")
	f.NodeLabels = fs.String("node-selector", "", "label selector for the nodes to test; every selected node must then advertise the resource (default: the nodes that advertise a resource of the run's variants, or are RDMA nodes by their labels, never the control plane)")
	f.CleanupWait = fs.Duration("cleanup-timeout", 90*time.Second, "how long to wait for the run namespace to be deleted (with --namespace: for the run's pods to be gone)")
	// e2e-framework defines --namespace only when nothing else has; the
	// suite's replaces it (the suite always chose the namespace itself).
	f.Namespace = fs.String("namespace", "", "run inside this existing namespace (created by you, with the Pod Security labels the probe pods need) instead of creating rdmasuite-<run>; the suite never creates or deletes it and deletes only the run's own objects there (label rdmasuite.io/run), so the suite's RBAC can be a Role in it plus read-only cluster access")

	f.Variants = fs.String("variants", runner.VariantsAuto, "pod variants: auto (those the cluster can run: the header names a skipped one and why), or shared-dev (RDMA shared device plugin) and/or hostdev (SR-IOV + Multus), which must then run")
	f.HostdevRes = fs.String("hostdev-resource", "nvidia.com/hostdev", "extended resource of the SR-IOV (hostdev) device plugin")
	f.HostdevNet = fs.String("hostdev-network", "default/sriov-rdma", "Multus network (namespace/name of the NetworkAttachmentDefinition) for hostdev pods")
	f.HostdevNetdev = fs.String("hostdev-netdev", "net1", "interface Multus adds in hostdev pods; the probe uses the RDMA device behind it")
	f.Device = fs.String("device", "", "measure only this RDMA device in shared-dev pods (default: every device/port the pod is given, one rail each)")
	f.GPUs = fs.Int("gpus", 0, "nvidia.com/gpu to request per bandwidth pod")
	f.BWOps = fs.String("bw-ops", "write,read", "RDMA operations to measure")
	f.BWSizes = fs.String("bw-sizes", "64K,1M", "message sizes; every one must be measured, the largest is judged against the SKU floor")
	f.BWQPs = fs.Int("bw-qps", 4, "queue pairs per test (several QPs reach line rate on NDR/HDR)")
	f.BWDuration = fs.Duration("bw-duration", 5*time.Second, "measurement time per size (perftest -D)")
	f.BWIters = fs.Int("bw-iters", 0, "iterations per QP per size instead of --bw-duration")
	f.LatOps = fs.String("lat-ops", "write,read,send", "latency feature (suite=latency): ops, measured as ib_write_lat, ib_read_lat and ib_send_lat do")
	f.MsgRateSizes = fs.String("msgrate-sizes", "2", "message-rate feature (suite=msgrate): small write sizes; the smallest is judged against the SKU's writeMsgRateMpps")
	f.MsgRateQPs = fs.Int("msgrate-qps", 4, "message-rate feature: QPs per rail pair (perftest -q)")
	f.MsgRateIters = fs.Int("msgrate-iters", 5000, "message-rate feature: writes per QP (perftest's default)")
	f.LatSizes = fs.String("lat-sizes", "2", "latency feature (suite=latency): message sizes; the largest is judged against the SKU's ceiling")
	f.LatIters = fs.Int("lat-iters", 1000, "latency feature: iterations per pair, rail and op (perftest's default; it drops the 2 largest samples)")
	f.Pairing = fs.String("pairing", "ring", "ring (every node as client and server, 2 rounds) or all (every pair)")
	f.Rails = fs.String("rails", "same", "rail pairing inside a node pair: same (rail i ↔ rail i) or cross (every rail × every rail)")
	f.RailParallel = fs.Bool("rail-parallel", false, "measure a pair's rails at the same time (default: one after another)")
	f.QPTimeout = fs.Int("qp-timeout", bw.DefaultQPTimeout, "local ACK timeout exponent of every probe QP (4.096 µs × 2^N before a resend, perftest's -u; 14 ≈ 67 ms): raise it (18 ≈ 1 s) where busy hosts or software RoCE acknowledge late and resends are refused")
	f.Concurrency = fs.Int("concurrency", 0, "pairs (or memlock / host probe pods) run at the same time; 0: every disjoint pair of a round (every node) at once, so wall time is rounds, not pairs")
	f.Loopback = fs.Bool("loopback", false, "also run a same-node pair on every node")
	f.Confirm = fs.Bool("confirm", true, "before blaming a node, port or link, measure each end of a failed or inconclusive pair once more against a partner that passed everything (one more round, only when a pair failed); a failure that does not repeat is reported as transient (warn)")
	f.NodePods = fs.Bool("node-pods", true, "run the paired features in one probe pod per node and variant over pods/exec (false: a server and a client pod per pair and round, for clusters whose policy refuses exec)")
	f.DryRun = fs.Bool("dry-run", false, "print the run's plan (nodes, pairs, each round's features and first pairs, waves, estimated duration) and the thresholds header, create nothing, exit 0")
	f.Thresholds = fs.String("thresholds", "", "thresholds file laid over the built-in thresholds/skus.yaml: its SKUs replace those of the same name whole, or are added (one new SKU is all it needs)")
	f.ThresholdsRepl = fs.Bool("thresholds-replace", false, "use --thresholds FILE alone, without the built-in SKUs")
	f.ThresholdsOver = fs.String("thresholds-overlay", "", "thresholds file laid over the built-in ones (or --thresholds): each of its SKUs replaces the SKU of the same name whole (no field merge) or is added, and its SKUs are matched to nodes first; e.g. a ConfigMap mounted at /etc/rdmasuite/thresholds/skus.yaml")
	f.SKU = fs.String("sku", "", "force this SKU for every node instead of matching nvidia.com/gpu.product")
	f.MemlockRequired = fs.String("memlock-required", "", "registration size that must succeed (default: the SKU's minMemlockBytes)")
	f.MemlockMax = fs.String("memlock-max", "1G", "largest region the memlock probe tries")
	f.MemlockIPCLock = fs.Bool("memlock-ipc-lock", false, "give the memlock probe IPC_LOCK (then it tests registration, not the runtime's limit)")
	f.ReportDir = fs.String("report-dir", "", "where results-<run>.json and results.json go (default ./rdmasuite-results)")
	f.ResultsCM = fs.String("results-configmap", "", "at the end of every run, create or update this ConfigMap in --namespace with the latest run (summary.txt, summary.md, exit-code, run-id, finished, results.json.gz); needs --namespace")
	f.Pushgateway = fs.String("pushgateway", "", "at the end of every run, PUT its metrics to this Pushgateway (base URL, e.g. http://pushgateway.monitoring:9091), as rdmasuite push does")
	f.PushJob = fs.String("pushgateway-job", "rdmasuite", "the job label of the --pushgateway group")
	f.PushGrouping = fs.String("pushgateway-grouping", "", "more grouping labels of the --pushgateway group, NAME=VALUE, comma-separated (e.g. cluster=prod)")
	f.AllowNotRun = fs.String("allow-not-run", "", "check ids (bandwidth/write) or prefixes (bandwidth/) whose not-run does not fail the run, comma-separated; every other not-run fails it")
	f.KeepOnFailure = fs.Bool("keep-on-failure", false, "keep the run namespace and its probe pods when the run did not pass (delete later with rdmasuite cleanup --run ID; with --namespace the run's objects are kept and its pods labelled rdmasuite.io/kept=true: rdmasuite cleanup --namespace NS --run ID)")
	f.PreflightRes = fs.String("preflight-resources", "", "extended resources every selected node must advertise (allocatable > 0); empty: derived per node from the NicClusterPolicy's device-plugin config on RDMA nodes and nvidia.com/gpu on nodes labelled nvidia.com/gpu.present=true")
	f.UnusedPorts = fs.String("unused-ports", "", "RDMA ports left unused or disabled on purpose, not reported down: mlx5_3/1, mlx5_3 (every port) or node-7:mlx5_3/1")
	f.NetOpNS = fs.String("network-operator-namespace", "nvidia-network-operator", "namespace of the NVIDIA Network Operator (MOFED driver pods)")
	f.NetOp = fs.Bool("network-operator", true, "the cluster runs the NVIDIA Network Operator; false when RDMA drivers are managed outside Kubernetes (host MOFED / inbox): a missing NicClusterPolicy is then expected, not a check that could not run")
	f.GPUOpNS = fs.String("gpu-operator-namespaces", "gpu-operator,nvidia-gpu-operator", "namespaces of the NVIDIA GPU Operator")
	f.NodeProbe = fs.Bool("node-probe", true, "run the host probe (a short-lived privileged pod per node, host / mounted read-only); without it doctor/node checks are not-run")
	f.NodeProbePath = fs.String("node-probe-host-path", "/", "host path mounted as the probe's host root; {node} is replaced by the node name (tests point it at fixture roots)")
	f.NodeProbeWin = fs.String("node-probe-window", "2s", "PSI / iowait sampling window of the host probe, also the window every RDMA port's counters are read around at rest (0: no at-rest read, the node check is then not-run)")
	f.NodeAnnotations = fs.Bool("node-annotations", false, "at the end of every run, annotate every node of the run with its result: rdmasuite.io/last-result (pass, fail, not-run), last-run, last-checked, valid-until, last-failures; needs patch on nodes (the suites/deploy/components/node-marks component), which the base RBAC does not grant")
	f.NodeMarkValid = fs.Duration("node-mark-valid-for", nodemark.DefaultValidFor, "with --node-annotations: rdmasuite.io/valid-until is the run's end plus this (36h: a nightly run missed once leaves the mark stale)")
	f.TaintFailed = fs.Bool("taint-failed-nodes", false, "at the end of every run, taint rdmasuite.io/failed=<run> the nodes whose failure is their own (a bad-node or bad-port finding, a failed memlock, doctor or bandwidth/ports check; never a bad link or an inconclusive pair) and remove that taint from nodes that pass; other taints are never touched; needs get and patch on nodes")
	f.TaintEffect = fs.String("taint-effect", string(corev1.TaintEffectNoSchedule), "effect of --taint-failed-nodes' taint: NoSchedule or PreferNoSchedule")

	// The disruptive feature (suite=disruptive): never part of a run without --allow-disruptive.
	f.AllowDisruptive = fs.Bool("allow-disruptive", false, "allow the disruptive feature to restart the MOFED driver pod on --disrupt-nodes (it stalls their NFS-over-RDMA I/O)")
	f.DisruptNodes = fs.String("disrupt-nodes", "", "nodes whose MOFED driver the disruptive feature restarts, one at a time in this order, comma-separated (required with --allow-disruptive)")
	f.StallPeer = fs.String("stall-peer", "", "node of the peer writer and the cross-node verification (default: the first other node of --disrupt-nodes, else of the selected nodes)")
	f.StallPVC = fs.String("stall-pvc", "rdmasuite-nfs", "PVC bound to the NFS(-over-RDMA) volume to write to; its PV is copied into a run-scoped PV/PVC")
	f.StallPVCNS = fs.String("stall-pvc-namespace", "default", "namespace of --stall-pvc")
	f.MOFEDNS = fs.String("mofed-namespace", "nvidia-network-operator", "namespace of the MOFED driver pods")
	f.MOFEDSelector = fs.String("mofed-selector", "nvidia.com/ofed-driver", "label selector of the MOFED driver pods")
	f.MOFEDContainer = fs.String("mofed-container", "mofed-container", "the driver container of the MOFED pods (its log and state go into the evidence)")
	f.DriverReadyFile = fs.String("driver-ready-file", "/run/mellanox/drivers/.driver-ready", "host file the driver container writes when ready; the target writer watches it")
	f.DriverTimeout = fs.Duration("driver-timeout", 10*time.Minute, "how long the new MOFED driver pod may take to become Ready")
	f.StallSteady = fs.Duration("stall-steady", 20*time.Second, "steady writing before the MOFED pod is deleted")
	f.StallAfter = fs.Duration("stall-after", 20*time.Second, "writing after I/O resumed on every writer, before they are stopped")
	f.StallDurability = fs.String("stall-durability", "fsync", "writer durability: fsync, fsync-every=N or direct")
	f.StallForce = fs.Bool("stall-force", false, "run the disruptive feature on a volume that is not NFS")

	// The GPU features (suite=gpu): nccl and gpudirect.
	f.NCCLCollectives = fs.String("nccl-collectives", runner.DefaultNCCLCollectives, "NCCL collectives every world sweeps (nccl-tests semantics)")
	f.NCCLMinBytes = fs.String("nccl-min-bytes", "8", "smallest size of the NCCL sweep (nccl-tests -b)")
	f.NCCLMaxBytes = fs.String("nccl-max-bytes", "128M", "largest size of the NCCL sweep (nccl-tests -e); all_reduce is judged there against the SKU's ncclAllReduceBusBw")
	f.NCCLIters = fs.Int("nccl-iters", runner.DefaultNCCLIters, "timed iterations per size and variant (nccl-tests -n)")
	f.NCCLWarmup = fs.Int("nccl-warmup", runner.DefaultNCCLWarmup, "warm-up iterations per size (nccl-tests -w)")
	f.NCCLWorlds = fs.String("nccl-worlds", runner.DefaultNCCLWorlds, "NCCL worlds: pairs (each pair of --pairing), all (every GPU node, when more than 2), or both")
	f.NCCLTimeout = fs.Duration("nccl-timeout", runner.DefaultNCCLTimeout, "how long the ranks may take to join rank 0, and to finish the sweep (each)")
	f.GPUDirectOps = fs.String("gpudirect-ops", runner.DefaultGPUDirectOps, "RDMA operations the gpudirect feature measures from GPU memory (write, read; both judged against gpuDirectWrite)")
	f.GPUDirectMem = fs.String("gpudirect-mem", runner.DefaultGPUDirectMem, "GPU memory for gpudirect pairs: cuda:auto (the GPU nearest each rail), cuda (GPU 0) or cuda:N")

	return f
}

// checkValues is RunnerConfig's first step: the QP timeout, the size
// lists and the NCCL figures, each refused with its flag named. It returns
// the parsed size lists.
func (f *Flags) checkValues() (bwSizes, msgRateSizes, latSizes []int, err error) {
	if *f.QPTimeout == 0 {
		return nil, nil, nil, fmt.Errorf("--qp-timeout 0: the IBTA's wait forever would hang a probe on one lost packet; want 1..31 (default %d)", bw.DefaultQPTimeout)
	}
	if bwSizes, err = runner.ParseSizes(*f.BWSizes); err != nil {
		return nil, nil, nil, fmt.Errorf("--bw-sizes: %w", err)
	}
	if msgRateSizes, err = runner.ParseSizes(*f.MsgRateSizes); err != nil {
		return nil, nil, nil, fmt.Errorf("--msgrate-sizes: %w", err)
	}
	if latSizes, err = runner.ParseSizes(*f.LatSizes); err != nil {
		return nil, nil, nil, fmt.Errorf("--lat-sizes: %w", err)
	}
	if *f.NCCLIters < 1 {
		return nil, nil, nil, fmt.Errorf("--nccl-iters %d: give at least 1 timed iteration", *f.NCCLIters)
	}
	if _, err := runner.ParseByteSize(*f.NCCLMinBytes); err != nil {
		return nil, nil, nil, fmt.Errorf("--nccl-min-bytes: %w", err)
	}
	if _, err := runner.ParseByteSize(*f.NCCLMaxBytes); err != nil {
		return nil, nil, nil, fmt.Errorf("--nccl-max-bytes: %w", err)
	}
	return bwSizes, msgRateSizes, latSizes, nil
}

// RunnerConfig turns the flags into the runner's settings, naming a bad
// one: checkValues, the thresholds (files read here), the disruptive gate
// and the SKU.
func (f *Flags) RunnerConfig(out io.Writer, gate func() error) (runner.Config, error) {
	sizes, msgRateSizes, latSizes, err := f.checkValues()
	if err != nil {
		return runner.Config{}, err
	}
	set, err := thresholds.LoadSuite(*f.Thresholds, *f.ThresholdsRepl, *f.ThresholdsOver)
	if err != nil {
		return runner.Config{}, err
	}
	if *f.ThresholdsOver != "" || *f.Thresholds != "" && !*f.ThresholdsRepl {
		replaced, added := set.OverlayChanges()
		fmt.Fprintf(out, "rdmasuite: thresholds %s: the overlay replaces %s; adds %s\n", set.File, orNone(replaced), orNone(added))
		for _, t := range set.TakeOvers() {
			fmt.Fprintf(out, "rdmasuite: thresholds: %s: it is matched first, so nodes whose %s matches get its thresholds\n", t, thresholds.GPUProductLabel)
		}
	}
	c := runner.Config{Image: *f.Image, PodTimeout: *f.PodTimeout, NodeSelector: *f.NodeLabels, Concurrency: *f.Concurrency,
		RDMAResources: runner.SplitList(*f.RDMARes), HostdevRes: *f.HostdevRes,
		HostdevNet: *f.HostdevNet, HostdevNetdev: *f.HostdevNetdev, Device: *f.Device, GPUs: *f.GPUs,
		BWOps: runner.SplitList(*f.BWOps), BWSizes: sizes, BWQPs: *f.BWQPs, BWDuration: *f.BWDuration, BWIters: *f.BWIters,
		LatOps: runner.SplitList(*f.LatOps), LatSizes: latSizes, LatIters: *f.LatIters,
		MsgRateSizes: msgRateSizes, MsgRateQPs: *f.MsgRateQPs, MsgRateIters: *f.MsgRateIters,
		Pairing: *f.Pairing, Loopback: *f.Loopback, Confirm: *f.Confirm, NoNodePods: !*f.NodePods, RailMode: *f.Rails, RailParallel: *f.RailParallel, QPTimeout: *f.QPTimeout,
		Thresholds: set, SKU: *f.SKU, MemlockRequired: *f.MemlockRequired, MemlockMax: *f.MemlockMax, MemlockIPCLock: *f.MemlockIPCLock,
		NodeProbe: *f.NodeProbe, NodeProbeHostPath: *f.NodeProbePath, NodeProbeWindow: *f.NodeProbeWin,
		AllowNotRun: runner.SplitList(*f.AllowNotRun), KeepOnFailure: *f.KeepOnFailure, Namespace: *f.Namespace}
	c.Variants, c.VariantsAuto = runner.ParseVariants(*f.Variants)
	c.AllowDisruptive, c.DisruptNodes, c.StallPeer = *f.AllowDisruptive, runner.SplitList(*f.DisruptNodes), *f.StallPeer
	c.StallPVC, c.StallPVCNamespace, c.StallDurability, c.StallForce = *f.StallPVC, *f.StallPVCNS, *f.StallDurability, *f.StallForce
	c.MOFEDNamespace, c.MOFEDSelector, c.MOFEDContainer = *f.MOFEDNS, *f.MOFEDSelector, *f.MOFEDContainer
	c.DriverReadyFile, c.DriverTimeout, c.StallSteady, c.StallAfter = *f.DriverReadyFile, *f.DriverTimeout, *f.StallSteady, *f.StallAfter
	c.NCCLCollectives, c.NCCLIters, c.NCCLWarmup = runner.SplitList(*f.NCCLCollectives), *f.NCCLIters, *f.NCCLWarmup
	c.NCCLWorlds, c.NCCLTimeout = runner.SplitList(*f.NCCLWorlds), *f.NCCLTimeout
	c.GPUDirectOps, c.GPUDirectMem = runner.SplitList(*f.GPUDirectOps), *f.GPUDirectMem
	c.NCCLMinBytes, _ = runner.ParseByteSize(*f.NCCLMinBytes) // checkValues proved both
	c.NCCLMaxBytes, _ = runner.ParseByteSize(*f.NCCLMaxBytes)
	if err := gate(); err != nil {
		return c, err
	}
	if *f.SKU != "" {
		if _, err := set.Lookup(*f.SKU); err != nil {
			return c, fmt.Errorf("--sku: %w", err)
		}
	}
	return c, c.Validate()
}

// Publishing is what the run's end does beyond its results: push the
// metrics (--pushgateway) and mark the nodes (--node-annotations,
// --taint-failed-nodes).
type Publishing struct {
	// PushGroup is where --pushgateway sends the run's metrics (nil: nowhere).
	PushGroup *pushgateway.Group
	// NodeMarks is what the run's end writes on the nodes (nothing by
	// default).
	NodeMarks nodemark.Options
}

// Publishing checks --results-configmap, --pushgateway and the node marks
// before the run, so that a bad flag fails in seconds, not at the end of
// the run.
func (f *Flags) Publishing() (Publishing, error) {
	var p Publishing
	nodeMarks := nodemark.Options{Annotate: *f.NodeAnnotations, ValidFor: *f.NodeMarkValid, Taint: *f.TaintFailed,
		Effect: corev1.TaintEffect(*f.TaintEffect)}
	if !*f.NodeAnnotations && *f.NodeMarkValid != nodemark.DefaultValidFor {
		return p, fmt.Errorf("--node-mark-valid-for needs --node-annotations")
	}
	if !*f.TaintFailed && *f.TaintEffect != string(corev1.TaintEffectNoSchedule) {
		return p, fmt.Errorf("--taint-effect needs --taint-failed-nodes")
	}
	if _, err := nodemark.ParseEffect(*f.TaintEffect); err != nil {
		return p, err
	}
	p.NodeMarks = nodeMarks
	if err := nodeMarks.Validate(); err != nil {
		return p, err
	}
	if *f.ResultsCM != "" {
		if *f.Namespace == "" {
			return p, latest.ErrNoNamespace
		}
		if err := latest.ValidName(*f.ResultsCM); err != nil {
			return p, err
		}
	}
	if *f.Pushgateway == "" {
		if *f.PushGrouping != "" || *f.PushJob != "rdmasuite" {
			return p, fmt.Errorf("--pushgateway-job and --pushgateway-grouping need --pushgateway URL")
		}
		return p, nil
	}
	g, err := pushgateway.New(pushgateway.Config{Gateway: *f.Pushgateway, Job: *f.PushJob, Grouping: runner.SplitList(*f.PushGrouping),
		Timeout: publishTimeout, Flags: pushgateway.Flags{Gateway: "--pushgateway", Job: "--pushgateway-job", Grouping: "--pushgateway-grouping"}})
	p.PushGroup = g
	return p, err
}

func orNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}
