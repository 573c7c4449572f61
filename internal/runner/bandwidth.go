package runner

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/rdmasuite/rdmasuite/internal/pairing"
	"github.com/rdmasuite/rdmasuite/internal/podrun"
	"github.com/rdmasuite/rdmasuite/internal/verdict"
	"github.com/rdmasuite/rdmasuite/reports"
	"github.com/rdmasuite/rdmasuite/thresholds"
	"github.com/rdmasuite/rdmasuite/workloads/bw"
	"github.com/rdmasuite/rdmasuite/workloads/probeout"
)

// BWPort is the TCP port of the bandwidth probe's out-of-band exchange.
const BWPort = 18515

// Bandwidth measures every selected node of the variant: paired pods (ring
// or all pairs, plus same-node pairs with Loopback), every rail of every
// pod, every op and size. Every selected node ends with rows: measured
// rails, a failing row when it does not advertise the resource, and a
// bandwidth/ports row comparing the rails its pods saw with the SKU; with
// the hostdev variant also a bandwidth/isolation row saying whether its
// pods saw only their own RDMA device.
func (r *Runner) Bandwidth(ctx context.Context, v Variant) []reports.Check {
	var ids []string
	for _, op := range r.Cfg.BWOps {
		ids = append(ids, "bandwidth/"+op)
	}
	with, rounds, out, done := r.pairedNodes(ctx, v, ids, r.Cfg.Loopback)
	if done {
		return out
	}
	names := nodeNames(with)
	byName := map[string]corev1.Node{}
	for _, n := range with {
		byName[n.Name] = n
	}
	seen := newRailsSeen()
	for _, round := range rounds {
		out = append(out, r.Collect(len(round), func(i int) []reports.Check {
			p := round[i]
			return r.pair(ctx, v, p, byName[p.Client], &seen)
		})...)
	}
	if r.Cfg.Loopback {
		out = append(out, r.Collect(len(names), func(i int) []reports.Check {
			n := names[i]
			cs := r.pair(ctx, v, pairing.Pair{Server: n, Client: n}, byName[n], &seen)
			for j := range cs {
				cs[j].ID += "/loopback"
			}
			return cs
		})...)
	}
	for _, n := range with {
		out = append(out, r.nodeRows(v, n, &seen)...)
	}
	return out
}

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
	rails, ok := seen.get(n.Name)
	sights := seen.getSights(n.Name)
	c := r.portsCheck(v, n, rails, ok)
	if mode := verdict.ModeEvidence(sights); mode != "" {
		c.Evidence = append(c.Evidence, mode)
	}
	out := []reports.Check{c}
	if v.Netdev != "" {
		out = append(out, verdict.Isolation(v.Label, n.Name, v.Netdev, sights))
	}
	return out
}

// railsSeen keeps, per node, the rails the first readable probe output
// of that node listed, and what every readable output saw of the node's
// RDMA devices.
type railsSeen struct {
	sync.Mutex
	m      map[string][]bw.Rail
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
	return railsSeen{m: map[string][]bw.Rail{}, sights: map[string][]verdict.Sight{}}
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
	if _, ok := s.m[node]; !ok {
		s.m[node] = rails
	}
}

func (s *railsSeen) get(node string) ([]bw.Rail, bool) {
	s.Lock()
	defer s.Unlock()
	rails, ok := s.m[node]
	return rails, ok
}

