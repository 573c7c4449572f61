package reports

import (
	"fmt"
	"html/template"
	"math"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// The fleet view: one cell per port of every node (a row per node, a
// column per rail), every bandwidth check that used the port summarised by
// its worst ratio to the floor, so 256 nodes × 8 rails fit in a screen or
// two. A port that failed only with a localised culprit at the other end
// is drawn as its partner, not as a failure of its own.

// portEnd is one port of one node; port "" for a check without a rail.
type portEnd struct{ node, port string }

// fleetCell is what the checks that used one port say about it.
type fleetCell struct {
	checks, passed, failed, notRun int
	// worst: the lowest ratio of a judged measurement to its floor (NaN:
	// none judged); ownWorst the same without the checks a culprit
	// explains.
	worst, ownWorst float64
	worstText       string // "read 1MiB 297 Gb/s with gpu-018"
	measured        bool   // a value in Gb/s was recorded
	ownFailed       bool   // a check failed that no culprit explains
	ownNotRun       bool
	failNote        string // a failing check's diagnosis, when it recorded no value
	culprit         string // "bad port": the port is a culprit
	// hostCapped: the port's failures are explained by its host's
	// configuration (a host-config finding); drawn apart from a bad port.
	hostCapped bool
	// peerOutlier: the port passed its floor but a peer-outlier warning
	// names it (VerdictWarnings): the warning's text.
	peerOutlier string
	partnerOf   []string
	// dirtyLink: a <feature>/link check on this port failed (its port
	// counters rose while it carried the test), with the first diagnosis.
	dirtyLink string
}

// fleetState is how a cell is drawn, and its legend entry.
type fleetState int

const (
	stateMet fleetState = iota
	stateMarginal
	stateBelow
	statePartner
	stateNoFloor
	stateUnmeasured
	stateDirtyLink
	stateHostCapped
	statePeerOutlier
	nStates
)

var stateColor = [nStates]string{ColorAboveFloor, ColorNearFloor, ColorBelowFloor, ColorPartner, ColorNoFloor, ColorUnmeasured, ColorDirtyLink, ColorHostCapped, ColorPeerOutlier}

var stateText = [nStates]string{
	"met the floor (≥ 1.00×): healthy",
	"below the floor by less than 10 % (0.90–1.00×): fails, marginal",
	"10 % or more below the floor (< 0.90×), or failed without a value",
	"partner of a bad port (or node): failed only with the culprit, not a failure of its own",
	"measured, no floor to compare with",
	"not measured (not run)",
	"bandwidth met the floor but the link was dirty: its port counters rose while it carried the test (fails)",
	"failed, and its host's configuration explains it (PCIe link, MTU, NUMA, ACS, unlike its SKU's ports): fix the host, not the fabric",
	"met the floor, far below its peers (peer outlier, warn): passes; look at it first",
}

// culprits maps the ends a localisation blames to what it blames them for.
type culpritEnds struct {
	ports map[portEnd]string // bad ports and both ends of bad links
	nodes map[string]string  // bad nodes: every port
	host  map[portEnd]bool   // ports whose host's configuration explains them (also in ports)
	warn  map[portEnd]string // ports a peer-outlier warning names: its text
}

func (c culpritEnds) of(e portEnd) string {
	if s, ok := c.ports[e]; ok {
		return s
	}
	return c.nodes[e.node]
}

func newCulpritEnds(r Run, fs []Finding) culpritEnds {
	c := culpritEnds{ports: map[portEnd]string{}, nodes: map[string]string{}, host: map[portEnd]bool{}, warn: map[portEnd]string{}}
	for _, w := range VerdictWarnings(r) {
		if w.Peer != nil && len(w.Nodes) == 1 {
			c.warn[portEnd{w.Nodes[0], w.Port}] = w.Text(true)
		}
	}
	links := map[locPair]string{}
	for _, f := range fs {
		switch f.Kind {
		case BadPort:
			c.ports[portEnd{f.Nodes[0], f.Rail}] = "bad port " + f.Rail + " on node " + f.Nodes[0]
		case HostConfig:
			c.ports[portEnd{f.Nodes[0], f.Rail}] = "host configuration of port " + f.Rail + " on node " + f.Nodes[0] + " (not the fabric)"
			c.host[portEnd{f.Nodes[0], f.Rail}] = true
		case BadNode:
			c.nodes[f.Nodes[0]] = "bad node " + f.Nodes[0]
		case BadLink:
			links[locKey(f.Nodes[0], f.Nodes[1])] = "bad link " + f.Nodes[0] + "↔" + f.Nodes[1]
		}
	}
	// A bad link blames the ports its failing checks used, at both ends.
	for _, ch := range r.Checks {
		if len(ch.Nodes) != 2 || !locFailing(ch.Status) {
			continue
		}
		if what, ok := links[locKey(ch.Nodes[0], ch.Nodes[1])]; ok {
			for _, e := range checkEnds(ch) {
				c.ports[e] = what
			}
		}
	}
	return c
}

// checkEnds are the ports a check used: each node's side of the rail
// label "client→server" (a side that names no port, "(no peer rail)",
// has none); a check without such a label uses port c.Rail ("" when it
// has no rail) on each of its nodes.
func checkEnds(c Check) []portEnd {
	if len(c.Nodes) == 0 {
		return nil
	}
	client, server := c.Nodes[0], c.Nodes[len(c.Nodes)-1]
	l, r, ok := strings.Cut(c.Rail, "→")
	if !ok {
		out := []portEnd{{client, c.Rail}}
		if server != client {
			out = append(out, portEnd{server, c.Rail})
		}
		return out
	}
	isPort := func(s string) bool { return s != "" && !strings.HasPrefix(s, "(") }
	var out []portEnd
	if isPort(l) {
		out = append(out, portEnd{client, l})
	}
	if isPort(r) && (server != client || r != l) { // a loopback on one port is one end
		out = append(out, portEnd{server, r})
	}
	return out
}

// otherEnd is the end of c that is not e (a pair's other node's port).
func otherEnd(ends []portEnd, e portEnd) (portEnd, bool) {
	for _, o := range ends {
		if o != e {
			return o, true
		}
	}
	return portEnd{}, false
}

// portCells summarises the bandwidth checks per port.
func portCells(r Run, ce culpritEnds) map[portEnd]*fleetCell {
	cells := map[portEnd]*fleetCell{}
	cellOf := func(e portEnd) *fleetCell {
		cell := cells[e]
		if cell == nil {
			cell = &fleetCell{worst: math.NaN(), ownWorst: math.NaN(), culprit: ce.of(e), hostCapped: ce.host[e], peerOutlier: ce.warn[e]}
			cells[e] = cell
		}
		return cell
	}
	for _, c := range r.Checks {
		if c.Is().Link && c.Status == Fail {
			for _, e := range checkEnds(c) {
				if cell := cellOf(e); cell.dirtyLink == "" {
					cell.dirtyLink = verdictText(c)
				}
			}
		}
		if !isHeatCheck(c) {
			continue
		}
		ends := checkEnds(c)
		for _, e := range ends {
			cell := cellOf(e)
			// A check is the culprit's, not this port's, when the other
			// end is a culprit and this one is not.
			explainedBy := ""
			if o, ok := otherEnd(ends, e); ok && cell.culprit == "" && o.node != e.node {
				explainedBy = ce.of(o)
			}
			cell.add(c, e, ends, explainedBy)
		}
	}
	return cells
}

func (cell *fleetCell) add(c Check, e portEnd, ends []portEnd, explainedBy string) {
	cell.checks++
	partner := ""
	if o, ok := otherEnd(ends, e); ok && o.node != e.node {
		partner = " with " + o.node
	}
	for _, m := range c.Measured {
		// A transient's one-off figure did not repeat: the cell shows
		// its confirmation's.
		if m.Unit != c.Is().HeatUnit || c.transient() {
			continue
		}
		cell.measured = true
		t := m.Threshold
		if t == nil || t.Op != ">=" || t.Value <= 0 {
			continue
		}
		ratio := m.Value / t.Value
		if math.IsNaN(cell.worst) || ratio < cell.worst {
			cell.worst = ratio
			cell.worstText = fmt.Sprintf("%s %s %s%s, floor %s", strings.TrimPrefix(c.ID, "bandwidth/"), sizeOf(m.Name),
				fmtVal(m.Value, m.Unit), partner, fmtVal(t.Value, m.Unit))
		}
		if explainedBy == "" && (math.IsNaN(cell.ownWorst) || ratio < cell.ownWorst) {
			cell.ownWorst = ratio
		}
	}
	switch {
	case c.Status.Passing():
		cell.passed++
	case locFailing(c.Status):
		cell.failed++
		if explainedBy != "" {
			if !containsStr(cell.partnerOf, explainedBy) {
				cell.partnerOf = append(cell.partnerOf, explainedBy)
			}
			return
		}
		cell.ownFailed = true
		if cell.failNote == "" {
			cell.failNote = verdictText(c)
		}
	case c.Status == NotRun:
		cell.notRun++
		if explainedBy == "" {
			cell.ownNotRun = true
		}
	}
}

func containsStr(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// state: a culprit or a port that failed on its own is red or amber by
// its worst ratio; a port whose failures are all a culprit's is a
// partner; then not measured, no floor, met.
func (cell *fleetCell) state() fleetState {
	failing := func(ratio float64) fleetState {
		if !math.IsNaN(ratio) && ratio < 1 && ratio >= marginal {
			return stateMarginal
		}
		return stateBelow
	}
	switch {
	case cell.hostCapped && cell.failed > 0:
		return stateHostCapped
	case cell.culprit != "" && cell.failed > 0:
		return failing(cell.worst)
	case cell.ownFailed:
		return failing(cell.ownWorst)
	case len(cell.partnerOf) > 0:
		return statePartner
	case cell.dirtyLink != "":
		// The bandwidth held (or was not judged), the link did not.
		return stateDirtyLink
	case cell.peerOutlier != "":
		return statePeerOutlier
	case cell.ownNotRun || !cell.measured:
		return stateUnmeasured
	case math.IsNaN(cell.ownWorst):
		return stateNoFloor
	}
	return stateMet
}

// title is the cell's hover text: node and port, what the colour means
// for it, the worst measurement with its partner and floor, the counts.
func (cell *fleetCell) title(e portEnd, st fleetState) string {
	port := e.port
	if port == "" {
		port = "(no rail)"
	}
	var what string
	switch {
	case cell.culprit != "":
		what = "culprit (" + cell.culprit + ")"
	case st == statePartner:
		what = "partner of " + strings.Join(cell.partnerOf, ", ") + ": failed only with it"
	case st == statePeerOutlier:
		what = "warn: " + cell.peerOutlier
	default:
		what = strings.SplitN(stateText[st], ":", 2)[0]
		what = strings.SplitN(what, " (", 2)[0]
	}
	s := e.node + " " + port + ": " + what
	if !math.IsNaN(cell.worst) {
		s += fmt.Sprintf("; worst %.2f× the floor (%s)", cell.worst, cell.worstText)
	}
	switch {
	case cell.checks == 1 && cell.passed == 1:
		s += "; its 1 check passes"
	case cell.passed == cell.checks:
		s += fmt.Sprintf("; all %d checks pass", cell.checks)
	default:
		s += fmt.Sprintf("; %d check%s: %d pass, %d fail or error, %d not run", cell.checks, plural(cell.checks), cell.passed, cell.failed, cell.notRun)
	}
	if cell.failNote != "" && math.IsNaN(cell.worst) {
		s += "; " + cell.failNote
	}
	if cell.dirtyLink != "" {
		s += "; dirty link: " + cell.dirtyLink
	}
	return s
}

// fleetSection is the matrix and what the page says around it.
type fleetSection struct {
	SVG           template.HTML
	Nodes, Ports  int
	Columns       string   // what the column headers stand for
	Floors        []string // "write 1MiB: floor >= 380 Gb/s (H100/NDR-400: 0.95 × 400 Gb/s link)"
	Legend        []legendEntry
	CulpritsCount int
}

type legendEntry struct {
	Color, Text string
	Count       int
}

// Matrix geometry: small cells, node blocks side by side up to the page's
// width, so 256 × 8 is about 40 rows of 7 blocks.
const (
	fleetCellW, fleetCellH = 14, 12
	fleetPageW             = 1340
	fleetHeadH             = 16
	fleetMinRows           = 8 // a block has at least this many rows
)

func fleetView(r Run, fs []Finding) fleetSection {
	ce := newCulpritEnds(r, fs)
	cells := portCells(r, ce)
	if len(cells) == 0 {
		return fleetSection{}
	}
	nodeSet, portSet := map[string]bool{}, map[string]bool{}
	for e := range cells {
		nodeSet[e.node], portSet[e.port] = true, true
	}
	nodes, ports := sortedNat(nodeSet), sortedNat(portSet)
	sec := fleetSection{Nodes: len(nodes), Ports: len(ports), Floors: fleetFloors(r), CulpritsCount: len(ce.ports) + len(ce.nodes)}
	heads, columns := shortHeads(ports)
	sec.Columns = columns
	counts := [nStates]int{}
	labelW := 40
	for _, n := range nodes {
		labelW = max(labelW, 6*len(n)+8) // about 6 px a character at 10 px
	}
	blockW := labelW + fleetCellW*len(ports) + 14
	blocks := max(1, min(fleetPageW/blockW, (len(nodes)+fleetMinRows-1)/fleetMinRows))
	rows := (len(nodes) + blocks - 1) / blocks
	blocks = (len(nodes) + rows - 1) / rows
	width, height := blocks*blockW, fleetHeadH+rows*fleetCellH+4
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" class="fleet" width="%d" height="%d" viewBox="0 0 %d %d" role="img" aria-label="worst bandwidth per node and port against the floor">`,
		width, height, width, height)
	for k := range blocks {
		x0 := k * blockW
		for j, h := range heads {
			fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle" class="colhead">%s</text>`, x0+labelW+j*fleetCellW+fleetCellW/2, fleetHeadH-4, esc(h))
		}
	}
	for i, n := range nodes {
		x0, y := (i/rows)*blockW, fleetHeadH+(i%rows)*fleetCellH
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="end" class="rowhead">%s</text>`, x0+labelW-4, y+fleetCellH-2, esc(n))
		for j, p := range ports {
			cell := cells[portEnd{n, p}]
			x := x0 + labelW + j*fleetCellW
			if cell == nil {
				fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="%d" class="empty"/>`, x+1, y+1, fleetCellW-2, fleetCellH-2)
				continue
			}
			st := cell.state()
			counts[st]++
			class := ""
			switch {
			case cell.culprit != "":
				class = ` class="culprit"`
			case st == statePartner:
				class = ` class="partner"`
			}
			fmt.Fprintf(&b, `<g><title>%s</title><rect x="%d" y="%d" width="%d" height="%d" fill="%s"%s/></g>`,
				esc(cell.title(portEnd{n, p}, st)), x+1, y+1, fleetCellW-2, fleetCellH-2, stateColor[st], class)
		}
	}
	b.WriteString(`</svg>`)
	sec.SVG = template.HTML(b.String()) // every text in it went through esc
	for st := range nStates {
		sec.Legend = append(sec.Legend, legendEntry{Color: stateColor[st], Text: stateText[st], Count: counts[st]})
	}
	return sec
}

