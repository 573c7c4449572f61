package reports

import (
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"

	"github.com/mattn/go-runewidth"
	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/tw"
)

// TableOptions says how the terminal table is drawn.
type TableOptions struct {
	// Width of the terminal in columns; 0: no limit, one line per row
	// (files, pipes, CI logs: a line is what grep finds).
	Width int
	// All shows every row and every node (rdmasuite report --all); by
	// default passing rows and all-pass nodes are folded into a line each.
	All bool
}

// Table renders the run with one line per row, however long, passing rows
// folded: TableWith with no width.
func Table(w io.Writer, r Run) error { return TableWith(w, r, TableOptions{}) }

// TableWidth renders the run for a terminal of width columns (0: no
// limit), passing rows folded: TableWith with that width.
func TableWidth(w io.Writer, r Run, width int) error {
	return TableWith(w, r, TableOptions{Width: width})
}

// TableWith renders the run, failures first, as an operator of a large
// fleet reads it: the verdict line with the culprits; one row per check
// that did not pass (fail, error, not-run, and a pass whose evidence asks to
// be read), pairs as client → server with the rail's ports; one line for
// the passing rows folded; a per-node roll-up of the nodes with a failure
// and one line for the nodes that all pass; the localisation. Long cells
// wrap to fit the width, columns merge or drop by priority when it is
// narrow; a word is split only when it is wider than its column can be.
func TableWith(w io.Writer, r Run, o TableOptions) error {
	width := o.Width
	if width > 0 && width < 60 {
		width = 60
	}
	// The verdict starts its own line: at 80 columns the culprit is then
	// on the first line of it, not pushed down by the run's name.
	fmt.Fprintln(w, wrapText(runTitle(r)+":", width, ""))
	fmt.Fprintln(w, wrapText(SummaryText(r), width, ""))
	shown, fold := foldRows(r, o.All)
	if len(shown) > 0 {
		if err := checkRows(w, r, shown, width); err != nil {
			return err
		}
	}
	if fold.rows() > 0 {
		fmt.Fprintln(w, wrapText(fold.text("--all"), width, ""))
	}
	if err := nodeRollup(w, r, width, o.All); err != nil {
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

// folded says what the folded rows were: how many passed, how many were
// allowed not-runs, and their check ids.
type folded struct {
	pass, allowed int
	ids           []string
}

func (f folded) rows() int { return f.pass + f.allowed }

// maxFoldedIDs: the fold line names this many check ids, then "…".
const maxFoldedIDs = 6

// text is "4092 passing rows folded (bandwidth/read, bandwidth/write):
// HOW shows them".
func (f folded) text(how string) string {
	what := fmt.Sprintf("%d passing row%s", f.pass, plural(f.pass))
	switch {
	case f.pass == 0:
		what = fmt.Sprintf("%d allowed not-run row%s", f.allowed, plural(f.allowed))
	case f.allowed > 0:
		what = fmt.Sprintf("%d passing and %d allowed not-run rows", f.pass, f.allowed)
	}
	ids := f.ids
	if len(ids) > maxFoldedIDs {
		ids = append(ids[:maxFoldedIDs:maxFoldedIDs], "…")
	}
	return fmt.Sprintf("%s folded (%s): %s shows them", what, strings.Join(ids, ", "), how)
}

// foldRows splits the checks into those shown, failures first (fail,
// error, not-run, warn, then the passes whose evidence asks to be read), and
// those folded: the passes and the allowed not-runs. all shows every
// check, in the run's order.
func foldRows(r Run, all bool) ([]Check, folded) {
	if all {
		return r.Checks, folded{}
	}
	var shown []Check
	var f folded
	seen := map[string]bool{}
	for _, c := range r.Checks {
		switch {
		case c.Status == Pass && !c.ShowEvidence:
			f.pass++
		case r.Allowed(c):
			f.allowed++
		default:
			shown = append(shown, c)
			continue
		}
		if !seen[c.ID] {
			seen[c.ID] = true
			f.ids = append(f.ids, c.ID)
		}
	}
	sort.Strings(f.ids)
	rank := map[Status]int{Fail: 0, Error: 1, NotRun: 2, Warn: 3, Pass: 4}
	sort.SliceStable(shown, func(i, j int) bool { return rank[shown[i].Status] < rank[shown[j].Status] })
	return shown, f
}

// tableLayout is one way to draw the check rows; checkRows takes the
// first whose words all fit the width.
type tableLayout struct {
	header []string
	cols   []column
	row    func(c Check, diag string) []string
	note   string // printed under the table: what this layout left out
}

var checkLayouts = []tableLayout{
	{header: []string{"status", "check", "variant", "nodes (client → server)", "measured", "diagnosis / fix"},
		cols: []column{{7, 0.5, false}, {16, 1.2, false}, {10, 0.6, false}, {10, 1.2, true}, {12, 1.5, false}, {20, 3, false}},
		row: func(c Check, d string) []string {
			return []string{"", checkLabel(c), c.Variant, NodesText(c), measuredText(c), d}
		}},
	// Narrower: the variant goes with the check, then the measured
	// values with the diagnosis, then (last resort) the measured values
	// go: a failing row's diagnosis names the value it failed on.
	{header: []string{"status", "check [variant]", "nodes (client → server)", "measured", "diagnosis / fix"},
		cols: []column{{7, 0.5, false}, {16, 1.2, false}, {10, 1.2, true}, {12, 1.5, false}, {20, 3, false}},
		row: func(c Check, d string) []string {
			return []string{"", variantLabel(c), NodesText(c), measuredText(c), d}
		}},
	{header: []string{"status", "check [variant]", "nodes (client → server)", "measured; diagnosis / fix"},
		cols: []column{{7, 0.5, false}, {12, 1.2, false}, {8, 1.2, true}, {20, 3, false}},
		row: func(c Check, d string) []string {
			return []string{"", variantLabel(c), NodesText(c), joinNonEmpty("; ", measuredText(notStated(c, d)), d)}
		}},
	// At the narrowest (60 columns) these minimums still fit.
	{header: []string{"status", "check [variant]", "nodes (client → server)", "diagnosis / fix"},
		cols: []column{{7, 0.5, false}, {12, 1.2, false}, {8, 1.2, true}, {20, 3, false}},
		row:  func(c Check, d string) []string { return []string{"", variantLabel(c), NodesText(c), d} },
		note: "(the measured column is left out at this width: a wider terminal or --format markdown shows it)"},
}

// notStated is c with only the measurements its diagnosis d does not
// already state ("write_1MiB_avg = 297 Gb/s, threshold …"): in one
// column, the judged value once is enough.
func notStated(c Check, d string) Check {
	var keep []Measurement
	for _, m := range c.Measured {
		if !strings.Contains(d, m.Name+" = "+fmtVal(m.Value, m.Unit)) {
			keep = append(keep, m)
		}
	}
	c.Measured = keep
	return c
}

// variantLabel is the check id, its variant in brackets, and its rail.
func variantLabel(c Check) string {
	s := c.ID
	if c.Variant != "" {
		s += " [" + c.Variant + "]"
	}
	if c.Rail != "" {
		s += " {" + c.Rail + "}"
	}
	return s
}

func joinNonEmpty(sep string, parts ...string) string {
	var out []string
	for _, p := range parts {
		if p != "" {
			out = append(out, p)
		}
	}
	return strings.Join(out, sep)
}

// checkRows draws the rows in the first layout that fits the width
// without splitting a word; when none does, the narrowest.
func checkRows(w io.Writer, r Run, cs []Check, width int) error {
	var notes footnotes
	diags := make([]string, len(cs))
	for i, c := range cs {
		diags[i] = verdictText(c)
	}
	if width > 0 {
		diags = notes.shorten(cs, diags)
	}
	layouts := checkLayouts
	if width <= 0 {
		layouts = layouts[:1]
	}
	var rows [][]string
	var widths []int
	var l tableLayout
	fits := false
	for _, l = range layouts {
		rows = rows[:0]
		for i, c := range cs {
			row := l.row(c, diags[i])
			row[0] = statusText(r, c)
			rows = append(rows, row)
		}
		if widths, fits = fitWidths(width, l.header, rows, l.cols); fits {
			break
		}
	}
	if !fits {
		listRows(w, r, cs, diags, width)
		notes.print(w, width)
		return nil
	}
	if err := renderTable(w, width, widths, l.header, rows); err != nil {
		return err
	}
	if l.note != "" {
		fmt.Fprintln(w, wrapText(l.note, width, ""))
	}
	notes.print(w, width)
	return nil
}

// listRows prints the checks as records, for a width no table layout fits
// without splitting a word: the status, the check and its nodes whole on
// the first line; what was measured and the diagnosis under it, wrapped at
// spaces.
func listRows(w io.Writer, r Run, cs []Check, diags []string, width int) {
	for i, c := range cs {
		head := fmt.Sprintf("%-8s %s", statusText(r, c), variantLabel(c))
		if nodes := NodesText(c); runewidth.StringWidth(head)+2+runewidth.StringWidth(nodes) <= width {
			fmt.Fprintf(w, "%s  %s\n", head, nodes)
		} else {
			fmt.Fprintf(w, "%s\n         %s\n", head, nodes)
		}
		if m := measuredText(notStated(c, diags[i])); m != "" {
			fmt.Fprintln(w, wrapText("measured: "+m, width, "         "))
		}
		if diags[i] != "" {
			fmt.Fprintln(w, wrapText(diags[i], width, "         "))
		}
	}
}

// footnotes hold the long texts that several rows repeat (a threshold's
// citation, a fix), printed once under the table: at 80 columns the same
// 300 characters in every failing row would fill the screen.
type footnotes struct{ texts []string }

// minFootnote: shorter texts stay in the row.
const minFootnote = 40

// shorten replaces, in the diagnoses, each threshold source and each fix
// that two rows or more repeat by a reference "[n]", the text most rows
// share first: a source that begins another ("… (applied to READ as to
// WRITE)") is then one note, not two.
func (f *footnotes) shorten(cs []Check, diags []string) []string {
	var cands []string
	fix := map[string]bool{}
	for _, c := range cs {
		for _, s := range longTexts(c) {
			if !slices.Contains(cands, s) {
				cands = append(cands, s)
			}
		}
		fix[c.Fix] = true
	}
	out := slices.Clone(diags)
	rows := func(s string) int {
		n := 0
		for _, d := range out {
			if strings.Contains(d, s) {
				n++
			}
		}
		return n
	}
	sort.SliceStable(cands, func(i, j int) bool {
		if a, b := rows(cands[i]), rows(cands[j]); a != b {
			return a > b
		}
		return len(cands[i]) > len(cands[j])
	})
	for _, s := range cands {
		if rows(s) < 2 {
			continue
		}
		ref := f.ref(s)
		if fix[s] {
			ref = "see " + ref
		}
		for i := range out {
			out[i] = strings.ReplaceAll(out[i], s, ref)
		}
	}
	// Then the diagnoses' shared tails: rows that fail for one cause say
	// it after their own node, pod and rail ("…, rail rxe0/1: write: no
	// CUDA driver: libcuda.so.1 could not be loaded …"), and the cause is
	// printed once, the rows listed with their reference.
	notes := 0
	for _, tail := range sharedTails(out) {
		if notes == maxSharedTails {
			break
		}
		// A tail counted before a more shared one took its rows' endings
		// may be shared no more.
		var at []int
		for i := range out {
			if strings.HasSuffix(out[i], tail) {
				at = append(at, i)
			}
		}
		if len(at) < 2 {
			continue
		}
		ref := f.ref(tail)
		for _, i := range at {
			out[i] = strings.TrimSuffix(out[i], tail) + "see " + ref
		}
		notes++
	}
	return out
}

// maxSharedTails bounds the notes made of shared causes: a report with
// more distinct causes than this is read by its first ones (the most
// shared) anyway.
const maxSharedTails = 24

// minSharedTail: a shared ending shorter than this stays in the rows.
const minSharedTail = 2 * minFootnote

// sharedTails are the endings (from the start of a diagnosis, or after
// ": " or "; ") that two diagnoses or more share, most shared first, then
// the longest: counted once, in one pass over the rows, so a fleet's
// thousands of failing rows cost one pass, not one per note.
func sharedTails(diags []string) []string {
	count := map[string]int{}
	for _, d := range diags {
		seen := map[string]bool{}
		for i := 0; i < len(d); i++ {
			if i > 0 && !strings.HasSuffix(d[:i], ": ") && !strings.HasSuffix(d[:i], "; ") {
				continue
			}
			if t := d[i:]; len(t) >= minSharedTail && !seen[t] {
				seen[t] = true
				count[t]++
			}
		}
	}
	var tails []string
	for t, n := range count {
		if n >= 2 {
			tails = append(tails, t)
		}
	}
	sort.Slice(tails, func(i, j int) bool {
		a, b := tails[i], tails[j]
		if count[a] != count[b] {
			return count[a] > count[b]
		}
		if len(a) != len(b) {
			return len(a) > len(b)
		}
		return a < b
	})
	return tails
}

// longTexts are the texts of c worth a footnote: its thresholds' sources
// and its fix.
func longTexts(c Check) []string {
	var out []string
	for _, m := range c.Measured {
		if m.Threshold != nil && len(m.Threshold.Source) >= minFootnote {
			out = append(out, m.Threshold.Source)
		}
	}
	if len(c.Fix) >= minFootnote {
		out = append(out, c.Fix)
	}
	return out
}

func (f *footnotes) ref(s string) string {
	for i, t := range f.texts {
		if t == s {
			return fmt.Sprintf("[%d]", i+1)
		}
	}
	f.texts = append(f.texts, s)
	return fmt.Sprintf("[%d]", len(f.texts))
}

// print writes the notes wrapped at spaces, never inside a word or a
// `code span` (a containerd spec's JSON, an rdma command), which must
// paste as printed.
func (f *footnotes) print(w io.Writer, width int) {
	for i, t := range f.texts {
		fmt.Fprintln(w, wrapText(fmt.Sprintf("[%d] %s", i+1, t), width, ""))
	}
}

// column says how a column gives way when the table is too wide: it
// never gets narrower than min, and the column widest for its weight
// gives way first, so a heavy column (the diagnosis) keeps the most room.
type column struct {
	min    int
	weight float64
	// whole: a cell up to maxWholeWord wide is one word (a pair "gpu-016
	// → gpu-017" reads best on one line).
	whole bool
}

// maxWholeWord: a word up to this wide (a node name, a rail label) is
// kept whole when the width allows; a longer one (a URL) may be split.
const maxWholeWord = 32

// fitWidths are the columns' widths for a table of at most width columns
// (0: each column as wide as its widest cell). whole: no word that could
// be kept whole had to be split. Columns give way first down to their
// longest word, then down to their minimum.
func fitWidths(width int, header []string, rows [][]string, cols []column) ([]int, bool) {
	widths := make([]int, len(header))
	words := make([]int, len(header))
	for ri, row := range append([][]string{header}, rows...) {
		for i, cell := range row {
			widths[i] = max(widths[i], runewidth.StringWidth(cell))
			if cw := runewidth.StringWidth(cell); ri > 0 && cols[i].whole && cw <= maxWholeWord {
				words[i] = max(words[i], cw)
				continue
			}
			for _, f := range strings.Fields(cell) {
				words[i] = max(words[i], min(runewidth.StringWidth(f), maxWholeWord))
			}
		}
	}
	if width <= 0 {
		return widths, true
	}
	// A border and a space each side: 3 columns per column, plus one.
	avail := width - 3*len(header) - 1
	floors := make([]int, len(cols))
	for i, c := range cols {
		floors[i] = max(c.min, words[i])
	}
	if giveWay(widths, floors, cols, avail) {
		return widths, true
	}
	for i, c := range cols {
		floors[i] = c.min
	}
	giveWay(widths, floors, cols, avail)
	return widths, false
}

// giveWay narrows the column widest for its weight, one column at a time,
// never below its floor, until the widths fit avail; false when they
// cannot.
func giveWay(widths, floors []int, cols []column, avail int) bool {
	for {
		total, widest := 0, -1
		for i, wd := range widths {
			total += wd
			if wd > floors[i] && (widest < 0 || float64(wd)/cols[i].weight > float64(widths[widest])/cols[widest].weight) {
				widest = i
			}
		}
		if total <= avail {
			return true
		}
		if widest < 0 {
			return false
		}
		widths[widest]--
	}
}

// renderTable prints the table with its cells wrapped to widths (when
// width limits the table), so no text is lost.
func renderTable(w io.Writer, width int, widths []int, header []string, rows [][]string) error {
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

// renderFitted prints a table whose lines are at most width columns
// (0: unlimited), wrapping cells at spaces (and inside words longer than
// their column) so no text is lost.
func renderFitted(w io.Writer, width int, header []string, rows [][]string, cols []column) error {
	widths, _ := fitWidths(width, header, rows, cols)
	return renderTable(w, width, widths, header, rows)
}

// nodeTally is how one node's checks came out (a pair check counts for
// both of its nodes) and which failed.
type nodeTally struct {
	pass, fail, err, notRun, allowed int
	failing                          []failingOn
}

// failingOn is one failing check of a node: its label and its partner.
type failingOn struct{ label, partner string }

// listed: the roll-up shows the node on its own line when folded.
func (t *nodeTally) listed() bool { return t.fail+t.err+t.notRun-t.allowed > 0 }

func tallyNodes(r Run) (map[string]*nodeTally, []string) {
	by := map[string]*nodeTally{}
	var order []string
	for _, c := range r.Checks {
		for _, n := range c.Nodes {
			t := by[n]
			if t == nil {
				t = &nodeTally{}
				by[n] = t
				order = append(order, n)
			}
			switch c.Status {
			case Pass, Warn: // a warn passed its bar (its row is shown)
				t.pass++
			case Fail:
				t.fail++
			case Error:
				t.err++
			case NotRun:
				t.notRun++
				if r.Allowed(c) {
					t.allowed++
				}
			}
			if c.Status == Fail || c.Status == Error {
				f := failingOn{label: checkLabel(c)}
				if len(c.Nodes) == 2 && c.Is().Pair {
					f.partner = c.Nodes[0]
					if f.partner == n {
						f.partner = c.Nodes[1]
					}
				}
				t.failing = append(t.failing, f)
			}
		}
	}
	sort.Strings(order)
	return by, order
}

// failingText groups a node's failing checks: the ids that failed on the
// same rail with the same partners share one entry, "bandwidth/read,
// bandwidth/write {mlx5_3/1→mlx5_3/1} with gpu-016, gpu-018".
func failingText(fs []failingOn) string {
	partners := map[string][]string{}
	var labels []string
	for _, f := range fs {
		if _, ok := partners[f.label]; !ok {
			labels = append(labels, f.label)
			partners[f.label] = nil
		}
		if f.partner != "" {
			partners[f.label] = locUnion(partners[f.label], []string{f.partner})
		}
	}
	type entry struct{ ids, rail, with string }
	var entries []entry
	at := map[[2]string]int{}
	for _, l := range labels {
		id, rail, _ := strings.Cut(l, " ")
		with := strings.Join(partners[l], ", ")
		k := [2]string{rail, with}
		if i, ok := at[k]; ok {
			entries[i].ids += ", " + id
			continue
		}
		at[k] = len(entries)
		entries = append(entries, entry{id, rail, with})
	}
	var out []string
	for _, e := range entries {
		out = append(out, joinNonEmpty(" ", e.ids, e.rail, prefixed("with ", e.with)))
	}
	return strings.Join(out, "; ")
}

func prefixed(p, s string) string {
	if s == "" {
		return ""
	}
	return p + s
}

// nodeRollup prints, per node, how its checks came out and which failed:
// the nodes with a failure, an error or a not-run the operator did not
// allow, one line each; the others folded into one line (all: every node).
func nodeRollup(w io.Writer, r Run, width int, all bool) error {
	by, order := tallyNodes(r)
	if len(order) == 0 {
		return nil
	}
	shown, quiet, allowed := foldNodes(by, order, all)
	var rows [][]string
	for _, n := range shown {
		t := by[n]
		rows = append(rows, []string{n, fmt.Sprint(t.pass), fmt.Sprint(t.fail), fmt.Sprint(t.err), fmt.Sprint(t.notRun), failingText(t.failing)})
	}
	if len(rows) > 0 {
		fmt.Fprintln(w, "per node (a pair check counts for both of its nodes):")
		if err := renderFitted(w, width, []string{"node", "pass", "fail", "error", "not run", "failed or errored checks"}, rows,
			[]column{{8, 1, false}, {4, 0.2, false}, {4, 0.2, false}, {5, 0.2, false}, {3, 0.2, false}, {14, 3, false}}); err != nil {
			return err
		}
	}
	if quiet > 0 {
		fmt.Fprintln(w, wrapText(quietNodesText(quiet, allowed, len(rows) == 0), width, ""))
	}
	return nil
}

// foldNodes splits the roll-up's nodes into those listed (every node with
// all; else those with a failure, error or unallowed not-run) and the
// quiet rest, counted, with the allowed not-runs among them.
func foldNodes(by map[string]*nodeTally, order []string, all bool) (shown []string, quiet, allowed int) {
	for _, n := range order {
		t := by[n]
		if !all && !t.listed() {
			quiet++
			allowed += t.allowed
			continue
		}
		shown = append(shown, n)
	}
	return shown, quiet, allowed
}

// quietNodesText is the line for the folded nodes: "253 nodes all pass".
func quietNodesText(n, allowed int, alone bool) string {
	s := fmt.Sprintf("%d node%s all pass", n, plural(n))
	if n == 1 {
		s = "1 node: all pass"
	}
	if allowed > 0 {
		s += " (allowed not-runs aside)"
	}
	if alone {
		s = "per node: " + s
	}
	return s
}
