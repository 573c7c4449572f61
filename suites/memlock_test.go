package suites

import (
	"testing"
)

// The memlock feature's declaration: registered here, and read by
// selected (the run's plan runs it in the paired features' node pods when
// both are selected).
const (
	memlockTitle  = "memory registration against the pod memlock limit"
	memlockAssess = "pods on every node can register the required region size"
)

func TestMemlock(t *testing.T) {
	testenv.Test(t, variantFeatures("rdma", memlockTitle, "memlock", memlockAssess, run.Memlock)...)
}
