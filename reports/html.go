package reports

import (
	"fmt"
	"html/template"
	"io"
	"math"
	"sort"
	"strings"
)

// The HTML acceptance report: one self-contained file (inline CSS and
// SVG, no script, no font, no image, no link out; a Content-Security-Policy
// of default-src 'none' makes a browser refuse anything else), in the
// order an operator reads after an upgrade: the verdict and, under it,
// the culprits the localisation found; did anything get worse than last
// time; which node/port is below its floor (the fleet view: a cell per
// port; the per-op heat map for small runs); memlock, what doctor found,
// NCCL, the NFS stall, then every check with its evidence (at fleet scale
// the passing ones folded or counted).

// Heat-map and fleet-matrix colours, also what hack/html-report-test.sh
// looks for in the browser's screenshot. The scale reads as an operator
// does: green is healthy (the floor is met: a healthy NDR port at
// 388-396 Gb/s against a 380 Gb/s floor is green), amber is a miss by a
// little, red a clear miss.
const (
	ColorBelowFloor = "#d73027" // 10 % or more below the floor, or failed without a value
	ColorNearFloor  = "#fdae61" // below the floor by less than 10 % (a marginal miss: still a fail)
	ColorAboveFloor = "#1a9850" // met the floor
	ColorNoFloor    = "#9ecae1" // measured, no floor to compare with
	ColorUnmeasured = "#bdbdbd" // asked for, not measured (the reason is in the cell's title)
	ColorStall      = "#762a83" // an I/O stall on the disruption timeline
	ColorAbsent     = "#9e9ac8" // any other interval on it (the driver gone)
	// ColorPartner: a port that failed only with a localised culprit (a
	// bad port, node or link at the other end): not a failure of its own.
	ColorPartner = "#80cdc1"
	// ColorDirtyLink: a port whose bandwidth met the floor while its port
	// counters rose (a <feature>/link check failed): a fail, drawn apart
	// from a slow port because the fix is the cable, not the rate.
	ColorDirtyLink = "#c51b7d"
	// ColorHostCapped: a port that failed where its host's configuration
	// (PCIe link, MTU, NUMA, ACS) explains it: the fix is the host.
	ColorHostCapped = "#8073ac"
	// ColorPeerOutlier: a port that met its floor but measured far below
	// its peers (a peer-outlier warn): it passes, look at it first.
	ColorPeerOutlier = "#d9ef8b"
	// ColorCulprit: the background of the culprits' banner under the
	// verdict, first screen of the page.
	ColorCulprit = "#ffeda0"
)

// marginal: a value at or above this fraction of its floor, and below the
// floor, is a marginal miss (amber); further below is red.
const marginal = 0.90

// HTML writes the acceptance report of r; diff is the baseline
// comparison, nil when none was asked for.
func HTML(w io.Writer, r Run, diff *DiffResult) error {
	vp := verdictOf(r)
	fs := vp.all
	p := htmlPage{
		RunID: r.RunID, Server: r.Cluster.Server, Version: r.Cluster.Version,
		Summary: summaryText(r, vp), Passed: r.Passed(), Exit: r.ExitCode(),
		Culprits: culpritItems(vp), Fleet: fleetView(r, fs),
		Heat: heatMap(r), Memlock: memlockRows(r), Findings: doctorRows(r),
		NCCL: ncclCharts(r), Stalls: stallCharts(r), Localize: fs,
	}
	if !r.Started.IsZero() {
		p.When = r.Started.UTC().Format("2006-01-02 15:04:05Z") + " → " + r.Finished.UTC().Format("15:04:05Z")
	}
	if diff != nil {
		p.Baseline = baselineView(*diff)
		// The CLI's order: a run that did not pass exits with that;
		// a passing run with regressions exits ExitRegression.
		if (diff.Regressions() > 0 || diff.NothingCompared() != "") && p.Exit == ExitPassed {
			p.Exit = ExitRegression
			p.Passed = false
		}
	}
	for _, g := range nodeGroups(r.Nodes, false) {
		n := g.Node
		p.Nodes = append(p.Nodes, nodeRow{Name: g.Label, SKU: n.SKU, File: n.ThresholdsFile, Kernel: n.Kernel, Kubelet: n.Kubelet})
	}
	p.Checks, p.Passing = htmlCheckRows(r)
	return htmlTemplate.Execute(w, p)
}

type htmlPage struct {
	RunID, Server, Version, When, Summary string
	Passed                                bool
	Exit                                  int
	Culprits                              *culpritBanner
	Baseline                              *baselineSection
	Fleet                                 fleetSection
	Heat                                  heatSection
	Memlock                               []memlockRow
	Findings                              []findingRow
	NCCL                                  []chart
	Stalls                                []chart
	Localize                              []Finding
	Nodes                                 []nodeRow
	Checks                                []checkRow
	Passing                               *passingFold
}

// culpritBanner lists the culprits under the verdict, on the first screen.
type culpritBanner struct {
	// SKUWide: SKUs that missed a floor as a whole (SKUShortfalls); the
	// culprits they explain are not listed one by one.
	SKUWide []string
	Items   []culpritItem
	More    int // culprits not listed here (the localisation lists all)
	// Warnings: the warn rows by the port they name (VerdictWarnings),
	// apart from the failures.
	Warnings     []string
	MoreWarnings int
}

type culpritItem struct{ Text, Explanation string }

// maxBannerCulprits: the banner lists this many; the localisation under
// the matrix lists every finding.
const maxBannerCulprits = 10

