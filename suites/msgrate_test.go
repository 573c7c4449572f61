package suites

import (
	"testing"
)

// TestMsgRate is suite=msgrate (not part of suite=rdma: select it with
// --labels suite=msgrate): perftest's small-message write rate (MsgRate)
// between paired pods on every rail.
func TestMsgRate(t *testing.T) {
	testenv.Test(t, variantFeatures("msgrate", "RDMA message rate between paired pods", "msgrate",
		"every rail of every node reaches its SKU's small-message write rate", run.MsgRate)...)
}
