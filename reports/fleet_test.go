package reports

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"regexp"
	"strings"
	"testing"

	"github.com/mattn/go-runewidth"
	"golang.org/x/net/html"
)

// The fleet fixtures: a ring of n nodes with `rails` ports each, every node
// the client of the next on every rail, write and read at 64 KiB and 1 MiB
// judged at 1 MiB against an NDR-400 floor, as internal/verdict writes
// them. A bad port measures 297 Gb/s, so both pairs that use it fail on
// that rail (its two partners are the other ends).
const (
	fleetFloor  = 380
	fleetSource = "H100/NDR-400: 0.95 × 400 Gb/s link — github.com/Azure/azurehpc-health-checks@0e0a1ac conf/hb176rs_v4.conf, " +
		"nd96isr_mi300x_v5.conf: check_ib_bw_non_gdr 390 (97.5 % of NDR, single-node loopback, 1 MiB, -q 2); " +
		"github.com/Mellanox/ngc_multinode_perf (common.sh: BW_PASS_RATE = multiplier*0.9*port_rate): 90 %; 95 % node to node through the fabric"
	fleetFix = "compare with ib_write_bw between the same nodes; check port rate/width (ibstat), PCIe width (lspci -vv), and the switch counters"
)

type fleetPort struct{ node, rail int }

func fleetNode(n, i int) string {
	if n > 1000 {
		return fmt.Sprintf("gpu-%04d", i)
	}
	return fmt.Sprintf("gpu-%03d", i)
}

func fleetRail(r int) string { return fmt.Sprintf("mlx5_%d/1", r) }

func fleetRun(n, rails int, bad ...fleetPort) Run {
	isBad := map[fleetPort]bool{}
	for _, b := range bad {
		isBad[b] = true
	}
	r := Run{Schema: Schema, RunID: fmt.Sprintf("fleet-%dx%d", n, rails), Cluster: Cluster{Server: "https://10.0.0.1:6443", Version: "v1.35.4"}}
	for i := range n {
		r.Nodes = append(r.Nodes, Node{Name: fleetNode(n, i), SKU: "H100/NDR-400", ThresholdsFile: "thresholds/skus.yaml (built in)", Kernel: "6.8.0-49-generic", Kubelet: "v1.35.4"})
	}
	for i := range n {
		cl, sv := fleetNode(n, i), fleetNode(n, (i+1)%n)
		for rl := range rails {
			port := fleetRail(rl)
			slow := isBad[fleetPort{i, rl}] || isBad[fleetPort{(i + 1) % n, rl}]
			for k, op := range []string{"write", "read"} {
				v := 388 + float64((i*7+rl*3+k)%9) // a healthy NDR port: 388..396 Gb/s
				if slow {
					v = 297
				}
				c := Check{ID: "bandwidth/" + op, Title: fmt.Sprintf("RDMA %s bandwidth %s → %s", op, cl, sv), Nodes: []string{cl, sv},
					Variant: "shared-dev", Rail: port + "→" + port, Status: Pass, Duration: 5.2,
					Evidence: []string{fmt.Sprintf("pod rdmasuite-bw-c on %s: rdmaprobe bw client (exit 0)", cl), fmt.Sprintf("pod rdmasuite-bw-s on %s: rdmaprobe bw server (exit 0)", sv)},
					Measured: []Measurement{
						{Name: op + "_64KiB_avg", Node: cl, Port: port, Value: v - 2, Unit: "Gb/s"},
						{Name: op + "_1MiB_avg", Node: cl, Port: port, Value: v, Unit: "Gb/s", Threshold: &Threshold{Op: ">=", Value: fleetFloor, Source: fleetSource}},
					}}
				if slow {
					c.Status = Fail
					c.Diagnosis = fmt.Sprintf("%s_1MiB_avg = %s, threshold >= %s (%s)", op, fmtVal(v, "Gb/s"), fmtVal(fleetFloor, "Gb/s"), fleetSource)
					c.Fix = fleetFix
				}
				r.Checks = append(r.Checks, c)
			}
		}
	}
	r.Sort()
	return r
}

