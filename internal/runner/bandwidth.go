package runner

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/rdmasuite/rdmasuite/internal/pairing"
	"github.com/rdmasuite/rdmasuite/internal/verdict"
	"github.com/rdmasuite/rdmasuite/reports"
	"github.com/rdmasuite/rdmasuite/thresholds"
	"github.com/rdmasuite/rdmasuite/workloads/bw"
	"github.com/rdmasuite/rdmasuite/workloads/probeout"
)

// BWPort is the TCP port of the bandwidth probe's out-of-band exchange.
const BWPort = 18515

// pairedNodes selects the variant's nodes for a pair feature whose checks
// are ids (one per op): a not-advertising row per id for each node without
// the resource, and the pairing rounds of those with it. done: the rows
// are all the feature has (the nodes could not be listed, the variant's
// prerequisite is missing, or no pair can be formed; loopback lets one
// node stand as its own pair).
func (r *Runner) pairedNodes(ctx context.Context, v Variant, ids []string, loopback bool) (with []corev1.Node, rounds [][]pairing.Pair, out []reports.Check, done bool) {
	perID := func(mk func(id string) reports.Check) []reports.Check {
		var cs []reports.Check
		for _, id := range ids {
			cs = append(cs, mk(id))
		}
		return cs
	}
	nodes, err := r.SelectedNodes(ctx)
	if err != nil {
		return nil, nil, perID(func(id string) reports.Check {
			return reports.Check{ID: id, Variant: v.Label, Status: reports.Error, Reason: err.Error()}
		}), true
	}
	if why := Prerequisite(r.Kube, v); why != "" {
		return nil, nil, perID(func(id string) reports.Check { return NotRun(id, v.Label, why, nodeNames(nodes)...) }), true
	}
	with, without := SplitAdvertising(nodes, v.Resource)
	for _, n := range without {
		for _, id := range ids {
			out = append(out, NotAdvertising(id, v.Label, n, v.Resource))
		}
	}
	names := nodeNames(with)
	rounds, err = pairing.Schedule(names, r.Cfg.Pairing)
	if err != nil && loopback && len(names) == 1 {
		rounds, err = nil, nil // one node and --loopback: the same-node pair is the whole test
	}
	if err != nil {
		return with, nil, append(out, perID(func(id string) reports.Check {
			return NotRun(id, v.Label, fmt.Sprintf("%v: nodes advertising %s: %v", err, v.Resource, names), names...)
		})...), true
	}
	return with, rounds, out, false
}

// nodeRows are a node's rows built from what its pairs' probes saw:
// bandwidth/ports (with the RDMA netns mode the pods read), and for the
// hostdev variant bandwidth/isolation.
func (r *Runner) nodeRows(v Variant, n corev1.Node, seen *railsSeen) []reports.Check {
	sets, ok := seen.get(n.Name)
	sights := seen.getSights(n.Name)
	c := r.portsCheck(v, n, sets, ok)
	if mode := verdict.ModeEvidence(sights); mode != "" {
		c.Evidence = append(c.Evidence, mode)
	}
	out := []reports.Check{c}
	if v.Netdev != "" {
		out = append(out, verdict.Isolation(v.Label, n.Name, v.Netdev, sights))
	}
	return out
}

// railsSeen keeps, per node, every distinct set of rails its readable
// probe outputs listed (in the order first seen: pods of one node should
// all see the same ports), and what every readable output saw of the
// node's RDMA devices.
type railsSeen struct {
	sync.Mutex
	m      map[string][][]bw.Rail
	sights map[string][]verdict.Sight
}

// record keeps what a pair's two probes saw.
func (s *railsSeen) record(p pairing.Pair, res verdict.BWResult) {
	s.add(p.Client, res.ClientRails)
	s.add(p.Server, res.ServerRails)
	s.addSight(p.Client, res.ClientSight)
	s.addSight(p.Server, res.ServerSight)
}

func newRailsSeen() railsSeen {
	return railsSeen{m: map[string][][]bw.Rail{}, sights: map[string][]verdict.Sight{}}
}

