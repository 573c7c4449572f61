package reports

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"
)

func pairBW(id, variant, from, to, rail string, value, floor float64, st Status) Check {
	c := Check{ID: id, Title: "RDMA write bandwidth " + from + " → " + to, Nodes: []string{from, to}, Variant: variant, Rail: rail, Status: st}
	if value >= 0 {
		c.Measured = []Measurement{{Name: "write_1MiB_avg", Node: from, Port: railSource(rail), Value: value, Unit: "Gb/s",
			Threshold: &Threshold{Op: ">=", Value: floor, Source: "H100/NDR-400: 0.95 of link"}}}
	}
	return c
}

const longMemlockFix = "raise the memlock limit the container runtime gives pods: LimitMEMLOCK=infinity in containerd's systemd unit " +
	"(systemctl edit containerd), or the runtime's default rlimits, then restart containerd and the probe pods; IPC_LOCK alone does not help " +
	"when the hard limit is 64 KiB"

// htmlFixture is a run with something in every section: a bandwidth pair
// below its floor, one just above, one well above, one not measured (its
// reason carries markup that must come out as text), memlock, a doctor
// finding, an NCCL sweep with its floor and a disruption's timeline.
func htmlFixture() Run {
	t0 := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	r := Run{Schema: Schema, RunID: "r-html", Started: t0, Finished: t0.Add(5 * time.Minute),
		Cluster: Cluster{Server: "https://10.0.0.1:6443", Version: "v1.35.4"},
		Nodes:   []Node{{Name: "n1", SKU: "H100/NDR-400"}, {Name: "n2", SKU: "H100/NDR-400"}, {Name: "n3", SKU: "H100/NDR-400"}}}
	r.Checks = []Check{
		pairBW("bandwidth/write", "shared-dev", "n1", "n2", "mlx5_0/1→mlx5_0/1", 300, 380, Fail),
		pairBW("bandwidth/write", "shared-dev", "n2", "n1", "mlx5_0/1→mlx5_0/1", 399, 380, Pass),
		pairBW("bandwidth/write", "shared-dev", "n3", "n1", "mlx5_0/1→mlx5_0/1", 440, 380, Pass),
		{ID: "bandwidth/read", Title: "RDMA read bandwidth n3 → n2", Nodes: []string{"n3", "n2"}, Variant: "shared-dev", Status: NotRun,
			Reason: "the client pod never started: <script>alert(1)</script> Insufficient rdma/rdma_shared_device_a"},
		{ID: "memlock/rlimit", Title: "pod memlock limit", Nodes: []string{"n2"}, Variant: "shared-dev", Status: Fail,
			Measured:  []Measurement{{Name: "memlock_soft", Node: "n2", Value: 65536, Unit: "bytes", Threshold: &Threshold{Op: ">=", Value: 1 << 20, Source: "seed 002"}}},
			Diagnosis: "the pod's memlock soft limit is 64 KiB", Fix: longMemlockFix},
		{ID: "doctor/rdma-port-down", Title: "an RDMA port is not ACTIVE", Nodes: []string{"n2"}, Status: Fail,
			Evidence: []string{"host: port mlx5_1/1: 1: DOWN (3: Disabled)"}, Diagnosis: "[critical, seed 002] port down", Fix: "check cable and switch port"},
		{ID: "nccl/all_reduce", Title: "NCCL all_reduce across 2 GPU nodes", Nodes: []string{"n1", "n2"}, Variant: "shared-dev", Status: Pass,
			Measured: []Measurement{{Name: "busbw 8B", Value: 0.01, Unit: "GB/s"}, {Name: "busbw 1MiB", Value: 20, Unit: "GB/s"},
				{Name: "busbw 128MiB", Value: 180, Unit: "GB/s", Threshold: &Threshold{Op: ">=", Value: 170, Source: "H100/NDR-400: 0.85 of aggregate"}}}},
		{ID: "disruptive/nfs-stall", Title: "NFS I/O survives a MOFED restart", Nodes: []string{"n2"}, Status: Pass,
			Measured: []Measurement{{Name: "longest_gap", Node: "n2", Value: 19, Unit: "s", Threshold: &Threshold{Op: "<=", Value: 60, Source: "nfs(5) timeo"}}},
			Timeline: []Span{{Label: "MOFED pod mofed-a deleted", Clock: "runner"}, {Label: "new pod mofed-b Ready", From: 22, To: 22, Clock: "API server"},
				{Label: ".driver-ready absent", From: 1.3, To: 18.8, Clock: "writer"}, {Label: "I/O stalled", From: 1.9, To: 20.9, Clock: "writer"}}},
	}
	return r
}

// htmlString renders the page to a string.
func htmlString(r Run, diff *DiffResult) (string, error) {
	var b bytes.Buffer
	err := HTML(&b, r, diff)
	return b.String(), err
}

func parseHTML(t *testing.T, s string) *html.Node {
	t.Helper()
	doc, err := html.Parse(strings.NewReader(s))
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

func walk(n *html.Node, f func(*html.Node)) {
	f(n)
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		walk(c, f)
	}
}

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