// The sizes the issue names: 256 and 1024 nodes of 8 rails, one bad port.
var fleetCases = []struct {
	n   int
	bad fleetPort
}{{256, fleetPort{17, 3}}, {1024, fleetPort{517, 5}}}

func TestFleetFixtureLocalises(t *testing.T) {
	r := fleetRun(256, 8, fleetPort{17, 3})
	fs := Localize(r)
	if len(fs) != 1 || fs[0].Kind != BadPort || fs[0].Nodes[0] != "gpu-017" || fs[0].Rail != "mlx5_3/1" {
		t.Fatalf("fixture: %+v", fs)
	}
	if s := r.Summary(); s[Fail] != 4 || s[Pass] != 256*8*2-4 {
		t.Fatalf("fixture: %v", s)
	}
}

// The verdict line names the culprit before the counts, on one line; a
// long list is capped.
func TestVerdictNamesCulpritsFirst(t *testing.T) {
	for _, tc := range fleetCases {
		node, rail := fleetNode(tc.n, tc.bad.node), fleetRail(tc.bad.rail)
		s := SummaryText(fleetRun(tc.n, 8, tc.bad))
		want := fmt.Sprintf("NOT PASSED — culprit: port %s on node %s (bad port, 2 partners) — ", rail, node)
		if !strings.HasPrefix(s, want) || !strings.Contains(s, fmt.Sprintf("%d pass, 4 fail", tc.n*16-4)) || strings.Contains(s, "\n") {
			t.Errorf("%d nodes: verdict %q, want it to start %q", tc.n, s, want)
		}
	}
	many := fleetRun(64, 8, fleetPort{3, 1}, fleetPort{10, 2}, fleetPort{20, 0}, fleetPort{30, 7}, fleetPort{40, 4})
	s := SummaryText(many)
	if !strings.HasPrefix(s, "NOT PASSED — culprits: port mlx5_1/1 on node gpu-003 (bad port, 2 partners); port mlx5_2/1 on node gpu-010") ||
		!strings.Contains(s, "; and 2 more — ") || strings.Contains(s, "gpu-030") {
		t.Errorf("five culprits: %q", s)
	}
	if s := SummaryText(fleetRun(16, 2)); s != "PASSED — 64 pass, 0 fail, 0 error, 0 not run (0 allowed)" {
		t.Errorf("healthy fleet: %q", s)
	}
}

var nodeName = regexp.MustCompile(`gpu-\d*`)

