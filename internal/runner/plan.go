package runner

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/rdmasuite/rdmasuite/internal/verdict"
	"github.com/rdmasuite/rdmasuite/reports"
)

// MemlockFeature is the memlock feature's name in Cfg.Selected: selected
// beside a variant's paired features, its probe runs in their node pods
// (memlockInNodePods) and Memlock starts pods only where those could not
// measure.
const MemlockFeature = "memlock"

// Plan is the run's schedule of paired work, built once from the API
// before anything is created (BuildPlan): per variant, the paired features
// the run selected, their nodes, the rounds of node pairs whose pods they
// share, the rows owed to nodes no pair measures, and whether the memlock
// probe runs in the node pods. --dry-run prints it (PlanLines); Execute
// runs it and records its checks; the features read theirs from it
// (Paired). No feature runs another's work.
type Plan struct {
	variants []*variantPlan
}

// variantPlan is one variant's part of the plan and, once executed, its
// checks by feature.
type variantPlan struct {
	v        Variant
	features []string // paired features, in PairedFeatures' order
	sch      pairedSchedule
	executed bool
	checks   map[string][]reports.Check
}

// holds reports whether the variant's plan runs feature name.
func (vp *variantPlan) holds(name string) bool { return slices.Contains(vp.features, name) }

// find is the variant plan of label that runs feature name (nil: none).
func (p *Plan) find(label, name string) *variantPlan {
	if p == nil {
		return nil
	}
	for _, vp := range p.variants {
		if vp.v.Label == label && vp.holds(name) {
			return vp
		}
	}
	return nil
}

// selectedPaired are the paired features the run selected for the
// variant (Cfg.Selected), in PairedFeatures' order.
func (r *Runner) selectedPaired(v Variant) []string {
	var out []string
	for _, f := range PairedFeatures {
		if slices.Contains(r.Cfg.Selected[v.Label], f) {
			out = append(out, f)
		}
	}
	return out
}

// BuildPlan builds the run's plan from the selection (Cfg.Selected) and
// the cluster as it is now, keeps it as the run's schedule and returns it.
// It reads the API only.
func (r *Runner) BuildPlan(ctx context.Context) *Plan {
	p := &Plan{}
	for _, v := range r.Cfg.VariantList() {
		feats := r.selectedPaired(v)
		if len(feats) == 0 {
			continue
		}
		memlock := slices.Contains(r.Cfg.Selected[v.Label], MemlockFeature)
		p.variants = append(p.variants, &variantPlan{v: v, features: feats, sch: r.schedulePaired(ctx, v, feats, memlock)})
	}
	r.mu.Lock()
	r.plan = p
	r.mu.Unlock()
	return p
}

// Execute runs the plan BuildPlan kept, each variant in turn (its
// features together, in shared pods), and records every check it made.
// While a variant runs, its features (and memlock when it rides in the
// node pods) count as running (Begin), so that a run stopped in the middle
// records them as never judged.
func (r *Runner) Execute(ctx context.Context) {
	r.mu.Lock()
	p := r.plan
	r.mu.Unlock()
	if p == nil {
		return
	}
	for _, vp := range p.variants {
		r.executeVariant(ctx, vp)
	}
}

// executeVariant runs one variant's plan and records its checks, in
// feature order.
func (r *Runner) executeVariant(ctx context.Context, vp *variantPlan) {
	var ends []func()
	for _, f := range vp.features {
		ends = append(ends, r.Begin(f, vp.v.Label))
	}
	if vp.sch.memlock {
		ends = append(ends, r.Begin(MemlockFeature, vp.v.Label))
	}
	checks := r.runPaired(ctx, vp.v, vp.sch)
	for _, f := range vp.features {
		withTraits(checks[f], opTraits(vp.sch.feats[f], vp.v))
	}
	r.mu.Lock()
	vp.checks, vp.executed = checks, true
	r.mu.Unlock()
	for _, f := range vp.features {
		r.Record(checks[f]...)
	}
	for _, end := range ends {
		end()
	}
}

