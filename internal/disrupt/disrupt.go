// Package disrupt is the disruptive feature (seed 000): it restarts the
// NVIDIA Network Operator's MOFED/DOCA driver pod on chosen nodes, one node
// at a time, while `rdmaprobe stall write` writers on that node and on a
// peer keep writing to an NFS volume, and judges how long NFS I/O stalled
// and whether any acknowledged record was lost. It holds the gate that keeps
// the feature out of every run that did not ask for it, the volume checks,
// the MOFED pod handling, the orchestration against a kubernetes.Interface
// and the pure judging function.
package disrupt

import (
	"fmt"
	"regexp"
	"strings"
)

// Check ids.
const (
	// CheckStall is the target node's writer: how long NFS I/O stalled
	// while the node's MOFED driver restarted, and whether data survived.
	CheckStall = "disruptive/nfs-stall"
	// CheckPeer is the peer node's writer on the same volume, a node whose
	// driver was not restarted.
	CheckPeer = "disruptive/nfs-stall-peer"
)

// The feature as the suites declare it; the gate mirrors e2e-framework's
// filters against these.
const (
	FeatureName    = "MOFED driver restart vs NFS-over-RDMA I/O"
	AssessmentName = "NFS I/O resumes within the SKU's stall limit and no acknowledged record is lost"
	TestName       = "TestDisruptive"
)

// FeatureLabels are the feature's e2e-framework labels.
var FeatureLabels = map[string][]string{"suite": {"disruptive"}, "check": {"nfs-stall"}}

// EnableHint is the one line a run that selected the feature without the
// flags that allow it refuses with.
const EnableHint = "the disruptive feature restarts the MOFED driver on nodes: add --allow-disruptive --disrupt-nodes=NODE[,NODE] to run it"

// Filter is what the operator gave e2e-framework and go test to select
// features: --labels, --skip-labels, --feature, --skip-features, --assess,
// --skip-assessment, -test.run and -test.skip.
type Filter struct {
	Labels, SkipLabels   map[string][]string
	Feature, SkipFeature string
	Assess, SkipAssess   string
	TestRun, TestSkip    string
}

// Decision is the gate's answer: Run, or why the feature stays silent.
type Decision struct {
	Run bool
	Why string
}

// Gate decides whether the disruptive feature runs. Destroying I/O is
// never a default:
//   - filters that leave the feature out: it does not run, nothing said;
//   - the feature would run and --allow-disruptive with --disrupt-nodes
//     were given: it runs;
//   - the operator selected it (--labels, --feature or -run narrowed the
//     run and it still matches) or gave --allow-disruptive, without both
//     flags: the run refuses at start with EnableHint (exit 2);
//   - no filter at all (every feature runs) and no --allow-disruptive: it
//     is skipped and records nothing, so a default run neither disrupts a
//     node nor fails for a feature nobody asked for.
func Gate(f Filter, allow bool, nodes []string) (Decision, error) {
	if !Matches(f) {
		return Decision{Why: "not selected by --labels / --feature / -run"}, nil
	}
	if allow && len(nodes) > 0 {
		return Decision{Run: true}, nil
	}
	if allow {
		return Decision{}, fmt.Errorf("--allow-disruptive without --disrupt-nodes: %s", EnableHint)
	}
	if Narrowed(f) {
		return Decision{}, fmt.Errorf("%s", EnableHint)
	}
	return Decision{Why: "skipped: " + EnableHint + " (a run without filters never disrupts)"}, nil
}

// Narrowed reports whether the operator filtered the run at all.
func Narrowed(f Filter) bool {
	return len(f.Labels) > 0 || f.Feature != "" || f.Assess != "" || f.TestRun != ""
}

// Matches mirrors e2e-framework's feature filter (and go test's -run/-skip
// on the top-level test) for the disruptive feature. A pattern that does
// not compile matches nothing (go test refuses it anyway).
func Matches(f Filter) bool {
	match := func(pattern, name string, empty bool) bool {
		if pattern == "" {
			return empty
		}
		re, err := regexp.Compile(pattern)
		return err == nil && re.MatchString(name)
	}
	first := func(p string) string { return strings.SplitN(p, "/", 2)[0] }
	switch {
	case !match(first(f.TestRun), TestName, true), match(first(f.TestSkip), TestName, false):
		return false
	case !match(f.Feature, FeatureName, true), match(f.SkipFeature, FeatureName, false):
		return false
	case !match(f.Assess, AssessmentName, true), match(f.SkipAssess, AssessmentName, false):
		return false
	}
	for key, vals := range f.Labels {
		if !anyLabel(key, vals) {
			return false
		}
	}
	for key, vals := range f.SkipLabels {
		if anyLabel(key, vals) {
			return false
		}
	}
	return true
}

func anyLabel(key string, vals []string) bool {
	for _, v := range vals {
		for _, have := range FeatureLabels[key] {
			if v == have {
				return true
			}
		}
	}
	return false
}
