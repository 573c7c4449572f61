package reports

import (
	"bytes"
	"fmt"
	"sort"
	"strings"
	"testing"
)

var floor180 = &Threshold{Op: ">=", Value: 180, Source: "sku"}

// bwCheck is one directed bandwidth check client→server measured on the client.
func bwCheck(client, server string, gbps float64, st Status) Check {
	return Check{ID: "bandwidth/write", Variant: "shared-dev", Nodes: []string{client, server}, Status: st,
		Measured: []Measurement{{Name: "write_1MiB_avg", Node: client, Port: "mlx5_0/1", Value: gbps, Unit: "Gb/s", Threshold: floor180}}}
}

func runOf(checks ...Check) Run { return Run{RunID: "r", Checks: checks} }

func regressions(d DiffResult) []Delta {
	var out []Delta
	for _, x := range d.Deltas {
		if x.Regression {
			out = append(out, x)
		}
	}
	return out
}

func TestDiff(t *testing.T) {
	memlock := func(v float64, st Status) Check {
		return Check{ID: "memlock/rlimit", Nodes: []string{"a"}, Status: st,
			Measured: []Measurement{{Name: "memlock_soft", Value: v, Unit: "bytes", Threshold: &Threshold{Op: ">=", Value: 1 << 20, Source: "sku"}}}}
	}
	stall := func(v float64, op string) Check {
		c := Check{ID: "nfs/stall", Nodes: []string{"a"}, Status: Pass, Measured: []Measurement{{Name: "stall_sec", Value: v, Unit: "s"}}}
		if op != "" {
			c.Measured[0].Threshold = &Threshold{Op: op, Value: 60, Source: "sku"}
		}
		return c
	}
	latency := func(v float64) Check {
		return Check{ID: "latency/write", Nodes: []string{"a", "b"}, Status: Pass, Measured: []Measurement{{Name: "write_2B_p99", Node: "a", Value: v, Unit: "µs"}}}
	}
	railCheck := func(rail string, st Status) Check {
		return Check{ID: "bandwidth/write", Nodes: []string{"a", "b"}, Rail: rail, Status: st}
	}
	cases := []struct {
		name      string
		base, now Run
		// regs are the notes (or "Name Node") of the deltas that must be regressions.
		regs       []string
		noCommon   bool
		wantNotes  []string // notes that must appear on some delta
		forbidNote []string
	}{
		{name: "within tolerance", base: runOf(bwCheck("a", "b", 195, Pass)), now: runOf(bwCheck("a", "b", 192, Pass))},
		{name: "drop beyond tolerance", base: runOf(bwCheck("a", "b", 195, Pass)), now: runOf(bwCheck("a", "b", 185, Pass)), regs: []string{"write_1MiB_avg a"}},
		{name: "adding a node re-pairs the ring: per-node values still match",
			base:      runOf(bwCheck("a", "b", 190, Pass), bwCheck("b", "a", 190, Pass)),
			now:       runOf(bwCheck("a", "b", 190, Pass), bwCheck("b", "c", 189, Pass), bwCheck("c", "a", 191, Pass)),
			wantNotes: []string{"new"}, forbidNote: []string{"missing in this run"}},
		{name: "measurement on a node (no Node field) falls back to the check's first node",
			base: runOf(func() Check { c := bwCheck("a", "b", 190, Pass); c.Measured[0].Node = ""; return c }()),
			now:  runOf(bwCheck("a", "c", 150, Fail)), regs: []string{"write_1MiB_avg a", "status pass → fail"}},
		{name: "status pass→fail keyed per node, not per pair",
			base: runOf(bwCheck("b", "a", 190, Pass)), now: runOf(bwCheck("b", "c", 190, Fail)), regs: []string{"status pass → fail"}},
		{name: "status keyed per rail", base: runOf(railCheck("r0", Pass), railCheck("r1", Pass)), now: runOf(railCheck("r0", Pass), railCheck("r1", Error)),
			regs: []string{"status pass → error"}},
		{name: "pass→not-run stays a regression", base: runOf(railCheck("r0", Pass)), now: runOf(railCheck("r0", NotRun)), regs: []string{"status pass → not-run"}},
		{name: "memlock 64 KiB → unlimited is an improvement", base: runOf(memlock(65536, Fail)), now: runOf(memlock(-1, Pass)), wantNotes: []string{"now unlimited"}},
		{name: "memlock unlimited → 64 KiB is a regression", base: runOf(memlock(-1, Pass)), now: runOf(memlock(65536, Fail)),
			regs: []string{"no longer unlimited", "status pass → fail"}},
		{name: "memlock unlimited both times", base: runOf(memlock(-1, Pass)), now: runOf(memlock(-1, Pass))},
		{name: "memlock 64 KiB → 16 MiB is an improvement", base: runOf(memlock(65536, Fail)), now: runOf(memlock(16<<20, Pass))},
		{name: "higher is better without a <= threshold", base: runOf(stall(10, "")), now: runOf(stall(20, ""))},
		{name: "lower is better with <=", base: runOf(stall(10, "<=")), now: runOf(stall(20, "<=")), regs: []string{"stall_sec a"}},
		{name: "lower is better with <=: improvement", base: runOf(stall(20, "<=")), now: runOf(stall(10, "<="))},
		{name: "lower is better from 0", base: runOf(stall(0, "<=")), now: runOf(stall(5, "<=")), regs: []string{"stall_sec a"}},
		{name: "a latency (µs) without a bound: lower is better", base: runOf(latency(40)), now: runOf(latency(60)), regs: []string{"write_2B_p99 a"}},
		{name: "a latency (µs) without a bound: a drop is an improvement", base: runOf(latency(60)), now: runOf(latency(40))},
		{name: "new value under its floor is a failure, never ok (new)",
			base: runOf(bwCheck("a", "b", 190, Pass)), now: runOf(bwCheck("a", "b", 190, Pass), bwCheck("c", "a", 100, Fail)),
			regs: []string{"new, under floor"}, forbidNote: []string{"new"}},
		{name: "new value over its ceiling", base: runOf(stall(1, "<=")),
			now:  runOf(stall(1, "<="), func() Check { c := stall(90, "<="); c.Nodes = []string{"b"}; c.Status = Fail; return c }()),
			regs: []string{"new, over ceiling"}},
		{name: "new value meeting its floor", base: runOf(bwCheck("a", "b", 190, Pass)), now: runOf(bwCheck("a", "b", 190, Pass), bwCheck("c", "a", 190, Pass)),
			wantNotes: []string{"new"}},
		{name: "value missing on a node still in the run", base: runOf(bwCheck("a", "b", 190, Pass)),
			now: runOf(func() Check { c := bwCheck("a", "b", 0, Pass); c.Measured = nil; return c }()), regs: []string{"missing in this run"}},
		{name: "no nodes in common", base: runOf(bwCheck("x", "y", 190, Pass)), now: runOf(bwCheck("a", "b", 100, Fail)), noCommon: true},
	}
	for _, c := range cases {
		d := Diff(c.base, c.now, 0.05)
		if d.NoCommonNodes != c.noCommon {
			t.Errorf("%s: NoCommonNodes = %v", c.name, d.NoCommonNodes)
		}
		var got []string
		for _, x := range regressions(d) {
			if x.Note != "" {
				got = append(got, x.Note)
			} else {
				got = append(got, x.Name+" "+x.Node)
			}
		}
		sort.Strings(got)
		want := append([]string(nil), c.regs...)
		sort.Strings(want)
		if strings.Join(got, "|") != strings.Join(want, "|") || d.Regressions() != len(c.regs) {
			t.Errorf("%s: regressions %q (count %d), want %q\n%+v", c.name, got, d.Regressions(), c.regs, d.Deltas)
		}
		notes := map[string]bool{}
		for _, x := range d.Deltas {
			notes[x.Note] = true
		}
		for _, n := range c.wantNotes {
			if !notes[n] {
				t.Errorf("%s: no delta noted %q: %+v", c.name, n, d.Deltas)
			}
		}
		for _, n := range c.forbidNote {
			if notes[n] {
				t.Errorf("%s: a delta is noted %q: %+v", c.name, n, d.Deltas)
			}
		}
	}
}

