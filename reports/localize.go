package reports

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
)

// FindingKind is what a localisation finding blames.
type FindingKind string

const (
	// BadNode: a node failed with every partner it was measured with (at
	// least 2), on all its rails or on a mix no single port explains.
	BadNode FindingKind = "bad-node"
	// BadPort: a node failed with every partner on one rail (its side of
	// the rail label) and passed with them on its other rails.
	BadPort FindingKind = "bad-port"
	// BadLink: a pair failed while both of its nodes passed with some
	// other partner.
	BadLink FindingKind = "bad-link"
	// HostConfig: the failing checks of a port are explained by its
	// host's configuration (AttachHostCauses): no cable or switch blamed.
	HostConfig FindingKind = "host-config"
	// Inconclusive: a failing pair where a node was measured with one
	// partner only: a bad node and a bad link read the same.
	Inconclusive FindingKind = "inconclusive"
)

// kindOrder sorts findings: nodes, ports, links, then what is undecided.
var kindOrder = map[FindingKind]int{BadNode: 0, BadPort: 1, HostConfig: 2, BadLink: 3, Inconclusive: 4}

// Finding localises failing pair checks of one variant to a node, one of
// its ports, or the link between two nodes.
type Finding struct {
	Kind    FindingKind `json:"kind"`
	Variant string      `json:"variant,omitempty"`
	// Nodes: the suspect node; both ends of a link (sorted); both ends of
	// an inconclusive pair where neither had another partner.
	Nodes []string `json:"nodes"`
	// Rail: a bad port's name (the node's side of the rail label); the
	// failing rail label(s) of a bad link; the failing ports of a bad node
	// that fails on some rails with some partners only. Empty when the
	// checks carry no rail or every rail failed.
	Rail string `json:"rail,omitempty"`
	// PartnersFailed / PartnersPassed count FailedWith and PassedWith:
	// the distinct partners failed and passed with. A bad node: all of
	// its partners, none passed. A bad port: the partners that failed on
	// that rail, and those that passed on its other rails. A bad link:
	// the other partners of its two ends (the ends themselves left out).
	// Inconclusive: the one partner failed with.
	PartnersFailed int      `json:"partnersFailed"`
	PartnersPassed int      `json:"partnersPassed"`
	FailedWith     []string `json:"failedWith,omitempty"`
	PassedWith     []string `json:"passedWith,omitempty"`
	// Checks: the ids of the failing checks the finding explains.
	Checks      []string `json:"checks,omitempty"`
	Explanation string   `json:"explanation"`
	// Counters: the ends of its failing link checks whose judged port
	// counters rose (to tell a bad port from a bad link), at most maxCounterSides; CountersMore
	// counts the rest.
	Counters     []CounterSide `json:"counters,omitempty"`
	CountersMore int           `json:"countersMore,omitempty"`
}

func locFailing(s Status) bool { return s == Fail || s == Error }

type locPair struct{ a, b string } // a < b

func locKey(x, y string) locPair {
	if y < x {
		x, y = y, x
	}
	return locPair{x, y}
}

// variantEvidence is one variant's measured pair and loopback checks.
type variantEvidence struct {
	pairs    map[locPair][]Check
	loopback map[string][]Check
	// excused: failing checks of pairs with an end that is a culprit of
	// its own (faultedNodes), kept out of pairs.
	excused map[locPair][]Check
}

// faultedNodes are, per variant, the nodes a failing check's own probe
// blamed (Check.HostFaults), with what it saw.
func faultedNodes(run Run) map[string]map[string]string {
	out := map[string]map[string]string{}
	for _, c := range run.Checks {
		if !locFailing(c.Status) {
			continue
		}
		for _, hf := range c.HostFaults {
			if out[c.Variant] == nil {
				out[c.Variant] = map[string]string{}
			}
			if out[c.Variant][hf.Node] == "" {
				// The first words say it ("port not ACTIVE"); the probe's
				// full text stays on its own finding.
				what, _, _ := strings.Cut(hf.What, " (")
				if hf.Port != "" {
					what = hf.Port + " " + what
				}
				out[c.Variant][hf.Node] = what
			}
		}
	}
	return out
}