func culpritItems(vp verdictParts) *culpritBanner {
	short, cs, ws := vp.short, Culprits(vp.fs), vp.warns
	if len(cs) == 0 && len(short) == 0 && len(ws) == 0 {
		return nil
	}
	mixed := mixedVariants(cs)
	b := &culpritBanner{More: max(0, len(cs)-maxBannerCulprits), MoreWarnings: max(0, len(ws)-maxBannerCulprits)}
	for _, s := range short {
		b.SKUWide = append(b.SKUWide, s.Text())
	}
	for _, c := range cs[:min(len(cs), maxBannerCulprits)] {
		b.Items = append(b.Items, culpritItem{Text: c.Text(mixed), Explanation: c.Explanation})
	}
	for _, w := range ws[:min(len(ws), maxBannerCulprits)] {
		b.Warnings = append(b.Warnings, w.Text(true))
	}
	return b
}

// foldChecksOver: a run of more checks than this lists the passing ones in
// a fold under the others, one line each; listPassingUpTo: with more
// passing checks than this (a fleet: 4096 at 256 nodes × 8 rails), they
// are counted, not listed: the fleet view holds each port's worst value
// and results.json every value, and the page stays a page.
const foldChecksOver, listPassingUpTo = 200, 2000

// passingFold is the passing checks of a large run, one line each (none
// when there are too many to list).
type passingFold struct {
	Count int
	Lines string
}

// htmlCheckRows are the rows of "Every check": all of them, in the run's
// order, for a small run; for a large one the checks that did not pass,
// and the passing ones as lines in a fold.
func htmlCheckRows(r Run) ([]checkRow, *passingFold) {
	row := func(c Check) checkRow {
		return checkRow{Status: string(c.Status), StatusText: statusText(r, c), ID: checkLabel(c),
			Variant: c.Variant, Nodes: NodesText(c), Measured: measuredText(c), Verdict: verdictText(c), Evidence: c.Evidence}
	}
	var rows []checkRow
	if len(r.Checks) <= foldChecksOver {
		for _, c := range r.Checks {
			rows = append(rows, row(c))
		}
		return rows, nil
	}
	var b strings.Builder
	fold := &passingFold{}
	for _, c := range r.Checks {
		if c.Status != Pass || c.ShowEvidence {
			rows = append(rows, row(c))
			continue
		}
		fold.Count++
		if fold.Count <= listPassingUpTo {
			fmt.Fprintf(&b, "%s %s %s: %s\n", checkLabel(c), orDash(c.Variant), NodesText(c), measuredText(c))
		}
	}
	if fold.Count <= listPassingUpTo {
		fold.Lines = b.String()
	}
	return rows, fold
}

type nodeRow struct{ Name, SKU, File, Kernel, Kubelet string }

type checkRow struct {
	Status, StatusText, ID, Variant, Nodes, Measured, Verdict string
	Evidence                                                  []string
}

// --- baseline ---------------------------------------------------------

type baselineSection struct {
	Regressions        int
	Headline           string   // DiffResult.Headline: the count and kinds first
	Warnings           []string // about the baseline itself
	OnlyInBase, OnlyIn string
	Rows               []deltaRow // what to act on, then what improved (DiffResult.Ordered)
	Unchanged          []deltaRow // the rows that only inform: folded
}

type deltaRow struct {
	Regression                                          bool
	Kind, Check, Node, Port, Name, Base, Now, Pct, Note string
}

// baselineView is the diff as the text table shows it: the headline, then
// regressions by kind, then improvements, the informing rows folded.
func baselineView(d DiffResult) *baselineSection {
	b := &baselineSection{Regressions: d.Regressions(), Headline: d.Headline(), Warnings: d.Warnings}
	if !d.NoCommonNodes { // else the headline names both sets
		if len(d.OnlyInBase) > 0 {
			b.OnlyInBase = NodeList(d.OnlyInBase)
		}
		if len(d.OnlyInRun) > 0 {
			b.OnlyIn = NodeList(d.OnlyInRun)
		}
	}
	for _, x := range d.Ordered() {
		k := x.Kind()
		row := deltaRow{Regression: x.Regression, Kind: k.String(), Check: x.Check, Node: x.Node, Port: x.Port, Name: x.Name, Note: x.Note}
		switch {
		case x.Name == "":
			row.Name, row.Base, row.Now = "status", string(x.BaseStatus), string(x.NowStatus)
		default:
			row.Base, row.Now = "—", "—"
			if x.HasBase {
				row.Base = fmtVal(x.Base, x.Unit)
			}
			if x.HasNow {
				row.Now = fmtVal(x.Now, x.Unit)
			}
			if x.HasBase && x.HasNow && x.Pct != 0 {
				row.Pct = fmt.Sprintf("%+.1f %%", x.Pct)
			}
		}
		if k.Folded() {
			b.Unchanged = append(b.Unchanged, row)
			continue
		}
		b.Rows = append(b.Rows, row)
	}
	return b
}

// --- heat map ---------------------------------------------------------

type heatSection struct {
	SVG        template.HTML
	Unmeasured []checkRow
	// Fold: the map is drawn in a fold under the fleet matrix (a mid-size
	// run); Omitted: the rows it would have had, not drawn at all (a large
	// run: thousands of rows, megabytes; the matrix summarises them).
	Fold    bool
	Omitted int
}

// The per-op heat map has a row per node and port: drawn open up to
// heatOpenRows rows, in a fold up to heatFoldRows, not at all above.
const heatOpenRows, heatFoldRows = 48, 384

