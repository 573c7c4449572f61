package reports

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

// peerRing is a bandwidth ring of n nodes × rails (node i the client of
// i+1 on every rail), write 1 MiB judged against 380 Gb/s; gbps(node,
// rail) is what the client measures. Statuses as the verdict sets them.
func peerRing(n, rails int, gbps func(node, rail int) float64) Run {
	r := Run{RunID: "ring"}
	name := func(i int) string { return fmt.Sprintf("gpu-%03d", i) }
	for i := range n {
		r.Nodes = append(r.Nodes, Node{Name: name(i), SKU: "H100/NDR-400"})
	}
	tr := &Traits{Pair: true, HeatUnit: "Gb/s", Localize: true, Op: "write"}
	for i := range n {
		for k := range rails {
			port := fmt.Sprintf("mlx5_%d/1", k)
			v := gbps(i, k)
			c := Check{ID: "bandwidth/write", Variant: "shared-dev", Nodes: []string{name(i), name((i + 1) % n)}, Rail: port + "→" + port,
				Traits: tr, Status: Pass, Measured: []Measurement{
					{Name: "write_64KiB_avg", Node: name(i), Port: port, Value: v, Unit: "Gb/s"},
					{Name: "write_1MiB_avg", Node: name(i), Port: port, Value: v, Unit: "Gb/s", Threshold: &Threshold{Op: ">=", Value: 380, Source: "H100/NDR-400: 0.95 × 400 Gb/s link"}},
				}}
			if v < 380 {
				c.Status, c.Diagnosis = Fail, fmt.Sprintf("write_1MiB_avg = %g Gb/s, threshold >= 380 Gb/s", v)
			}
			r.Checks = append(r.Checks, c)
		}
	}
	return r
}

// healthy: 97.5-98.5 % of 400 Gb/s, deterministic.
func healthy(node, rail int) float64 { return 400 * (0.975 + 0.00125*float64((node*7+rail*3)%9)) }

func warned(r Run) []Check {
	var out []Check
	for _, c := range r.Checks {
		if c.Status == Warn {
			out = append(out, c)
		}
	}
	return out
}

// A port 2 % under a tight fleet, above its floor, is a peer outlier:
// both rows that use it warn (the client's figure is low on each), the
// verdict names that port, and the run still passes with exit 0.
func TestPeerOutlierSlowButPassing(t *testing.T) {
	slow := func(node, rail int) float64 {
		if (node == 16 || node == 17) && rail == 3 { // 16→17 and 17→18 use gpu-017's port 3
			return 384
		}
		return healthy(node, rail)
	}
	r := peerRing(64, 8, slow)
	MarkPeerOutliers(&r)
	w := warned(r)
	if len(w) != 2 {
		t.Fatalf("%d warn rows, want 2 (gpu-016→gpu-017 and gpu-017→gpu-018 on mlx5_3/1): %v", len(w), w)
	}
	for _, c := range w {
		if c.Rail != "mlx5_3/1→mlx5_3/1" || c.Peers == nil || c.Peers.Count != 512 || c.Peers.Metric != "write_1MiB_avg" {
			t.Errorf("warn row %s %v: %+v", c.Rail, c.Nodes, c.Peers)
		}
		for _, want := range []string{"peer outlier", "384 Gb/s", "% below the median 392 Gb/s of 512 ports of SKU H100/NDR-400 [shared-dev]", "4 × 1.4826 × MAD", "it passes its bound (384 Gb/s >= 380 Gb/s)"} {
			if !strings.Contains(c.Diagnosis, want) {
				t.Errorf("diagnosis lacks %q: %s", want, c.Diagnosis)
			}
		}
		if !strings.Contains(strings.Join(c.Evidence, "\n"), "peer outlier") {
			t.Error("the evidence does not record the peer outlier")
		}
	}
	if !r.Passed() || r.ExitCode() != ExitPassed {
		t.Errorf("a warn fails the run: passed %v, exit %d", r.Passed(), r.ExitCode())
	}
	if err := r.Validate(); err != nil {
		t.Error(err)
	}
	ws := VerdictWarnings(r)
	if len(ws) != 1 || ws[0].Nodes[0] != "gpu-017" || ws[0].Port != "mlx5_3/1" {
		t.Fatalf("warnings %+v, want port mlx5_3/1 on gpu-017 alone", ws)
	}
	s := SummaryText(r)
	if !strings.HasPrefix(s, "PASSED — warning: port mlx5_3/1 on node gpu-017 (peer outlier in bandwidth/write: write_1MiB_avg 384 Gb/s, 2.0 % below the median 392 Gb/s of 512 ports) — 510 pass, 2 warn, 0 fail") {
		t.Errorf("verdict: %s", s)
	}
	// Calling it again changes nothing.
	before := fmt.Sprint(r.Checks)
	MarkPeerOutliers(&r)
	if fmt.Sprint(r.Checks) != before {
		t.Error("a second MarkPeerOutliers changed the checks")
	}

	// JUnit: a passing case that says WARN and why; the suite's
	// properties name the warning; no failure anywhere.
	var b bytes.Buffer
	if err := JUnit(&b, r); err != nil {
		t.Fatal(err)
	}
	x := b.String()
	for _, want := range []string{`name="rdmasuite.status" value="warn"`, "WARN: peer outlier: gpu-016 mlx5_3/1", `name="rdmasuite.warning.1" value="port mlx5_3/1 on node gpu-017`} {
		if !strings.Contains(x, want) {
			t.Errorf("JUnit lacks %q", want)
		}
	}
	if strings.Contains(x, "<failure") || !strings.Contains(x, `failures="0"`) {
		t.Error("JUnit fails a warn")
	}
	// The fleet view draws the named port in the warn colour, alone.
	if n := strings.Count(string(fleetView(r, Localize(r)).SVG), ColorPeerOutlier); n != 1 {
		t.Errorf("%d cells in the peer-outlier colour, want 1", n)
	}
}

