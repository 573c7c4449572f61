// Command benchtable reads hack/guest-bench.sh's RESULT, RETRIES and FAILED
// lines and prints, per op/size/QPs/cq-mod, how our core compares with
// perftest, with the uncertainty a noisy emulator leaves:
//
//   - runs are paired: repetition r of perftest and of ours ran back to
//     back on the same devices (in alternating order), and the ratio is
//     taken per pair, so slow phases of the machine cancel out;
//   - pairs are classified by rxe's retransmission events in either run:
//     under TCG rxe's retransmit timer fires spuriously and each event
//     costs up to 67 ms (timeout 14), which is most of the spread; the
//     ratio and its interval come from the clean pairs (both runs under
//     cleanRetries events), the all-pairs ratio is printed beside it;
//   - the interval is a percentile bootstrap of the median ratio (fixed
//     seed, so a table reproduces from its lines); the verdict says
//     parity only when the whole interval is at or above the target,
//     below when it is entirely under, and otherwise that it is too
//     wide to claim either;
//   - a tool that retransmits in many more runs than the other is named
//     (that is a behaviour difference, not noise);
//   - a run that printed no figure is counted (guest-bench.sh retries it)
//     and never stops the table.
//
// Flags pick the two tools compared (-ref, -ours: perftest and rdmaprobe by
// default, so an A/B of two rdmaprobe builds in one guest run is the same
// table with -ref rdmaprobe -ours rdmaprobe-b) and -reps prints every
// repetition's pair, the evidence behind each interval.
//
// It exits 1 only when no pair at all was measured.
package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/montanaflynn/stats"
	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/tw"
)

// cleanRetries: a run with fewer rxe retransmission-related events than
// this is clean. perftest's own runs in the READ cq-mod 1 table showed 0–6 in
// their good runs and 165–207 in the ones that lost time.
const cleanRetries = 10

// minPairs is the fewest clean pairs an interval is computed from.
const minPairs = 3

// Verdicts.
const (
	verdictParity = "parity"
	verdictBelow  = "below target"
	verdictWide   = "interval too wide to claim parity"
	verdictFew    = "too few clean pairs"
)

// The tools compared: lines of any other tool are not read.
var refTool, oursTool = "perftest", "rdmaprobe"

// side is the run of p that a line of tool fills, nil for another tool.
func side[R any](tool string, ref, ours *R) *R {
	switch tool {
	case refTool:
		return ref
	case oursTool:
		return ours
	}
	return nil
}

type key struct {
	op                string
	bytes, qps, cqMod int
}

type run struct {
	mbps       float64
	ok         bool
	retries    float64
	hasRetries bool
}

func (r run) clean() bool { return r.ok && r.hasRetries && r.retries < cleanRetries }

type pair struct {
	rep       int
	ref, ours run
}

func (p pair) complete() bool { return p.ref.ok && p.ours.ok }
func (p pair) ratio() float64 { return p.ours.mbps / p.ref.mbps }
func (p pair) isClean() bool  { return p.ref.clean() && p.ours.clean() }
func (c *cell) pairAt(rep int) *pair {
	return repAt(&c.pairs, rep, func(p *pair) int { return p.rep }, func(r int) pair { return pair{rep: r} })
}

// repAt is the element of *xs for repetition rep, appended when missing.
func repAt[T any](xs *[]T, rep int, repOf func(*T) int, mk func(int) T) *T {
	for i := range *xs {
		if repOf(&(*xs)[i]) == rep {
			return &(*xs)[i]
		}
	}
	*xs = append(*xs, mk(rep))
	return &(*xs)[len(*xs)-1]
}

type cell struct {
	pairs                 []pair
	failedRef, failedOurs int
}

func (c *cell) clean() []pair {
	return keep(c.pairs, func(p pair) bool { return p.complete() && p.isClean() })
}

func (c *cell) complete() []pair { return keep(c.pairs, pair.complete) }

// keep is the elements of xs that ok accepts.
func keep[T any](xs []T, ok func(T) bool) []T {
	var out []T
	for _, x := range xs {
		if ok(x) {
			out = append(out, x)
		}
	}
	return out
}

