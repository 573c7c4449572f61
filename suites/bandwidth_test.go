package suites

import (
	"testing"
)

func TestBandwidth(t *testing.T) {
	testenv.Test(t, variantFeatures("rdma", "RDMA bandwidth between paired pods", "bandwidth",
		"every rail of every node reaches its SKU's floor for every op, at the largest requested size", run.Bandwidth)...)
}
