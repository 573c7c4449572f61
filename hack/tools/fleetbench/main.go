// Command fleetbench drives the suite's pairing schedule and its bandwidth
// runner (internal/runner, the code the bandwidth feature runs) against
// simulated nodes, and reports per round: pairs, pods created, API requests
// by verb and resource, wall time, and the runner's own CPU time. It is run
// by hack/fleet-bench.sh, which starts a private kube-apiserver and kwok.
//
// What is simulated: the nodes (kwok: no kubelet, no containers), the probe
// pods' lifecycle (kwok Stages: Running at once with a pod IP, then
// Succeeded after a fixed delay), and the probes' output (kwok ClusterLogs
// serving one canned bandwidth result from a file through the apiserver's
// log proxy). What is real: the apiserver and etcd, the runner's code, its
// client (client-go with the suite's settings, so the default client-side
// rate limit of 5 QPS, burst 10), pod creation, polling, log fetching,
// deletion, and the verdicts on the output.
//
// Subcommands:
//
//	fleetbench nodes -kubeconfig K -count 256   create the simulated nodes
//	fleetbench logs -sku A100/HDR-200 > FILE    the canned probe output (CRI log format)
//	fleetbench sku -sku A100/HDR-200            the SKU's ports per node and link rate (for the probe stand-in)
//	fleetbench run -kubeconfig K ...            the measurement
//	fleetbench doctor -kubeconfig K -sizes 256  the doctor's gather, host probes and rules, timed
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"maps"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/rdmasuite/rdmasuite/internal/cluster"
	"github.com/rdmasuite/rdmasuite/internal/pairing"
	"github.com/rdmasuite/rdmasuite/internal/podrun"
	"github.com/rdmasuite/rdmasuite/internal/runner"
	"github.com/rdmasuite/rdmasuite/reports"
	"github.com/rdmasuite/rdmasuite/thresholds"
	"github.com/rdmasuite/rdmasuite/workloads/bw"
	"github.com/rdmasuite/rdmasuite/workloads/probeout"
)

// Labels of the simulated nodes: every node has benchLabel; the first n
// nodes also have subsetLabel(n), so a run selects a fleet of n.
const (
	benchLabel = "fleetbench.rdmasuite.io/node"
	resource_  = "rdma/rdma_shared_device_a"
	sizeBytes  = 1 << 20
)

func subsetLabel(n int) string { return fmt.Sprintf("fleetbench.rdmasuite.io/first-%d", n) }

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: fleetbench nodes|logs|sku|run|doctor [flags]")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "nodes":
		err = nodesCmd(os.Args[2:])
	case "logs":
		err = logsCmd(os.Args[2:])
	case "sku":
		err = skuCmd(os.Args[2:])
	case "run":
		err = runCmd(os.Args[2:])
	case "doctor":
		err = doctorCmd(os.Args[2:])
	default:
		err = fmt.Errorf("unknown subcommand %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "fleetbench:", err)
		os.Exit(1)
	}
}

func client(kubeconfig string) (*rest.Config, *kubernetes.Clientset, error) {
	rc, _, err := cluster.RESTConfig(kubeconfig, "")
	if err != nil {
		return nil, nil, err
	}
	cs, err := kubernetes.NewForConfig(rc)
	return rc, cs, err
}

