package calibrate

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rdmasuite/rdmasuite/reports"
	"github.com/rdmasuite/rdmasuite/thresholds"
)

const (
	a100    = "A100/HDR-200"
	builtIn = "thresholds/skus.yaml (built in)"
	k64     = 64 << 10
	m1      = 1 << 20
)

// fleet is a synthetic run: nodes × rails, each rail a bandwidth/write
// and a bandwidth/read check measuring 64 KiB and 1 MiB, with the value
// value(node, rail, op, size) gives, judged as the built-in A100 SKU
// would judge 1 MiB (≥ 190).
func fleet(id string, nodes, rails int, value func(n, r int, op string, size int) float64) reports.Run {
	run := reports.Run{Schema: reports.Schema, RunID: id, Started: time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC)}
	for n := range nodes {
		node := fmt.Sprintf("node-%03d", n)
		run.Nodes = append(run.Nodes, reports.Node{Name: node, SKU: a100, ThresholdsFile: builtIn})
		for r := range rails {
			for _, op := range []string{"write", "read"} {
				c := reports.Check{ID: "bandwidth/" + op, Nodes: []string{node, "peer"}, Variant: "shared-dev", Rail: fmt.Sprintf("mlx5_%d/1→mlx5_%d/1", r, r), Status: reports.Pass}
				port := fmt.Sprintf("mlx5_%d/1", r)
				small := reports.Measurement{Name: op + "_64KiB_avg", Node: node, Port: port, Value: value(n, r, op, k64), Unit: "Gb/s"}
				large := reports.Measurement{Name: op + "_1MiB_avg", Node: node, Port: port, Value: value(n, r, op, m1), Unit: "Gb/s",
					Threshold: &reports.Threshold{Op: ">=", Value: 190, Source: "A100/HDR-200: 0.95 × 200 Gb/s link — x"}}
				c.Measured = []reports.Measurement{small, large}
				if !large.Threshold.Met(large.Value) {
					c.Status = reports.Fail
					c.Diagnosis = fmt.Sprintf("%s = %g Gb/s, threshold >= 190 Gb/s (x)", large.Name, large.Value)
				}
				run.Checks = append(run.Checks, c)
			}
		}
	}
	return run
}

// healthy: 64 KiB around 183.6 (±0.2), 1 MiB around 196 (±0.2).
func healthy(n, r int, _ string, size int) float64 {
	d := 0.1 * float64((n*8+r)%5-2)
	if size == k64 {
		return 183.6 + d
	}
	return 196 + d
}

func row(t *testing.T, res *Result, floor string, size int) Row {
	t.Helper()
	for _, r := range res.Rows {
		if r.SKU == a100 && r.Floor == floor && r.Size == size {
			return r
		}
	}
	t.Fatalf("no row for %s %d in %+v", floor, size, res.Rows)
	return Row{}
}

