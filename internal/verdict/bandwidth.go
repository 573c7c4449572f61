package verdict

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/rdmasuite/rdmasuite/reports"
	"github.com/rdmasuite/rdmasuite/thresholds"
	"github.com/rdmasuite/rdmasuite/workloads/bw"
	"github.com/rdmasuite/rdmasuite/workloads/lat"
	"github.com/rdmasuite/rdmasuite/workloads/mr"
	"github.com/rdmasuite/rdmasuite/workloads/probeout"
	"github.com/rdmasuite/rdmasuite/workloads/units"
)

// BWInput is one pair's observation and what the run asked it to cover.
type BWInput struct {
	Variant  string // shared-dev or hostdev
	Resource string // the extended resource the pods requested
	Network  string // Multus network (hostdev)
	Ops      []string
	Sizes    []int  // requested message sizes, bytes; the largest is judged (message rate: the smallest)
	RailMode string // bw.RailsSame or bw.RailsCross
	// OneRail: the run named one device (--device, --netdev): the pair owes
	// the rails the probes selected, not every port the pods can see.
	OneRail bool
	// Device is the device the run named (--device): a rail of another
	// device is not what was asked, and the named one unmeasured fails.
	Device string
	Client Side
	Server Side
	SKU    *thresholds.SKU
	SKUErr error

	// What the pair measured and how it is judged: bandwidth unless
	// Latency or MsgRate set it (nil reads as bandwidth).
	metric *metric

	// What each side's probe saw (set by Bandwidth from the outputs).
	clientView, serverView *bw.PodView
}

// BWResult is the verdict of one pair plus the rails each side found, which
// the runner compares with the SKU's ports per node.
type BWResult struct {
	Checks []reports.Check
	// LinkChecks are the <prefix>link checks, one per rail pair judged:
	// the port counters around its measurements stayed clean.
	// Apart from Checks so that a caller counting one check per rail and
	// op keeps doing so; the runner reports both.
	LinkChecks  []reports.Check
	ClientRails []bw.Rail // nil when the client's output could not be read
	ServerRails []bw.Rail
	// What each side's pod saw of the node's RDMA devices and netns mode;
	// nil when its output could not be read.
	ClientSight, ServerSight *Sight
}

// Fixes named by the diagnoses.
const (
	FixNoDevice = "check the RDMA device plugin (or SR-IOV device plugin) pod and the MOFED driver pod on this node " +
		"(kubectl -n nvidia-network-operator get pods -o wide): the plugin must hand /dev/infiniband/uverbs* to pods " +
		"that request the resource; a node must not advertise it before the driver is ready"
	FixNoNetdev = "the pod's secondary interface has no RDMA device: check the NetworkAttachmentDefinition named in " +
		"k8s.v1.cni.cncf.io/networks, the SR-IOV CNI and that the VF is bound to mlx5_core with RDMA enabled"
	FixLinkDown  = "bring the port up (cable, transceiver, switch port; the subnet manager for InfiniBand); ibstat on the node shows the same state"
	FixTransport = "the RDMA transport failed mid-run: check both ports' error counters (symbol_error, link_downed, port_rcv_errors), " +
		"MTU on both ends and the switch path; on RoCE also PFC/ECN and the GID index"
	FixTimeout = "the peer did not answer in time: check that pods can reach each other over TCP (NetworkPolicy, firewall) and that the server pod started"
	FixSlow    = "compare with ib_write_bw between the same nodes; check port rate/width (ibstat), PCIe width (lspci -vv), and the switch counters"
)

