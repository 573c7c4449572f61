package suites

import (
	"context"
	"testing"

	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	"github.com/rdmasuite/rdmasuite/internal/disrupt"
)

// TestDisruptive restarts the MOFED driver pod on each of --disrupt-nodes
// while writers on that node and on a peer write to the NFS volume behind
// --stall-pvc, and judges the stall and the data (internal/disrupt). It
// runs only with --allow-disruptive and --disrupt-nodes; a run without
// filters skips it without a check, a run that selects it without them
// refuses at start.
func TestDisruptive(t *testing.T) {
	if !disruptive.Run {
		t.Skip(disruptive.Why)
	}
	b := features.New(disrupt.FeatureName)
	for k, vs := range disrupt.FeatureLabels {
		for _, v := range vs {
			b = b.WithLabel(k, v)
		}
	}
	f := b.Assess(disrupt.AssessmentName, func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		defer run.Begin("disruptive", "")()
		exec := disrupt.RemoteExec{Config: cfg.Client().RESTConfig(), Kube: kube}
		assertChecks(t, run.Disruptive(ctx, exec))
		return ctx
	}).Feature()
	testenv.Test(t, f)
}
