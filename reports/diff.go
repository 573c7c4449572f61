package reports

import (
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strings"
	"time"
)

// Delta is one row of a baseline diff: a measurement on one node and port
// (Name set), or a status change of a check on one node and rail (Name "",
// BaseStatus/NowStatus set).
type Delta struct {
	Check           string // id[variant]{rail}
	Node            string // the measuring node (Measurement.Node, else the check's first node)
	Port            string
	Name            string // measurement name; "" for a status row
	Unit            string
	Base, Now       float64
	HasBase, HasNow bool
	// Pct is the relative change in percent; 0 when Base is 0 or either
	// side is unlimited (see Note).
	Pct                   float64
	BaseStatus, NowStatus Status // status rows only
	Regression            bool
	// Improved: better than the baseline beyond the tolerance.
	Improved bool
	Note     string
}

// DeltaKind is what a diff row means to the operator, in the order a diff
// lists them: what to act on first, then what got better, then what only
// informs (folded unless asked for).
type DeltaKind int

const (
	KindWorse      DeltaKind = iota // a value worse than the baseline beyond the tolerance
	KindNewFailure                  // a status that left pass, or a new check or value that fails
	KindVanished                    // a value or check of a node still in the run that is gone
	KindImproved                    // better beyond the tolerance, or a status back to pass (or to warn from a failure)
	KindWarned                      // a pass that now warns: still passing, worth a look first
	KindUnchanged                   // within the tolerance, same status
	KindNew                         // new in this run and not failing
	KindLeft                        // of a node that is not in this run: not compared
	kindCount
)

// kindNames name the kinds in headlines and rows.
var kindNames = [kindCount]string{"worse", "new failure(s)", "vanished", "improved", "now warn", "unchanged", "new", "of a node that left"}

func (k DeltaKind) String() string { return kindNames[k] }

// Folded: rows of this kind are one count line unless every row is asked
// for (--all).
func (k DeltaKind) Folded() bool { return k >= KindUnchanged }

// Kind classifies the row.
func (x Delta) Kind() DeltaKind {
	status := x.Name == ""
	switch {
	case x.Regression && status && x.NowStatus == "":
		return KindVanished
	case x.Regression && status:
		return KindNewFailure
	case x.Regression && !x.HasBase:
		return KindNewFailure
	case x.Regression && !x.HasNow:
		return KindVanished
	case x.Regression:
		return KindWorse
	case x.Improved, status && x.NowStatus.Passing() && x.BaseStatus != "" && statusRank[x.BaseStatus] > statusRank[x.NowStatus]:
		return KindImproved
	case status && x.NowStatus == Warn && x.BaseStatus == Pass:
		return KindWarned
	case !status && x.HasBase && !x.HasNow, status && x.NowStatus == "":
		return KindLeft
	case !status && !x.HasBase:
		return KindNew
	}
	return KindUnchanged
}

// Counts are the rows per kind.
func (d DiffResult) Counts() [kindCount]int {
	var n [kindCount]int
	for _, x := range d.Deltas {
		n[x.Kind()]++
	}
	return n
}

// Headline is the comparison in one line: the regressions with their
// kinds, then what improved and what only informs.
func (d DiffResult) Headline() string {
	if why := d.NothingCompared(); why != "" {
		return why
	}
	n := d.Counts()
	var worse []string
	for _, k := range []DeltaKind{KindWorse, KindNewFailure, KindVanished} {
		if n[k] > 0 {
			worse = append(worse, fmt.Sprintf("%d %s", n[k], k))
		}
	}
	head := "no regression against the baseline"
	if r := d.Regressions(); r > 0 {
		head = fmt.Sprintf("%d regression(s) against the baseline (%s)", r, strings.Join(worse, ", "))
	}
	var rest []string
	for _, k := range []DeltaKind{KindImproved, KindWarned, KindUnchanged, KindNew, KindLeft} {
		if n[k] > 0 {
			rest = append(rest, fmt.Sprintf("%d %s", n[k], k))
		}
	}
	if len(rest) > 0 {
		head += "; " + strings.Join(rest, ", ")
	}
	return head
}

