package reports

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestJudge(t *testing.T) {
	th := Threshold{Op: ">=", Value: 180, Source: "A100/HDR-200: 90% of 200 Gb/s"}
	v, low := 185.0, 96.0
	m, st, why := Judge("write_1MiB_avg", "Gb/s", "node-1", "mlx5_0/1", &v, th)
	if st != Pass || why != "" || m.Node != "node-1" || m.Port != "mlx5_0/1" || m.Value != 185 || m.Threshold == nil || *m.Threshold != th {
		t.Fatalf("185 ≥ 180: %+v %s %s", m, st, why)
	}
	if _, st, why := Judge("write_1MiB_avg", "Gb/s", "node-1", "mlx5_0/1", &low, th); st != Fail || !strings.Contains(why, "threshold >= 180") {
		t.Fatalf("96 < 180: %s %s", st, why)
	}
	if m, st, why := Judge("write_1MiB_avg", "Gb/s", "node-1", "mlx5_0/1", nil, th); st != Fail ||
		!strings.HasPrefix(why, "missing measurement: ") || m.Node != "node-1" {
		t.Fatalf("missing measurement must fail closed: %s %s", st, why)
	}
	nan := math.NaN()
	if _, st, why := Judge("x", "Gb/s", "n", "p", &nan, th); st != Fail || !strings.Contains(why, "NaN") {
		t.Fatalf("NaN must fail: %s %s", st, why)
	}
	unlimited := -1.0
	memlock := Threshold{Op: ">=", Value: 1 << 20, Source: "sku"}
	if _, st, why := Judge("memlock_soft", "bytes", "n", "", &unlimited, memlock); st != Pass {
		t.Fatalf("unlimited memlock (-1 bytes) must meet a floor: %s %s", st, why)
	}
	small := 65536.0
	if _, st, _ := Judge("memlock_soft", "bytes", "n", "", &small, memlock); st != Fail {
		t.Fatal("64 KiB memlock met a 1 MiB floor")
	}
}

func TestParseStatus(t *testing.T) {
	for _, s := range []string{"pass", "fail", "error", "not-run"} {
		if st, err := ParseStatus(s); err != nil || string(st) != s {
			t.Errorf("%s: %v %v", s, st, err)
		}
	}
	for _, s := range []string{"", "PASS", "passed", "skipped", "notrun"} {
		_, err := ParseStatus(s)
		if err == nil || !strings.Contains(err.Error(), `"`+s+`"`) || !strings.Contains(err.Error(), "pass, warn, fail, error or not-run") {
			t.Errorf("%q: %v", s, err)
		}
	}
}

func writeRaw(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "results.json")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestReadValidates(t *testing.T) {
	for _, c := range []struct {
		name   string
		mutate func(*Run)
		want   []string
	}{
		{"empty status", func(r *Run) { r.Checks[0].Status = "" }, []string{"bandwidth/write", `status ""`, "pass, warn, fail, error or not-run"}},
		{"unknown status", func(r *Run) { r.Checks[1].Status = "skipped" }, []string{"memlock", `status "skipped"`}},
		{"bad threshold op", func(r *Run) { r.Checks[0].Measured[0].Threshold.Op = "=>" }, []string{"bandwidth/write", "write_1MiB_avg", `"=>"`}},
		// Figures that cannot be true: a status its own recorded value contradicts, a key
		// twice, an empty id, a negative byte count that is not the
		// "unlimited" marker.
		{"pass below its own floor", func(r *Run) { r.Checks[0].Measured[0].Value = 150 }, []string{"bandwidth/write", "is pass, but write_1MiB_avg = 150 Gb/s misses its bound >= 180"}},
		{"pass above its own ceiling", func(r *Run) {
			r.Checks[0].Measured = append(r.Checks[0].Measured, Measurement{Name: "write_2B_lat", Value: 9, Unit: UnitMicroseconds, Threshold: &Threshold{Op: "<=", Value: 2.5, Source: "s"}})
		}, []string{"bandwidth/write", "write_2B_lat = 9 µs misses its bound <= 2.5"}},
		{"the same check twice", func(r *Run) { r.Checks = append(r.Checks, r.Checks[0]) }, []string{"check key bandwidth/write[shared-dev] node-1 node-2", "twice (#1 and #3)"}},
		{"an empty id", func(r *Run) { r.Checks[1].ID = "" }, []string{"#2", "has no id"}},
		{"a negative byte count", func(r *Run) {
			r.Checks[1].Measured = []Measurement{{Name: "memlock_soft", Value: -65536, Unit: "bytes"}}
		}, []string{"memlock", "memlock_soft = -65536 bytes is negative (only -1 stands for unlimited)"}},
	} {
		r := sampleRun(190, Pass)
		r.Schema = Schema
		c.mutate(&r)
		p := writeRaw(t, r)
		_, err := Read(p)
		if err == nil {
			t.Errorf("%s: accepted", c.name)
			continue
		}
		for _, w := range append(c.want, p) {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %v lacks %q", c.name, err, w)
			}
		}
	}
	// NaN and Inf cannot travel through JSON; Validate catches them in
	// memory (Write refuses them with the check named).
	for _, v := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		r := sampleRun(v, Pass)
		if err := r.Validate(); err == nil || !strings.Contains(err.Error(), "write_1MiB_avg") {
			t.Errorf("%v: %v", v, err)
		}
		if err := Write(filepath.Join(t.TempDir(), "r.json"), r); err == nil || !strings.Contains(err.Error(), "bandwidth/write") {
			t.Errorf("Write %v: %v", v, err)
		}
	}
	// What stays valid: a fail below its floor, unlimited memlock (-1) on
	// a pass, a not-run beside a key of the same id on other nodes.
	ok := sampleRun(150, Fail)
	ok.Checks[1] = Check{ID: "memlock", Nodes: []string{"node-1"}, Status: Pass,
		Measured: []Measurement{{Name: "memlock_soft", Value: Unlimited, Unit: "bytes", Threshold: &Threshold{Op: ">=", Value: 1 << 20, Source: "s"}}}}
	ok.Checks = append(ok.Checks, Check{ID: "memlock", Nodes: []string{"node-2"}, Status: NotRun, Reason: "r"})
	if err := ok.Validate(); err != nil {
		t.Errorf("a consistent run refused: %v", err)
	}
	p := filepath.Join(t.TempDir(), "inf.json")
	os.WriteFile(p, []byte(`{"schema":"`+Schema+`","checks":[{"id":"a","status":"pass","measured":[{"name":"x","value":1e999,"unit":"Gb/s"}]}]}`), 0o644)
	if _, err := Read(p); err == nil {
		t.Error("1e999 accepted")
	}
}

