// Package suites holds the rdmasuite conformance features. Run them against a
// cluster with
//
//	go test ./suites -args --kubeconfig=PATH [suite flags]
//
// The features are thin declarations; what they do lives in internal/runner.
// TestMain connects once, creates one namespace for the run and deletes it on
// every exit path: normal end, failed features, --fail-fast (which skips
// feature teardown), SIGINT/SIGTERM, and an internal deadline set below
// `go test -timeout` (whose panic would skip all cleanup). With --namespace
// NS the run lives in that existing namespace instead, and the same exit
// paths delete exactly the run's objects there (by the run label), never NS.
// On every one of those paths the results are written first, and, when
// asked, pushed to a Pushgateway (--pushgateway) and kept as the latest run
// in a ConfigMap of NS (--results-configmap); neither ever hides the run's
// verdict.
package suites

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/e2e-framework/klient"
	"sigs.k8s.io/e2e-framework/pkg/env"
	"sigs.k8s.io/e2e-framework/pkg/envconf"

	"github.com/rdmasuite/rdmasuite/internal/cluster"
	"github.com/rdmasuite/rdmasuite/internal/latest"
	"github.com/rdmasuite/rdmasuite/internal/nodemark"
	"github.com/rdmasuite/rdmasuite/internal/progress"
	"github.com/rdmasuite/rdmasuite/internal/runner"
	"github.com/rdmasuite/rdmasuite/internal/suiteflags"
	"github.com/rdmasuite/rdmasuite/internal/termwidth"
	"github.com/rdmasuite/rdmasuite/reports"
	"github.com/rdmasuite/rdmasuite/reports/pushgateway"
	"github.com/rdmasuite/rdmasuite/thresholds"
)