// Ordered are the rows in the order a diff lists them: by kind (DeltaKind),
// then as Deltas has them (check, node, port, measurement).
func (d DiffResult) Ordered() []Delta {
	out := slices.Clone(d.Deltas)
	sort.SliceStable(out, func(i, j int) bool { return out[i].Kind() < out[j].Kind() })
	return out
}

// DiffResult is a baseline comparison. Deltas are sorted by check, node,
// port and name. NoCommonNodes is set when the two runs share no node: then
// nothing is compared (Deltas is empty) and that is not a regression by
// itself, but DiffTable says so instead of printing rows. OnlyInBase and
// OnlyInRun list the nodes one run has and the other lacks; values of a
// node that left are shown, not counted as regressions.
type DiffResult struct {
	Deltas        []Delta
	NoCommonNodes bool
	OnlyInBase    []string
	OnlyInRun     []string
	// Compared counts the baseline's values and checks found in this run
	// and compared; 0 means the diff proved nothing (NothingCompared).
	Compared int
	// Warnings are what the reader must know about the baseline itself
	// (CheckBaseline's), shown under the headline.
	Warnings []string
}

// NothingCompared says why the diff compared nothing, "" when it compared
// something. A comparison of nothing is never a green baseline: the
// report exits ExitRegression and JUnit's baseline case fails.
func (d DiffResult) NothingCompared() string {
	switch {
	case d.NoCommonNodes:
		return fmt.Sprintf("the baseline and this run share no node (baseline: %s; this run: %s): nothing was compared — is it the right baseline, or were the nodes renamed?",
			NodeList(d.OnlyInBase), NodeList(d.OnlyInRun))
	case d.Compared == 0:
		return "no check of the baseline is in this run (same id, variant, node and rail): nothing was compared — did the run select other checks than the baseline's?"
	}
	return ""
}

// Regressions counts the deltas that are regressions.
func (d DiffResult) Regressions() int {
	n := 0
	for _, x := range d.Deltas {
		if x.Regression {
			n++
		}
	}
	return n
}

// nodesOf is every node a run names: its node list, its checks' nodes and
// its measurements' nodes.
func nodesOf(r Run) map[string]bool {
	m := map[string]bool{}
	for _, n := range r.Nodes {
		m[n.Name] = true
	}
	for _, c := range r.Checks {
		for _, n := range c.Nodes {
			m[n] = true
		}
		for _, x := range c.Measured {
			if x.Node != "" {
				m[x.Node] = true
			}
		}
	}
	delete(m, "")
	return m
}

func firstNode(c Check) string {
	if len(c.Nodes) > 0 {
		return c.Nodes[0]
	}
	return ""
}

func idLabel(c Check) string {
	k := c.ID
	if c.Variant != "" {
		k += "[" + c.Variant + "]"
	}
	return k
}

// statusKey matches a check's status across runs per node and rail, whatever
// the pairing: the check's first node is its measuring side.
type statusKey struct{ id, variant, node, rail string }

// measKey matches one value across runs.
type measKey struct{ id, variant, node, port, name string }

type statusAgg struct {
	worst     Status
	unallowed bool // some check is neither pass nor an allowed not-run
	label     string
}

// statusRank orders statuses from best to worst: a check's worst status
// stands for it; a warn is worse than a pass and still passing.
var statusRank = map[Status]int{Pass: 0, Warn: 1, NotRun: 2, Fail: 3, Error: 4}

func statuses(r Run) map[statusKey]*statusAgg {
	out := map[statusKey]*statusAgg{}
	for _, c := range r.Checks {
		k := statusKey{c.ID, c.Variant, firstNode(c), c.Rail}
		a := out[k]
		if a == nil {
			a = &statusAgg{worst: Pass, label: idLabel(c)}
			if c.Rail != "" {
				a.label += "{" + c.Rail + "}"
			}
			out[k] = a
		}
		if statusRank[c.Status] > statusRank[a.worst] {
			a.worst = c.Status
		}
		if !c.Status.Passing() && !r.Allowed(c) {
			a.unallowed = true
		}
	}
	return out
}

