package runner

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/rdmasuite/rdmasuite/internal/cluster"
	"github.com/rdmasuite/rdmasuite/internal/fate"
	"github.com/rdmasuite/rdmasuite/internal/pairing"
	"github.com/rdmasuite/rdmasuite/internal/podrun"
	"github.com/rdmasuite/rdmasuite/internal/verdict"
	"github.com/rdmasuite/rdmasuite/reports"
	"github.com/rdmasuite/rdmasuite/workloads/bw"
	"github.com/rdmasuite/rdmasuite/workloads/probeout"
)

// One probe pod per node and variant: a variant's paired features start
// every pod they need at once, before the first round (each node's pod, and
// with --loopback a second pod per node for its same-node client), and each
// round's server and client runs are exec'd in them. Per variant that is
// N (or 2N) pod starts in one wave, where a pod pair per node pair and
// round costs 2 per pair in every round (the ring: 2N in two waves, plus
// 2N for loopback in a third; all-pairs: N(N-1) in N-1 waves). A pod start
// is the suite's overhead on a large cluster and most of its time on slow
// nodes; the measurement is the same commands in the same kind of pod
// (same device resource, capabilities, memlock, host sysfs mount).

// probeBinary is where the probe images keep rdmaprobe (their entrypoint).
const probeBinary = "/usr/local/bin/rdmaprobe"

// nodePod is one node's probe pod for a variant.
type nodePod struct {
	name, node string
	ip         string
	err        error // it did not start: every run it was to hold is not run

	mu sync.Mutex
	// busy is set when a run in this pod was left without its end seen (a
	// server that did not end after its client, a stream that broke, a
	// client past its budget): its process may still hold the probe's port
	// or the rails, so a later run here would meet it instead of its peer
	// or share the link with it.
	busy error
	// busyUntil, when set, is when the run that left the pod busy has
	// ended by its own bound (a server whose client never connected
	// exits after its --timeout): the pod is free again after it.
	busyUntil time.Time
	served    int // server runs started here (nextPort)
}

// nextPort is the probe port of the pod's next server run: each run its
// own, so a server left waiting for a client that will not come (its
// peer was lost, its client never started) only listens on a port no
// later run uses, and the pod serves again at once.
func (p *nodePod) nextPort() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	port := BWPort + p.served%portSpan
	p.served++
	return port
}

// portSpan is how many ports a pod's server runs take in turn: far more
// runs than one pod serves within a leftover server's --timeout.
const portSpan = 64

func (p *nodePod) busyErr() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.busy != nil && !p.busyUntil.IsZero() && time.Now().After(p.busyUntil) {
		p.busy, p.busyUntil = nil, time.Time{}
	}
	return p.busy
}

func (p *nodePod) setBusy(err error) {
	p.setBusyUntil(err, time.Time{})
}

// setBusyUntil marks the pod busy until (zero: for the rest of the run).
func (p *nodePod) setBusyUntil(err error, until time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.busy == nil {
		p.busy, p.busyUntil = err, until
	}
}

// nodePods are a variant's pods, by node (loopback: the node's second pod).
type nodePods struct {
	main, loop map[string]*nodePod
	// watch follows the pods and their nodes while the rounds run: a pod
	// deleted or evicted, a node drained or NotReady, is not measured
	// again, and a run it cuts says so (nil in a run that could not
	// start it: the runs' own failures speak alone).
	watch *fate.Watch
}

// lost says why the pod or its node was lost, "" when neither was.
func (np *nodePods) lost(p *nodePod) string {
	if np.watch == nil {
		return ""
	}
	return np.watch.Lost(p.name, p.node)
}

func (np *nodePods) of(node string, loopback bool) *nodePod {
	if loopback {
		return np.loop[node]
	}
	return np.main[node]
}

// nodePodNodes are the nodes that need a main pod and those that need a
// loopback pod, in the groups' order.
func nodePodNodes(groups [][]sharedPair) (main, loop []string) {
	for _, g := range groups {
		for _, sp := range g {
			for _, n := range []string{sp.p.Server, sp.p.Client} {
				if sp.loopback && n == sp.p.Client {
					if !slices.Contains(loop, n) {
						loop = append(loop, n)
					}
					continue
				}
				if !slices.Contains(main, n) {
					main = append(main, n)
				}
			}
		}
	}
	return main, loop
}

