// Package runner is what the suite features do, as importable code: it
// selects nodes, starts probe pods, pairs them, hands their output to the
// verdicts, and records checks so that every node × rail × op × size the
// run was asked to cover ends as a measurement or a fail/error/not-run
// saying why. The suites package only declares features around it. It
// builds with CGO_ENABLED=0: it never imports workloads/verbs.
package runner

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/rdmasuite/rdmasuite/internal/pairing"
	"github.com/rdmasuite/rdmasuite/thresholds"
	"github.com/rdmasuite/rdmasuite/workloads/bw"
	"github.com/rdmasuite/rdmasuite/workloads/nccl"
	"github.com/rdmasuite/rdmasuite/workloads/ncclbench"
	"github.com/rdmasuite/rdmasuite/workloads/probeout"
	"github.com/rdmasuite/rdmasuite/workloads/units"
)

// Config is one run's settings (the suite's flags, parsed).
type Config struct {
	Image        string
	PodTimeout   time.Duration
	NodeSelector string
	Concurrency  int

	Variants []string // shared-dev, hostdev
	// VariantsAuto (--variants auto, the default): Variants are the
	// candidates; ResolveVariants keeps those the cluster can run.
	VariantsAuto  bool
	RDMAResources []string
	HostdevRes    string
	HostdevNet    string
	HostdevNetdev string
	Device        string
	GPUs          int

	BWOps      []string
	BWSizes    []int // bytes, in the order given; the largest is judged
	BWQPs      int
	BWDuration time.Duration
	BWIters    int
	// LatOps, LatSizes and LatIters are the latency feature's ops
	// (write, read, send: ib_write_lat, ib_read_lat, ib_send_lat), message
	// sizes (perftest's 2 B) and iterations (1000) per pair, rail and op.
	LatOps   []string
	LatSizes []int
	LatIters int
	// MsgRateSizes, MsgRateQPs and MsgRateIters are the message-rate
	// feature's small write sizes (2 B), QPs (4) and iterations per QP
	// (perftest's 5000).
	MsgRateSizes []int
	MsgRateQPs   int
	MsgRateIters int
	Pairing      string // ring or all
	Loopback     bool
	// Confirm: re-measure each end of a failed or inconclusive pair
	// against a partner that passed everything, in one more round, before
	// anything is blamed (confirm.go).
	Confirm bool
	// NoNodePods (--node-pods=false) keeps a server and a client pod per
	// pair and round even where the suite may exec (a cluster whose
	// admission policy refuses exec although RBAC allows it).
	NoNodePods   bool
	RailMode     string // bw.RailsSame or bw.RailsCross
	RailParallel bool
	// QPTimeout is every probe QP's local ACK timeout exponent
	// (--qp-timeout, perftest's -u).
	QPTimeout int

	Thresholds *thresholds.Set
	SKU        string

	MemlockRequired string
	MemlockMax      string
	MemlockIPCLock  bool

	NodeProbe         bool
	NodeProbeHostPath string
	NodeProbeWindow   string

	// AllowNotRun are check ids (or prefixes ending in "/") whose not-run
	// does not fail the run.
	AllowNotRun   []string
	KeepOnFailure bool

	// Namespace is an existing namespace the run lives in (--namespace),
	// beside other runs' objects; empty: the run creates and deletes its
	// own (cluster.RunNamespace).
	Namespace string

	// The disruptive feature (suite=disruptive, internal/disrupt): it
	// restarts the MOFED driver on DisruptNodes only with AllowDisruptive.
	AllowDisruptive   bool
	DisruptNodes      []string
	StallPeer         string
	StallPVC          string
	StallPVCNamespace string
	MOFEDNamespace    string
	MOFEDSelector     string
	MOFEDContainer    string
	DriverReadyFile   string
	DriverTimeout     time.Duration
	StallSteady       time.Duration
	StallAfter        time.Duration
	StallDurability   string
	StallForce        bool

	// The nccl feature (suite=gpu): NCCL collectives over worlds of GPU
	// nodes (nccl.go). Zero values take the defaults below, so a Config
	// built in code runs the nightly sweep.
	NCCLCollectives []string // ncclbench's: all_reduce, all_gather, reduce_scatter, alltoall, sendrecv
	NCCLMinBytes    int64    // sweep start (nccl-tests -b); 0: 8
	NCCLMaxBytes    int64    // sweep end and the judged size (-e); 0: 128 MiB
	NCCLIters       int      // timed iterations per size and variant (-n); 0: 20
	NCCLWarmup      int      // warm-up iterations per size (-w); 0 is none
	NCCLWorlds      []string // pairs and/or all
	NCCLTimeout     time.Duration

	// The gpudirect feature (suite=gpu): the bandwidth pairs with GPU
	// memory on both sides (gpudirect.go).
	GPUDirectOps []string // write (default), read
	GPUDirectMem string   // the probe's --mem: cuda:auto (default), cuda, cuda:N

	// Selected lists, per variant label, the features this run selected
	// that its plan schedules (BuildPlan): the paired features (names of
	// PairedFeatures), which share one server/client pod pair per node
	// pair, and MemlockFeature, which then runs in their node pods.
	Selected map[string][]string
}

