package suites

import (
	"context"
	"fmt"
	"testing"

	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	"github.com/rdmasuite/rdmasuite/internal/runner"
	"github.com/rdmasuite/rdmasuite/reports"
)

// TestNCCL runs NCCL collectives (nccl-tests semantics, no MPI) over
// worlds of GPU nodes, one rank per node: every pair and the whole set.
// Label suite=gpu selects it with gpudirect.
func TestNCCL(t *testing.T) {
	testenv.Test(t, gpuFeatures("NCCL collectives across GPU nodes", "nccl",
		"every world's collectives are measured at every size with correct data, all_reduce meets its SKU's floor, and NCCL used RDMA", run.NCCL)...)
}

// gpuFeatures is variantFeatures for the GPU features (suite=gpu): one
// feature per pod variant whose checks are recorded and fail the
// assessment when they fail the run.
func gpuFeatures(title, check, assess string, do func(context.Context, runner.Variant) []reports.Check) []features.Feature {
	var feats []features.Feature
	for _, v := range run.Cfg.VariantList() {
		feats = append(feats, features.New(fmt.Sprintf("%s (%s, %s)", title, v.Name, v.Resource)).
			WithLabel("suite", "gpu").WithLabel("check", check).WithLabel("variant", v.Name).
			Assess(assess, func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
				assertChecks(t, do(ctx, v))
				return ctx
			}).Feature())
	}
	return feats
}