// Bandwidth judges one pair. For every expected rail pair and every
// requested op it returns exactly one check: pass only when every requested
// size was measured, the largest requested size meets the SKU's floor,
// neither side reported an error for that rail, and both pods exited 0.
func Bandwidth(in BWInput) BWResult {
	var res BWResult
	perOp := func(st reports.Status, msg, fix string) BWResult {
		for _, op := range in.Ops {
			c := in.check(op, "")
			setOutcome(&c, st, msg, fix)
			res.Checks = append(res.Checks, c)
		}
		return res
	}
	if len(in.Sizes) == 0 || len(in.Ops) == 0 {
		return perOp(reports.Error, "no op or no message size was requested: nothing to measure", "")
	}
	for _, s := range []Side{in.Client, in.Server} {
		if s.PodErr != nil {
			return perOp(reports.Error, fmt.Sprintf("pod %s on %s did not run to completion: %v", s.Pod, s.Node, s.PodErr), "")
		}
	}
	var cli, srv bw.ProbeOutput
	cPerr, cErr := probeout.ParseError(in.Client.Logs, bw.ProbeName, &cli)
	sPerr, sErr := probeout.ParseError(in.Server.Logs, bw.ProbeName, &srv)
	// A readable output lists the rails the pod saw, possibly none (no
	// device): that is a known zero, not an unknown.
	if cErr == nil {
		res.ClientRails = append([]bw.Rail{}, cli.Found...)
		res.ClientSight = &Sight{Pod: in.Client.Pod, View: cli.PodView}
		in.clientView = cli.PodView
	}
	if sErr == nil {
		res.ServerRails = append([]bw.Rail{}, srv.Found...)
		res.ServerSight = &Sight{Pod: in.Server.Pod, View: srv.PodView}
		in.serverView = srv.PodView
	}
	// A probe-wide error seen first-hand (not "the peer failed") names the
	// cause; the client's comes first, then the server's.
	for _, pe := range []struct {
		s    Side
		perr *probeout.Error
	}{{in.Client, cPerr}, {in.Server, sPerr}} {
		if pe.perr != nil && pe.perr.Kind != probeout.KindPeer {
			st, msg, fix := in.explain(pe.s, "", pe.perr)
			return perOp(st, msg, fix)
		}
	}
	if cErr != nil {
		return perOp(reports.Error, fmt.Sprintf("client pod %s on %s (exit %d) printed no bandwidth result: %v", in.Client.Pod, in.Client.Node, in.Client.Exit, cErr), "")
	}
	if cPerr != nil {
		st, msg, fix := in.explain(in.Client, "", cPerr)
		return perOp(st, msg, fix)
	}
	if in.SKUErr != nil {
		return perOp(reports.Error, in.SKUErr.Error(), "")
	}
	if len(cli.Found) == 0 {
		msg, fix := fmt.Sprintf("client pod %s on %s found no RDMA port to measure", in.Client.Pod, in.Client.Node), FixNoDevice
		if in.hiddenByExclusiveMode(in.Client) {
			msg, fix = msg+": "+exclusiveHides, FixSharedDevExclusive
		}
		return perOp(reports.Fail, msg, fix)
	}
	serverRails := srv.Found
	if sErr != nil {
		serverRails = nil // unknown: the client's own view of the pairing stands
	}
	// The server's result per (server rail, client rail), and per server
	// rail for those it recorded without a client rail (unpaired).
	srvByRail := map[string]bw.RailResult{}
	for _, rr := range srv.Rails {
		srvByRail[pairKey(rr.Local, rr.Peer)] = rr
		if rr.Peer == nil {
			srvByRail[rr.Local.Name()] = rr
		}
	}
	// The client's result per rail pair; a pair printed again is kept
	// aside: each (rail, op, size) is measured exactly once.
	got, again := map[string]bw.RailResult{}, map[string][]bw.RailResult{}
	for _, rr := range cli.Rails {
		k := pairKey(rr.Local, rr.Peer)
		if _, dup := got[k]; dup {
			again[k] = append(again[k], rr)
			continue
		}
		got[k] = rr
	}
	clientRails := cli.Found
	if in.OneRail {
		clientRails, serverRails = measuredRails(cli.Rails)
	}
	pairs := expectedPairs(clientRails, serverRails, in.RailMode)
	// A rail result the client printed for a pair we did not expect (the
	// server's list was unreadable) is judged too: nothing is dropped.
	seen := map[string]bool{}
	for _, p := range pairs {
		seen[pairKey(p.local, p.peer)] = true
	}
	for _, rr := range cli.Rails {
		if k := pairKey(rr.Local, rr.Peer); !seen[k] {
			seen[k] = true
			pairs = append(pairs, railPair{rr.Local, rr.Peer})
		}
	}
	for _, p := range pairs {
		rr, ok := got[pairKey(p.local, p.peer)]
		for _, op := range in.Ops {
			c := in.check(op, railLabel(p.local, p.peer))
			switch {
			case in.Device != "" && (p.local.Device != in.Device || (p.peer != nil && p.peer.Device != in.Device)):
				setOutcome(&c, reports.Error, fmt.Sprintf("the run named --device %s but the probe measured %s: not what was asked, so not judged "+
					"(the probe ignored its --device argument)", in.Device, c.Rail), FixUsage)
			case !ok:
				setOutcome(&c, reports.Fail, fmt.Sprintf("rail %s was to be measured but the client's output has no result for it", c.Rail), "")
			default:
				in.judgeRail(&c, op, rr, again[pairKey(p.local, p.peer)], srvByRail)
			}
			res.Checks = append(res.Checks, c)
		}
		res.LinkChecks = append(res.LinkChecks, in.linkCheck(railLabel(p.local, p.peer), rr, ok))
	}
	if in.Device != "" && !slices.ContainsFunc(pairs, func(p railPair) bool { return p.local.Device == in.Device }) {
		msg, fix := fmt.Sprintf("device %s was named (--device) but the client's output holds no result for it; the pod saw %s",
			in.Device, railsText(cli.Found)), FixNoDevice
		if slices.ContainsFunc(cli.Found, func(r bw.Rail) bool { return r.Device == in.Device }) {
			fix = FixUsage // visible, yet not measured: the probe ignored the flag
		}
		for _, op := range in.Ops {
			c := in.check(op, in.Device+" (named, not measured)")
			setOutcome(&c, reports.Fail, msg, fix)
			res.Checks = append(res.Checks, c)
		}
	}
	// Same mode: a server rail beyond the client's last one owes a result
	// too (the server records why it went unpaired).
	if in.RailMode != bw.RailsCross {
		for i := len(clientRails); i < len(serverRails); i++ {
			sr := serverRails[i]
			msg := fmt.Sprintf("server rail %s on %s has no client rail to pair with: the client pod on %s sees %d rail(s)",
				sr.Name(), in.Server.Node, in.Client.Node, len(clientRails))
			if rr, ok := srvByRail[sr.Name()]; ok && rr.Error != nil {
				msg += " (" + rr.Error.Message + ")"
			}
			for _, op := range in.Ops {
				c := in.check(op, "(no client rail)→"+sr.Name())
				setOutcome(&c, reports.Fail, msg, FixNoDevice)
				res.Checks = append(res.Checks, c)
			}
		}
	}
	// Nothing requested may vanish: an op without a single row is an error.
	for _, op := range in.Ops {
		if !slices.ContainsFunc(res.Checks, func(c reports.Check) bool { return c.ID == in.prefix()+op }) {
			c := in.check(op, "")
			setOutcome(&c, reports.Error, fmt.Sprintf("no rail pair of %s → %s could be judged for %s (client exit %d): see the evidence",
				in.Client.Node, in.Server.Node, op, in.Client.Exit), "")
			res.Checks = append(res.Checks, c)
		}
	}
	in.serverTrouble(res.Checks, sErr, sPerr, cPerr, srv, cli, got, clientRails, serverRails)
	// An exit code that contradicts a clean output is not a pass: the probe
	// knows something its JSON does not say. A non-zero exit that the
	// output explains (a rail's error, a missing size) is the probe's rule
	// "exit 0 only when everything requested was measured": that rail
	// already fails, and the rails it measured keep their verdict.
	for _, side := range []struct {
		s         Side
		explained bool
	}{
		{in.Client, cErr == nil && (cPerr != nil || len(cli.Incomplete()) > 0)},
		{in.Server, sErr == nil && (sPerr != nil || len(srv.Incomplete()) > 0)},
	} {
		s := side.s
		if s.WaitErr != nil {
			demotePasses(res.Checks, fmt.Sprintf("pod %s on %s did not end after its peer finished: %v", s.Pod, s.Node, s.WaitErr))
		}
		if s.Exit != 0 && !side.explained {
			demotePasses(res.Checks, fmt.Sprintf("pod %s on %s exited %d although its output shows this rail measured: "+
				"a non-zero exit is never a pass (see the evidence)", s.Pod, s.Node, s.Exit))
		}
	}
	return res
}