// nodesCmd creates count nodes for kwok, with the labels and allocatable
// the bandwidth feature needs, and the subset labels of every size asked.
func nodesCmd(args []string) error {
	fs := flag.NewFlagSet("nodes", flag.ExitOnError)
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig of the private control plane")
	count := fs.Int("count", 256, "nodes to create")
	subsets := fs.String("subsets", "16,64,256", "fleet sizes to label (first N nodes)")
	product := fs.String("gpu-product", "NVIDIA-A100-SXM4-80GB", "nvidia.com/gpu.product label (matched against thresholds/skus.yaml)")
	_ = fs.Parse(args)
	sizes, err := ints(*subsets)
	if err != nil {
		return err
	}
	rc, _, err := client(*kubeconfig)
	if err != nil {
		return err
	}
	rc.QPS, rc.Burst = 200, 400 // setup, not measured
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return err
	}
	ctx := context.Background()
	qty := func(s string) resource.Quantity { return resource.MustParse(s) }
	res := corev1.ResourceList{"cpu": qty("128"), "memory": qty("2Ti"), "pods": qty("110"),
		resource_: qty("63"), "nvidia.com/gpu": qty("8")}
	for i := 0; i < *count; i++ {
		name := fmt.Sprintf("fleet-%04d", i)
		labels := map[string]string{benchLabel: "true", "nvidia.com/gpu.product": *product,
			"kubernetes.io/hostname": name, "type": "kwok"}
		for _, n := range sizes {
			if i < n {
				labels[subsetLabel(n)] = "true"
			}
		}
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels,
			Annotations: map[string]string{"kwok.x-k8s.io/node": "fake"}},
			Spec: corev1.NodeSpec{Taints: []corev1.Taint{{Key: "kwok.x-k8s.io/node", Value: "fake", Effect: corev1.TaintEffectNoSchedule}}}}
		created, err := cs.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			continue
		}
		if err != nil {
			return err
		}
		created.Status.Capacity, created.Status.Allocatable = res, res
		if _, err := cs.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("node %s status: %w", name, err)
		}
	}
	fmt.Printf("fleetbench: %d simulated nodes (%s=%s, %s allocatable 63)\n", *count, "nvidia.com/gpu.product", *product, resource_)
	return nil
}

// logsCmd prints the canned probe output in the CRI log format kwok's
// ClusterLogs serves: a client result with ports rails, each measured at
// 1 MiB at 95% of the SKU's link rate, and every rail found. Server and
// client pods get the same text (kwok selects logs by namespace and
// container, not by pod): the verdict reads the server's rails from it.
func logsCmd(args []string) error {
	fs := flag.NewFlagSet("logs", flag.ExitOnError)
	file := fs.String("thresholds", "thresholds/skus.yaml", "thresholds file")
	skuName := fs.String("sku", "A100/HDR-200", "SKU whose ports and link rate the canned output has")
	_ = fs.Parse(args)
	set, err := thresholds.Load(*file)
	if err != nil {
		return err
	}
	sku, err := set.ForNode("n", nil, *skuName)
	if err != nil {
		return err
	}
	ports, rate := int(*sku.PortsPerNode.Value), *sku.LinkRateGbps.Value
	out := bw.ProbeOutput{Role: "client", Requested: bw.Requested{Ops: []bw.Op{"write"}, Sizes: []int{sizeBytes}, RailMode: bw.RailsSame}}
	for i := 0; i < ports; i++ {
		r := bw.Rail{Index: i, Device: fmt.Sprintf("mlx5_%d", i), Port: 1, State: "ACTIVE", LinkLayer: "InfiniBand", RateGbps: rate}
		p := r
		out.Found = append(out.Found, r)
		out.Rails = append(out.Rails, bw.RailResult{Local: r, Peer: &p, Runs: []bw.Report{{Role: "client",
			Params:  bw.Params{Op: "write", Sizes: []int{sizeBytes}},
			Results: []bw.SizeResult{{Local: cannedFigures(rate)}}}}})
	}
	var b bytes.Buffer
	if err := probeout.Write(&b, bw.ProbeName, out); err != nil {
		return err
	}
	// The host probe's report on the same log: its reader takes the last
	// envelope of its own probe name, the bandwidth reader the last "bw".
	if err := probeout.Write(&b, "node", cannedNodeReport(ports, rate)); err != nil {
		return err
	}
	ts := time.Now().UTC().Format(time.RFC3339Nano)
	for _, line := range strings.Split(strings.TrimRight(b.String(), "\n"), "\n") {
		fmt.Printf("%s stdout F %s\n", ts, line)
	}
	return nil
}

// skuCmd prints the SKU's ports per node and link rate in Gb/s: what the
// probe stand-in (hack/tools/probestandin) reports for every node.
func skuCmd(args []string) error {
	fs := flag.NewFlagSet("sku", flag.ExitOnError)
	file := fs.String("thresholds", "thresholds/skus.yaml", "thresholds file")
	skuName := fs.String("sku", "A100/HDR-200", "SKU")
	_ = fs.Parse(args)
	set, err := thresholds.Load(*file)
	if err != nil {
		return err
	}
	sku, err := set.ForNode("n", nil, *skuName)
	if err != nil {
		return err
	}
	if sku.PortsPerNode.Value == nil || sku.LinkRateGbps.Value == nil {
		return fmt.Errorf("SKU %s sets no ports per node or link rate", *skuName)
	}
	fmt.Printf("%d %g\n", int(*sku.PortsPerNode.Value), *sku.LinkRateGbps.Value)
	return nil
}