// Healthy ports: the floor is the median less the 3 % least margin (the
// MAD is small), rounded down to 4 digits, and the source says so; the
// overlay loads over the built-ins and judges a figure.
func TestCalibrateHealthy(t *testing.T) {
	res, err := Calibrate([]Input{{"a.json", fleet("run-a", 4, 4, healthy)}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	r := row(t, res, "write", k64)
	// per-port figures 183.4 … 183.8, median 183.6, MAD 0.1:
	// max(4 × 1.4826 × 0.1, 0.03 × 183.6) = 5.508; 183.6 − 5.508 = 178.092.
	if r.Ports != 16 || math.Abs(r.Median-183.6) > 1e-9 || math.Abs(r.MAD-0.1) > 1e-9 || r.Value != 178 || len(r.Below) != 0 || r.Was != "180" { // the built-in 64 KiB floor: 0.9 × 200
		t.Errorf("write 64KiB: %+v", r)
	}
	if want := "calibrated from 16 ports of runs run-a (2026-12-06): median 183.6 Gb/s, MAD 0.1, floor = median − max(4·1.4826·MAD, 3 %)"; !strings.HasPrefix(r.Source(), want) {
		t.Errorf("source %q, want it to start %q", r.Source(), want)
	}
	if r := row(t, res, "read", m1); r.Value != 190.1 || r.Was != "190 (general)" { // 196 × 0.97 = 190.12
		t.Errorf("read 1MiB: %+v", r)
	}
	path := filepath.Join(t.TempDir(), "calibrated.yaml")
	if err := os.WriteFile(path, res.Overlay, 0o644); err != nil {
		t.Fatal(err)
	}
	set, err := thresholds.LoadSuite("", false, path)
	if err != nil {
		t.Fatal(err)
	}
	k, _ := set.Lookup(a100)
	if !k.FromOverlay() || k.Given("writeLatencyUs") != nil || len(k.Dropped()) > 0 {
		t.Errorf("the overlay SKU must be the built-in one whole, floors aside: dropped %v", k.Dropped())
	}
	b, err := k.BandwidthFloorAt("write", k64)
	if err != nil || b.Value != 178 || !strings.Contains(b.Source, "calibrated from 16 ports") {
		t.Fatalf("write 64KiB floor: %+v %v", b, err)
	}
	for v, want := range map[float64]reports.Status{178.5: reports.Pass, 177.9: reports.Fail} {
		if _, st, _ := reports.Judge("write_64KiB_avg", "Gb/s", "n", "p", &v, reports.Threshold(b)); st != want {
			t.Errorf("%g: %s, want %s", v, st, want)
		}
	}
	if g, _ := k.BandwidthFloor("write"); g.Value != 190 {
		t.Errorf("the general floor is kept: %+v", g)
	}
	if got := strings.Join(k.CalibratedFloors(), ", "); got != "write 64KiB ≥ 178 Gb/s, write 1MiB ≥ 190.1 Gb/s, read 64KiB ≥ 178 Gb/s, read 1MiB ≥ 190.1 Gb/s" {
		t.Errorf("CalibratedFloors: %s", got)
	}
	if other, _ := set.Lookup("H100/NDR-400"); other.FromOverlay() {
		t.Errorf("only the calibrated SKU is in the overlay")
	}
}

// A wide spread: 4·1.4826·MAD beats the 3 %; a few bad ports move
// neither the median nor the MAD much, and are named below the floor.
func TestCalibrateSpreadAndOutliers(t *testing.T) {
	spread := func(n, r int, op string, size int) float64 {
		v := 180 + 2*float64((n*8+r)%3-1) // 178, 180, 182: median 180, MAD 2
		if n == 0 && r == 0 {
			return 60 // a port trained down
		}
		if size == m1 {
			v += 10
		}
		return v
	}
	res, err := Calibrate([]Input{{"a.json", fleet("run-a", 5, 4, spread)}}, Options{AcceptBelowFloor: true})
	if err != nil {
		t.Fatal(err)
	}
	r := row(t, res, "write", k64)
	// 180 − 4 × 1.4826 × 2 = 168.139 → 168.1
	if r.Median != 180 || r.MAD != 2 || r.Value != 168.1 || len(r.Below) != 1 || r.Below[0] != "node-000 mlx5_0/1" {
		t.Errorf("%+v", r)
	}
	if len(res.Notes) == 0 || !strings.Contains(res.Notes[0], "below their floor used (--accept-below-floor)") {
		t.Errorf("notes: %v", res.Notes)
	}
}

func TestCalibrateRefuses(t *testing.T) {
	good := fleet("run-a", 4, 4, healthy)
	withErr := fleet("run-e", 4, 4, healthy)
	withErr.Checks[3].Status, withErr.Checks[3].Reason = reports.Error, "probe crashed"
	linkFail := fleet("run-l", 4, 4, healthy)
	linkFail.Checks = append(linkFail.Checks, reports.Check{ID: "bandwidth/link", Status: reports.Fail, Diagnosis: "symbol_error rose"})
	notRun := fleet("run-n", 4, 4, healthy)
	notRun.Checks = append(notRun.Checks, reports.Check{ID: "gpudirect/write", Status: reports.NotRun, Reason: "no GPU"})
	below := fleet("run-b", 4, 4, func(n, r int, op string, size int) float64 {
		if n == 1 && size == m1 {
			return 185
		}
		return healthy(n, r, op, size)
	})
	trained := fleet("run-t", 4, 4, healthy)
	trained.Checks[0].Status = reports.Fail
	trained.Checks[0].Diagnosis = "write_1MiB_avg = 99 Gb/s, threshold >= 190 Gb/s (x); port mlx5_0/1 runs at 100 Gb/s, the SKU expects 200 Gb/s (link trained down: cable or switch port)"
	trained.Checks[0].Measured[1].Value = 99
	otherFile := fleet("run-o", 4, 4, healthy)
	for i := range otherFile.Nodes {
		otherFile.Nodes[i].ThresholdsFile = "/etc/rdmasuite/overlay.yaml"
	}
	noSKU := fleet("run-s", 4, 4, healthy)
	noSKU.Nodes[2].SKU = ""
	badUnit := fleet("run-u", 4, 4, healthy)
	badUnit.Checks[0].Measured[0].Unit = "MB/s"
	cases := []struct {
		name   string
		inputs []reports.Run
		opt    Options
		want   []string
	}{
		{"an error", []reports.Run{withErr}, Options{}, []string{"e.json: run run-e did not pass: 1 check(s) did not: bandwidth/read[shared-dev]{mlx5_1/1→mlx5_1/1} node-000 peer error", "--accept-below-floor"}},
		{"an error, accepting misses", []reports.Run{withErr}, Options{AcceptBelowFloor: true}, []string{"did not pass", "lets through only bandwidth checks that measured and missed their floor"}},
		{"a link failure", []reports.Run{linkFail}, Options{AcceptBelowFloor: true}, []string{"bandwidth/link fail"}},
		{"a not-run", []reports.Run{notRun}, Options{AcceptBelowFloor: true}, []string{"gpudirect/write not-run"}},
		{"below the floor", []reports.Run{below}, Options{}, []string{"run run-b did not pass: 8 check(s)", "pass --accept-below-floor"}},
		{"a link trained down", []reports.Run{trained}, Options{AcceptBelowFloor: true}, []string{"run run-t did not pass: 1 check(s)", "bandwidth/write[shared-dev]{mlx5_0/1→mlx5_0/1} node-000 peer fail"}},
		{"too few ports", []reports.Run{good}, Options{MinPorts: 17}, []string{"SKU A100/HDR-200 write 64KiB: 16 port(s) measured, fewer than 17", "--min-ports 16"}},
		{"mixed thresholds files", []reports.Run{good, otherFile}, Options{}, []string{`SKU A100/HDR-200 came from "thresholds/skus.yaml (built in)" in run run-a and from "/etc/rdmasuite/overlay.yaml" in run run-o`}},
		{"another file, not given", []reports.Run{otherFile}, Options{}, []string{`the runs judged SKU A100/HDR-200 with "/etc/rdmasuite/overlay.yaml"`, "--thresholds FILE"}},
		{"a node without SKU", []reports.Run{noSKU}, Options{}, []string{"run run-s names no SKU for node node-002"}},
		{"not Gb/s", []reports.Run{badUnit}, Options{}, []string{`write_64KiB_avg is in "MB/s", not Gb/s`}},
		{"the same run twice", []reports.Run{good, good}, Options{}, []string{"run run-a is given twice"}},
		{"nothing", nil, Options{}, []string{"no results file"}},
	}
	for _, c := range cases {
		var in []Input
		for _, r := range c.inputs {
			in = append(in, Input{Name: strings.TrimPrefix(r.RunID, "run-") + ".json", Run: r})
		}
		_, err := Calibrate(in, c.opt)
		for _, w := range c.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%s: err = %v, want %q", c.name, err, w)
			}
		}
	}
	// Accepted: misses below the floor, nothing else.
	res, err := Calibrate([]Input{{"b.json", below}}, Options{AcceptBelowFloor: true})
	if err != nil {
		t.Fatal(err)
	}
	if r := row(t, res, "write", m1); r.Ports != 16 || len(r.Below) != 4 {
		t.Errorf("the ports below the new floor are named: %+v", r)
	}
}