// ruleBothSides is said wherever the server's side turns a clean client
// measurement into an error.
const ruleBothSides = "an error on either side of a pair is never a pass"

// serverTrouble demotes the passing rows a server-side problem concerns,
// so that nothing the server said is dropped: an unreadable output (every
// row), the server's probe-wide "peer failed" while the client's output
// shows no failure (every row), a rail's "peer failed" that the client's
// result for that pair does not show (its rows), and a rail error on a
// pair the client never judged (every row). A server rail error on a pair
// the client measured is judgeRail's; an unpaired server rail has its own
// failing row.
func (in BWInput) serverTrouble(cs []reports.Check, sErr error, sPerr, cPerr *probeout.Error, srv, cli bw.ProbeOutput,
	got map[string]bw.RailResult, clientRails, serverRails []bw.Rail) {
	who := fmt.Sprintf("server pod %s on %s", in.Server.Pod, in.Server.Node)
	if sErr != nil {
		demoteRail(cs, "", fmt.Sprintf("%s: the client measured, but the server's output could not be read (%v): %s", ruleBothSides, sErr, who))
		return
	}
	clientFailed := cPerr != nil || slices.ContainsFunc(cli.Rails, func(rr bw.RailResult) bool { return rr.Error != nil })
	if sPerr != nil && sPerr.Kind == probeout.KindPeer && !clientFailed {
		demoteRail(cs, "", fmt.Sprintf("%s: %s reported that its peer failed (%s), while the client's output shows no failure", ruleBothSides, who, sPerr.Message))
	}
	for _, sr := range srv.Rails {
		if sr.Error == nil {
			continue
		}
		if sr.Peer == nil {
			unpairedRow := in.RailMode != bw.RailsCross && slices.ContainsFunc(serverRails[min(len(clientRails), len(serverRails)):],
				func(r bw.Rail) bool { return r.Name() == sr.Local.Name() })
			if !unpairedRow {
				demoteRail(cs, "", fmt.Sprintf("%s: %s recorded an error on its rail %s without a client rail (%s: %s)",
					ruleBothSides, who, sr.Local.Name(), sr.Error.Kind, sr.Error.Message))
			}
			continue
		}
		crr, ok := got[pairKey(*sr.Peer, &sr.Local)]
		switch {
		case !ok:
			demoteRail(cs, "", fmt.Sprintf("%s: %s recorded an error on rail pair %s → %s, which the client's output does not hold (%s: %s)",
				ruleBothSides, who, sr.Peer.Name(), sr.Local.Name(), sr.Error.Kind, sr.Error.Message))
		case crr.Error == nil && sr.Error.Kind == probeout.KindPeer:
			demoteRail(cs, railLabel(crr.Local, crr.Peer), fmt.Sprintf("%s: %s says its peer failed on rail %s (%s), while the client's result for it shows no error",
				ruleBothSides, who, sr.Local.Name(), sr.Error.Message))
		}
	}
}

