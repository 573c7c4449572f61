package runner

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/rdmasuite/rdmasuite/internal/pairing"
	"github.com/rdmasuite/rdmasuite/internal/podrun"
	"github.com/rdmasuite/rdmasuite/internal/verdict"
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
	cfg := r.Cfg.ncclSettings()
	var ids []string
	for _, op := range cfg.GPUDirectOps {
		ids = append(ids, verdict.GPUDirectPrefix+op)
	}
	usable, out, done := r.gpuNodes(ctx, v, ids)
	if done {
		return out
	}
	byName := map[string]corev1.Node{}
	for _, n := range usable {
		byName[n.Name] = n
	}
	nodes := nodeNames(usable)
	rounds, err := pairing.Schedule(nodes, r.Cfg.Pairing)
	if len(nodes) < 2 {
		err = fmt.Errorf("a GPUDirect pair needs at least 2 GPU nodes, have %d", len(nodes))
	}
	if err != nil {
		for _, id := range ids {
			out = append(out, NotRun(id, v.Label, fmt.Sprintf("%v: GPU nodes that advertise %s: %v", err, v.Resource, nodes), nodes...))
		}
		return out
	}
	mem := gpuMemory(cfg)
	for _, round := range rounds {
		out = append(out, r.Collect(len(round), func(i int) []reports.Check {
			p := round[i]
			in := verdict.BWInput{Variant: v.Label, Resource: v.Resource, Network: v.Network, Ops: cfg.GPUDirectOps,
				Sizes: r.Cfg.BWSizes, RailMode: r.Cfg.RailMode, OneRail: r.Cfg.Device != "" || v.Netdev != ""}
			in.SKU, in.SKUErr = r.Cfg.Thresholds.ForNode(p.Client, byName[p.Client].Labels, r.Cfg.SKU)
			r.runPair(ctx, v, p, &in, mem)
			return verdict.GPUDirect(in).Checks
		})...)
	}
	return out
}
