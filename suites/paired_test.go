package suites

import (
	"context"
	"flag"
	"fmt"

	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	"github.com/rdmasuite/rdmasuite/internal/lifecycle"
	"github.com/rdmasuite/rdmasuite/internal/runner"
	"github.com/rdmasuite/rdmasuite/internal/selection"
	"github.com/rdmasuite/rdmasuite/reports"
)

// featureName is a variant feature's name (variantFeatures').
func featureName(title string, v runner.Variant) string {
	return fmt.Sprintf("%s (%s, %s)", title, v.Name, v.Resource)
}

// pairedFeatures declares a paired feature, as its definition
// (runner.PairedSpec) says, for every variant: it asserts the checks the
// run's plan measured and recorded for it (runner.Paired).
func pairedFeatures(name string) []features.Feature {
	d, err := runner.PairedSpecOf(name)
	if err != nil {
		panic(err) // a suite file names a feature the registry lacks
	}
	return variantAssessments(d.Suite, d.Title, d.Name, d.Assess, func(ctx context.Context, v runner.Variant) []reports.Check {
		return run.Paired(ctx, v, d.Name)
	})
}

// selected says, per variant, which features of the run's plan (the
// paired ones and memlock) this run selected: the filters of
// e2e-framework (cfg) and of go test (-run, -skip) applied to their
// declarations.
func selected(cfg *envconf.Config, variants []runner.Variant) map[string][]string {
	f := selection.Filter{Feature: cfg.FeatureRegex(), SkipFeature: cfg.SkipFeatureRegex(), Assess: cfg.AssessmentRegex(),
		SkipAssess: cfg.SkipAssessmentRegex(), Labels: cfg.Labels(), SkipLabels: cfg.SkipLabels(),
		Run: lifecycle.FlagValue(flag.CommandLine, "test.run"), Skip: lifecycle.FlagValue(flag.CommandLine, "test.skip")}
	plan := map[string][]string{}
	for _, v := range variants {
		for _, d := range runner.PairedSpecs() {
			x := selection.Feature{Test: d.Test, Name: featureName(d.Title, v), Assess: d.Assess,
				Labels: map[string]string{"suite": d.Suite, "check": d.Name, "variant": v.Name}}
			if f.Selects(x) {
				plan[v.Label] = append(plan[v.Label], d.Name)
			}
		}
		// Memlock runs in the paired features' node pods when both are
		// selected (the plan runs before every feature).
		x := selection.Feature{Test: "TestMemlock", Name: featureName(memlockTitle, v), Assess: memlockAssess,
			Labels: map[string]string{"suite": "rdma", "check": runner.MemlockFeature, "variant": v.Name}}
		if len(plan[v.Label]) > 0 && f.Selects(x) {
			plan[v.Label] = append(plan[v.Label], runner.MemlockFeature)
		}
	}
	return plan
}
