package runner

import (
	"context"

	"github.com/rdmasuite/rdmasuite/internal/podrun"
	"github.com/rdmasuite/rdmasuite/reports"
)

// bwMemory is where a bandwidth pair's buffers live, the one thing the
// bandwidth and gpudirect features' pairs differ in (runPair takes it):
// host memory, or GPU memory through the probe's --mem with a GPU
// requested for each pod.
type bwMemory struct {
	prefix  string // pod names: bw-…, gd-…, lat-…
	mem     string // the probe's --mem; "" leaves it out (host memory, and probes older than --mem)
	gpus    int    // nvidia.com/gpu per pod at least (Cfg.GPUs when higher)
	latency bool   // the probe measures latency (--latency), the latency feature's pairs
	msgrate bool   // small writes over --msgrate-qps QPs, the message-rate feature's pairs
}

// hostMemory is the bandwidth feature's.
var hostMemory = bwMemory{prefix: "bw"}

// args are the probe flags for this memory, on both sides.
func (m bwMemory) args() []string {
	var a []string
	if m.mem != "" {
		a = append(a, "--mem", m.mem)
	}
	if m.latency {
		a = append(a, "--latency")
	}
	return a
}

// spec adds the GPUs the memory needs to a probe pod.
func (m bwMemory) spec(s podrun.Spec) podrun.Spec {
	if int64(m.gpus) > s.Resources[GPUResource] {
		s.Resources[GPUResource] = int64(m.gpus)
	}
	return s
}

// gpuMemory is the gpudirect feature's: --mem cuda:auto (the GPU nearest
// each rail) on both sides, a GPU per pod at least.
func gpuMemory(cfg Config) bwMemory {
	return bwMemory{prefix: "gd", mem: cfg.GPUDirectMem, gpus: max(cfg.GPUs, 1)}
}

// GPUDirect measures GPUDirect RDMA between the variant's GPU nodes: the
// bandwidth feature's pairs (--pairing, every rail, --bw-sizes, the same
// pair runner and verdict) with the buffers in GPU memory on both sides,
// judged against the SKU's gpuDirectWrite floor (verdict.GPUDirect), one
// gpudirect/<op> check per rail pair and op of --gpudirect-ops. Every
// selected node ends with rows: not-run for a node without nvidia.com/gpu,
// a failing row for a GPU node without the RDMA resource, not-run when
// fewer than 2 usable nodes remain.
func (r *Runner) GPUDirect(ctx context.Context, v Variant) []reports.Check {
	return r.Paired(ctx, v, PairedGPUDirect)
}
