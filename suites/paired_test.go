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

// pairedDecl declares one paired feature: the Go test it is registered in,
// its suite label, title, check and assessment. The same table registers
// the features (pairedFeatures) and predicts which of them the run
// selected, so that they share one pod pair per node pair (pairedPlan).
type pairedDecl struct {
	test, suite, title, check, assess string
	do                                func(context.Context, runner.Variant) []reports.Check
}

var pairedDecls = map[string]pairedDecl{
	runner.PairedBandwidth: {"TestBandwidth", "rdma", "RDMA bandwidth between paired pods", "bandwidth",
		"every rail of every node reaches its SKU's floor for every op, at the largest requested size",
		func(ctx context.Context, v runner.Variant) []reports.Check { return run.Bandwidth(ctx, v) }},
	runner.PairedLatency: {"TestLatency", "latency", "RDMA latency between paired pods", "latency",
		"every rail of every node stays under its SKU's latency ceiling for every op",
		func(ctx context.Context, v runner.Variant) []reports.Check { return run.Latency(ctx, v) }},
	runner.PairedMsgRate: {"TestMsgRate", "msgrate", "RDMA message rate between paired pods", "msgrate",
		"every rail of every node reaches its SKU's small-message write rate",
		func(ctx context.Context, v runner.Variant) []reports.Check { return run.MsgRate(ctx, v) }},
	runner.PairedGPUDirect: {"TestGPUDirect", "gpu", "GPUDirect RDMA between paired GPU pods", "gpudirect",
		"every rail of every GPU node reaches its SKU's gpuDirectWrite floor from GPU memory, at the largest requested size",
		func(ctx context.Context, v runner.Variant) []reports.Check { return run.GPUDirect(ctx, v) }},
}

// featureName is a variant feature's name (variantFeatures').
func featureName(title string, v runner.Variant) string {
	return fmt.Sprintf("%s (%s, %s)", title, v.Name, v.Resource)
}

// pairedFeatures registers a paired feature for every variant.
func pairedFeatures(name string) []features.Feature {
	d := pairedDecls[name]
	return variantFeatures(d.suite, d.title, d.check, d.assess, d.do)
}

// pairedPlan predicts, per variant, which paired features this run will
// execute: the filters of e2e-framework (cfg) and of go test (-run,
// -skip) applied to the declarations.
func pairedPlan(cfg *envconf.Config, variants []runner.Variant) map[string][]string {
	f := selection.Filter{Feature: cfg.FeatureRegex(), SkipFeature: cfg.SkipFeatureRegex(), Assess: cfg.AssessmentRegex(),
		SkipAssess: cfg.SkipAssessmentRegex(), Labels: cfg.Labels(), SkipLabels: cfg.SkipLabels(),
		Run: lifecycle.FlagValue(flag.CommandLine, "test.run"), Skip: lifecycle.FlagValue(flag.CommandLine, "test.skip")}
	plan := map[string][]string{}
	for _, v := range variants {
		for _, name := range runner.PairedFeatures {
			d := pairedDecls[name]
			x := selection.Feature{Test: d.test, Name: featureName(d.title, v), Assess: d.assess,
				Labels: map[string]string{"suite": d.suite, "check": d.check, "variant": v.Name}}
			if f.Selects(x) {
				plan[v.Label] = append(plan[v.Label], name)
			}
		}
		// Memlock rides in the paired session's node pods when both run
		// (TestMemlock comes after TestBandwidth, TestGPUDirect and
		// TestLatency; with only TestMsgRate after it, it starts its own).
		x := selection.Feature{Test: "TestMemlock", Name: featureName(memlockTitle, v), Assess: memlockAssess,
			Labels: map[string]string{"suite": "rdma", "check": "memlock", "variant": v.Name}}
		if len(plan[v.Label]) > 0 && f.Selects(x) {
			plan[v.Label] = append(plan[v.Label], runner.MemlockRider)
		}
	}
	return plan
}
