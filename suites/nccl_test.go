package suites

import (
	"testing"
)

// TestNCCL runs NCCL collectives (nccl-tests semantics, no MPI) over
// worlds of GPU nodes, one rank per node: every pair and the whole set.
// Label suite=gpu selects it with gpudirect.
func TestNCCL(t *testing.T) {
	testenv.Test(t, variantFeatures("gpu", "NCCL collectives across GPU nodes", "nccl",
		"every world's collectives are measured at every size with correct data, all_reduce meets its SKU's floor, and NCCL used RDMA", run.NCCL)...)
}
