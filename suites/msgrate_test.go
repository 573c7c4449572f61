package suites

import (
	"testing"

	"github.com/rdmasuite/rdmasuite/internal/runner"
)

// TestMsgRate is suite=msgrate (not part of suite=rdma: select it with
// --labels suite=msgrate): perftest's small-message write rate (MsgRate)
// between paired pods on every rail.
func TestMsgRate(t *testing.T) {
	testenv.Test(t, pairedFeatures(runner.PairedMsgRate)...)
}
