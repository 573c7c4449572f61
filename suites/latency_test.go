package suites

import (
	"testing"

	"github.com/rdmasuite/rdmasuite/internal/runner"
)

// TestLatency is suite=latency (not part of suite=rdma: select it with
// --labels suite=latency): ib_write_lat / ib_read_lat / ib_send_lat
// equivalents between paired pods on every rail.
func TestLatency(t *testing.T) {
	testenv.Test(t, pairedFeatures(runner.PairedLatency)...)
}