// fleetFloors are the floors the run's bandwidth was judged against, one
// entry per op, size and floor: "write 1MiB: floor >= 380 Gb/s (H100/
// NDR-400: 0.95 × 400 Gb/s link)" (the source up to its citation).
func fleetFloors(r Run) []string {
	seen := map[string]bool{}
	var out []string
	for _, c := range r.Checks {
		if !isHeatCheck(c) {
			continue
		}
		for _, m := range c.Measured {
			t := m.Threshold
			if t == nil || m.Unit != c.Is().HeatUnit {
				continue
			}
			src, _, _ := strings.Cut(t.Source, " — ")
			s := fmt.Sprintf("%s %s: floor %s %s (%s)", strings.TrimPrefix(c.ID, "bandwidth/"), sizeOf(m.Name), t.Op, fmtVal(t.Value, m.Unit), src)
			if !seen[s] {
				seen[s] = true
				out = append(out, s)
			}
		}
	}
	sort.Strings(out)
	return out
}

// shortHeads are the column headers: the part of the port names that
// differs ("0" … "7" for mlx5_0/1 … mlx5_7/1), and a caption naming the
// ports. A port "" is a check without a rail.
func shortHeads(ports []string) ([]string, string) {
	var named []string
	for _, p := range ports {
		if p != "" {
			named = append(named, p)
		}
	}
	pre, suf := commonAffixes(named)
	heads := make([]string, len(ports))
	fits := true
	for i, p := range ports {
		switch {
		case p == "":
			heads[i] = "–"
		case len(named) > 1:
			heads[i] = p[len(pre) : len(p)-len(suf)]
		default:
			heads[i] = p
		}
		fits = fits && utf8.RuneCountInString(heads[i]) <= 2
	}
	caption := "columns: ports " + strings.Join(named, ", ")
	if len(named) > 4 {
		caption = fmt.Sprintf("columns: ports %s … %s", named[0], named[len(named)-1])
	}
	if !fits { // too long for a 14 px column: number them
		var key []string
		for i, p := range ports {
			heads[i] = strconv.Itoa(i)
			if p == "" {
				p = "checks without a rail"
			}
			key = append(key, fmt.Sprintf("%d = %s", i, p))
		}
		return heads, "columns: " + strings.Join(key, ", ")
	}
	if len(named) > 1 {
		caption += fmt.Sprintf(" (headers: the part between %q and %q)", pre, suf)
	}
	if len(named) < len(ports) {
		caption += "; – : checks without a rail"
	}
	return heads, caption
}

