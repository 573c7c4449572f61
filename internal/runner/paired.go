package runner

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/rdmasuite/rdmasuite/internal/pairing"
	"github.com/rdmasuite/rdmasuite/internal/podrun"
	"github.com/rdmasuite/rdmasuite/internal/verdict"
	"github.com/rdmasuite/rdmasuite/reports"
	"github.com/rdmasuite/rdmasuite/workloads/bw"
	"github.com/rdmasuite/rdmasuite/workloads/probeout"
)

// pairedFeature is a paired feature as this run runs it: its definition
// and what the run's flags make of it.
type pairedFeature struct {
	spec  PairedSpec
	ids   []string // its check ids, one per op
	ops   []string
	sizes []int
	mem   bwMemory
}

func (r *Runner) pairedFeature(name string) pairedFeature {
	spec, err := PairedSpecOf(name)
	if err != nil {
		panic(err) // the plan holds names of pairedSpecs only
	}
	f := pairedFeature{spec: spec, ops: spec.Ops(r.Cfg), sizes: spec.Sizes(r.Cfg), mem: spec.Memory(r.Cfg)}
	for _, op := range f.ops {
		f.ids = append(f.ids, name+"/"+op)
	}
	return f
}

// pairedNodesOf selects a feature's nodes and pairs: the bandwidth
// feature's selection (with its same-node pairs under --loopback) for the
// host-memory features, GPU nodes only for gpudirect.
func (r *Runner) pairedNodesOf(ctx context.Context, v Variant, f pairedFeature) (with []corev1.Node, rounds [][]pairing.Pair, rows []reports.Check, done bool) {
	if !f.spec.GPUNodes {
		return r.pairedNodes(ctx, v, f.ids, f.spec.NodeRows && r.Cfg.Loopback)
	}
	usable, rows, done := r.gpuNodes(ctx, v, f.ids)
	if done {
		return nil, nil, rows, true
	}
	nodes := nodeNames(usable)
	rounds, err := pairing.Schedule(nodes, r.Cfg.Pairing)
	if len(nodes) < 2 {
		err = fmt.Errorf("a GPUDirect pair needs at least 2 GPU nodes, have %d", len(nodes))
	}
	if err != nil {
		for _, id := range f.ids {
			rows = append(rows, NotRun(id, v.Label, fmt.Sprintf("%v: GPU nodes that advertise %s: %v", err, v.Resource, nodes), nodes...))
		}
		return usable, nil, rows, true
	}
	return usable, rounds, rows, false
}

// sharedPair is one node pair's pods and the features that ride in them.
type sharedPair struct {
	p        pairing.Pair
	feats    []string
	loopback bool   // a same-node pair (bandwidth --loopback): its checks get /loopback
	round    string // reports.RoundConfirmation in the confirmation round
}

// pairGroups merges the features' rounds: a node pair that several
// features pair up is one sharedPair carrying them all. Groups run one
// after another, the pairs of a group at the same time (a feature's
// rounds keep their order; pairs only one feature has, such as gpudirect's
// on a subset of the nodes, come in groups of their own after the shared
// ones, so no group holds two pairs that the features' own rounds kept
// apart). Same-node pairs are the last group.
func pairGroups(order []string, rounds map[string][][]pairing.Pair, loopFeature string, loopback []string) [][]sharedPair {
	var groups [][]sharedPair
	where := map[pairing.Pair][2]int{}
	for _, name := range order {
		var extra [][]sharedPair
		for _, round := range rounds[name] {
			var g []sharedPair
			for _, p := range round {
				if at, ok := where[p]; ok {
					sp := &groups[at[0]][at[1]]
					sp.feats = append(sp.feats, name)
					continue
				}
				g = append(g, sharedPair{p: p, feats: []string{name}})
			}
			if len(g) > 0 {
				extra = append(extra, g)
			}
		}
		for _, g := range extra {
			for i, sp := range g {
				where[sp.p] = [2]int{len(groups), i}
			}
			groups = append(groups, g)
		}
	}
	if len(loopback) > 0 {
		var g []sharedPair
		for _, n := range loopback {
			g = append(g, sharedPair{p: pairing.Pair{Server: n, Client: n}, feats: []string{loopFeature}, loopback: true})
		}
		groups = append(groups, g)
	}
	return groups
}