// startNodePods creates every pod the variant's rounds need, at once, and
// waits until each runs or fails to start (a pod that did not start fails
// only its own pairs). The caller deletes them (deleteAll).
func (r *Runner) startNodePods(ctx context.Context, v Variant, sch pairedSchedule) *nodePods {
	r.awaitTerminated(ctx, "node pods ["+v.Label+"]")
	main, loop := nodePodNodes(sch.groups)
	mainGPUs, loopGPUs := r.nodePodGPUs(sch)
	hold := []string{"hold", "--max", r.holdFor(sch).String()}
	type todo struct {
		pod  *nodePod
		spec podrun.Spec
	}
	np := &nodePods{main: map[string]*nodePod{}, loop: map[string]*nodePod{}}
	var all []todo
	add := func(node, suffix string, into map[string]*nodePod, gpus int) {
		p := &nodePod{node: node, name: r.Object("pair-"+v.Name+suffix, node, v.Resource)}
		into[node] = p
		spec := bwMemory{gpus: gpus}.spec(withHostSysfs(r.Spec(v, p.name, node, hold, v.NeedsCaps)))
		// Deleted with the variant even under --keep-on-failure: a kept
		// pod would hold its device resource and GPUs, and the next
		// variant's or feature's pods could not be scheduled there. Its
		// runs' commands and outputs are in the checks' evidence.
		spec.Keep = false
		all = append(all, todo{p, spec})
	}
	for _, n := range main {
		add(n, "-n", np.main, mainGPUs[n])
	}
	for _, n := range loop {
		add(n, "-l", np.loop, loopGPUs[n])
	}
	limit := 0
	if r.Cfg.Concurrency > 0 {
		limit = 2 * r.Cfg.Concurrency // a round's pairs at once, two pods each
	}
	start := time.Now()
	defer func() {
		if r.Progress == nil {
			return
		}
		var failed []string
		for _, t := range all {
			if t.pod.err != nil {
				failed = append(failed, t.pod.node)
			}
		}
		line := fmt.Sprintf("node pods [%s]: %d of %d running after %s", v.Label, len(all)-len(failed), len(all), time.Since(start).Round(time.Second))
		if len(failed) > 0 {
			line += fmt.Sprintf("; not started on %s (their pairs fail with the reason)", strings.Join(failed, ", "))
		}
		r.Progress(line)
	}()
	parallel(len(all), limit, func(i int) {
		t := all[i]
		pod, took, err := podrun.StartHolding(ctx, r.Kube, t.spec, r.Cfg.PodTimeout)
		if err != nil {
			t.pod.err = err
			if pod != nil {
				podrun.Delete(r.Kube, t.spec.Namespace, t.spec.Name)
			}
			return
		}
		r.AddPhase(PhasePodStart, took)
		t.pod.ip = pod.Status.PodIP
	})
	np.watch = r.watchFates(ctx, v, slices.Concat(main, loop))
	return np
}

// watchFates follows the variant's pods and their nodes through the
// rounds (fate.Watch), when the suite may watch them; else (or when the
// watch cannot list) a lost pod or node is named only when a run there
// fails, and the progress says so.
func (r *Runner) watchFates(ctx context.Context, v Variant, nodes []string) *fate.Watch {
	without := func(why string) *fate.Watch {
		if r.Progress != nil {
			r.Progress(fmt.Sprintf("node pods [%s]: %s: a pod or node lost during the rounds (deleted, evicted, drained, NotReady) is named only when a run there fails, and its later pairs are tried", v.Label, why))
		}
		return nil
	}
	if ok, why := r.may(ctx, "watch", "pods", "", r.Namespace()); !ok {
		return without(why + " (suites/deploy's Role grants it)")
	}
	if ok, why := r.may(ctx, "watch", "nodes", "", ""); !ok {
		return without(why + " (suites/deploy's ClusterRole grants it)")
	}
	slices.Sort(nodes)
	// --node-selector bounds the node watch to the run's nodes; without
	// it (nodes chosen by their resources) every node is followed.
	w := fate.Start(ctx, r.Kube, r.Namespace(), cluster.RunSelector(r.RunID), r.Cfg.NodeSelector, slices.Compact(nodes))
	if !w.WaitSynced(ctx, 30*time.Second) {
		w.Stop()
		return without("the watch of the run's pods and nodes did not list them within 30s")
	}
	return w
}