// portsCheck compares the rails a node's pods saw with the SKU's ports per
// node: fewer is a failure naming what is there and what is missing.
func (r *Runner) portsCheck(v Variant, n corev1.Node, rails []bw.Rail, ok bool) reports.Check {
	c := reports.Check{ID: "bandwidth/ports", Title: "the pods see as many RDMA ports as the SKU has", Variant: v.Label, Nodes: []string{n.Name}}
	if !ok {
		c.Status, c.Reason = reports.NotRun, fmt.Sprintf("no readable bandwidth probe output from %s: its rails are unknown (see the bandwidth rows)", n.Name)
		return c
	}
	var found []string
	for _, rl := range rails {
		found = append(found, fmt.Sprintf("%s %s %gGb/s", rl.Name(), rl.State, rl.RateGbps))
	}
	if len(found) == 0 {
		found = []string{"none"}
	}
	c.Evidence = []string{"rails in the pod: " + strings.Join(found, ", ")}
	c.Measured = []reports.Measurement{{Name: "ports", Node: n.Name, Value: float64(len(rails)), Unit: "ports"}}
	if r.Cfg.Device != "" || v.Netdev != "" {
		c.Status, c.Reason = reports.NotRun, "the run measured one named device (--device / --netdev), so the node's port count was not examined"
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
	if float64(len(rails)) < want {
		c.Status = reports.Fail
		c.Diagnosis = fmt.Sprintf("pods on %s see %d RDMA port(s) (%s), SKU %s expects %g: %g port(s) missing",
			n.Name, len(rails), strings.Join(found, ", "), sku.Name, want, want-float64(len(rails)))
		c.Fix = "every rail must reach the pod: check that each HCA is bound to the driver (ibstat on the node), " +
			"and that the device plugin's selectors (NicClusterPolicy rdmaSharedDevicePlugin config: ifNames/vendors/devices) cover every HCA"
		return c
	}
	c.Status = reports.Pass
	return c
}

// pair runs one server pod and one client pod, judges them, and deletes
// both before it returns.
func (r *Runner) pair(ctx context.Context, v Variant, p pairing.Pair, client corev1.Node, seen *railsSeen) []reports.Check {
	in := verdict.BWInput{Variant: v.Label, Resource: v.Resource, Network: v.Network, Ops: r.Cfg.BWOps,
		Sizes: r.Cfg.BWSizes, RailMode: r.Cfg.RailMode, OneRail: r.Cfg.Device != "" || v.Netdev != ""}
	in.SKU, in.SKUErr = r.Cfg.Thresholds.ForNode(p.Client, client.Labels, r.Cfg.SKU)
	r.runPair(ctx, v, p, &in, hostMemory)
	res := verdict.Bandwidth(in)
	seen.record(p, res)
	return res.Checks
}

// runPair runs one pair with its buffers in mem (host memory for the
// bandwidth feature, GPU memory for gpudirect) and fills in's sides.
func (r *Runner) runPair(ctx context.Context, v Variant, p pairing.Pair, in *verdict.BWInput, mem bwMemory) {
	srvArgs := append(append([]string{"bw", "server", "--port", strconv.Itoa(BWPort), "--timeout", "2m"}, r.DeviceArgs(v)...), mem.args()...)
	srvSpec := mem.spec(r.Spec(v, r.Object(mem.prefix+"-"+v.Name+"-s", p.Server, p.Client, v.Resource), p.Server, srvArgs, v.NeedsCaps))
	in.Server = verdict.Side{Node: p.Server, Pod: srvSpec.Name, Command: "rdmaprobe " + strings.Join(srvArgs, " ")}
	in.Client = verdict.Side{Node: p.Client, Pod: r.Object(mem.prefix+"-"+v.Name+"-c", p.Client, p.Server, v.Resource)}

	srv, srvStart, err := podrun.Start(ctx, r.Kube, srvSpec, r.Cfg.PodTimeout)
	if srv != nil && !srvSpec.Keep {
		defer podrun.Delete(r.Kube, srvSpec.Namespace, srvSpec.Name)
	}
	if err != nil {
		in.Server.PodErr = err
		return
	}
	r.AddPhase(PhasePodStart, srvStart)
	cliArgs := append(append([]string{"bw", "client", "--port", strconv.Itoa(BWPort), "--op", strings.Join(in.Ops, ","),
		"--size", sizesArg(in.Sizes)}, r.DeviceArgs(v)...), mem.args()...)
	cliArgs = append(cliArgs, "--rails", r.Cfg.RailMode, "--timeout", "1m")
	if r.Cfg.RailParallel {
		cliArgs = append(cliArgs, "--rail-parallel")
	}
	switch {
	case mem.latency:
		// One operation at a time on one QP (--latency sets depth and
		// moderation), perftest's iteration count.
		cliArgs = append(cliArgs, "--iters", strconv.Itoa(r.Cfg.LatIters))
	case mem.msgrate:
		// perftest's message-rate run: tx depth 128, a completion every
		// 100 posts (the probe's defaults), iteration mode.
		cliArgs = append(cliArgs, "--qps", strconv.Itoa(r.Cfg.MsgRateQPs), "--iters", strconv.Itoa(r.Cfg.MsgRateIters))
	case r.Cfg.BWIters > 0:
		cliArgs = append(cliArgs, "--qps", strconv.Itoa(r.Cfg.BWQPs), "--iters", strconv.Itoa(r.Cfg.BWIters))
	default:
		cliArgs = append(cliArgs, "--qps", strconv.Itoa(r.Cfg.BWQPs), "--duration", r.Cfg.BWDuration.String())
	}
	cliArgs = append(cliArgs, srv.Status.PodIP)
	in.Client.Command = "rdmaprobe " + strings.Join(cliArgs, " ")
	cres, err := podrun.Run(ctx, r.Kube, mem.spec(r.Spec(v, in.Client.Pod, p.Client, cliArgs, v.NeedsCaps)), r.clientBudget(in.SKU, len(in.Ops)))
	in.Client.Logs, in.Client.Exit = cres.Logs, cres.ExitCode
	if err != nil {
		in.Client.PodErr = err
	}
	r.AddPhase(PhasePodStart, cres.StartLatency)
	r.AddPhase(PhaseCollection, cres.Collect)
	// A client that measured sent the server its finish: the server ends
	// at once. One that failed may not have: give the server a short while
	// to write what it saw, and judge the client's output either way.
	serverWait := time.Minute
	if cres.ExitCode != 0 || err != nil {
		serverWait = 15 * time.Second
	}
	collectStart := time.Now()
	sres, err := podrun.Wait(ctx, r.Kube, srv, serverWait)
	in.Server.Logs, in.Server.Exit = sres.Logs, sres.ExitCode
	if err != nil {
		in.Server.WaitErr = err
		if in.Server.Logs == "" {
			in.Server.Logs, _ = podrun.Logs(context.WithoutCancel(ctx), r.Kube, r.Namespace(), srvSpec.Name)
		}
	}
	r.AddPhase(PhaseCollection, time.Since(collectStart))
	r.recordBWPhases(in.Client.Logs)
}

// clientBudget bounds the client pod: pod start plus, per expected rail
// (rails run in sequence unless RailParallel), ops × sizes × (measurement
// time + 30 s of setup slack).
func (r *Runner) clientBudget(sku *thresholds.SKU, ops int) time.Duration {
	rails := 1
	if !r.Cfg.RailParallel && sku != nil && sku.PortsPerNode.Value != nil && r.Cfg.Device == "" {
		rails = max(1, int(*sku.PortsPerNode.Value))
	}
	if r.Cfg.RailMode == bw.RailsCross {
		rails *= rails
	}
	per := r.Cfg.BWDuration
	if r.Cfg.BWIters > 0 {
		per = 0
	}
	return r.Cfg.PodTimeout + time.Duration(rails*ops*len(r.Cfg.BWSizes))*(per+30*time.Second)
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