// PlanLine says how the paired features of a variant share their pods:
// what rides together, how many pods start, and how many separate pods
// per feature would have started.
func PlanLine(variant string, groups [][]sharedPair) string {
	pairs, separate, riding := groupCounts(groups)
	pods := 2 * pairs
	if len(riding) < 2 {
		return fmt.Sprintf("plan [%s]: %s in its own pods: %d pair(s), %d pod starts", variant, strings.Join(riding, ", "), pairs, pods)
	}
	return fmt.Sprintf("plan [%s]: %s share one server/client pod pair per node pair: %d pair(s), %d pod starts (%d with a pod pair per feature)",
		variant, strings.Join(riding, ", "), pairs, pods, separate)
}

// groupCounts are the groups' pairs, the pods a pod pair per pair and
// feature would start, and the features riding, in order.
func groupCounts(groups [][]sharedPair) (pairs, separate int, riding []string) {
	for _, g := range groups {
		for _, sp := range g {
			pairs++
			separate += 2 * len(sp.feats)
			for _, f := range sp.feats {
				if !slices.Contains(riding, f) {
					riding = append(riding, f)
				}
			}
		}
	}
	return pairs, separate, riding
}

// runPaired runs a variant's paired schedule and returns each
// one's checks: its own rows (nodes without the resource, no pair), every
// pair's judged checks, and for the feature that owns the node rows
// (NodeRows) the same-node pairs and the per-node ports/isolation rows.
func (r *Runner) runPaired(ctx context.Context, v Variant, sch pairedSchedule) map[string][]reports.Check {
	out, byName, groups := sch.rows, sch.byName, sch.groups
	var mode handoffMode
	if len(groups) > 0 {
		mode = r.pairStartMode(ctx)
	}
	if r.Progress != nil && len(groups) > 0 {
		if mode.nodePods {
			r.Progress(nodePodPlanLine(v.Label, groups))
		} else {
			r.Progress(PlanLine(v.Label, groups))
		}
		if mode.line != "" && !r.handoffSaid.Swap(true) {
			r.Progress(mode.line)
		}
	}
	var np *nodePods
	if mode.nodePods {
		np = r.startNodePods(ctx, v, sch)
		defer r.deleteNodePods(np)
		// After the rounds, while the pods still stand: the memlock
		// probe, when the plan has it, in the same pods.
		if sch.memlock {
			defer r.memlockInNodePods(ctx, v, np, byName)
		}
	}
	seen := newRailsSeen()
	rp := &roundProgress{rounds: len(groups), start: time.Now()}
	for _, g := range groups {
		rp.total += len(g)
	}
	for gi, g := range groups {
		rp.round = gi + 1
		r.runGroup(ctx, v, sch, g, np, &seen, rp, out)
	}
	if r.Cfg.Confirm && ctx.Err() == nil {
		r.confirm(ctx, v, sch, np, &seen, rp, out)
	}
	for _, n := range sch.rowNodes {
		out[sch.rowFeature] = append(out[sch.rowFeature], r.nodeRows(v, n, &seen)...)
	}
	return out
}

