package runner

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/rdmasuite/rdmasuite/reports"
	"k8s.io/client-go/kubernetes/fake"
)

// confirmRun runs bandwidth over a ring of six nodes in node pods, with
// node b's client runs measuring slow (100 of 200 Gb/s, below the floor)
// for its first failures runs and at 196 Gb/s after, and returns the
// checks and the progress lines.
func confirmRun(t *testing.T, failures int, confirm bool) ([]reports.Check, []string) {
	return confirmRunCut(t, failures, confirm, false)
}

// confirmRunCut is confirmRun whose run is cancelled (its deadline) as
// the confirmation round starts, when cut.
func confirmRunCut(t *testing.T, failures int, confirm, cut bool) ([]reports.Check, []string) {
	t.Helper()
	kube := fake.NewClientset(testNode("a", 8), testNode("b", 8), testNode("c", 8), testNode("d", 8), testNode("e", 8), testNode("f", 8))
	mayCreateSub(kube, "exec")
	nodePodsCluster(kube)
	cfg := testConfig(t)
	cfg.Concurrency = 0
	cfg.Confirm = confirm
	cfg.Selected = map[string][]string{VariantSharedDev: {PairedBandwidth}}
	r := New(kube, cfg, "t-confirm")
	var lines []string
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	r.Progress = func(s string) {
		lines = append(lines, s)
		if cut && strings.HasPrefix(s, "confirmation [") {
			cancel(errors.New("the run's deadline"))
		}
	}
	good, srv := passingPair(t, cfg.BWOps, cfg.BWSizes, 1, 200, 196)
	slow, _ := passingPair(t, cfg.BWOps, cfg.BWSizes, 1, 200, 100)
	r.Exec = &fakeExec{kube: kube, srvOut: srv, clientOut: func(client, server string, nth int) string {
		if client == "b" && nth < failures {
			return slow
		}
		return good
	}}
	r.BuildPlan(ctx)
	r.Execute(ctx)
	return r.Paired(context.Background(), r.Cfg.VariantList()[0], PairedBandwidth), lines
}

func opChecks(cs []reports.Check) (main, confirmed []reports.Check) {
	for _, c := range cs {
		if c.ID != "bandwidth/write" && c.ID != "bandwidth/read" {
			continue
		}
		if c.Round == reports.RoundConfirmation {
			confirmed = append(confirmed, c)
		} else {
			main = append(main, c)
		}
	}
	return main, confirmed
}

// A port that fails once and passes when measured again is transient:
// its rows read warn with both measurements, the confirmation round's
// rows pass, and the progress says what was measured again.
func TestConfirmationRoundTurnsAOneOffIntoWarn(t *testing.T) {
	cs, lines := confirmRun(t, 1, true)
	main, confirmed := opChecks(cs)
	if len(confirmed) == 0 {
		t.Fatalf("no confirmation round: %q", lines)
	}
	warned := 0
	for _, c := range main {
		switch {
		case slices.Contains(c.Nodes, "b") && c.Nodes[0] == "b":
			if c.Status != reports.Warn || !strings.HasPrefix(c.Diagnosis, "transient: ") {
				t.Errorf("%s %v: %s %q, want warn (transient)", c.ID, c.Nodes, c.Status, c.Diagnosis)
			}
			warned++
		case c.Status != reports.Pass:
			t.Errorf("%s %v: %s", c.ID, c.Nodes, c.Status)
		}
	}
	for _, c := range confirmed {
		if c.Status != reports.Pass {
			t.Errorf("confirmation %s %v: %s %s", c.ID, c.Nodes, c.Status, c.Diagnosis)
		}
	}
	if warned == 0 {
		t.Fatal("b's failed rows not found")
	}
	if !slices.ContainsFunc(lines, func(l string) bool { return strings.HasPrefix(l, "confirmation [shared-dev]: 2 node(s)") }) {
		t.Errorf("no confirmation line: %q", lines)
	}
	run := reports.Run{Schema: reports.Schema, RunID: "t", Checks: cs}
	if err := run.Validate(); err != nil {
		t.Fatal(err)
	}
}

// A port that fails every time stays failed, its confirmation row fails
// too, and localisation then has two partners against it.
func TestConfirmationRoundKeepsARepeatedFailure(t *testing.T) {
	cs, _ := confirmRun(t, 100, true)
	main, confirmed := opChecks(cs)
	for _, c := range main {
		if c.Nodes[0] == "b" && (c.Status != reports.Fail || c.Confirmation == nil || !c.Confirmation.Repeated) {
			t.Errorf("%s %v: %s, confirmation %+v: want fail, repeated", c.ID, c.Nodes, c.Status, c.Confirmation)
		}
	}
	failedAgain := false
	for _, c := range confirmed {
		failedAgain = failedAgain || (c.Nodes[0] == "b" && c.Status == reports.Fail)
	}
	if !failedAgain {
		t.Fatalf("b's confirmation rows: %+v", confirmed)
	}
}

// --confirm=false: nothing is measured again and the failure stands as
// measured.
func TestConfirmOffMeasuresNothingAgain(t *testing.T) {
	cs, lines := confirmRun(t, 1, false)
	main, confirmed := opChecks(cs)
	if len(confirmed) != 0 || slices.ContainsFunc(lines, func(l string) bool { return strings.HasPrefix(l, "confirmation") }) {
		t.Fatalf("confirmation ran with --confirm=false: %d rows", len(confirmed))
	}
	if !slices.ContainsFunc(main, func(c reports.Check) bool { return c.Status == reports.Fail }) {
		t.Fatal("the one-off failure must stand without confirmation")
	}
}

// A confirmation round the run's deadline cut measured nobody again: the
// failures stand as measured, saying the round was cut, and nothing reads
// as repeated or transient.
func TestConfirmationRoundCutByTheDeadlineConfirmsNothing(t *testing.T) {
	cs, _ := confirmRunCut(t, 1, true, true)
	main, _ := opChecks(cs)
	cutSaid := false
	for _, c := range main {
		if c.Nodes[0] != "b" {
			continue
		}
		if c.Status != reports.Fail || c.Confirmation == nil || c.Confirmation.Repeated {
			t.Errorf("%s %v: %s %+v: want fail, not repeated", c.ID, c.Nodes, c.Status, c.Confirmation)
		}
		cutSaid = cutSaid || strings.Contains(strings.Join(c.Evidence, " "), "the confirmation round was cut (the run's deadline)")
	}
	if !cutSaid {
		t.Fatal("the failed rows do not say the confirmation round was cut")
	}
}

// The confirmation line says who is measured again and against whom, or
// that nobody could be and why.
func TestConfirmLine(t *testing.T) {
	none := reports.ConfirmPlan{Suspects: []string{"a"}, Unconfirmed: map[string]string{"a": "no partner"}}
	if got, want := ConfirmLine("shared-dev", none), "confirmation [shared-dev]: 1 node(s) of failed pairs, none measured again: a (no partner)"; got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	some := reports.ConfirmPlan{Suspects: []string{"a", "b"}, Pairs: []reports.ConfirmPair{{Suspect: "a", Partner: "c"}}, Unconfirmed: map[string]string{"b": "no partner"}}
	if got, want := ConfirmLine("hostdev", some), "confirmation [hostdev]: 2 node(s) of failed pairs measured again against nodes that passed everything: a → c; not measured again: b (no partner)"; got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}