// Defaults of the GPU features (the flags' defaults too). The sweep is
// the nccl-tests README's (-b 8 -e 128M -f 2, ncclbench.DefaultConfig):
// 25 sizes from latency-bound to past the bandwidth knee of a one-GPU-per-
// node ring over the network, where the all_reduce floor is judged; 20
// timed iterations (nccl-tests' -n default) and 5 warm-up passes (NCCL
// connects channels and registers buffers lazily on first use). Every
// supported collective, pairs (a bad link between two good nodes) and the
// whole set (what a training job sees).
const (
	DefaultNCCLCollectives = "all_reduce,all_gather,reduce_scatter,alltoall,sendrecv"
	DefaultNCCLMinBytes    = 8
	DefaultNCCLMaxBytes    = 128 << 20
	DefaultNCCLIters       = 20
	DefaultNCCLWarmup      = 5
	DefaultNCCLWorlds      = NCCLWorldPairs + "," + NCCLWorldAll
	DefaultNCCLTimeout     = 5 * time.Minute
	DefaultGPUDirectOps    = "write"
	DefaultGPUDirectMem    = "cuda:auto"

	// NCCLFactor is the sweep's step (nccl-tests -f 2).
	NCCLFactor = 2
)

// --nccl-worlds values.
const (
	NCCLWorldPairs = "pairs" // every pair of GPU nodes of --pairing (ring by default)
	NCCLWorldAll   = "all"   // every GPU node in one world (when more than 2)
)

// ncclSettings are the nccl settings with the defaults filled in.
func (c Config) ncclSettings() Config {
	if len(c.NCCLCollectives) == 0 {
		c.NCCLCollectives = SplitList(DefaultNCCLCollectives)
	}
	if c.NCCLMinBytes == 0 {
		c.NCCLMinBytes = DefaultNCCLMinBytes
	}
	if c.NCCLMaxBytes == 0 {
		c.NCCLMaxBytes = max(DefaultNCCLMaxBytes, c.NCCLMinBytes)
	}
	if c.NCCLIters == 0 {
		c.NCCLIters = DefaultNCCLIters
	}
	if len(c.NCCLWorlds) == 0 {
		c.NCCLWorlds = SplitList(DefaultNCCLWorlds)
	}
	if c.NCCLTimeout == 0 {
		c.NCCLTimeout = DefaultNCCLTimeout
	}
	if len(c.GPUDirectOps) == 0 {
		c.GPUDirectOps = SplitList(DefaultGPUDirectOps)
	}
	if c.GPUDirectMem == "" {
		c.GPUDirectMem = DefaultGPUDirectMem
	}
	return c
}