// excusedFindings say, for each pair set apart because an end is a culprit
// of its own, that its failures are no evidence against the other end,
// unless that end is blamed by other evidence already (found). Both ends
// culprits of their own: the pair's remaining failures are theirs.
func (ev *variantEvidence) excusedFindings(variant string, faulted map[string]string, found []Finding) []Finding {
	blamed := map[string]bool{}
	for _, f := range found {
		if f.Kind == BadNode || f.Kind == BadPort {
			blamed[f.Nodes[0]] = true
		}
	}
	keys := slices.SortedFunc(maps.Keys(ev.excused), func(x, y locPair) int {
		return strings.Compare(x.a+"\x00"+x.b, y.a+"\x00"+y.b)
	})
	var out []Finding
	for _, k := range keys {
		cs := ev.excused[k]
		rails, ids := locFailingRails(cs), locFailingIDs(cs)
		n, p := k.a, k.b
		if faulted[n] != "" {
			n, p = p, n
		}
		if faulted[n] != "" || blamed[n] {
			continue // both ends are culprits of their own, or n is blamed anyway
		}
		var passed []string
		for pk, pcs := range ev.pairs {
			// Its other partners: passing checks beside the set-apart
			// failures with p say nothing more about n.
			if (pk.a == n || pk.b == n) && pk != k && !locPairFailed(pcs) {
				passed = append(passed, locWithout([]string{pk.a, pk.b}, n)...)
			}
		}
		sort.Strings(passed)
		judged := "and it was measured with no other partner"
		if len(passed) > 0 {
			judged = "while it passed with " + locPartners(passed)
		}
		f := Finding{Kind: Inconclusive, Variant: variant, Nodes: []string{n}, Rail: strings.Join(rails, ", "),
			PartnersFailed: 1, FailedWith: []string{p}, PartnersPassed: len(passed), PassedWith: passed, Checks: ids,
			Explanation: fmt.Sprintf("%s↔%s failed%s, but %s is a culprit of its own (%s): no evidence against %s, %s; measure %s against another node to know",
				k.a, k.b, locOnRails(rails), p, faulted[p], n, judged, n)}
		sides := counterSides(cs)
		f.withCounters(sides, linkCountersNote(sides))
		out = append(out, f)
	}
	return out
}

// pairFailed: a pair failed when any of its checks failed or errored.
func locPairFailed(cs []Check) bool {
	for _, c := range cs {
		if locFailing(c.Status) {
			return true
		}
	}
	return false
}