// parse reads the lines; it returns the cells and the number of runs that
// printed no figure.
func parse(r io.Reader) (map[key]*cell, int) {
	cells := map[key]*cell{}
	failed := 0
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 8 || (f[0] != "RESULT" && f[0] != "RETRIES") {
			continue
		}
		if f[1] != refTool && f[1] != oursTool {
			continue
		}
		b, _ := strconv.Atoi(f[3])
		q, _ := strconv.Atoi(f[4])
		m, _ := strconv.Atoi(f[5])
		rep, _ := strconv.Atoi(f[6])
		v, err := strconv.ParseFloat(f[7], 64)
		k := key{f[2], b, q, m}
		if cells[k] == nil {
			cells[k] = &cell{}
		}
		c := cells[k]
		p := c.pairAt(rep)
		r := side(f[1], &p.ref, &p.ours)
		switch {
		case f[0] == "RETRIES":
			if err == nil {
				r.retries, r.hasRetries = v, true
			}
		case err != nil || v <= 0 || math.IsNaN(v):
			failed++
			*side(f[1], &c.failedRef, &c.failedOurs)++
		default:
			// A retry that succeeded replaces the failed attempt.
			*r = run{mbps: v, ok: true}
		}
	}
	return cells, failed
}

type summary struct {
	nClean, nAll              int
	median, lo, hi            float64 // clean pairs' median ratio and its interval
	allMedian                 float64
	refMBps, oursMBps         float64 // clean pairs' medians
	refRetrying, oursRetrying int     // runs at or over cleanRetries
	// The bed's own noise: perftest against itself (aaLo, aaHi: NaN with
	// too few clean runs), the same statistic over the same clean pairs.
	aaMedian, aaLo, aaHi float64
	verdict, text        string
}

// selfRatios pairs perftest with itself: each clean repetition's figure
// over the next one's (cyclically), so an ours/perftest interval can be set
// beside the interval the reference alone produces on this host. Two tools
// that are identical cannot resolve a difference narrower than this.
func selfRatios(ps []pair) []float64 {
	if len(ps) < 2 {
		return nil
	}
	out := make([]float64, len(ps))
	for i, p := range ps {
		out[i] = ps[(i+1)%len(ps)].ref.mbps / p.ref.mbps
	}
	return out
}

// summarize judges one cell against target (e.g. 0.99).
func summarize(c *cell, target float64) summary {
	var s summary
	all := c.complete()
	clean := c.clean()
	s.nAll, s.nClean = len(all), len(clean)
	for _, p := range c.pairs {
		if p.ref.ok && p.ref.hasRetries && !p.ref.clean() {
			s.refRetrying++
		}
		if p.ours.ok && p.ours.hasRetries && !p.ours.clean() {
			s.oursRetrying++
		}
	}
	ratios := func(ps []pair) []float64 {
		out := make([]float64, len(ps))
		for i, p := range ps {
			out[i] = p.ratio()
		}
		return out
	}
	s.allMedian, _ = stats.Median(ratios(all))
	var refs, ours []float64
	for _, p := range clean {
		refs, ours = append(refs, p.ref.mbps), append(ours, p.ours.mbps)
	}
	s.refMBps, _ = stats.Median(refs)
	s.oursMBps, _ = stats.Median(ours)
	switch {
	case s.oursRetrying >= 2 && s.oursRetrying > 2*s.refRetrying:
		s.verdict = fmt.Sprintf("ours retransmits in %d of %d runs, perftest in %d: a behaviour difference, not noise", s.oursRetrying, len(c.pairs), s.refRetrying)
	case s.refRetrying >= 2 && s.refRetrying > 2*s.oursRetrying:
		// Still judged on the clean pairs below, but said.
		s.text = fmt.Sprintf("perftest retransmits in %d of %d runs, ours in %d; ", s.refRetrying, len(c.pairs), s.oursRetrying)
	}
	if s.nClean < minPairs {
		s.median = math.NaN()
		if s.verdict == "" {
			s.verdict = verdictFew
		}
		s.text += fmt.Sprintf("%d clean pair(s) of %d (both runs under %d retransmission events): run more (REPS)", s.nClean, s.nAll, cleanRetries)
		return s
	}
	r := ratios(clean)
	s.median, _ = stats.Median(r)
	s.lo, s.hi = bootstrapMedian(r, 0.95)
	aa := selfRatios(clean)
	s.aaMedian, _ = stats.Median(aa)
	s.aaLo, s.aaHi = bootstrapMedian(aa, 0.95)
	if s.verdict == "" {
		switch {
		case s.lo >= target:
			s.verdict = verdictParity
		case s.hi < target:
			s.verdict = verdictBelow
		default:
			s.verdict = verdictWide
		}
	}
	s.text += fmt.Sprintf("median ratio %.3f, 95 %% interval [%.3f, %.3f] over %d clean pairs, target %.2f", s.median, s.lo, s.hi, s.nClean, target)
	// A/A pairs are a repetition apart, so they also carry drift the
	// back-to-back pairs cancel: only an A/A interval at least as wide
	// is said to account for the width.
	if s.verdict == verdictWide && s.aaHi-s.aaLo >= s.hi-s.lo {
		s.text += fmt.Sprintf("; perftest against itself spans [%.3f, %.3f] here, at least as wide: the bed's noise alone accounts for the width", s.aaLo, s.aaHi)
	}
	return s
}