// demoteRail turns the passing checks of one rail label ("" : every rail)
// into errors with reason.
func demoteRail(cs []reports.Check, rail, reason string) {
	for i := range cs {
		if cs[i].Status == reports.Pass && (rail == "" || cs[i].Rail == rail) {
			setOutcome(&cs[i], reports.Error, reason, "")
		}
	}
}

func railsText(rails []bw.Rail) string {
	if len(rails) == 0 {
		return "no RDMA port"
	}
	var names []string
	for _, r := range rails {
		names = append(names, r.Name())
	}
	return strings.Join(names, ", ")
}

// demotePasses turns every passing check into an error with reason.
func demotePasses(cs []reports.Check, reason string) {
	for i := range cs {
		if cs[i].Status == reports.Pass {
			setOutcome(&cs[i], reports.Error, reason, "")
		}
	}
}

// metric is what a pair feature measures on each (rail pair, op) and how
// it is judged: the one thing the bandwidth, latency and message-rate
// verdicts do not share. Chosen once per pair, so no two can mix.
type metric struct {
	prefix string // the check ids' family
	what   string // the titles' word
	// titleHead starts a check's title ("RDMA" unless set); memory, when
	// set, says where the buffers lived after the metric's word.
	titleHead, memory string
	// rails names the rails in the link check's title (what unless set).
	rails  string
	unit   string
	suffix string // measurement names: <op>_<size>_<suffix>
	// read takes the metric from one size's figures; false: not measured.
	read func(bw.Figures) (float64, bool)
	// smallest: the judged size is the smallest requested (message rate,
	// a small-message figure that larger sizes turn into a bandwidth one);
	// otherwise the largest.
	smallest bool
	// bound is the SKU's bar for op. optionalMissing: the SKU has none and
	// that is allowed (the check stays not-run with its values); err: the
	// SKU must have one and has not.
	bound func(sku *thresholds.SKU, op string) (b thresholds.Bound, optionalMissing, err error)
	fix   string // named when the bar is missed
	// heatUnit: the reports colour their pair heat map and fleet view by
	// this metric ("" keeps it off them).
	heatUnit string
	// localize: its failures between two nodes are evidence of a bad node,
	// port or link (a slow ping-pong or message rate alone is not).
	localize bool
	// linkRateNote: a miss also checks the port's trained link rate.
	linkRateNote bool
	// latencyStats: the judged size's typical, p99 and max latency are
	// recorded beside the average. Only for latency: a bandwidth READ run
	// at one QP and depth 1 carries a latency summary too.
	latencyStats bool
	// againstAlone, when set, judges a measured rail instead of a bound
	// (latency under load: against the same rail pair's figures alone),
	// inside the verdict, so that what the verdict checks after every
	// rail (the server's trouble, exit codes) still applies to it.
	againstAlone func(in BWInput, c *reports.Check, op string, rr bw.RailResult, run *bw.Report)
}