// cannedFigures are one size's figures at 95 % of rate, made by perftest's
// arithmetic (bw.Compute) so that they agree with themselves: the suite
// re-derives every figure and errors on any that its own facts contradict
// (a canned average without operations or time is refused).
func cannedFigures(rateGbps float64) bw.Figures {
	const ops = 10000
	elapsed := time.Duration(float64(sizeBytes) * ops * 8 / (0.95 * rateGbps * 1e9) * float64(time.Second))
	return bw.Compute(sizeBytes, ops, elapsed, elapsed/ops)
}

// The runner's paths (-path).
const (
	pathDefault  = "default"
	pathPodPairs = "pod-pairs"
)

// procPIDs are the control plane's processes (-procs).
var procPIDs map[string]int

// execProtocol is -exec-protocol.
var execProtocol = "auto"

type scenario struct {
	mode string
	n    int
}

func runCmd(args []string) error {
	fs := flag.NewFlagSet("run", flag.ExitOnError)
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig of the private control plane")
	sizesFlag := fs.String("sizes", "16,64,256", "fleet sizes")
	modes := fs.String("pairings", "ring,all", "pairing modes")
	conc := fs.Int("concurrency", 0, "runner concurrency (--concurrency; 0, the suite's default: every pair of a round at once)")
	maxPairs := fs.Int("max-pairs", 300, "run a scenario only when its schedule has at most this many pairs; larger ones are computed from the schedule")
	thr := fs.String("thresholds", "thresholds/skus.yaml", "thresholds file")
	probeSec := fs.Float64("probe-sec", 0, "simulated probe duration of the kwok stages (for the report)")
	rounds := fs.Bool("rounds", true, "print the per-round table")
	confirmSize := fs.Int("confirm-size", 0, "also run a ring of this many nodes with one failing node (-confirm-bad) and the suite's default --confirm (0: none)")
	confirmBad := fs.String("confirm-bad", "fleet-0003", "the node whose client runs the kwok stages fail in the confirmation scenario's namespace")
	path := fs.String("path", pathDefault, "the runner's path: default (one probe pod per node, every run over pods/exec, as the suite runs) or pod-pairs (no executor: a server and a client pod per pair and round)")
	var fo faultOpts
	fs.Float64Var(&fo.deletePct, "fault-delete-pct", 0, "default path: delete this share (percent) of the node pods half a pair time into round 1, and report what the runner made of it")
	fs.StringVar(&execProtocol, "exec-protocol", "auto", "default path: auto (the suite's podrun.RemoteExec: WebSocket, SPDY as fallback) or spdy (an experiment: SPDY only)")
	cpuProfile := fs.String("cpuprofile", "", "write the runner's CPU profile (the whole run command) to this file")
	procsFlag := fs.String("procs", "", "name=pid,… of the control plane's processes, whose CPU time (and their children's) each run reports")
	fs.IntVar(&fo.notReady, "fault-notready", 0, "default path: turn this many nodes NotReady half a pair time into round 1, and report what the runner made of it")
	_ = fs.Parse(args)
	if execProtocol != "auto" && execProtocol != "spdy" {
		return fmt.Errorf("-exec-protocol %q: want auto or spdy", execProtocol)
	}
	if *path != pathDefault && *path != pathPodPairs {
		return fmt.Errorf("-path %q: want %s or %s", *path, pathDefault, pathPodPairs)
	}
	fo.pairTime = time.Duration(*probeSec * float64(time.Second))
	pids, err := parseProcs(*procsFlag)
	if err != nil {
		return err
	}
	procPIDs = pids
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	sizes, err := ints(*sizesFlag)
	if err != nil {
		return err
	}
	set, err := thresholds.Load(*thr)
	if err != nil {
		return err
	}
	var summary []summaryRow
	for _, mode := range strings.Split(*modes, ",") {
		for _, n := range sizes {
			s := scenario{mode: mode, n: n}
			names := make([]string, n)
			for i := range names {
				names[i] = fmt.Sprintf("fleet-%04d", i)
			}
			sched, err := pairing.Schedule(names, mode)
			if err != nil {
				return err
			}
			pairs := 0
			for _, r := range sched {
				pairs += len(r)
			}
			row := summaryRow{s: s, rounds: len(sched), pairs: pairs, pods: 2 * pairs,
				maxRound: maxLen(sched), waves: waves(sched, *conc)}
			if pairs > *maxPairs {
				row.analytic = true
				summary = append(summary, row)
				continue
			}
			m, err := measure(*kubeconfig, s, set, *conc, sched, fmt.Sprintf("fb%s%d-%d", s.mode, s.n, time.Now().Unix()%100000), *path, faultOpts{})
			if err != nil {
				return fmt.Errorf("%s/%d: %w", mode, n, err)
			}
			row.m = m
			summary = append(summary, row)
			if *rounds {
				m.printRounds(s)
			}
			// Each fault in a run of its own, so that what the runner
			// reports is that fault's.
			for _, f := range fo.each() {
				if *path != pathDefault {
					break
				}
				fm, err := measure(*kubeconfig, s, set, *conc, sched, fmt.Sprintf("fbfault%s%d-%d", s.mode, s.n, time.Now().Unix()%100000), *path, f)
				if err != nil {
					return fmt.Errorf("%s/%d with faults: %w", mode, n, err)
				}
				fm.printFaults(s, m)
			}
		}
	}
	printSummary(summary, *conc, *probeSec, *path)
	if *confirmSize > 0 {
		return confirmScenario(*kubeconfig, *confirmSize, *confirmBad, set, *conc, *probeSec)
	}
	return nil
}

