// Package nodemark records a finished suite run on the nodes it measured
// (--node-annotations, --taint-failed-nodes): each node's last result as
// annotations under rdmasuite.io/ with a valid-until time, as cluster health
// scanners do, so that `kubectl get node -o yaml` tells whether the node
// passed, when, and until when that is worth trusting; and, opt-in, a
// taint on the nodes whose failure is the node's own.
//
// Outcomes. A node is every node of the run (Run.Nodes) and every node a
// check names. It is "fail" when a check that names it failed or errored,
// "pass" when at least one check that names it passed (or warned) and every
// other one passed, warned or is a not-run the operator allowed
// (--allow-not-run), and
// "not-run" otherwise: nothing was measured on it, or not everything asked
// for was. A failing pair check names both of its nodes, so both read
// "fail" with the check (and the partner) in last-failures, whoever is to
// blame.
//
// Warnings. A warn check (reports.Warn: it met its bar, with something
// to look at first) leaves the node's result "pass" and adds a
// last-warnings annotation on the node it points at: the port a peer
// outlier names (reports.VerdictWarnings: a port far below its SKU's
// peers), or every node of another warn check. A warning never taints.
//
// Taints are stricter: only a failure attributable to the node taints it.
// That is a bad-node or bad-port finding of reports.Localize (the node
// failed with every partner it was measured with, at least two), or a
// failed single-node check (memlock/, doctor/ findings, bandwidth/ports)
// on it. A bad-link or inconclusive finding taints nobody: a failing pair
// whose nodes pass elsewhere is the link's fault, and a pair measured with
// one partner only cannot tell a bad node from a bad link. An errored
// single-node check (the check itself broke: an API error, a probe crash)
// is no evidence against the node and taints nothing either. A node that
// passes loses the suite's taint (rdmasuite.io/failed); a node that failed
// without blame, or was not measured, keeps whatever it had. Other taints
// are never touched. The suite's probe pods tolerate every taint, so the
// next run still measures a tainted node and can clear it.
package nodemark

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/rdmasuite/rdmasuite/reports"
)

// Prefix of the suite's annotations and taint key.
const Prefix = "rdmasuite.io/"

// The annotations written on every node of the run.
const (
	// AnnResult is pass, fail or not-run.
	AnnResult = Prefix + "last-result"
	// AnnRun is the run id (results-<run>.json).
	AnnRun = Prefix + "last-run"
	// AnnChecked is when the run finished (RFC 3339, UTC).
	AnnChecked = Prefix + "last-checked"
	// AnnValidUntil is AnnChecked plus --node-mark-valid-for: past it the
	// result is stale (a nightly run that did not happen).
	AnnValidUntil = Prefix + "valid-until"
	// AnnFailures names the failing checks of a failed node, capped at
	// MaxFailures bytes; removed from a node that did not fail.
	AnnFailures = Prefix + "last-failures"
	// AnnWarnings names what a warn check points at on the node (a peer
	// outlier's port, a failure that did not repeat), capped at
	// MaxFailures bytes; removed from a node without a warning. Never a
	// taint.
	AnnWarnings = Prefix + "last-warnings"
)

// TaintKey is the suite's taint (--taint-failed-nodes); its value is the
// run id that set it.
const TaintKey = Prefix + "failed"

// MaxFailures caps AnnFailures (bytes).
const MaxFailures = 1024

// DefaultValidFor is --node-mark-valid-for's default: a nightly run missed
// once already leaves the mark stale.
const DefaultValidFor = 36 * time.Hour

// Outcome of a node in one run.
type Outcome string

const (
	Pass   Outcome = "pass"
	Fail   Outcome = "fail"
	NotRun Outcome = "not-run"
)

// Mark is what one run says about one node.
type Mark struct {
	Node    string
	Outcome Outcome
	// Failures describe the failing checks that name the node, e.g.
	// "bandwidth/write[shared-dev] with node-b".
	Failures []string
	// Blame says why the failure is the node's own (a bad-node or bad-port
	// finding, a failed single-node check); empty when it is not, and then
	// the node is never tainted.
	Blame []string
	// Warnings: the warn checks that point at the node (reports.
	// VerdictWarnings), e.g. "port mlx5_3/1 on node gpu-017 (peer outlier:
	// …)". They never make it fail or taint it.
	Warnings []string
}

// Attributable reports whether the node's failure is its own (taint it).
func (m Mark) Attributable() bool { return m.Outcome == Fail && len(m.Blame) > 0 }