// Folded, the terminal output of a 256-node run with one bad port is one
// screen at 80 columns: verdict, the failing rows, the nodes that have a
// failure, one line for the rest; no line wider than the terminal, no
// node name broken.
func TestFleetTableFoldsPassingRows(t *testing.T) {
	for _, tc := range fleetCases {
		r := fleetRun(tc.n, 8, tc.bad)
		var b bytes.Buffer
		if err := TableWith(&b, r, TableOptions{Width: 80}); err != nil {
			t.Fatal(err)
		}
		out := b.String()
		lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
		if len(lines) >= 60 {
			t.Errorf("%d nodes: %d lines at width 80:\n%s", tc.n, len(lines), out)
		}
		for i, l := range lines {
			if w := runewidth.StringWidth(l); w > 80 {
				t.Errorf("%d nodes: line %d is %d columns: %q", tc.n, i+1, w, l)
			}
		}
		for _, m := range nodeName.FindAllString(out, -1) {
			if len(m) != len(fleetNode(tc.n, 0)) {
				t.Errorf("%d nodes: a node name split: %q in\n%s", tc.n, m, out)
				break
			}
		}
		node := fleetNode(tc.n, tc.bad.node)
		if !strings.HasPrefix(lines[1], "NOT PASSED — culprit: port "+fleetRail(tc.bad.rail)+" on node "+node) {
			t.Errorf("%d nodes: the verdict's first line does not name the culprit: %q", tc.n, lines[1])
		}
		if !strings.Contains(out, fmt.Sprintf("%d passing rows folded", tc.n*16-4)) || !strings.Contains(out, "--all") ||
			!strings.Contains(out, fmt.Sprintf("%d nodes all pass", tc.n-3)) {
			t.Errorf("%d nodes: no fold lines:\n%s", tc.n, out)
		}
		healthy := fleetNode(tc.n, 100) + " → " + fleetNode(tc.n, 101)
		if strings.Contains(out, healthy) || strings.Contains(out, fleetNode(tc.n, 100)) {
			t.Errorf("%d nodes: a passing pair or an all-pass node is shown folded:\n%s", tc.n, out)
		}
		// The failing rows come before the per-node roll-up.
		if f, p := strings.Index(out, "FAIL"), strings.Index(out, "per node"); f < 0 || p < 0 || f > p {
			t.Errorf("%d nodes: failures must come before the per-node roll-up:\n%s", tc.n, out)
		}
	}
	// The narrowest width a table is drawn at fits too.
	for _, run := range []Run{fleetRun(256, 8, fleetPort{17, 3}), tableRun()} {
		var b bytes.Buffer
		if err := TableWith(&b, run, TableOptions{Width: 60}); err != nil {
			t.Fatal(err)
		}
		for i, l := range strings.Split(b.String(), "\n") {
			if w := runewidth.StringWidth(l); w > 60 {
				t.Errorf("width 60: line %d is %d columns: %q", i+1, w, l)
			}
		}
	}
	r := fleetRun(256, 8, fleetPort{17, 3})
	var all bytes.Buffer
	if err := TableWith(&all, r, TableOptions{All: true}); err != nil {
		t.Fatal(err)
	}
	if s := all.String(); !strings.Contains(s, "gpu-100 → gpu-101") || strings.Contains(s, "folded") || strings.Count(s, "\n") < 256*16 {
		t.Errorf("--all must show every row and every node (%d lines)", strings.Count(s, "\n"))
	}
}

// A node name that fits its column is never split, whatever the width.
func TestTableKeepsNodeNamesWhole(t *testing.T) {
	long := func(i int) string { return fmt.Sprintf("a100-rack12-node-%03d", i) }
	r := Run{RunID: "r"}
	for i := range 4 {
		r.Checks = append(r.Checks, Check{ID: "bandwidth/write", Variant: "shared-dev", Nodes: []string{long(i), long((i + 1) % 4)},
			Rail: "mlx5_0/1→mlx5_0/1", Status: Fail, Diagnosis: "write_1MiB_avg = 297 Gb/s, threshold >= 380 Gb/s", Fix: fleetFix})
	}
	for _, width := range []int{80, 100, 120} {
		var b bytes.Buffer
		if err := TableWith(&b, r, TableOptions{Width: width}); err != nil {
			t.Fatal(err)
		}
		for _, m := range regexp.MustCompile(`a100-rack12-node-\d*|a100-rack12-n\S*`).FindAllString(b.String(), -1) {
			if len(m) != len(long(0)) {
				t.Errorf("width %d: %q split:\n%s", width, m, b.String())
			}
		}
		for i, l := range strings.Split(b.String(), "\n") {
			if w := runewidth.StringWidth(l); w > width {
				t.Errorf("width %d: line %d is %d columns: %q", width, i+1, w, l)
			}
		}
	}
}

func TestFleetMarkdownFolds(t *testing.T) {
	r := fleetRun(256, 8, fleetPort{17, 3})
	var b bytes.Buffer
	if err := Markdown(&b, r); err != nil {
		t.Fatal(err)
	}
	md := b.String()
	lines := strings.Count(md, "\n")
	verdict := strings.Index(md, "**NOT PASSED — culprit: port mlx5_3/1 on node gpu-017")
	if lines > 120 || verdict < 0 || strings.Contains(md, "gpu-100") || !strings.Contains(md, "4092 passing rows folded") ||
		!strings.Contains(md, "253 nodes all pass") || !strings.Contains(md, "256 nodes (gpu-000 … gpu-255)") {
		t.Errorf("folded markdown (%d lines):\n%s", lines, md)
	}
	if c, p := strings.Index(md, "## Checks"), strings.Index(md, "## Per node"); c < verdict || p < c {
		t.Errorf("order: verdict, checks, per node:\n%s", md)
	}
	var all bytes.Buffer
	if err := MarkdownWith(&all, r, MarkdownOptions{All: true}); err != nil {
		t.Fatal(err)
	}
	if s := all.String(); !strings.Contains(s, "| gpu-100, gpu-101 |") || strings.Contains(s, "folded") || !strings.Contains(s, "| gpu-100 | H100/NDR-400 |") {
		t.Errorf("--all markdown lacks every row")
	}
}