// bootstrapMedian is the percentile bootstrap interval (conf, e.g. 0.95)
// of the median of x, from 4000 resamples with a fixed seed.
func bootstrapMedian(x []float64, conf float64) (lo, hi float64) {
	const resamples = 4000
	rng := rand.New(rand.NewPCG(17, uint64(len(x))))
	meds := make([]float64, resamples)
	buf := make([]float64, len(x))
	for i := range meds {
		for j := range buf {
			buf[j] = x[rng.IntN(len(x))]
		}
		meds[i], _ = stats.Median(buf)
	}
	sort.Float64s(meds)
	at := func(q float64) float64 {
		return meds[min(len(meds)-1, max(0, int(math.Round(q*float64(len(meds)-1)))))]
	}
	return at((1 - conf) / 2), at(1 - (1-conf)/2)
}

func sortedKeys(cells map[key]*cell) []key {
	keys := make([]key, 0, len(cells))
	for k := range cells {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := keys[i], keys[j]
		if a.op != b.op {
			return a.op > b.op
		}
		if a.bytes != b.bytes {
			return a.bytes < b.bytes
		}
		if a.qps != b.qps {
			return a.qps < b.qps
		}
		return a.cqMod < b.cqMod
	})
	return keys
}

func fmtNum(v float64, prec int) string {
	if math.IsNaN(v) || v == 0 {
		return "n/a"
	}
	return strconv.FormatFloat(v, 'f', prec, 64)
}

// mpps is the message rate of a MB/s figure at size bytes: perftest's
// MsgRate and BW average come from the same count over the same time, so
// ours/perftest is one ratio for both.
func mpps(mbps float64, size int) float64 {
	if size <= 0 {
		return 0
	}
	return mbps * (1 << 20) / float64(size) / 1e6
}