func maxLen(s [][]pairing.Pair) int {
	m := 0
	for _, r := range s {
		m = max(m, len(r))
	}
	return m
}

// waves is how many batches of at most conc pairs the schedule runs in
// sequence: Collect starts at most conc pairs at a time within a round,
// and rounds run one after another.
func waves(s [][]pairing.Pair, conc int) int {
	w := 0
	for _, r := range s {
		if conc <= 0 { // the suite's default: a round's pairs all at once
			w++
			continue
		}
		w += (len(r) + conc - 1) / conc
	}
	return w
}

// measure runs the bandwidth feature over the first n nodes and attributes
// every API request to the round whose pod it names.
func measure(kubeconfig string, s scenario, set *thresholds.Set, conc int, sched [][]pairing.Pair, runID, path string, fo faultOpts) (*measurement, error) {
	rc, setup, err := client(kubeconfig)
	if err != nil {
		return nil, err
	}
	rec := newRecorder()
	cfg := rest.CopyConfig(rc) // the suite's client: cluster.RESTConfig's rate, scaled to the fleet as the suite does
	cluster.ScaleClientRate(cfg, s.n)
	rec.instrument(cfg)
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	ctx := context.Background()
	if _, err := runNamespace(ctx, setup, runID); err != nil {
		return nil, err
	}
	r := runner.New(kube, runner.Config{
		Image: "rdmaprobe:fleetbench", PodTimeout: time.Minute, NodeSelector: subsetLabel(s.n) + "=true",
		Concurrency: conc, Variants: []string{runner.VariantSharedDev}, RDMAResources: []string{resource_},
		BWOps: []string{"write"}, BWSizes: []int{sizeBytes}, BWQPs: 1, BWDuration: time.Second,
		Pairing: s.mode, RailMode: bw.RailsSame, Thresholds: set, Confirm: true, // the suite's default
	}, runID)
	var confirmAt time.Time
	var progress []string
	r.Progress = func(line string) {
		if strings.HasPrefix(line, "confirmation [") {
			confirmAt = time.Now()
			fmt.Println("  " + line)
		}
		if strings.HasPrefix(line, "node pods [") || strings.HasPrefix(line, "pairs: ") {
			progress = append(progress, line)
		}
	}
	v := r.Cfg.VariantList()[0]
	var xs *execStats
	if path == pathDefault {
		// As the suite's session sets them (internal/lifecycle), over the
		// instrumented config: the exec requests are counted and, like the
		// suite's, not held by the client's rate limiter (client-go's
		// stream executors bypass it).
		xs = &execStats{}
		var ex podrun.Execer = podrun.RemoteExec{Config: cfg, Kube: kube}
		if execProtocol == "spdy" {
			ex = spdyExec{config: cfg, kube: kube}
		}
		r.Exec = countingExec{next: ex, st: xs}
		r.Attach = podrun.RemoteAttach{Config: cfg, Kube: kube}
		rec.roundOf = func(kind, _ string) int {
			if kind != "create pods/exec" {
				return -1
			}
			return xs.current()
		}
	}
	// Every pod name of the schedule, to its round (the names the runner gives).
	for i, round := range sched {
		for _, p := range round {
			rec.podRound[r.Object("bw-"+v.Name+"-s", p.Server, p.Client, v.Resource)] = i
			rec.podRound[r.Object("bw-"+v.Name+"-c", p.Client, p.Server, v.Resource)] = i
		}
	}
	rec.rounds = make([]roundStats, len(sched))
	for i := range sched {
		rec.rounds[i] = roundStats{pairs: len(sched[i]), byKind: map[string]int{}}
	}
	runtime.GC()
	var ms0 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	peak := sampleHeap()
	start, cpu0, procs0, busy0 := time.Now(), cpuTime(), readProcCPU(procPIDs), machineBusy()
	// The run's plan, built and executed as the lifecycle does.
	r.Cfg.Selected = map[string][]string{v.Label: {runner.PairedBandwidth}}
	var fr *faultRun
	if fo.any() {
		fr = startFaults(ctx, setup, r, v, s, sched, xs, fo)
	}
	r.BuildPlan(ctx)
	r.Execute(ctx)
	checks := r.Paired(ctx, v, runner.PairedBandwidth)
	end := time.Now()
	procs1, busy1 := readProcCPU(procPIDs), machineBusy()
	if xs != nil {
		// A round's wall and CPU are its streams' (first open to last
		// closed), not its exec requests' (answered at the upgrade).
		for i, ep := range xs.epochs {
			if i < len(rec.rounds) {
				rec.rounds[i].first, rec.rounds[i].last = ep.first, ep.last
				rec.rounds[i].cpu = ep.cpuLast - ep.cpuFirst
			}
		}
	}
	rec.finish()
	var ms1 runtime.MemStats
	runtime.ReadMemStats(&ms1)
	m := &measurement{rec: rec, wall: end.Sub(start), cpu: cpuTime() - cpu0, status: map[reports.Status]int{},
		alloc: ms1.TotalAlloc - ms0.TotalAlloc, peakHeap: peak() - ms0.HeapInuse, qps: cfg.QPS, burst: cfg.Burst, all: checks,
		exec: xs, start: start, end: end, progress: progress, faults: fr}
	m.cpuLine = cpuLine(procs0, procs1, m.cpu, m.wall, busy1-busy0)
	if fr != nil {
		fr.stop()
	}
	if !confirmAt.IsZero() {
		m.confirmWall = time.Since(confirmAt)
	}
	for _, c := range checks {
		m.status[c.Status]++
		if !c.Status.Passing() && m.firstBad == "" {
			m.firstBad = runner.Describe([]reports.Check{c})
		}
	}
	m.checks = len(checks)
	// The runner deletes its pods as it returns (the node pods gracefully,
	// without waiting): give the deletions up to a minute to finish, and
	// count what is still there.
	for t0 := time.Now(); ; time.Sleep(250 * time.Millisecond) {
		left, err := setup.CoreV1().Pods(cluster.RunNamespace(runID)).List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, err
		}
		m.podsLeft, m.goneAfter = len(left.Items), time.Since(t0)
		if m.podsLeft == 0 || time.Since(t0) > time.Minute {
			break
		}
	}
	if fr != nil {
		fr.restore(ctx, setup)
	}
	return m, nil
}