var (
	bandwidthMetric = metric{prefix: "bandwidth/", what: "bandwidth", unit: "Gb/s", suffix: "avg",
		read: func(f bw.Figures) (float64, bool) { return f.AvgGbps, true },
		bound: func(sku *thresholds.SKU, op string) (thresholds.Bound, error, error) {
			b, err := sku.BandwidthFloor(op)
			return b, nil, err
		},
		fix: FixSlow, linkRateNote: true, heatUnit: "Gb/s", localize: true}
	// gpuDirectMetric is bandwidth from GPU memory on both sides, judged
	// against the SKU's gpuDirectWrite floor for every op (the SKU has no
	// GPUDirect read floor, and a read's threshold source says so).
	gpuDirectMetric = func() metric {
		m := bandwidthMetric
		m.prefix, m.titleHead, m.memory, m.rails = GPUDirectPrefix, "GPUDirect RDMA", "GPU memory on both sides", "GPUDirect"
		m.bound = func(sku *thresholds.SKU, op string) (thresholds.Bound, error, error) {
			k := *sku
			k.Write, k.Read = k.GPUDirectWrite, k.GPUDirectWrite
			k.Read.Source = "the gpuDirectWrite floor (the SKU has no GPUDirect read floor): " + k.Read.Source
			b, err := k.BandwidthFloor(op)
			return b, nil, err
		}
		return m
	}()
	latencyMetric = metric{prefix: LatencyPrefix, what: "latency", unit: reports.UnitMicroseconds, suffix: "lat_avg",
		read: func(f bw.Figures) (float64, bool) {
			if f.Latency == nil {
				return 0, false
			}
			return f.Latency.Avg, true
		},
		bound: func(sku *thresholds.SKU, op string) (thresholds.Bound, error, error) {
			b, missing := sku.LatencyCeiling(op)
			return b, missing, nil
		},
		fix: FixSlowLatency, latencyStats: true}
	msgRateMetric = metric{prefix: MsgRatePrefix, what: "message rate", unit: reports.UnitMpps, suffix: "msgrate",
		read:     func(f bw.Figures) (float64, bool) { return f.MsgRateMpps, f.Iterations > 0 },
		smallest: true,
		bound: func(sku *thresholds.SKU, op string) (thresholds.Bound, error, error) {
			b, missing := sku.MsgRateFloor(op)
			return b, missing, nil
		},
		fix: FixSlowMsgRate}
)

// measures is the pair's metric, bandwidth by default.
func (in BWInput) measures() *metric {
	if in.metric == nil {
		return &bandwidthMetric
	}
	return in.metric
}

// prefix is the check ids' family: bandwidth/, latency/ or msgrate/.
func (in BWInput) prefix() string { return in.measures().prefix }

func (in BWInput) check(op, rail string) reports.Check {
	m := in.measures()
	head, what := cmp.Or(m.titleHead, "RDMA"), m.what
	if m.memory != "" {
		what += ", " + m.memory + ","
	}
	return reports.Check{ID: in.prefix() + op, Title: fmt.Sprintf("%s %s %s %s → %s", head, op, what, in.Client.Node, in.Server.Node),
		Nodes: []string{in.Client.Node, in.Server.Node}, Variant: in.Variant, Rail: rail, Evidence: in.evidence(),
		Traits: &reports.Traits{Pair: true, Op: op, HeatUnit: m.heatUnit, Localize: m.localize}}
}