// render prints the table and a verdict line per cell.
func render(w io.Writer, cells map[key]*cell, target float64) error {
	if len(cells) == 0 {
		return nil
	}
	// Header auto-format would turn "MB/s" into "MB / S".
	table := tablewriter.NewTable(w, tablewriter.WithConfig(
		tablewriter.NewConfigBuilder().WithHeaderAutoFormat(tw.Off).Build()))
	table.Header("op", "bytes", "qps", "cq-mod", "pairs clean/all", "failed runs perftest / ours",
		"perftest MB/s", "ours MB/s", "ours Mpps", "ratio [95 % interval]", "perftest A/A [95 %]", "ratio, all pairs", "retransmitting runs perftest / ours", "verdict")
	var notes []string
	for _, k := range sortedKeys(cells) {
		s := summarize(cells[k], target)
		interval, aa := "n/a", "n/a"
		if !math.IsNaN(s.median) {
			interval = fmt.Sprintf("%.3f [%.3f, %.3f]", s.median, s.lo, s.hi)
			aa = fmt.Sprintf("%.3f [%.3f, %.3f]", s.aaMedian, s.aaLo, s.aaHi)
		}
		_ = table.Append(k.op, strconv.Itoa(k.bytes), strconv.Itoa(k.qps), strconv.Itoa(k.cqMod),
			fmt.Sprintf("%d/%d", s.nClean, s.nAll), fmt.Sprintf("%d / %d", cells[k].failedRef, cells[k].failedOurs),
			fmtNum(s.refMBps, 2), fmtNum(s.oursMBps, 2), fmtNum(mpps(s.oursMBps, k.bytes), 4), interval, aa, fmtNum(s.allMedian, 3),
			fmt.Sprintf("%d / %d", s.refRetrying, s.oursRetrying), s.verdict)
		notes = append(notes, fmt.Sprintf("%s %d B qps %d cq-mod %d: %s — %s", k.op, k.bytes, k.qps, k.cqMod, s.verdict, s.text))
	}
	if err := table.Render(); err != nil {
		return err
	}
	for _, n := range notes {
		fmt.Fprintln(w, n)
	}
	return nil
}

// perftestClock is the factor that turns perftest's figures into the
// kernel's clock, from guest-bench.sh's "CLOCK cpuinfo MHZ kernel MHZ"
// line: perftest converts cycles with /proc/cpuinfo's "cpu MHz" (the
// boot-time estimate) unless its own gettimeofday sample is more than 2 %
// away from it (get_cpu_mhz in perftest's get_clock.c), where the kernel
// uses its refined TSC rate; ours measures the counter against the kernel's
// clock. 1 when the line is missing or perftest would use its sample.
func perftestClock(r io.Reader) (float64, string) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 5 || f[0] != "CLOCK" || f[1] != "cpuinfo" || f[3] != "kernel" {
			continue
		}
		proc, err1 := strconv.ParseFloat(f[2], 64)
		kern, err2 := strconv.ParseFloat(f[4], 64)
		if err1 != nil || err2 != nil || proc <= 0 || kern <= 0 || math.Abs(proc-kern)/proc > 0.02 {
			return 1, ""
		}
		return kern / proc, fmt.Sprintf("perftest's figures rescaled from its %.3f MHz (/proc/cpuinfo) to the kernel's %.3f MHz: bandwidth × %.4f, latency × %.4f",
			proc, kern, kern/proc, proc/kern)
	}
	return 1, ""
}

// rescaleRef applies perftestClock's factor to the reference's figures.
func rescaleRef(cells map[key]*cell, lats map[latKey]*latCell, f float64) {
	for _, c := range cells {
		for i := range c.pairs {
			c.pairs[i].ref.mbps *= f
		}
	}
	for _, c := range lats {
		for i := range c.pairs {
			r := &c.pairs[i].ref
			r.typical, r.p99, r.max = r.typical/f, r.p99/f, r.max/f
		}
	}
}

// renderReps prints every repetition of every cell: the reference's and
// ours' figures, their ratio, and a mark on a pair left out of the interval
// (a failed or retransmitting run).
func renderReps(w io.Writer, cells map[key]*cell, lats map[latKey]*latCell) {
	fmt.Fprintf(w, "\nper repetition, %s / %s = ratio (x: not a clean pair):\n", oursTool, refTool)
	for _, k := range sortedKeys(cells) {
		ps := append([]pair(nil), cells[k].pairs...)
		sort.Slice(ps, func(i, j int) bool { return ps[i].rep < ps[j].rep })
		var b strings.Builder
		for _, p := range ps {
			mark := ""
			if !p.complete() || !p.isClean() {
				mark = "x"
			}
			fmt.Fprintf(&b, " r%d %s/%s=%s%s", p.rep, fmtNum(p.ours.mbps, 1), fmtNum(p.ref.mbps, 1), fmtNum(p.ratio(), 3), mark)
		}
		fmt.Fprintf(w, "%s %d B qps %d cq-mod %d MB/s:%s\n", k.op, k.bytes, k.qps, k.cqMod, b.String())
	}
	for _, k := range sortedLatKeys(lats) {
		ps := append([]latPair(nil), lats[k].pairs...)
		sort.Slice(ps, func(i, j int) bool { return ps[i].rep < ps[j].rep })
		var b strings.Builder
		for _, p := range ps {
			mark := ""
			if !p.ref.ok || !p.ours.ok {
				mark = "x"
			}
			fmt.Fprintf(&b, " r%d %s/%s=%s%s", p.rep, fmtNum(p.ours.typical, 1), fmtNum(p.ref.typical, 1), fmtNum(p.ours.typical/p.ref.typical, 3), mark)
		}
		fmt.Fprintf(w, "%s latency %d B typical µs:%s\n", k.op, k.bytes, b.String())
	}
}

