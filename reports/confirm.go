package reports

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
	"strings"
)

// A second measurement before blame. One failed measurement is not enough
// to call a node, a port or a link bad: a congestion burst or a
// neighbour's job fails a healthy pair once (Google's cluster-health-scanner
// runs its NCCL check twice for this reason; NVSentinel asks for peer
// evidence). So after a variant's rounds, every node of a failed pair is
// measured once more against a partner that passed everything (the
// confirmation round), and only then is anything blamed: a failure that
// does not repeat on either end is transient (warn), one that repeats is
// the evidence localisation reads.

// RoundConfirmation marks a check measured in the confirmation round
// (Check.Round).
const RoundConfirmation = "confirmation"

// Confirmation is what measuring a failed check's two ends again against
// clean partners found.
type Confirmation struct {
	// Repeated: an end failed again (or its re-measurement errored): the
	// failure stands. False with every end passed: the failure was
	// transient and the check reads warn.
	Repeated bool           `json:"repeated"`
	Ends     []ConfirmedEnd `json:"ends"`
}

// ConfirmedEnd is one end's second measurement.
type ConfirmedEnd struct {
	Node string `json:"node"`
	Port string `json:"port,omitempty"`
	// Partner it was measured with ("" when none could be: Why says why).
	Partner string `json:"partner,omitempty"`
	// Status of its confirmation checks of the same id on the same port:
	// pass when all passed, fail when any failed, error when one broke,
	// not-run when none was measured.
	Status Status `json:"status"`
	// Figure: the re-measured value(s) as the report prints them.
	Figure string `json:"figure,omitempty"`
	Why    string `json:"why,omitempty"`
}

// ConfirmPair is one pair of the confirmation round: a suspect end as the
// client, a clean partner as the server.
type ConfirmPair struct {
	Suspect, Partner string
}

// ConfirmPlan is who the confirmation round measures.
type ConfirmPlan struct {
	Pairs []ConfirmPair
	// Unconfirmed: suspects no clean partner was left for, and why.
	Unconfirmed map[string]string
	// Suspects: every node of a failed pair, sorted; Clean: the nodes
	// that passed everything, sorted.
	Suspects, Clean []string
}

// PlanConfirmation reads one variant's pair checks from its rounds (nodes:
// every node the rounds measured) and pairs each suspect, a node of a pair
// with a failed or errored localisation check, with a clean node: one that
// passed everything it was measured in. A failure its own probe traced to a
// host (Check.HostFaults: no device, a port down, memlock) is that host's
// and needs no second measurement; it makes its partner neither suspect
// nor clean. Each clean node partners one suspect (the round's pairs are
// disjoint); suspects left over are unconfirmed, saying so.
func PlanConfirmation(checks []Check, nodes []string) ConfirmPlan {
	suspect, dirty, faulted, passed := map[string]bool{}, map[string]bool{}, map[string]bool{}, map[string]bool{}
	for _, c := range checks {
		if len(c.Nodes) != 2 || c.Nodes[0] == c.Nodes[1] || c.Is().Loopback {
			continue
		}
		if c.Lost != nil {
			// Its node was lost (evicted, drained, NotReady): nothing to
			// measure there again, and no evidence against its partner.
			faulted[c.Lost.Node], dirty[c.Lost.Node] = true, true
			continue
		}
		if !locFailing(c.Status) {
			// A not-run check (no GPU, no counters to read) is evidence
			// neither way: a clean node is one that failed nothing and
			// passed something.
			if c.Status.Passing() {
				passed[c.Nodes[0]], passed[c.Nodes[1]] = true, true
			}
			continue
		}
		if len(c.HostFaults) > 0 {
			// The faulted end's failure, not its partner's.
			for _, hf := range c.HostFaults {
				faulted[hf.Node], dirty[hf.Node] = true, true
			}
			continue
		}
		dirty[c.Nodes[0]], dirty[c.Nodes[1]] = true, true
		if !c.Is().Localize {
			continue
		}
		suspect[c.Nodes[0]], suspect[c.Nodes[1]] = true, true
	}
	var p ConfirmPlan
	for _, n := range nodes {
		switch {
		case faulted[n]:
		case suspect[n]:
			p.Suspects = append(p.Suspects, n)
		case !dirty[n] && passed[n]:
			p.Clean = append(p.Clean, n)
		}
	}
	sort.Strings(p.Suspects)
	sort.Strings(p.Clean)
	p.Suspects = slices.Compact(p.Suspects)
	p.Clean = slices.Compact(p.Clean)
	for i, s := range p.Suspects {
		if i < len(p.Clean) {
			p.Pairs = append(p.Pairs, ConfirmPair{Suspect: s, Partner: p.Clean[i]})
			continue
		}
		if p.Unconfirmed == nil {
			p.Unconfirmed = map[string]string{}
		}
		p.Unconfirmed[s] = fmt.Sprintf("no partner that passed everything was left to measure it against (%d suspect node(s), %d clean)", len(p.Suspects), len(p.Clean))
	}
	return p
}