// Suite-wide flags (after -args). e2e-framework's own flags (--kubeconfig,
// --labels, --feature, --assess, --fail-fast, …) work as documented there.
var (
	flagImage       = flag.String("image", runner.DefaultProbeImage(), "rdmaprobe image the probe pods run (default: the released probe image of this suite's version; build your own with make images)")
	flagRDMARes     = flag.String("rdma-resource", "rdma/rdma_shared_device_a", "extended resource(s) of the RDMA shared device plugin, comma-separated")
	flagPodTimeout  = flag.Duration("pod-timeout", 2*time.Minute, "how long one probe pod may take from create to finish")
	flagNodeLabels  = flag.String("node-selector", "", "label selector for the nodes to test; every selected node must then advertise the resource (default: the nodes that advertise a resource of the run's variants, or are RDMA nodes by their labels, never the control plane)")
	flagCleanupWait = flag.Duration("cleanup-timeout", 90*time.Second, "how long to wait for the run namespace to be deleted (with --namespace: for the run's pods to be gone)")
	// e2e-framework defines --namespace only when nothing else has; the
	// suite's replaces it (the suite always chose the namespace itself).
	flagNamespace = flag.String("namespace", "", "run inside this existing namespace (created by you, with the Pod Security labels the probe pods need) instead of creating rdmasuite-<run>; the suite never creates or deletes it and deletes only the run's own objects there (label rdmasuite.io/run), so the suite's RBAC can be a Role in it plus read-only cluster access")

	flagVariants        = flag.String("variants", runner.VariantsAuto, "pod variants: auto (those the cluster can run: the header names a skipped one and why), or shared-dev (RDMA shared device plugin) and/or hostdev (SR-IOV + Multus), which must then run")
	flagHostdevRes      = flag.String("hostdev-resource", "nvidia.com/hostdev", "extended resource of the SR-IOV (hostdev) device plugin")
	flagHostdevNet      = flag.String("hostdev-network", "default/sriov-rdma", "Multus network (namespace/name of the NetworkAttachmentDefinition) for hostdev pods")
	flagHostdevNetdev   = flag.String("hostdev-netdev", "net1", "interface Multus adds in hostdev pods; the probe uses the RDMA device behind it")
	flagDevice          = flag.String("device", "", "measure only this RDMA device in shared-dev pods (default: every device/port the pod is given, one rail each)")
	flagGPUs            = flag.Int("gpus", 0, "nvidia.com/gpu to request per bandwidth pod")
	flagBWOps           = flag.String("bw-ops", "write,read", "RDMA operations to measure")
	flagBWSizes         = flag.String("bw-sizes", "64K,1M", "message sizes; every one must be measured, the largest is judged against the SKU floor")
	flagBWQPs           = flag.Int("bw-qps", 4, "queue pairs per test (several QPs reach line rate on NDR/HDR)")
	flagBWDuration      = flag.Duration("bw-duration", 5*time.Second, "measurement time per size (perftest -D)")
	flagBWIters         = flag.Int("bw-iters", 0, "iterations per QP per size instead of --bw-duration")
	flagLatOps          = flag.String("lat-ops", "write,read,send", "latency feature (suite=latency): ops, measured as ib_write_lat, ib_read_lat and ib_send_lat do")
	flagMsgRateSizes    = flag.String("msgrate-sizes", "2", "message-rate feature (suite=msgrate): small write sizes; the smallest is judged against the SKU's writeMsgRateMpps")
	flagMsgRateQPs      = flag.Int("msgrate-qps", 4, "message-rate feature: QPs per rail pair (perftest -q)")
	flagMsgRateIters    = flag.Int("msgrate-iters", 5000, "message-rate feature: writes per QP (perftest's default)")
	flagLatSizes        = flag.String("lat-sizes", "2", "latency feature (suite=latency): message sizes; the largest is judged against the SKU's ceiling")
	flagLatIters        = flag.Int("lat-iters", 1000, "latency feature: iterations per pair, rail and op (perftest's default; it drops the 2 largest samples)")
	flagPairing         = flag.String("pairing", "ring", "ring (every node as client and server, 2 rounds) or all (every pair)")
	flagRails           = flag.String("rails", "same", "rail pairing inside a node pair: same (rail i ↔ rail i) or cross (every rail × every rail)")
	flagRailParallel    = flag.Bool("rail-parallel", false, "measure a pair's rails at the same time (default: one after another)")
	flagConcurrency     = flag.Int("concurrency", 0, "pairs (or memlock / host probe pods) run at the same time; 0: every disjoint pair of a round (every node) at once, so wall time is rounds, not pairs")
	flagLoopback        = flag.Bool("loopback", false, "also run a same-node pair on every node")
	flagDryRun          = flag.Bool("dry-run", false, "print the plan (nodes, pairs, rounds, waves, estimated duration) and the thresholds header, create nothing, exit 0")
	flagThresholds      = flag.String("thresholds", "", "thresholds file laid over the built-in thresholds/skus.yaml: its SKUs replace those of the same name whole, or are added (one new SKU is all it needs)")
	flagThresholdsRepl  = flag.Bool("thresholds-replace", false, "use --thresholds FILE alone, without the built-in SKUs")
	flagThresholdsOver  = flag.String("thresholds-overlay", "", "thresholds file laid over the built-in ones (or --thresholds): each of its SKUs replaces the SKU of the same name whole (no field merge) or is added, and its SKUs are matched to nodes first; e.g. a ConfigMap mounted at /etc/rdmasuite/thresholds/skus.yaml")
	flagSKU             = flag.String("sku", "", "force this SKU for every node instead of matching nvidia.com/gpu.product")
	flagMemlockRequired = flag.String("memlock-required", "", "registration size that must succeed (default: the SKU's minMemlockBytes)")
	flagMemlockMax      = flag.String("memlock-max", "1G", "largest region the memlock probe tries")
	flagMemlockIPCLock  = flag.Bool("memlock-ipc-lock", false, "give the memlock probe IPC_LOCK (then it tests registration, not the runtime's limit)")
	flagReportDir       = flag.String("report-dir", "", "where results-<run>.json and results.json go (default ./rdmasuite-results)")
	flagResultsCM       = flag.String("results-configmap", "", "at the end of every run, create or update this ConfigMap in --namespace with the latest run (summary.txt, summary.md, exit-code, run-id, finished, results.json.gz); needs --namespace")
	flagPushgateway     = flag.String("pushgateway", "", "at the end of every run, PUT its metrics to this Pushgateway (base URL, e.g. http://pushgateway.monitoring:9091), as rdmasuite push does")
	flagPushJob         = flag.String("pushgateway-job", "rdmasuite", "the job label of the --pushgateway group")
	flagPushGrouping    = flag.String("pushgateway-grouping", "", "more grouping labels of the --pushgateway group, NAME=VALUE, comma-separated (e.g. cluster=prod)")
	flagAllowNotRun     = flag.String("allow-not-run", "", "check ids (bandwidth/write) or prefixes (bandwidth/) whose not-run does not fail the run, comma-separated; every other not-run fails it")
	flagKeepOnFailure   = flag.Bool("keep-on-failure", false, "keep the run namespace and its probe pods when the run did not pass (delete later with rdmasuite cleanup --run ID; with --namespace the run's objects are kept and its pods labelled rdmasuite.io/kept=true: rdmasuite cleanup --namespace NS --run ID)")
	flagNodeProbe       = flag.Bool("node-probe", true, "run the host probe (a short-lived privileged pod per node, host / mounted read-only); without it doctor/node checks are not-run")
	flagNodeProbePath   = flag.String("node-probe-host-path", "/", "host path mounted as the probe's host root; {node} is replaced by the node name (bed tests point it at fixture roots)")
	flagNodeProbeWin    = flag.String("node-probe-window", "2s", "PSI / iowait sampling window of the host probe")
	flagNodeAnnotations = flag.Bool("node-annotations", false, "at the end of every run, annotate every node of the run with its result: rdmasuite.io/last-result (pass, fail, not-run), last-run, last-checked, valid-until, last-failures; needs patch on nodes (the suites/deploy/components/node-marks component), which the base RBAC does not grant")
	flagNodeMarkValid   = flag.Duration("node-mark-valid-for", nodemark.DefaultValidFor, "with --node-annotations: rdmasuite.io/valid-until is the run's end plus this (36h: a nightly run missed once leaves the mark stale)")
	flagTaintFailed     = flag.Bool("taint-failed-nodes", false, "at the end of every run, taint rdmasuite.io/failed=<run> the nodes whose failure is their own (a bad-node or bad-port finding, a failed memlock, doctor or bandwidth/ports check; never a bad link or an inconclusive pair) and remove that taint from nodes that pass; other taints are never touched; needs get and patch on nodes")
	flagTaintEffect     = flag.String("taint-effect", string(corev1.TaintEffectNoSchedule), "effect of --taint-failed-nodes' taint: NoSchedule or PreferNoSchedule")

	// The disruptive feature (suite=disruptive): never part of a run without --allow-disruptive.
	flagAllowDisruptive = flag.Bool("allow-disruptive", false, "allow the disruptive feature to restart the MOFED driver pod on --disrupt-nodes (it stalls their NFS-over-RDMA I/O)")
	flagDisruptNodes    = flag.String("disrupt-nodes", "", "nodes whose MOFED driver the disruptive feature restarts, one at a time in this order, comma-separated (required with --allow-disruptive)")
	flagStallPeer       = flag.String("stall-peer", "", "node of the peer writer and the cross-node verification (default: the first other node of --disrupt-nodes, else of the selected nodes)")
	flagStallPVC        = flag.String("stall-pvc", "rdmasuite-nfs", "PVC bound to the NFS(-over-RDMA) volume to write to; its PV is copied into a run-scoped PV/PVC")
	flagStallPVCNS      = flag.String("stall-pvc-namespace", "default", "namespace of --stall-pvc")
	flagMOFEDNS         = flag.String("mofed-namespace", "nvidia-network-operator", "namespace of the MOFED driver pods")
	flagMOFEDSelector   = flag.String("mofed-selector", "nvidia.com/ofed-driver", "label selector of the MOFED driver pods")
	flagMOFEDContainer  = flag.String("mofed-container", "mofed-container", "the driver container of the MOFED pods (its log and state go into the evidence)")
	flagDriverReadyFile = flag.String("driver-ready-file", "/run/mellanox/drivers/.driver-ready", "host file the driver container writes when ready; the target writer watches it")
	flagDriverTimeout   = flag.Duration("driver-timeout", 10*time.Minute, "how long the new MOFED driver pod may take to become Ready")
	flagStallSteady     = flag.Duration("stall-steady", 20*time.Second, "steady writing before the MOFED pod is deleted")
	flagStallAfter      = flag.Duration("stall-after", 20*time.Second, "writing after I/O resumed on every writer, before they are stopped")
	flagStallDurability = flag.String("stall-durability", "fsync", "writer durability: fsync, fsync-every=N or direct")
	flagStallForce      = flag.Bool("stall-force", false, "run the disruptive feature on a volume that is not NFS")

	// The GPU features (suite=gpu): nccl and gpudirect.
	flagNCCLCollectives = flag.String("nccl-collectives", runner.DefaultNCCLCollectives, "NCCL collectives every world sweeps (nccl-tests semantics)")
	flagNCCLMinBytes    = flag.String("nccl-min-bytes", "8", "smallest size of the NCCL sweep (nccl-tests -b)")
	flagNCCLMaxBytes    = flag.String("nccl-max-bytes", "128M", "largest size of the NCCL sweep (nccl-tests -e); all_reduce is judged there against the SKU's ncclAllReduceBusBw")
	flagNCCLIters       = flag.Int("nccl-iters", runner.DefaultNCCLIters, "timed iterations per size and variant (nccl-tests -n)")
	flagNCCLWarmup      = flag.Int("nccl-warmup", runner.DefaultNCCLWarmup, "warm-up iterations per size (nccl-tests -w)")
	flagNCCLWorlds      = flag.String("nccl-worlds", runner.DefaultNCCLWorlds, "NCCL worlds: pairs (each pair of --pairing), all (every GPU node, when more than 2), or both")
	flagNCCLTimeout     = flag.Duration("nccl-timeout", runner.DefaultNCCLTimeout, "how long the ranks may take to join rank 0, and to finish the sweep (each)")
	flagGPUDirectOps    = flag.String("gpudirect-ops", runner.DefaultGPUDirectOps, "RDMA operations the gpudirect feature measures from GPU memory (write, read; both judged against gpuDirectWrite)")
	flagGPUDirectMem    = flag.String("gpudirect-mem", runner.DefaultGPUDirectMem, "GPU memory for gpudirect pairs: cuda:auto (the GPU nearest each rail), cuda (GPU 0) or cuda:N")
)

