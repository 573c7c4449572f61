package runner

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/rdmasuite/rdmasuite/internal/pairing"
	"github.com/rdmasuite/rdmasuite/reports"
)

// confirm is the confirmation round of a variant (--confirm, on by
// default): after its rounds, each node of a failed or inconclusive pair is
// measured once more against a node that passed everything, with the
// features it was measured in, and the rounds' failed checks learn whether
// they repeated (reports.ApplyConfirmation) before anything reads them:
// localisation, node marks and taints come after. Nothing runs when every
// pair passed.
func (r *Runner) confirm(ctx context.Context, v Variant, sch pairedSchedule, np *nodePods, seen *railsSeen, rp *roundProgress, out map[string][]reports.Check) {
	var nodes []string
	featsOf := map[string][]string{}
	for _, g := range sch.groups {
		for _, sp := range g {
			if sp.loopback {
				continue
			}
			for _, n := range []string{sp.p.Client, sp.p.Server} {
				if !slices.Contains(nodes, n) {
					nodes = append(nodes, n)
				}
				for _, f := range sp.feats {
					if !slices.Contains(featsOf[n], f) {
						featsOf[n] = append(featsOf[n], f)
					}
				}
			}
		}
	}
	var measured []reports.Check
	for _, name := range slices.Sorted(maps.Keys(out)) {
		measured = append(measured, out[name]...)
	}
	plan := reports.PlanConfirmation(measured, nodes)
	if len(plan.Suspects) == 0 {
		return
	}
	var g []sharedPair
	for _, cp := range plan.Pairs {
		// The features both ends were measured in, in the plan's order.
		var feats []string
		for _, f := range featsOf[cp.Suspect] {
			if slices.Contains(featsOf[cp.Partner], f) {
				feats = append(feats, f)
			}
		}
		if len(feats) == 0 {
			continue
		}
		g = append(g, sharedPair{p: pairing.Pair{Client: cp.Suspect, Server: cp.Partner}, feats: feats, round: reports.RoundConfirmation})
	}
	if r.Progress != nil {
		r.Progress(ConfirmLine(v.Label, plan))
	}
	confirmed := map[string][]reports.Check{}
	if len(g) > 0 && ctx.Err() == nil {
		rp.rounds++
		rp.round = rp.rounds
		rp.total += len(g)
		r.runGroup(ctx, v, sch, g, np, seen, rp, confirmed)
	}
	if ctx.Err() != nil && len(g) > 0 {
		// The run's deadline (or an interrupt) cut the round: what it
		// measured is not a second measurement of anyone.
		for _, cp := range plan.Pairs {
			if plan.Unconfirmed == nil {
				plan.Unconfirmed = map[string]string{}
			}
			plan.Unconfirmed[cp.Suspect] = fmt.Sprintf("the confirmation round was cut (%v)", context.Cause(ctx))
		}
		plan.Pairs = nil
	}
	for name := range out {
		reports.ApplyConfirmation(out[name], confirmed[name], plan)
	}
	for _, name := range slices.Sorted(maps.Keys(confirmed)) {
		for i := range confirmed[name] {
			c := &confirmed[name][i]
			c.Evidence = append(c.Evidence, fmt.Sprintf("confirmation round: %s measured again against %s, which passed everything in the run's rounds",
				c.Nodes[0], c.Nodes[len(c.Nodes)-1]))
		}
		out[name] = append(out[name], confirmed[name]...)
	}
}

// ConfirmLine says what the confirmation round measures: the suspects,
// their partners, and who is left without one (at most confirmShown each).
func ConfirmLine(variant string, plan reports.ConfirmPlan) string {
	var pairs []string
	for i, cp := range plan.Pairs {
		if i == confirmShown {
			pairs = append(pairs, fmt.Sprintf("… %d more", len(plan.Pairs)-i))
			break
		}
		pairs = append(pairs, cp.Suspect+" → "+cp.Partner)
	}
	left := slices.Sorted(maps.Keys(plan.Unconfirmed))
	why := ""
	if len(left) > 0 {
		why = plan.Unconfirmed[left[0]]
		if len(left) > confirmShown {
			left = append(left[:confirmShown], fmt.Sprintf("… %d more", len(left)-confirmShown))
		}
	}
	if len(pairs) == 0 {
		return fmt.Sprintf("confirmation [%s]: %d node(s) of failed pairs, none measured again: %s (%s)", variant, len(plan.Suspects), strings.Join(left, ", "), why)
	}
	s := fmt.Sprintf("confirmation [%s]: %d node(s) of failed pairs measured again against nodes that passed everything: %s",
		variant, len(plan.Suspects), strings.Join(pairs, ", "))
	if len(left) > 0 {
		s += fmt.Sprintf("; not measured again: %s (%s)", strings.Join(left, ", "), why)
	}
	return s
}

// confirmShown bounds the names a confirmation line lists (a fleet-wide
// fault makes hundreds of suspects).
const confirmShown = 8
