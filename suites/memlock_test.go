package suites

import (
	"testing"
)

func TestMemlock(t *testing.T) {
	testenv.Test(t, variantFeatures("rdma", "memory registration against the pod memlock limit", "memlock",
		"pods on every node can register the required region size", run.Memlock)...)
}
