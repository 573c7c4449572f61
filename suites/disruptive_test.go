package suites

import (
	"context"
	"flag"
	"testing"

	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"
	"sigs.k8s.io/e2e-framework/pkg/flags"

	"github.com/rdmasuite/rdmasuite/internal/disrupt"
	"github.com/rdmasuite/rdmasuite/internal/runner"
)

// disruptive is the gate's decision, taken in config() before the run
// namespace exists: a run that selected the feature without
// --allow-disruptive --disrupt-nodes refuses there (exit 2).
var disruptive disrupt.Decision

// disruptiveGate reads e2e-framework's and go test's filters and decides
// whether the disruptive feature runs (disrupt.Gate).
func disruptiveGate() error {
	f := disrupt.Filter{Labels: labelsFlag("labels"), SkipLabels: labelsFlag("skip-labels"),
		Feature: stringFlag("feature"), SkipFeature: stringFlag("skip-features"),
		Assess: stringFlag("assess"), SkipAssess: stringFlag("skip-assessment"),
		TestRun: stringFlag("test.run"), TestSkip: stringFlag("test.skip")}
	d, err := disrupt.Gate(f, *flagAllowDisruptive, runner.SplitList(*flagDisruptNodes))
	disruptive = d
	return err
}

func stringFlag(name string) string {
	if f := flag.Lookup(name); f != nil {
		return f.Value.String()
	}
	return ""
}

func labelsFlag(name string) map[string][]string {
	f := flag.Lookup(name)
	if f == nil {
		return nil
	}
	switch v := f.Value.(type) {
	case *flags.LabelsMap:
		return *v
	case flags.LabelsMap:
		return v
	}
	return nil
}

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