// deleteNodePods deletes the variant's pods, each with its own grace: the
// next pods of the run (the next variant's, an NCCL world) wait in
// awaitTerminated until their kubelets are done with them.
func (r *Runner) deleteNodePods(np *nodePods) {
	if np.watch != nil {
		np.watch.Stop() // the suite's own deletions are no loss
	}
	var pods []*nodePod
	for _, m := range []map[string]*nodePod{np.main, np.loop} {
		for _, p := range m {
			if p.err == nil {
				pods = append(pods, p)
			}
		}
	}
	parallel(len(pods), 16, func(i int) { podrun.DeleteGracefully(r.Kube, r.Namespace(), pods[i].name) })
}

// teardownLimit bounds awaitTerminated: a node that stopped answering
// never confirms a deletion, and the run goes on without it.
const teardownLimit = 2 * time.Minute

// awaitTerminated holds the start of the run's next pods (next names
// them) until the pods it deleted before are gone from the API: their
// kubelets have stopped their containers and sandboxes, so the devices
// and GPUs they held are free again, and the nodes no longer tear them
// down while they start the next ones (pods that start beside another
// pod's teardown on their node were seen to start three to five times
// slower than on a quiet node). The wait is a phase of the run's
// time breakdown; pods still terminating at the limit are force-deleted,
// and the progress log says so.
func (r *Runner) awaitTerminated(ctx context.Context, next string) {
	waited, forced := podrun.AwaitTerminating(ctx, r.Kube, r.Namespace(), cluster.RunSelector(r.RunID), teardownLimit)
	if waited >= time.Second {
		r.AddPhase(PhasePodTeardown, waited)
	}
	if r.Progress == nil {
		return
	}
	switch {
	case len(forced) > 0:
		r.Progress(fmt.Sprintf("%s: %d earlier pod(s) of the run still terminating after %.0fs, force-deleted: %s (their nodes did not confirm the deletion)",
			next, len(forced), waited.Seconds(), strings.Join(forced, ", ")))
	case waited >= time.Second:
		r.Progress(fmt.Sprintf("%s: the run's earlier pods terminated in %.0fs (their devices and GPUs free again) before these start", next, waited.Seconds()))
	}
}

// nodePodGPUs is the GPUs each node's main pod and loopback pod request:
// the most any run it takes part in needs (gpudirect's pairs), at least
// --gpus (Spec). A loopback pod carries bandwidth only.
func (r *Runner) nodePodGPUs(sch pairedSchedule) (main, loop map[string]int) {
	main, loop = map[string]int{}, map[string]int{}
	for _, g := range sch.groups {
		for _, sp := range g {
			for _, name := range sp.feats {
				n := sch.feats[name].mem.gpus
				main[sp.p.Server] = max(main[sp.p.Server], n)
				if sp.loopback {
					loop[sp.p.Client] = max(loop[sp.p.Client], n)
				} else {
					main[sp.p.Client] = max(main[sp.p.Client], n)
				}
			}
		}
	}
	return main, loop
}

// holdFor bounds a node pod's life from the plan: the pods' start waves
// at their timeout, then every round's waves (its pairs at --concurrency)
// one after another, each at its longest pair's client budget plus the
// server's wait, and the confirmation round as the longest of them; with a
// margin. The runner deletes the pods when the
// variant is done; this only ends a pod whose runner was killed.
func (r *Runner) holdFor(sch pairedSchedule) time.Duration {
	main, loop := nodePodNodes(sch.groups)
	startWaves := 1
	if c := 2 * r.Cfg.Concurrency; c > 0 {
		startWaves = (len(main) + len(loop) + c - 1) / c
	}
	total := time.Duration(startWaves)*r.Cfg.PodTimeout + 10*time.Minute
	if sch.memlock {
		total += r.Cfg.PodTimeout // the memlock probe after the rounds
	}
	var maxRound time.Duration
	for _, g := range sch.groups {
		waves := 1
		if c := r.Cfg.Concurrency; c > 0 {
			waves = (len(g) + c - 1) / c
		}
		var longest time.Duration
		for _, sp := range g {
			sku, _ := r.Cfg.Thresholds.ForNode(sp.p.Client, sch.byName[sp.p.Client].Labels, r.Cfg.SKU)
			var d time.Duration
			for _, name := range sp.feats {
				d += r.clientBudget(sku, sch.feats[name])
			}
			longest = max(longest, d)
		}
		round := time.Duration(waves) * (longest + serverWaitAfter(false))
		total += round
		maxRound = max(maxRound, round)
	}
	if r.Cfg.Confirm {
		total += maxRound // the confirmation round: at most one round's pairs
	}
	return total.Round(time.Minute)
}