// ApplyConfirmation joins the confirmation round's checks (confirm, their
// Round set) to the failed checks of the rounds (checks, changed in
// place): a failed check whose two ends both passed again on the same
// check and port becomes warn, transient, with both measurements named; a
// failure that repeated, or that could not be measured again, stays and
// says so. A failure traced to its own host is left alone (nothing to
// confirm).
func ApplyConfirmation(checks []Check, confirm []Check, plan ConfirmPlan) {
	partner := map[string]string{}
	for _, cp := range plan.Pairs {
		partner[cp.Suspect] = cp.Partner
	}
	// The confirmation checks by id and node, so that a fleet-wide fault
	// (thousands of failed rows) does not scan every confirmation row per
	// end.
	byEnd := map[[2]string][]Check{}
	for _, c := range confirm {
		for _, n := range slices.Compact(slices.Clone(c.Nodes)) {
			byEnd[[2]string{c.ID, n}] = append(byEnd[[2]string{c.ID, n}], c)
		}
	}
	for i := range checks {
		c := &checks[i]
		if !locFailing(c.Status) || len(c.HostFaults) > 0 || !c.Is().Localize ||
			len(c.Nodes) != 2 || c.Nodes[0] == c.Nodes[1] || c.Round != "" {
			continue
		}
		conf := &Confirmation{}
		for _, n := range c.Nodes {
			port, _ := localPort(*c, n)
			end := ConfirmedEnd{Node: n, Port: port, Partner: partner[n], Status: NotRun}
			switch {
			case end.Partner == "":
				end.Why = plan.Unconfirmed[n]
				if end.Why == "" {
					end.Why = "not measured again: its failures are its own host's (a fault its probe saw)"
				}
			default:
				end.Status, end.Figure, end.Why = endVerdict(c.ID, n, port, end.Partner, byEnd[[2]string{c.ID, n}])
			}
			// A failure or an error (its probe broke again) repeats it; a
			// second measurement the run itself cut (its deadline) is never
			// made: the runner leaves those ends unconfirmed.
			conf.Repeated = conf.Repeated || end.Status == Fail || end.Status == Error
			conf.Ends = append(conf.Ends, end)
		}
		c.Confirmation = conf
		allPassed := true
		for _, e := range conf.Ends {
			allPassed = allPassed && e.Status == Pass
		}
		if allPassed {
			c.Status = Warn
			c.Diagnosis = "transient: " + c.Diagnosis + " — it did not repeat: " + conf.text() +
				"; a one-off (a congestion burst, a neighbour's job), not a fault to chase unless it comes back"
			c.Fix = ""
			continue
		}
		c.Evidence = append(c.Evidence, "measured again before blame: "+conf.text())
	}
}

// endVerdict is node n's confirmation checks of id on port (with partner;
// confirm: the confirmation checks of id that name n): pass when every one
// passed, fail when any failed, error when one broke.
func endVerdict(id, n, port, partner string, confirm []Check) (Status, string, string) {
	st := NotRun
	var figs []string
	why := ""
	for _, c := range confirm {
		if c.ID != id || len(c.Nodes) != 2 || !slices.Contains(c.Nodes, n) || !slices.Contains(c.Nodes, partner) {
			continue
		}
		if p, ok := localPort(c, n); ok && port != "" && p != port {
			continue
		}
		for _, m := range c.Measured {
			if m.Threshold != nil && (m.Node == "" || m.Node == n || m.Node == partner) {
				figs = append(figs, fmtVal(m.Value, m.Unit))
			}
		}
		switch {
		case c.Status == Fail:
			st = Fail
			why = cmp.Or(c.Diagnosis, c.Reason)
		case c.Status == Error && st != Fail:
			st = Error
			why = cmp.Or(c.Reason, c.Diagnosis)
		case c.Status.Passing() && st != Fail && st != Error:
			st = Pass
		case c.Status == NotRun && st == NotRun:
			why = c.Reason
		}
	}
	if st == NotRun && why == "" {
		why = "the confirmation round has no such check on this port"
	}
	return st, strings.Join(figs, ", "), why
}

// text: "rxe-node-1 rxe0/1 with rxe-node-3: pass (0.21 Gb/s); rxe-node-2 …".
func (cf *Confirmation) text() string {
	var parts []string
	for _, e := range cf.Ends {
		s := e.Node
		if e.Port != "" {
			s += " " + e.Port
		}
		if e.Partner != "" {
			s += " with " + e.Partner
		}
		s += ": " + string(e.Status)
		switch {
		case e.Figure != "" && e.Status != NotRun && e.Status != Error:
			s += " (" + e.Figure + ")"
		case e.Why != "":
			s += " (" + e.Why + ")"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, "; ")
}

// transient: a warn check whose failure did not repeat when both its ends
// were measured again (its own figure may miss its bound; the
// confirmation's passed).
func (c Check) transient() bool {
	if c.Status != Warn || c.Confirmation == nil || c.Confirmation.Repeated || len(c.Confirmation.Ends) == 0 {
		return false
	}
	for _, e := range c.Confirmation.Ends {
		if e.Status != Pass {
			return false
		}
	}
	return true
}
