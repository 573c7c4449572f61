package suites

import (
	"testing"
)

// TestLatency is suite=latency (not part of suite=rdma: select it with
// --labels suite=latency): ib_write_lat / ib_read_lat / ib_send_lat
// equivalents between paired pods on every rail.
func TestLatency(t *testing.T) {
	testenv.Test(t, variantFeatures("latency", "RDMA latency between paired pods", "latency",
		"every rail of every node stays under its SKU's latency ceiling for every op", run.Latency)...)
}
