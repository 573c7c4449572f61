package reports

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/montanaflynn/stats"
)

// Peer outliers: a port judged against its fleet, not only its floor.
//
// A floor (95 % of the link for RDMA write/read) says what a port must
// reach; it says nothing of a port that clears it while every one of its
// 2 047 peers measures several percent more: a slow transceiver, a port
// running with more FEC corrections, a switch port with a bad neighbour.
// MarkPeerOutliers compares each judged figure with the same figure of
// the other ports of its group, with robust statistics, and turns a pass
// that is far below its peers into a warn.
//
// The group: the measuring node's SKU (Run.Nodes), the check's variant,
// id and traits (a loopback is never compared with a pair), the
// measurement's name (op, size, metric: write_1MiB_avg) and unit, and the
// threshold's direction. Only judged figures (a Measurement with a
// Threshold) take part. A port's figure is the median of its figures in
// the group (a port measured with several partners counts once).
//
// The rule. With median M and median absolute deviation MAD of the
// group's port figures (the port's own included: with at least 9 ports
// one value moves the median by at most one rank, and the rule stays
// O(n log n) and independent of the order), a port is a peer outlier when
//   - the group holds at least PeerMinPorts (9) ports: the port and 8
//     peers, fewer give no fleet to compare with;
//   - its figure is below M − PeerMADs (4) × 1.4826 × MAD (1.4826 × MAD
//     estimates one standard deviation of normal noise; 4 of them leave
//     about 1 port in 16 000 of a healthy fleet above the line), and
//   - it is more than PeerMinDeviation (2 %) below M, so that a fleet
//     whose ports agree within a few Gb/s (MAD near zero) does not raise
//     a port for noise.
//
// For a lower-is-better figure (a latency in µs, a "<=" bound) both are
// reversed: above M + 4 × 1.4826 × MAD and more than 2 % above M.
//
// Why 2 % and not more: a port that passes sits between its floor and
// the fleet; with floors at 95 % of the link and healthy NDR ports at
// 97-99 %, a passing port is at most 3-4 % below the median, so a larger
// relative margin (10 %) could never fire where the floor is 90 % or
// more. 2 % is about twice perftest's run-to-run spread on one healthy
// port. Both numbers are constants here, the first to tune: a fleet with
// noisier figures raises PeerMinDeviation, a stricter operator lowers
// PeerMADs.
//
// Only a check whose status is pass becomes warn (a fail stays a fail,
// an error or not-run is no figure); its Diagnosis and Evidence name the
// figure, the peers' median and count and the rule, and Check.Peers holds
// them as data.
//
// The same statistics tell a SKU-wide shortfall (SKUShortfalls): when
// more than half of a group's ports (at least SKUShortfallMinPorts) miss
// their floor together, the verdict names the SKU's median against the
// floor (the floor is wrong, or a cause is fabric-wide) instead of each
// port as its own culprit.
const (
	PeerMinPorts     = 9
	PeerMADs         = 4.0
	PeerMinDeviation = 0.02
	// madSigma scales a MAD to a normal distribution's standard deviation.
	madSigma = 1.4826
	// SKUShortfallMinPorts: a group smaller than this never reads as a
	// SKU-wide shortfall (a few ports failing together are culprits).
	SKUShortfallMinPorts = 8
)

// PeerStat is why a check reads warn: its figure against its peers'.
type PeerStat struct {
	SKU    string  `json:"sku,omitempty"`
	Metric string  `json:"metric"` // the measurement's name, e.g. write_1MiB_avg
	Unit   string  `json:"unit"`
	Node   string  `json:"node"` // the port whose figure is out
	Port   string  `json:"port,omitempty"`
	Value  float64 `json:"value"`
	Median float64 `json:"median"` // of the group's port figures
	MAD    float64 `json:"mad"`
	Count  int     `json:"count"` // ports in the group, this one included
	// Limit is the line the figure crossed: median ∓ 4 × 1.4826 × MAD.
	Limit float64 `json:"limit"`
	// Deviation is (value − median) / median: negative below the median.
	Deviation float64 `json:"deviation"`
}

// peerKey is one group of comparable figures.
type peerKey struct {
	sku, variant, id, name, unit, op string
	traits                           Traits
}

// peerRef is one judged figure: checks[check].Measured[meas].
type peerRef struct{ check, meas int }

