package reports

import (
	"encoding/xml"
	"fmt"
	"io"
	"sort"
	"strings"

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
		if t := m.Threshold; t != nil {
			s += fmt.Sprintf(" (%s %s)", t.Op, fmtVal(t.Value, m.Unit))
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, "; ")
}

func verdictText(c Check) string {
	switch c.Status {
	case Pass:
		return ""
	case NotRun, Error:
		return c.Reason
	}
	s := c.Diagnosis
	if c.Fix != "" {
		s += " — fix: " + c.Fix
	}
	return s
}

// Table renders the run for a terminal.
func Table(w io.Writer, r Run) error {
	fmt.Fprintf(w, "rdmasuite run %s on %s (%s): %s\n", r.RunID, r.Cluster.Server, r.Cluster.Version, summaryText(r))
	t := newTable(w)
	t.Header("status", "check", "variant", "nodes", "measured", "diagnosis / fix")
	for _, c := range r.Checks {
		if err := t.Append(strings.ToUpper(string(c.Status)), c.ID, c.Variant, strings.Join(c.Nodes, ","),
			measuredText(c), truncate(verdictText(c), 160)); err != nil {
			return err
		}
	}
	if err := t.Render(); err != nil {
		return err
	}
	PhasesText(w, r.Phases)
	return nil
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

func summaryText(r Run) string {
	s := r.Summary()
	verdict := "PASSED"
	if !r.Passed() {
		verdict = "NOT PASSED"
	}
	return fmt.Sprintf("%s — %d pass, %d fail, %d error, %d not run", verdict, s[Pass], s[Fail], s[Error], s[NotRun])
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-1] + "…"
}