// execOutput is one exec'd run's outcome.
type execOutput struct {
	res podrun.ExecResult
	err error
}

// runPairInNodePods runs the pair's server and client runs in the two
// nodes' pods and fills each run's input with its part of both outputs.
func (r *Runner) runPairInNodePods(ctx context.Context, v Variant, sp sharedPair, runs []pairRun, np *nodePods) {
	// Framed even as one run: the end frame, not the exec stream, proves
	// that the run ended and with which status.
	srvPod, cliPod := np.of(sp.p.Server, false), np.of(sp.p.Client, sp.loopback)
	pc := r.pairCommands(v, sp.p, runs, true, srvPod.nextPort())
	for _, run := range runs {
		run.in.Server.Pod, run.in.Client.Pod = srvPod.name, cliPod.name
	}
	args, budget := pc.clientArgs(srvPod.ip)
	switch {
	case srvPod.err != nil:
		for _, run := range runs {
			run.in.Server.PodErr = srvPod.err
		}
		return
	case cliPod.err != nil:
		for _, run := range runs {
			run.in.Client.PodErr = cliPod.err
		}
		return
	}
	// A pod or node lost before the pair starts (also one left busy by
	// the run the loss cut): nothing is measured there, and its partner
	// is not blamed.
	if why := np.lost(srvPod); why != "" {
		for i, run := range runs {
			run.in.Server.PodErr = &verdict.NotAttempted{Why: why}
			runs[i].lost = &reports.Loss{Node: srvPod.node, What: why}
		}
		return
	}
	if why := np.lost(cliPod); why != "" {
		for i, run := range runs {
			run.in.Client.PodErr = &verdict.NotAttempted{Why: why}
			runs[i].lost = &reports.Loss{Node: cliPod.node, What: why}
		}
		return
	}
	np.awaitFree(ctx, srvPod, cliPod)
	if err := srvPod.busyErr(); err != nil {
		for _, run := range runs {
			run.in.Server.PodErr = err
		}
		return
	}
	if err := cliPod.busyErr(); err != nil {
		for _, run := range runs {
			run.in.Client.PodErr = err
		}
		return
	}
	ns := r.Namespace()
	// Lost in the middle: both runs end at once (a run in an evicted pod
	// or on a NotReady node is gone either way; waiting for its budget
	// would hold the round).
	runCtx, cut := ctx, func() string { return "" }
	if np.watch != nil {
		var stop func()
		runCtx, cut, stop = np.watch.CutWhenLost(ctx, [2]string{srvPod.name, srvPod.node}, [2]string{cliPod.name, cliPod.node})
		defer stop()
	}
	sctx, stopServer := context.WithCancel(runCtx)
	defer stopServer()
	srvDone := make(chan execOutput, 1)
	go func() {
		res, err := r.Exec.Exec(sctx, ns, srvPod.name, podrun.ContainerName, append([]string{probeBinary}, pc.srvArgs...))
		srvDone <- execOutput{res, err}
	}()
	cctx, stopClient := context.WithTimeout(runCtx, budget)
	cres, cerr := r.Exec.Exec(cctx, ns, cliPod.name, podrun.ContainerName, append([]string{probeBinary}, args...))
	clientTimedOut := errors.Is(cctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil
	stopClient()
	switch {
	case cerr != nil && clientTimedOut:
		cerr = fmt.Errorf("%w: its run in pod %s did not end within its budget of %s", podrun.ErrTimeout, cliPod.name, budget)
	case cerr == nil && !cres.Exited:
		cerr = fmt.Errorf("its run in pod %s ended without an exit status", cliPod.name)
	}
	if lost := cut(); lost != "" {
		np.survivorsOfALoss(lost, sp.p, survivorFree(r.Cfg.QPTimeout), srvPod, cliPod)
	}
	// A run that never started left nothing behind in its pod.
	if cerr != nil && ctx.Err() == nil && !errors.Is(cerr, podrun.ErrNotStarted) {
		cliPod.setBusy(fmt.Errorf("pod %s on %s is still busy: its client run for %s was left without its end (%v), so it takes part in no later pair",
			cliPod.name, cliPod.node, sp.p, cerr))
	}
	if why := unended(cres, pc.names); cerr == nil && why != "" && ctx.Err() == nil {
		cliPod.setBusy(fmt.Errorf("pod %s on %s is still busy: its client run for %s closed its stream %s, so its process may still run and it takes part in no later pair",
			cliPod.name, cliPod.node, sp.p, why))
	}
	collectStart := time.Now()
	wait := serverWaitAfter(cerr != nil || cres.Exit != 0)
	var srv execOutput
	var werr error
	select {
	case srv = <-srvDone:
		werr = srv.err
	case <-time.After(wait):
		stopServer()
		srv = <-srvDone
		werr = fmt.Errorf("%w: its run did not end within %s after its client's", podrun.ErrTimeout, wait)
	}
	switch {
	case werr == nil || ctx.Err() != nil || errors.Is(srv.err, podrun.ErrNotStarted):
	case errors.Is(cerr, podrun.ErrNotStarted):
		// No client ever connected: the server only listens, on a port
		// no later run of this pod uses, until its --timeout; it moves
		// nothing over the rails, so the pod serves the next pair.
	default:
		srvPod.setBusy(fmt.Errorf("pod %s on %s is still busy: its server run for %s was left without its end (its process may still move data over the rails), so it takes part in no later pair",
			srvPod.name, srvPod.node, sp.p))
	}
	if why := unended(srv.res, pc.names); werr == nil && why != "" && ctx.Err() == nil {
		srvPod.setBusy(fmt.Errorf("pod %s on %s is still busy: its server run for %s closed its stream %s (its process may still move data over the rails), so it takes part in no later pair",
			srvPod.name, srvPod.node, sp.p, why))
	}
	r.AddPhase(PhaseCollection, time.Since(collectStart))
	cerr, werr, loss := r.nameTheLoss(ctx, np, cut(), srvPod, cliPod, cerr, werr, cres.Exit != 0)
	r.assignSides(runs, pc, runSide{cres.Output, int32(cres.Exit), cerr}, runSide{srv.res.Output, int32(srv.res.Exit), werr})
	if loss == nil {
		return
	}
	// A run a loss cut or explains is that loss's, even where its probe
	// wrote an end frame (a client whose server vanished exits 1 with
	// "connection refused"): the fabric is not blamed for it.
	for i, run := range runs {
		if cerr != nil {
			run.in.Client.PodErr = cerr
		}
		if werr != nil {
			run.in.Server.WaitErr = werr
		}
		runs[i].lost = loss
	}
}

// survivorFree bounds how long a run whose peer was lost in the middle
// still moves data: its RDMA transport gives up on a vanished peer after
// 7 retries of the QP's ACK timeout, its TCP exchange with it then fails;
// a server left after that only listens (on a port no later run of the
// pod uses). A variable for tests.
var survivorFree = func(qpTimeout int) time.Duration {
	return 7*bw.QPTimeoutDuration(bw.EffectiveQPTimeout(qpTimeout)) + 15*time.Second
}

// awaitLimit bounds awaitFree's wait for one pod (a variable for tests).
var awaitLimit = 2 * time.Minute

// survivorsOfALoss marks the pods of a cut pair that were not lost busy
// until their run has stopped moving data: the next pair there waits for
// that (awaitFree) instead of sharing the rails with the old process (its
// port is no longer in the way: nextPort).
func (np *nodePods) survivorsOfALoss(lost string, p pairing.Pair, free time.Duration, pods ...*nodePod) {
	until := time.Now().Add(free)
	for _, pod := range pods {
		if np.lost(pod) != "" {
			continue
		}
		pod.setBusyUntil(fmt.Errorf("pod %s on %s is busy until %s: its run for %s was cut when %s, and its process stops moving data by then (its transport's retries)",
			pod.name, pod.node, until.UTC().Format("15:04:05Z"), p, lost), until)
	}
}

// awaitFree waits for pods that are busy only until a known time (a run
// cut by its peer's loss, a server whose client never started): the pair
// is measured after it, not failed for it. A pod busy for good is left to
// the caller.
func (np *nodePods) awaitFree(ctx context.Context, pods ...*nodePod) {
	for _, p := range pods {
		p.mu.Lock()
		until := p.busyUntil
		p.mu.Unlock()
		if until.IsZero() || time.Until(until) > awaitLimit {
			continue
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Until(until)):
		}
	}
}