type measVal struct {
	m     Measurement
	label string
	skey  statusKey
}

func measurements(r Run) (map[measKey]measVal, []measKey) {
	out := map[measKey]measVal{}
	var order []measKey
	for _, c := range r.Checks {
		// A transient's one-off figure did not repeat: its confirmation's
		// figures stand for the port.
		if c.transient() {
			continue
		}
		label := idLabel(c)
		if c.Rail != "" {
			label += "{" + c.Rail + "}"
		}
		for _, m := range c.Measured {
			node := m.Node
			if node == "" {
				node = firstNode(c)
			}
			k := measKey{c.ID, c.Variant, node, m.Port, m.Name}
			v := measVal{m, label, statusKey{c.ID, c.Variant, firstNode(c), c.Rail}}
			if prev, dup := out[k]; dup {
				// One node and port measured against several peers (pairing
				// all, cross rails): the worst value stands for the key, so
				// one bad path cannot hide behind a good one.
				if worse(m, prev.m) {
					out[k] = v
				}
				continue
			}
			out[k] = v
			order = append(order, k)
		}
	}
	return out, order
}

// Diff compares run with base. Values match per (check id, variant,
// measuring node, port, measurement name), so re-pairing nodes (a ring
// that gained a node) still compares each node's own numbers; statuses
// match per (check id, variant, first node, rail).
//
// Regressions: a value worse than the baseline by more than tolerance (a
// fraction, e.g. 0.05; lower is better for values judged with "<=" and for
// latencies (UnitMicroseconds), judged or not; in
// "bytes", -1 is unlimited and better than any finite value); a status that
// went from pass to anything else; a value of a node still in the run that
// disappeared; a new value (no baseline) that fails its threshold ("new,
// under floor" / "new, over ceiling"); a new check that is neither pass nor
// an allowed not-run and has no such value. When the runs share no node,
// nothing is compared (NoCommonNodes).
func Diff(base, run Run, tolerance float64) DiffResult {
	var res DiffResult
	bn, rn := nodesOf(base), nodesOf(run)
	common := 0
	for n := range bn {
		if rn[n] {
			common++
		} else {
			res.OnlyInBase = append(res.OnlyInBase, n)
		}
	}
	for n := range rn {
		if !bn[n] {
			res.OnlyInRun = append(res.OnlyInRun, n)
		}
	}
	sort.Strings(res.OnlyInBase)
	sort.Strings(res.OnlyInRun)
	if common == 0 {
		res.NoCommonNodes = true
		return res
	}

	baseM, _ := measurements(base)
	nowM, nowOrder := measurements(run)
	flaggedNew := map[statusKey]bool{}
	for _, k := range nowOrder {
		v := nowM[k]
		m := v.m
		d := Delta{Check: v.label, Node: k.node, Port: k.port, Name: k.name, Unit: m.Unit, Now: m.Value, HasNow: true}
		b, ok := baseM[k]
		if !ok {
			d.Note = "new"
			if t := m.Threshold; t != nil && !meets(m.Value, m.Unit, *t) {
				d.Regression, d.Note = true, "new, under floor"
				if t.Op == "<=" {
					d.Note = "new, over ceiling"
				}
				flaggedNew[v.skey] = true
			}
			res.Deltas = append(res.Deltas, d)
			continue
		}
		d.Base, d.HasBase = b.m.Value, true
		res.Compared++
		t := m.Threshold
		if t == nil {
			t = b.m.Threshold
		}
		compare(&d, (t != nil && t.Op == "<=") || m.Unit == UnitMicroseconds, tolerance)
		res.Deltas = append(res.Deltas, d)
	}
	for k, b := range baseM {
		if _, ok := nowM[k]; ok {
			continue
		}
		d := Delta{Check: b.label, Node: k.node, Port: k.port, Name: k.name, Unit: b.m.Unit, Base: b.m.Value, HasBase: true}
		if rn[k.node] {
			d.Regression, d.Note = true, "missing in this run"
		} else {
			d.Note = "node not in this run"
		}
		res.Deltas = append(res.Deltas, d)
	}

	baseS, nowS := statuses(base), statuses(run)
	// A baseline check whose values are gone is already a row; one that
	// had none (a doctor row, a rail that failed before measuring) is
	// named here: a regression if its node is still in the run.
	withValues := map[statusKey]bool{}
	for _, b := range baseM {
		withValues[b.skey] = true
	}
	for k, b := range baseS {
		if _, ok := nowS[k]; ok || withValues[k] {
			continue
		}
		d := Delta{Check: b.label, Node: k.node, BaseStatus: b.worst}
		if rn[k.node] {
			d.Regression, d.Note = true, fmt.Sprintf("missing in this run (was %s)", b.worst)
		} else {
			d.Note = fmt.Sprintf("node not in this run (was %s)", b.worst)
		}
		res.Deltas = append(res.Deltas, d)
	}
	for k, now := range nowS {
		b, ok := baseS[k]
		if ok {
			res.Compared++
		}
		switch {
		case ok && b.worst.Passing() && !now.worst.Passing():
			res.Deltas = append(res.Deltas, Delta{Check: now.label, Node: k.node, BaseStatus: b.worst, NowStatus: now.worst,
				Regression: true, Note: fmt.Sprintf("status %s → %s", b.worst, now.worst)})
		case ok && b.worst == Pass && now.worst == Warn:
			// Worth showing, not a regression: it still passes (the exit
			// code stays), and its row says why to look at it.
			res.Deltas = append(res.Deltas, Delta{Check: now.label, Node: k.node, BaseStatus: b.worst, NowStatus: now.worst,
				Note: fmt.Sprintf("status %s → %s", b.worst, now.worst)})
		case ok && now.worst.Passing() && statusRank[b.worst] > statusRank[now.worst]:
			res.Deltas = append(res.Deltas, Delta{Check: now.label, Node: k.node, BaseStatus: b.worst, NowStatus: now.worst,
				Note: fmt.Sprintf("status %s → %s", b.worst, now.worst)})
		case !ok && now.unallowed && !flaggedNew[k]:
			res.Deltas = append(res.Deltas, Delta{Check: now.label, Node: k.node, NowStatus: now.worst,
				Regression: true, Note: fmt.Sprintf("new, status %s", now.worst)})
		}
	}
	sort.SliceStable(res.Deltas, func(i, j int) bool {
		a, b := res.Deltas[i], res.Deltas[j]
		if a.Check != b.Check {
			return a.Check < b.Check
		}
		if a.Node != b.Node {
			return a.Node < b.Node
		}
		if a.Port != b.Port {
			return a.Port < b.Port
		}
		return a.Name < b.Name
	})
	return res
}