// validateGPU names the first bad setting of the nccl and gpudirect
// features.
func (c Config) validateGPU() error {
	c = c.ncclSettings()
	for i, coll := range c.NCCLCollectives {
		if !slices.Contains(ncclbench.Supported, nccl.Collective(coll)) {
			return fmt.Errorf("--nccl-collectives: %q is not one the probe runs: %s", coll, DefaultNCCLCollectives)
		}
		if slices.Contains(c.NCCLCollectives[:i], coll) {
			return fmt.Errorf("--nccl-collectives: %s given twice", coll)
		}
	}
	switch {
	case c.NCCLMinBytes < 1:
		return fmt.Errorf("--nccl-min-bytes %d: give a size of at least 1 byte, e.g. 8", c.NCCLMinBytes)
	case c.NCCLMaxBytes < c.NCCLMinBytes:
		return fmt.Errorf("--nccl-max-bytes %s is below --nccl-min-bytes %s", units.Bytes(c.NCCLMaxBytes), units.Bytes(c.NCCLMinBytes))
	case c.NCCLIters < 1:
		return fmt.Errorf("--nccl-iters %d: give at least 1 timed iteration", c.NCCLIters)
	case c.NCCLWarmup < 0:
		return fmt.Errorf("--nccl-warmup %d: give 0 or more warm-up iterations", c.NCCLWarmup)
	case c.NCCLTimeout < 0:
		return fmt.Errorf("--nccl-timeout %s: give a positive duration", c.NCCLTimeout)
	}
	for i, w := range c.NCCLWorlds {
		if w != NCCLWorldPairs && w != NCCLWorldAll {
			return fmt.Errorf("--nccl-worlds: unknown world %q: pairs, all or pairs,all", w)
		}
		if slices.Contains(c.NCCLWorlds[:i], w) {
			return fmt.Errorf("--nccl-worlds: %s given twice", w)
		}
	}
	for i, op := range c.GPUDirectOps {
		if op != string(bw.OpWrite) && op != string(bw.OpRead) {
			return fmt.Errorf("--gpudirect-ops: unknown op %q: write or read", op)
		}
		if slices.Contains(c.GPUDirectOps[:i], op) {
			return fmt.Errorf("--gpudirect-ops: %s given twice", op)
		}
	}
	if m := c.GPUDirectMem; m != "cuda" && !strings.HasPrefix(m, "cuda:") {
		return fmt.Errorf("--gpudirect-mem %q: GPU memory: cuda:auto (the GPU nearest each rail), cuda or cuda:N", m)
	}
	return nil
}

// ParseByteSize reads one size in bytes or with a K, M or G suffix
// (binary), as --nccl-min-bytes and --nccl-max-bytes take it.
func ParseByteSize(s string) (int64, error) {
	sizes, err := units.ParseSizes(s)
	if err != nil {
		return 0, err
	}
	if len(sizes) != 1 {
		return 0, fmt.Errorf("one size, not %d: %q", len(sizes), s)
	}
	return int64(sizes[0]), nil
}

// Validate names the first bad setting and how to fix it.
func (c Config) Validate() error {
	if err := checkOps("--bw-ops", c.BWOps, bw.OpWrite, bw.OpRead); err != nil {
		return err
	}
	if len(c.BWSizes) == 0 {
		return fmt.Errorf("--bw-sizes is empty: give sizes such as 64K,1M")
	}
	if err := checkOps("--lat-ops", c.LatOps, bw.OpWrite, bw.OpRead, bw.OpSend); err != nil {
		return err
	}
	if len(c.MsgRateSizes) == 0 {
		return fmt.Errorf("--msgrate-sizes is empty: give small sizes such as 2 (message rate is a small-message figure)")
	}
	if c.MsgRateQPs < 1 || c.MsgRateQPs > 1024 {
		return fmt.Errorf("--msgrate-qps %d: want 1..1024", c.MsgRateQPs)
	}
	if c.QPTimeout < 0 || c.QPTimeout > 31 {
		return fmt.Errorf("--qp-timeout %d: want 1..31 (4.096 µs × 2^N; perftest's default is %d)", c.QPTimeout, bw.DefaultQPTimeout)
	}
	if c.MsgRateIters < 1 {
		return fmt.Errorf("--msgrate-iters %d: want at least 1 (perftest's default is 5000)", c.MsgRateIters)
	}
	if len(c.LatSizes) == 0 {
		return fmt.Errorf("--lat-sizes is empty: give sizes such as 2 (perftest's latency default)")
	}
	if c.LatIters < 4 {
		return fmt.Errorf("--lat-iters %d: want at least 4 (perftest drops the 2 largest samples; its default is 1000)", c.LatIters)
	}
	if c.RailMode != bw.RailsSame && c.RailMode != bw.RailsCross {
		return fmt.Errorf("--rails %q: same (rail i ↔ rail i) or cross (every rail × every rail)", c.RailMode)
	}
	if c.Pairing != pairing.Ring && c.Pairing != pairing.All {
		return fmt.Errorf("--pairing %q: ring or all", c.Pairing)
	}
	if strings.TrimSpace(c.Image) == "" || strings.ContainsAny(c.Image, " \t\n") {
		return fmt.Errorf("--image %q: give an image reference such as registry.example.com/team/rdmaprobe:v1 (default: %s)", c.Image, DefaultProbeImage())
	}
	if len(c.Variants) == 0 {
		return fmt.Errorf("--variants is empty: give auto (the default), shared-dev, hostdev or both")
	}
	for i, v := range c.Variants {
		if v == VariantsAuto {
			return fmt.Errorf("--variants: auto stands alone (the variants the cluster can run); or name shared-dev, hostdev or both")
		}
		if v != VariantSharedDev && v != VariantHostdev {
			return fmt.Errorf("--variants: unknown variant %q: auto, shared-dev or hostdev", v)
		}
		if slices.Contains(c.Variants[:i], v) {
			return fmt.Errorf("--variants: %s given twice", v)
		}
	}
	if slices.Contains(c.Variants, VariantSharedDev) && len(c.RDMAResources) == 0 {
		return fmt.Errorf("--rdma-resource is empty but the shared-dev variant was asked for: name the shared device plugin's resource, e.g. rdma/rdma_shared_device_a")
	}
	if slices.Contains(c.Variants, VariantHostdev) && c.HostdevRes == "" {
		return fmt.Errorf("--hostdev-resource is empty but the hostdev variant was asked for: name the SR-IOV device plugin's resource, e.g. nvidia.com/hostdev")
	}
	for _, a := range c.AllowNotRun {
		if !strings.Contains(a, "/") {
			return fmt.Errorf("--allow-not-run %q: give a check id such as bandwidth/write or a prefix such as bandwidth/", a)
		}
	}
	if err := c.validateGPU(); err != nil {
		return err
	}
	if c.Namespace != "" {
		if errs := validation.IsDNS1123Label(c.Namespace); len(errs) > 0 {
			return fmt.Errorf("--namespace %q is not a namespace name: %s", c.Namespace, strings.Join(errs, "; "))
		}
	}
	if c.Thresholds == nil {
		return fmt.Errorf("no thresholds loaded")
	}
	if c.AllowDisruptive {
		return c.validateDisruptive()
	}
	return nil
}

