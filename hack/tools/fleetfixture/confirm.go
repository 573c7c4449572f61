package main

import (
	"github.com/rdmasuite/rdmasuite/internal/verdict"
	"github.com/rdmasuite/rdmasuite/reports"
)

// confirmRound is the suite's confirmation round on the fixture's fleet
// (-confirm): the nodes of failed pairs, each measured again against a
// node that passed everything (reports.PlanConfirmation), through the
// same verdicts; a -flaky port measures healthy this time, a -bad one
// slow again. The rounds' checks learn what it found
// (reports.ApplyConfirmation) and its rows follow them.
func (f *fixture) confirmRound(checks []reports.Check) []reports.Check {
	names := make([]string, f.nodes)
	index := map[string]int{}
	for i := range f.nodes {
		names[i] = f.name(i)
		index[names[i]] = i
	}
	plan := reports.PlanConfirmation(checks, names)
	f.confirming = true
	defer func() { f.confirming = false }()
	var confirmed []reports.Check
	for _, cp := range plan.Pairs {
		res := verdict.Bandwidth(f.pair(index[cp.Suspect], index[cp.Partner]))
		for _, c := range res.Checks { // as the rounds: no link rows (the fixture's probes read no counters)
			c.Round = reports.RoundConfirmation
			c.Duration = float64(len(sizes) * measureSec)
			confirmed = append(confirmed, c)
		}
	}
	reports.ApplyConfirmation(checks, confirmed, plan)
	return append(checks, confirmed...)
}