func textOf(n *html.Node) string {
	var b strings.Builder
	walk(n, func(x *html.Node) {
		if x.Type == html.TextNode {
			b.WriteString(x.Data)
		}
	})
	return b.String()
}

// heatRects maps each heat-map cell's fill to the titles of its cells.
func heatRects(t *testing.T, doc *html.Node) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	walk(doc, func(n *html.Node) {
		if n.Type != html.ElementNode || n.Data != "svg" || !strings.Contains(attr(n, "class"), "heat") {
			return
		}
		walk(n, func(g *html.Node) {
			if g.Type != html.ElementNode || g.Data != "g" {
				return
			}
			var title, fill string
			for c := g.FirstChild; c != nil; c = c.NextSibling {
				switch c.Data {
				case "title":
					title = textOf(c)
				case "rect":
					fill = attr(c, "fill")
				}
			}
			out[fill] = append(out[fill], title)
		})
	})
	return out
}

func TestHTMLIsSelfContained(t *testing.T) {
	s, err := htmlString(htmlFixture(), nil)
	if err != nil {
		t.Fatal(err)
	}
	doc := parseHTML(t, s)
	csp := false
	walk(doc, func(n *html.Node) {
		if n.Type != html.ElementNode {
			return
		}
		switch n.Data {
		case "script", "link", "img", "iframe", "object", "embed", "image", "use":
			t.Errorf("<%s> in a self-contained report", n.Data)
		case "meta":
			if attr(n, "http-equiv") == "Content-Security-Policy" && strings.Contains(attr(n, "content"), "default-src 'none'") {
				csp = true
			}
		}
		for _, a := range n.Attr {
			if a.Key == "src" || a.Key == "href" || a.Key == "xlink:href" || strings.HasPrefix(a.Val, "url(") {
				t.Errorf("<%s %s=%q>: a reference out of the file", n.Data, a.Key, a.Val)
			}
		}
	})
	if !csp {
		t.Error("no Content-Security-Policy forbidding loads")
	}
	if strings.Contains(s, "<script>alert(1)</script>") {
		t.Error("a reason's markup reached the page unescaped")
	}
	if !strings.Contains(textOf(doc), "<script>alert(1)</script> Insufficient rdma/rdma_shared_device_a") {
		t.Error("the not-run reason is not shown as text")
	}
}

// Sections come in the order an operator reads after an upgrade: the
// baseline delta first.
func TestHTMLSectionOrder(t *testing.T) {
	s, err := htmlString(htmlFixture(), nil)
	if err != nil {
		t.Fatal(err)
	}
	last := -1
	for _, id := range []string{`id="verdict"`, `id="baseline"`, `id="bandwidth"`, `id="memlock"`, `id="doctor"`, `id="nccl"`, `id="stall"`, `id="checks"`} {
		i := strings.Index(s, id)
		if i < 0 || i < last {
			t.Fatalf("section %s missing or out of order (at %d, previous at %d)", id, i, last)
		}
		last = i
	}
}

// Defect guard: a port below its floor is red and names the port, the
// partner direction and the floor; a bandwidth check that measured
// nothing is a grey cell with its reason, never a blank or a colour.
func TestHTMLHeatMapAgainstTheFloor(t *testing.T) {
	s, err := htmlString(htmlFixture(), nil)
	if err != nil {
		t.Fatal(err)
	}
	rects := heatRects(t, parseHTML(t, s))
	red := rects[ColorBelowFloor]
	if len(red) != 1 || !strings.Contains(red[0], "n1 → n2") || !strings.Contains(red[0], "mlx5_0/1") || !strings.Contains(red[0], "floor 380 Gb/s") ||
		!strings.Contains(red[0], "0.79× the floor") {
		t.Errorf("below-floor cells: %q", red)
	}
	// Green is met (a healthy port must not read amber): 399 and 440 Gb/s against 380 are healthy.
	if amber := rects[ColorNearFloor]; len(amber) != 0 {
		t.Errorf("near-floor cells: %q", amber)
	}
	if green := rects[ColorAboveFloor]; len(green) != 2 || !strings.Contains(strings.Join(green, "|"), "n2 → n1") || !strings.Contains(strings.Join(green, "|"), "n3 → n1") {
		t.Errorf("above-floor cells: %q", green)
	}
	grey := rects[ColorUnmeasured]
	if len(grey) != 1 || !strings.Contains(grey[0], "n3 → n2") || !strings.Contains(grey[0], "not measured: the client pod never started") {
		t.Errorf("unmeasured cells: %q", grey)
	}
	if !strings.Contains(s, "Asked for and not measured") {
		t.Error("the unmeasured list is missing")
	}
	// One port measured with two partners: the worse one stands.
	r := htmlFixture()
	r.Checks = append(r.Checks, pairBW("bandwidth/write", "shared-dev", "n1", "n3", "mlx5_0/1→mlx5_0/1", 450, 380, Pass))
	s, _ = htmlString(r, nil)
	rects = heatRects(t, parseHTML(t, s))
	if len(rects[ColorBelowFloor]) != 1 || len(rects[ColorAboveFloor]) != 2 {
		t.Errorf("n1's port must show its worst partner (red), got %v", rects)
	}
	// A marginal miss (370 against 380: within 10 %) is amber, not red.
	r = htmlFixture()
	r.Checks[0] = pairBW("bandwidth/write", "shared-dev", "n1", "n2", "mlx5_0/1→mlx5_0/1", 370, 380, Fail)
	s, _ = htmlString(r, nil)
	rects = heatRects(t, parseHTML(t, s))
	if amber := rects[ColorNearFloor]; len(amber) != 1 || !strings.Contains(amber[0], "n1 → n2") || len(rects[ColorBelowFloor]) != 0 {
		t.Errorf("a marginal miss: %v", rects)
	}
}