var (
	testenv env.Environment
	// kube is the one clientset of the run; suites never call cfg.Client()
	// (it panics without a kubeconfig).
	kube kubernetes.Interface
	run  *runner.Runner
	// pushGroup is where --pushgateway sends the run's metrics (nil: nowhere).
	pushGroup *pushgateway.Group
	// nodeMarks is what the run's end writes on the nodes
	// (--node-annotations, --taint-failed-nodes; nothing by default).
	nodeMarks nodemark.Options
)

// publishTimeout bounds the push and the ConfigMap write at the run's end
// (each), so that they leave the cleanup its time after a SIGTERM.
const publishTimeout = 20 * time.Second

// config turns the flags into the runner's settings, naming a bad one.
func config() (runner.Config, error) {
	sizes, err := runner.ParseSizes(*flagBWSizes)
	if err != nil {
		return runner.Config{}, fmt.Errorf("--bw-sizes: %w", err)
	}
	msgRateSizes, err := runner.ParseSizes(*flagMsgRateSizes)
	if err != nil {
		return runner.Config{}, fmt.Errorf("--msgrate-sizes: %w", err)
	}
	latSizes, err := runner.ParseSizes(*flagLatSizes)
	if err != nil {
		return runner.Config{}, fmt.Errorf("--lat-sizes: %w", err)
	}
	set, err := thresholds.LoadSuite(*flagThresholds, *flagThresholdsRepl, *flagThresholdsOver)
	if err != nil {
		return runner.Config{}, err
	}
	if *flagThresholdsOver != "" || *flagThresholds != "" && !*flagThresholdsRepl {
		replaced, added := set.OverlayChanges()
		fmt.Printf("rdmasuite: thresholds %s: the overlay replaces %s; adds %s\n", set.File, orNone(replaced), orNone(added))
		for _, t := range set.TakeOvers() {
			fmt.Printf("rdmasuite: thresholds: %s: it is matched first, so nodes whose %s matches get its thresholds\n", t, thresholds.GPUProductLabel)
		}
	}
	c := runner.Config{Image: *flagImage, PodTimeout: *flagPodTimeout, NodeSelector: *flagNodeLabels, Concurrency: *flagConcurrency,
		RDMAResources: runner.SplitList(*flagRDMARes), HostdevRes: *flagHostdevRes,
		HostdevNet: *flagHostdevNet, HostdevNetdev: *flagHostdevNetdev, Device: *flagDevice, GPUs: *flagGPUs,
		BWOps: runner.SplitList(*flagBWOps), BWSizes: sizes, BWQPs: *flagBWQPs, BWDuration: *flagBWDuration, BWIters: *flagBWIters,
		LatOps: runner.SplitList(*flagLatOps), LatSizes: latSizes, LatIters: *flagLatIters,
		MsgRateSizes: msgRateSizes, MsgRateQPs: *flagMsgRateQPs, MsgRateIters: *flagMsgRateIters,
		Pairing: *flagPairing, Loopback: *flagLoopback, RailMode: *flagRails, RailParallel: *flagRailParallel,
		Thresholds: set, SKU: *flagSKU, MemlockRequired: *flagMemlockRequired, MemlockMax: *flagMemlockMax, MemlockIPCLock: *flagMemlockIPCLock,
		NodeProbe: *flagNodeProbe, NodeProbeHostPath: *flagNodeProbePath, NodeProbeWindow: *flagNodeProbeWin,
		AllowNotRun: runner.SplitList(*flagAllowNotRun), KeepOnFailure: *flagKeepOnFailure, Namespace: *flagNamespace}
	c.Variants, c.VariantsAuto = runner.ParseVariants(*flagVariants)
	c.AllowDisruptive, c.DisruptNodes, c.StallPeer = *flagAllowDisruptive, runner.SplitList(*flagDisruptNodes), *flagStallPeer
	c.StallPVC, c.StallPVCNamespace, c.StallDurability, c.StallForce = *flagStallPVC, *flagStallPVCNS, *flagStallDurability, *flagStallForce
	c.MOFEDNamespace, c.MOFEDSelector, c.MOFEDContainer = *flagMOFEDNS, *flagMOFEDSelector, *flagMOFEDContainer
	c.DriverReadyFile, c.DriverTimeout, c.StallSteady, c.StallAfter = *flagDriverReadyFile, *flagDriverTimeout, *flagStallSteady, *flagStallAfter
	c.NCCLCollectives, c.NCCLIters, c.NCCLWarmup = runner.SplitList(*flagNCCLCollectives), *flagNCCLIters, *flagNCCLWarmup
	c.NCCLWorlds, c.NCCLTimeout = runner.SplitList(*flagNCCLWorlds), *flagNCCLTimeout
	c.GPUDirectOps, c.GPUDirectMem = runner.SplitList(*flagGPUDirectOps), *flagGPUDirectMem
	if *flagNCCLIters < 1 {
		return c, fmt.Errorf("--nccl-iters %d: give at least 1 timed iteration", *flagNCCLIters)
	}
	if c.NCCLMinBytes, err = runner.ParseByteSize(*flagNCCLMinBytes); err != nil {
		return c, fmt.Errorf("--nccl-min-bytes: %w", err)
	}
	if c.NCCLMaxBytes, err = runner.ParseByteSize(*flagNCCLMaxBytes); err != nil {
		return c, fmt.Errorf("--nccl-max-bytes: %w", err)
	}
	if err := disruptiveGate(); err != nil {
		return c, err
	}
	if *flagSKU != "" {
		if _, err := set.Lookup(*flagSKU); err != nil {
			return c, fmt.Errorf("--sku: %w", err)
		}
	}
	return c, c.Validate()
}