type peerGroup struct {
	key   peerKey
	refs  []peerRef
	ports map[portEnd][]float64
	order []portEnd
	// port is each port's figure (median of its figures).
	port          map[portEnd]float64
	median, mad   float64
	lowerBetter   bool
	floor         Threshold
	failed, total int // ports whose figure misses the floor; ports
}

// peerGroups collects the run's judged figures into their groups, with
// each group's port figures, median and MAD; in a stable order.
func peerGroups(run *Run) []*peerGroup {
	sku := make(map[string]string, len(run.Nodes))
	for _, n := range run.Nodes {
		sku[n.Name] = n.SKU
	}
	groups := map[peerKey]*peerGroup{}
	var keys []peerKey
	for i := range run.Checks {
		c := &run.Checks[i]
		// A transient's figure is the one-off its confirmation did not
		// repeat: the port's figure is the confirmation's.
		if (c.Status != Pass && c.Status != Warn && c.Status != Fail) || c.transient() {
			continue
		}
		var traits Traits
		traitsRead := false
		for j := range c.Measured {
			m := &c.Measured[j]
			t := m.Threshold
			if t == nil || (t.Op != ">=" && t.Op != "<=") || m.Node == "" || math.IsNaN(m.Value) || math.IsInf(m.Value, 0) {
				continue
			}
			// A missing figure is recorded as 0 on a failing check: no
			// figure to compare.
			if c.Status == Fail && m.Value == 0 {
				continue
			}
			if m.Unit == "bytes" && m.Value < 0 { // unlimited
				continue
			}
			if !traitsRead {
				traits, traitsRead = c.Is(), true
			}
			k := peerKey{sku: sku[m.Node], variant: c.Variant, id: c.ID, name: m.Name, unit: m.Unit, op: t.Op, traits: traits}
			g := groups[k]
			if g == nil {
				g = &peerGroup{key: k, ports: map[portEnd][]float64{}, floor: *t,
					lowerBetter: t.Op == "<=" || m.Unit == UnitMicroseconds}
				groups[k] = g
				keys = append(keys, k)
			}
			g.refs = append(g.refs, peerRef{i, j})
			e := portEnd{m.Node, m.Port}
			if _, seen := g.ports[e]; !seen {
				g.order = append(g.order, e)
			}
			g.ports[e] = append(g.ports[e], m.Value)
		}
	}
	sort.Slice(keys, func(i, j int) bool { return peerKeyLess(keys[i], keys[j]) })
	out := make([]*peerGroup, 0, len(keys))
	for _, k := range keys {
		g := groups[k]
		g.port = make(map[portEnd]float64, len(g.order))
		vals := make([]float64, 0, len(g.order))
		for _, e := range g.order {
			v := g.ports[e][0]
			if len(g.ports[e]) > 1 {
				v, _ = stats.Median(g.ports[e])
			}
			g.port[e] = v
			vals = append(vals, v)
			g.total++
			if !meets(v, k.unit, g.floor) {
				g.failed++
			}
		}
		g.median, _ = stats.Median(vals)
		g.mad, _ = stats.MedianAbsoluteDeviationPopulation(vals)
		out = append(out, g)
	}
	return out
}

func peerKeyLess(a, b peerKey) bool {
	for _, p := range [][2]string{{a.sku, b.sku}, {a.variant, b.variant}, {a.id, b.id}, {a.name, b.name}, {a.unit, b.unit}, {a.op, b.op}} {
		if p[0] != p[1] {
			return p[0] < p[1]
		}
	}
	return fmt.Sprint(a.traits) < fmt.Sprint(b.traits)
}

// limit is the line a port's figure must cross to be an outlier.
func (g *peerGroup) limit() float64 {
	if g.lowerBetter {
		return g.median + PeerMADs*madSigma*g.mad
	}
	return g.median - PeerMADs*madSigma*g.mad
}

// outlier applies the rule to one figure.
func (g *peerGroup) outlier(v float64) bool {
	if g.total < PeerMinPorts || g.median <= 0 {
		return false
	}
	dev := (v - g.median) / g.median
	if g.lowerBetter {
		return v > g.limit() && dev > PeerMinDeviation
	}
	return v < g.limit() && -dev > PeerMinDeviation
}