// sizesArg is the sizes as the probe's --size flag takes them.
func sizesArg(sizes []int) string {
	parts := make([]string, len(sizes))
	for i, s := range sizes {
		parts[i] = strconv.Itoa(s)
	}
	return strings.Join(parts, ",")
}

// ParseSizes reads "64K,1M,4096" into bytes (units.ParseSizes); a size
// given twice is an error (it would be measured and judged twice).
func ParseSizes(s string) ([]int, error) {
	sizes, err := units.ParseSizes(s)
	for i := range sizes {
		if err == nil && slices.Contains(sizes[:i], sizes[i]) {
			err = fmt.Errorf("size %s given twice in %q", units.Bytes(int64(sizes[i])), s)
		}
	}
	return sizes, err
}

// SplitList splits a comma-separated flag value (units.SplitList).
func SplitList(s string) []string { return units.SplitList(s) }

// checkOps checks an op-list flag: not empty, every op one of allowed,
// none given twice.
func checkOps(flagName string, ops []string, allowed ...bw.Op) error {
	names := make([]string, len(allowed))
	for i, op := range allowed {
		names[i] = string(op)
	}
	want := strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
	if len(ops) == 0 {
		return fmt.Errorf("%s is empty: give %s, or a list of them", flagName, want)
	}
	for i, op := range ops {
		if !slices.Contains(names, op) {
			return fmt.Errorf("%s: unknown op %q: %s", flagName, op, want)
		}
		if slices.Contains(ops[:i], op) {
			return fmt.Errorf("%s: %s given twice", flagName, op)
		}
	}
	return nil
}

// ParseVariants reads --variants: "auto" (the variants the cluster can
// run, decided by ResolveVariants once the API answers) or a list.
func ParseVariants(flag string) (variants []string, auto bool) {
	if strings.TrimSpace(flag) == VariantsAuto {
		return []string{VariantSharedDev, VariantHostdev}, true
	}
	return SplitList(flag), false
}

// ProbeImageRepo is where the released probe images are published
// (README "Images": make push-images).
const ProbeImageRepo = "docker.io/rdmasuite/rdmaprobe"

// DefaultProbeImage is the released probe image of the suite's own version
// (the version make stamps into both binaries, so the runner image of
// version X defaults to the probe image of version X). A build without a
// stamped version (go test from a source tree) says "dev": a locally
// built image that no registry serves, which the header flags (ImageNote).
func DefaultProbeImage() string { return ProbeImageRepo + ":" + probeout.Version }

// ImageNote is a header line when the probe image is a development build's
// default, which no registry serves; "" otherwise.
func ImageNote(image string) string {
	if image == DefaultProbeImage() && !probeout.Released(probeout.Version) {
		return "image " + image + ": the default of a build without a release version (go test from a source tree); " +
			"on a real cluster pass --image with a released tag or your own build (make push-images)"
	}
	return ""
}