// runGroup runs one round's pairs at the same time and adds each pair's
// checks to out, per feature; round marks the checks (Check.Round: ""
// for the run's own rounds).
func (r *Runner) runGroup(ctx context.Context, v Variant, sch pairedSchedule, g []sharedPair, np *nodePods, seen *railsSeen, rp *roundProgress, out map[string][]reports.Check) {
	feats, byName := sch.feats, sch.byName
	per := make([]map[string][]reports.Check, len(g))
	r.collect(len(g), func(i int) []reports.Check {
		start := time.Now()
		sp := g[i]
		runs := make([]pairRun, len(sp.feats))
		for j, name := range sp.feats {
			f := feats[name]
			in := &verdict.BWInput{Variant: v.Label, Resource: v.Resource, Network: v.Network, Ops: f.ops,
				Sizes: f.sizes, RailMode: r.Cfg.RailMode, OneRail: r.Cfg.Device != "" || v.Netdev != ""}
			if v.Netdev == "" {
				in.Device = r.Cfg.Device // hostdev's --netdev picks the device, never --device
			}
			in.SKU, in.SKUErr = r.Cfg.Thresholds.ForNode(sp.p.Client, byName[sp.p.Client].Labels, r.Cfg.SKU)
			runs[j] = pairRun{feature: f, in: in}
		}
		if np != nil {
			r.runPairInNodePods(ctx, v, sp, runs, np)
		} else {
			r.runPair(ctx, v, sp.p, runs)
		}
		per[i] = map[string][]reports.Check{}
		var all []reports.Check
		for _, run := range runs {
			res := run.feature.spec.Judge(*run.in)
			if run.feature.spec.NodeRows && sp.round == "" {
				seen.record(sp.p, res)
			}
			// The op checks, then the link checks of the same rail
			// pairs (the port counters stayed clean).
			cs := append(res.Checks, res.LinkChecks...)
			for k := range cs {
				if sp.loopback {
					cs[k] = asLoopback(cs[k])
				}
				cs[k].Duration = time.Since(start).Seconds()
				cs[k].Round = sp.round
				if run.lost != nil && !cs[k].Status.Passing() {
					cs[k].Lost = run.lost
				}
			}
			per[i][run.feature.spec.Name] = cs
			all = append(all, cs...)
		}
		return all
	}, rp)
	for i := range g {
		for _, name := range g[i].feats {
			out[name] = append(out[name], per[i][name]...)
		}
	}
}

// pairRun is one feature's run in a pair's pods, and the input its
// verdict reads.
type pairRun struct {
	feature pairedFeature
	in      *verdict.BWInput
	// lost: the pod or node lost before or during the pair (node pods'
	// watch), put on its checks (reports.Check.Lost).
	lost *reports.Loss
}

// pairCommands is what a pair's two sides run: the server's probe
// arguments, the client's for a server address (and the client's time
// budget), and how the output is split between the runs.
type pairCommands struct {
	multi      bool
	names      []string // the runs' names (--run-name), in order
	prefix     string   // pod names of a pair's own pods
	mem        bwMemory // the pods' memory: the largest GPU count any run needs
	srvArgs    []string
	clientArgs func(host string) ([]string, time.Duration)
}

// pairCommands builds the pair's commands (one run: the probe's plain
// invocation; more, or framed: each run named and framed with its own exit
// status, joined by --then) and fills in each run's sides: nodes, the
// pair's own pod names and the commands a shell would run.
func (r *Runner) pairCommands(v Variant, p pairing.Pair, runs []pairRun, framed bool, port int) pairCommands {
	pc := pairCommands{multi: len(runs) > 1 || framed, prefix: runs[0].feature.mem.prefix, mem: runs[0].feature.mem}
	if len(runs) > 1 {
		pc.prefix = "pair"
	}
	for _, run := range runs[1:] {
		pc.mem.gpus = max(pc.mem.gpus, run.feature.mem.gpus)
	}
	pc.srvArgs = []string{"bw", "server"}
	for k, run := range runs {
		m := run.feature.mem
		sa := append(append([]string{"--port", strconv.Itoa(port), "--timeout", strings.TrimSuffix(serverWaitForClient.String(), "0s"), "--counters-root", hostRootMount}, r.DeviceArgs(v)...), m.args()...)
		if pc.multi {
			sa = append(sa, "--run-name", run.feature.spec.Name)
			if k > 0 {
				pc.srvArgs = append(pc.srvArgs, "--then")
			}
		}
		pc.srvArgs = append(pc.srvArgs, sa...)
		pc.names = append(pc.names, run.feature.spec.Name)
		run.in.Server = verdict.Side{Node: p.Server, Pod: r.Object(pc.prefix+"-"+v.Name+"-s", p.Server, p.Client, v.Resource)}
		run.in.Client = verdict.Side{Node: p.Client, Pod: r.Object(pc.prefix+"-"+v.Name+"-c", p.Client, p.Server, v.Resource)}
		run.in.Server.Command = "rdmaprobe bw server " + strings.Join(sa, " ")
	}
	// The client's flags per run, HOST last; its time budget.
	pc.clientArgs = func(host string) ([]string, time.Duration) {
		args := []string{"bw", "client"}
		budget := r.Cfg.PodTimeout
		for k, run := range runs {
			ca := r.clientRunArgs(v, run, port)
			if pc.multi {
				ca = append(ca, "--run-name", run.feature.spec.Name)
				if k > 0 {
					args = append(args, "--then")
				}
			}
			ca = append(ca, host)
			args = append(args, ca...)
			run.in.Client.Command = "rdmaprobe bw client " + strings.Join(ca, " ")
			budget += r.clientBudget(run.in.SKU, run.feature) - r.Cfg.PodTimeout
		}
		return args, budget
	}
	return pc
}

