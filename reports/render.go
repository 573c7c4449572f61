package reports

import (
	"encoding/xml"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/mattn/go-runewidth"
	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/tw"

	"github.com/rdmasuite/rdmasuite/workloads/units"
)

func newTable(w io.Writer) *tablewriter.Table {
	// Header auto-format would upper-case ids and split "Gb/s".
	return tablewriter.NewTable(w, tablewriter.WithConfig(
		tablewriter.NewConfigBuilder().WithHeaderAutoFormat(tw.Off).WithRowAutoWrap(tw.WrapNone).Build()))
}

// measuredText prints a check's numbers with their thresholds, each with
// its node and port where the check's first node and its rail do not
// already say them.
func measuredText(c Check) string {
	var parts []string
	for _, m := range c.Measured {
		s := m.Name + "=" + fmtVal(m.Value, m.Unit)
		otherNode := m.Node != "" && (len(c.Nodes) == 0 || m.Node != c.Nodes[0])
		if m.Port != "" && (otherNode || m.Port != railSource(c.Rail)) {
			s = m.Port + " " + s
		}
		if otherNode {
			s = m.Node + " " + s
		}
		if t := m.Threshold; t != nil {
			s += fmt.Sprintf(" (%s %s)", t.Op, fmtVal(t.Value, m.Unit))
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, "; ")
}

// checkLabel is the check id with its rail, when it has one.
func checkLabel(c Check) string {
	if c.Rail != "" {
		return c.ID + " {" + c.Rail + "}"
	}
	return c.ID
}

func statusText(r Run, c Check) string {
	s := strings.ToUpper(string(c.Status))
	if r.Allowed(c) {
		s += " (ALLOWED)"
	}
	return s
}

func verdictText(c Check) string {
	switch c.Status {
	case Pass:
		return ""
	case NotRun:
		return c.Reason
	case Error:
		// An error may know its fix (a probe's error kind, a setup step
		// refused by RBAC): say it where the reason is read.
		if c.Fix != "" {
			return c.Reason + " — fix: " + c.Fix
		}
		return c.Reason
	}
	s := c.Diagnosis
	if c.Fix != "" {
		s += " — fix: " + c.Fix
	}
	return s
}

// wrapCell breaks s into lines of at most width columns: at spaces, and
// inside a word that alone is wider than the column (a table cell has no
// room to let it run over).
func wrapCell(s string, width int) string {
	if width <= 0 || runewidth.StringWidth(s) <= width {
		return s
	}
	var pieces []string
	for _, word := range strings.Fields(s) {
		for runewidth.StringWidth(word) > width {
			head := runewidth.Truncate(word, width, "")
			pieces = append(pieces, head)
			word = word[len(head):]
		}
		pieces = append(pieces, word)
	}
	return strings.Join(fillLines(pieces, width), "\n")
}

// fillLines puts words on lines of at most width columns, as many as fit,
// in order; a word wider than width has a line of its own.
func fillLines(words []string, width int) []string {
	var lines []string
	line := ""
	for _, word := range words {
		switch {
		case line == "":
			line = word
		case runewidth.StringWidth(line)+1+runewidth.StringWidth(word) <= width:
			line += " " + word
		default:
			lines = append(lines, line)
			line = word
		}
	}
	if line != "" || len(lines) == 0 {
		lines = append(lines, line)
	}
	return lines
}

// wrapText breaks s at spaces into lines of at most width columns, the
// first indented by indent, the rest by indent and two spaces. It never
// splits a word: a check id, a node or port name, a path or a number in
// a snippet is what a reader greps for or pastes, so a word wider than
// the line runs past it instead.
func wrapText(s string, width int, indent string) string {
	if width <= 0 {
		return indent + s
	}
	cont := indent + "  "
	lines := fillLines(wrapUnits(s), width-runewidth.StringWidth(cont))
	return indent + strings.Join(lines, "\n"+cont)
}

// wrapUnits are s's words, a `code span` being one unit however many
// spaces it holds: a line never breaks inside a command or a snippet.
func wrapUnits(s string) []string {
	var units []string
	for _, f := range strings.Fields(s) {
		if n := len(units); n > 0 && strings.Count(units[n-1], "`")%2 == 1 {
			units[n-1] += " " + f
			continue
		}
		units = append(units, f)
	}
	return units
}

// NodesText is a check's nodes: "client → server" for a pair check (the
// first node measures, see Check.Nodes), a comma list for anything else
// (a node's own check, an NCCL world).
func NodesText(c Check) string {
	if len(c.Nodes) == 2 && c.Is().Pair {
		return c.Nodes[0] + " → " + c.Nodes[1]
	}
	return strings.Join(c.Nodes, ", ")
}

// findingText is one localisation finding on one line: kind, variant,
// the explanation and the check ids it covers.
func findingText(f Finding) string {
	s := string(f.Kind)
	if f.Variant != "" {
		s += " [" + f.Variant + "]"
	}
	s += ": " + f.Explanation
	if len(f.Checks) > 0 {
		s += " (" + strings.Join(f.Checks, ", ") + ")"
	}
	return s
}

// PhasesText prints where a run's time went, one line per phase, sorted.
func PhasesText(w io.Writer, m map[string]Phase) {
	if len(m) == 0 {
		return
	}
	fmt.Fprintln(w, "time per phase (summed over pods/pairs; max of one):")
	for _, n := range phaseNames(m) {
		p := m[n]
		fmt.Fprintf(w, "  %-12s %3d × total %7.2f s  max %6.2f s\n", n, p.Count, p.TotalSec, p.MaxSec)
	}
}

func phaseNames(m map[string]Phase) []string {
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

// SummaryText is the one-line verdict every renderer prints: PASSED or NOT
// PASSED, why when nothing was measured, a SKU that missed its floor as a
// whole (SKUShortfalls: one finding, not a culprit per port), the
// localised culprits (bad node, port or link; the first few, then how many
// more), the warnings (warn rows: a peer outlier's port, a failure that
// did not repeat), and the counts by status with the allowed not-runs
// apart (warn counted when there is one).
func SummaryText(r Run) string { return summaryText(r, verdictOf(r)) }

// summaryText is SummaryText with the verdict's parts already computed.
func summaryText(r Run, vp verdictParts) string {
	if len(r.Checks) == 0 {
		return "NOT PASSED — no check ran (the results hold no checks)"
	}
	s := r.Summary()
	verdict := "PASSED"
	if !r.Passed() {
		verdict = "NOT PASSED"
	}
	if s[NotRun] == len(r.Checks) {
		verdict += " — nothing was measured (every check not run)"
	}
	// Where it fails comes before how much: at 256 nodes the counts say
	// little, the culprit says where to go.
	if t := shortfallsText(vp.short); t != "" {
		verdict += " — " + t
	}
	if c := culpritsText(Culprits(vp.fs)); c != "" {
		verdict += " — " + c
	}
	if w := warningsText(vp.warns); w != "" {
		verdict += " — " + w
	}
	warn := ""
	if s[Warn] > 0 {
		warn = fmt.Sprintf(", %d warn", s[Warn])
	}
	return fmt.Sprintf("%s — %d pass%s, %d fail, %d error, %d not run (%d allowed)", verdict, s[Pass], warn, s[Fail], s[Error], s[NotRun], r.AllowedNotRun())
}

func statusBadge(s Status) string {
	switch s {
	case Pass:
		return "✅ pass"
	case Warn:
		return "🟡 warn"
	case Fail:
		return "❌ fail"
	case Error:
		return "⚠️ error"
	}
	return "⏭️ not run"
}

func md(s string) string { return strings.ReplaceAll(strings.ReplaceAll(s, "|", "\\|"), "\n", " ") }

// JUnit XML, the subset CI systems read.
type junitSuites struct {
	XMLName xml.Name     `xml:"testsuites"`
	Suites  []junitSuite `xml:"testsuite"`
}
type junitSuite struct {
	Name     string `xml:"name,attr"`
	Tests    int    `xml:"tests,attr"`
	Failures int    `xml:"failures,attr"`
	Errors   int    `xml:"errors,attr"`
	Skipped  int    `xml:"skipped,attr"`
	// Properties carry the verdict with its culprits, before the cases:
	// one case per check stays (CI systems count them), and a reader of
	// a thousand cases learns where the failure is first.
	Properties *junitProperties `xml:"properties,omitempty"`
	Cases      []junitCase      `xml:"testcase"`
	// SystemOut carries the localisation findings (after the cases, where
	// the JUnit schema puts a suite's system-out).
	SystemOut string `xml:"system-out,omitempty"`
}
type junitProperties struct {
	List []junitProperty `xml:"property"`
}
type junitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}
type junitCase struct {
	Name      string  `xml:"name,attr"`
	ClassName string  `xml:"classname,attr"`
	Time      float64 `xml:"time,attr"`
	// Properties: a warn case's rdmasuite.status=warn and its reason (a
	// passing case: CI counts it green, the report says why to look).
	Properties *junitProperties `xml:"properties,omitempty"`
	Failure    *junitMessage    `xml:"failure,omitempty"`
	Error      *junitMessage    `xml:"error,omitempty"`
	Skipped    *junitMessage    `xml:"skipped,omitempty"`
	SystemOut  string           `xml:"system-out,omitempty"`
}
type junitMessage struct {
	Message string `xml:"message,attr"`
	Body    string `xml:",chardata"`
}

// JUnit renders one test case per check: fail → failure, error → error,
// an allowed not-run → skipped with its reason, a not-run the operator did
// not allow → failure, a warn → a passing case whose properties
// (rdmasuite.status=warn, rdmasuite.warning) and system-out ("WARN: …")
// say why to look at it. A run with no check, or where every check is
// not-run, gets a failing "rdmasuite/run" case: CI never reads it as green.
// The suite's properties carry the verdict line and each culprit
// (rdmasuite.verdict, rdmasuite.culprit.N); the localisation findings
// (Localize), when there are any, are the suite's system-out.
func JUnit(w io.Writer, r Run) error { return junit(w, r, nil) }

// JUnitWithDiff is JUnit plus one "rdmasuite/baseline" case for the
// baseline diff: a failure when it found regressions (the diff table is its
// body), else a passing case carrying the table (or the no-common-nodes
// notice) as its output.
func JUnitWithDiff(w io.Writer, r Run, d DiffResult) error { return junit(w, r, &d) }

func junit(w io.Writer, r Run, diff *DiffResult) error {
	vp := verdictOf(r)
	s := junitSuite{Name: "rdmasuite " + r.RunID, Properties: junitVerdict(r, vp)}
	for _, c := range r.Checks {
		name := c.ID
		for _, p := range []string{c.Variant, c.Rail, strings.Join(c.Nodes, ",")} {
			if p != "" {
				name += " " + p
			}
		}
		jc := junitCase{Name: name, ClassName: "rdmasuite." + strings.SplitN(c.ID, "/", 2)[0], Time: c.Duration, SystemOut: measuredText(c)}
		body := strings.Join(c.Evidence, "\n")
		if c.ShowEvidence && body != "" {
			jc.SystemOut += "\n" + body
		}
		switch {
		case c.Status == Warn:
			why := verdictText(c)
			jc.SystemOut = "WARN: " + why + "\n" + jc.SystemOut
			jc.Properties = &junitProperties{List: []junitProperty{{Name: "rdmasuite.status", Value: string(Warn)}, {Name: "rdmasuite.warning", Value: why}}}
		case c.Status == Fail:
			jc.Failure = &junitMessage{Message: verdictText(c), Body: body}
		case c.Status == Error:
			jc.Error = &junitMessage{Message: verdictText(c), Body: body}
		case r.Allowed(c):
			jc.Skipped = &junitMessage{Message: c.Reason}
		case c.Status == NotRun:
			jc.Failure = &junitMessage{Message: fmt.Sprintf("not run: %s (not allowed; pass --allow-not-run=%s to accept)", c.Reason, c.ID), Body: body}
		}
		s.Cases = append(s.Cases, jc)
	}
	runCase := func(msg string) {
		s.Cases = append(s.Cases, junitCase{Name: "rdmasuite/run", ClassName: "rdmasuite", Failure: &junitMessage{Message: msg, Body: summaryText(r, vp)}})
	}
	switch n := len(r.Checks); {
	case n == 0:
		runCase("no check ran: the results hold no checks")
	case r.Summary()[NotRun] == n:
		runCase(fmt.Sprintf("nothing was measured: all %d checks are not-run", n))
	}
	if diff != nil {
		var tb strings.Builder
		if err := DiffTable(&tb, *diff); err != nil {
			return err
		}
		jc := junitCase{Name: "rdmasuite/baseline", ClassName: "rdmasuite", SystemOut: tb.String()}
		if n := diff.Regressions(); n > 0 {
			jc.Failure = &junitMessage{Message: fmt.Sprintf("%d regression(s) against the baseline", n), Body: tb.String()}
		} else if why := diff.NothingCompared(); why != "" {
			jc.Failure = &junitMessage{Message: "the baseline comparison compared nothing: " + why, Body: tb.String()}
		}
		s.Cases = append(s.Cases, jc)
	}
	for _, c := range s.Cases {
		s.Tests++
		switch {
		case c.Failure != nil:
			s.Failures++
		case c.Error != nil:
			s.Errors++
		case c.Skipped != nil:
			s.Skipped++
		}
	}
	if fs := vp.all; len(fs) > 0 {
		lines := []string{"localisation (pair checks: node, port or link):"}
		for _, f := range fs {
			lines = append(lines, findingText(f))
		}
		s.SystemOut = strings.Join(lines, "\n")
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(junitSuites{Suites: []junitSuite{s}}); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

// junitVerdict is the suite's properties: rdmasuite.verdict (SummaryText),
// rdmasuite.sku-wide.N (a SKU that missed its floor as a whole),
// rdmasuite.culprit.N, one per culprit, and rdmasuite.warning.N, one per
// warning (VerdictWarnings), none left out.
func junitVerdict(r Run, vp verdictParts) *junitProperties {
	p := &junitProperties{List: []junitProperty{{Name: "rdmasuite.verdict", Value: summaryText(r, vp)}}}
	for i, s := range vp.short {
		p.List = append(p.List, junitProperty{Name: fmt.Sprintf("rdmasuite.sku-wide.%d", i+1), Value: s.Text()})
	}
	cs := Culprits(vp.fs)
	mixed := mixedVariants(cs)
	for i, c := range cs {
		p.List = append(p.List, junitProperty{Name: fmt.Sprintf("rdmasuite.culprit.%d", i+1), Value: c.Text(mixed)})
	}
	for i, w := range vp.warns {
		p.List = append(p.List, junitProperty{Name: fmt.Sprintf("rdmasuite.warning.%d", i+1), Value: w.Text(true)})
	}
	return p
}

// fmtVal prints a value with its unit; byte counts in binary units, -1
// bytes as unlimited.
func fmtVal(v float64, unit string) string {
	if unit == "bytes" {
		if v < 0 {
			return "unlimited"
		}
		return units.Bytes(int64(v))
	}
	return strings.TrimSpace(fmt.Sprintf("%.4g %s", v, unit))
}

// runTitle names the run and its cluster, saying which of them the
// results file did not record (a hand-made or truncated file) instead of
// printing blanks.
func runTitle(r Run) string {
	id, server := "(no run id recorded)", "an unrecorded cluster"
	if r.RunID != "" {
		id = r.RunID
	}
	if r.Cluster.Server != "" {
		server = r.Cluster.Server
	}
	if r.Cluster.Version != "" {
		server += " (" + r.Cluster.Version + ")"
	}
	return "rdmasuite run " + id + " on " + server
}
