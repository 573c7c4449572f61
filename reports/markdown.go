package reports

import (
	"fmt"
	"io"
	"sort"
	"strings"
)

// MarkdownOptions says how the Markdown report is written.
type MarkdownOptions struct {
	// All lists every check, every node and every node's facts
	// (rdmasuite report --all); by default passing rows, all-pass nodes
	// and nodes with the same facts are folded.
	All bool
}

// Markdown renders the acceptance report as Markdown, passing rows folded:
// MarkdownWith with no option.
func Markdown(w io.Writer, r Run) error { return MarkdownWith(w, r, MarkdownOptions{}) }

// MarkdownWith renders the acceptance report as Markdown, failures first:
// the verdict with the culprits, the nodes (grouped by their facts), the
// checks that did not pass, a line for the passing ones, the per-node
// roll-up, the localisation, the evidence of what failed, time per phase.
func MarkdownWith(w io.Writer, r Run, o MarkdownOptions) error {
	when := ""
	if !r.Started.IsZero() {
		when = fmt.Sprintf(", %s → %s", r.Started.Format("2006-01-02 15:04:05Z07:00"), r.Finished.Format("15:04:05"))
	}
	fmt.Fprintf(w, "# rdmasuite acceptance report\n\n%s%s.\n\n**%s**\n\n", runTitle(r), when, SummaryText(r))
	if len(r.Nodes) > 0 {
		fmt.Fprintf(w, "## Nodes\n\n| node | SKU | thresholds file | kubelet | kernel |\n|---|---|---|---|---|\n")
		for _, g := range nodeGroups(r.Nodes, o.All) {
			n := g.Node
			fmt.Fprintf(w, "| %s | %s | %s | %s | %s |\n", md(g.Label), md(n.SKU), md(n.ThresholdsFile), md(n.Kubelet), md(n.Kernel))
		}
		fmt.Fprintln(w)
	}
	shown, fold := foldRows(r, o.All)
	fmt.Fprintf(w, "## Checks\n\n")
	if len(shown) > 0 {
		fmt.Fprintf(w, "| status | check | variant | nodes | measured | diagnosis / fix |\n|---|---|---|---|---|---|\n")
	}
	// A text several rows share (a source, a fix, a cause) is a numbered
	// note under the table, as in the terminal table.
	var notes footnotes
	diags := make([]string, len(shown))
	for i, c := range shown {
		diags[i] = verdictText(c)
	}
	diags = notes.shorten(shown, diags)
	for i, c := range shown {
		badge := statusBadge(c.Status)
		if r.Allowed(c) {
			badge += " (allowed)"
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s |\n", badge, md(checkLabel(c)), md(c.Variant),
			md(strings.Join(c.Nodes, ", ")), md(measuredText(c)), md(diags[i]))
	}
	if len(notes.texts) > 0 {
		fmt.Fprintln(w)
		for i, t := range notes.texts {
			fmt.Fprintf(w, "%d. %s\n", i+1, md(t))
		}
	}
	if fold.rows() > 0 {
		if len(shown) > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "_%s._\n", md(fold.text("`rdmasuite report --all --format markdown`")))
	}
	markdownRollup(w, r, o.All)
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

// markdownRollup is the per-node table: the nodes with something to read,
// then one line for the nodes that all pass (all: every node).
func markdownRollup(w io.Writer, r Run, all bool) {
	by, order := tallyNodes(r)
	if len(order) == 0 {
		return
	}
	fmt.Fprintf(w, "\n## Per node\n\nA pair check counts for both of its nodes.\n\n")
	shown, quiet, allowed := foldNodes(by, order, all)
	if len(shown) > 0 {
		fmt.Fprintf(w, "| node | pass | fail | error | not run | failed or errored checks |\n|---|---|---|---|---|---|\n")
	}
	for _, n := range shown {
		t := by[n]
		fmt.Fprintf(w, "| %s | %d | %d | %d | %d | %s |\n", md(n), t.pass, t.fail, t.err, t.notRun, md(failingText(t.failing)))
	}
	if quiet > 0 {
		if len(shown) > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "%s.\n", quietNodesText(quiet, allowed, false))
	}
}

// foldNodesOver: a run of more nodes than this lists its nodes grouped by
// their facts; one of fewer lists each.
const foldNodesOver = 16

// nodeGroup is nodes with the same facts (SKU, thresholds file, kubelet,
// kernel): Label names them ("gpu-017", or "256 nodes (gpu-000 …
// gpu-255)"), Node holds their facts.
type nodeGroup struct {
	Label string
	Node  Node
}

// nodeGroups lists each node on its own for a small run or with all, and
// groups nodes by their facts for a large one.
func nodeGroups(ns []Node, all bool) []nodeGroup {
	var out []nodeGroup
	if all || len(ns) <= foldNodesOver {
		for _, n := range ns {
			out = append(out, nodeGroup{Label: n.Name, Node: n})
		}
		return out
	}
	type key struct{ sku, file, kubelet, kernel string }
	names := map[key][]string{}
	first := map[key]Node{}
	var keys []key
	for _, n := range ns {
		k := key{n.SKU, n.ThresholdsFile, n.Kubelet, n.Kernel}
		if _, ok := names[k]; !ok {
			keys = append(keys, k)
			first[k] = n
		}
		names[k] = append(names[k], n.Name)
	}
	for _, k := range keys {
		ns := names[k]
		sort.Strings(ns)
		label := ns[0]
		if len(ns) > 1 {
			label = fmt.Sprintf("%d nodes (%s … %s)", len(ns), ns[0], ns[len(ns)-1])
		}
		out = append(out, nodeGroup{Label: label, Node: first[k]})
	}
	return out
}