// Localize reads the run's localisation evidence (checks whose traits say
// Localize, with exactly two nodes), per variant, and says where failures
// sit: a node that fails with every partner (at least 2) is a bad node, or
// a bad port when one of its rails fails with every partner while its other
// rails pass; a failing pair whose two nodes both pass with some other
// partner is a bad link; a failing pair with a node measured against that
// one partner only is inconclusive. Not-run checks are no evidence either
// way. Loopback checks (their traits say so, or both nodes are the same)
// are not pairs: they only add to a node's explanation whether the node
// works on its own. A failing check whose probe saw a fault on its own host
// (Check.HostFaults) blames that port or node directly, and is no pairing
// evidence. The order is deterministic.
func Localize(run Run) []Finding {
	byVariant := map[string]*variantEvidence{}
	faulted := faultedNodes(run)
	for _, c := range run.Checks {
		// A warn met its bar (a peer outlier, a failure that did not
		// repeat): it is evidence the pair works.
		if !c.Is().Localize || (!c.Status.Passing() && !locFailing(c.Status)) || c.Lost != nil {
			continue
		}
		// A failure its own probe traced to a host (a port DOWN, no
		// device) blames that host (hostFaultFindings), and is no
		// evidence against the node it was paired with.
		if locFailing(c.Status) && (len(c.HostFaults) > 0 || len(c.HostCauses) > 0) {
			continue
		}
		loop := c.Is().Loopback || (len(c.Nodes) == 2 && c.Nodes[0] == c.Nodes[1])
		if (loop && len(c.Nodes) == 0) || (!loop && len(c.Nodes) != 2) {
			continue
		}
		ev := byVariant[c.Variant]
		if ev == nil {
			ev = &variantEvidence{pairs: map[locPair][]Check{}, loopback: map[string][]Check{}}
			byVariant[c.Variant] = ev
		}
		if loop {
			ev.loopback[c.Nodes[0]] = append(ev.loopback[c.Nodes[0]], c)
			continue
		}
		k := locKey(c.Nodes[0], c.Nodes[1])
		// A failure with a partner that is a culprit of its own (its probe
		// saw no device, a port down, a memlock it cannot lift) is no
		// evidence against the other node: it is set apart, and said.
		if locFailing(c.Status) && (faulted[c.Variant][c.Nodes[0]] != "" || faulted[c.Variant][c.Nodes[1]] != "") {
			if ev.excused == nil {
				ev.excused = map[locPair][]Check{}
			}
			ev.excused[k] = append(ev.excused[k], c)
			continue
		}
		ev.pairs[k] = append(ev.pairs[k], c)
	}
	var out []Finding
	for v, ev := range byVariant {
		found := ev.localize(v)
		out = append(out, found...)
		out = append(out, ev.excusedFindings(v, faulted[v], found)...)
	}
	out = append(out, hostFaultFindings(run)...)
	out = append(out, hostCauseFindings(run)...)
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Variant != b.Variant {
			return a.Variant < b.Variant
		}
		return locusLess(a.Kind, b.Kind, a.Nodes, b.Nodes, a.Rail, b.Rail)
	})
	return out
}

// hostFaultFindings blame what a failing check's own probe saw on its host
// (Check.HostFaults): a port it read as not ACTIVE is a bad port, a node
// whose pod sees no RDMA device a bad node, whatever the pairing can tell
// (one partner, or none). One finding per variant, node and port, naming
// every check it explains.
func hostFaultFindings(run Run) []Finding {
	return directFindings(run, func(c Check) []directBlame {
		var out []directBlame
		for _, hf := range c.HostFaults {
			b := directBlame{node: hf.Node, port: hf.Port, kind: BadNode,
				explanation: fmt.Sprintf("%s: the probe on %s itself saw it: %s; a fault of the node whatever its partners", hf.Node, hf.Node, hf.What)}
			if hf.Port != "" {
				b.kind = BadPort
				b.explanation = fmt.Sprintf("port %s on %s: the probe on %s itself read it: %s; a fault of that port whatever its partners (ibstat on the node shows the same)",
					hf.Port, hf.Node, hf.Node, hf.What)
			}
			out = append(out, b)
		}
		return out
	})
}

// hostCauseFindings name, per variant, node and port, the host
// configuration that explains its failing checks (Check.HostCauses). A
// check its own probe traced to a host fault is that fault's.
func hostCauseFindings(run Run) []Finding {
	return directFindings(run, func(c Check) []directBlame {
		if len(c.HostFaults) > 0 {
			return nil
		}
		var out []directBlame
		for _, hc := range c.HostCauses {
			out = append(out, directBlame{node: hc.Node, port: hc.Port, kind: HostConfig,
				explanation: fmt.Sprintf("port %s on %s: its host's configuration caps it (%s: %s); fix the host before suspecting a cable or switch",
					hc.Port, hc.Node, hc.Finding, hc.What)})
		}
		return out
	})
}

// directBlame is a place a failing check blames by itself, without the
// pairing's evidence.
type directBlame struct {
	node, port  string
	kind        FindingKind
	explanation string
}

