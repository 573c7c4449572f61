package suites

import (
	"context"
	"testing"

	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	"github.com/rdmasuite/rdmasuite/internal/runner"
	"github.com/rdmasuite/rdmasuite/reports"
)

// variantFeatures builds one feature per pod variant: do produces its
// checks, which are recorded for the report, and every check that fails the
// run (fail, error, a not-run the operator did not allow) fails the
// assessment with its diagnosis, so go test and the report agree.
func variantFeatures(suite, title, check, assess string, do func(context.Context, runner.Variant) []reports.Check) []features.Feature {
	return variantAssessments(suite, title, check, assess, func(ctx context.Context, v runner.Variant) []reports.Check {
		cs := do(ctx, v)
		run.Record(cs...)
		return cs
	})
}

// variantAssessments is variantFeatures for checks already recorded (the
// run's plan records what it measures): it only asserts them.
func variantAssessments(suite, title, check, assess string, do func(context.Context, runner.Variant) []reports.Check) []features.Feature {
	var feats []features.Feature
	for _, v := range run.Cfg.VariantList() {
		feats = append(feats, features.New(featureName(title, v)).
			WithLabel("suite", suite).WithLabel("check", check).WithLabel("variant", v.Name).
			Assess(assess, func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
				defer run.Begin(check, v.Label)()
				assertRecorded(t, do(ctx, v))
				return ctx
			}).Feature())
	}
	return feats
}

// assertChecks records checks and fails t for each one that fails the run.
func assertChecks(t *testing.T, checks []reports.Check) {
	t.Helper()
	run.Record(checks...)
	assertRecorded(t, checks)
}

// assertRecorded fails t for each of checks, already recorded, that fails
// the run.
func assertRecorded(t *testing.T, checks []reports.Check) {
	t.Helper()
	if len(checks) == 0 {
		t.Errorf("the feature produced no check: nothing was measured")
	}
	for _, c := range run.Failing(checks) {
		t.Errorf("%s", runner.Describe([]reports.Check{c}))
	}
}