// commonAffixes is the longest prefix and suffix all of ss share, never
// overlapping in the shortest.
func commonAffixes(ss []string) (string, string) {
	if len(ss) < 2 {
		return "", ""
	}
	pre, suf := ss[0], ss[0]
	for _, s := range ss[1:] {
		for !strings.HasPrefix(s, pre) {
			pre = pre[:len(pre)-1]
		}
		for !strings.HasSuffix(s, suf) {
			suf = suf[1:]
		}
	}
	shortest := len(ss[0])
	for _, s := range ss {
		shortest = min(shortest, len(s))
	}
	if len(pre)+len(suf) > shortest {
		suf = suf[len(pre)+len(suf)-shortest:]
	}
	return pre, suf
}

// sortedNat sorts names with their digit runs compared as numbers, so
// mlx5_10/1 comes after mlx5_9/1; "" (no rail) last.
func sortedNat(set map[string]bool) []string {
	out := make([]string, 0, len(set))
	for s := range set {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return natLess(out[i], out[j]) })
	return out
}

func natLess(a, b string) bool {
	if a == "" || b == "" {
		return b == "" && a != ""
	}
	for a != "" && b != "" {
		da, db := digitRun(a), digitRun(b)
		if da > 0 && db > 0 {
			x, _ := strconv.ParseUint(a[:da], 10, 64)
			y, _ := strconv.ParseUint(b[:db], 10, 64)
			if x != y {
				return x < y
			}
			a, b = a[da:], b[db:]
			continue
		}
		if a[0] != b[0] {
			return a[0] < b[0]
		}
		a, b = a[1:], b[1:]
	}
	return len(a) < len(b)
}

func digitRun(s string) int {
	n := 0
	for n < len(s) && s[n] >= '0' && s[n] <= '9' {
		n++
	}
	return n
}