// JUnit keeps one case per check; the suite's properties carry the
// verdict with its culprits, where a CI system shows them first.
func TestFleetJUnitCarriesTheVerdict(t *testing.T) {
	r := fleetRun(256, 8, fleetPort{17, 3})
	var b bytes.Buffer
	if err := JUnit(&b, r); err != nil {
		t.Fatal(err)
	}
	var p junitSuites
	if err := xml.Unmarshal(b.Bytes(), &p); err != nil {
		t.Fatal(err)
	}
	s := p.Suites[0]
	if s.Tests != len(r.Checks) || s.Properties == nil || len(s.Properties.List) == 0 {
		t.Fatalf("%d tests of %d checks, properties %+v", s.Tests, len(r.Checks), s.Properties)
	}
	got := map[string]string{}
	for _, pr := range s.Properties.List {
		got[pr.Name] = pr.Value
	}
	if got["rdmasuite.verdict"] != SummaryText(r) || got["rdmasuite.culprit.1"] != "port mlx5_3/1 on node gpu-017 (bad port, 2 partners)" {
		t.Errorf("properties %v", got)
	}
	if strings.Index(b.String(), "<properties>") > strings.Index(b.String(), "<testcase") {
		t.Error("the properties must come before the cases")
	}
}

// fleetCells maps each fleet-matrix cell's title to its rect.
func fleetCells(t *testing.T, doc *html.Node) map[string]*html.Node {
	t.Helper()
	out := map[string]*html.Node{}
	walk(doc, func(n *html.Node) {
		if n.Type != html.ElementNode || n.Data != "svg" || !strings.Contains(attr(n, "class"), "fleet") {
			return
		}
		walk(n, func(g *html.Node) {
			if g.Type != html.ElementNode || g.Data != "g" {
				return
			}
			var title string
			var rect *html.Node
			for c := g.FirstChild; c != nil; c = c.NextSibling {
				switch c.Data {
				case "title":
					title = textOf(c)
				case "rect":
					rect = c
				}
			}
			if rect != nil {
				out[title] = rect
			}
		})
	})
	return out
}

