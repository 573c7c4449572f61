package reports

import (
	"bytes"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/mattn/go-runewidth"
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
	if out := b.String(); !strings.Contains(out, "the baseline and this run share no node (baseline: x, y; this run: a, b): nothing was compared") ||
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

// At fleet scale the diff reads like the report: the count and kinds on
// the first line, the regressions right under it, the thousands of
// unchanged rows one count line, --width honoured by every line but the
// unwrapped title; and two unrelated fleets name 8 nodes each, not 256.
func TestDiffAtFleetScale(t *testing.T) {
	base := fleetRun(256, 8)
	now := fleetRun(256, 8, fleetPort{17, 3}) // one bad port: 2 links × 2 ops fail
	now.RunID = "fleet-tonight"
	d := Diff(base, now, 0.05)
	var b bytes.Buffer
	title := "baseline before.json (run fleet-256x8) → this run fleet-tonight"
	if err := DiffTableWith(&b, d, DiffOptions{Title: title, Width: 80}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(b.String(), "\n"), "\n")
	if !strings.HasPrefix(lines[0], fmt.Sprintf("%d regression(s) against the baseline (", d.Regressions())) || d.Regressions() == 0 {
		t.Fatalf("first line: %q (%d regressions)", lines[0], d.Regressions())
	}
	if len(lines) > 60 {
		t.Errorf("%d lines for %d rows:\n%s", len(lines), len(d.Deltas), b.String())
	}
	for i, l := range lines {
		if l != title && runewidth.StringWidth(l) > 80 {
			t.Errorf("line %d is %d columns at --width 80: %q", i+1, runewidth.StringWidth(l), l)
		}
	}
	firstRow := strings.Index(b.String(), "REGRESSION")
	if firstRow < 0 || firstRow > 1500 {
		t.Errorf("the first regression row at byte %d:\n%s", firstRow, b.String())
	}
	if !strings.Contains(b.String(), "unchanged row(s) folded (--all lists them)") {
		t.Errorf("unchanged rows not folded:\n%s", b.String())
	}
	b.Reset()
	if err := DiffTableWith(&b, d, DiffOptions{All: true}); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(b.String(), "\n"); n < len(d.Deltas) {
		t.Errorf("--all: %d lines for %d rows", n, len(d.Deltas))
	}

	other := fleetRun(256, 8)
	for i := range other.Nodes {
		other.Nodes[i].Name = "x" + other.Nodes[i].Name
	}
	for i := range other.Checks {
		for k := range other.Checks[i].Nodes {
			other.Checks[i].Nodes[k] = "x" + other.Checks[i].Nodes[k]
		}
		for k := range other.Checks[i].Measured {
			other.Checks[i].Measured[k].Node = "x" + other.Checks[i].Measured[k].Node
		}
	}
	d = Diff(base, other, 0.05)
	b.Reset()
	if err := DiffTableWith(&b, d, DiffOptions{Width: 80}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "… and 248 more (256 in all)") || len(b.String()) > 1200 {
		t.Errorf("unrelated fleets:\n%s", b.String())
	}
}

// A baseline that is the run itself, one newer than the run, and one of
// another cluster.
func TestCheckBaseline(t *testing.T) {
	at := func(id string, day int, server string) Run {
		return Run{RunID: id, Started: time.Date(2026, 12, day, 3, 0, 0, 0, time.UTC), Cluster: Cluster{Server: server}}
	}
	run := at("r2", 6, "https://a:6443")
	for _, c := range []struct {
		name      string
		base, run Run
		refuse    string
		warn      string
	}{
		{"itself", run, run, "which this report already holds", ""},
		{"one of the merged runs", at("r1", 5, "https://a:6443"), Run{RunID: "r1+r2", Started: run.Started}, "which this report already holds", ""},
		{"newer", at("r3", 7, "https://a:6443"), run, "is newer than this run", ""},
		{"older", at("r1", 5, "https://a:6443"), run, "", ""},
		{"another cluster", at("r0", 1, "https://lab:6443"), run, "", "another cluster (https://lab:6443; this run: https://a:6443)"},
		{"no start times", Run{RunID: "x"}, Run{RunID: "y"}, "", ""},
	} {
		refuse, warn := CheckBaseline(c.base, c.run)
		if c.refuse == "" && refuse != "" || c.refuse != "" && !strings.Contains(refuse, c.refuse) {
			t.Errorf("%s: refuse %q, want %q", c.name, refuse, c.refuse)
		}
		if got := strings.Join(warn, "; "); c.warn == "" && got != "" || c.warn != "" && !strings.Contains(got, c.warn) {
			t.Errorf("%s: warn %q, want %q", c.name, got, c.warn)
		}
	}
}