// serverWaitAfter is how long a pair's server may take to end once its
// client has: a client that measured sent the server its finish, and the
// server ends at once; one that failed may not have, and the server gets
// a short while to write what it saw (the client's output is judged
// either way).
var serverWaitAfter = func(clientFailed bool) time.Duration {
	if clientFailed {
		return 15 * time.Second
	}
	return time.Minute
}

// runPair runs one server pod and one client pod for the pair, every run
// of runs in turn inside them, fills each run's input with its part of
// both outputs, and deletes both pods before it returns.
func (r *Runner) runPair(ctx context.Context, v Variant, p pairing.Pair, runs []pairRun) {
	pc := r.pairCommands(v, p, runs, false, BWPort)
	srvSpec := pc.mem.spec(withHostSysfs(r.Spec(v, runs[0].in.Server.Pod, p.Server, pc.srvArgs, v.NeedsCaps)))
	clientSpec := func(args []string) podrun.Spec {
		return pc.mem.spec(withHostSysfs(r.Spec(v, runs[0].in.Client.Pod, p.Client, args, v.NeedsCaps)))
	}

	var srv *corev1.Pod
	var cres podrun.Result
	var cerr, srvErr error
	if r.pairStartMode(ctx).beside {
		srv, cres, cerr, srvErr = r.startTogether(ctx, srvSpec, clientSpec, pc.clientArgs, runs)
	} else {
		var srvStart time.Duration
		srv, srvStart, srvErr = podrun.Start(ctx, r.Kube, srvSpec, r.Cfg.PodTimeout)
		if srvErr == nil {
			r.AddPhase(PhasePodStart, srvStart)
			args, budget := pc.clientArgs(srv.Status.PodIP)
			cres, cerr = podrun.Run(ctx, r.Kube, clientSpec(args), budget)
			r.AddPhase(PhasePodStart, cres.StartLatency)
		}
	}
	if srv != nil && !srvSpec.Keep {
		defer podrun.Delete(r.Kube, srvSpec.Namespace, srvSpec.Name)
	}
	if srvErr != nil {
		for _, run := range runs {
			run.in.Server.PodErr = srvErr
		}
		return
	}
	r.AddPhase(PhaseCollection, cres.Collect)
	collectStart := time.Now()
	sres, werr := podrun.Wait(ctx, r.Kube, srv, serverWaitAfter(cres.ExitCode != 0 || cerr != nil))
	if werr != nil && sres.Logs == "" {
		sres.Logs, _ = podrun.Logs(context.WithoutCancel(ctx), r.Kube, r.Namespace(), srvSpec.Name)
	}
	r.AddPhase(PhaseCollection, time.Since(collectStart))
	r.assignSides(runs, pc, runSide{cres.Logs, cres.ExitCode, cerr}, runSide{sres.Logs, sres.ExitCode, werr})
}

