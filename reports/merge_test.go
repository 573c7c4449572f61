package reports

import (
	"strings"
	"testing"
	"time"
)

func mergeRun(id string, checks ...Check) Run {
	t := time.Date(2026, 11, 24, 1, 0, 0, 0, time.UTC)
	return Run{Schema: Schema, RunID: id, Started: t, Finished: t.Add(time.Minute), Cluster: Cluster{Server: "https://bed"},
		Nodes: []Node{{Name: "rxe-node-1"}}, Checks: checks}
}

func TestMergeKeepsEveryVerdict(t *testing.T) {
	shared := mergeRun("a", Check{ID: "bandwidth/write", Variant: "shared-dev", Nodes: []string{"rxe-node-1"}, Status: Pass})
	hostdev := mergeRun("b", Check{ID: "bandwidth/write", Variant: "hostdev", Nodes: []string{"rxe-node-1"}, Status: Fail, Diagnosis: "x"})
	m, err := Merge(shared, hostdev)
	if err != nil {
		t.Fatal(err)
	}
	if m.RunID != "a+b" || len(m.Checks) != 2 || len(m.Nodes) != 1 {
		t.Fatalf("merged = %+v", m)
	}
	// One failing part fails the whole: the exit code cannot come from the passing run.
	if m.ExitCode() == ExitPassed {
		t.Fatal("a merge with a failed check passed")
	}
}

func TestMergeRefusesTheSameCheckTwice(t *testing.T) {
	c := Check{ID: "bandwidth/write", Variant: "hostdev", Nodes: []string{"rxe-node-1"}, Status: Pass}
	if _, err := Merge(mergeRun("a", c), mergeRun("b", c)); err == nil || !strings.Contains(err.Error(), "in both run a and run b") {
		t.Fatalf("duplicate check: %v", err)
	}
	other := mergeRun("c", c)
	other.Cluster.Server = "https://elsewhere"
	if _, err := Merge(mergeRun("a"), other); err == nil {
		t.Fatal("merged runs against two clusters")
	}
}

func TestMergeNarrowsAllowances(t *testing.T) {
	a := mergeRun("a", Check{ID: "bandwidth/write", Variant: "shared-dev", Nodes: []string{"n"}, Status: Pass})
	a.AllowNotRun = []string{"bandwidth/"}
	b := mergeRun("b", Check{ID: "bandwidth/read", Variant: "hostdev", Nodes: []string{"n"}, Status: NotRun, Reason: "no Multus"})
	m, err := Merge(a, b)
	if err != nil {
		t.Fatal(err)
	}
	if m.ExitCode() == ExitPassed {
		t.Fatal("run a's allowance excused run b's not-run")
	}
}
