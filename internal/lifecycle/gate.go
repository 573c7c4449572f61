package lifecycle

import (
	"flag"

	"sigs.k8s.io/e2e-framework/pkg/flags"

	"github.com/rdmasuite/rdmasuite/internal/disrupt"
	"github.com/rdmasuite/rdmasuite/internal/runner"
)

// DisruptiveGate reads e2e-framework's and go test's filters on fs and
// decides whether the disruptive feature runs (disrupt.Gate): a run that
// selected it without --allow-disruptive --disrupt-nodes is refused before
// the run namespace exists.
func (f *Flags) DisruptiveGate(fs *flag.FlagSet) (disrupt.Decision, error) {
	filter := disrupt.Filter{Labels: labelsFlag(fs, "labels"), SkipLabels: labelsFlag(fs, "skip-labels"),
		Feature: FlagValue(fs, "feature"), SkipFeature: FlagValue(fs, "skip-features"),
		Assess: FlagValue(fs, "assess"), SkipAssess: FlagValue(fs, "skip-assessment"),
		TestRun: FlagValue(fs, "test.run"), TestSkip: FlagValue(fs, "test.skip")}
	return disrupt.Gate(filter, *f.AllowDisruptive, runner.SplitList(*f.DisruptNodes))
}

// FlagValue is the value of fs's flag name as given ("" when undefined).
func FlagValue(fs *flag.FlagSet, name string) string {
	if f := fs.Lookup(name); f != nil {
		return f.Value.String()
	}
	return ""
}

func labelsFlag(fs *flag.FlagSet, name string) map[string][]string {
	f := fs.Lookup(name)
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