// publishConfig checks --results-configmap, --pushgateway and the node
// marks before the run, so that a bad flag fails in seconds, not at the
// end of the run.
func publishConfig() error {
	nodeMarks = nodemark.Options{Annotate: *flagNodeAnnotations, ValidFor: *flagNodeMarkValid, Taint: *flagTaintFailed,
		Effect: corev1.TaintEffect(*flagTaintEffect)}
	if !*flagNodeAnnotations && *flagNodeMarkValid != nodemark.DefaultValidFor {
		return fmt.Errorf("--node-mark-valid-for needs --node-annotations")
	}
	if !*flagTaintFailed && *flagTaintEffect != string(corev1.TaintEffectNoSchedule) {
		return fmt.Errorf("--taint-effect needs --taint-failed-nodes")
	}
	if _, err := nodemark.ParseEffect(*flagTaintEffect); err != nil {
		return err
	}
	if err := nodeMarks.Validate(); err != nil {
		return err
	}
	if *flagResultsCM != "" {
		if *flagNamespace == "" {
			return latest.ErrNoNamespace
		}
		if err := latest.ValidName(*flagResultsCM); err != nil {
			return err
		}
	}
	if *flagPushgateway == "" {
		if *flagPushGrouping != "" || *flagPushJob != "rdmasuite" {
			return fmt.Errorf("--pushgateway-job and --pushgateway-grouping need --pushgateway URL")
		}
		return nil
	}
	g, err := pushgateway.New(pushgateway.Config{Gateway: *flagPushgateway, Job: *flagPushJob, Grouping: runner.SplitList(*flagPushGrouping),
		Timeout: publishTimeout, Flags: pushgateway.Flags{Gateway: "--pushgateway", Job: "--pushgateway-job", Grouping: "--pushgateway-grouping"}})
	pushGroup = g
	return err
}

func orNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// nsMayExist: the run asked the API for its namespace and was not refused
// (set just before the request, so an interrupt during it still deletes).
var nsMayExist bool

func fatal(err error) {
	fmt.Fprintf(os.Stderr, "rdmasuite: %v\n", err)
	os.Exit(reports.ExitBroken)
}

// progressOut is where the suite reports as it runs. go test shows a
// passing package's output only with -v; without it the progress, the
// final table and the results path also go to the controlling terminal,
// when there is one, so a long run is never silent and a passing one
// still says where its results are. CI (no terminal) reads stdout.
var progressOut io.Writer = os.Stdout

func setupProgress() {
	if v := flag.Lookup("test.v"); v != nil && v.Value.String() != "false" && v.Value.String() != "" {
		return // -v streams stdout already
	}
	if tty, err := os.OpenFile("/dev/tty", os.O_WRONLY, 0); err == nil {
		progressOut = tty
	}
}

// plog is the run's progress log (internal/progress), once the run id
// is known.
var plog *progress.Log

// say prints a run-level line on stdout and in the progress log, and
// without -v on the terminal.
func say(format string, a ...any) {
	fmt.Printf(format, a...)
	switch {
	case plog != nil:
		plog.Line(fmt.Sprintf(format, a...)) // the file, and the terminal when there is one
	case progressOut != io.Writer(os.Stdout):
		fmt.Fprintf(progressOut, format, a...)
	}
}

// suiteFlags are the suite's own flags: at init time no other package has
// registered any (testing, e2e-framework and klog do so later), so
// --help can list them first (internal/suiteflags).
var suiteFlags []string

func init() { suiteFlags = suiteflags.Names(flag.CommandLine) }