// MarkPeerOutliers turns every passing check whose judged figure is a
// peer outlier of its group (see the rule above) into a warn, saying why
// in its Diagnosis, Evidence and Peers. A port is an outlier when its
// figure (the median of its figures in the group) is, and each of its
// passing checks whose own figure is too reads warn. Fail, error and
// not-run checks keep their status. Calling it again changes nothing.
func MarkPeerOutliers(run *Run) {
	for _, g := range peerGroups(run) {
		if g.total < PeerMinPorts {
			continue
		}
		for _, ref := range g.refs {
			c := &run.Checks[ref.check]
			m := c.Measured[ref.meas]
			e := portEnd{m.Node, m.Port}
			// Only a pass becomes warn; a check already warn (a second
			// figure of it, a second call) keeps its first reason.
			if c.Status != Pass || !g.outlier(g.port[e]) || !g.outlier(m.Value) {
				continue
			}
			ps := &PeerStat{SKU: g.key.sku, Metric: m.Name, Unit: m.Unit, Node: m.Node, Port: m.Port, Value: m.Value,
				Median: g.median, MAD: g.mad, Count: g.total, Limit: g.limit(), Deviation: (m.Value - g.median) / g.median}
			why := peerText(g, ps, m.Threshold)
			c.Status, c.Peers = Warn, ps
			c.Diagnosis = why
			c.Evidence = append(c.Evidence, why)
			c.Fix = "nothing fails the run: look at this port before its peers: its link (mlxlink -d DEV: speed, width, FEC and BER), cable, transceiver and switch port, and its host (rdmasuite doctor); measure it again with another partner"
		}
	}
}

// peerText is a warn row's diagnosis: "peer outlier: gpu-017 mlx5_3/1
// write_1MiB_avg 384 Gb/s is 2.0 % below the median 392 Gb/s of 2048 ports
// of SKU H100/NDR-400 [shared-dev] in bandwidth/write; rule: …; it passes
// its bound (384 Gb/s >= 380 Gb/s)".
func peerText(g *peerGroup, ps *PeerStat, t *Threshold) string {
	where := ps.Node
	if ps.Port != "" {
		where += " " + ps.Port
	}
	dir, sign := "below", "−"
	if g.lowerBetter {
		dir, sign = "above", "+"
	}
	of := fmt.Sprintf("%d ports", ps.Count)
	if ps.SKU != "" {
		of += " of SKU " + ps.SKU
	}
	if g.key.variant != "" {
		of += " [" + g.key.variant + "]"
	}
	floor := ""
	if t != nil {
		floor = fmt.Sprintf("; it passes its bound (%s %s %s)", fmtVal(ps.Value, ps.Unit), t.Op, fmtVal(t.Value, ps.Unit))
	}
	return fmt.Sprintf("peer outlier: %s %s %s is %.1f %% %s the median %s of %s in %s; rule: %s median %s %g × 1.4826 × MAD (%s) = %s and more than %g %% %s it%s",
		where, ps.Metric, fmtVal(ps.Value, ps.Unit), 100*math.Abs(ps.Deviation), dir, fmtVal(ps.Median, ps.Unit), of, g.key.id,
		dir, sign, PeerMADs, fmtVal(ps.MAD, ps.Unit), fmtVal(ps.Limit, ps.Unit), 100*PeerMinDeviation, dir, floor)
}

// SKUShortfall is a group of ports that missed their floor together: more
// than half of at least SKUShortfallMinPorts ports of one SKU, variant,
// check and figure. The floor is wrong for this fleet, or a cause is
// fabric-wide (a subnet manager setting, a firmware, the spine): one
// finding, not one culprit per port.
type SKUShortfall struct {
	SKU, Variant, Check, Metric, Unit string
	Median                            float64
	Floor                             Threshold
	Failed, Ports                     int
}

// SKUShortfalls are the run's SKU-wide shortfalls, in a stable order.
func SKUShortfalls(run Run) []SKUShortfall {
	var out []SKUShortfall
	for _, g := range peerGroups(&run) {
		if g.total < SKUShortfallMinPorts || 2*g.failed <= g.total {
			continue
		}
		out = append(out, SKUShortfall{SKU: g.key.sku, Variant: g.key.variant, Check: g.key.id, Metric: g.key.name, Unit: g.key.unit,
			Median: g.median, Floor: g.floor, Failed: g.failed, Ports: g.total})
	}
	return out
}