// Compute is every node's mark, sorted by node name.
func Compute(run reports.Run) []Mark {
	marks := map[string]*Mark{}
	at := func(n string) *Mark {
		if marks[n] == nil {
			marks[n] = &Mark{Node: n}
		}
		return marks[n]
	}
	for _, n := range run.Nodes {
		if n.Name != "" {
			at(n.Name)
		}
	}
	type tally struct{ pass, open int }
	t := map[string]*tally{}
	for _, c := range run.Checks {
		for _, n := range distinct(c.Nodes) {
			m := at(n)
			if t[n] == nil {
				t[n] = &tally{}
			}
			switch {
			case c.Status == reports.Fail || c.Status == reports.Error:
				m.Failures = appendNew(m.Failures, describe(c, n))
			case c.Status.Passing(): // pass or warn
				t[n].pass++
			case !run.Allowed(c):
				t[n].open++
			}
		}
	}
	for n, m := range marks {
		switch {
		case len(m.Failures) > 0:
			m.Outcome = Fail
		case t[n] != nil && t[n].pass > 0 && t[n].open == 0:
			m.Outcome = Pass
		default:
			m.Outcome = NotRun
		}
	}
	for _, f := range reports.Localize(run) {
		if f.Kind != reports.BadNode && f.Kind != reports.BadPort {
			continue
		}
		why := string(f.Kind)
		if f.Variant != "" {
			why += "[" + f.Variant + "]"
		}
		if f.Kind == reports.BadPort && f.Rail != "" {
			why += " " + f.Rail
		}
		for _, n := range f.Nodes {
			if m := marks[n]; m != nil && m.Outcome == Fail {
				m.Blame = appendNew(m.Blame, why)
			}
		}
	}
	for _, w := range reports.VerdictWarnings(run) {
		for _, n := range distinct(w.Nodes) {
			m := at(n)
			m.Warnings = appendNew(m.Warnings, w.Text(true))
			if m.Outcome == "" {
				m.Outcome = NotRun
			}
		}
	}
	for _, c := range run.Checks {
		ns := distinct(c.Nodes)
		if c.Status != reports.Fail || len(ns) != 1 || !SingleNode(c.ID) {
			continue
		}
		if m := marks[ns[0]]; m != nil {
			m.Blame = appendNew(m.Blame, describe(c, ns[0]))
		}
	}
	out := make([]Mark, 0, len(marks))
	for _, m := range marks {
		out = append(out, *m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Node < out[j].Node })
	return out
}

// SingleNode reports whether check id is measured on one node alone, so
// that its failure is that node's: memlock, the doctor's per-node
// findings, the port count of bandwidth/ports.
func SingleNode(id string) bool {
	return id == "memlock" || strings.HasPrefix(id, "memlock/") || strings.HasPrefix(id, "doctor/") || id == "bandwidth/ports"
}

// Annotations are the node's annotations after run, valid for validFor:
// a nil value removes the key (AnnFailures of a node that did not fail).
func (m Mark) Annotations(run reports.Run, validFor time.Duration) map[string]*string {
	finished := run.Finished.UTC().Truncate(time.Second)
	str := func(s string) *string { return &s }
	a := map[string]*string{
		AnnResult:     str(string(m.Outcome)),
		AnnRun:        str(run.RunID),
		AnnChecked:    str(finished.Format(time.RFC3339)),
		AnnValidUntil: str(finished.Add(validFor).Format(time.RFC3339)),
		AnnFailures:   nil,
		AnnWarnings:   nil,
	}
	if m.Outcome == Fail {
		a[AnnFailures] = str(Capped(m.Failures, MaxFailures))
	}
	if len(m.Warnings) > 0 {
		a[AnnWarnings] = str(Capped(m.Warnings, MaxFailures))
	}
	return a
}

// Capped joins items with "; " in at most max bytes, ending with
// "; … N more" when some were left off.
func Capped(items []string, max int) string {
	var b strings.Builder
	for i, s := range items {
		sep := ""
		if i > 0 {
			sep = "; "
		}
		rest := ""
		if i < len(items)-1 {
			rest = fmt.Sprintf("; … %d more", len(items)-1-i)
		}
		// Room for this one and, should more follow, the count of the rest.
		if b.Len()+len(sep)+len(s)+len(rest) > max {
			more := fmt.Sprintf("… %d more", len(items)-i)
			if b.Len() > 0 {
				more = "; " + more
			}
			if b.Len()+len(more) > max {
				return truncate(b.String()+more, max)
			}
			return b.String() + more
		}
		b.WriteString(sep + s)
	}
	return b.String()
}

// truncate cuts s to at most max bytes on a rune boundary.
func truncate(s string, max int) string {
	if len(s) <= max {
		return s
	}
	for i := max; i > 0; i-- {
		if s[i]&0xC0 != 0x80 { // not a continuation byte: a rune starts here
			return s[:i]
		}
	}
	return ""
}

// describe names check c as seen from node n: id, [variant], {rail},
// "with" the other nodes, and "(error)" when it errored.
func describe(c reports.Check, n string) string {
	s := c.ID
	if c.Variant != "" {
		s += "[" + c.Variant + "]"
	}
	if c.Rail != "" {
		s += "{" + c.Rail + "}"
	}
	var others []string
	for _, o := range distinct(c.Nodes) {
		if o != n {
			others = append(others, o)
		}
	}
	switch {
	case len(others) > 3:
		s += fmt.Sprintf(" with %d nodes", len(others))
	case len(others) > 0:
		s += " with " + strings.Join(others, ",")
	}
	if c.Status == reports.Error {
		s += " (error)"
	}
	return s
}

func distinct(ns []string) []string {
	var out []string
	for _, n := range ns {
		if n != "" && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

func appendNew(ss []string, s string) []string {
	if slices.Contains(ss, s) {
		return ss
	}
	return append(ss, s)
}