// assignSides gives each run its part of both sides' outputs.
func (r *Runner) assignSides(runs []pairRun, pc pairCommands, cli, srv runSide) {
	if !pc.multi {
		in := runs[0].in
		in.Client.Logs, in.Client.Exit, in.Client.PodErr = cli.logs, cli.exit, cli.err
		in.Server.Logs, in.Server.Exit, in.Server.WaitErr = srv.logs, srv.exit, srv.err
		r.recordBWPhases(in.Client.Logs)
		return
	}
	cp := splitSide(cli.logs, cli.exit, cli.err, pc.names)
	sp := splitSide(srv.logs, srv.exit, srv.err, pc.names)
	for k, run := range runs {
		run.in.Client.Logs, run.in.Client.Exit, run.in.Client.PodErr = cp[k].logs, cp[k].exit, cp[k].err
		run.in.Server.Logs, run.in.Server.Exit, run.in.Server.WaitErr = sp[k].logs, sp[k].exit, sp[k].err
		r.recordBWPhases(run.in.Client.Logs)
	}
}

// serverWaitForClient is the bandwidth server's --timeout: it exits when
// no client connected for this long.
const serverWaitForClient = 2 * time.Minute

// clientRunArgs are one feature's client flags (without the server's
// address).
func (r *Runner) clientRunArgs(v Variant, run pairRun, port int) []string {
	m := run.feature.mem
	a := append(append([]string{"--port", strconv.Itoa(port), "--op", strings.Join(run.in.Ops, ","),
		"--size", sizesArg(run.in.Sizes)}, r.DeviceArgs(v)...), m.args()...)
	a = append(a, "--rails", r.Cfg.RailMode, "--timeout", "1m", "--qp-timeout", strconv.Itoa(bw.EffectiveQPTimeout(r.Cfg.QPTimeout)),
		"--counters-root", hostRootMount)
	if r.Cfg.RailParallel {
		a = append(a, "--rail-parallel")
	}
	return append(a, run.feature.spec.RunArgs(r.Cfg)...)
}

// runSide is what one side of a pair left: its output, exit status, and
// the error that stopped it (client: it did not run to completion;
// server: it did not end after its client). assignSides takes one per
// side for the whole pod; splitSide cuts a multi-run pod's into one per
// run.
type runSide struct {
	logs string
	exit int32
	err  error
}

// splitSide attributes a multi-run pod's output to its runs. A run that
// ended has its own exit status and is judged on its own lines; the pod's
// error (a timeout, the run's deadline) belongs to the runs that did not
// end. A pod that failed although every run that ended says 0 carries
// something no run explains: every run gets the pod's status, so none
// can pass on it. An output whose frames cannot be read is nobody's: every
// run gets the pod's status and an error saying so.
func splitSide(logs string, podExit int32, podErr error, names []string) []runSide {
	out := make([]runSide, len(names))
	parts, err := probeout.SplitRuns(logs, names)
	if err != nil {
		for k := range out {
			out[k] = runSide{exit: podExit, err: fmt.Errorf("the pod's output could not be attributed to its %d runs (%s): %v",
				len(names), strings.Join(names, ", "), err)}
		}
		return out
	}
	explained := false
	for k, part := range parts {
		out[k].logs = part.Logs
		switch {
		case part.Exit != nil:
			out[k].exit = int32(*part.Exit)
			explained = explained || *part.Exit != 0
		case podErr != nil:
			out[k].exit, out[k].err = podExit, podErr
			explained = true
		case !part.Began:
			out[k].exit, out[k].err = podExit, fmt.Errorf("run %d of %d (%s) never began: the probe stopped before it (pod exit %d)", k+1, len(names), part.Name, podExit)
			explained = true
		default:
			out[k].exit, out[k].err = podExit, fmt.Errorf("run %d of %d (%s) began and never ended: the probe stopped in it (pod exit %d)", k+1, len(names), part.Name, podExit)
			explained = true
		}
	}
	if podExit != 0 && !explained {
		for k := range out {
			out[k].exit = podExit
		}
	}
	return out
}

// pairedSchedule is what a variant's paired features will run: each
// feature's own rows (nodes without the resource, no pair), the node
// pairs grouped into rounds that share pods, and the nodes whose
// ports/isolation rows the NodeRows feature owes. Reads the API only.
type pairedSchedule struct {
	feats  map[string]pairedFeature
	rows   map[string][]reports.Check
	byName map[string]corev1.Node
	groups [][]sharedPair
	// rowNodes are the nodes the NodeRows feature (rowFeature) gives
	// their per-node rows.
	rowNodes   []corev1.Node
	rowFeature string
	// memlock: the memlock probe runs in the node pods after the rounds
	// (the run selected memlock beside these features).
	memlock bool
}

