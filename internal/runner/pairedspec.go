package runner

import (
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/rdmasuite/rdmasuite/internal/verdict"
)

// The paired features: each measures between a server pod and a client pod
// per node pair. Selected together, they share those pods (one server and
// one client pod per node pair and variant run every selected feature in
// turn, rdmaprobe bw … --then …): a pod start often costs more than the
// measurement, so starts per pair are the suite's overhead on a cluster of
// any size.
const (
	PairedBandwidth = "bandwidth"
	PairedLatency   = "latency"
	PairedMsgRate   = "msgrate"
	PairedGPUDirect = "gpudirect"
	// PairedLatencyLoad is latency under load: write latency on a rail
	// pair while the same pair carries a write stream.
	PairedLatencyLoad = "latency-load"
)

// PairedSpec defines one paired feature, in one place: how the suite
// declares it, what its pairs' probes run, on which nodes, and how its
// checks are judged (the verdict, which also gives each check its report
// traits) against which thresholds keys. The suite, the plan, the pair
// runner and thresholds list read this entry; adding a paired feature is
// adding an entry (and its verdict and thresholds key).
type PairedSpec struct {
	// Name is the check ids' family (Name/<op>), the label check=Name and
	// the run's name in a shared pod (--run-name).
	Name string
	// Test is the Go test in suites that declares it; Suite its suite
	// label; Title and Assess its feature's and assessment's names.
	Test, Suite, Title, Assess string
	// Memory is where its buffers live and the probe mode both sides run.
	Memory func(Config) bwMemory
	// Ops and Sizes are what its client measures on every rail pair.
	Ops   func(Config) []string
	Sizes func(Config) []int
	// RunArgs are its client's measurement flags (how long or how many
	// iterations, QPs); PerMeasurement is the plan's estimate of one (op,
	// size) measurement.
	RunArgs        func(Config) []string
	PerMeasurement func(Config) time.Duration
	// Judge is its verdict over one pair's outputs.
	Judge func(verdict.BWInput) verdict.BWResult
	// Thresholds are the thresholds-file keys of a SKU its verdict judges
	// against (portCounters: its link checks): the SKUs without one of
	// its optional keys get not-run rows, and thresholds list says which.
	Thresholds []string
	// GPUNodes: its pairs are formed among the GPU nodes only (otherwise
	// among the variant's selected nodes).
	GPUNodes bool
	// NodeRows: it owns the per-node rows (bandwidth/ports, the hostdev
	// isolation row, from the rails its pairs saw) and, with --loopback,
	// the same-node pairs.
	NodeRows bool
}

