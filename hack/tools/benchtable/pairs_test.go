package main

import (
	"fmt"
	"math"
	"strings"
	"testing"
)

// Lines shaped after the READ cq-mod 1 anomaly's run (REPS=6, read 64 KiB cq-mod 1,
// its counts and rates): in 3 of 6 runs ours hit 1262–6288 retransmission
// events, perftest 0–6.
const readCQ1 = `RESULT perftest read 65536 1 1 1 68.24
RETRIES perftest read 65536 1 1 1 0
RESULT rdmaprobe read 65536 1 1 1 67.90
RETRIES rdmaprobe read 65536 1 1 1 0
RESULT rdmaprobe read 65536 1 1 2 12.10
RETRIES rdmaprobe read 65536 1 1 2 6288
RESULT perftest read 65536 1 1 2 66.80
RETRIES perftest read 65536 1 1 2 6
RESULT perftest read 65536 1 1 3 69.10
RETRIES perftest read 65536 1 1 3 0
RESULT rdmaprobe read 65536 1 1 3 25.30
RETRIES rdmaprobe read 65536 1 1 3 1262
RESULT rdmaprobe read 65536 1 1 4 68.50
RETRIES rdmaprobe read 65536 1 1 4 0
RESULT perftest read 65536 1 1 4 68.00
RETRIES perftest read 65536 1 1 4 0
RESULT perftest read 65536 1 1 5 67.70
RETRIES perftest read 65536 1 1 5 2
RESULT rdmaprobe read 65536 1 1 5 19.90
RETRIES rdmaprobe read 65536 1 1 5 2448
RESULT rdmaprobe read 65536 1 1 6 68.20
RETRIES rdmaprobe read 65536 1 1 6 0
RESULT perftest read 65536 1 1 6 67.90
RETRIES perftest read 65536 1 1 6 0
`

func TestPairsAndClassesFromRealLines(t *testing.T) {
	cells, _ := parse(strings.NewReader(readCQ1))
	c := cells[key{"read", 65536, 1, 1}]
	if c == nil || len(c.pairs) != 6 {
		t.Fatalf("want 6 pairs, got %+v", c)
	}
	clean := c.clean()
	if len(clean) != 3 {
		t.Fatalf("want 3 clean pairs (both tools under %d retry events), got %d", cleanRetries, len(clean))
	}
	s := summarize(c, 0.99)
	// The retransmitting runs are ours alone: the summary must say so, not
	// average them away.
	if s.oursRetrying != 3 || s.refRetrying != 0 {
		t.Errorf("retrying runs ours/perftest = %d/%d, want 3/0", s.oursRetrying, s.refRetrying)
	}
	if s.verdict == verdictParity {
		t.Errorf("3 of 6 of our runs collapsed: not parity (%s)", s.text)
	}
}

// A cell whose paired ratios sit tightly at 1.00 is parity; one spread
// over 0.9..1.1 is too wide to claim; one clearly under is below.
func TestVerdicts(t *testing.T) {
	mk := func(ratios ...float64) *cell {
		c := &cell{}
		for i, r := range ratios {
			c.pairs = append(c.pairs, pair{rep: i + 1, ref: run{mbps: 100, ok: true, hasRetries: true}, ours: run{mbps: 100 * r, ok: true, hasRetries: true}})
		}
		return c
	}
	for _, tc := range []struct {
		name   string
		c      *cell
		want   string
		lo, hi float64
	}{
		{"tight at 1", mk(1.0, 1.01, 0.995, 1.005, 1.0, 1.002, 0.998, 1.004), verdictParity, 0.99, 1.01},
		{"wide", mk(0.9, 1.1, 0.95, 1.05, 0.92, 1.08), verdictWide, 0, 0},
		{"below", mk(0.80, 0.82, 0.79, 0.81, 0.80, 0.83), verdictBelow, 0, 0},
		{"too few", mk(1.0, 1.0), verdictFew, 0, 0},
	} {
		s := summarize(tc.c, 0.99)
		if s.verdict != tc.want {
			t.Errorf("%s: verdict %q (%s), want %q", tc.name, s.verdict, s.text, tc.want)
		}
		if tc.lo > 0 && (s.lo < tc.lo || s.hi > tc.hi || s.lo > s.median || s.hi < s.median) {
			t.Errorf("%s: interval [%.3f, %.3f] around %.3f", tc.name, s.lo, s.hi, s.median)
		}
	}
}