// nameTheLoss puts what happened to the pods or their nodes into a failed
// run's errors, and returns that loss (nil when none): the loss that cut
// the run (cut), else what the watch or one read of the API says now (the
// watch may not have seen it yet). A run that ended with its measurement
// is left as it is, whatever happened after.
func (r *Runner) nameTheLoss(ctx context.Context, np *nodePods, cut string, srvPod, cliPod *nodePod, cerr, werr error, clientFailed bool) (error, error, *reports.Loss) {
	if np.watch == nil || (cerr == nil && werr == nil && !clientFailed) || ctx.Err() != nil {
		return cerr, werr, nil
	}
	lostNode := func() string {
		if np.lost(srvPod) != "" {
			return srvPod.node
		}
		return cliPod.node
	}
	if cut != "" {
		if cerr != nil || clientFailed {
			cerr = fmt.Errorf("its run was cut: %s", cut)
		}
		if werr != nil {
			werr = fmt.Errorf("its run was cut: %s", cut)
		}
		return cerr, werr, &reports.Loss{Node: lostNode(), What: cut}
	}
	var loss *reports.Loss
	explain := func(p *nodePod) string {
		why := np.watch.Explain(ctx, r.Kube, r.Namespace(), p.name, p.node)
		if why != "" && loss == nil {
			loss = &reports.Loss{Node: p.node, What: why}
		}
		return why
	}
	switch {
	case cerr != nil:
		if why := explain(cliPod); why != "" {
			cerr = fmt.Errorf("%w; %s", cerr, why)
		}
	case clientFailed:
		// The client's own failure (exit status, its output) stands
		// unless a loss explains it.
		if why := explain(cliPod); why != "" {
			cerr = fmt.Errorf("its run failed and %s", why)
		} else if why := explain(srvPod); why != "" {
			cerr = fmt.Errorf("its run failed and its server's %s", why)
		}
	}
	if werr != nil {
		if why := explain(srvPod); why != "" {
			werr = fmt.Errorf("%w; %s", werr, why)
		}
	}
	return cerr, werr, loss
}

