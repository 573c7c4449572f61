// Package doctor maps what the suite observes (node labels, taints and
// allocatable, operator pods and their logs, the NicClusterPolicy, host
// probe reports) to the known root causes from the incident write-ups and
// from real operator reports.
//
// Findings are data: each is one Rule (its id, severity, cause, fix, the
// evidence that raises it, the look-alike states that must not, and one
// evaluation over the View) registered from its own file. Adding a finding
// means adding a rule and its tests; nothing else changes. KNOWN_ANSWERS.md
// is generated from the registered rules (go test -run TestKnownAnswersDoc
// -update).
package doctor

import (
	"fmt"
	"slices"
	"sort"
)

// Severity of a finding.
type Severity string

const (
	Critical Severity = "critical" // RDMA/GPU capacity of the node is lost
	Warning  Severity = "warning"  // degraded or at risk
	Info     Severity = "info"     // a consequence of another finding
)

// Rule is one known failure mode and how to recognise it.
type Rule struct {
	ID       string
	Severity Severity
	// Seed is the incident write-up it comes from ("000".."004"), or
	// "field" for failure modes found in public operator reports.
	Seed  string
	Cause string
	Fix   string
	// Raises names the evidence that raises the finding; Silent lists the
	// look-alike states that must not. Both are the known-answer document.
	Raises string
	Silent []string
	// Eval returns one hit per affected node (Node "" for a cluster-wide
	// finding that could not be looked at: reported as not-run).
	Eval func(v *View) []Hit
}

// Hit is one place a rule matched, with the evidence that made it match.
type Hit struct {
	Node     string
	Evidence []string
	// Caps are the bandwidths the finding's host cause allows on the
	// ports it names (a PCIe link, an MTU): reports explain a failed
	// figure by them only where the cap is below the floor and the figure
	// near the cap.
	Caps []Cap
}

// Cap is what a host cause allows on one port.
type Cap struct {
	Port string  // "mlx5_1/1"
	Gbps float64 // what the cause lets the port carry
}

func hit(node string, evidence ...string) Hit { return Hit{Node: node, Evidence: evidence} }

// ClusterWide is a Hit's node for a failure seen but not attributable to
// one node (a pod no node was chosen for): a failing check without nodes.
// A Hit with Node "" is something that could not be looked at (not-run).
const ClusterWide = "*"

// Finding is one observed failure mode on one node.
type Finding struct {
	ID       string   `json:"id"`
	Severity Severity `json:"severity"`
	Node     string   `json:"node"`
	Evidence []string `json:"evidence"`
	Cause    string   `json:"cause"`
	Fix      string   `json:"fix"`
	Seed     string   `json:"seed"`
	Caps     []Cap    `json:"caps,omitempty"`
}

// Catalogue holds every registered rule by id.
var Catalogue = map[string]*Rule{}

var ruleOrder []string

// register adds a rule to the catalogue; rule files call it from a package
// variable so that a new rule needs no edit anywhere else.
func register(r Rule) *Rule {
	if r.ID == "" || r.Eval == nil || r.Cause == "" || r.Fix == "" || r.Raises == "" {
		panic(fmt.Sprintf("doctor: rule %q is incomplete (id, cause, fix, raises and eval are required)", r.ID))
	}
	if _, dup := Catalogue[r.ID]; dup {
		panic("doctor: rule registered twice: " + r.ID)
	}
	Catalogue[r.ID] = &r
	ruleOrder = append(ruleOrder, r.ID)
	return &r
}

// Rules returns the registered rules sorted by id.
func Rules() []*Rule {
	ids := append([]string(nil), ruleOrder...)
	sort.Strings(ids)
	out := make([]*Rule, 0, len(ids))
	for _, id := range ids {
		out = append(out, Catalogue[id])
	}
	return out
}

func (r *Rule) finding(h Hit) Finding {
	return Finding{ID: r.ID, Severity: r.Severity, Node: h.Node, Evidence: h.Evidence, Cause: r.Cause, Fix: r.Fix, Seed: r.Seed, Caps: h.Caps}
}

// Diagnose applies every rule to the state. Findings are sorted by node and
// id; a healthy node gets none.
func Diagnose(s State) []Finding {
	v := NewView(s)
	var out []Finding
	for _, r := range Rules() {
		for _, h := range r.Eval(v) {
			out = append(out, r.finding(h))
		}
	}
	return yieldToSpecific(dedupe(out))
}

// specificFor lists, per generic "this pod is not Ready" rule, the rules
// that name why the same node's pod of that kind is not Ready: one cause
// gives one finding per pod, the one that says most.
var specificFor = map[string][]string{
	GPUDriverNotReady: {PeermemRace, PeermemMismatch, PeermemUndecided, PeermemNotRegistered, GPUDriverWaitsForMOFED},
	MOFEDCrashLoop:    {StorageModules, StorageModulesPodOutdated, StorageModulesNoFix, MOFEDBlockedByPeermem},
	// Not the untolerated taint: its finding is about the policy, and the
	// Pending pod's own finding carries the scheduler's message.
	MOFEDNotReady: {StorageModules, StorageModulesPodOutdated, StorageModulesNoFix, MOFEDBlockedByPeermem, MOFEDCrashLoop},
}

// yieldToSpecific drops a generic finding on a node where a specific one
// for the same pod kind was raised, and folds the generic's evidence into
// the specific finding (the first of specificFor's order that was raised):
// one cause, one finding per pod, nothing seen lost.
func yieldToSpecific(fs []Finding) []Finding {
	at := map[string]int{}
	for i, f := range fs {
		at[f.ID+"|"+f.Node] = i
	}
	drop := map[int]bool{}
	for i, f := range fs {
		if f.Node == "" {
			continue
		}
		for _, id := range specificFor[f.ID] {
			j, ok := at[id+"|"+f.Node]
			if !ok || drop[j] {
				continue
			}
			for _, e := range f.Evidence {
				if !slices.Contains(fs[j].Evidence, e) {
					fs[j].Evidence = append(slices.Clip(fs[j].Evidence), e)
				}
			}
			drop[i] = true
			break
		}
	}
	out := fs[:0]
	for i, f := range fs {
		if !drop[i] {
			out = append(out, f)
		}
	}
	return out
}

// dedupe merges hits of one rule on one node (e.g. the API and the host
// probe both saw storage modules) into one finding with all the evidence.
func dedupe(fs []Finding) []Finding {
	seen := map[string]int{}
	var out []Finding
	for _, f := range fs {
		k := f.ID + "|" + f.Node
		if i, ok := seen[k]; ok {
			out[i].Evidence = append(out[i].Evidence, f.Evidence...)
			out[i].Caps = append(out[i].Caps, f.Caps...)
			continue
		}
		seen[k] = len(out)
		out = append(out, f)
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Node != out[j].Node {
			return out[i].Node < out[j].Node
		}
		return out[i].ID < out[j].ID
	})
	return out
}