// A healthy fleet, however tight, raises nothing: a port 0.5 % under a
// fleet with no spread at all (MAD 0) is noise, not an outlier.
func TestPeerOutlierHealthyFleetNoWarn(t *testing.T) {
	r := peerRing(64, 8, healthy)
	MarkPeerOutliers(&r)
	if w := warned(r); len(w) != 0 {
		t.Fatalf("a healthy fleet warns: %v", w[0].Diagnosis)
	}
	flat := peerRing(64, 8, func(node, rail int) float64 {
		if node == 5 && rail == 1 {
			return 390
		}
		return 392
	})
	MarkPeerOutliers(&flat)
	if w := warned(flat); len(w) != 0 {
		t.Fatalf("a 0.5 %% dip in a flat fleet warns: %v", w[0].Diagnosis)
	}
}

// Fewer than 9 ports are no fleet to compare with; a fail stays a fail
// however far below its peers; a figure without a threshold takes no part.
func TestPeerOutlierNeedsPeersAndKeepsFails(t *testing.T) {
	small := peerRing(8, 1, func(node, _ int) float64 {
		if node == 3 {
			return 381
		}
		return 396
	})
	MarkPeerOutliers(&small)
	if len(warned(small)) != 0 {
		t.Error("8 ports: a warn without enough peers")
	}
	nine := peerRing(9, 1, func(node, _ int) float64 {
		if node == 3 {
			return 381
		}
		return 396
	})
	MarkPeerOutliers(&nine)
	if len(warned(nine)) != 1 {
		t.Error("9 ports: the outlier is missed")
	}
	r := peerRing(32, 2, func(node, rail int) float64 {
		if node == 4 && rail == 0 {
			return 300 // under the floor: a fail
		}
		return healthy(node, rail)
	})
	MarkPeerOutliers(&r)
	if len(warned(r)) != 0 || r.Checks[8].Status != Fail {
		t.Errorf("a fail changed: %s, %d warn", r.Checks[8].Status, len(warned(r)))
	}
	// The unjudged 64 KiB figure of a slow port is not compared.
	u := peerRing(32, 1, healthy)
	u.Checks[3].Measured[0].Value = 300
	MarkPeerOutliers(&u)
	if len(warned(u)) != 0 {
		t.Error("an unjudged figure raised a warn")
	}
}

// Latency: lower is better, so an outlier is above its peers.
func TestPeerOutlierLatency(t *testing.T) {
	r := Run{}
	for i := range 40 {
		n := fmt.Sprintf("gpu-%03d", i)
		r.Nodes = append(r.Nodes, Node{Name: n, SKU: "H100/NDR-400"})
		v := 1.20 + 0.01*float64(i%5)
		if i == 7 {
			v = 2.1 // under the 2.5 µs bound, far above its peers
		}
		r.Checks = append(r.Checks, Check{ID: "latency/write", Variant: "shared-dev", Nodes: []string{n, fmt.Sprintf("gpu-%03d", (i+1)%40)},
			Rail: "mlx5_0/1→mlx5_0/1", Status: Pass, Measured: []Measurement{{Name: "write_2B_avg", Node: n, Port: "mlx5_0/1", Value: v, Unit: UnitMicroseconds,
				Threshold: &Threshold{Op: "<=", Value: 2.5, Source: "sku"}}}})
	}
	MarkPeerOutliers(&r)
	w := warned(r)
	if len(w) != 1 || w[0].Nodes[0] != "gpu-007" || !strings.Contains(w[0].Diagnosis, "% above the median 1.22 µs") || w[0].Peers.Deviation <= 0 {
		t.Fatalf("latency outlier: %d warn %v", len(w), w)
	}
	// A port faster than its peers is never an outlier.
	r.Checks[7].Status, r.Checks[7].Peers, r.Checks[7].Diagnosis = Pass, nil, ""
	r.Checks[7].Measured[0].Value = 0.6
	MarkPeerOutliers(&r)
	if n := len(warned(r)); n != 0 {
		t.Errorf("a fast port warns: %d", n)
	}
}