func TestDiffTable(t *testing.T) {
	var b bytes.Buffer
	d := Diff(runOf(bwCheck("x", "y", 190, Pass)), runOf(bwCheck("a", "b", 190, Pass)), 0.05)
	if err := DiffTable(&b, d); err != nil {
		t.Fatal(err)
	}
	if out := b.String(); !strings.Contains(out, "no nodes in common between the baseline and this run: nothing to compare") ||
		strings.Contains(out, "write_1MiB_avg") || strings.Contains(out, "REGRESSION") {
		t.Fatalf("no common nodes:\n%s", out)
	}

	b.Reset()
	d = Diff(runOf(bwCheck("a", "b", 190, Pass)), runOf(bwCheck("a", "b", 150, Fail), bwCheck("c", "a", 100, Fail)), 0.05)
	if err := DiffTable(&b, d); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"REGRESSION (new, under floor)", "-21.1%", "REGRESSION (status pass → fail)", "3 regression(s) against the baseline"} {
		if !strings.Contains(out, want) {
			t.Errorf("diff table lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "ok (new)") {
		t.Errorf("a new failing value reads ok:\n%s", out)
	}

	b.Reset()
	d = Diff(runOf(Check{ID: "memlock/rlimit", Nodes: []string{"a"}, Status: Fail, Measured: []Measurement{{Name: "memlock_soft", Value: 65536, Unit: "bytes"}}}),
		runOf(Check{ID: "memlock/rlimit", Nodes: []string{"a"}, Status: Pass, Measured: []Measurement{{Name: "memlock_soft", Value: -1, Unit: "bytes"}}}), 0.05)
	if err := DiffTable(&b, d); err != nil {
		t.Fatal(err)
	}
	if out := b.String(); !strings.Contains(out, "unlimited") || strings.Contains(out, "-100") || strings.Contains(out, "REGRESSION") {
		t.Errorf("memlock improvement:\n%s", out)
	}
}

// With --pairing all (or cross rails) one node and port is measured against
// several peers: a drop on one path is a regression even when another path
// of the same port stayed fast.
func TestDiffWorstPathPerPortCounts(t *testing.T) {
	mk := func(ac float64) Run {
		c := func(peer string, v float64) Check {
			return Check{ID: "bandwidth/write", Variant: "shared-dev", Nodes: []string{"a", peer}, Status: Pass,
				Measured: []Measurement{{Name: "write_1MiB_avg", Node: "a", Port: "mlx5_0/1", Value: v, Unit: "Gb/s",
					Threshold: &Threshold{Op: ">=", Value: 100}}}}
		}
		return Run{Checks: []Check{c("b", 190), c("c", ac)}}
	}
	if d := Diff(mk(190), mk(120), 0.05); d.Regressions() == 0 {
		t.Fatalf("a→c fell 190 → 120 and nothing regressed: %+v", d.Deltas)
	}
	if d := Diff(mk(190), mk(188), 0.05); d.Regressions() != 0 {
		t.Fatalf("within tolerance: %+v", d.Deltas)
	}
	if !worse(Measurement{Unit: "bytes", Value: 65536}, Measurement{Unit: "bytes", Value: -1}) ||
		worse(Measurement{Unit: "bytes", Value: -1}, Measurement{Unit: "bytes", Value: 65536}) {
		t.Fatal("unlimited memlock is the best value")
	}
}

// Nothing in the baseline is dropped silently: a baseline check without values that is gone now is named,
// a regression when its node is still in the run, "gone" when the node
// left; a diff that compared nothing is never green.
func TestDiffComparesEverythingInTheBaseline(t *testing.T) {
	doctor := func(node string, st Status) Check { return Check{ID: "doctor/node", Nodes: []string{node}, Status: st} }
	rail := func(node, r string, st Status) Check {
		return Check{ID: "bandwidth/write", Variant: "shared-dev", Rail: r, Nodes: []string{node, "b"}, Status: st}
	}
	base := runOf(doctor("a", Pass), doctor("c", Pass), rail("a", "mlx5_1/1→mlx5_1/1", Pass), bwCheck("a", "b", 190, Pass))
	now := runOf(doctor("x", Pass), bwCheck("a", "b", 190, Pass))
	d := Diff(base, now, 0.05)
	var got []string
	for _, x := range d.Deltas {
		if x.Name == "" {
			got = append(got, fmt.Sprintf("%s %s %v %s", x.Check, x.Node, x.Regression, x.Note))
		}
	}
	want := []string{
		"bandwidth/write[shared-dev]{mlx5_1/1→mlx5_1/1} a true missing in this run (was pass)",
		"doctor/node a true missing in this run (was pass)",
		"doctor/node c false node not in this run (was pass)",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("status rows:\n got %q\nwant %q", got, want)
	}
	if d.NothingCompared() != "" {
		t.Errorf("compared something, yet: %s", d.NothingCompared())
	}

	// Every node renamed: nothing compared, never green.
	renamed := Diff(base, runOf(doctor("z", Pass), bwCheck("y", "w", 190, Pass)), 0.05)
	if why := renamed.NothingCompared(); !strings.Contains(why, "share no node") {
		t.Errorf("renamed: %q", why)
	}
	// A node in common, but no check: the baseline's only check is on a
	// node that left (gone, not a regression), so nothing was compared.
	gone := runOf(doctor("c", Pass))
	gone.Nodes = []Node{{Name: "a"}, {Name: "c"}}
	other := Diff(gone, runOf(bwCheck("a", "b", 190, Pass)), 0.05)
	if len(regressions(other)) != 0 {
		t.Errorf("gone node counted: %+v", regressions(other))
	}
	if why := other.NothingCompared(); !strings.Contains(why, "no check of the baseline is in this run") {
		t.Errorf("no common key: %q", why)
	}
	var tb strings.Builder
	if err := DiffTable(&tb, other); err != nil || !strings.Contains(tb.String(), "nothing was compared") {
		t.Errorf("table: %v %q", err, tb.String())
	}
	var jb bytes.Buffer
	if err := JUnitWithDiff(&jb, runOf(bwCheck("a", "b", 190, Pass)), other); err != nil || !strings.Contains(jb.String(), `<failure message="the baseline comparison compared nothing`) {
		t.Errorf("junit: %v\n%s", err, jb.String())
	}
}
