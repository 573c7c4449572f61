// Package selection says which suite features a run selected, from the
// same filters e2e-framework and go test apply (--feature, --skip-
// features, --assess, --skip-assessment, --labels, --skip-labels, -run,
// -skip), so the run's plan can schedule the work several features share
// (one pod pair per node pair for every paired feature) before any of
// them starts. It matches -run and -skip on the top-level test only: a
// feature selected here that a subtest pattern then skips was still
// measured and recorded by the plan, and one the plan lacks runs in pods
// of its own when it asks (runner.Paired) and says so.
package selection

import "regexp"

// Filter is a run's feature filters.
type Filter struct {
	// e2e-framework's: feature and assessment name patterns (nil: none).
	Feature, SkipFeature, Assess, SkipAssess *regexp.Regexp
	// Labels: a feature runs when, for every key, one of the values is
	// among its labels; SkipLabels: it is skipped when any matches.
	Labels, SkipLabels map[string][]string
	// go test's -run and -skip (their first, top-level element is
	// matched against the test function's name; "" is none).
	Run, Skip string
}

// Feature is one declared feature: the Go test function it is registered
// in, its name, labels and its assessment's name.
type Feature struct {
	Test, Name, Assess string
	Labels             map[string]string
}

// Selects reports whether the run will execute f's assessment.
func (f Filter) Selects(x Feature) bool {
	if !topLevelMatch(f.Run, x.Test, true) || topLevelMatch(f.Skip, x.Test, false) {
		return false
	}
	if f.Feature != nil && !f.Feature.MatchString(x.Name) || f.SkipFeature != nil && f.SkipFeature.MatchString(x.Name) {
		return false
	}
	for key, vals := range f.Labels {
		found := false
		for _, v := range vals {
			if x.Labels[key] == v {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	for key, vals := range f.SkipLabels {
		for _, v := range vals {
			if x.Labels[key] == v {
				return false
			}
		}
	}
	if f.Assess != nil && !f.Assess.MatchString(x.Assess) || f.SkipAssess != nil && f.SkipAssess.MatchString(x.Assess) {
		return false
	}
	return true
}

// topLevelMatch matches the first element of a go test -run/-skip
// pattern (up to a '/' outside brackets and parentheses) against a
// top-level test name; an empty pattern, or one that does not compile (go
// test refuses it before any test runs), gives def.
func topLevelMatch(pattern, test string, def bool) bool {
	if pattern == "" {
		return def
	}
	first, depth := pattern, 0
scan:
	for i, c := range pattern {
		switch c {
		case '[', '(':
			depth++
		case ']', ')':
			depth--
		case '/':
			if depth == 0 {
				first = pattern[:i]
				break scan
			}
		}
	}
	re, err := regexp.Compile(first)
	if err != nil {
		return def
	}
	return re.MatchString(test)
}