type heatCell struct {
	ratio    float64 // value / floor; NaN without a floor
	value    string
	color    string
	title    string
	measured bool
}

// heatMap draws the bandwidth measurements per measuring node and port
// (rows) against op, size and variant (columns), the worst of a cell's
// measurements when a node/port measured with several partners. A
// bandwidth check that measured nothing gets a grey cell in its own
// "not measured" column, with its reason in the cell's title and in the
// list under the map: asked for and not measured is never left blank.
func heatMap(r Run) heatSection {
	var sec heatSection
	// A large run's map is not drawn: count its rows before building
	// thousands of cells to throw away. Its unmeasured checks are still
	// listed: the list is the only place they show.
	if n := heatRows(r); n > heatFoldRows {
		sec.Omitted = n
		for _, c := range r.Checks {
			if isHeatCheck(c) && !hasUnit(c, c.Is().HeatUnit) {
				sec.Unmeasured = append(sec.Unmeasured, unmeasuredRow(r, c))
			}
		}
		return sec
	}
	g := newHeatGrid()
	for _, c := range r.Checks {
		if isHeatCheck(c) && !g.addCheck(c) {
			sec.Unmeasured = append(sec.Unmeasured, unmeasuredRow(r, c))
		}
	}
	if len(g.rows) == 0 {
		return sec
	}
	sec.Fold = len(g.rows) > heatOpenRows
	sec.SVG = g.svg()
	return sec
}

// unmeasuredRow lists a heat check that measured nothing under the map,
// with the verdict that says why.
func unmeasuredRow(r Run, c Check) checkRow {
	return checkRow{Status: string(c.Status), StatusText: statusText(r, c), ID: checkLabel(c),
		Variant: c.Variant, Nodes: NodesText(c), Verdict: verdictText(c)}
}

// heatGrid collects the map's cells keyed by row and column label, keeping
// the labels in first-seen sets so the drawing can sort them once.
type heatGrid struct {
	cells            map[[2]string]*heatCell
	rows, cols       []string
	seenRow, seenCol map[string]bool
}

func newHeatGrid() *heatGrid {
	return &heatGrid{cells: map[[2]string]*heatCell{}, seenRow: map[string]bool{}, seenCol: map[string]bool{}}
}

// add puts c in its cell unless what is there already stands for it: a
// measured value beats an unmeasured cell, and among measured ones the
// worse (worseCell) wins, so a port is shown by its worst partner.
func (g *heatGrid) add(row, col string, c *heatCell) {
	if !g.seenRow[row] {
		g.seenRow[row] = true
		g.rows = append(g.rows, row)
	}
	if !g.seenCol[col] {
		g.seenCol[col] = true
		g.cols = append(g.cols, col)
	}
	k := [2]string{row, col}
	old := g.cells[k]
	switch {
	case old == nil, !old.measured && c.measured:
		g.cells[k] = c
	case c.measured && old.measured && worseCell(c, old):
		g.cells[k] = c
	}
}

// addCheck adds a heat check's measurements in its unit, one cell each;
// a check that measured none gets a "not measured" cell instead, and
// addCheck says false so the caller lists it.
func (g *heatGrid) addCheck(c Check) (measured bool) {
	op := strings.TrimPrefix(c.ID, "bandwidth/")
	for _, m := range c.Measured {
		if m.Unit != c.Is().HeatUnit {
			continue
		}
		measured = true
		col := op + " " + sizeOf(m.Name) + " · " + orDash(c.Variant)
		g.add(heatRow(c, m), col, measuredCell(c, m))
	}
	if !measured {
		g.add(heatUnmeasuredRow(c), op+" not measured · "+orDash(c.Variant), &heatCell{value: "n/m", color: ColorUnmeasured, ratio: math.NaN(),
			title: fmt.Sprintf("%s %s: %s — not measured: %s", checkLabel(c), NodesText(c), c.Status, verdictText(c))})
	}
	return measured
}

// heatRow is the row a measurement is drawn in: its measuring node and
// port, falling back to the check's first node and the measuring side of
// its rail when the measurement names none. heatRows counts by it too, so
// the two cannot disagree on a run's size.
func heatRow(c Check, m Measurement) string {
	node, port := m.Node, m.Port
	if node == "" && len(c.Nodes) > 0 {
		node = c.Nodes[0]
	}
	if port == "" {
		port = railSource(c.Rail)
	}
	return node + " " + orDash(port)
}

// heatUnmeasuredRow is the row of a check that measured nothing: there is
// no measurement to name a node or port, so the check's own stand in.
func heatUnmeasuredRow(c Check) string {
	return firstNode(c) + " " + orDash(railSource(c.Rail))
}

// measuredCell is one measurement's cell: coloured by its ratio to a ">="
// floor when it has one, and titled with everything an operator hovering
// over it needs to find the check.
func measuredCell(c Check, m Measurement) *heatCell {
	cell := &heatCell{measured: true, value: fmt.Sprintf("%.3g", m.Value), ratio: math.NaN(), color: ColorNoFloor}
	title := fmt.Sprintf("%s %s %s, rail %s: %s (%s)", c.ID, orDash(c.Variant), NodesText(c), orDash(c.Rail), fmtVal(m.Value, m.Unit), c.Status)
	if t := m.Threshold; t != nil && t.Op == ">=" && t.Value > 0 {
		cell.ratio = m.Value / t.Value
		cell.color = ratioColor(cell.ratio, t.Met(m.Value))
		title += fmt.Sprintf("; floor %s (%s), %.2f× the floor", fmtVal(t.Value, m.Unit), t.Source, cell.ratio)
	}
	cell.title = title
	return cell
}