// The A/A interval is perftest against itself over the same clean pairs: a
// reference that never varies gives [1, 1]; one that swings ±10 % gives a
// wide interval, and a too-wide verdict then says the width is the bed's.
func TestSelfRatiosShowTheBedsNoise(t *testing.T) {
	mk := func(refs, ratios []float64) *cell {
		c := &cell{}
		for i := range refs {
			c.pairs = append(c.pairs, pair{rep: i + 1, ref: run{mbps: refs[i], ok: true, hasRetries: true}, ours: run{mbps: refs[i] * ratios[i], ok: true, hasRetries: true}})
		}
		return c
	}
	steady := summarize(mk([]float64{100, 100, 100, 100, 100, 100}, []float64{1, 1.01, 0.99, 1, 1.02, 0.98}), 0.99)
	if steady.aaLo != 1 || steady.aaHi != 1 || steady.aaMedian != 1 {
		t.Fatalf("steady reference: A/A %.3f [%.3f, %.3f]", steady.aaMedian, steady.aaLo, steady.aaHi)
	}
	noisy := summarize(mk([]float64{100, 90, 110, 95, 105, 100}, []float64{0.9, 1.1, 0.95, 1.05, 0.92, 1.08}), 0.99)
	if noisy.verdict != verdictWide || noisy.aaHi-noisy.aaLo < 0.1 || !strings.Contains(noisy.text, "the bed's noise alone") {
		t.Fatalf("noisy reference: %s, A/A [%.3f, %.3f]: %s", noisy.verdict, noisy.aaLo, noisy.aaHi, noisy.text)
	}
	if strings.Contains(steady.text, "the bed's noise") {
		t.Fatalf("a steady reference must not be blamed: %s", steady.text)
	}
}

// A failed run (no figure) is recorded and retried by guest-bench.sh; the
// retry that succeeded makes the pair, and the table still renders.
func TestFailedRunsAreCountedNotFatal(t *testing.T) {
	in := `RESULT perftest write 65536 1 1 1 NaN
FAILED perftest write 65536 1 1 1 attempt 1: no bandwidth line
RESULT perftest write 65536 1 1 1 64.0
RETRIES perftest write 65536 1 1 1 0
RESULT rdmaprobe write 65536 1 1 1 64.5
RETRIES rdmaprobe write 65536 1 1 1 0
`
	cells, failed := parse(strings.NewReader(in))
	c := cells[key{"write", 65536, 1, 1}]
	if failed != 1 || c == nil || len(c.pairs) != 1 || c.failedRef != 1 || math.Abs(c.pairs[0].ratio()-64.5/64.0) > 1e-9 {
		t.Fatalf("failed %d, cell %+v", failed, c)
	}
	var b strings.Builder
	if err := render(&b, cells, 0.99); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "1 / 0") {
		t.Errorf("the table must show the failed run:\n%s", b.String())
	}
}

func TestBootstrapIsDeterministic(t *testing.T) {
	x := []float64{0.97, 1.0, 1.02, 0.99, 1.01, 1.03, 0.98}
	lo1, hi1 := bootstrapMedian(x, 0.95)
	lo2, hi2 := bootstrapMedian(x, 0.95)
	if lo1 != lo2 || hi1 != hi2 || lo1 > 1.0 || hi1 < 1.0 || lo1 < 0.97 || hi1 > 1.03 {
		t.Fatalf("[%g, %g] then [%g, %g]", lo1, hi1, lo2, hi2)
	}
}