// directFindings makes one finding per variant, node and port that the
// failing checks blame directly (blames), naming every check it explains
// and the partners they failed with; the first check's explanation stands.
func directFindings(run Run, blames func(Check) []directBlame) []Finding {
	type key struct{ variant, node, port string }
	var order []key
	found := map[key]*Finding{}
	for _, c := range run.Checks {
		if !locFailing(c.Status) {
			continue
		}
		for _, b := range blames(c) {
			k := key{c.Variant, b.node, b.port}
			f := found[k]
			if f == nil {
				f = &Finding{Kind: b.kind, Variant: c.Variant, Nodes: []string{b.node}, Rail: b.port, Explanation: b.explanation}
				found[k] = f
				order = append(order, k)
			}
			if !slices.Contains(f.Checks, c.ID) {
				f.Checks = append(f.Checks, c.ID)
			}
			for _, p := range c.Nodes {
				if p != b.node && !slices.Contains(f.FailedWith, p) {
					f.FailedWith = append(f.FailedWith, p)
				}
			}
		}
	}
	out := make([]Finding, 0, len(order))
	for _, k := range order {
		f := found[k]
		sort.Strings(f.Checks)
		sort.Strings(f.FailedWith)
		f.PartnersFailed = len(f.FailedWith)
		out = append(out, *f)
	}
	return out
}

// locusLess orders what a finding blames: by kind (bad node before bad
// port …), then nodes, then rail. Findings and culprits share it.
func locusLess(ka, kb FindingKind, na, nb []string, ra, rb string) bool {
	if ka != kb {
		return kindOrder[ka] < kindOrder[kb]
	}
	if x, y := strings.Join(na, ","), strings.Join(nb, ","); x != y {
		return x < y
	}
	return ra < rb
}

func (ev *variantEvidence) localize(variant string) []Finding {
	failedWith, passedWith := map[string][]string{}, map[string][]string{}
	var keys []locPair
	for k, cs := range ev.pairs {
		keys = append(keys, k)
		m := passedWith
		if locPairFailed(cs) {
			m = failedWith
		}
		m[k.a] = append(m[k.a], k.b)
		m[k.b] = append(m[k.b], k.a)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].a != keys[j].a {
			return keys[i].a < keys[j].a
		}
		return keys[i].b < keys[j].b
	})
	for _, m := range []map[string][]string{failedWith, passedWith} {
		for n := range m {
			sort.Strings(m[n])
		}
	}
	bad := map[string]bool{}
	var out []Finding
	for _, n := range slices.Sorted(maps.Keys(failedWith)) {
		if len(passedWith[n]) == 0 && len(failedWith[n]) >= 2 {
			bad[n] = true
			out = append(out, ev.nodeFindings(variant, n, failedWith[n])...)
		}
	}
	for _, k := range keys {
		cs := ev.pairs[k]
		if !locPairFailed(cs) || bad[k.a] || bad[k.b] {
			continue
		}
		rails, ids := locFailingRails(cs), locFailingIDs(cs)
		pa, pb := passedWith[k.a], passedWith[k.b]
		switch {
		case len(pa) > 0 && len(pb) > 0:
			others := locUnion(pa, pb)
			othersFailed := locUnion(locWithout(failedWith[k.a], k.b), locWithout(failedWith[k.b], k.a))
			f := Finding{Kind: BadLink, Variant: variant, Nodes: []string{k.a, k.b}, Rail: strings.Join(rails, ", "),
				PartnersFailed: len(othersFailed), PartnersPassed: len(others), FailedWith: othersFailed, PassedWith: others, Checks: ids,
				Explanation: fmt.Sprintf("%s↔%s failed%s while %s passed with %s and %s with %s: suspect the link between them (cables, switch ports, route), not either node",
					k.a, k.b, locOnRails(rails), k.a, locPartners(pa), k.b, locPartners(pb))}
			sides := counterSides(cs)
			f.withCounters(sides, linkCountersNote(sides))
			out = append(out, f)
		case len(pa) == 0 && len(pb) == 0: // each end's only partner is the other
			f := Finding{Kind: Inconclusive, Variant: variant, Nodes: []string{k.a, k.b}, Rail: strings.Join(rails, ", "),
				Checks: ids,
				Explanation: fmt.Sprintf("inconclusive: one partner: %s↔%s failed%s and neither node was measured with another partner%s%s: a bad node and a bad link read the same; measure against more nodes (--pairing=all)",
					k.a, k.b, locOnRails(rails), ev.loopbackNote(k.a), ev.loopbackNote(k.b))}
			sides := counterSides(cs)
			f.withCounters(sides, linkCountersNote(sides))
			out = append(out, f)
		default: // one end passes elsewhere; the other had this partner only
			n, p, pp := k.a, k.b, pb
			if len(pa) > 0 {
				n, p, pp = k.b, k.a, pa
			}
			f := Finding{Kind: Inconclusive, Variant: variant, Nodes: []string{n}, Rail: strings.Join(rails, ", "),
				PartnersFailed: 1, FailedWith: []string{p}, Checks: ids,
				Explanation: fmt.Sprintf("inconclusive: one partner: %s was measured with %s only and failed%s, while %s passed with %s%s: suspect %s or the %s↔%s link; measure %s against another node (--pairing=all)",
					n, p, locOnRails(rails), p, locPartners(pp), ev.loopbackNote(n), n, k.a, k.b, n)}
			sides := counterSides(cs)
			f.withCounters(sides, linkCountersNote(sides))
			out = append(out, f)
		}
	}
	return out
}