// judgeRail fills one (rail pair, op) check.
//
// others are further results the client printed for the same rail pair
// (a duplicate: each (node, rail, op, size) is measured exactly once).
func (in BWInput) judgeRail(c *reports.Check, op string, rr bw.RailResult, others []bw.RailResult, srvByRail map[string]bw.RailResult) {
	m := in.measures()
	name, unit := func(size int) string { return fmt.Sprintf("%s_%s_%s", op, SizeName(size), m.suffix) }, m.unit
	port := rr.Local.Name()
	// Every run of this op the client printed for the pair: more than one
	// is a duplicate, and so is a size printed twice within a run.
	var runs []*bw.Report
	for _, x := range append([]bw.RailResult{rr}, others...) {
		for i := range x.Runs {
			if string(x.Runs[i].Params.Op) == op {
				runs = append(runs, &x.Runs[i])
			}
		}
	}
	var faults []string
	valueText := func(f bw.Figures) string {
		if v, ok := m.read(f); ok {
			return fmt.Sprintf("%g %s", v, unit)
		}
		return "no value"
	}
	if len(runs) > 1 {
		var vals []string
		for _, r := range runs {
			for _, sr := range r.Results {
				vals = append(vals, SizeName(sr.Local.Bytes)+" "+valueText(sr.Local))
			}
		}
		faults = append(faults, fmt.Sprintf("%s on %s measured twice in the client's output (%s): which one is the measurement is unknown",
			op, c.Rail, strings.Join(vals, "; ")))
	}
	var run *bw.Report
	if len(runs) > 0 {
		run = runs[0]
	}
	// The metric of each size the run completed (average bandwidth,
	// perftest's average latency or its MsgRate); a size without it is
	// missing. A latency run's summary is kept for its typical/p99/max.
	// Every size's figures are checked against the facts beside them.
	rate, rateNote := lineRateOf(rr.Local, rr.Peer, in.Client.Node == in.Server.Node)
	if rateNote != "" && !m.latencyStats {
		c.Evidence = append(c.Evidence, rateNote)
	}
	measured := map[int]float64{}
	first := map[int]bw.Figures{}
	lats := map[int]*lat.Summary{}
	if run != nil {
		for _, r := range run.Results {
			if prev, dup := first[r.Local.Bytes]; dup {
				faults = append(faults, fmt.Sprintf("%s %s on %s measured twice in one run (%s, then %s)",
					op, SizeName(r.Local.Bytes), c.Rail, valueText(prev), valueText(r.Local)))
				continue
			}
			first[r.Local.Bytes] = r.Local
			for _, f := range figureFaults(r.Local, m, rate) {
				faults = append(faults, SizeName(r.Local.Bytes)+": "+f)
			}
			if v, ok := m.read(r.Local); ok {
				measured[r.Local.Bytes] = v
			}
			if m.latencyStats && r.Local.Latency != nil {
				lats[r.Local.Bytes] = r.Local.Latency
			}
		}
	}
	judgedSize := slices.Max(in.Sizes)
	if m.smallest {
		judgedSize = slices.Min(in.Sizes)
	}
	var missing []string
	for _, size := range in.Sizes {
		v, ok := measured[size]
		if !ok {
			missing = append(missing, SizeName(size))
			continue
		}
		if size != judgedSize {
			c.Measured = append(c.Measured, reports.Measurement{Name: name(size), Node: in.Client.Node, Port: port, Value: v, Unit: unit})
		}
	}
	// A bandwidth floor must exist; a latency ceiling and a message-rate
	// floor are optional (the check then stays not-run with its values,
	// unless the rail failed).
	bound, noBound, err := m.bound(in.SKU, op)
	if err != nil {
		setOutcome(c, reports.Error, err.Error(), "")
		return
	}
	var judged *float64
	if v, ok := measured[judgedSize]; ok {
		judged = &v
	}
	jm, st, why := reports.Judge(name(judgedSize), unit, in.Client.Node, port, judged,
		reports.Threshold{Op: bound.Op, Value: bound.Value, Source: bound.Source})
	if judged != nil {
		// Nothing measured is said in the diagnosis, never as a 0 value.
		if noBound != nil {
			jm.Threshold = nil
		}
		c.Measured = append(c.Measured, jm)
		if l := lats[judgedSize]; l != nil {
			for _, x := range []struct {
				what string
				v    float64
			}{{"typical", l.Typical}, {"p99", l.P99}, {"max", l.Max}} {
				c.Measured = append(c.Measured, reports.Measurement{Name: fmt.Sprintf("%s_%s_lat_%s", op, SizeName(judgedSize), x.what),
					Node: in.Client.Node, Port: port, Value: x.v, Unit: unit})
			}
		}
		if f := first[judgedSize]; m.latencyStats && f.Disturbance != nil {
			c.Evidence = append(c.Evidence, DisturbanceNote(fmt.Sprintf("%s %s on %s", op, SizeName(judgedSize), c.Rail), f.Disturbance))
		}
	}
	// The server's own error for this very pair and op, if it recorded
	// one (a "peer" error there only echoes the client and is not its own).
	var srvErr *probeout.Error
	if rr.Peer != nil {
		if e, _ := opError(srvByRail[pairKey(*rr.Peer, &rr.Local)], op); e != nil && e.Kind != probeout.KindPeer {
			srvErr = e
		}
	}
	// The port's own counters must back the bytes each size claims.
	shorts, bytesNote := in.confirmBytes(op, run, rr)
	if bytesNote != "" {
		c.Evidence = append(c.Evidence, bytesNote)
	}
	// This op's own error on the rail; another op's is only named.
	own, other := opError(rr, op)
	if other != nil {
		c.Evidence = append(c.Evidence, fmt.Sprintf("%s on this rail failed: %s (its own check says so; %s ran in its own session and is judged on what it measured)",
			strings.SplitN(other.Message, ":", 2)[0], other.Message, op))
	}
	switch {
	case own != nil:
		side, perr := in.Client, own
		// "The peer failed": the server's own result for its rail says why.
		if perr.Kind == probeout.KindPeer && srvErr != nil {
			side, perr = in.Server, srvErr
		}
		st, msg, fix := in.explain(side, port, perr)
		if len(missing) > 0 {
			msg += fmt.Sprintf(" (not measured: %s)", strings.Join(missing, ", "))
		}
		setOutcome(c, st, msg, fix)
	case len(faults) > 0:
		setOutcome(c, reports.Error, "figures that cannot be true: "+strings.Join(faults, "; ")+
			" (a figure is judged only when the facts printed beside it agree with it)", FixImpossible)
	case len(shorts) > 0:
		setOutcome(c, reports.Error, "the port's own counters do not back the measurement: "+strings.Join(shorts, "; "), FixCountersShort)
	case srvErr != nil:
		// The client measured, yet the server recorded an error of its own
		// for this very pair: not a pass until someone looks.
		st, msg, fix := in.explain(in.Server, rr.Peer.Name(), srvErr)
		if st == reports.Fail {
			st = reports.Error
		}
		setOutcome(c, st, "the client measured this rail but the server reported: "+msg, fix)
	case len(missing) > 0:
		setOutcome(c, reports.Fail, fmt.Sprintf("requested size(s) %s not measured on %s, and the probe reported no error for them", strings.Join(missing, ", "), c.Rail), "")
	case m.againstAlone != nil:
		m.againstAlone(in, c, op, rr, run)
	case noBound != nil:
		// A SKU without a latency ceiling or message-rate floor: measured,
		// not judged.
		setOutcome(c, reports.NotRun, noBound.Error(), "")
	case st == reports.Fail:
		msg := why
		if m.linkRateNote && rr.Local.RateGbps > 0 && in.SKU.LinkRateGbps.Value != nil && rr.Local.RateGbps < *in.SKU.LinkRateGbps.Value {
			msg += fmt.Sprintf("; port %s runs at %g Gb/s, the SKU expects %g Gb/s (link trained down: cable or switch port)",
				port, rr.Local.RateGbps, *in.SKU.LinkRateGbps.Value)
		}
		fix := m.fix
		if m.latencyStats {
			if note, contended := contendedLatency(first[judgedSize], lats[judgedSize], jm, in.Client.Node); note != "" {
				msg += note
				if contended {
					fix = FixContendedLatency
				}
			}
		}
		setOutcome(c, reports.Fail, msg, fix)
	default:
		c.Status = st
	}
}

