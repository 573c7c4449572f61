package runner

import (
	"context"

	corev1 "k8s.io/api/core/v1"

	"github.com/rdmasuite/rdmasuite/internal/verdict"
	"github.com/rdmasuite/rdmasuite/reports"
)

// latencyMemory is the latency feature's pairs: host memory, the probe's
// --latency (ib_write_lat's ping-pong, ib_read_lat's one READ at a time).
var latencyMemory = bwMemory{prefix: "lat", latency: true}

// Latency measures RDMA latency between the variant's nodes: the
// bandwidth feature's pairs (--pairing, every rail, the same pair runner)
// with the probe's --latency at --lat-sizes and --lat-iters, one
// latency/<op> check per rail pair and op of --lat-ops (verdict.Latency),
// judged on perftest's average against the SKU's ceiling. Every selected
// node ends with rows: a failing row when it does not advertise the
// resource, not-run when no pair can be formed.
func (r *Runner) Latency(ctx context.Context, v Variant) []reports.Check {
	return r.pairedChecks(ctx, v, verdict.LatencyPrefix, r.Cfg.LatOps, r.Cfg.LatSizes, latencyMemory, verdict.Latency)
}

// pairedChecks runs a bandwidth-style feature: the bandwidth feature's
// pairs (node selection, rounds, the pair runner) with the probe's
// arguments for mem, one prefix+op check per rail pair and op, judged by
// judge (the bandwidth verdict in one of its modes).
func (r *Runner) pairedChecks(ctx context.Context, v Variant, prefix string, ops []string, sizes []int, mem bwMemory,
	judge func(verdict.BWInput) verdict.BWResult) []reports.Check {
	var ids []string
	for _, op := range ops {
		ids = append(ids, prefix+op)
	}
	with, rounds, out, done := r.pairedNodes(ctx, v, ids, false)
	if done {
		return out
	}
	byName := map[string]corev1.Node{}
	for _, n := range with {
		byName[n.Name] = n
	}
	for _, round := range rounds {
		out = append(out, r.Collect(len(round), func(i int) []reports.Check {
			p := round[i]
			in := verdict.BWInput{Variant: v.Label, Resource: v.Resource, Network: v.Network, Ops: ops,
				Sizes: sizes, RailMode: r.Cfg.RailMode, OneRail: r.Cfg.Device != "" || v.Netdev != ""}
			in.SKU, in.SKUErr = r.Cfg.Thresholds.ForNode(p.Client, byName[p.Client].Labels, r.Cfg.SKU)
			r.runPair(ctx, v, p, &in, mem)
			return judge(in).Checks
		})...)
	}
	return out
}