// Text is the shortfall in one sentence, for the verdict line.
func (s SKUShortfall) Text() string {
	sku := "SKU " + s.SKU
	if s.SKU == "" {
		sku = "the nodes without a SKU"
	}
	v := ""
	if s.Variant != "" {
		v = " [" + s.Variant + "]"
	}
	return fmt.Sprintf("%s as a whole measures %s %s (median of %d ports, %d below the floor) against its floor %s %s in %s%s: the floor or a fabric-wide cause, not each port",
		sku, s.Metric, fmtVal(s.Median, s.Unit), s.Ports, s.Failed, s.Floor.Op, fmtVal(s.Floor.Value, s.Unit), s.Check, v)
}

// covers reports whether the shortfall explains check id of variant on a
// node of sku.
func (s SKUShortfall) covers(sku, variant, id string) bool {
	return s.SKU == sku && s.Variant == variant && s.Check == id
}

// withoutShortfalls drops the findings a SKU-wide shortfall explains:
// every check it names is of a shortfalling SKU, variant and check id on
// every one of its nodes. The rows keep their status (they did fail).
func withoutShortfalls(run Run, fs []Finding, short []SKUShortfall) []Finding {
	if len(short) == 0 {
		return fs
	}
	sku := make(map[string]string, len(run.Nodes))
	for _, n := range run.Nodes {
		sku[n.Name] = n.SKU
	}
	explained := func(f Finding) bool {
		if len(f.Checks) == 0 || len(f.Nodes) == 0 {
			return false
		}
		for _, n := range f.Nodes {
			for _, id := range f.Checks {
				ok := false
				for _, s := range short {
					if s.covers(sku[n], f.Variant, id) {
						ok = true
						break
					}
				}
				if !ok {
					return false
				}
			}
		}
		return true
	}
	out := fs[:0:0]
	for _, f := range fs {
		if !explained(f) {
			out = append(out, f)
		}
	}
	return out
}

// VerdictWarning is one place a warn row points at: the port a peer
// outlier names, or the nodes of any other warn check.
type VerdictWarning struct {
	Nodes   []string // the node (a peer outlier's port's node); a check's nodes
	Port    string
	Variant string
	Checks  []string // the warn check ids it stands for
	// Peer: the worst of its peer-outlier figures; nil for another warn.
	Peer *PeerStat
	// Why: a warn without a peer figure: its diagnosis.
	Why string
}

// VerdictWarnings are the run's warn rows by the place they point at. A
// peer outlier on a pair check is measured on the client, but the slow
// port may be either end: an end whose passing checks of that id are all
// warn (at least 2, with different partners) is the one named, as
// localisation names a bad port; a warn row no such end explains names
// its measured port. Sorted by node and port.
func VerdictWarnings(run Run) []VerdictWarning {
	type idv struct{ id, variant string }
	type endKey struct {
		idv
		e portEnd
	}
	warnedIDs := map[idv]bool{}
	for _, c := range run.Checks {
		if c.Status == Warn {
			warnedIDs[idv{c.ID, c.Variant}] = true
		}
	}
	if len(warnedIDs) == 0 {
		return nil
	}
	passing, warned := map[endKey]int{}, map[endKey]int{}
	for _, c := range run.Checks {
		k := idv{c.ID, c.Variant}
		if !warnedIDs[k] || !c.Status.Passing() || len(c.Nodes) != 2 || c.Nodes[0] == c.Nodes[1] {
			continue
		}
		for _, e := range checkEnds(c) {
			passing[endKey{k, e}]++
			if c.Status == Warn && c.Peers != nil {
				warned[endKey{k, e}]++
			}
		}
	}
	type wkey struct{ node, port, variant, nodes string }
	at := map[wkey]*VerdictWarning{}
	var order []wkey
	add := func(k wkey, nodes []string, c Check) {
		w := at[k]
		if w == nil {
			w = &VerdictWarning{Nodes: nodes, Port: k.port, Variant: c.Variant}
			at[k] = w
			order = append(order, k)
		}
		if !containsStr(w.Checks, c.ID) {
			w.Checks = append(w.Checks, c.ID)
		}
		if c.Peers != nil && (w.Peer == nil || math.Abs(c.Peers.Deviation) > math.Abs(w.Peer.Deviation)) {
			w.Peer = c.Peers
		}
		if c.Peers == nil && w.Why == "" {
			w.Why = c.Diagnosis
			if w.Why == "" {
				w.Why = c.Reason
			}
		}
	}
	for _, c := range run.Checks {
		if c.Status != Warn {
			continue
		}
		if c.Peers == nil {
			add(wkey{strings.Join(c.Nodes, ","), c.Rail, c.Variant, "check"}, c.Nodes, c)
			continue
		}
		named := false
		k := idv{c.ID, c.Variant}
		if len(c.Nodes) == 2 && c.Nodes[0] != c.Nodes[1] {
			for _, e := range checkEnds(c) {
				ek := endKey{k, e}
				if warned[ek] >= 2 && warned[ek] == passing[ek] {
					add(wkey{e.node, e.port, c.Variant, ""}, []string{e.node}, c)
					named = true
				}
			}
		}
		if !named {
			add(wkey{c.Peers.Node, c.Peers.Port, c.Variant, ""}, []string{c.Peers.Node}, c)
		}
	}
	out := make([]VerdictWarning, 0, len(order))
	for _, k := range order {
		w := at[k]
		sort.Strings(w.Checks)
		out = append(out, *w)
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if x, y := strings.Join(a.Nodes, ","), strings.Join(b.Nodes, ","); x != y {
			return natLess(x, y)
		}
		if a.Port != b.Port {
			return natLess(a.Port, b.Port)
		}
		return a.Variant < b.Variant
	})
	return out
}