// nodeFindings says how a node that failed with all its partners failed:
// on one or more ports that fail with every partner while its other ports
// pass (bad-port, one finding per port), or as a whole (bad-node).
func (ev *variantEvidence) nodeFindings(variant, n string, partners []string) []Finding {
	np := ev.nodePortsOf(n, partners)
	if !np.portsExplain() {
		return []Finding{ev.badNodeFinding(variant, np, partners)}
	}
	var out []Finding
	for _, port := range np.bad {
		out = append(out, ev.badPortFinding(variant, np, port))
	}
	return out
}

// nodePorts is a failing node's evidence regrouped by its own port, so a
// port that fails with every partner can be told from a node that fails
// everywhere.
type nodePorts struct {
	node   string
	checks []Check // its checks with every partner it failed with
	// byPort: port → partner → failed on that port with that partner.
	byPort map[string]map[string]bool
	names  []string // the ports of byPort, sorted
	// bad: the ports that failed with every partner (at least 2) on them;
	// good: the ports that failed with none. A port with mixed results is
	// in neither.
	bad, good []string
}

func (ev *variantEvidence) nodePortsOf(n string, partners []string) *nodePorts {
	np := &nodePorts{node: n, byPort: map[string]map[string]bool{}}
	for _, p := range partners {
		np.checks = append(np.checks, ev.pairs[locKey(n, p)]...)
	}
	for _, c := range np.checks {
		port, ok := localPort(c, n)
		if !ok {
			continue
		}
		p := c.Nodes[0]
		if p == n {
			p = c.Nodes[1]
		}
		if np.byPort[port] == nil {
			np.byPort[port] = map[string]bool{}
		}
		np.byPort[port][p] = np.byPort[port][p] || locFailing(c.Status)
	}
	np.names = slices.Sorted(maps.Keys(np.byPort))
	for _, port := range np.names {
		nf := locFailedCount(np.byPort[port])
		switch {
		case nf == len(np.byPort[port]) && nf >= 2:
			np.bad = append(np.bad, port)
		case nf == 0:
			np.good = append(np.good, port)
		}
	}
	return np
}

// locFailedCount is how many of a port's partners it failed with.
func locFailedCount(partners map[string]bool) int {
	nf := 0
	for _, f := range partners {
		if f {
			nf++
		}
	}
	return nf
}

// portsExplain says the bad ports account for the whole failure, so the
// node is reported port by port. Some port must still pass (else it is the
// node), and every failing check must sit on a bad port for the ports to
// explain the node: an unrailed failure, or one on a port that fails with
// some partners only, is the node's.
func (np *nodePorts) portsExplain() bool {
	explained := len(np.bad) > 0 && len(np.bad) < len(np.names)
	for _, c := range np.checks {
		if !locFailing(c.Status) {
			continue
		}
		if port, ok := localPort(c, np.node); !ok || !slices.Contains(np.bad, port) {
			explained = false
		}
	}
	return explained
}