func TestMain(m *testing.M) {
	flag.CommandLine.Usage = func() {
		width := termwidth.Of(os.Stdout)
		if width == 0 {
			width = termwidth.Default
		}
		suiteflags.UsageWidth(os.Stdout, flag.CommandLine, suiteFlags, width)
	}
	cfg, err := envconf.NewFromFlags()
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		fatal(err)
	}
	if flag.Lookup("test.list") != nil && flag.Lookup("test.list").Value.String() != "" {
		os.Exit(m.Run()) // listing tests needs no cluster
	}
	// Every flag is checked before the first API call: a typo fails in
	// seconds with its fix, never after the cluster answered.
	rcfg, err := config()
	if err != nil {
		fatal(err)
	}
	if err := publishConfig(); err != nil {
		fatal(err)
	}
	rc, where, err := cluster.RESTConfig(cfg.KubeconfigFile(), cfg.KubeContext())
	if errors.Is(err, cluster.ErrNoCluster) {
		fatal(fmt.Errorf("%w; the suite's flags go after -args: go test ./suites -args --kubeconfig=FILE", err))
	}
	if err != nil {
		fatal(err)
	}
	version, err := cluster.ReachableFrom(rc, where, 10*time.Second)
	if err != nil {
		fatal(err)
	}
	if kube, err = kubernetes.NewForConfig(rc); err != nil {
		fatal(err)
	}
	// The client's rate grows with the fleet (cluster.ScaleClientRate), so
	// that a round whose pairs all start at once never queues in the
	// suite's own client.
	var rateLine string
	lctx, lcancel := context.WithTimeout(context.Background(), 30*time.Second)
	if nl, err := kube.CoreV1().Nodes().List(lctx, metav1.ListOptions{}); err == nil && cluster.ScaleClientRate(rc, len(nl.Items)) {
		rateLine = fmt.Sprintf("client rate %.0f requests/s, burst %d (%d nodes in the cluster: %d/%d per node)",
			rc.QPS, rc.Burst, len(nl.Items), cluster.ClientQPSPerNode, cluster.ClientBurstPerNode)
		if kube, err = kubernetes.NewForConfig(rc); err != nil {
			fatal(err)
		}
	}
	lcancel()
	kl, err := klient.New(rc)
	if err != nil {
		fatal(err)
	}
	// --variants auto: the variants this cluster can run, decided before
	// the features are declared (they are declared per variant).
	var variantLines []string
	if rcfg.VariantsAuto {
		vctx, vcancel := context.WithTimeout(context.Background(), 30*time.Second)
		facts, err := runner.GatherVariantFacts(vctx, kube, rcfg)
		vcancel()
		if err != nil {
			variantLines = append(variantLines, fmt.Sprintf("variants: auto could not read the cluster (%v): running %s", err, strings.Join(rcfg.Variants, ", ")))
		} else {
			rcfg, variantLines = runner.ResolveVariants(rcfg, facts)
		}
	}
	// The paired features the run selected share their pods (the plan
	// line of each variant says how).
	rcfg.PairedPlan = pairedPlan(cfg, rcfg.VariantList())
	runID := cluster.NewRunID()
	run = runner.New(kube, rcfg, runID)
	ns := run.Namespace()
	cfg.WithClient(kl).WithNamespace(ns)
	mode, deleting := "", "deleting run namespace "+ns
	// A setup step that fails is a result: an error check with the cause
	// and the fix, in the results, the report, JUnit and the page, and
	// the exit code they give.
	setupStarted := time.Now()
	stopAtSetup := func(step string, err error) {
		fmt.Fprintf(os.Stderr, "rdmasuite: setup (%s): %v\n", step, err)
		run.Record(runner.SetupFailure(step, err))
		os.Exit(finishRun(setupStarted, rc.Host, version, 0))
	}
	if run.SharedNamespace() {
		// Nothing is created before the namespace is proven there.
		cctx, ccancel := context.WithTimeout(context.Background(), 30*time.Second)
		err := cluster.CheckNamespace(cctx, kube, ns)
		ccancel()
		if err != nil {
			stopAtSetup(runner.SetupNamespace, err)
		}
		if *flagResultsCM != "" {
			cctx, ccancel := context.WithTimeout(context.Background(), 30*time.Second)
			err := latest.Check(cctx, kube, ns, *flagResultsCM, func(w string) { fmt.Fprintf(os.Stderr, "rdmasuite: warning: %s\n", w) })
			ccancel()
			if err != nil {
				stopAtSetup(runner.SetupResultsCM, err)
			}
		}
		mode = fmt.Sprintf(" (existing, --namespace; the run's objects carry %s=%s)", cluster.RunLabel, runID)
		deleting = "deleting run objects in namespace " + ns
	}
	if nodeMarks.Enabled() {
		cctx, ccancel := context.WithTimeout(context.Background(), 30*time.Second)
		err := nodemark.Check(cctx, kube, nodeMarks, func(w string) { fmt.Fprintf(os.Stderr, "rdmasuite: warning: %s\n", w) })
		ccancel()
		if err != nil {
			stopAtSetup(runner.SetupNodeMarks, err)
		}
	}
	setupProgress()
	var term io.Writer // the terminal, when the run has one
	if progressOut != io.Writer(os.Stdout) {
		term = progressOut
	}
	if !*flagDryRun { // a dry run creates nothing, not even a file
		plog, err = progress.Open(runner.ReportDir(*flagReportDir), runID, term)
		if err != nil {
			fmt.Fprintf(os.Stderr, "rdmasuite: warning: %v: progress goes to the terminal and stdout only\n", err)
		}
	}
	stamp := func(line string) string {
		return fmt.Sprintf("rdmasuite: %s %s", time.Now().Format(time.TimeOnly), line)
	}
	run.Progress = func(line string) {
		l := stamp(line)
		if term == nil {
			fmt.Println(l) // stdout: go test -v, the in-cluster Job's log
		}
		if plog != nil {
			plog.Line(l)
		} else if term != nil {
			fmt.Fprintln(term, l)
		}
	}
	if term != nil && plog != nil {
		run.Status = func(line string) { plog.Status(stamp(line)) }
	}
	if plog.Path() != "" {
		say("rdmasuite: progress in %s (tail -f it: without -v, go test shows the run's output only when it ends)\n", plog.Path())
	}
	say("rdmasuite: cluster %s (%s, kubeconfig %s), run %s, namespace %s%s\n", rc.Host, version, where, runID, ns, mode)
	hctx, hcancel := context.WithTimeout(context.Background(), 30*time.Second)
	for _, l := range variantLines {
		say("rdmasuite: %s\n", l)
	}
	if rateLine != "" {
		say("rdmasuite: %s\n", rateLine)
	}
	say("rdmasuite: %s\n", run.NodesHeader(hctx))
	if note := runner.ImageNote(rcfg.Image); note != "" {
		say("rdmasuite: %s\n", note)
	}
	for _, l := range run.ThresholdsHeader(hctx) {
		say("rdmasuite: %s\n", l)
	}
	// The plan before anything is created: pairs, rounds, waves and an
	// estimate. --dry-run stops here.
	for _, l := range run.Plan(hctx) {
		say("rdmasuite: %s\n", l)
	}
	hcancel()
	if *flagDryRun {
		say("rdmasuite: --dry-run: nothing was created; the run would start here\n")
		os.Exit(0)
	}
	started := time.Now()

	// The internal deadline: features stop starting pods in time for the
	// teardown below to finish before go test's own timeout panics.
	ctx, cancel := context.Background(), context.CancelFunc(func() {})
	deadline, reserve, hasDeadline := runner.Deadline(started, testTimeout())
	if hasDeadline {
		ctx, cancel = context.WithDeadline(ctx, deadline)
		fmt.Printf("rdmasuite: internal deadline %s (go test -timeout less %s for teardown)\n", deadline.Format(time.TimeOnly), reserve)
	}
	defer cancel()

	var once sync.Once
	setupFailed := false
	finish := func(code int, why string) {
		once.Do(func() {
			if setupFailed {
				code = 0 // the setup row decides, as the results say
			}
			if why != "" {
				fmt.Fprintf(os.Stderr, "rdmasuite: %s: %s\n", why, deleting)
				// Features cut short say so in the results: an error row
				// each, never a silently shorter report.
				run.RecordUnfinished(why)
			}
			os.Exit(finishRun(started, rc.Host, version, code))
		})
	}
	// Interrupts (Ctrl-C, kill, a closed ssh session) must not leak the
	// namespace (or, with --namespace, the run's objects): delete, then exit.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	go func() {
		s := <-sigs
		finish(130, s.String())
	}()
	if hasDeadline {
		// A feature that ignores its context must not take the cleanup
		// down with it: half the reserve after the deadline, finish anyway.
		time.AfterFunc(time.Until(deadline.Add(reserve/2)), func() {
			finish(reports.ExitChecksFailed, "internal deadline passed (context deadline exceeded) and the features did not return")
		})
	}

	testenv, err = env.NewWithContext(ctx, cfg)
	if err != nil {
		fatal(err)
	}
	testenv.Setup(func(ctx context.Context, _ *envconf.Config) (context.Context, error) {
		if run.SharedNamespace() {
			return ctx, nil // checked above; never created
		}
		nsMayExist = true
		err := cluster.CreateRunNamespace(ctx, kube, runID)
		if err != nil {
			nsMayExist = !errors.Is(err, cluster.ErrNamespaceNotCreated)
			setupFailed = true
			run.Record(runner.SetupFailure(runner.SetupNamespace, err))
		}
		return ctx, err
	})
	code := testenv.Run(m)
	finish(code, "")
}