type measurement struct {
	rec      *recorder
	wall     time.Duration
	cpu      time.Duration
	alloc    uint64 // bytes the runner allocated during the run
	peakHeap uint64 // the heap's peak above its size at the start
	qps      float32
	burst    int
	checks   int
	status   map[reports.Status]int
	firstBad string
	podsLeft int
	all      []reports.Check
	// confirmWall: from the confirmation round's line to the run's end.
	confirmWall time.Duration
	// The default path: its exec streams, the run's start and end, the
	// runner's lines about its node pods, and the faults injected.
	exec       *execStats
	start, end time.Time
	progress   []string
	faults     *faultRun
	goneAfter  time.Duration // until the run's pods were gone from the API
	cpuLine    string
}

// sampleHeap samples the heap in use every 20 ms until the returned func
// is called, which returns the peak.
func sampleHeap() func() uint64 {
	var mu sync.Mutex
	var peak uint64
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		for {
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			mu.Lock()
			peak = max(peak, ms.HeapInuse)
			mu.Unlock()
			select {
			case <-stop:
				return
			case <-t.C:
			}
		}
	}()
	return func() uint64 {
		close(stop)
		<-done
		mu.Lock()
		defer mu.Unlock()
		return peak
	}
}

func (m *measurement) printRounds(s scenario) {
	fmt.Printf("\n%s pairing, %d nodes: per round\n", s.mode, s.n)
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "round\tpairs\tpods\tAPI calls\tcalls/pair\twall s\trunner CPU s\tCPU/wall\tthrottled s\tcalls by verb/resource\t")
	for i, r := range m.rec.rounds {
		wall := r.last.Sub(r.first).Seconds()
		fmt.Fprintf(w, "%d\t%d\t%d\t%d\t%.1f\t%.2f\t%.2f\t%.1f%%\t%.1f\t%s\t\n", i+1, r.pairs, r.byKind["create pods"],
			r.calls, float64(r.calls)/float64(max(r.pairs, 1)), wall, r.cpu.Seconds(),
			100*r.cpu.Seconds()/max(wall, 1e-9), r.throttled.Seconds(), kinds(r.byKind))
	}
	_ = w.Flush()
	fmt.Printf("  outside rounds (node list, node pods' create/poll/delete etc.): %d calls: %s\n", m.rec.other.calls, kinds(m.rec.other.byKind))
	fmt.Println("  " + m.cpuLine)
	if x := m.exec; x != nil {
		for _, line := range m.progress {
			fmt.Println("  runner: " + line)
		}
		sp50, sp95, smax := quantiles(m.rec.execSetup)
		c50, c95, cmax := quantiles(x.client)
		v50, _, vmax := quantiles(x.server)
		fmt.Printf("  exec: %d streams, %d at once at peak, %d errors, %d non-zero exits; setup (request to upgrade) p50 %.0f ms p95 %.0f ms max %.0f ms; client run p50 %.2f s p95 %.2f s max %.2f s; server run p50 %.2f s max %.2f s\n",
			x.total, x.peak, x.errs, x.nonZero, ms(sp50), ms(sp95), ms(smax), c50.Seconds(), c95.Seconds(), cmax.Seconds(), v50.Seconds(), vmax.Seconds())
		if x.firstErr != "" {
			fmt.Printf("  exec: first failure: %s\n", x.firstErr)
		}
		if len(x.epochs) > 0 {
			fmt.Printf("  time: node pods until the first exec %.2f s; rounds (first stream to last) %.2f s; last stream to the runner's return (deletes) %.2f s; its pods gone %.2f s later\n",
				x.epochs[0].first.Sub(m.start).Seconds(), x.epochs[len(x.epochs)-1].last.Sub(x.epochs[0].first).Seconds(),
				m.end.Sub(x.epochs[len(x.epochs)-1].last).Seconds(), m.goneAfter.Seconds())
		}
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func kinds(m map[string]int) string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	var parts []string
	for _, k := range ks {
		parts = append(parts, fmt.Sprintf("%s=%d", k, m[k]))
	}
	return strings.Join(parts, " ")
}

