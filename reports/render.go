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

// measuredText prints a check's numbers with their thresholds.
func measuredText(c Check) string {
	var parts []string
	for _, m := range c.Measured {
		s := m.Name + "=" + fmtVal(m.Value, m.Unit)
		if m.Port != "" {
			s = m.Port + " " + s
		}
		if m.Node != "" && (len(c.Nodes) == 0 || m.Node != c.Nodes[0]) {
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

// Table renders the run with one line per row, however long: for files,
// pipes and CI logs, where a line is what grep finds. TableWidth fits a
// terminal.
func Table(w io.Writer, r Run) error { return TableWidth(w, r, 0) }

// TableWidth renders the run for a terminal of width columns (0: no
// limit): the summary line, a per-node roll-up (an operator sees at once
// which node is in every failing pair), then one row per check, pairs as
// client → server with the rail's ports. Long cells wrap to fit; nothing
// is cut, the fix least of all.
func TableWidth(w io.Writer, r Run, width int) error {
	if width > 0 && width < 60 {
		width = 60
	}
	fmt.Fprintln(w, wrapText(fmt.Sprintf("rdmasuite run %s on %s (%s): %s", r.RunID, r.Cluster.Server, r.Cluster.Version, SummaryText(r)), width, ""))
	if err := nodeRollup(w, r, width); err != nil {
		return err
	}
	rows := [][]string{}
	for _, c := range r.Checks {
		rows = append(rows, []string{statusText(r, c), checkLabel(c), c.Variant, NodesText(c), measuredText(c), verdictText(c)})
	}
	// The diagnosis (with the fix) keeps the most room, then measured.
	if err := renderFitted(w, width, []string{"status", "check", "variant", "nodes (client → server)", "measured", "diagnosis / fix"},
		rows, []column{{7, 0.5}, {16, 1.2}, {10, 0.6}, {10, 1.2}, {12, 1.5}, {20, 3}}); err != nil {
		return err
	}
	if fs := Localize(r); len(fs) > 0 {
		fmt.Fprintln(w, "localisation (pair checks: node, port or link):")
		for _, f := range fs {
			fmt.Fprintln(w, wrapText(findingText(f), width, "  "))
		}
	}
	PhasesText(w, r.Phases)
	return nil
}

// column says how a column gives way when the table is too wide: it
// never gets narrower than min, and the column widest for its weight
// gives way first, so a heavy column (the diagnosis) keeps the most room.
type column struct {
	min    int
	weight float64
}

// renderFitted prints a table whose lines are at most width columns
// (0: unlimited), wrapping cells at spaces (and inside words longer than
// their column) so no text is lost.
func renderFitted(w io.Writer, width int, header []string, rows [][]string, cols []column) error {
	widths := make([]int, len(header))
	for _, row := range append([][]string{header}, rows...) {
		for i, cell := range row {
			widths[i] = max(widths[i], runewidth.StringWidth(cell))
		}
	}
	// A border and a space each side: 3 columns per column, plus one.
	avail := width - 3*len(header) - 1
	for width > 0 {
		total, widest := 0, -1
		for i, wd := range widths {
			total += wd
			if wd > cols[i].min && (widest < 0 || float64(wd)/cols[i].weight > float64(widths[widest])/cols[widest].weight) {
				widest = i
			}
		}
		if total <= avail || widest < 0 {
			break
		}
		widths[widest]--
	}
	t := tablewriter.NewTable(w, tablewriter.WithConfig(
		tablewriter.NewConfigBuilder().WithHeaderAutoFormat(tw.Off).WithHeaderAutoWrap(tw.WrapNone).WithRowAutoWrap(tw.WrapNone).Build()))
	wrapRow := func(row []string) []string {
		out := make([]string, len(row))
		for i, cell := range row {
			out[i] = cell
			if width > 0 {
				out[i] = wrapCell(cell, widths[i])
			}
		}
		return out
	}
	t.Header(wrapRow(header))
	for _, row := range rows {
		if err := t.Append(wrapRow(row)); err != nil {
			return err
		}
	}
	return t.Render()
}

// wrapCell breaks s into lines of at most width columns: at spaces, and
// inside a word that alone is wider than the column.
func wrapCell(s string, width int) string {
	if width <= 0 || runewidth.StringWidth(s) <= width {
		return s
	}
	var lines []string
	line := ""
	for _, word := range strings.Fields(s) {
		for runewidth.StringWidth(word) > width {
			if line != "" {
				lines = append(lines, line)
				line = ""
			}
			head := runewidth.Truncate(word, width, "")
			lines = append(lines, head)
			word = word[len(head):]
		}
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
	if line != "" {
		lines = append(lines, line)
	}
	return strings.Join(lines, "\n")
}

// NodesText is a check's nodes: "client → server" for a pair check (the
// first node measures, see Check.Nodes), a comma list for anything else
// (a node's own check, an NCCL world).
func NodesText(c Check) string {
	if len(c.Nodes) == 2 && isPairCheck(c.ID) {
		return c.Nodes[0] + " → " + c.Nodes[1]
	}
	return strings.Join(c.Nodes, ", ")
}

// isPairCheck says the check measures from its first node to its second.
func isPairCheck(id string) bool {
	for _, p := range []string{"bandwidth/write", "bandwidth/read", "gpudirect/"} {
		if strings.HasPrefix(id, p) {
			return true
		}
	}
	return false
}

// nodeRollup prints, per node, how its checks came out and which failed:
// a pair check counts for both of its nodes.
func nodeRollup(w io.Writer, r Run, width int) error {
	type tally struct {
		n       [4]int
		failing []string
	}
	by := map[string]*tally{}
	var order []string
	for _, c := range r.Checks {
		for _, n := range c.Nodes {
			t := by[n]
			if t == nil {
				t = &tally{}
				by[n] = t
				order = append(order, n)
			}
			switch c.Status {
			case Pass:
				t.n[0]++
			case Fail:
				t.n[1]++
			case Error:
				t.n[2]++
			case NotRun:
				t.n[3]++
			}
			if c.Status == Fail || c.Status == Error {
				label := checkLabel(c)
				if len(c.Nodes) == 2 && isPairCheck(c.ID) {
					label += " " + NodesText(c)
				}
				t.failing = append(t.failing, label)
			}
		}
	}
	if len(order) == 0 {
		return nil
	}
	sort.Strings(order)
	fmt.Fprintln(w, "per node (a pair check counts for both of its nodes):")
	var rows [][]string
	for _, n := range order {
		c := by[n]
		rows = append(rows, []string{n, fmt.Sprint(c.n[0]), fmt.Sprint(c.n[1]), fmt.Sprint(c.n[2]), fmt.Sprint(c.n[3]), strings.Join(c.failing, "; ")})
	}
	return renderFitted(w, width, []string{"node", "pass", "fail", "error", "not run", "failed or errored checks"}, rows,
		[]column{{8, 1}, {4, 0.2}, {4, 0.2}, {5, 0.2}, {7, 0.2}, {20, 3}})
}

// wrapText breaks s into lines of at most width columns (wrapCell), the
// first indented by indent, the rest by indent and two spaces.
func wrapText(s string, width int, indent string) string {
	if width <= 0 {
		return indent + s
	}
	cont := indent + "  "
	return indent + strings.ReplaceAll(wrapCell(s, width-runewidth.StringWidth(cont)), "\n", "\n"+cont)
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
// PASSED, why when nothing was measured, and the counts by status with the
// allowed not-runs apart.
func SummaryText(r Run) string {
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
	return fmt.Sprintf("%s — %d pass, %d fail, %d error, %d not run (%d allowed)", verdict, s[Pass], s[Fail], s[Error], s[NotRun], r.AllowedNotRun())
}

// Markdown renders the acceptance report as Markdown.
func Markdown(w io.Writer, r Run) error {
	fmt.Fprintf(w, "# rdmasuite acceptance report\n\nRun `%s` against `%s` (%s), %s → %s.\n\n**%s**\n\n",
		r.RunID, r.Cluster.Server, r.Cluster.Version, r.Started.Format("2006-01-02 15:04:05Z07:00"),
		r.Finished.Format("15:04:05"), SummaryText(r))
	if len(r.Nodes) > 0 {
		fmt.Fprintf(w, "## Nodes\n\n| node | SKU | thresholds file | kubelet | kernel |\n|---|---|---|---|---|\n")
		for _, n := range r.Nodes {
			fmt.Fprintf(w, "| %s | %s | %s | %s | %s |\n", n.Name, n.SKU, n.ThresholdsFile, n.Kubelet, n.Kernel)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "## Checks\n\n| status | check | variant | nodes | measured | diagnosis / fix |\n|---|---|---|---|---|---|\n")
	for _, c := range r.Checks {
		badge := statusBadge(c.Status)
		if r.Allowed(c) {
			badge += " (allowed)"
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s |\n", badge, md(checkLabel(c)), md(c.Variant),
			md(strings.Join(c.Nodes, ", ")), md(measuredText(c)), md(verdictText(c)))
	}
	if fs := Localize(r); len(fs) > 0 {
		fmt.Fprintf(w, "\n## Localisation\n\n")
		for _, f := range fs {
			v := ""
			if f.Variant != "" {
				v = " (" + f.Variant + ")"
			}
			ids := ""
			if len(f.Checks) > 0 {
				ids = " — `" + strings.Join(f.Checks, "`, `") + "`"
			}
			fmt.Fprintf(w, "- **%s**%s: %s%s\n", f.Kind, v, strings.ReplaceAll(f.Explanation, "\n", " "), ids)
		}
	}
	failed := false
	for _, c := range r.Checks {
		if (c.Status == Pass && !c.ShowEvidence) || len(c.Evidence) == 0 {
			continue
		}
		if !failed {
			fmt.Fprintf(w, "\n## Evidence\n")
			failed = true
		}
		fmt.Fprintf(w, "\n### %s %s (%s)\n\n```\n%s\n```\n", checkLabel(c), c.Variant, strings.Join(c.Nodes, ", "), strings.Join(c.Evidence, "\n"))
	}
	if len(r.Phases) > 0 {
		fmt.Fprintf(w, "\n## Time per phase\n\n| phase | count | total s | max s |\n|---|---|---|---|\n")
		for _, n := range phaseNames(r.Phases) {
			p := r.Phases[n]
			fmt.Fprintf(w, "| %s | %d | %.2f | %.2f |\n", n, p.Count, p.TotalSec, p.MaxSec)
		}
	}
	return nil
}

func statusBadge(s Status) string {
	switch s {
	case Pass:
		return "✅ pass"
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
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Errors   int         `xml:"errors,attr"`
	Skipped  int         `xml:"skipped,attr"`
	Cases    []junitCase `xml:"testcase"`
	// SystemOut carries the localisation findings (after the cases, where
	// the JUnit schema puts a suite's system-out).
	SystemOut string `xml:"system-out,omitempty"`
}
type junitCase struct {
	Name      string        `xml:"name,attr"`
	ClassName string        `xml:"classname,attr"`
	Time      float64       `xml:"time,attr"`
	Failure   *junitMessage `xml:"failure,omitempty"`
	Error     *junitMessage `xml:"error,omitempty"`
	Skipped   *junitMessage `xml:"skipped,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}
type junitMessage struct {
	Message string `xml:"message,attr"`
	Body    string `xml:",chardata"`
}

// JUnit renders one test case per check: fail → failure, error → error,
// an allowed not-run → skipped with its reason, a not-run the operator did
// not allow → failure. A run with no check, or where every check is
// not-run, gets a failing "rdmasuite/run" case: CI never reads it as green.
// The localisation findings (Localize), when there are any, are the
// suite's system-out.
func JUnit(w io.Writer, r Run) error { return junit(w, r, nil) }

// JUnitWithDiff is JUnit plus one "rdmasuite/baseline" case for the
// baseline diff: a failure when it found regressions (the diff table is its
// body), else a passing case carrying the table (or the no-common-nodes
// notice) as its output.
func JUnitWithDiff(w io.Writer, r Run, d DiffResult) error { return junit(w, r, &d) }

func junit(w io.Writer, r Run, diff *DiffResult) error {
	s := junitSuite{Name: "rdmasuite " + r.RunID}
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
		s.Cases = append(s.Cases, junitCase{Name: "rdmasuite/run", ClassName: "rdmasuite", Failure: &junitMessage{Message: msg, Body: SummaryText(r)}})
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
	if fs := Localize(r); len(fs) > 0 {
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