// opTraits are the report traits of a feature's op checks (by id), as its
// verdict gives them: the rows the runner makes without a verdict (a node
// that does not advertise the resource, no pair) carry the same.
func opTraits(f pairedFeature, v Variant) map[string]reports.Traits {
	res := f.spec.Judge(verdict.BWInput{Variant: v.Label, Ops: f.ops, Sizes: f.sizes})
	out := map[string]reports.Traits{}
	for _, c := range append(res.Checks, res.LinkChecks...) {
		if c.Traits != nil {
			out[c.ID] = *c.Traits
		}
	}
	return out
}

// withTraits gives each check without traits its op's (a same-node one's
// with Loopback set).
func withTraits(cs []reports.Check, byID map[string]reports.Traits) {
	for i := range cs {
		if cs[i].Traits != nil {
			continue
		}
		base, loopback := strings.CutSuffix(cs[i].ID, "/loopback")
		if t, ok := byID[base]; ok {
			t.Loopback = loopback
			cs[i].Traits = &t
		}
	}
}

// Paired returns the checks of paired feature name (a PairedSpec) for the
// variant, as the plan's execution recorded them: its pairs (--pairing
// among its nodes, every rail, every op and size), and every selected
// node ends with rows: a failing row when it does not advertise the
// resource, not-run when no pair can be formed; the NodeRows feature adds
// same-node pairs under --loopback and a per-node bandwidth/ports row
// (with hostdev a bandwidth/isolation row).
//
// A feature the plan does not hold (the selection predicted from the
// filters missed it, or no plan was built) is planned and executed now,
// alone and in pods of its own, and the progress says so. One the plan
// holds but has not executed is an error row: Execute runs before the
// features.
func (r *Runner) Paired(ctx context.Context, v Variant, name string) []reports.Check {
	r.mu.Lock()
	vp := r.plan.find(v.Label, name)
	executed := vp != nil && vp.executed
	r.mu.Unlock()
	switch {
	case vp == nil:
		if r.Progress != nil && r.plan != nil {
			r.Progress(fmt.Sprintf("plan [%s]: %s is not in the run's plan (the selection predicted from the filters missed it): it runs now, in pods of its own", v.Label, name))
		}
		vp = &variantPlan{v: v, features: []string{name}, sch: r.schedulePaired(ctx, v, []string{name}, false)}
		r.executeVariant(ctx, vp)
	case !executed:
		return []reports.Check{{ID: name, Variant: v.Label, Status: reports.Error,
			Reason: "the run's plan holds this feature but was never executed, so nothing was measured (the plan runs before the features)"}}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return vp.checks[name]
}

// typicalPodStart is the plan's allowance for starting a pod pair (image
// present, device plugin ready); the run's phases table shows the real one.
const typicalPodStart = 15 * time.Second

// planRoundsShown bounds the rounds a detailed plan lists per variant, and
// planPairsShown the pairs it names per round, so that a fleet's dry run
// stays readable.
const (
	planRoundsShown = 12
	planPairsShown  = 4
)

// PlanLines say what the kept plan will run, per variant: the pod-sharing
// line, the nodes measured, rounds, waves at the run's concurrency, and an
// estimated duration from the flags (pod start plus each rail × op ×
// size's measurement). detail adds the rounds themselves (which features,
// how many pairs, the first pairs by name), as --dry-run prints them.
func (r *Runner) PlanLines(ctx context.Context, detail bool) []string {
	r.mu.Lock()
	p := r.plan
	r.mu.Unlock()
	if p == nil {
		return nil
	}
	var out []string
	for _, vp := range p.variants {
		out = append(out, r.variantPlanLines(ctx, vp)...)
		if detail {
			out = append(out, roundLines(vp)...)
		}
	}
	return out
}

func (r *Runner) variantPlanLines(ctx context.Context, vp *variantPlan) []string {
	v, sch := vp.v, vp.sch
	if len(sch.groups) == 0 {
		why := "no pair can run"
		for _, name := range vp.features { // the first feature's reason, in plan order
			if rows := sch.rows[name]; len(rows) > 0 && rows[0].Reason != "" {
				why = rows[0].Reason
				break
			}
		}
		return []string{fmt.Sprintf("plan [%s]: %s: nothing will be measured", v.Label, why)}
	}
	waves, maxPairs := 0, 0
	var est, confirmEstimate time.Duration
	railsLo, railsHi := 0, 0
	for _, g := range sch.groups {
		maxPairs = max(maxPairs, len(g))
		w := 1
		if r.Cfg.Concurrency > 0 {
			w = (len(g) + r.Cfg.Concurrency - 1) / r.Cfg.Concurrency
		}
		waves += w
		var longest time.Duration
		for _, sp := range g {
			d, rails := r.pairEstimate(sch, sp)
			longest = max(longest, d)
			if railsLo == 0 || rails < railsLo {
				railsLo = rails
			}
			railsHi = max(railsHi, rails)
		}
		est += time.Duration(w) * (typicalPodStart + longest)
		if !g[0].loopback {
			confirmEstimate = max(confirmEstimate, time.Duration(w)*(typicalPodStart+longest))
		}
	}
	line, how := PlanLine(v.Label, sch.groups), fmt.Sprintf("a wave: pod start ≈ %s + its longest pair's measurement", typicalPodStart)
	if r.pairStartMode(ctx).nodePods {
		// The node pods start before the first round (2 × concurrency at
		// a time), not once per wave.
		main, loop := nodePodNodes(sch.groups)
		podWaves := 1
		if c := 2 * r.Cfg.Concurrency; c > 0 {
			podWaves = (len(main) + len(loop) + c - 1) / c
		}
		est += time.Duration(podWaves-waves) * typicalPodStart
		line = nodePodPlanLine(v.Label, sch.groups)
		how = fmt.Sprintf("the node pods' start, %d wave(s) of ≈ %s, then each wave's longest pair's measurement", podWaves, typicalPodStart)
	}
	conc := "all at once"
	if r.Cfg.Concurrency > 0 {
		conc = fmt.Sprintf("at most %d at once", r.Cfg.Concurrency)
	}
	out := []string{line,
		fmt.Sprintf("plan [%s]: %d node(s) measured, %d round(s) of up to %d pair(s), %s: %d wave(s); %s; estimated ≈ %s (%s)",
			v.Label, len(sch.byName), len(sch.groups), maxPairs, conc, waves, r.railsText(railsLo, railsHi), est.Round(time.Second), how)}
	if r.Cfg.Confirm && confirmable(sch.groups) {
		out = append(out, fmt.Sprintf("plan [%s]: when a pair fails, its nodes are measured once more against nodes that passed everything before anything is blamed: "+
			"one more round of up to %d pair(s), ≈ %s: estimated ≈ %s with it (--confirm=false: none)", v.Label, maxPairs, confirmEstimate.Round(time.Second), (est+confirmEstimate).Round(time.Second)))
	}
	if sch.memlock {
		out = append(out, fmt.Sprintf("plan [%s]: memlock runs in the node probe pods after the rounds where the run has them (elsewhere in pods of its own)", v.Label))
	}
	return out
}

// roundLines list a variant's rounds: the features each carries, its
// pair count and its first pairs (client → server), at most
// planRoundsShown rounds.
func roundLines(vp *variantPlan) []string {
	var out []string
	for i, g := range vp.sch.groups {
		if i == planRoundsShown {
			out = append(out, fmt.Sprintf("plan [%s]: … and %d more round(s)", vp.v.Label, len(vp.sch.groups)-i))
			break
		}
		var feats, pairs []string
		for k, sp := range g {
			for _, f := range sp.feats {
				if !slices.Contains(feats, f) {
					feats = append(feats, f)
				}
			}
			if k < planPairsShown {
				pairs = append(pairs, sp.p.Client+" → "+sp.p.Server)
			}
		}
		if len(g) > planPairsShown {
			pairs = append(pairs, fmt.Sprintf("… %d more", len(g)-planPairsShown))
		}
		kind := "pair(s)"
		if g[0].loopback {
			kind = "same-node pair(s)"
		}
		out = append(out, fmt.Sprintf("plan [%s]: round %d: %s: %d %s: %s", vp.v.Label, i+1, strings.Join(feats, ", "), len(g), kind, strings.Join(pairs, ", ")))
	}
	return out
}

// confirmable: the groups hold a pair of two nodes (same-node pairs are
// never measured again).
func confirmable(groups [][]sharedPair) bool {
	for _, g := range groups {
		if len(g) > 0 && !g[0].loopback {
			return true
		}
	}
	return false
}
