package runner

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rdmasuite/rdmasuite/reports"
)

// Collect reports each finished item as it goes: what ran where, its
// outcome, and how far the feature is (k/n), so a long feature is never
// silent.
func TestCollectReportsProgress(t *testing.T) {
	r := New(nil, Config{Concurrency: 2}, "r1")
	var mu sync.Mutex
	var lines []string
	r.Progress = func(s string) { mu.Lock(); lines = append(lines, s); mu.Unlock() }
	out := r.Collect(3, func(i int) []reports.Check {
		st := reports.Pass
		if i == 1 {
			st = reports.Fail
		}
		return []reports.Check{{ID: "bandwidth/write", Variant: "shared-dev", Nodes: []string{"n" + string(rune('a'+i)), "n9"}, Status: st},
			{ID: "bandwidth/read", Variant: "shared-dev", Nodes: []string{"n" + string(rune('a'+i)), "n9"}, Status: reports.Pass}}
	})
	if len(out) != 6 || len(lines) != 3 {
		t.Fatalf("%d checks, progress %q", len(out), lines)
	}
	all := strings.Join(lines, "\n")
	for _, want := range []string{"1/3", "2/3", "3/3", "bandwidth/write", "shared-dev", "nb → n9", "1 fail, 1 pass", "2 pass"} {
		if !strings.Contains(all, want) {
			t.Errorf("progress lacks %q:\n%s", want, all)
		}
	}
	// Without a Progress func nothing is reported and nothing breaks.
	if got := New(nil, Config{}, "r2").Collect(1, func(int) []reports.Check { return nil }); len(got) != 0 {
		t.Fatal(got)
	}
}

// Wall time is rounds, not pairs. Concurrency 0 (the suite's
// default) runs every item of a group at once: the disjoint pairs of a
// round share no node. A positive value caps it.
func TestCollectUnlimitedRunsTheWholeRoundAtOnce(t *testing.T) {
	for _, tc := range []struct{ limit, n, wantPeak int }{{0, 64, 64}, {4, 64, 4}, {-1, 8, 8}} {
		r := New(nil, Config{Concurrency: tc.limit}, "c")
		var mu sync.Mutex
		running, peak := 0, 0
		all := make(chan struct{})
		r.Collect(tc.n, func(int) []reports.Check {
			mu.Lock()
			running++
			peak = max(peak, running)
			if running == tc.n {
				close(all)
			}
			mu.Unlock()
			select { // hold every item until all run, or a short while when capped
			case <-all:
			case <-time.After(20 * time.Millisecond):
			}
			mu.Lock()
			running--
			mu.Unlock()
			return nil
		})
		if peak != tc.wantPeak {
			t.Errorf("concurrency %d over %d items: peak %d, want %d", tc.limit, tc.n, peak, tc.wantPeak)
		}
	}
}

// A paired run reports its round, the pairs done of all its
// pairs, the time elapsed and an ETA with every finished pair; a clean
// pair goes to Status (a terminal's refreshing line) when one is set, and
// a pair with any other outcome stays a line of its own.
func TestPairedProgressSaysRoundPairsAndETA(t *testing.T) {
	rp := &roundProgress{rounds: 2, total: 4, start: time.Now().Add(-10 * time.Second)}
	r := New(nil, Config{}, "r3")
	var mu sync.Mutex
	var lines, status []string
	r.Progress = func(s string) { mu.Lock(); lines = append(lines, s); mu.Unlock() }
	r.Status = func(s string) { mu.Lock(); status = append(status, s); mu.Unlock() }
	for round := range 2 {
		rp.round = round + 1
		r.collect(2, func(i int) []reports.Check {
			st := reports.Pass
			if round == 1 && i == 1 {
				st = reports.Fail
			}
			return []reports.Check{{ID: "bandwidth/write", Variant: "shared-dev", Nodes: []string{"a", "b"}, Status: st}}
		}, rp)
	}
	if len(status) != 3 || len(lines) != 1 {
		t.Fatalf("status %q, lines %q: want 3 clean pairs as status, the failed one as a line", status, lines)
	}
	all := strings.Join(append(status, lines...), "\n")
	for _, want := range []string{"round 1/2", "round 2/2", "pairs 1/4", "pairs 4/4", "s elapsed", "ETA ", "1 fail"} {
		if !strings.Contains(all, want) {
			t.Errorf("progress lacks %q:\n%s", want, all)
		}
	}
	for _, l := range append(status, lines...) {
		if strings.Contains(l, "pairs 4/4") == strings.Contains(l, "ETA") {
			t.Errorf("every pair but the last has an ETA: %s", l)
		}
	}
	// Without Status every pair is a line (off a terminal: one line per
	// finished pair).
	r.Status = nil
	lines = nil
	r.collect(2, func(int) []reports.Check { return []reports.Check{{ID: "x", Status: reports.Pass}} }, nil)
	if len(lines) != 2 {
		t.Errorf("lines %q", lines)
	}
}