// Like with like: a loopback figure and a pair figure are different
// groups, as are two SKUs.
func TestPeerGroupsLikeWithLike(t *testing.T) {
	r := peerRing(16, 1, func(int, int) float64 { return 396 })
	for i := range 16 {
		n := r.Nodes[i].Name
		c := Check{ID: "bandwidth/write/loopback", Variant: "shared-dev", Nodes: []string{n, n}, Rail: "mlx5_0/1→mlx5_0/1", Status: Pass,
			Traits:   &Traits{Loopback: true, HeatUnit: "Gb/s", Localize: true, Op: "write"},
			Measured: []Measurement{{Name: "write_1MiB_avg", Node: n, Port: "mlx5_0/1", Value: 385, Unit: "Gb/s", Threshold: &Threshold{Op: ">=", Value: 380}}}}
		r.Checks = append(r.Checks, c)
	}
	for i := range 8 { // half the nodes are another SKU, slower as a whole
		r.Nodes[i].SKU = "A100/HDR-200"
		r.Checks[i].Measured[1].Value = 385
	}
	MarkPeerOutliers(&r)
	if w := warned(r); len(w) != 0 {
		t.Errorf("unlike figures compared: %s", w[0].Diagnosis)
	}
}

// A whole SKU under its floor is one SKU-wide finding in the verdict,
// not a culprit per node; the rows keep their fail.
func TestSKUShortfall(t *testing.T) {
	r := peerRing(256, 8, func(node, rail int) float64 { return healthy(node, rail) * 0.92 })
	MarkPeerOutliers(&r)
	short := SKUShortfalls(r)
	if len(short) != 1 || short[0].Ports != 2048 || short[0].Failed != 2048 || short[0].Check != "bandwidth/write" {
		t.Fatalf("shortfalls %+v", short)
	}
	s := SummaryText(r)
	if !strings.HasPrefix(s, "NOT PASSED — SKU-wide: SKU H100/NDR-400 as a whole measures write_1MiB_avg 360.6 Gb/s (median of 2048 ports, 2048 below the floor) against its floor >= 380 Gb/s in bandwidth/write [shared-dev]: the floor or a fabric-wide cause") {
		t.Errorf("verdict: %s", s)
	}
	if strings.Contains(s, "culprit") || len(s) > 400 {
		t.Errorf("the verdict lists culprits: %s", s)
	}
	if r.Summary()[Fail] != 2048 {
		t.Error("the rows lost their fail")
	}
	// Under half failing: culprits as before.
	part := peerRing(32, 1, func(node, rail int) float64 {
		if node < 10 {
			return 350
		}
		return healthy(node, rail)
	})
	if len(SKUShortfalls(part)) != 0 {
		t.Error("10 of 32 ports failing read as SKU-wide")
	}
	if !strings.Contains(SummaryText(part), "culprit") {
		t.Error("no culprit when a minority fails")
	}
}

// A pass → warn in the baseline diff is shown, not a regression; warn →
// fail is one; warn → pass improved.
func TestDiffWarnTransitions(t *testing.T) {
	base := peerRing(64, 1, healthy)
	now := peerRing(64, 1, func(node, rail int) float64 {
		if node == 16 || node == 17 {
			return 384
		}
		return healthy(node, rail)
	})
	MarkPeerOutliers(&now)
	if len(warned(now)) == 0 {
		t.Fatal("no warn")
	}
	d := Diff(base, now, 5)
	if d.Regressions() != 0 {
		t.Errorf("pass → warn is a regression: %s", d.Headline())
	}
	if n := d.Counts()[KindWarned]; n != 2 {
		t.Errorf("%d now-warn rows, want 2: %s", n, d.Headline())
	}
	back := Diff(now, base, 5)
	if back.Regressions() != 0 || back.Counts()[KindImproved] < 2 {
		t.Errorf("warn → pass: %s", back.Headline())
	}
	failing := peerRing(64, 1, func(node, rail int) float64 {
		if node == 16 || node == 17 {
			return 300
		}
		return healthy(node, rail)
	})
	if Diff(now, failing, 5).Regressions() == 0 {
		t.Error("warn → fail is no regression")
	}
}

// BenchmarkMarkPeerOutliers: a 1024 × 8 fleet (write 1 MiB judged).
func BenchmarkMarkPeerOutliers(b *testing.B) {
	r := peerRing(1024, 8, healthy)
	b.ReportAllocs()
	for b.Loop() {
		MarkPeerOutliers(&r)
	}
}
