package suites

import (
	"testing"
)

// TestGPUDirect runs the bandwidth pairs with GPU memory on both sides
// (GPUDirect RDMA, --mem cuda:auto). Label suite=gpu selects it with nccl.
func TestGPUDirect(t *testing.T) {
	testenv.Test(t, variantFeatures("gpu", "GPUDirect RDMA between paired GPU pods", "gpudirect",
		"every rail of every GPU node reaches its SKU's gpuDirectWrite floor from GPU memory, at the largest requested size", run.GPUDirect)...)
}