// worse reports whether a is worse than b (same key): lower is worse unless
// the threshold is "<="; in bytes, -1 (unlimited) is the best value.
func worse(a, b Measurement) bool {
	lowerBetter := (a.Threshold != nil && a.Threshold.Op == "<=") || a.Unit == UnitMicroseconds
	unl := func(v float64) bool { return a.Unit == "bytes" && v < 0 }
	switch {
	case unl(a.Value) || unl(b.Value):
		return !unl(a.Value) && unl(b.Value) != lowerBetter
	case lowerBetter:
		return a.Value > b.Value
	}
	return a.Value < b.Value
}

// compare fills Pct, Regression and Note for a value present in both runs.
func compare(d *Delta, lowerBetter bool, tolerance float64) {
	unl := func(v float64) bool { return d.Unit == "bytes" && v < 0 }
	bu, nu := unl(d.Base), unl(d.Now)
	switch {
	case bu && nu:
		return
	case bu: // unlimited → finite
		d.Note = "no longer unlimited"
		d.Regression, d.Improved = !lowerBetter, lowerBetter
		return
	case nu: // finite → unlimited
		d.Note = "now unlimited"
		d.Regression, d.Improved = lowerBetter, !lowerBetter
		return
	}
	if d.Base != 0 {
		d.Pct = (d.Now - d.Base) / math.Abs(d.Base) * 100
		if lowerBetter {
			d.Regression, d.Improved = d.Pct > tolerance*100, d.Pct < -tolerance*100
		} else {
			d.Regression, d.Improved = d.Pct < -tolerance*100, d.Pct > tolerance*100
		}
		return
	}
	// From 0 no relative change exists: any move the wrong way counts.
	if lowerBetter {
		d.Regression = d.Now > 0
	} else {
		d.Regression = d.Now < 0
	}
}

