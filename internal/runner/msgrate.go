package runner

import (
	"context"

	"github.com/rdmasuite/rdmasuite/reports"
)

// msgRateMemory is the message-rate feature's pairs: host memory, small
// writes over several QPs.
var msgRateMemory = bwMemory{prefix: "mps", msgrate: true}

// MsgRate measures small-message RDMA write rate between the variant's
// nodes: the bandwidth feature's pairs (--pairing, every rail, the same
// pair runner) writing --msgrate-sizes over --msgrate-qps QPs, one
// msgrate/write check per rail pair (verdict.MsgRate), judged on
// perftest's MsgRate against the SKU's writeMsgRateMpps. Every selected
// node ends with rows, as in bandwidth.
func (r *Runner) MsgRate(ctx context.Context, v Variant) []reports.Check {
	return r.Paired(ctx, v, PairedMsgRate)
}
