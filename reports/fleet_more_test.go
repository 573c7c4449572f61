package reports

import (
	"bytes"
	"encoding/xml"
	"strings"
	"testing"
)

// slowPair makes the checks of client → server on port fail at 297 Gb/s,
// as fleetRun's bad ports do.
func slowPair(r *Run, client, server, port string) {
	for i := range r.Checks {
		c := &r.Checks[i]
		if c.Nodes[0] != client || c.Nodes[1] != server || c.Rail != port+"→"+port {
			continue
		}
		for j := range c.Measured {
			c.Measured[j].Value = 297
		}
		c.Status, c.Diagnosis, c.Fix = Fail, "slow", fleetFix
	}
}

// matrixFills maps each cell's "node port" to its fill and class.
func matrixFills(t *testing.T, r Run) map[string][2]string {
	t.Helper()
	s, err := htmlString(r, nil)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][2]string{}
	for title, rect := range fleetCells(t, parseHTML(t, s)) {
		key, _, _ := strings.Cut(title, ":")
		out[key] = [2]string{attr(rect, "fill"), attr(rect, "class")}
	}
	return out
}

// A bad node: all its ports are culprits, its partners' ports on every
// rail are partners. A bad link: both ends are culprits (the link is), no
// partner.
func TestFleetMatrixBadNodeAndBadLink(t *testing.T) {
	var all []fleetPort
	for rl := range 2 {
		all = append(all, fleetPort{5, rl})
	}
	cells := matrixFills(t, fleetRun(8, 2, all...))
	for _, port := range []string{"mlx5_0/1", "mlx5_1/1"} {
		if c := cells["gpu-005 "+port]; c != [2]string{ColorBelowFloor, "culprit"} {
			t.Errorf("bad node, %s: %v", port, c)
		}
		for _, n := range []string{"gpu-004", "gpu-006"} {
			if c := cells[n+" "+port]; c != [2]string{ColorPartner, "partner"} {
				t.Errorf("bad node's partner %s %s: %v", n, port, c)
			}
		}
		if c := cells["gpu-003 "+port]; c[0] != ColorAboveFloor {
			t.Errorf("gpu-003 %s: %v", port, c)
		}
	}

	link := fleetRun(8, 2)
	slowPair(&link, "gpu-003", "gpu-004", "mlx5_1/1")
	if fs := Localize(link); len(fs) != 1 || fs[0].Kind != BadLink {
		t.Fatalf("fixture: %+v", fs)
	}
	cells = matrixFills(t, link)
	for _, n := range []string{"gpu-003", "gpu-004"} {
		if c := cells[n+" mlx5_1/1"]; c != [2]string{ColorBelowFloor, "culprit"} {
			t.Errorf("bad link end %s: %v", n, c)
		}
		if c := cells[n+" mlx5_0/1"]; c[0] != ColorAboveFloor {
			t.Errorf("%s mlx5_0/1: %v", n, c)
		}
	}
	for k, c := range cells {
		if c[0] == ColorPartner {
			t.Errorf("a bad link has no partners, %s is one", k)
		}
	}
}

// Without a localisation, a failing pair is red at both ends: nothing
// is passed off as a partner.
func TestFleetMatrixWithoutCulprit(t *testing.T) {
	r := fleetRun(2, 1) // two nodes: a pair each way, inconclusive
	slowPair(&r, "gpu-000", "gpu-001", "mlx5_0/1")
	cells := matrixFills(t, r)
	if cells["gpu-000 mlx5_0/1"][0] != ColorBelowFloor || cells["gpu-001 mlx5_0/1"][0] != ColorBelowFloor {
		t.Errorf("%v", cells)
	}
	if s := SummaryText(r); strings.Contains(s, "culprit") {
		t.Errorf("an inconclusive pair names a culprit: %s", s)
	}
}

func TestCulpritTextNamesVariantsWhenMixed(t *testing.T) {
	a := fleetRun(8, 2, fleetPort{2, 1})
	b := fleetRun(8, 2, fleetPort{6, 0})
	for i := range b.Checks {
		b.Checks[i].Variant = "hostdev"
	}
	r := a
	r.Checks = append(append([]Check(nil), a.Checks...), b.Checks...)
	s := SummaryText(r)
	if !strings.Contains(s, "port mlx5_1/1 on node gpu-002 (bad port [shared-dev], 2 partners); port mlx5_0/1 on node gpu-006 (bad port [hostdev], 2 partners)") {
		t.Errorf("mixed variants: %s", s)
	}
}

func TestPortOrderAndHeads(t *testing.T) {
	set := map[string]bool{}
	for _, p := range []string{"mlx5_10/1", "mlx5_2/1", "mlx5_9/1", "", "mlx5_0/1"} {
		set[p] = true
	}
	ports := sortedNat(set)
	if strings.Join(ports, ",") != "mlx5_0/1,mlx5_2/1,mlx5_9/1,mlx5_10/1," {
		t.Errorf("order %q", ports)
	}
	heads, caption := shortHeads(ports)
	if strings.Join(heads, ",") != "0,2,9,10,–" || !strings.Contains(caption, "ports mlx5_0/1, mlx5_2/1, mlx5_9/1, mlx5_10/1 (headers") || !strings.Contains(caption, "without a rail") {
		t.Errorf("heads %q, caption %q", heads, caption)
	}
	heads, caption = shortHeads([]string{"rxe0/1", "rxe1/1"})
	if strings.Join(heads, ",") != "0,1" || !strings.Contains(caption, "rxe0/1, rxe1/1") {
		t.Errorf("heads %q, caption %q", heads, caption)
	}
	heads, caption = shortHeads([]string{"mlx5_bond_0/1", "ib_a/1", "mlx5_bond_12/1"})
	if strings.Join(heads, ",") != "0,1,2" || !strings.Contains(caption, "0 = mlx5_bond_0/1") {
		t.Errorf("heads %q, caption %q", heads, caption)
	}
}