// Latency pairs: parity is the whole interval of ours/perftest within
// [0.99, 1/0.99]; 30 % over is slower, 30 % under is suspect too; a NaN run
// counts as failed.
func TestLatencyPairs(t *testing.T) {
	in := `LAT perftest write 2 1 40.1 55.0 90.2
LAT rdmaprobe write 2 1 40.3 54.0 80.0
LAT rdmaprobe write 2 2 40.0 52.0 70.0
LAT perftest write 2 2 40.2 51.0 95.0
LAT perftest write 2 3 40.0 50.0 99.0
LAT rdmaprobe write 2 3 NaN NaN NaN
LAT rdmaprobe write 2 3 40.1 55.0 77.0
LAT perftest read 2 1 100 120 300
LAT rdmaprobe read 2 1 130 150 310
LAT perftest read 2 2 101 121 301
LAT rdmaprobe read 2 2 131 151 311
LAT perftest read 2 3 99 119 299
LAT rdmaprobe read 2 3 129 149 309
`
	cells, failed := parseLat(strings.NewReader(in))
	w := cells[latKey{"write", 2}]
	if failed != 1 || w == nil || len(w.pairs) != 3 || w.failedOurs != 1 {
		t.Fatalf("failed %d, write %+v", failed, w)
	}
	if s := summarizeLat(w, 0.99); s.verdict != verdictParity {
		t.Errorf("write: %s (%s)", s.verdict, s.text)
	}
	if s := summarizeLat(cells[latKey{"read", 2}], 0.99); s.verdict != verdictSlower {
		t.Errorf("read 30 %% slower: %s (%s)", s.verdict, s.text)
	}
	fast := &latCell{}
	for rep := 1; rep <= 4; rep++ {
		fast.pairs = append(fast.pairs, latPair{rep: rep, ref: latRun{typical: 100, p99: 1, max: 1, ok: true}, ours: latRun{typical: 70, p99: 1, max: 1, ok: true}})
	}
	if s := summarizeLat(fast, 0.99); s.verdict != verdictFaster {
		t.Errorf("ours 30 %% under perftest: %s (%s)", s.verdict, s.text)
	}
	var b strings.Builder
	if err := renderLat(&b, cells, 0.99); err != nil || !strings.Contains(b.String(), "40.1") {
		t.Fatalf("%v\n%s", err, b.String())
	}
}

// An A/B run holds three tools' lines: each comparison reads only its two,
// and the per-repetition lines show every pair, unclean ones marked.
func TestToolsCompared(t *testing.T) {
	in := `RESULT perftest read 65536 1 1 1 100
RETRIES perftest read 65536 1 1 1 0
RESULT rdmaprobe read 65536 1 1 1 90
RETRIES rdmaprobe read 65536 1 1 1 0
RESULT rdmaprobe-b read 65536 1 1 1 99
RETRIES rdmaprobe-b read 65536 1 1 1 50
LAT perftest read 2 1 50 60 70
LAT rdmaprobe read 2 1 60 70 80
LAT rdmaprobe-b read 2 1 51 61 71
`
	defer func(r, o string) { refTool, oursTool = r, o }(refTool, oursTool)
	for _, tc := range []struct {
		ref, ours       string
		mbps, refMBps   float64
		latOurs, latRef float64
		clean           bool
	}{
		{"perftest", "rdmaprobe", 90, 100, 60, 50, true},
		{"perftest", "rdmaprobe-b", 99, 100, 51, 50, false},
		{"rdmaprobe", "rdmaprobe-b", 99, 90, 51, 60, false},
	} {
		refTool, oursTool = tc.ref, tc.ours
		cells, failed := parse(strings.NewReader(in))
		lats, latFailed := parseLat(strings.NewReader(in))
		c, l := cells[key{"read", 65536, 1, 1}], lats[latKey{"read", 2}]
		if failed+latFailed != 0 || c == nil || len(c.pairs) != 1 || l == nil || len(l.pairs) != 1 {
			t.Fatalf("%s/%s: failed %d+%d, cells %+v, lats %+v", tc.ours, tc.ref, failed, latFailed, c, l)
		}
		p, lp := c.pairs[0], l.pairs[0]
		if p.ours.mbps != tc.mbps || p.ref.mbps != tc.refMBps || lp.ours.typical != tc.latOurs || lp.ref.typical != tc.latRef || p.isClean() != tc.clean {
			t.Errorf("%s/%s: pair %+v, latency pair %+v", tc.ours, tc.ref, p, lp)
		}
		var b strings.Builder
		renderReps(&b, cells, lats)
		want := fmt.Sprintf("r1 %.1f/%.1f=%.3f", tc.mbps, tc.refMBps, tc.mbps/tc.refMBps)
		if !tc.clean {
			want += "x"
		}
		if !strings.Contains(b.String(), want) || !strings.Contains(b.String(), fmt.Sprintf("r1 %.1f/%.1f=", tc.latOurs, tc.latRef)) {
			t.Errorf("%s/%s: want %q in\n%s", tc.ours, tc.ref, want, b.String())
		}
	}
}