func check(id string, st Status) Check {
	return Check{ID: id, Nodes: []string{"n1"}, Status: st, Reason: "why"}
}

func TestAllowedPassedExitCode(t *testing.T) {
	for _, c := range []struct {
		name    string
		checks  []Check
		allow   []string
		passed  bool
		code    int
		summary string
	}{
		{"zero checks", nil, nil, false, ExitBroken, "NOT PASSED — no check ran"},
		{"all pass", []Check{check("a", Pass), check("b", Pass)}, nil, true, ExitPassed, "PASSED — 2 pass, 0 fail, 0 error, 0 not run"},
		{"one fail", []Check{check("a", Pass), check("b", Fail)}, nil, false, ExitChecksFailed, "1 fail"},
		{"one error", []Check{check("a", Pass), check("b", Error)}, nil, false, ExitChecksFailed, "1 error"},
		{"unallowed not-run", []Check{check("a", Pass), check("gpudirect/write", NotRun)}, nil, false, ExitChecksFailed, "1 not run (0 allowed)"},
		{"allowed by id", []Check{check("a", Pass), check("gpudirect/write", NotRun)}, []string{"gpudirect/write"}, true, ExitPassed, "PASSED — 1 pass, 0 fail, 0 error, 1 not run (1 allowed)"},
		{"allowed by prefix", []Check{check("a", Pass), check("gpudirect/write", NotRun)}, []string{"gpudirect/"}, true, ExitPassed, "1 not run (1 allowed)"},
		{"prefix without slash is not a prefix", []Check{check("a", Pass), check("gpudirect/write", NotRun)}, []string{"gpudirect"}, false, ExitChecksFailed, "(0 allowed)"},
		{"id is not a prefix", []Check{check("a", Pass), check("gpudirect/writex", NotRun)}, []string{"gpudirect/write"}, false, ExitChecksFailed, "(0 allowed)"},
		{"every check not-run, all allowed", []Check{check("a/x", NotRun), check("a/y", NotRun)}, []string{"a/"}, false, ExitChecksFailed, "nothing was measured"},
		{"allowing does not excuse a fail", []Check{check("a", Pass), check("b", Fail)}, []string{"b"}, false, ExitChecksFailed, "1 fail"},
	} {
		r := Run{Checks: c.checks, AllowNotRun: c.allow}
		if got := r.Passed(); got != c.passed {
			t.Errorf("%s: Passed() = %v", c.name, got)
		}
		if got := r.ExitCode(); got != c.code {
			t.Errorf("%s: ExitCode() = %d, want %d", c.name, got, c.code)
		}
		if got := SummaryText(r); !strings.Contains(got, c.summary) {
			t.Errorf("%s: summary %q lacks %q", c.name, got, c.summary)
		}
	}
	r := Run{AllowNotRun: []string{"a"}}
	if r.Allowed(check("a", Fail)) || r.Allowed(check("a", Pass)) || !r.Allowed(check("a", NotRun)) {
		t.Error("Allowed is true only for an allowed not-run check")
	}
}