// Mid-size runs keep the per-op heat map in a fold and the passing
// checks as lines; fleets keep neither, and say where the values are.
func TestHTMLScalesItsSections(t *testing.T) {
	for _, tc := range []struct {
		n                          int
		heatOpen, heatFold, omit   bool
		passingLines, passingCount bool
	}{
		{4, true, false, false, false, false},
		{24, false, true, false, true, true},
		{256, false, false, true, false, true},
	} {
		s, err := htmlString(fleetRun(tc.n, 8, fleetPort{1, 1}), nil)
		if err != nil {
			t.Fatal(err)
		}
		heat := strings.Contains(s, `class="heat"`)
		fold := strings.Contains(s, "<summary>Per op and size")
		omit := strings.Contains(s, "is not drawn at this size")
		lines := strings.Contains(s, "passing check(s), one line each")
		count := strings.Contains(s, "passing checks are not listed") || lines
		if heat != (tc.heatOpen || tc.heatFold) || fold != tc.heatFold || omit != tc.omit || lines != tc.passingLines || count != tc.passingCount {
			t.Errorf("%d nodes: heat %v fold %v omitted %v passing lines %v count %v", tc.n, heat, fold, omit, lines, count)
		}
		if !strings.Contains(s, "NOT PASSED — culprit: port mlx5_1/1 on node gpu-001") {
			t.Errorf("%d nodes: no culprit in the verdict", tc.n)
		}
	}
}

// A small run lists its nodes one by one; a passing run's JUnit carries
// its verdict and no culprit.
func TestSmallRunsStayListed(t *testing.T) {
	r := fleetRun(4, 2)
	var b bytes.Buffer
	if err := Markdown(&b, r); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "| gpu-003 | H100/NDR-400 |") || !strings.Contains(b.String(), "per node: 4 nodes all pass") &&
		!strings.Contains(b.String(), "4 nodes all pass.") {
		t.Errorf("small markdown:\n%s", b.String())
	}
	b.Reset()
	if err := JUnit(&b, r); err != nil {
		t.Fatal(err)
	}
	var p junitSuites
	if err := xml.Unmarshal(b.Bytes(), &p); err != nil {
		t.Fatal(err)
	}
	if ps := p.Suites[0].Properties; ps == nil || len(ps.List) != 1 || ps.List[0].Value != "PASSED — 16 pass, 0 fail, 0 error, 0 not run (0 allowed)" {
		t.Errorf("properties %+v", ps)
	}
}

// A dirty link is not a clean pass: a port whose bandwidth met the floor while its link check
// failed (its counters rose) is drawn apart from a clean pass and from a
// slow port, and says why in its title; a link check is never a
// bandwidth cell of its own (not even gpudirect/link).
func TestFleetDrawsADirtyLinkApart(t *testing.T) {
	link := func(id, from, to, rail string, st Status) Check {
		return Check{ID: id, Nodes: []string{from, to}, Variant: "shared-dev", Rail: rail, Status: st,
			Diagnosis: "port counters rose above their allowance while " + rail + " carried the test (1): server mlx5_1/1 on n1 during write 1MiB: counters/symbol_error rose by 5 (allowed 0)"}
	}
	r := Run{Schema: Schema, RunID: "dirty", Checks: []Check{
		pairBW("bandwidth/write", "shared-dev", "n2", "n1", "mlx5_0/1→mlx5_0/1", 390, 380, Pass),
		link("bandwidth/link", "n2", "n1", "mlx5_0/1→mlx5_0/1", Pass),
		pairBW("bandwidth/write", "shared-dev", "n2", "n1", "mlx5_1/1→mlx5_1/1", 392, 380, Pass),
		link("bandwidth/link", "n2", "n1", "mlx5_1/1→mlx5_1/1", Fail),
		link("gpudirect/link", "n2", "n1", "mlx5_0/1→mlx5_0/1", Pass),
	}}
	cells := portCells(r, newCulpritEnds(r, Localize(r)))
	if st := cells[portEnd{"n1", "mlx5_0/1"}].state(); st != stateMet {
		t.Errorf("clean rail: state %d, want met", st)
	}
	for _, n := range []string{"n1", "n2"} {
		cell := cells[portEnd{n, "mlx5_1/1"}]
		if st := cell.state(); st != stateDirtyLink {
			t.Errorf("%s mlx5_1/1: state %d, want dirty link", n, st)
		}
		if title := cell.title(portEnd{n, "mlx5_1/1"}, stateDirtyLink); !strings.Contains(title, "dirty link: port counters rose") {
			t.Errorf("%s title: %s", n, title)
		}
		if cell.checks != 1 {
			t.Errorf("%s mlx5_1/1 counts %d bandwidth checks, want 1 (the link check is not one)", n, cell.checks)
		}
	}
	if stateColor[stateDirtyLink] == stateColor[stateMet] || stateColor[stateDirtyLink] == stateColor[stateBelow] {
		t.Error("a dirty link must have its own colour")
	}
	if isHeatCheck(Check{ID: "gpudirect/link"}) || isHeatCheck(Check{ID: "bandwidth/link/loopback"}) || !knownTraits("msgrate/link/loopback").Link {
		t.Error("link checks misclassified")
	}
}