// blockPair is one line of BenchmarkReadLatencyLoopShapes (workloads/bwverbs).
var blockPair = regexp.MustCompile(`block pair (\d+): one at a time ([0-9.]+) µs, general ([0-9.]+) µs, ratio ([0-9.]+)`)

// renderBlocks puts the interval on the loop-shape benchmark's block
// pairs: the median ratio general / one at a time, the first pair left out
// (it warms the guest's translation caches). false when there are none.
func renderBlocks(w io.Writer, r io.Reader) bool {
	var one, gen, ratio []float64
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		m := blockPair.FindStringSubmatch(sc.Text())
		if m == nil || m[1] == "1" {
			continue
		}
		o, _ := strconv.ParseFloat(m[2], 64)
		g, _ := strconv.ParseFloat(m[3], 64)
		q, _ := strconv.ParseFloat(m[4], 64)
		one, gen, ratio = append(one, o), append(gen, g), append(ratio, q)
	}
	if len(ratio) < minPairs {
		return false
	}
	mr, _ := stats.Median(ratio)
	mo, _ := stats.Median(one)
	mg, _ := stats.Median(gen)
	lo, hi := bootstrapMedian(ratio, 0.95)
	fmt.Fprintf(w, "general loop / perftest's run_iter_lat shape: median %.3f, 95 %% interval [%.3f, %.3f] over %d block pairs; typical %.1f / %.1f µs\n",
		mr, lo, hi, len(ratio), mg, mo)
	return true
}

func main() {
	flag.StringVar(&refTool, "ref", refTool, "the reference tool's name in the lines")
	flag.StringVar(&oursTool, "ours", oursTool, "the measured tool's name in the lines")
	reps := flag.Bool("reps", false, "also print every repetition's pair")
	blocks := flag.Bool("blocks", false, "read BenchmarkReadLatencyLoopShapes' block pairs instead")
	flag.Parse()
	if *blocks {
		if !renderBlocks(os.Stdout, os.Stdin) {
			fmt.Fprintln(os.Stderr, "benchtable: too few block pairs")
			os.Exit(1)
		}
		return
	}
	if refTool != "perftest" || oursTool != "rdmaprobe" {
		fmt.Printf("compared: ours = %s, reference (\"perftest\" columns) = %s\n", oursTool, refTool)
	}
	raw, err := io.ReadAll(os.Stdin)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	cells, failed := parse(bytes.NewReader(raw))
	lats, latFailed := parseLat(bytes.NewReader(raw))
	if refTool == "perftest" {
		if f, note := perftestClock(bytes.NewReader(raw)); f != 1 {
			rescaleRef(cells, lats, f)
			fmt.Println(note)
		}
	}
	failed += latFailed
	if err := render(os.Stdout, cells, 0.99); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := renderLat(os.Stdout, lats, 0.99); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if *reps {
		renderReps(os.Stdout, cells, lats)
	}
	measured := 0
	for _, c := range cells {
		measured += len(c.complete())
	}
	for _, c := range lats {
		measured += len(c.complete())
	}
	if failed > 0 {
		fmt.Printf("benchtable: %d run(s) printed no figure (counted above; guest-bench.sh retried them)\n", failed)
	}
	if measured == 0 {
		fmt.Fprintln(os.Stderr, "benchtable: no pair of runs was measured")
		os.Exit(1)
	}
}