// perftest's clock: within 2 % of the kernel's, its cpuinfo figure is what
// it converted with, so its figures move to the kernel's clock; further
// away it used its own sample, and nothing moves.
func TestPerftestClock(t *testing.T) {
	f, note := perftestClock(strings.NewReader("x\nCLOCK cpuinfo 2095.775 kernel 2100.000\n"))
	if math.Abs(f-2100/2095.775) > 1e-9 || !strings.Contains(note, "2095.775") {
		t.Fatalf("factor %v, note %q", f, note)
	}
	for _, in := range []string{"", "CLOCK cpuinfo 2000 kernel 2100\n", "CLOCK cpuinfo x kernel 2100\n"} {
		if f, _ := perftestClock(strings.NewReader(in)); f != 1 {
			t.Errorf("%q: factor %v, want 1", in, f)
		}
	}
	cells := map[key]*cell{{"read", 1, 1, 1}: {pairs: []pair{{rep: 1, ref: run{mbps: 100, ok: true}}}}}
	lats := map[latKey]*latCell{{"read", 2}: {pairs: []latPair{{rep: 1, ref: latRun{typical: 50, p99: 60, max: 70, ok: true}}}}}
	rescaleRef(cells, lats, 1.25)
	if got := cells[key{"read", 1, 1, 1}].pairs[0].ref.mbps; got != 125 {
		t.Errorf("bandwidth %v, want 125", got)
	}
	if got := lats[latKey{"read", 2}].pairs[0].ref; got.typical != 40 || got.p99 != 48 || got.max != 56 {
		t.Errorf("latency %+v, want 40/48/56", got)
	}
}

// The loop-shape benchmark's lines get an interval, without the warm-up
// pair; too few pairs is said, not reported as a figure.
func TestBlocks(t *testing.T) {
	var in strings.Builder
	in.WriteString("    device_test.go:490: block pair 1: one at a time 300.0 µs, general 100.0 µs, ratio 0.333\n")
	for i := 2; i <= 21; i++ {
		fmt.Fprintf(&in, "    device_test.go:490: block pair %d: one at a time 50.0 µs, general 52.0 µs, ratio 1.040\n", i)
	}
	var b strings.Builder
	if !renderBlocks(&b, strings.NewReader(in.String())) || !strings.Contains(b.String(), "median 1.040, 95 % interval [1.040, 1.040] over 20 block pairs; typical 52.0 / 50.0 µs") {
		t.Fatalf("%q", b.String())
	}
	if renderBlocks(&b, strings.NewReader("block pair 1: one at a time 1 µs, general 1 µs, ratio 1\n")) {
		t.Fatal("one (warm-up) pair gave a figure")
	}
}