// onPort are the node's checks whose own side of the rail is port: the
// evidence a bad-port finding cites and reads counters from.
func (np *nodePorts) onPort(port string) []Check {
	var out []Check
	for _, c := range np.checks {
		if lp, ok := localPort(c, np.node); ok && lp == port {
			out = append(out, c)
		}
	}
	return out
}

// badPortFinding blames one of the node's ports: it failed with every
// partner there and passed with them on the node's good ports.
func (ev *variantEvidence) badPortFinding(variant string, np *nodePorts, port string) Finding {
	n := np.node
	var failedWith, passedWith []string
	var ids []string
	for p := range np.byPort[port] {
		failedWith = append(failedWith, p)
	}
	for _, g := range np.good {
		for p := range np.byPort[g] {
			passedWith = locUnion(passedWith, []string{p})
		}
	}
	onPort := np.onPort(port)
	for _, c := range onPort {
		if locFailing(c.Status) {
			ids = locUnion(ids, []string{c.ID})
		}
	}
	sort.Strings(failedWith)
	f := Finding{Kind: BadPort, Variant: variant, Nodes: []string{n}, Rail: port,
		PartnersFailed: len(failedWith), PartnersPassed: len(passedWith), FailedWith: failedWith, PassedWith: passedWith, Checks: ids,
		Explanation: fmt.Sprintf("%s failed with all %d partners on rail %s and passed on %s with %s: %s",
			n, len(failedWith), port, strings.Join(np.good, ", "), locPartners(passedWith), portSuspect(ev.loopbackStatus(n, port), port))}
	sides := counterSides(onPort)
	f.withCounters(sides, portCountersNote(n, port, failedWith, sides))
	return f
}

// portSuspect names what to replace on a bad port: the port's own loopback
// verdict, when measured, tells the HCA side from the cable/switch side.
func portSuspect(loopback Status, port string) string {
	switch loopback {
	case Fail:
		return fmt.Sprintf("its loopback on %s failed too: suspect its %s port (HCA side), not the fabric", port, port)
	case Pass:
		return fmt.Sprintf("its loopback on %s passed: suspect its %s cable or switch port, not the fabric", port, port)
	}
	return fmt.Sprintf("suspect its %s port/cable/switch port, not the fabric", port)
}

// badNodeFinding blames the node as a whole: its ports do not explain the
// failure (every rail failed, a rail failed with some partners only, or
// the failing checks carry no rail).
func (ev *variantEvidence) badNodeFinding(variant string, np *nodePorts, partners []string) Finding {
	n := np.node
	f := Finding{Kind: BadNode, Variant: variant, Nodes: []string{n}, PartnersFailed: len(partners),
		FailedWith: append([]string(nil), partners...), Checks: locFailingIDs(np.checks)}
	var where string
	where, f.Rail = np.badNodeWhere(f.Checks)
	f.Explanation = fmt.Sprintf("%s failed with all %d partners (%s)%s: %s", n, len(partners), strings.Join(partners, ", "), where, nodeSuspect(ev.loopbackStatus(n, "")))
	if sides := counterSides(np.checks); len(sides) > 0 {
		f.withCounters(sides, "; port counters rose on: "+countersText(sides))
	}
	return f
}

