package main

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/montanaflynn/stats"
	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/tw"
)

// Latency: "LAT tool op bytes rep typical p99 max" lines (µs, perftest's
// t_typical, 99 % percentile and t_max; ours from rdmaprobe bw --latency).
// Pairs are per repetition as for bandwidth; the ratio is ours/perftest of
// t_typical: parity when the whole interval lies within [target,
// 1/target].

// Latency verdicts besides parity and a wide interval.
const (
	verdictSlower = "slower than perftest"
	verdictFaster = "faster than perftest: not the same measurement?"
)

type latKey struct {
	op    string
	bytes int
}

type latRun struct {
	typical, p99, max float64
	ok                bool
}

type latPair struct {
	rep       int
	ref, ours latRun
}

type latCell struct {
	pairs                 []latPair
	failedRef, failedOurs int
}

func (c *latCell) at(rep int) *latPair {
	return repAt(&c.pairs, rep, func(p *latPair) int { return p.rep }, func(r int) latPair { return latPair{rep: r} })
}

func (c *latCell) complete() []latPair {
	return keep(c.pairs, func(p latPair) bool { return p.ref.ok && p.ours.ok })
}

func parseLat(r io.Reader) (map[latKey]*latCell, int) {
	cells := map[latKey]*latCell{}
	failed := 0
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 8 || f[0] != "LAT" || (f[1] != refTool && f[1] != oursTool) {
			continue
		}
		b, _ := strconv.Atoi(f[3])
		rep, _ := strconv.Atoi(f[4])
		k := latKey{f[2], b}
		if cells[k] == nil {
			cells[k] = &latCell{}
		}
		c := cells[k]
		var v [3]float64
		bad := false
		for i := range v {
			x, err := strconv.ParseFloat(f[5+i], 64)
			if err != nil || math.IsNaN(x) || x <= 0 {
				bad = true
			}
			v[i] = x
		}
		if bad {
			failed++
			*side(f[1], &c.failedRef, &c.failedOurs)++
			continue
		}
		p := c.at(rep)
		*side(f[1], &p.ref, &p.ours) = latRun{typical: v[0], p99: v[1], max: v[2], ok: true}
	}
	return cells, failed
}

type latSummary struct {
	n              int
	median, lo, hi float64
	ref, ours      latRun // medians of each figure
	verdict, text  string
}

func summarizeLat(c *latCell, target float64) latSummary {
	var s latSummary
	ps := c.complete()
	s.n = len(ps)
	med := func(get func(latPair) float64) float64 {
		x := make([]float64, len(ps))
		for i, p := range ps {
			x[i] = get(p)
		}
		m, _ := stats.Median(x)
		return m
	}
	s.ref = latRun{typical: med(func(p latPair) float64 { return p.ref.typical }), p99: med(func(p latPair) float64 { return p.ref.p99 }),
		max: med(func(p latPair) float64 { return p.ref.max })}
	s.ours = latRun{typical: med(func(p latPair) float64 { return p.ours.typical }), p99: med(func(p latPair) float64 { return p.ours.p99 }),
		max: med(func(p latPair) float64 { return p.ours.max })}
	if s.n < minPairs {
		s.median, s.verdict = math.NaN(), "too few pairs"
		s.text = fmt.Sprintf("%d pair(s): run more (REPS)", s.n)
		return s
	}
	r := make([]float64, len(ps))
	for i, p := range ps {
		r[i] = p.ours.typical / p.ref.typical
	}
	s.median, _ = stats.Median(r)
	s.lo, s.hi = bootstrapMedian(r, 0.95)
	// Two-sided: a latency well under perftest's is as suspect as one
	// over it (not the same measurement), so parity is the whole interval
	// within [target, 1/target].
	bound := 1 / target
	switch {
	case s.lo >= target && s.hi <= bound:
		s.verdict = verdictParity
	case s.lo > bound:
		s.verdict = verdictSlower
	case s.hi < target:
		s.verdict = verdictFaster
	default:
		s.verdict = verdictWide
	}
	s.text = fmt.Sprintf("typical latency ratio ours/perftest %.3f, 95 %% interval [%.3f, %.3f] over %d pairs, parity within [%.3f, %.3f]", s.median, s.lo, s.hi, s.n, target, bound)
	return s
}

func sortedLatKeys(cells map[latKey]*latCell) []latKey {
	keys := make([]latKey, 0, len(cells))
	for k := range cells {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].op != keys[j].op {
			return keys[i].op > keys[j].op
		}
		return keys[i].bytes < keys[j].bytes
	})
	return keys
}

func renderLat(w io.Writer, cells map[latKey]*latCell, target float64) error {
	if len(cells) == 0 {
		return nil
	}
	keys := sortedLatKeys(cells)
	fmt.Fprintln(w, "\nlatency (µs; write and send are half the round trip, read the whole READ, as perftest reports them):")
	table := tablewriter.NewTable(w, tablewriter.WithConfig(tablewriter.NewConfigBuilder().WithHeaderAutoFormat(tw.Off).Build()))
	table.Header("op", "bytes", "pairs", "failed runs perftest / ours", "perftest typical / p99 / max", "ours typical / p99 / max",
		"typical ratio [95 % interval]", "verdict")
	var notes []string
	for _, k := range keys {
		s := summarizeLat(cells[k], target)
		interval := "n/a"
		if !math.IsNaN(s.median) {
			interval = fmt.Sprintf("%.3f [%.3f, %.3f]", s.median, s.lo, s.hi)
		}
		fig := func(r latRun) string {
			return fmt.Sprintf("%s / %s / %s", fmtNum(r.typical, 1), fmtNum(r.p99, 1), fmtNum(r.max, 1))
		}
		_ = table.Append(k.op, strconv.Itoa(k.bytes), strconv.Itoa(s.n), fmt.Sprintf("%d / %d", cells[k].failedRef, cells[k].failedOurs),
			fig(s.ref), fig(s.ours), interval, s.verdict)
		notes = append(notes, fmt.Sprintf("%s latency %d B: %s — %s", k.op, k.bytes, s.verdict, s.text))
	}
	if err := table.Render(); err != nil {
		return err
	}
	for _, n := range notes {
		fmt.Fprintln(w, n)
	}
	return nil
}