// finishRun writes the results, makes the exit code agree with them,
// publishes them (--pushgateway, --results-configmap), and deletes the run
// namespace (or keeps it with --keep-on-failure); with --namespace it
// deletes (or keeps) the run's objects there instead.
func finishRun(started time.Time, server, version string, code int) int {
	res, code := runner.Reconcile(run.Results(started, server, version), code)
	written := ""
	if path, err := runner.WriteResults(*flagReportDir, res); err != nil {
		fmt.Fprintf(os.Stderr, "rdmasuite: writing results: %v\n", err)
		code = max(code, reports.ExitBroken)
	} else if page, err := runner.WritePage(filepath.Dir(path), res); err != nil {
		// The results are safe; only the HTML page failed.
		written = path
		fmt.Fprintf(os.Stderr, "rdmasuite: results in %s, but the HTML page: %v\n", path, err)
		code = max(code, reports.ExitBroken)
	} else {
		written = path
		say("rdmasuite: results in %s (render: rdmasuite report %s), acceptance page %s\n", path, path, page)
	}
	if plog != nil {
		plog.EndStatus() // the table starts on a line of its own
	}
	if len(res.Checks) > 0 {
		width := termwidth.Controlling(os.Stdout)
		if width == 0 {
			width = termwidth.Default // a CI log or the Job's: 80 columns, passing rows folded
		}
		_ = reports.TableWidth(os.Stdout, res, width)
		if progressOut != io.Writer(os.Stdout) {
			_ = reports.TableWidth(progressOut, res, width)
		}
		say("rdmasuite: %s, exit %d\n", reports.SummaryText(res), code)
	} else {
		fmt.Fprintln(os.Stderr, "rdmasuite: no check ran: nothing was measured (check --labels / -run)")
	}
	code = publish(res, code, written)
	ctx, cancel := context.WithTimeout(context.Background(), *flagCleanupWait+15*time.Second)
	defer cancel()
	if run.SharedNamespace() {
		return finishShared(ctx, res, code)
	}
	if !nsMayExist {
		return code // the API refused the namespace (or it was never asked for): nothing to keep or delete
	}
	if code != 0 && *flagKeepOnFailure {
		why := reports.SummaryText(res)
		if err := cluster.MarkKept(ctx, kube, run.RunID, why); err != nil {
			fmt.Fprintf(os.Stderr, "rdmasuite: marking namespace kept: %v\n", err)
		}
		fmt.Printf("rdmasuite: --keep-on-failure: namespace %s kept for debugging; delete it with: rdmasuite cleanup --run %s\n", run.Namespace(), run.RunID)
		return code
	}
	if err := cluster.DeleteRunNamespace(ctx, kube, run.RunID, *flagCleanupWait); err != nil {
		fmt.Fprintf(os.Stderr, "rdmasuite: %v (or: rdmasuite cleanup --run %s)\n", err, run.RunID)
		if code == 0 {
			code = 1
		}
	}
	return code
}

