package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/rdmasuite/rdmasuite/internal/pairing"
	"github.com/rdmasuite/rdmasuite/reports"
	"github.com/rdmasuite/rdmasuite/thresholds"
)

// confirmScenario runs a ring of n nodes whose node bad fails every
// client run (the kwok stages exit 1 in this run's namespace only), with
// the suite's default --confirm, and says what the confirmation round
// cost and found: its pairs and time against a round of the ring, the bad
// node's rows (failed, repeated) and that no other node is blamed.
func confirmScenario(kubeconfig string, n int, bad string, set *thresholds.Set, conc int, probeSec float64) error {
	s := scenario{mode: pairing.Ring, n: n}
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("fleet-%04d", i)
	}
	if !slices.Contains(names, bad) {
		return fmt.Errorf("confirmation scenario: %s is not among the first %d nodes", bad, n)
	}
	sched, err := pairing.Schedule(names, s.mode)
	if err != nil {
		return err
	}
	fmt.Printf("\nconfirmation scenario: ring of %d nodes, every probe run on %s fails\n", n, bad)
	// The pod-pair path: the kwok stages fail the bad node's pods by
	// namespace and node, which an exec'd run (the same stand-in for
	// every pod) cannot be told apart by.
	m, err := measure(kubeconfig, s, set, conc, sched, "fbconfirm", pathPodPairs, faultOpts{}) // the kwok stages' CONFIRM_NS
	if err != nil {
		return fmt.Errorf("confirmation scenario: %w", err)
	}
	if len(m.all) == 0 {
		return fmt.Errorf("confirmation scenario: the run judged nothing (are the nodes labelled %s?)", subsetLabel(n))
	}
	confirmPairs, badRepeated, transient, blamedOthers := 0, 0, 0, map[string]bool{}
	seen := map[string]bool{}
	for _, c := range m.all {
		if c.Round == reports.RoundConfirmation {
			k := strings.Join(c.Nodes, "→")
			if !seen[k] {
				seen[k] = true
				confirmPairs++
			}
		}
		if c.Status == reports.Warn && c.Confirmation != nil {
			transient++
		}
		if c.Confirmation != nil && c.Confirmation.Repeated && slices.Contains(c.Nodes, bad) {
			badRepeated++
		}
	}
	for _, f := range reports.Localize(reports.Run{Checks: m.all}) {
		if (f.Kind == reports.BadNode || f.Kind == reports.BadPort) && f.Nodes[0] != bad {
			blamedOthers[f.Nodes[0]] = true
		}
	}
	perRound := m.wall.Seconds() - m.confirmWall.Seconds()
	fmt.Printf("fleet confirmation: ring %d, %d round(s) + 1 confirmation round of %d pair(s): wall %.1f s, of which the confirmation round %.1f s (%.2f of the rounds' mean %.1f s; simulated pair %.1f s); "+
		"rows of %s failed and repeated: %d; transient (warn): %d; other nodes blamed: %d; pods left: %d\n",
		n, len(sched), confirmPairs, m.wall.Seconds(), m.confirmWall.Seconds(), m.confirmWall.Seconds()/(perRound/float64(len(sched))), perRound/float64(len(sched)), probeSec,
		bad, badRepeated, transient, len(blamedOthers), m.podsLeft)
	if confirmPairs == 0 || badRepeated == 0 || len(blamedOthers) > 0 || m.podsLeft > 0 {
		return fmt.Errorf("confirmation scenario: want a confirmation round (%d pairs), %s's failures repeated (%d rows), no other node blamed (%v) and no pod left (%d)",
			confirmPairs, bad, badRepeated, blamedOthers, m.podsLeft)
	}
	return nil
}