// Markdown renders the acceptance report as Markdown.
func Markdown(w io.Writer, r Run) error {
	fmt.Fprintf(w, "# rdmasuite acceptance report\n\nRun `%s` against `%s` (%s), %s → %s.\n\n**%s**\n\n",
		r.RunID, r.Cluster.Server, r.Cluster.Version, r.Started.Format("2006-01-02 15:04:05Z07:00"),
		r.Finished.Format("15:04:05"), summaryText(r))
	if len(r.Nodes) > 0 {
		fmt.Fprintf(w, "## Nodes\n\n| node | SKU | kubelet | kernel |\n|---|---|---|---|\n")
		for _, n := range r.Nodes {
			fmt.Fprintf(w, "| %s | %s | %s | %s |\n", n.Name, n.SKU, n.Kubelet, n.Kernel)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "## Checks\n\n| status | check | variant | nodes | measured | diagnosis / fix |\n|---|---|---|---|---|---|\n")
	for _, c := range r.Checks {
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s |\n", statusBadge(c.Status), md(c.ID), md(c.Variant),
			md(strings.Join(c.Nodes, ", ")), md(measuredText(c)), md(verdictText(c)))
	}
	failed := false
	for _, c := range r.Checks {
		if c.Status == Pass || len(c.Evidence) == 0 {
			continue
		}
		if !failed {
			fmt.Fprintf(w, "\n## Evidence\n")
			failed = true
		}
		fmt.Fprintf(w, "\n### %s %s (%s)\n\n```\n%s\n```\n", c.ID, c.Variant, strings.Join(c.Nodes, ", "), strings.Join(c.Evidence, "\n"))
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
// not-run → skipped with its reason (CI shows it as skipped, never passed).
func JUnit(w io.Writer, r Run) error {
	s := junitSuite{Name: "rdmasuite " + r.RunID, Tests: len(r.Checks)}
	for _, c := range r.Checks {
		jc := junitCase{Name: strings.TrimSpace(c.ID + " " + c.Variant + " " + strings.Join(c.Nodes, ",")),
			ClassName: "rdmasuite." + strings.SplitN(c.ID, "/", 2)[0], Time: c.Duration, SystemOut: measuredText(c)}
		body := strings.Join(c.Evidence, "\n")
		switch c.Status {
		case Fail:
			s.Failures++
			jc.Failure = &junitMessage{Message: verdictText(c), Body: body}
		case Error:
			s.Errors++
			jc.Error = &junitMessage{Message: c.Reason, Body: body}
		case NotRun:
			s.Skipped++
			jc.Skipped = &junitMessage{Message: c.Reason}
		}
		s.Cases = append(s.Cases, jc)
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

// Delta is one measurement compared with the baseline.
type Delta struct {
	Check      string
	Port       string
	Name       string
	Unit       string
	Base, Now  float64
	Pct        float64
	Regression bool
	Note       string
}

// Diff compares run against base: per check (id, variant, nodes) and
// measurement (name, port). A measurement that fell by more than tolerance
// (a fraction, e.g. 0.05), a check that went from pass to anything else, or a
// measurement that disappeared is a regression. Lower-is-better metrics are
// those judged with "<=".
func Diff(base, run Run, tolerance float64) []Delta {
	type mkey struct{ check, port, name string }
	baseM := map[mkey]Measurement{}
	baseStatus := map[string]Status{}
	for _, c := range base.Checks {
		baseStatus[c.Key()] = c.Status
		for _, m := range c.Measured {
			baseM[mkey{c.Key(), m.Port, m.Name}] = m
		}
	}
	var out []Delta
	seen := map[mkey]bool{}
	for _, c := range run.Checks {
		if bs, ok := baseStatus[c.Key()]; ok && bs == Pass && c.Status != Pass {
			out = append(out, Delta{Check: c.Key(), Regression: true, Note: fmt.Sprintf("status %s → %s", bs, c.Status)})
		}
		for _, m := range c.Measured {
			k := mkey{c.Key(), m.Port, m.Name}
			seen[k] = true
			b, ok := baseM[k]
			if !ok {
				out = append(out, Delta{Check: c.Key(), Port: m.Port, Name: m.Name, Unit: m.Unit, Now: m.Value, Note: "new"})
				continue
			}
			d := Delta{Check: c.Key(), Port: m.Port, Name: m.Name, Unit: m.Unit, Base: b.Value, Now: m.Value}
			if b.Value != 0 {
				d.Pct = (m.Value - b.Value) / b.Value * 100
			}
			lowerBetter := m.Threshold != nil && m.Threshold.Op == "<="
			worse := d.Pct < -tolerance*100
			if lowerBetter {
				worse = d.Pct > tolerance*100
			}
			d.Regression = worse
			out = append(out, d)
		}
	}
	for k, m := range baseM {
		if !seen[k] {
			out = append(out, Delta{Check: k.check, Port: k.port, Name: k.name, Unit: m.Unit, Base: m.Value, Regression: true, Note: "missing in this run"})
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Check != out[j].Check {
			return out[i].Check < out[j].Check
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// DiffTable renders a baseline diff.
func DiffTable(w io.Writer, deltas []Delta) error {
	t := newTable(w)
	t.Header("check", "port", "measurement", "baseline", "now", "change", "verdict")
	regressions := 0
	for _, d := range deltas {
		verdict := "ok"
		if d.Regression {
			verdict = "REGRESSION"
			regressions++
		}
		if d.Note != "" {
			verdict += " (" + d.Note + ")"
		}
		change := ""
		if d.Base != 0 && d.Name != "" {
			change = fmt.Sprintf("%+.1f%%", d.Pct)
		}
		base, now := "-", "-"
		if d.Base != 0 {
			base = fmtVal(d.Base, d.Unit)
		}
		if d.Now != 0 {
			now = fmtVal(d.Now, d.Unit)
		}
		if err := t.Append(d.Check, d.Port, d.Name, base, now, change, verdict); err != nil {
			return err
		}
	}
	if err := t.Render(); err != nil {
		return err
	}
	fmt.Fprintf(w, "%d regression(s) against the baseline\n", regressions)
	return nil
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
