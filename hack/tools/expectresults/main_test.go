package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmasuite/rdmasuite/reports"
)

func TestBounds(t *testing.T) {
	checks := []reports.Check{{ID: "disruptive/nfs-stall", Nodes: []string{"n2"},
		Measured: []reports.Measurement{{Name: "longest_gap", Node: "n2", Value: 12.5, Unit: "s"}}}}
	for _, tc := range []struct {
		b    bound
		want string
	}{
		{bound{id: "disruptive/nfs-stall", node: "n2", name: "longest_gap", low: 0, high: 60}, ""},
		{bound{id: "disruptive/nfs-stall", node: "n2", name: "longest_gap", low: 12.5, high: 60}, "want in (12.5, 60]"},
		{bound{id: "disruptive/nfs-stall", node: "n2", name: "longest_gap", low: 0, high: 10}, "want in (0, 10]"},
		{bound{id: "disruptive/nfs-stall", node: "n2", name: "io_errors", low: -1, high: 0}, "no measurement io_errors"},
		{bound{id: "disruptive/nfs-stall", node: "n1", name: "longest_gap", low: 0, high: 60}, "no check"},
	} {
		got := tc.b.check(checks)
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("%+v: got %q, want %q", tc.b, got, tc.want)
		}
	}
}

func TestReadBounds(t *testing.T) {
	p := filepath.Join(t.TempDir(), "e.txt")
	os.WriteFile(p, []byte("x - n pass -\n@measured x n gap 0 60\n"), 0o644)
	exps, bounds, _, err := readExpectations(p)
	if err != nil || len(exps) != 1 || len(bounds) != 1 || bounds[0].high != 60 {
		t.Fatalf("%v %v %v", exps, bounds, err)
	}
	os.WriteFile(p, []byte("@measured x n gap 60 0\n"), 0o644)
	if _, _, _, err := readExpectations(p); err == nil {
		t.Fatal("LOW >= HIGH accepted")
	}
}

func TestNodeListMatchesInOrder(t *testing.T) {
	e := &expectation{node: "rxe-node-1,rxe-node-2"}
	if !e.matchesNode(reports.Check{Nodes: []string{"rxe-node-1", "rxe-node-2"}}) ||
		e.matchesNode(reports.Check{Nodes: []string{"rxe-node-2", "rxe-node-1"}}) {
		t.Fatal("a node list must match the check's nodes exactly, in order")
	}
}

// An evidence rule holds only when every check of the prefix (and at
// least one) carries the text among its evidence.
func TestEvidenceRule(t *testing.T) {
	joined := reports.Check{ID: "nccl/all_reduce", Evidence: []string{"ranks joined 2/2: rank 0 → pod w-0"}}
	other := reports.Check{ID: "nccl/transport", Evidence: []string{"ranks joined 1/2"}}
	r := evidenceRule{prefix: "nccl/", text: "ranks joined 2/2"}
	if msg := r.check([]reports.Check{joined}); msg != "" {
		t.Fatal(msg)
	}
	if msg := r.check([]reports.Check{joined, other}); !strings.Contains(msg, "1 of 2 checks nccl/* lack evidence") || !strings.Contains(msg, "nccl/transport") {
		t.Fatal(msg)
	}
	if msg := r.check([]reports.Check{{ID: "gpudirect/write"}}); !strings.Contains(msg, "no check nccl/*") {
		t.Fatal(msg)
	}
	p := filepath.Join(t.TempDir(), "e.txt")
	os.WriteFile(p, []byte("@evidence nccl/ ranks joined 2/2\n"), 0o644)
	if _, _, rules, err := readExpectations(p); err != nil || len(rules) != 1 || rules[0].text != "ranks joined 2/2" || rules[0].prefix != "nccl/" {
		t.Fatalf("%v %+v", err, rules)
	}
	os.WriteFile(p, []byte("@evidence nccl/\n"), 0o644)
	if _, _, _, err := readExpectations(p); err == nil {
		t.Fatal("an @evidence line without text must be refused")
	}
}

// The why file gets every unmet expectation, appended (two tables may
// fail in one run), long lines cut, and nothing when no path is set.
func TestKeepWhy(t *testing.T) {
	p := filepath.Join(t.TempDir(), "why")
	keepWhy(p, "a.json", []string{"MISMATCH e.txt:3: x", strings.Repeat("y", 700)})
	keepWhy(p, "b.json", []string{"MISSING e.txt:9: z"})
	keepWhy("", "c.json", []string{"never written"})
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	got := string(b)
	for _, want := range []string{"2 expectation(s) not met by a.json:\n  MISMATCH e.txt:3: x\n", strings.Repeat("y", 600) + "…\n", "1 expectation(s) not met by b.json:\n  MISSING e.txt:9: z\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("why file lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, strings.Repeat("y", 601)) || strings.Contains(got, "c.json") {
		t.Errorf("why file not cut or written without a path:\n%s", got)
	}
}

func TestStatusAlternatives(t *testing.T) {
	for _, tc := range []struct {
		want string
		got  reports.Status
		ok   bool
	}{{"pass", reports.Pass, true}, {"pass", reports.Fail, false}, {"pass|fail", reports.Fail, true},
		{"pass|fail", reports.Error, false}, {"fail|error", reports.Error, true}} {
		if statusMatches(tc.want, tc.got) != tc.ok {
			t.Errorf("statusMatches(%q, %q) != %v", tc.want, tc.got, tc.ok)
		}
	}
}

// NODE:RAIL picks the rail's check: a row of another variant on the same
// node without the measurement does not answer for it.
func TestBoundsPerRail(t *testing.T) {
	checks := []reports.Check{
		{ID: "bandwidth/write", Nodes: []string{"g1", "g2"}, Rail: "rxe0/1→rxe0/1"},
		{ID: "bandwidth/write", Nodes: []string{"g1", "g2"}, Rail: "rxehd0/1→rxehd0/1",
			Measured: []reports.Measurement{{Name: "write_1MiB_avg", Node: "g1", Value: 0.2, Unit: "Gb/s"}}},
	}
	for _, tc := range []struct {
		node, want string
	}{
		{"g1:rxehd", ""},
		{"g1", "no measurement"}, // the first row, the shared one, has none
		{"g1:rxe0", "no measurement"},
		{"g2:rxehd", "no check"}, // measured on g1, not g2
	} {
		got := bound{id: "bandwidth/write", node: tc.node, name: "write_1MiB_avg", low: 0, high: 2.5}.check(checks)
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("%s: got %q, want %q", tc.node, got, tc.want)
		}
	}
}