func TestHTMLMemlockDoctorNCCLAndStall(t *testing.T) {
	s, err := htmlString(htmlFixture(), nil)
	if err != nil {
		t.Fatal(err)
	}
	doc := parseHTML(t, s)
	text := textOf(doc)
	for _, want := range []string{longMemlockFix, "memlock_soft 64 KiB", ">= 1 MiB", "seed 002",
		"host: port mlx5_1/1: 1: DOWN (3: Disabled)", "check cable and switch port", "[critical, seed 002] port down",
		"longest gap 19 s (limit <= 60 s, nfs(5) timeo)"} {
		if !strings.Contains(text, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	var polyPoints, floors, instants, bars, stalls int
	walk(doc, func(n *html.Node) {
		if n.Type != html.ElementNode {
			return
		}
		switch cls := attr(n, "class"); {
		case n.Data == "polyline" && cls == "series":
			polyPoints += len(strings.Fields(attr(n, "points")))
		case n.Data == "line" && cls == "floor":
			floors++
		case n.Data == "rect" && cls == "instant":
			instants++
		case n.Data == "rect" && cls == "span":
			bars++
		case n.Data == "rect" && cls == "stall":
			stalls++
		}
	})
	if polyPoints != 3 || floors != 1 {
		t.Errorf("NCCL chart: %d points (want 3 sizes), %d floor lines (want 1)", polyPoints, floors)
	}
	if instants != 2 || bars != 1 || stalls != 1 {
		t.Errorf("stall timeline: %d instants, %d bars, %d stall bars; want 2, 1, 1", instants, bars, stalls)
	}
}

// The report tells the story the exit code tells: NOT PASSED with exit 1
// for a failing run, exit 3 for a passing one with regressions against
// the baseline, whose rows come first.
func TestHTMLVerdictAndBaselineAgreeWithTheExitCode(t *testing.T) {
	r := htmlFixture()
	s, _ := htmlString(r, nil)
	if !strings.Contains(s, SummaryText(r)) || !strings.Contains(s, "exit code 1") || !strings.Contains(s, `class="verdict failed"`) {
		t.Error("a failing run's banner must say NOT PASSED and exit code 1")
	}
	if !strings.Contains(s, "No baseline given") {
		t.Error("without a baseline the report must say so")
	}
	pass := Run{Schema: Schema, RunID: "now", Checks: []Check{pairBW("bandwidth/write", "shared-dev", "n1", "n2", "mlx5_0/1→mlx5_0/1", 390, 380, Pass)}}
	base := Run{Schema: Schema, RunID: "base", Checks: []Check{pairBW("bandwidth/write", "shared-dev", "n1", "n2", "mlx5_0/1→mlx5_0/1", 440, 380, Pass)}}
	d := Diff(base, pass, 0.05)
	if d.Regressions() != 1 {
		t.Fatalf("fixture: %d regressions", d.Regressions())
	}
	s, _ = htmlString(pass, &d)
	if !strings.Contains(s, "exit code 3") || !strings.Contains(s, `class="verdict failed"`) || !strings.Contains(s, "1 regression(s) against the baseline") {
		t.Error("a passing run with a regression must read exit code 3, not passed")
	}
	doc := parseHTML(t, s)
	var first *html.Node
	walk(doc, func(n *html.Node) {
		if first == nil && n.Type == html.ElementNode && n.Data == "tr" && attr(n, "class") == "regression" {
			first = n
		}
	})
	if first == nil || !strings.Contains(textOf(first), "440 Gb/s") || !strings.Contains(textOf(first), "390 Gb/s") {
		t.Error("the regression row (440 → 390 Gb/s) is missing")
	}
	// Unchanged values are folded away under the changes.
	base2, now2 := htmlFixture(), htmlFixture()
	base2.Checks[0].Measured[0].Value = 420
	d2 := Diff(base2, now2, 0.05)
	s2, _ := htmlString(now2, &d2)
	changed, folded, _ := strings.Cut(s2, "of a node that left</summary>")
	if !strings.Contains(changed, "420 Gb/s") || strings.Contains(changed, "399 Gb/s") || !strings.Contains(folded, "399 Gb/s") {
		t.Error("unchanged rows (399 → 399 Gb/s) must be folded under the changed ones (420 → 300 Gb/s)")
	}
	if strings.Index(s, `class="regression"`) > strings.Index(s, `id="bandwidth"`) {
		t.Error("the baseline delta must come before the heat map")
	}
}