// opError is op's own error on a rail: the run's own error when the probe
// attributes errors per op (a run carries one), else the rail's (an older
// probe, or a failure of the whole rail such as a down port: then every
// op fails with it). other is the rail's error when it is another op's
// only: named in the evidence, never this op's result.
func opError(rr bw.RailResult, op string) (own, other *probeout.Error) {
	perOp := false
	for _, r := range rr.Runs {
		if r.Error == nil {
			continue
		}
		perOp = true
		if string(r.Params.Op) == op && own == nil {
			own = &probeout.Error{Kind: r.Error.Kind, Message: op + ": " + r.Error.Message}
		}
	}
	switch {
	case !perOp:
		return rr.Error, nil
	case own != nil:
		return own, nil
	}
	return nil, rr.Error
}

// explain turns a typed probe error into a status, a message naming the
// node, pod and port, and the fix.
func (in BWInput) explain(s Side, port string, e *probeout.Error) (reports.Status, string, string) {
	where := fmt.Sprintf("pod %s on %s", s.Pod, s.Node)
	if port != "" {
		where += ", port " + port
	}
	switch e.Kind {
	case probeout.KindNoDevice:
		if port != "" { // one rail has no counterpart: the message says which
			return reports.Fail, fmt.Sprintf("%s: %s", where, e.Message), FixNoDevice
		}
		if in.hiddenByExclusiveMode(s) {
			return reports.Fail, fmt.Sprintf("node %s advertises %s but no RDMA device is visible in pod %s: %s (%s)",
				s.Node, in.Resource, s.Pod, exclusiveHides, e.Message), FixSharedDevExclusive
		}
		return reports.Fail, fmt.Sprintf("node %s advertises %s but no RDMA device is visible in pod %s: device plugin / MOFED not ready (%s)",
			s.Node, in.Resource, s.Pod, e.Message), FixNoDevice
	case probeout.KindNoNetdev:
		return reports.Fail, fmt.Sprintf("%s: %s (network %q)", where, e.Message, in.Network), FixNoNetdev
	case probeout.KindLinkDown:
		return reports.Fail, fmt.Sprintf("%s: link down: %s", where, e.Message), FixLinkDown
	case probeout.KindMemlock:
		return reports.Fail, fmt.Sprintf("%s: memory registration refused: %s", where, e.Message), mr.FixMemlock
	case probeout.KindTransport:
		if st, ok := completionStatusOf(e.Message); ok {
			if st.text == remoteInvalid && softRoCE(port) {
				return reports.Fail, fmt.Sprintf("%s: RDMA transport error: %s: %s; %s", where, e.Message, st.means, rxeRefusedResend), FixRemoteInvalidRxe
			}
			return reports.Fail, fmt.Sprintf("%s: RDMA transport error: %s: %s", where, e.Message, st.means), st.fix
		}
		return reports.Fail, fmt.Sprintf("%s: RDMA transport error: %s", where, e.Message), FixTransport
	case probeout.KindTimeout:
		return reports.Fail, fmt.Sprintf("%s: timed out: %s", where, e.Message), FixTimeout
	case probeout.KindPeer:
		return reports.Fail, fmt.Sprintf("%s: its peer failed: %s", where, e.Message), FixPeer
	case probeout.KindGPUDirect:
		return reports.Fail, fmt.Sprintf("%s: GPUDirect RDMA could not register GPU memory: %s", where, e.Message), FixGPUDirect
	case probeout.KindNoGPU:
		return reports.Error, fmt.Sprintf("%s: the probe was asked to use a GPU and the pod has none it can use: %s", where, e.Message), FixNoGPU
	case probeout.KindUsage:
		return reports.Error, fmt.Sprintf("%s: the probe refused the arguments the suite gave it: %s", where, e.Message), FixUsage
	case probeout.KindInternal:
		return reports.Error, fmt.Sprintf("%s: the probe failed without a known cause: %s", where, e.Message), FixInternal
	}
	return reports.Error, fmt.Sprintf("%s: probe error (%s): %s", where, e.Kind, e.Message), ""
}