// badNodeWhere says on which of a bad node's rails it failed, so an
// operator sees whether it is every rail or a partial pattern no single
// port explains; rail is the failing ports for the finding's Rail (empty
// when every rail or no rail failed). ids are the failing checks, named
// when only unrailed checks failed.
func (np *nodePorts) badNodeWhere(ids []string) (where, rail string) {
	switch {
	case len(np.names) == 0:
		return "", ""
	case len(np.bad) == len(np.names):
		return fmt.Sprintf(" on every rail (%s)", strings.Join(np.names, ", ")), ""
	}
	var parts, failed []string
	for _, port := range np.names {
		if nf := locFailedCount(np.byPort[port]); nf > 0 {
			failed = append(failed, port)
			parts = append(parts, fmt.Sprintf("%s with %d of %d", port, nf, len(np.byPort[port])))
		}
	}
	rail = strings.Join(failed, ", ")
	if len(failed) == 0 { // only checks without a rail failed
		return fmt.Sprintf(" in %s, which carry no rail; its rails passed (%s)", strings.Join(ids, ", "), strings.Join(np.names, ", ")), rail
	}
	where = ", on " + strings.Join(parts, ", ")
	if len(np.good) > 0 {
		where += "; passed on " + strings.Join(np.good, ", ")
	}
	return where, rail
}

// nodeSuspect names what to look at on a bad node: its loopback verdict,
// when measured, tells the node itself from its cables and switch ports.
func nodeSuspect(loopback Status) string {
	switch loopback {
	case Fail:
		return "its loopback failed too: suspect the node itself (HCA, driver, configuration), not the fabric"
	case Pass:
		return "its loopback passed: suspect its cables or switch ports, not its HCA or the rest of the fabric"
	}
	return "suspect the node (HCA, driver, configuration, cabling), not the fabric"
}

// localPort is node n's side of the check's rail label "client→server":
// the left side when n is the client (Nodes[0]), the right side when it is
// the server (Nodes[1]). A check without a rail, or with a side that is no
// port ("(no peer rail)"), has none.
func localPort(c Check, n string) (string, bool) {
	l, r, ok := strings.Cut(c.Rail, "→")
	if !ok || l == "" || r == "" || strings.HasPrefix(l, "(") || strings.HasPrefix(r, "(") {
		return "", false
	}
	if c.Nodes[0] == n {
		return l, true
	}
	return r, true
}

// loopbackStatus is node n's loopback verdict (on port, when named: the
// loopback checks whose rail has port on either side): Fail when any
// failed, Pass when all passed, "" when none was measured.
func (ev *variantEvidence) loopbackStatus(n, port string) Status {
	var st Status
	for _, c := range ev.loopback[n] {
		if port != "" {
			l, r, ok := strings.Cut(c.Rail, "→")
			if !ok || (l != port && r != port) {
				continue
			}
		}
		if locFailing(c.Status) {
			return Fail
		}
		st = Pass
	}
	return st
}

// loopbackNote is "; n's loopback passed" (or failed too), when measured.
func (ev *variantEvidence) loopbackNote(n string) string {
	switch ev.loopbackStatus(n, "") {
	case Fail:
		return "; " + n + "'s loopback failed too"
	case Pass:
		return "; " + n + "'s loopback passed"
	}
	return ""
}

// locFailingRails are the distinct rail labels of the failing checks.
func locFailingRails(cs []Check) []string {
	var out []string
	for _, c := range cs {
		if locFailing(c.Status) && c.Rail != "" {
			out = locUnion(out, []string{c.Rail})
		}
	}
	return out
}

func locFailingIDs(cs []Check) []string {
	var out []string
	for _, c := range cs {
		if locFailing(c.Status) {
			out = locUnion(out, []string{c.ID})
		}
	}
	return out
}

func locOnRails(rails []string) string {
	switch len(rails) {
	case 0:
		return ""
	case 1:
		return " on rail " + rails[0]
	}
	return " on rails " + strings.Join(rails, ", ")
}

// partnerList is "1 partner (a)" or "3 partners (a, b, c)".
func locPartners(ps []string) string {
	s := "partners"
	if len(ps) == 1 {
		s = "partner"
	}
	return fmt.Sprintf("%d %s (%s)", len(ps), s, strings.Join(ps, ", "))
}

// union is the sorted set of a and b.
func locUnion(a, b []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range append(append([]string(nil), a...), b...) {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	sort.Strings(out)
	return out
}

func locWithout(ss []string, x string) []string {
	var out []string
	for _, s := range ss {
		if s != x {
			out = append(out, s)
		}
	}
	return out
}