// schedulePaired schedules the paired features of plan for the variant
// (memlock: the run selected memlock too).
func (r *Runner) schedulePaired(ctx context.Context, v Variant, plan []string, memlock bool) pairedSchedule {
	feats := map[string]pairedFeature{}
	out := map[string][]reports.Check{}
	rounds := map[string][][]pairing.Pair{}
	byName := map[string]corev1.Node{}
	var order, loopback []string
	var rowNodes []corev1.Node
	rowFeature := ""
	for _, name := range plan {
		f := r.pairedFeature(name)
		feats[name] = f
		with, rs, rows, done := r.pairedNodesOf(ctx, v, f)
		out[name] = rows
		for _, n := range with {
			byName[n.Name] = n
		}
		if f.spec.NodeRows {
			// The ports and isolation rows are every node's, measured
			// or not; a feature whose nodes could not be listed has none.
			rowFeature = name
			if !done {
				rowNodes = with
				if r.Cfg.Loopback {
					loopback = nodeNames(with)
				}
			}
		}
		if done {
			continue
		}
		rounds[name] = rs
		order = append(order, name)
	}
	groups := pairGroups(order, rounds, rowFeature, loopback)
	return pairedSchedule{feats: feats, rows: out, byName: byName, groups: groups, rowNodes: rowNodes, rowFeature: rowFeature, memlock: memlock}
}

// railsText says how a pair measures its rails: how many one after
// another (the SKU's ports per node, or the one named device), or all at
// once with --rail-parallel.
func (r *Runner) railsText(lo, hi int) string {
	switch {
	case r.Cfg.RailParallel:
		return "a pair's rails measured at once (--rail-parallel)"
	case r.Cfg.Device != "":
		return "one rail per pair (--device " + r.Cfg.Device + ")"
	case lo == hi && lo == 1:
		return "rails one after another (no SKU port count: counted as 1 in the estimate)"
	case lo == hi:
		return fmt.Sprintf("%d rail(s) per pair, one after another", lo)
	}
	return fmt.Sprintf("%d-%d rail(s) per pair, one after another", lo, hi)
}

// pairEstimate is one pair's measurement time from the flags: per feature,
// rails (railsInSequence, as the client's pod budget counts them) ×
// ops × sizes × the feature's time per measurement (PerMeasurement), plus a second of setup per rail and op; and
// the rails it measures one after another (for the plan line).
func (r *Runner) pairEstimate(sch pairedSchedule, sp sharedPair) (time.Duration, int) {
	sku, _ := r.Cfg.Thresholds.ForNode(sp.p.Client, sch.byName[sp.p.Client].Labels, r.Cfg.SKU)
	rails := r.railsInSequence(sku) // no SKU: one rail
	var d time.Duration
	for _, name := range sp.feats {
		f := sch.feats[name]
		per := f.spec.PerMeasurement(r.Cfg)
		d += time.Duration(rails*len(f.ops)) * (time.Duration(len(f.sizes))*per + time.Second)
	}
	return d, rails
}

// hostRootMount is where a paired pod sees the node's /sys (as
// hostRootMount/sys, read-only): the probe reads its rails' port counters
// there when the pod's own sysfs has none, as in shared RDMA netns mode,
// where a pod's view of a device lacks counters/ and hw_counters/.
const hostRootMount = "/host"

func withHostSysfs(s podrun.Spec) podrun.Spec {
	if s.HostMounts == nil {
		s.HostMounts = map[string]string{}
	}
	s.HostMounts["/sys"] = hostRootMount + "/sys"
	return s
}

// asLoopback is a same-node pair's check: its id gets /loopback and its
// traits say so (the reports then read it as the node's own, not a link's).
func asLoopback(c reports.Check) reports.Check {
	c.ID += "/loopback"
	if c.Traits != nil {
		t := *c.Traits
		t.Loopback = true
		c.Traits = &t
	}
	return c
}