func (s *railsSeen) addSight(node string, sight *verdict.Sight) {
	if sight == nil {
		return
	}
	s.Lock()
	defer s.Unlock()
	s.sights[node] = append(s.sights[node], *sight)
}

// getSights returns the node's sights ordered by pod name (pairs finish in
// any order).
func (s *railsSeen) getSights(node string) []verdict.Sight {
	s.Lock()
	defer s.Unlock()
	out := append([]verdict.Sight(nil), s.sights[node]...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].Pod < out[j].Pod })
	return out
}

func (s *railsSeen) add(node string, rails []bw.Rail) {
	if rails == nil {
		return
	}
	s.Lock()
	defer s.Unlock()
	key := strings.Join(portNames(rails), ",")
	for _, seen := range s.m[node] {
		if strings.Join(portNames(seen), ",") == key {
			return
		}
	}
	s.m[node] = append(s.m[node], rails)
}

func (s *railsSeen) get(node string) ([][]bw.Rail, bool) {
	s.Lock()
	defer s.Unlock()
	sets, ok := s.m[node]
	return sets, ok
}

// portNames are the distinct ports (device/port) of rails, sorted: a port
// listed twice is one port.
func portNames(rails []bw.Rail) []string {
	var out []string
	for _, rl := range rails {
		out = append(out, rl.Name())
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// portsCheck compares the rails a node's pods saw with the SKU's ports per
// node: fewer is a failure naming what is there and what is missing.
func (r *Runner) portsCheck(v Variant, n corev1.Node, sets [][]bw.Rail, ok bool) reports.Check {
	c := reports.Check{ID: "bandwidth/ports", Title: "the pods see as many RDMA ports as the SKU has", Variant: v.Label, Nodes: []string{n.Name},
		Traits: &reports.Traits{Localize: true}} // a node's own evidence, as its bandwidth rows
	if !ok || len(sets) == 0 {
		c.Status, c.Reason = reports.NotRun, fmt.Sprintf("no readable bandwidth probe output from %s: its rails are unknown (see the bandwidth rows)", n.Name)
		return c
	}
	rails := sets[0]
	var found []string
	seenPort := map[string]bool{}
	for _, rl := range rails {
		if !seenPort[rl.Name()] {
			seenPort[rl.Name()] = true
			found = append(found, fmt.Sprintf("%s %s %gGb/s", rl.Name(), rl.State, rl.RateGbps))
		}
	}
	ports := len(found)
	if len(found) == 0 {
		found = []string{"none"}
	}
	c.Evidence = []string{"rails in the pod: " + strings.Join(found, ", ")}
	c.Measured = []reports.Measurement{{Name: "ports", Node: n.Name, Value: float64(ports), Unit: "ports"}}
	if r.Cfg.Device != "" || v.Netdev != "" {
		// A named device, or a hostdev pod holding its own VF: each pod
		// may see other ports by design, so neither count nor sameness
		// is judged.
		c.Status, c.Reason = reports.NotRun, "the run measured one named device (--device / --netdev), so the node's port count was not examined"
		return c
	}
	if len(sets) > 1 {
		first := portNames(sets[0])
		var differ []string
		for _, other := range sets[1:] {
			for _, p := range symmetricDiff(first, portNames(other)) {
				differ = append(differ, p+" in one pod and not in another")
			}
		}
		c.Status = reports.Fail
		c.Diagnosis = fmt.Sprintf("pods on %s saw different RDMA ports: %s (the sets: %s)", n.Name, strings.Join(slices.Compact(differ), "; "), setsText(sets))
		c.Fix = "a port that one pod sees and another does not: a device that came and went during the run (driver reload, link flap: dmesg on the node), " +
			"or a device plugin that hands pods different devices (its selectors in the NicClusterPolicy)"
		return c
	}
	sku, err := r.Cfg.Thresholds.ForNode(n.Name, n.Labels, r.Cfg.SKU)
	if err != nil {
		c.Status, c.Reason = reports.Error, err.Error()
		return c
	}
	if sku.PortsPerNode.Value == nil {
		c.Status, c.Reason = reports.Error, fmt.Sprintf("SKU %s has no portsPerNode: add it to the thresholds file", sku.Name)
		return c
	}
	want := *sku.PortsPerNode.Value
	c.Measured[0].Threshold = &reports.Threshold{Op: ">=", Value: want, Source: sku.Name + ": " + sku.PortsPerNode.Source}
	if float64(ports) < want {
		c.Status = reports.Fail
		c.Diagnosis = fmt.Sprintf("pods on %s see %d RDMA port(s) (%s), SKU %s expects %g: %g port(s) missing",
			n.Name, ports, strings.Join(found, ", "), sku.Name, want, want-float64(ports))
		c.Fix = "every rail must reach the pod: check that each HCA is bound to the driver (ibstat on the node), " +
			"and that the device plugin's selectors (NicClusterPolicy rdmaSharedDevicePlugin config: ifNames/vendors/devices) cover every HCA"
		return c
	}
	c.Status = reports.Pass
	return c
}

// symmetricDiff lists the names in exactly one of two sorted lists.
func symmetricDiff(a, b []string) []string {
	var out []string
	for _, x := range a {
		if !slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	for _, x := range b {
		if !slices.Contains(a, x) {
			out = append(out, x)
		}
	}
	return out
}

func setsText(sets [][]bw.Rail) string {
	var parts []string
	for _, s := range sets {
		parts = append(parts, "{"+strings.Join(portNames(s), ", ")+"}")
	}
	return strings.Join(parts, " and ")
}

// clientBudget bounds feature f's client run: pod start plus, per
// expected rail (rails run in sequence unless RailParallel), ops × sizes ×
// (measurement time + 30 s of setup slack). Sizes are the feature's or
// --bw-sizes', and the measurement time --bw-duration or the feature's
// own estimate, whichever is larger: a bound that only grows with what a
// feature adds (latency under load runs a stream beside its baseline).
func (r *Runner) clientBudget(sku *thresholds.SKU, f pairedFeature) time.Duration {
	rails := r.railsInSequence(sku)
	per := r.Cfg.BWDuration
	if r.Cfg.BWIters > 0 {
		per = 0
	}
	per = max(per, f.spec.PerMeasurement(r.Cfg))
	sizes := max(len(r.Cfg.BWSizes), len(f.sizes))
	return r.Cfg.PodTimeout + time.Duration(rails*len(f.ops)*sizes)*(per+30*time.Second)
}

// railsInSequence is how many rail pairs a client measures one after
// another: the SKU's ports (one with --device, --rail-parallel or no SKU),
// squared in cross mode.
func (r *Runner) railsInSequence(sku *thresholds.SKU) int {
	rails := 1
	if !r.Cfg.RailParallel && sku != nil && sku.PortsPerNode.Value != nil && r.Cfg.Device == "" {
		rails = max(1, int(*sku.PortsPerNode.Value))
	}
	if r.Cfg.RailMode == bw.RailsCross {
		rails *= rails
	}
	return rails
}

// recordBWPhases adds the client's exchange and measurement time.
func (r *Runner) recordBWPhases(logs string) {
	var o bw.ProbeOutput
	if _, err := probeout.ParseError(logs, bw.ProbeName, &o); err != nil {
		return
	}
	for _, rr := range o.Rails {
		for _, run := range rr.Runs {
			r.AddPhase(PhaseExchange, time.Duration(run.SetupSec*float64(time.Second)))
			var m float64
			for _, sr := range run.Results {
				m += sr.Local.ElapsedSec
			}
			r.AddPhase(PhaseMeasure, time.Duration(m*float64(time.Second)))
		}
	}
}

func nodeNames(nodes []corev1.Node) []string {
	out := make([]string, len(nodes))
	for i, n := range nodes {
		out[i] = n.Name
	}
	sort.Strings(out)
	return out
}
