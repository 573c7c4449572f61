package suites

import (
	"testing"

	"github.com/rdmasuite/rdmasuite/internal/runner"
)

// TestLatencyUnderLoad is suite=latency-load (not part of suite=rdma or
// suite=latency: select it with --labels suite=latency-load): ib_write_lat between paired pods
// on every rail, alone and while the same rails carry an ib_write_bw-like
// stream, judged against the SKU's latencyUnderLoadFactor.
func TestLatencyUnderLoad(t *testing.T) {
	testenv.Test(t, pairedFeatures(runner.PairedLatencyLoad)...)
}