// finishShared is finishRun's end with --namespace: the run's objects in
// the existing namespace are deleted by the run label (or kept and their
// pods labelled), and the namespace itself is left as it was.
func finishShared(ctx context.Context, res reports.Run, code int) int {
	ns, cleanup := run.Namespace(), fmt.Sprintf("rdmasuite cleanup --namespace %s --run %s", run.Namespace(), run.RunID)
	if code != 0 && *flagKeepOnFailure {
		if err := cluster.MarkRunObjectsKept(ctx, kube, ns, run.RunID, reports.SummaryText(res)); err != nil {
			fmt.Fprintf(os.Stderr, "rdmasuite: marking the run's pods kept: %v\n", err)
		}
		fmt.Printf("rdmasuite: --keep-on-failure: run %s's objects kept in namespace %s for debugging (kubectl get pods -n %s -l %s); delete them with: %s\n",
			run.RunID, ns, ns, cluster.RunSelector(run.RunID), cleanup)
		return code
	}
	if _, err := cluster.DeleteRunObjects(ctx, kube, ns, run.RunID, *flagCleanupWait); err != nil {
		fmt.Fprintf(os.Stderr, "rdmasuite: %v (or: %s)\n", err, cleanup)
		if code == 0 {
			code = 1
		}
	}
	return code
}

// publish pushes the run's metrics (--pushgateway), marks the nodes
// (--node-annotations, --taint-failed-nodes), then records the run as the
// latest run (--results-configmap), with the exit code as it stands after
// the push and the node marks. A failure of any is said on stderr and never
// hides the run's verdict: a run that did not pass keeps its exit code;
// only a passing run's 0 becomes 2, so a pass that was not published is
// not taken for a published one.
func publish(res reports.Run, code int, resultsPath string) int {
	failed := func(what string, err error) {
		fmt.Fprintf(os.Stderr, "rdmasuite: %s: %v\n", what, err)
		if code == reports.ExitPassed {
			code = reports.ExitBroken
			fmt.Fprintf(os.Stderr, "rdmasuite: exit %d, not 0: the checks passed, but %s failed (see above)\n", code, what)
		} else {
			fmt.Fprintf(os.Stderr, "rdmasuite: the run's own exit %d stands\n", code)
		}
	}
	if pushGroup != nil {
		if n, err := pushGroup.Push(res); err != nil {
			failed("--pushgateway", err)
		} else {
			fmt.Printf("rdmasuite: pushed %d series of run %s to %s\n", n, res.RunID, pushGroup)
		}
	}
	code = nodemark.Finish(context.Background(), kube, res, nodeMarks, publishTimeout, code, os.Stdout, os.Stderr)
	if *flagResultsCM != "" {
		ns, name := run.Namespace(), *flagResultsCM
		cm, err := latest.Build(ns, name, res, code, resultsPath)
		if err == nil {
			ctx, cancel := context.WithTimeout(context.Background(), publishTimeout)
			err = latest.Write(ctx, kube, cm)
			cancel()
		}
		if err != nil {
			failed("--results-configmap", err)
		} else {
			fmt.Printf("rdmasuite: latest run in configmap %s/%s (%d KiB): kubectl get configmap -n %s %s -o jsonpath='{.data.summary\\.txt}'\n",
				ns, name, latest.Size(cm)>>10, ns, name)
		}
	}
	return code
}

// testTimeout is go test's -timeout (0 when none).
func testTimeout() time.Duration {
	f := flag.Lookup("test.timeout")
	if f == nil {
		return 0
	}
	if g, ok := f.Value.(flag.Getter); ok {
		if d, ok := g.Get().(time.Duration); ok {
			return d
		}
	}
	return 0
}
