package suites

import (
	"testing"

	"github.com/rdmasuite/rdmasuite/internal/runner"
)

// TestGPUDirect runs the bandwidth pairs with GPU memory on both sides
// (GPUDirect RDMA, --mem cuda:auto). Label suite=gpu selects it with nccl.
func TestGPUDirect(t *testing.T) {
	testenv.Test(t, pairedFeatures(runner.PairedGPUDirect)...)
}