type summaryRow struct {
	s                                    scenario
	rounds, pairs, pods, maxRound, waves int
	analytic                             bool
	m                                    *measurement
}

func printSummary(rows []summaryRow, conc int, probeSec float64, path string) {
	what := "the default path: one probe pod per node, every round's runs over pods/exec; waves are rounds"
	if path == pathPodPairs {
		what = "the pod-pair path: a server and a client pod per pair and round, no executor"
	}
	if path == pathDefault && execProtocol != "auto" {
		what += " (-exec-protocol " + execProtocol + ", an experiment)"
	}
	fmt.Printf("\nsummary (%s; concurrency %d; simulated probe pair time %.1f s)\n", what, conc, probeSec)
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "pairing\tnodes\trounds\tpairs\tpods\tmax pairs/round\twaves\tmeasured\tclient rate/burst\tAPI calls\tcalls/pair\twall s\twall/(waves×pair)\trunner CPU s\tCPU ms/pair\talloc KB/pair\tpeak heap MB\tthrottled s\tchecks pass/other\tlink pass/other\trounds only/(waves×pair)\texec streams peak\texecs\texec errors\tpods left\t")
	for _, r := range rows {
		if r.analytic {
			fmt.Fprintf(w, "%s\t%d\t%d\t%d\t%d\t%d\t%d\tschedule only\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\n", r.s.mode, r.s.n, r.rounds, r.pairs, r.pods, r.maxRound, r.waves)
			continue
		}
		m := r.m
		calls, thr := 0, time.Duration(0)
		for _, rd := range m.rec.rounds {
			calls += rd.calls
			thr += rd.throttled
		}
		calls += m.rec.other.calls
		pass := m.status[reports.Pass] + m.status[reports.Warn] // a warn passed its bar
		ratio := "-"
		if probeSec > 0 {
			ratio = fmt.Sprintf("%.2f", m.wall.Seconds()/(float64(r.waves)*probeSec))
		}
		linkPass, links := 0, 0
		for _, c := range m.all {
			if strings.HasSuffix(c.ID, "/link") {
				links++
				if c.Status.Passing() {
					linkPass++
				}
			}
		}
		peak, execs, execErrs, roundsOnly := "-", "-", "-", "-"
		pods := r.pods
		if x := m.exec; x != nil {
			peak, execs, execErrs = strconv.Itoa(x.peak), strconv.Itoa(x.total), strconv.Itoa(x.errs+x.nonZero)
			pods = m.rec.other.byKind["create pods"]
			// The rounds alone (first stream to last): the wall without
			// the node pods' start and teardown.
			if n := len(x.epochs); n > 0 && probeSec > 0 {
				roundsOnly = fmt.Sprintf("%.2f", x.epochs[n-1].last.Sub(x.epochs[0].first).Seconds()/(float64(r.waves)*probeSec))
			}
		}
		fmt.Fprintf(w, "%s\t%d\t%d\t%d\t%d\t%d\t%d\tyes\t%.0f/%d\t%d\t%.1f\t%.1f\t%s\t%.2f\t%.1f\t%.0f\t%.1f\t%.0f\t%d/%d\t%d/%d\t%s\t%s\t%s\t%s\t%d\t\n", r.s.mode, r.s.n, r.rounds, r.pairs, pods, r.maxRound, r.waves,
			m.qps, m.burst, calls, float64(calls)/float64(r.pairs), m.wall.Seconds(), ratio, m.cpu.Seconds(),
			1000*m.cpu.Seconds()/float64(r.pairs), float64(m.alloc)/1024/float64(r.pairs), float64(m.peakHeap)/1e6, thr.Seconds(), pass, m.checks-pass,
			linkPass, links-linkPass, roundsOnly, peak, execs, execErrs, m.podsLeft)
	}
	_ = w.Flush()
	for _, r := range rows {
		if r.m == nil {
			continue
		}
		all := map[string]int{}
		for _, rd := range r.m.rec.rounds {
			for k, n := range rd.byKind {
				all[k] += n
			}
		}
		for k, n := range r.m.rec.other.byKind {
			all[k] += n
		}
		var parts []string
		for _, k := range slices.Sorted(maps.Keys(all)) {
			parts = append(parts, fmt.Sprintf("%s=%d (%.2f/pair)", k, all[k], float64(all[k])/float64(r.pairs)))
		}
		fmt.Printf("%s/%d calls by verb/resource: %s\n", r.s.mode, r.s.n, strings.Join(parts, " "))
	}
	for _, r := range rows {
		if r.m != nil && r.m.firstBad != "" {
			fmt.Printf("%s/%d first non-pass check:%s\n", r.s.mode, r.s.n, r.m.firstBad)
		}
	}
}

func ints(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			return nil, fmt.Errorf("%q: %w", s, err)
		}
		out = append(out, n)
	}
	return out, nil
}

// runNamespace makes the run's namespace as cluster.CreateRunNamespace
// does, plus its default service account (no controller-manager here to
// add it).
func runNamespace(ctx context.Context, setup kubernetes.Interface, runID string) (string, error) {
	ns := cluster.RunNamespace(runID)
	if _, err := setup.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns,
		Labels: map[string]string{cluster.ManagedByLabel: cluster.ManagedBy, cluster.RunLabel: runID}}}, metav1.CreateOptions{}); err != nil {
		return "", err
	}
	_, err := setup.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{})
	return ns, err
}