func junitOf(t *testing.T, r Run) junitSuite {
	t.Helper()
	var b bytes.Buffer
	if err := JUnit(&b, r); err != nil {
		t.Fatal(err)
	}
	var p junitSuites
	if err := xml.Unmarshal(b.Bytes(), &p); err != nil {
		t.Fatal(err)
	}
	if len(p.Suites) != 1 {
		t.Fatalf("%d suites", len(p.Suites))
	}
	s := p.Suites[0]
	var f, e, sk int
	for _, c := range s.Cases {
		if c.Failure != nil {
			f++
		}
		if c.Error != nil {
			e++
		}
		if c.Skipped != nil {
			sk++
		}
	}
	if s.Tests != len(s.Cases) || s.Failures != f || s.Errors != e || s.Skipped != sk {
		t.Fatalf("suite counts tests=%d failures=%d errors=%d skipped=%d disagree with its cases (%d, %d, %d, %d)",
			s.Tests, s.Failures, s.Errors, s.Skipped, len(s.Cases), f, e, sk)
	}
	return s
}

func TestJUnitTellsTheSameStory(t *testing.T) {
	s := junitOf(t, Run{RunID: "empty"})
	if len(s.Cases) != 1 || s.Cases[0].Name != "rdmasuite/run" || s.Cases[0].Failure == nil ||
		!strings.Contains(s.Cases[0].Failure.Message, "no check ran") {
		t.Fatalf("zero checks: %+v", s)
	}

	s = junitOf(t, Run{Checks: []Check{check("a/x", NotRun), check("a/y", NotRun)}, AllowNotRun: []string{"a/"}})
	var run *junitCase
	for i := range s.Cases {
		if s.Cases[i].Name == "rdmasuite/run" {
			run = &s.Cases[i]
		}
	}
	if run == nil || run.Failure == nil || !strings.Contains(run.Failure.Message, "nothing was measured") || s.Skipped != 2 {
		t.Fatalf("every check not-run: %+v", s)
	}

	s = junitOf(t, Run{Checks: []Check{check("a", Pass), {ID: "gpudirect/write", Nodes: []string{"n1"}, Status: NotRun, Reason: "no GPU"},
		{ID: "nccl/allreduce", Nodes: []string{"n1"}, Status: NotRun, Reason: "no NCCL image"}}, AllowNotRun: []string{"nccl/"}})
	if len(s.Cases) != 3 || s.Failures != 1 || s.Skipped != 1 {
		t.Fatalf("not-run cases: %+v", s)
	}
	f := s.Cases[1].Failure
	if f == nil || f.Message != "not run: no GPU (not allowed; pass --allow-not-run=gpudirect/write to accept)" {
		t.Fatalf("unallowed not-run: %+v", s.Cases[1])
	}
	if s.Cases[2].Skipped == nil || s.Cases[2].Skipped.Message != "no NCCL image" {
		t.Fatalf("allowed not-run: %+v", s.Cases[2])
	}
}

func TestRenderersShowRailAndNode(t *testing.T) {
	r := Run{RunID: "r", Checks: []Check{{ID: "bandwidth/write", Nodes: []string{"node-1", "node-2"}, Rail: "mlx5_1/1→mlx5_1/1", Status: Pass,
		Measured: []Measurement{{Name: "write_1MiB_avg", Node: "node-2", Port: "mlx5_1/1", Value: 190, Unit: "Gb/s"},
			{Name: "write_64KiB_avg", Node: "node-1", Port: "mlx5_1/1", Value: 150, Unit: "Gb/s"}}}}}
	var tb, mb, jb bytes.Buffer
	// A passing row: folded by default, shown with All (--all).
	if err := TableWith(&tb, r, TableOptions{All: true}); err != nil {
		t.Fatal(err)
	}
	if err := MarkdownWith(&mb, r, MarkdownOptions{All: true}); err != nil {
		t.Fatal(err)
	}
	if err := JUnit(&jb, r); err != nil {
		t.Fatal(err)
	}
	for name, out := range map[string]string{"table": tb.String(), "markdown": mb.String(), "junit": jb.String()} {
		if !strings.Contains(out, "mlx5_1/1→mlx5_1/1") {
			t.Errorf("%s lacks the rail:\n%s", name, out)
		}
		if !strings.Contains(out, "node-2 mlx5_1/1 write_1MiB_avg") {
			t.Errorf("%s lacks the measuring node that differs from the check's first:\n%s", name, out)
		}
		if strings.Contains(out, "node-1 mlx5_1/1 write_64KiB_avg") {
			t.Errorf("%s repeats the check's first node on its measurement:\n%s", name, out)
		}
	}
}