// DiffOptions shape a rendered diff.
type DiffOptions struct {
	// Title names what was compared, under the headline (e.g. "baseline
	// FILE (run A) → this run B").
	Title string
	// Width of the table in columns; 0: one line per row, for grep.
	Width int
	// All lists every row; by default the rows that only inform
	// (unchanged, new and passing, of a node that left) are a count line
	// each.
	All bool
}

// nodesShown bounds a node list in a diff's header: two unrelated fleets
// must not print a thousand names on one line.
const nodesShown = 8

// NodeList names up to nodesShown nodes and counts the rest.
func NodeList(nodes []string) string {
	if len(nodes) == 0 {
		return "none"
	}
	if len(nodes) <= nodesShown {
		return strings.Join(nodes, ", ")
	}
	return fmt.Sprintf("%s … and %d more (%d in all)", strings.Join(nodes[:nodesShown], ", "), len(nodes)-nodesShown, len(nodes))
}

// DiffTable renders a baseline diff with the defaults (DiffTableWith).
func DiffTable(w io.Writer, d DiffResult) error { return DiffTableWith(w, d, DiffOptions{}) }

// DiffTableWith renders a baseline diff: the headline first (the
// regressions' count and kinds), the node sets, then the rows by kind,
// the informing ones folded unless o.All. Runs with no node in common
// print why nothing was compared.
func DiffTableWith(w io.Writer, d DiffResult, o DiffOptions) error {
	// The count first; what was compared on a line of its own, unwrapped
	// (a path split at the width cannot be pasted).
	fmt.Fprintln(w, wrapText(d.Headline(), o.Width, ""))
	if o.Title != "" {
		fmt.Fprintln(w, o.Title)
	}
	for _, warn := range d.Warnings {
		fmt.Fprintln(w, "warning: "+warn) // it names servers: unwrapped
	}
	if d.NoCommonNodes {
		return nil // the headline names both node sets
	}
	if len(d.OnlyInBase) > 0 {
		fmt.Fprintf(w, "nodes only in the baseline (not compared): %s\n", NodeList(d.OnlyInBase))
	}
	if len(d.OnlyInRun) > 0 {
		fmt.Fprintf(w, "nodes new in this run: %s\n", NodeList(d.OnlyInRun))
	}
	var rows [][]string
	var folded [kindCount]int
	for _, x := range d.Ordered() {
		k := x.Kind()
		if k.Folded() && !o.All {
			folded[k]++
			continue
		}
		rows = append(rows, diffRow(x, k))
	}
	if len(rows) > 0 {
		header := []string{"check", "node", "port", "measurement", "baseline", "now", "change", "verdict"}
		cols := []column{{16, 1.2, true}, {8, 1, true}, {6, 0.8, true}, {10, 1, true}, {6, 0.6, false}, {6, 0.6, false}, {6, 0.5, false}, {12, 2, false}}
		if widths, whole := fitWidths(o.Width, header, rows, cols); whole {
			if err := renderTable(w, o.Width, widths, header, rows); err != nil {
				return err
			}
		} else {
			diffList(w, rows, o.Width)
		}
	}
	for k, n := range folded {
		if n > 0 {
			fmt.Fprintf(w, "%d %s row(s) folded (--all lists them)\n", n, DeltaKind(k))
		}
	}
	return nil
}