// svg draws the grid, rows and columns sorted so the map reads the same
// whatever order the checks ran in. Every text in it goes through esc.
func (g *heatGrid) svg() template.HTML {
	sort.Strings(g.rows)
	sort.Strings(g.cols)
	labelW, cellW := heatWidths(g.rows, g.cols)
	const cellH, headH = 34, 70
	width := labelW + cellW*len(g.cols) + 10
	height := headH + cellH*len(g.rows) + 10
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" class="heat" width="%d" height="%d" viewBox="0 0 %d %d" role="img" aria-label="bandwidth per node and port against the floor">`, width, height, width, height)
	for j, col := range g.cols {
		x := labelW + j*cellW + cellW/2
		op, rest, _ := strings.Cut(col, " · ")
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle" class="colhead">%s</text>`, x, headH-26, esc(op))
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle" class="colhead">%s</text>`, x, headH-10, esc(rest))
	}
	for i, row := range g.rows {
		y := headH + i*cellH
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="end" class="rowhead">%s</text>`, labelW-8, y+cellH/2+5, esc(row))
		for j, col := range g.cols {
			heatCellSVG(&b, g.cells[[2]string{row, col}], labelW+j*cellW, y, cellW, cellH)
		}
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String()) // every text in it went through esc
}

// heatWidths sizes the row labels and the cells from the longest labels
// (about 7 px a character at 12 px), so no label is clipped; a column
// label is drawn on two lines, split at " · ".
func heatWidths(rows, cols []string) (labelW, cellW int) {
	labelW, cellW = 60, 90
	for _, row := range rows {
		labelW = max(labelW, 7*len(row)+16)
	}
	for _, col := range cols {
		op, rest, _ := strings.Cut(col, " · ")
		cellW = max(cellW, 7*max(len(op), len(rest))+12)
	}
	return labelW, cellW
}

// heatCellSVG draws one cell at (x, y): an empty box where the node/port
// has nothing in that column, else the value (and its ratio to the floor)
// on its colour, with the title as the hover text.
func heatCellSVG(b *strings.Builder, c *heatCell, x, y, cellW, cellH int) {
	if c == nil {
		fmt.Fprintf(b, `<rect x="%d" y="%d" width="%d" height="%d" class="empty"/>`, x+1, y+1, cellW-2, cellH-2)
		return
	}
	fmt.Fprintf(b, `<g><title>%s</title><rect x="%d" y="%d" width="%d" height="%d" fill="%s"/>`, esc(c.title), x+1, y+1, cellW-2, cellH-2, c.color)
	label := c.value
	if !math.IsNaN(c.ratio) {
		label += fmt.Sprintf(" (%.2f×)", c.ratio)
	}
	fmt.Fprintf(b, `<text x="%d" y="%d" text-anchor="middle" class="cell">%s</text></g>`, x+cellW/2, y+cellH/2+5, esc(label))
}

// heatRows is how many rows the heat map would have: the node/port pairs
// that measured bandwidth, and those of the checks that measured none.
func heatRows(r Run) int {
	rows := map[string]bool{}
	for _, c := range r.Checks {
		if !isHeatCheck(c) {
			continue
		}
		if !hasUnit(c, c.Is().HeatUnit) {
			rows[heatUnmeasuredRow(c)] = true
			continue
		}
		for _, m := range c.Measured {
			if m.Unit == c.Is().HeatUnit {
				rows[heatRow(c, m)] = true
			}
		}
	}
	return len(rows)
}

func hasUnit(c Check, unit string) bool {
	for _, m := range c.Measured {
		if m.Unit == unit {
			return true
		}
	}
	return false
}

// isHeatCheck says the check's measurements colour the pair heat map and
// the fleet view.
func isHeatCheck(c Check) bool { return c.Is().HeatUnit != "" }

// worseCell: the lower ratio to the floor (or value without one) stands
// for the cell.
func worseCell(a, b *heatCell) bool {
	if math.IsNaN(a.ratio) || math.IsNaN(b.ratio) {
		return !math.IsNaN(a.ratio) // a floor-judged value beats an unjudged one
	}
	return a.ratio < b.ratio
}

// ratioColor: green when the floor is met, amber when missed by less than
// 10 %, red below that.
func ratioColor(ratio float64, met bool) string {
	switch {
	case met:
		return ColorAboveFloor
	case ratio >= marginal:
		return ColorNearFloor
	}
	return ColorBelowFloor
}

// sizeOf is the size in a bandwidth measurement's name (write_64KiB_avg).
func sizeOf(name string) string {
	parts := strings.Split(name, "_")
	if len(parts) >= 2 {
		return parts[1]
	}
	return name
}

// railSource is the measuring side of a rail ("mlx5_0/1→mlx5_1/1").
func railSource(rail string) string {
	src, _, _ := strings.Cut(rail, "→")
	return src
}

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

func esc(s string) string { return template.HTMLEscapeString(s) }

// --- memlock ----------------------------------------------------------

type memlockRow struct {
	Status, Check, Node, Variant, Value, Floor, Source, Verdict string
}

func memlockRows(r Run) []memlockRow {
	var out []memlockRow
	for _, c := range r.Checks {
		if !strings.HasPrefix(c.ID, "memlock/") {
			continue
		}
		row := memlockRow{Status: string(c.Status), Check: c.ID, Node: NodesText(c), Variant: c.Variant, Verdict: verdictText(c)}
		for _, m := range c.Measured {
			row.Value = m.Name + " " + fmtVal(m.Value, m.Unit)
			if m.Threshold != nil {
				row.Floor, row.Source = m.Threshold.Op+" "+fmtVal(m.Threshold.Value, m.Unit), m.Threshold.Source
			}
		}
		out = append(out, row)
	}
	return out
}

// --- doctor -----------------------------------------------------------

type findingRow struct {
	Status, ID, Title, Nodes, Diagnosis, Fix, Reason string
	Evidence                                         []string
}

// doctorRows: what doctor found, problems first.
func doctorRows(r Run) []findingRow {
	var out []findingRow
	for _, c := range r.Checks {
		if !strings.HasPrefix(c.ID, "doctor/") {
			continue
		}
		out = append(out, findingRow{Status: string(c.Status), ID: c.ID, Title: c.Title, Nodes: NodesText(c),
			Diagnosis: c.Diagnosis, Fix: c.Fix, Reason: c.Reason, Evidence: c.Evidence})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Status != string(Pass) && out[j].Status == string(Pass) })
	return out
}

// --- charts -----------------------------------------------------------

type chart struct {
	Status, Title, Caption string
	SVG                    template.HTML
}

// ncclCharts: bus bandwidth over the size sweep per NCCL check that
// measured one, the floor as a dashed line where the check has one.
func ncclCharts(r Run) []chart {
	var out []chart
	for _, c := range r.Checks {
		if !strings.HasPrefix(c.ID, "nccl/") {
			continue
		}
		var xs []string
		var ys []float64
		var floor *Threshold
		for _, m := range c.Measured {
			if !strings.HasPrefix(m.Name, "busbw ") {
				continue
			}
			xs = append(xs, strings.TrimPrefix(m.Name, "busbw "))
			ys = append(ys, m.Value)
			if m.Threshold != nil {
				floor = m.Threshold
			}
		}
		caption := c.Title + " [" + orDash(c.Variant) + "] " + NodesText(c)
		if len(ys) == 0 {
			out = append(out, chart{Status: string(c.Status), Title: c.ID, Caption: caption + ": no bus bandwidth measured — " + verdictText(c)})
			continue
		}
		out = append(out, chart{Status: string(c.Status), Title: c.ID, Caption: caption, SVG: lineChart(xs, ys, floor, "GB/s")})
	}
	return out
}

// lineChart plots ys over the categorical xs (a size sweep: equal steps).
func lineChart(xs []string, ys []float64, floor *Threshold, unit string) template.HTML {
	const w, h, left, bottom, top = 660, 240, 60, 40, 16
	maxY := 0.0
	for _, y := range ys {
		if !math.IsNaN(y) && !math.IsInf(y, 0) {
			maxY = math.Max(maxY, y)
		}
	}
	if floor != nil {
		maxY = math.Max(maxY, floor.Value)
	}
	if maxY <= 0 {
		maxY = 1
	}
	maxY *= 1.1
	plotW, plotH := float64(w-left-30), float64(h-top-bottom)
	px := func(i int) float64 {
		if len(xs) == 1 {
			return float64(left) + plotW/2
		}
		return float64(left) + plotW*float64(i)/float64(len(xs)-1)
	}
	py := func(v float64) float64 { return float64(top) + plotH*(1-v/maxY) }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" class="chart" width="%d" height="%d" viewBox="0 0 %d %d">`, w, h, w, h)
	fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" class="axis"/>`, left, h-bottom, w-10, h-bottom)
	fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" class="axis"/>`, left, top, left, h-bottom)
	for _, f := range []float64{0, 0.5, 1} {
		v := maxY / 1.1 * f
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end" class="tick">%.3g</text>`, left-6, py(v)+4, v)
	}
	fmt.Fprintf(&b, `<text x="12" y="%d" class="tick">%s</text>`, top-4, esc(unit))
	step := 1 + len(xs)/12 // at most a dozen size labels
	for i, x := range xs {
		if i%step == 0 || i == len(xs)-1 {
			fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle" class="tick">%s</text>`, px(i), h-bottom+16, esc(x))
		}
	}
	if floor != nil {
		fmt.Fprintf(&b, `<g><title>floor %s %s (%s)</title><line x1="%d" y1="%.1f" x2="%d" y2="%.1f" class="floor"/></g>`,
			esc(floor.Op), esc(fmtVal(floor.Value, unit)), esc(floor.Source), left, py(floor.Value), w-10, py(floor.Value))
	}
	var pts []string
	for i, y := range ys {
		pts = append(pts, fmt.Sprintf("%.1f,%.1f", px(i), py(y)))
	}
	fmt.Fprintf(&b, `<polyline points="%s" class="series"/>`, strings.Join(pts, " "))
	for i, y := range ys {
		fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="3" class="point"><title>%s: %s</title></circle>`, px(i), py(y), esc(xs[i]), esc(fmtVal(y, unit)))
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// stallCharts: a disruption's timeline (Check.Timeline) as bars on a time
// axis from T, instants as ticks, the check's stall limit named.
func stallCharts(r Run) []chart {
	var out []chart
	for _, c := range r.Checks {
		if len(c.Timeline) == 0 {
			continue
		}
		caption := c.Title + " — " + NodesText(c)
		for _, m := range c.Measured {
			if m.Name == "longest_gap" {
				caption += fmt.Sprintf("; longest gap %s", fmtVal(m.Value, m.Unit))
				if t := m.Threshold; t != nil {
					caption += fmt.Sprintf(" (limit %s %s, %s)", t.Op, fmtVal(t.Value, m.Unit), t.Source)
				}
			}
		}
		out = append(out, chart{Status: string(c.Status), Title: c.ID, Caption: caption, SVG: timelineChart(c.Timeline)})
	}
	return out
}

func timelineChart(spans []Span) template.HTML {
	const rowH, top, bottom = 24, 10, 30
	left := 120
	for _, s := range spans {
		left = max(left, 7*len(s.Label+" ("+s.Clock+")")+16) // the row labels fit, about 7 px a character
	}
	w := left + 520
	lo, hi := 0.0, 1.0
	for _, s := range spans {
		lo, hi = math.Min(lo, s.From), math.Max(hi, s.To)
	}
	hi += (hi - lo) * 0.05
	h := top + rowH*len(spans) + bottom
	plotW := float64(w - left - 20)
	px := func(t float64) float64 { return float64(left) + plotW*(t-lo)/(hi-lo) }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" class="chart" width="%d" height="%d" viewBox="0 0 %d %d">`, w, h, w, h)
	axisY := h - bottom
	fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" class="axis"/>`, left, axisY, w-20, axisY)
	for _, t := range ticks(lo, hi) {
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" class="grid"/><text x="%.1f" y="%d" text-anchor="middle" class="tick">T%+g s</text>`,
			px(t), top, px(t), axisY, px(t), axisY+16, t)
	}
	for i, s := range spans {
		y := top + i*rowH
		label := s.Label
		if s.Clock != "" {
			label += " (" + s.Clock + ")"
		}
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="end" class="rowhead">%s</text>`, left-8, y+rowH/2+4, esc(label))
		title := fmt.Sprintf("%s: T%+.1f s", s.Label, s.From)
		if s.To != s.From {
			title += fmt.Sprintf(" .. T%+.1f s (%.1f s)", s.To, s.To-s.From)
		}
		if s.Open {
			title += ", still going when observation stopped"
		}
		class := "span"
		if strings.HasPrefix(s.Label, "I/O stalled") {
			class = "stall"
		}
		if s.To == s.From {
			fmt.Fprintf(&b, `<g><title>%s</title><rect x="%.1f" y="%d" width="4" height="%d" class="instant"/></g>`, esc(title), px(s.From)-2, y+3, rowH-6)
			continue
		}
		fmt.Fprintf(&b, `<g><title>%s</title><rect x="%.1f" y="%d" width="%.1f" height="%d" class="%s"/></g>`,
			esc(title), px(s.From), y+3, math.Max(px(s.To)-px(s.From), 2), rowH-6, class)
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// ticks are about five round values between lo and hi.
func ticks(lo, hi float64) []float64 {
	step := math.Pow(10, math.Floor(math.Log10((hi-lo)/5)))
	for _, m := range []float64{1, 2, 5, 10} {
		if (hi-lo)/(step*m) <= 6 {
			step *= m
			break
		}
	}
	var out []float64
	for t := math.Ceil(lo/step) * step; t <= hi; t += step {
		out = append(out, math.Round(t*1000)/1000)
	}
	return out
}

var htmlTemplate = template.Must(template.New("report").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>rdmasuite acceptance report {{.RunID}}</title>
<style>
body { font: 14px/1.45 system-ui, sans-serif; margin: 1.5em; color: #222; max-width: 1400px; }
h1 { font-size: 1.5em; margin: 0 0 .2em; } h2 { font-size: 1.2em; margin-top: 1.6em; border-bottom: 1px solid #ddd; }
.verdict { padding: .7em 1em; border-radius: 4px; font-weight: 600; font-size: 1.1em; }
.verdict.passed { background: #e5f5e0; border: 2px solid ` + ColorAboveFloor + `; }
.verdict.failed { background: #fde0dd; border: 2px solid ` + ColorBelowFloor + `; }
table { border-collapse: collapse; margin: .5em 0; } td, th { border: 1px solid #ccc; padding: 3px 6px; vertical-align: top; text-align: left; }
th { background: #f3f3f3; }
.st { font-weight: 600; white-space: nowrap; } span.num { white-space: nowrap; } .st.pass { color: #1a7f37; } .st.warn { color: #9a6700; } .st.fail, .st.error { color: #b42318; } .st.not-run { color: #6e6e6e; }
tr.regression td { background: #fde0dd; }
.heat .colhead, .heat .rowhead, .chart .rowhead { font: 12px system-ui, sans-serif; fill: #222; }
.heat .cell { font: 12px system-ui, sans-serif; fill: #111; } .heat .empty { fill: #fafafa; stroke: #eee; }
.chart .axis { stroke: #444; } .chart .grid { stroke: #eee; } .chart .tick { font: 11px system-ui, sans-serif; fill: #444; }
.chart .series { fill: none; stroke: #2166ac; stroke-width: 2; } .chart .point { fill: #2166ac; }
.chart .floor { stroke: ` + ColorBelowFloor + `; stroke-dasharray: 6 4; stroke-width: 1.5; }
.chart .span { fill: ` + ColorAbsent + `; } .chart .stall { fill: ` + ColorStall + `; } .chart .instant { fill: #333; }
.legend span { display: inline-block; padding: 0 .5em; margin-right: .4em; border-radius: 2px; }
details pre { white-space: pre-wrap; margin: .3em 0; font-size: 12px; } .muted { color: #666; }
.fix { background: #fff7e6; } .scroll { overflow-x: auto; } td.num { white-space: nowrap; }
.culprits { background: ` + ColorCulprit + `; border-left: 6px solid ` + ColorBelowFloor + `; padding: .4em 1em; margin: .6em 0; }
.culprits ul { margin: .2em 0; padding-left: 1.2em; }
.fleet .colhead, .fleet .rowhead { font: 10px system-ui, sans-serif; fill: #222; } .fleet .empty { fill: #fafafa; stroke: #eee; }
.fleet .culprit { stroke: #000; stroke-width: 2px; }
.legend .swatch { display: inline-block; width: 12px; height: 10px; padding: 0; margin: 0 .3em 0 0; vertical-align: middle; }
.legend .swatch.culprit { outline: 2px solid #000; outline-offset: -2px; }
ul.legend { list-style: none; padding: 0; margin: .3em 0; columns: 2; font-size: 13px; }
</style>
</head>
<body>
<h1>rdmasuite acceptance report</h1>
<p class="muted">run <code>{{.RunID}}</code>{{if .Server}} against <code>{{.Server}}</code>{{end}}{{if .Version}} (Kubernetes {{.Version}}){{end}}{{if .When}}, {{.When}}{{end}}</p>
<p class="verdict {{if .Passed}}passed{{else}}failed{{end}}" id="verdict">{{.Summary}}{{if .Baseline}}{{if .Baseline.Regressions}} — {{.Baseline.Regressions}} regression(s) against the baseline{{end}}{{range .Baseline.Warnings}} — warning: {{.}}{{end}}{{end}} — exit code {{.Exit}}</p>
{{with .Culprits}}<div class="culprits" id="culprits">{{if .SKUWide}}<b>SKU-wide</b> (more than half of a SKU's ports missed the floor together: the floor or a fabric-wide cause; their ports are not listed one by one):<ul>{{range .SKUWide}}<li><b>{{.}}</b></li>{{end}}</ul>{{end}}{{if .Items}}<b>Where it fails</b> (localised from the pairs that failed; the partners of a culprit failed with it, not on their own):<ul>{{range .Items}}<li><b>{{.Text}}</b>: {{.Explanation}}</li>{{end}}{{if .More}}<li>and {{.More}} more: see the localisation under the matrix.</li>{{end}}</ul>{{end}}{{if .Warnings}}<b>Warnings</b> (passed, look first: a port far below its peers, a failure that did not repeat):<ul>{{range .Warnings}}<li>{{.}}</li>{{end}}{{if .MoreWarnings}}<li>and {{.MoreWarnings}} more: see the warn rows.</li>{{end}}</ul>{{end}}</div>{{end}}

<h2 id="baseline">Since the baseline</h2>
{{with .Baseline}}
<p><b>{{.Headline}}</b></p>
{{range .Warnings}}<p class="fix">Warning: {{.}}</p>{{end}}
{{if .OnlyInBase}}<p>Nodes only in the baseline: {{.OnlyInBase}}</p>{{end}}
{{if .OnlyIn}}<p>Nodes new in this run: {{.OnlyIn}}</p>{{end}}
{{if .Rows}}<table><tr><th>check</th><th>node</th><th>port</th><th>measurement</th><th>baseline</th><th>now</th><th>change</th><th>note</th></tr>
{{range .Rows}}<tr{{if .Regression}} class="regression"{{end}}><td>{{.Check}}</td><td>{{.Node}}</td><td>{{.Port}}</td><td>{{.Name}}</td><td>{{.Base}}</td><td>{{.Now}}</td><td>{{.Pct}}</td><td>{{if .Regression}}<b>regression</b>: {{end}}{{.Kind}}{{if .Note}} ({{.Note}}){{end}}</td></tr>
{{end}}</table>{{else}}<p>Nothing changed.</p>{{end}}
{{if .Unchanged}}<details><summary>{{len .Unchanged}} row(s) that only inform: unchanged, new and passing, or of a node that left</summary><table><tr><th>check</th><th>node</th><th>port</th><th>measurement</th><th>baseline</th><th>now</th><th>note</th></tr>
{{range .Unchanged}}<tr><td>{{.Check}}</td><td>{{.Node}}</td><td>{{.Port}}</td><td>{{.Name}}</td><td>{{.Base}}</td><td>{{.Now}}</td><td>{{.Kind}}{{if .Note}} ({{.Note}}){{end}}</td></tr>
{{end}}</table></details>{{end}}
{{else}}<p class="muted">No baseline given: render with <code>--baseline OLDER.json</code> to see what changed since then.</p>{{end}}

<h2 id="bandwidth">Bandwidth per node and port against the floor</h2>
{{with .Fleet}}{{if .SVG}}<p>Fleet view: {{.Nodes}} node(s) × {{.Ports}} port(s), one cell per port of a node; each cell is the worst of every bandwidth measurement of that port (all ops, sizes, partners and variants), as its ratio to the floor. Values in Gb/s (average RDMA bandwidth of one port). Floors:
{{range $i, $f := .Floors}}{{if $i}}; {{end}}{{$f}}{{else}}none recorded{{end}}. Rows: nodes; {{.Columns}}. Hover a cell for the node, port, worst value, its partner and the floor.</p>
<ul class="legend">{{range .Legend}}<li><span class="swatch" style="background:{{.Color}}"></span>{{.Text}} ({{.Count}})</li>{{end}}<li><span class="swatch culprit" style="background:` + ColorBelowFloor + `"></span>outlined: a culprit (bad port, node or link){{if .CulpritsCount}} ({{.CulpritsCount}}){{end}}</li></ul>
<div class="scroll">{{.SVG}}</div>{{end}}{{end}}
{{if .Heat.SVG}}{{if .Heat.Fold}}<details><summary>Per op and size: every node and port (a row each)</summary>{{else}}<p>Per op and size:</p>{{end}}
<p class="legend"><span style="background:` + ColorBelowFloor + `">≥ 10 % below the floor</span><span style="background:` + ColorNearFloor + `">&lt; 10 % below</span><span style="background:` + ColorAboveFloor + `;color:#fff">met the floor</span><span style="background:` + ColorNoFloor + `">no floor</span><span style="background:` + ColorUnmeasured + `">not measured</span> Each cell: the worst measurement of that port in Gb/s and its ratio to the floor (hover for partner, floor and source).</p>
<div class="scroll">{{.Heat.SVG}}</div>{{if .Heat.Fold}}</details>{{end}}
{{else if .Heat.Omitted}}<p class="muted">The per-op heat map ({{.Heat.Omitted}} node/port rows) is not drawn at this size: the fleet view above summarises it; every value is in results.json (<code>rdmasuite report --all</code> prints them).</p>
{{else if not .Fleet.SVG}}<p class="muted">No bandwidth check in this run.</p>{{end}}
{{if .Heat.Unmeasured}}<p>Asked for and not measured:</p><table><tr><th>status</th><th>check</th><th>variant</th><th>nodes</th><th>why</th></tr>
{{range .Heat.Unmeasured}}<tr><td class="st {{.Status}}">{{.StatusText}}</td><td>{{.ID}}</td><td>{{.Variant}}</td><td>{{.Nodes}}</td><td>{{.Verdict}}</td></tr>
{{end}}</table>{{end}}
{{if .Localize}}<p>Localisation (a bad node fails with every partner, a bad link with one):</p><ul>{{range .Localize}}<li><b>{{.Kind}}</b>{{if .Variant}} [{{.Variant}}]{{end}}: {{.Explanation}}</li>{{end}}</ul>{{end}}

<h2 id="memlock">Memory registration and memlock</h2>
{{if .Memlock}}<table><tr><th>status</th><th>check</th><th>node</th><th>variant</th><th>measured</th><th>floor</th><th>diagnosis / fix</th></tr>
{{range .Memlock}}<tr><td class="st {{.Status}}">{{.Status}}</td><td>{{.Check}}</td><td>{{.Node}}</td><td>{{.Variant}}</td><td class="num">{{.Value}}</td><td style="min-width:16em"><span class="num">{{.Floor}}</span><br><span class="muted">{{.Source}}</span></td><td{{if .Verdict}} class="fix"{{end}}>{{.Verdict}}</td></tr>
{{end}}</table>{{else}}<p class="muted">No memlock check in this run.</p>{{end}}

<h2 id="doctor">Doctor findings</h2>
{{if .Findings}}{{range .Findings}}<div class="finding"><p><span class="st {{.Status}}">{{.Status}}</span> <b>{{.ID}}</b> on {{.Nodes}}: {{.Title}}</p>
{{if .Diagnosis}}<p>{{.Diagnosis}}</p>{{end}}{{if .Reason}}<p>{{.Reason}}</p>{{end}}
{{if .Evidence}}<ul>{{range .Evidence}}<li><code>{{.}}</code></li>{{end}}</ul>{{end}}
{{if .Fix}}<p class="fix"><b>Fix:</b> {{.Fix}}</p>{{end}}</div>
{{end}}{{else}}<p class="muted">No doctor check in this run.</p>{{end}}

<h2 id="nccl">NCCL bus bandwidth</h2>
{{if .NCCL}}{{range .NCCL}}<figure><figcaption><span class="st {{.Status}}">{{.Status}}</span> <b>{{.Title}}</b> {{.Caption}}</figcaption>{{.SVG}}</figure>
{{end}}{{else}}<p class="muted">No NCCL check in this run.</p>{{end}}

<h2 id="stall">NFS I/O stall across a MOFED driver restart</h2>
{{if .Stalls}}{{range .Stalls}}<figure><figcaption><span class="st {{.Status}}">{{.Status}}</span> <b>{{.Title}}</b> {{.Caption}}</figcaption>{{.SVG}}</figure>
{{end}}{{else}}<p class="muted">No disruptive check in this run.</p>{{end}}

{{if .Nodes}}<h2 id="nodes">Nodes</h2><table><tr><th>node</th><th>SKU</th><th>thresholds file</th><th>kernel</th><th>kubelet</th></tr>
{{range .Nodes}}<tr><td>{{.Name}}</td><td>{{.SKU}}</td><td>{{.File}}</td><td>{{.Kernel}}</td><td>{{.Kubelet}}</td></tr>
{{end}}</table>{{end}}

<h2 id="checks">Every check</h2>
<table><tr><th>status</th><th>check</th><th>variant</th><th>nodes</th><th>measured</th><th>diagnosis / reason / fix</th></tr>
{{range .Checks}}<tr><td class="st {{.Status}}">{{.StatusText}}</td><td>{{.ID}}</td><td>{{.Variant}}</td><td>{{.Nodes}}</td><td>{{.Measured}}</td><td>{{.Verdict}}{{if .Evidence}}<details><summary>evidence</summary>{{range .Evidence}}<pre>{{.}}</pre>{{end}}</details>{{end}}</td></tr>
{{end}}</table>
{{with .Passing}}{{if .Lines}}<details><summary>{{.Count}} passing check(s), one line each</summary><pre>{{.Lines}}</pre></details>{{else}}<p class="muted">{{.Count}} passing checks are not listed at this size: the fleet view holds each port's worst value; every value is in results.json (<code>rdmasuite report --all</code> prints them).</p>{{end}}{{end}}
</body>
</html>
`))