// The run's thresholds file, given with --thresholds: its SKU is copied.
func TestCalibrateFromAnotherFile(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "site.yaml")
	base, _ := thresholds.Load("")
	k, _ := base.Lookup(a100)
	site := *k
	site.PortsPerNode.Source = "our racks"
	data, err := thresholds.Marshal("", []thresholds.SKU{site})
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(file, data, 0o644)
	run := fleet("run-a", 4, 4, healthy)
	for i := range run.Nodes {
		run.Nodes[i].ThresholdsFile = "/etc/rdmasuite/site.yaml"
	}
	res, err := Calibrate([]Input{{"a.json", run}}, Options{Thresholds: file})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(res.Overlay), "our racks") || len(res.Notes) != 1 || !strings.Contains(res.Notes[0], "copied from "+file) {
		t.Errorf("notes %v\n%s", res.Notes, res.Overlay)
	}
}

// A fleet of 256 nodes × 8 rails (speed sanity, not a timed test).
func BenchmarkCalibrate256x8(b *testing.B) {
	in := []Input{{"a.json", fleet("run-a", 256, 8, healthy)}}
	b.ResetTimer()
	for range b.N {
		if _, err := Calibrate(in, Options{}); err != nil {
			b.Fatal(err)
		}
	}
}

// --mads and --min-margin change the rule, and the source says which:
// 16 ports at 183.6 (MAD 0.1) with a 50 % margin give 91.8; with 1 MAD
// and no margin, 183.6 − 0.148 = 183.45 (rounded down to 4 digits: 183.4).
func TestCalibrateRuleOptions(t *testing.T) {
	in := []Input{{Name: "a.json", Run: fleet("run-a", 4, 4, healthy)}}
	res, err := Calibrate(in, Options{MinPorts: 8, MinMargin: 0.5})
	if err != nil {
		t.Fatal(err)
	}
	if r := row(t, res, "write", 64<<10); r.Value != 91.8 || !strings.Contains(r.Source(), "max(4·1.4826·MAD, 50 %)") {
		t.Fatalf("margin 0.5: %g, %s", r.Value, r.Source())
	}
	if !strings.Contains(string(res.Overlay), "50 % of the median") {
		t.Fatal("the overlay's header must say the rule used")
	}
	res, err = Calibrate(in, Options{MinPorts: 8, MADs: 1, MinMargin: 1e-9})
	if err != nil {
		t.Fatal(err)
	}
	if r := row(t, res, "write", 64<<10); r.Value != 183.4 {
		t.Fatalf("1 MAD: %g, %s", r.Value, r.Source())
	}
	if _, err := Calibrate(in, Options{MinMargin: 1.5}); err == nil || !strings.Contains(err.Error(), "--min-margin") {
		t.Fatalf("a margin of 150 %% must be refused: %v", err)
	}
}
