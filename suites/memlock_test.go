package suites

import (
	"testing"
)

// The memlock feature's declaration: registered here, and predicted by
// pairedPlan (a paired session with node pods runs it in them).
const (
	memlockTitle  = "memory registration against the pod memlock limit"
	memlockAssess = "pods on every node can register the required region size"
)

func TestMemlock(t *testing.T) {
	testenv.Test(t, variantFeatures("rdma", memlockTitle, "memlock", memlockAssess, run.Memlock)...)
}