// unended says why an exec'd framed run's end is not proven, "" when it
// is. Only a status from the kubelet or the probe's own end frames prove
// that its process ended: client-go reads a stream that closed without a
// status (a kubelet restart, an idle timeout) as exit 0, and a process
// left running may still hold the probe's port or share the rails with the
// pod's next run. A non-zero exit is the kubelet's status.
func unended(res podrun.ExecResult, names []string) string {
	switch {
	case !res.Exited:
		return "without an exit status"
	case res.Exit != 0:
		return ""
	}
	parts, err := probeout.SplitRuns(res.Output, names)
	if err != nil {
		return fmt.Sprintf("with exit 0 and run frames that cannot be read (%v)", err)
	}
	for k, part := range parts {
		if part.Exit == nil {
			return fmt.Sprintf("with exit 0 but without the end frame of run %d of %d (%s)", k+1, len(parts), part.Name)
		}
	}
	return ""
}

// nodePodPlanLine says how a variant's paired features share their pods
// when each node has one.
func nodePodPlanLine(variant string, groups [][]sharedPair) string {
	main, loop := nodePodNodes(groups)
	pairs, separate, riding := groupCounts(groups)
	pods := len(main) + len(loop)
	what := fmt.Sprintf("%d node(s)", len(main))
	if len(loop) > 0 {
		what += fmt.Sprintf(" and a same-node client pod on %d", len(loop))
	}
	return fmt.Sprintf("plan [%s]: %s run in one probe pod per node (%s), every round's server and client over pods/exec: %d pair(s) in %d round(s), %d pod starts before the first round (%d with a pod pair per pair and feature)",
		variant, strings.Join(riding, ", "), what, pairs, len(groups), pods, separate)
}