// Text is the warning in a few words: "port mlx5_3/1 on node gpu-017
// (peer outlier in bandwidth/write: write_1MiB_avg 384 Gb/s, 2.0 % below
// the median 392 Gb/s of 2048 ports)".
func (w VerdictWarning) Text(withVariant bool) string {
	where := "node " + strings.Join(w.Nodes, ", ")
	if w.Port != "" && w.Peer != nil {
		where = "port " + w.Port + " on node " + w.Nodes[0]
	} else if w.Port != "" {
		where = strings.Join(w.Checks, ", ") + " {" + w.Port + "} on " + strings.Join(w.Nodes, ", ")
	}
	v := ""
	if withVariant && w.Variant != "" {
		v = " [" + w.Variant + "]"
	}
	if p := w.Peer; p != nil {
		dir := "below"
		if p.Deviation > 0 {
			dir = "above"
		}
		return fmt.Sprintf("%s (peer outlier%s in %s: %s %s, %.1f %% %s the median %s of %d ports)",
			where, v, strings.Join(w.Checks, ", "), p.Metric, fmtVal(p.Value, p.Unit), 100*math.Abs(p.Deviation), dir, fmtVal(p.Median, p.Unit), p.Count)
	}
	why := w.Why
	if why == "" {
		why = "see its row"
	}
	return fmt.Sprintf("%s (warn%s: %s)", where, v, why)
}

// warningsText is "warning: A" or "warnings: A; B; C; and 4 more"; ""
// when there is none.
func warningsText(ws []VerdictWarning) string {
	mixed := false
	for _, w := range ws {
		mixed = mixed || w.Variant != ws[0].Variant
	}
	texts := make([]string, 0, min(len(ws), maxVerdictCulprits))
	for _, w := range ws[:min(len(ws), maxVerdictCulprits)] {
		texts = append(texts, w.Text(mixed))
	}
	return verdictList("warning", texts, len(ws))
}

// shortfallsText is "SKU-wide: A; B" (at most maxVerdictCulprits, then
// how many more); "" when there is none.
func shortfallsText(ss []SKUShortfall) string {
	if len(ss) == 0 {
		return ""
	}
	var parts []string
	for _, s := range ss[:min(len(ss), maxVerdictCulprits)] {
		parts = append(parts, s.Text())
	}
	if n := len(ss) - maxVerdictCulprits; n > 0 {
		parts = append(parts, fmt.Sprintf("and %d more", n))
	}
	return "SKU-wide: " + strings.Join(parts, "; ")
}

// verdictParts is what the verdict line and the banners name, computed
// once per rendering: the localisation's findings (all), those a SKU-wide
// shortfall does not explain (fs), the shortfalls and the warnings.
type verdictParts struct {
	all, fs []Finding
	short   []SKUShortfall
	warns   []VerdictWarning
}

func verdictOf(r Run) verdictParts {
	all := Localize(r)
	short := SKUShortfalls(r)
	return verdictParts{all: all, fs: withoutShortfalls(r, all, short), short: short, warns: VerdictWarnings(r)}
}