// The fleet view: the verdict names the culprit before the matrix, one
// cell per port, healthy ports green, the bad port red and outlined, its
// partners marked as partners, not as failures of their own.
func TestHTMLFleetView(t *testing.T) {
	for _, tc := range fleetCases {
		r := fleetRun(tc.n, 8, tc.bad)
		s, err := htmlString(r, nil)
		if err != nil {
			t.Fatal(err)
		}
		node, rail := fleetNode(tc.n, tc.bad.node), fleetRail(tc.bad.rail)
		prev, next := fleetNode(tc.n, tc.bad.node-1), fleetNode(tc.n, tc.bad.node+1)
		verdict := regexp.MustCompile(`id="verdict">[^<]*culprit: port ` + regexp.QuoteMeta(rail) + ` on node ` + node).FindStringIndex(s)
		banner := strings.Index(s, `id="culprits"`)
		matrix := strings.Index(s, `class="fleet"`)
		if verdict == nil || banner < verdict[0] || matrix < banner {
			t.Errorf("%d nodes: verdict (%v), culprits (%d), matrix (%d) out of order", tc.n, verdict, banner, matrix)
		}
		doc := parseHTML(t, s)
		cells := fleetCells(t, doc)
		if len(cells) != tc.n*8 {
			t.Fatalf("%d nodes: %d cells, want %d", tc.n, len(cells), tc.n*8)
		}
		fills := map[string][]string{}
		for title, rect := range cells {
			fills[attr(rect, "fill")] = append(fills[attr(rect, "fill")], title)
		}
		if g := len(fills[ColorAboveFloor]); g != tc.n*8-3 {
			t.Errorf("%d nodes: %d green cells, want %d", tc.n, g, tc.n*8-3)
		}
		red := fills[ColorBelowFloor]
		if len(red) != 1 || !strings.HasPrefix(red[0], node+" "+rail+":") || !strings.Contains(red[0], "culprit") || !strings.Contains(red[0], "0.78× the floor") {
			t.Errorf("%d nodes: red cells %q", tc.n, red)
		}
		for title, rect := range cells {
			if strings.HasPrefix(title, node+" "+rail+":") && attr(rect, "class") != "culprit" {
				t.Errorf("%d nodes: the culprit cell is not outlined: %v", tc.n, rect.Attr)
			}
		}
		partners := fills[ColorPartner]
		if len(partners) != 2 || strings.Join(partners, "|") == "" {
			t.Fatalf("%d nodes: partner cells %q", tc.n, partners)
		}
		for _, p := range partners {
			if !(strings.HasPrefix(p, prev+" "+rail+":") || strings.HasPrefix(p, next+" "+rail+":")) || !strings.Contains(p, "partner of bad port "+rail+" on node "+node) {
				t.Errorf("%d nodes: partner cell %q", tc.n, p)
			}
		}
		text := textOf(doc)
		for _, want := range []string{"Gb/s", "floor >= 380 Gb/s", "partner of a bad port", "met the floor"} {
			if !strings.Contains(text, want) {
				t.Errorf("%d nodes: the page lacks %q", tc.n, want)
			}
		}
		if strings.Contains(s, `class="heat"`) {
			t.Errorf("%d nodes: the per-op heat map is drawn at fleet scale", tc.n)
		}
		t.Logf("%d nodes × 8 rails: page %d bytes", tc.n, len(s))
	}
}

// A healthy NDR port at its usual figures (388-396 Gb/s against a 380
// floor) is green; just below the floor amber; well below red.
func TestRatioColorScale(t *testing.T) {
	for _, c := range []struct {
		v    float64
		want string
	}{{388, ColorAboveFloor}, {380, ColorAboveFloor}, {450, ColorAboveFloor}, {370, ColorNearFloor}, {343, ColorNearFloor}, {341, ColorBelowFloor}, {297, ColorBelowFloor}} {
		if got := ratioColor(c.v/fleetFloor, c.v >= fleetFloor); got != c.want {
			t.Errorf("%g Gb/s against %d: %s, want %s", c.v, fleetFloor, got, c.want)
		}
	}
}

func benchmarkHTML(b *testing.B, n int) {
	r := fleetRun(n, 8, fleetPort{n / 2, 3})
	var size int
	b.ResetTimer()
	for range b.N {
		var buf bytes.Buffer
		if err := HTML(&buf, r, nil); err != nil {
			b.Fatal(err)
		}
		size = buf.Len()
	}
	b.ReportMetric(float64(size), "page-bytes")
}

func BenchmarkHTML256x8(b *testing.B)  { benchmarkHTML(b, 256) }
func BenchmarkHTML1024x8(b *testing.B) { benchmarkHTML(b, 1024) }

// BenchmarkTableManyCauses is the table of a fleet where every row failed,
// for 300 different causes after each row's own pod and rail: the notes
// made of shared causes are counted in one pass over the rows (compare
// with -run '^$' -bench TableManyCauses before and after a change).
func BenchmarkTableManyCauses(b *testing.B) {
	r := fleetRun(1024, 8)
	for i := range r.Checks {
		r.Checks[i].Status = Fail
		r.Checks[i].Diagnosis = fmt.Sprintf("pod p-%d on a node, rail r: write: cause %d of many, explained at a length that repeats across the rows that share it", i, i%300)
	}
	b.ResetTimer()
	for range b.N {
		if err := TableWith(io.Discard, r, TableOptions{Width: 80}); err != nil {
			b.Fatal(err)
		}
	}
}