// Fixes for the probe error kinds that are not the fabric's.
const (
	FixPeer       = "the other side's row of this pair names why it failed: fix that first"
	FixImpossible = "the probe printed figures its own facts contradict: run the rdmaprobe image built with this suite version (--image); " +
		"if it repeats, report the results file (the evidence holds the probe's output)"
	FixNoGPU = "the pod asked for GPU memory (--gpus / GPUDirect) but sees no usable GPU: request nvidia.com/gpu in the pod, and check the GPU Operator's driver " +
		"and container toolkit on the node (nvidia-smi in a pod)"
	FixUsage    = "the probe image and the suite disagree on flags: run the rdmaprobe image built with this suite version (--image), or report the arguments in the evidence"
	FixInternal = "the probe's message and the pod's log tail in the evidence say where it stopped; rerun once, and report it with the results file if it repeats"
)

// exclusiveHides is why a shared-dev pod in exclusive RDMA netns mode sees
// no device.
const exclusiveHides = "the node's RDMA subsystem is in exclusive netns mode, which hides the host's RDMA devices " +
	"from pod network namespaces; the RDMA shared device plugin needs shared mode"

// hiddenByExclusiveMode says whether side s is a shared-device pod (no
// Multus network) that read exclusive RDMA netns mode and saw no device.
func (in BWInput) hiddenByExclusiveMode(s Side) bool {
	v := in.serverView
	if s.Pod == in.Client.Pod && s.Node == in.Client.Node {
		v = in.clientView
	}
	return in.Network == "" && v != nil && v.NetnsMode == bw.NetnsExclusive && v.DevicesError == "" && len(v.Devices) == 0
}

// setOutcome records a non-pass outcome where the report expects it:
// failures carry a diagnosis and fix, errors and not-runs a reason.
func setOutcome(c *reports.Check, st reports.Status, msg, fix string) {
	c.Status = st
	if st == reports.Fail {
		c.Diagnosis, c.Fix, c.Reason = msg, fix, ""
		return
	}
	// An error keeps its fix (the probe's kind says what to do); a
	// not-run says why in its reason alone.
	c.Reason, c.Diagnosis, c.Fix = msg, "", ""
	if st == reports.Error {
		c.Fix = fix
	}
}

type railPair struct {
	local bw.Rail
	peer  *bw.Rail
}

// expectedPairs is the coverage a pair owes: rail i ↔ rail i (a rail
// without a counterpart on either side still owes a result), or every
// client rail × every server rail. Without the server's list, the client's
// rails are expected with whatever peer it reports.
func expectedPairs(client, server []bw.Rail, mode string) []railPair {
	var out []railPair
	if server == nil {
		return nil
	}
	if mode == bw.RailsCross {
		for _, c := range client {
			for _, s := range server {
				out = append(out, railPair{c, &s})
			}
		}
		return out
	}
	for i, c := range client {
		p := railPair{local: c}
		if i < len(server) {
			s := server[i]
			p.peer = &s
		}
		out = append(out, p)
	}
	return out
}

// measuredRails are the client rails and their peers the client's output
// holds, in order, each once.
func measuredRails(rails []bw.RailResult) (client, server []bw.Rail) {
	seen := map[string]bool{}
	for _, rr := range rails {
		if !seen["c"+rr.Local.Name()] {
			seen["c"+rr.Local.Name()] = true
			client = append(client, rr.Local)
		}
		if rr.Peer != nil && !seen["s"+rr.Peer.Name()] {
			seen["s"+rr.Peer.Name()] = true
			server = append(server, *rr.Peer)
		}
	}
	return client, server
}

func pairKey(local bw.Rail, peer *bw.Rail) string {
	if peer == nil {
		return local.Name() + "→"
	}
	return local.Name() + "→" + peer.Name()
}

func railLabel(local bw.Rail, peer *bw.Rail) string {
	if peer == nil {
		return local.Name() + "→(no peer rail)"
	}
	return local.Name() + "→" + peer.Name()
}

func (in BWInput) evidence() []string {
	var ev []string
	for _, s := range []Side{in.Client, in.Server} {
		ev = append(ev, fmt.Sprintf("pod %s on %s: %s (exit %d)", s.Pod, s.Node, s.Command, s.Exit))
		for _, err := range []error{s.PodErr, s.WaitErr} {
			if err != nil {
				ev = append(ev, "  "+err.Error())
			}
		}
		if t := lastLines(s.Logs, 6); t != "" {
			ev = append(ev, "  "+strings.ReplaceAll(t, "\n", "\n  "))
		}
	}
	return ev
}

// SizeName prints a message size the way check measurements name it:
// units.Bytes without the space (64KiB, 1MiB, 100B).
func SizeName(b int) string { return strings.ReplaceAll(units.Bytes(int64(b)), " ", "") }
