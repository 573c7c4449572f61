package disrupt

import (
	"strings"
	"testing"
)

func TestGate(t *testing.T) {
	sel := map[string][]string{"suite": {"disruptive"}}
	for _, tc := range []struct {
		name    string
		f       Filter
		allow   bool
		nodes   []string
		run     bool
		refused string // substring of the refusal; "" = no error
	}{
		{name: "selected without --allow-disruptive refuses with the one line", f: Filter{Labels: sel}, refused: EnableHint},
		{name: "selected by check label without flags refuses", f: Filter{Labels: map[string][]string{"check": {"nfs-stall"}}}, refused: EnableHint},
		{name: "selected with --allow-disruptive but no nodes refuses", f: Filter{Labels: sel}, allow: true, refused: "--disrupt-nodes"},
		{name: "selected with --disrupt-nodes but no --allow-disruptive refuses", f: Filter{Labels: sel}, nodes: []string{"a"}, refused: EnableHint},
		{name: "selected with both runs", f: Filter{Labels: sel}, allow: true, nodes: []string{"a"}, run: true},
		{name: "one of several suites", f: Filter{Labels: map[string][]string{"suite": {"rdma", "disruptive"}}}, allow: true, nodes: []string{"a"}, run: true},
		{name: "suite=rdma leaves it out silently", f: Filter{Labels: map[string][]string{"suite": {"rdma"}}}},
		{name: "suite=smoke with --allow-disruptive leaves it out", f: Filter{Labels: map[string][]string{"suite": {"smoke"}}}, allow: true},
		{name: "no filter, no flag: skipped, no error", f: Filter{}},
		{name: "no filter with --disrupt-nodes only: skipped", f: Filter{}, nodes: []string{"a"}},
		{name: "no filter, both flags: runs", f: Filter{}, allow: true, nodes: []string{"a", "b"}, run: true},
		{name: "no filter, --allow-disruptive alone refuses", f: Filter{}, allow: true, refused: "--disrupt-nodes"},
		{name: "skip-labels wins", f: Filter{SkipLabels: sel}, allow: true, nodes: []string{"a"}},
		{name: "-run TestDisruptive selects it", f: Filter{TestRun: "TestDisruptive"}, refused: EnableHint},
		{name: "-run TestMemlock leaves it out", f: Filter{TestRun: "TestMemlock"}},
		{name: "-skip TestDisruptive leaves it out", f: Filter{TestSkip: "Disruptive"}, allow: true, nodes: []string{"a"}},
		{name: "--feature matching selects it", f: Filter{Feature: "MOFED"}, refused: EnableHint},
		{name: "--feature not matching leaves it out", f: Filter{Feature: "bandwidth"}},
		{name: "--skip-features matching leaves it out", f: Filter{SkipFeature: "MOFED"}, allow: true, nodes: []string{"a"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := Gate(tc.f, tc.allow, tc.nodes)
			if tc.refused != "" {
				if err == nil || !strings.Contains(err.Error(), tc.refused) {
					t.Fatalf("want a refusal naming %q, got %v (decision %+v)", tc.refused, err, d)
				}
				if strings.Contains(err.Error(), "\n") {
					t.Fatalf("the refusal must be one line: %q", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("unexpected refusal: %v", err)
			}
			if d.Run != tc.run {
				t.Fatalf("run = %v, want %v (%s)", d.Run, tc.run, d.Why)
			}
			if !d.Run && d.Why == "" {
				t.Fatalf("a skipped feature says why")
			}
		})
	}
}

// The refusal is exactly the documented line (the suite prints it after
// "rdmasuite: " and exits 2).
func TestGateRefusalText(t *testing.T) {
	_, err := Gate(Filter{Labels: map[string][]string{"suite": {"disruptive"}}}, false, nil)
	want := "the disruptive feature restarts the MOFED driver on nodes: add --allow-disruptive --disrupt-nodes=NODE[,NODE] to run it"
	if err == nil || err.Error() != want {
		t.Fatalf("got %v, want %q", err, want)
	}
}