// diffList prints the rows two lines each, for a width the table cannot
// fit without splitting a check id or a node name: the verdict and the
// check whole on the first line, what changed on the second.
func diffList(w io.Writer, rows [][]string, width int) {
	for _, r := range rows {
		check, node, port, name, base, now, change, verdict := r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7]
		fmt.Fprintf(w, "%s  %s\n", verdict, check)
		where := strings.Join(slices.DeleteFunc([]string{node, port}, func(s string) bool { return s == "" }), " ")
		what := fmt.Sprintf("%s %s: %s → %s", where, name, base, now)
		if change != "" {
			what += " (" + change + ")"
		}
		fmt.Fprintln(w, wrapText(what, width, "  "))
	}
}

// diffRow is one row of the diff table.
func diffRow(x Delta, k DeltaKind) []string {
	verdict := "ok"
	switch {
	case x.Regression:
		verdict = "REGRESSION"
	case k == KindImproved:
		verdict = "improved"
	case k == KindWarned:
		verdict = "WARN"
	}
	if x.Note != "" {
		verdict += " (" + x.Note + ")"
	}
	name, base, now, change := x.Name, "-", "-", ""
	if x.Name == "" {
		name = "status"
		if x.BaseStatus != "" {
			base = string(x.BaseStatus)
		}
		if x.NowStatus != "" {
			now = string(x.NowStatus)
		}
		return []string{x.Check, x.Node, x.Port, name, base, now, change, verdict}
	}
	if x.HasBase {
		base = fmtVal(x.Base, x.Unit)
	}
	if x.HasNow {
		now = fmtVal(x.Now, x.Unit)
	}
	switch {
	case !x.HasBase || !x.HasNow:
	case x.Unit == "bytes" && (x.Base < 0 || x.Now < 0):
	case x.Base != 0:
		change = fmt.Sprintf("%+.1f%%", x.Pct)
	case x.Now != 0:
		change = "from 0"
	default:
		change = "+0.0%"
	}
	return []string{x.Check, x.Node, x.Port, name, base, now, change, verdict}
}

// CheckBaseline says whether base can be this run's baseline. refuse is
// set when comparing would prove nothing or read backwards: base is the
// run itself (one of the runs merged into it: results.json links to the
// latest run, so "the last results" right after a run is that run), or it
// started after the run (its regressions would read as improvements).
// warn lists what the reader must know but may have meant: a baseline of
// another cluster (a new cluster against a reference one is a legitimate
// comparison, node names permitting).
func CheckBaseline(base, run Run) (refuse string, warn []string) {
	if base.RunID != "" && slices.Contains(strings.Split(run.RunID, "+"), base.RunID) {
		return fmt.Sprintf("the baseline is run %s, which this report already holds: a run compared with itself shows no regression "+
			"whatever it measured; give an earlier run's file (results-<run>.json in the report directory: results.json "+
			"links to the latest run)", base.RunID), nil
	}
	if !base.Started.IsZero() && !run.Started.IsZero() && base.Started.After(run.Started) {
		return fmt.Sprintf("the baseline (run %s, started %s) is newer than this run (%s, started %s): its regressions would read "+
			"as improvements; swap the files (rdmasuite report NEWER.json --baseline OLDER.json)", base.RunID,
			base.Started.UTC().Format(time.RFC3339), run.RunID, run.Started.UTC().Format(time.RFC3339)), nil
	}
	if b, r := base.Cluster.Server, run.Cluster.Server; b != "" && r != "" && b != r {
		warn = append(warn, fmt.Sprintf("the baseline is of another cluster (%s; this run: %s): compared node by node, by name", b, r))
	}
	return "", warn
}