// pairedSpecs are the paired features, in the order a shared pod runs them.
var pairedSpecs = []PairedSpec{
	{Name: PairedBandwidth, Test: "TestBandwidth", Suite: "rdma", Title: "RDMA bandwidth between paired pods",
		Assess: "every rail of every node reaches its SKU's floor for every op, at the largest requested size",
		Memory: func(Config) bwMemory { return hostMemory },
		Ops:    func(c Config) []string { return c.BWOps }, Sizes: func(c Config) []int { return c.BWSizes },
		RunArgs: bandwidthRunArgs, PerMeasurement: bandwidthPerMeasurement,
		Judge: verdict.Bandwidth, NodeRows: true, Thresholds: []string{"linkRateGbps", "portsPerNode", "write", "read", "portCounters"}},
	{Name: PairedLatency, Test: "TestLatency", Suite: "latency", Title: "RDMA latency between paired pods",
		Assess: "every rail of every node stays under its SKU's latency ceiling for every op",
		// ib_write_lat's ping-pong, ib_read_lat's one READ at a time: one
		// operation at a time on one QP (--latency sets depth and
		// moderation), perftest's iteration count.
		Memory: func(Config) bwMemory { return bwMemory{prefix: "lat", latency: true} },
		Ops:    func(c Config) []string { return c.LatOps }, Sizes: func(c Config) []int { return c.LatSizes },
		RunArgs:        func(c Config) []string { return []string{"--iters", strconv.Itoa(c.LatIters)} },
		PerMeasurement: func(Config) time.Duration { return time.Second },
		Judge:          verdict.Latency, Thresholds: []string{"writeLatencyUs", "readLatencyUs", "sendLatencyUs", "portCounters"}},
	{Name: PairedMsgRate, Test: "TestMsgRate", Suite: "msgrate", Title: "RDMA message rate between paired pods",
		Assess: "every rail of every node reaches its SKU's small-message write rate",
		// perftest's message-rate run: small writes over several QPs, tx
		// depth 128, a completion every 100 posts (the probe's defaults),
		// iteration mode.
		Memory: func(Config) bwMemory { return bwMemory{prefix: "mps"} },
		Ops:    func(Config) []string { return []string{"write"} }, Sizes: func(c Config) []int { return c.MsgRateSizes },
		RunArgs: func(c Config) []string {
			return []string{"--qps", strconv.Itoa(c.MsgRateQPs), "--iters", strconv.Itoa(c.MsgRateIters)}
		},
		PerMeasurement: func(Config) time.Duration { return time.Second },
		Judge:          verdict.MsgRate, Thresholds: []string{"writeMsgRateMpps", "portCounters"}},
	// Its own suite: no built-in hardware SKU has its factor (a site
	// setting), so inside suite=latency it would make that suite's runs
	// not-run, and so fail, on every hardware SKU.
	{Name: PairedLatencyLoad, Test: "TestLatencyUnderLoad", Suite: "latency-load", Title: "RDMA latency under a write stream between paired pods",
		Assess: "every rail of every node keeps its typical and p99 write latency within the SKU's factor of the same figures alone while the pair carries a write stream",
		// ib_write_lat while ib_write_bw runs between the same rails, as
		// operators measure tail latency on a congested fabric: the probe
		// measures alone, then under a stream of the bandwidth feature's
		// largest size (--load-size), and reports both.
		Memory: func(Config) bwMemory { return bwMemory{prefix: "ll", latency: true} },
		Ops:    func(Config) []string { return []string{"write"} }, Sizes: func(c Config) []int { return c.LatSizes },
		RunArgs: func(c Config) []string {
			return []string{"--iters", strconv.Itoa(c.LatIters), "--load-size", strconv.Itoa(slices.Max(c.BWSizes))}
		},
		// Alone, then under a stream of at least 3 s (8 × the measurement
		// alone + 2 s where that is longer).
		PerMeasurement: func(Config) time.Duration { return 7 * time.Second },
		Judge:          verdict.LatencyUnderLoad, Thresholds: []string{"latencyUnderLoadFactor", "portCounters"}},
	{Name: PairedGPUDirect, Test: "TestGPUDirect", Suite: "gpu", Title: "GPUDirect RDMA between paired GPU pods",
		Assess: "every rail of every GPU node reaches its SKU's gpuDirectWrite floor from GPU memory, at the largest requested size",
		// The bandwidth run from GPU memory on both sides: --mem cuda:auto
		// (the GPU nearest each rail), a GPU per pod at least.
		Memory: func(c Config) bwMemory {
			return bwMemory{prefix: "gd", mem: c.ncclSettings().GPUDirectMem, gpus: max(c.GPUs, 1)}
		},
		Ops: func(c Config) []string { return c.ncclSettings().GPUDirectOps }, Sizes: func(c Config) []int { return c.BWSizes },
		RunArgs: bandwidthRunArgs, PerMeasurement: bandwidthPerMeasurement,
		Judge: verdict.GPUDirect, GPUNodes: true, Thresholds: []string{"linkRateGbps", "gpuDirectWrite", "portCounters"}},
}

// bandwidthRunArgs are a bandwidth run's flags: perftest's duration mode
// (-D), or its iteration count with --bw-iters.
func bandwidthRunArgs(c Config) []string {
	if c.BWIters > 0 {
		return []string{"--qps", strconv.Itoa(c.BWQPs), "--iters", strconv.Itoa(c.BWIters)}
	}
	return []string{"--qps", strconv.Itoa(c.BWQPs), "--duration", c.BWDuration.String()}
}

// bandwidthPerMeasurement is a bandwidth run's time per (op, size):
// --bw-duration, or about a second for an iteration count.
func bandwidthPerMeasurement(c Config) time.Duration {
	if c.BWIters == 0 && c.BWDuration > 0 {
		return c.BWDuration
	}
	return time.Second
}

// PairedSpecs are the paired features' definitions, in the order a shared
// pod runs them.
func PairedSpecs() []PairedSpec { return slices.Clone(pairedSpecs) }

// PairedFeatures lists the paired features' names, in the order a shared
// pod runs them.
var PairedFeatures = func() []string {
	var names []string
	for _, s := range pairedSpecs {
		names = append(names, s.Name)
	}
	return names
}()

// PairedSpecOf is the named paired feature's definition.
func PairedSpecOf(name string) (PairedSpec, error) {
	for _, s := range pairedSpecs {
		if s.Name == name {
			return s, nil
		}
	}
	return PairedSpec{}, fmt.Errorf("no paired feature %q (have %v)", name, PairedFeatures)
}
