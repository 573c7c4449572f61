package runner

import (
	"context"

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
	return r.Paired(ctx, v, PairedLatency)
}
