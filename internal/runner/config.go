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

	"github.com/rdmasuite/rdmasuite/internal/pairing"
	"github.com/rdmasuite/rdmasuite/thresholds"
	"github.com/rdmasuite/rdmasuite/workloads/bw"
	"github.com/rdmasuite/rdmasuite/workloads/units"
)

// Config is one run's settings (the suite's flags, parsed).
type Config struct {
	Image        string
	PodTimeout   time.Duration
	NodeSelector string
	Concurrency  int

	Variants      []string // shared-dev, hostdev
	RDMAResources []string
	HostdevRes    string
	HostdevNet    string
	HostdevNetdev string
	Device        string
	GPUs          int

	BWOps        []string
	BWSizes      []int // bytes, in the order given; the largest is judged
	BWQPs        int
	BWDuration   time.Duration
	BWIters      int
	Pairing      string // ring or all
	Loopback     bool
	RailMode     string // bw.RailsSame or bw.RailsCross
	RailParallel bool

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
}

// Validate names the first bad setting and how to fix it.
func (c Config) Validate() error {
	if len(c.BWOps) == 0 {
		return fmt.Errorf("--bw-ops is empty: give write, read or write,read")
	}
	for _, op := range c.BWOps {
		if op != string(bw.OpWrite) && op != string(bw.OpRead) {
			return fmt.Errorf("--bw-ops: unknown op %q: write or read", op)
		}
	}
	if len(c.BWSizes) == 0 {
		return fmt.Errorf("--bw-sizes is empty: give sizes such as 64K,1M")
	}
	if c.RailMode != bw.RailsSame && c.RailMode != bw.RailsCross {
		return fmt.Errorf("--rails %q: same (rail i ↔ rail i) or cross (every rail × every rail)", c.RailMode)
	}
	if c.Pairing != pairing.Ring && c.Pairing != pairing.All {
		return fmt.Errorf("--pairing %q: ring or all", c.Pairing)
	}
	if len(c.Variants) == 0 {
		return fmt.Errorf("--variants is empty: give shared-dev, hostdev or both")
	}
	for i, v := range c.Variants {
		if v != VariantSharedDev && v != VariantHostdev {
			return fmt.Errorf("--variants: unknown variant %q: shared-dev or hostdev", v)
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
	for i, op := range c.BWOps {
		if slices.Contains(c.BWOps[:i], op) {
			return fmt.Errorf("--bw-ops: %s given twice", op)
		}
	}
	for _, a := range c.AllowNotRun {
		if !strings.Contains(a, "/") {
			return fmt.Errorf("--allow-not-run %q: give a check id such as bandwidth/write or a prefix such as bandwidth/", a)
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

// SizesArg is the sizes as the probe's --size flag takes them.
func (c Config) SizesArg() string {
	parts := make([]string, len(c.BWSizes))
	for i, s := range c.BWSizes {
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
