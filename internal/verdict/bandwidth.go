package verdict

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/rdmasuite/rdmasuite/reports"
	"github.com/rdmasuite/rdmasuite/thresholds"
	"github.com/rdmasuite/rdmasuite/workloads/bw"
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
	Sizes    []int  // requested message sizes, bytes; the largest is judged (message rate: the smallest), and every size with a floor of its own (bySize)
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
	if len(in.Sizes) == 0 || len(in.Ops) == 0 {
		return in.everyOp(res, reports.Error, "no op or no message size was requested: nothing to measure", "")
	}
	for _, s := range []Side{in.Client, in.Server} {
		var na *NotAttempted
		if errors.As(s.PodErr, &na) {
			return in.everyOp(res, reports.NotRun, fmt.Sprintf("not measured: %s, so no run started in pod %s on %s", na.Why, s.Pod, s.Node), "")
		}
	}
	for _, s := range []Side{in.Client, in.Server} {
		if s.PodErr != nil {
			return in.everyOp(res, reports.Error, fmt.Sprintf("pod %s on %s did not run to completion: %v", s.Pod, s.Node, s.PodErr), "")
		}
	}
	var o bwOutputs
	o.cPerr, o.cErr = probeout.ParseError(in.Client.Logs, bw.ProbeName, &o.cli)
	o.sPerr, o.sErr = probeout.ParseError(in.Server.Logs, bw.ProbeName, &o.srv)
	// A readable output lists the rails the pod saw, possibly none (no
	// device): that is a known zero, not an unknown. Set before anything
	// is explained: the pods' views say whether exclusive mode hid a device.
	if o.cErr == nil {
		res.ClientRails = append([]bw.Rail{}, o.cli.Found...)
		res.ClientSight = &Sight{Pod: in.Client.Pod, View: o.cli.PodView}
		in.clientView = o.cli.PodView
	}
	if o.sErr == nil {
		res.ServerRails = append([]bw.Rail{}, o.srv.Found...)
		res.ServerSight = &Sight{Pod: in.Server.Pod, View: o.srv.PodView}
		in.serverView = o.srv.PodView
	}
	if st, msg, fix, stop := in.unjudgeable(o); stop {
		res = in.everyOp(res, st, msg, fix)
		// A side whose probe found no RDMA device blames its node,
		// whatever the pairing can tell.
		for i := range res.Checks {
			addHostFault(&res.Checks[i], in.Client, "", o.cPerr)
			addHostFault(&res.Checks[i], in.Server, "", o.sPerr)
		}
		return res
	}
	results := indexResults(o.cli, o.srv)
	pairs, clientRails, serverRails := in.pairsOwed(o)
	in.judgePairs(&res, pairs, results)
	res.Checks = in.namedDeviceUnmeasured(res.Checks, pairs, o.cli.Found)
	res.Checks = in.unpairedServerRails(res.Checks, clientRails, serverRails, results.server)
	res.Checks = in.vanishedOps(res.Checks)
	in.serverTrouble(res.Checks, o.sErr, o.sPerr, o.cPerr, o.srv, o.cli, results.client, clientRails, serverRails)
	in.exitTrouble(res.Checks, o)
	return res
}

// bwOutputs is both probes' outputs as parsed, kept together because the
// checks after the rails (the server's trouble, exit codes) weigh what each
// side could and could not say.
type bwOutputs struct {
	cli, srv     bw.ProbeOutput
	cPerr, sPerr *probeout.Error // a probe-wide error, as the probe typed it
	cErr, sErr   error           // the output could not be read at all
}

// everyOp gives every requested op one row with the same outcome: when the
// pair as a whole cannot be judged, no requested op may vanish from the
// report.
func (in BWInput) everyOp(res BWResult, st reports.Status, msg, fix string) BWResult {
	for _, op := range in.Ops {
		c := in.check(op, "")
		setOutcome(&c, st, msg, fix)
		res.Checks = append(res.Checks, c)
	}
	return res
}

// unjudgeable is what stops the pair as a whole, if anything does: then
// each op gets one row naming that cause instead of a row per rail. The
// first that applies decides: a side's own probe-wide error (client
// first), an unreadable client output, the client's "peer failed", the
// SKU, then a client that found nothing to measure.
func (in BWInput) unjudgeable(o bwOutputs) (st reports.Status, msg, fix string, stop bool) {
	// A probe-wide error seen first-hand (not "the peer failed") names the
	// cause; the client's comes first, then the server's.
	for _, pe := range []struct {
		s    Side
		perr *probeout.Error
	}{{in.Client, o.cPerr}, {in.Server, o.sPerr}} {
		if pe.perr != nil && pe.perr.Kind != probeout.KindPeer {
			st, msg, fix = in.explain(pe.s, "", pe.perr)
			return st, msg, fix, true
		}
	}
	if o.cErr != nil {
		return reports.Error, fmt.Sprintf("client pod %s on %s (exit %d) printed no bandwidth result: %v", in.Client.Pod, in.Client.Node, in.Client.Exit, o.cErr), "", true
	}
	if o.cPerr != nil {
		st, msg, fix = in.explain(in.Client, "", o.cPerr)
		return st, msg, fix, true
	}
	if in.SKUErr != nil {
		return reports.Error, in.SKUErr.Error(), "", true
	}
	if len(o.cli.Found) == 0 {
		msg, fix = fmt.Sprintf("client pod %s on %s found no RDMA port to measure", in.Client.Pod, in.Client.Node), FixNoDevice
		if in.hiddenByExclusiveMode(in.Client) {
			msg, fix = msg+": "+exclusiveHides, FixSharedDevExclusive
		}
		return reports.Fail, msg, fix, true
	}
	return "", "", "", false
}

// pairResults is every rail result both outputs hold, indexed by rail pair
// once, so that each row and the server's trouble look up the same result.
type pairResults struct {
	// client is the client's result per rail pair; again holds a pair
	// printed again, kept aside: each (rail, op, size) is measured
	// exactly once, and a second result is a fault, not a replacement.
	client map[string]bw.RailResult
	again  map[string][]bw.RailResult
	// server is the server's result per (server rail, client rail), and
	// per server rail for those it recorded without a client rail
	// (unpaired).
	server map[string]bw.RailResult
}

func indexResults(cli, srv bw.ProbeOutput) pairResults {
	r := pairResults{client: map[string]bw.RailResult{}, again: map[string][]bw.RailResult{}, server: map[string]bw.RailResult{}}
	for _, rr := range srv.Rails {
		r.server[pairKey(rr.Local, rr.Peer)] = rr
		if rr.Peer == nil {
			r.server[rr.Local.Name()] = rr
		}
	}
	for _, rr := range cli.Rails {
		k := pairKey(rr.Local, rr.Peer)
		if _, dup := r.client[k]; dup {
			r.again[k] = append(r.again[k], rr)
			continue
		}
		r.client[k] = rr
	}
	return r
}

// pairsOwed is every rail pair the pair owes a row, with the client and
// server rails that coverage was drawn from: the rails both sides found
// (or, for one named device, those the probes selected), then any pair
// the client printed beyond them.
func (in BWInput) pairsOwed(o bwOutputs) (pairs []railPair, clientRails, serverRails []bw.Rail) {
	serverRails = o.srv.Found
	if o.sErr != nil {
		serverRails = nil // unknown: the client's own view of the pairing stands
	}
	clientRails = o.cli.Found
	if in.OneRail {
		clientRails, serverRails = measuredRails(o.cli.Rails)
	}
	pairs = expectedPairs(clientRails, serverRails, in.RailMode)
	// A rail result the client printed for a pair we did not expect (the
	// server's list was unreadable) is judged too: nothing is dropped.
	seen := map[string]bool{}
	for _, p := range pairs {
		seen[pairKey(p.local, p.peer)] = true
	}
	for _, rr := range o.cli.Rails {
		if k := pairKey(rr.Local, rr.Peer); !seen[k] {
			seen[k] = true
			pairs = append(pairs, railPair{rr.Local, rr.Peer})
		}
	}
	return pairs, clientRails, serverRails
}

// judgePairs adds one row per (rail pair, op) and one link row per rail
// pair. A rail of a device the run did not name is refused before its
// figures are read: measuring the wrong device is not evidence about the
// right one.
func (in BWInput) judgePairs(res *BWResult, pairs []railPair, results pairResults) {
	for _, p := range pairs {
		rr, ok := results.client[pairKey(p.local, p.peer)]
		for _, op := range in.Ops {
			c := in.check(op, railLabel(p.local, p.peer))
			switch {
			case in.Device != "" && (p.local.Device != in.Device || (p.peer != nil && p.peer.Device != in.Device)):
				setOutcome(&c, reports.Error, fmt.Sprintf("the run named --device %s but the probe measured %s: not what was asked, so not judged "+
					"(the probe ignored its --device argument)", in.Device, c.Rail), FixUsage)
			case !ok:
				setOutcome(&c, reports.Fail, fmt.Sprintf("rail %s was to be measured but the client's output has no result for it", c.Rail), "")
			default:
				in.judgeRail(&c, op, rr, results.again[pairKey(p.local, p.peer)], results.server)
			}
			res.Checks = append(res.Checks, c)
		}
		res.LinkChecks = append(res.LinkChecks, in.linkCheck(railLabel(p.local, p.peer), rr, ok))
	}
}

// namedDeviceUnmeasured adds a failing row per op when the run named a
// device (--device) and no judged pair is on it: otherwise rows about
// other devices, or none, would hide that the one asked for went
// unmeasured.
func (in BWInput) namedDeviceUnmeasured(cs []reports.Check, pairs []railPair, found []bw.Rail) []reports.Check {
	if in.Device == "" || slices.ContainsFunc(pairs, func(p railPair) bool { return p.local.Device == in.Device }) {
		return cs
	}
	msg, fix := fmt.Sprintf("device %s was named (--device) but the client's output holds no result for it; the pod saw %s",
		in.Device, railsText(found)), FixNoDevice
	if slices.ContainsFunc(found, func(r bw.Rail) bool { return r.Device == in.Device }) {
		fix = FixUsage // visible, yet not measured: the probe ignored the flag
	}
	for _, op := range in.Ops {
		c := in.check(op, in.Device+" (named, not measured)")
		setOutcome(&c, reports.Fail, msg, fix)
		cs = append(cs, c)
	}
	return cs
}

// unpairedServerRails adds failing rows for the server rails beyond the
// client's last one. Same mode only: a server rail beyond the client's
// last one owes a result too (the server records why it went unpaired),
// while cross mode pairs every rail with every other.
func (in BWInput) unpairedServerRails(cs []reports.Check, clientRails, serverRails []bw.Rail, srvByRail map[string]bw.RailResult) []reports.Check {
	if in.RailMode == bw.RailsCross {
		return cs
	}
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
			cs = append(cs, c)
		}
	}
	return cs
}

// vanishedOps adds an error row for every requested op that has none
// yet: nothing requested may vanish from the report.
func (in BWInput) vanishedOps(cs []reports.Check) []reports.Check {
	for _, op := range in.Ops {
		if !slices.ContainsFunc(cs, func(c reports.Check) bool { return c.ID == in.prefix()+op }) {
			c := in.check(op, "")
			setOutcome(&c, reports.Error, fmt.Sprintf("no rail pair of %s → %s could be judged for %s (client exit %d): see the evidence",
				in.Client.Node, in.Server.Node, op, in.Client.Exit), "")
			cs = append(cs, c)
		}
	}
	return cs
}

// exitTrouble demotes the passes a pod's end contradicts. An exit code
// that contradicts a clean output is not a pass: the probe knows something
// its JSON does not say. A non-zero exit that the output explains (a
// rail's error, a missing size) is the probe's rule "exit 0 only when
// everything requested was measured": that rail already fails, and the
// rails it measured keep their verdict.
func (in BWInput) exitTrouble(cs []reports.Check, o bwOutputs) {
	for _, side := range []struct {
		s         Side
		explained bool
	}{
		{in.Client, o.cErr == nil && (o.cPerr != nil || len(o.cli.Incomplete()) > 0)},
		{in.Server, o.sErr == nil && (o.sPerr != nil || len(o.srv.Incomplete()) > 0)},
	} {
		s := side.s
		if s.WaitErr != nil {
			demotePasses(cs, fmt.Sprintf("pod %s on %s did not end after its peer finished: %v", s.Pod, s.Node, s.WaitErr))
		}
		if s.Exit != 0 && !side.explained {
			demotePasses(cs, fmt.Sprintf("pod %s on %s exited %d although its output shows this rail measured: "+
				"a non-zero exit is never a pass (see the evidence)", s.Pod, s.Node, s.Exit))
		}
	}
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
	// floor names the SKU's bandwidth floor that judges op, when that
	// floor may give floors per message size (bySize): every requested
	// size with one of its own is judged against it (judgedBounds).
	floor func(op string) string
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
		floor: func(op string) string { return op },
		fix:   FixSlow, linkRateNote: true, heatUnit: "Gb/s", localize: true}
	// gpuDirectMetric is bandwidth from GPU memory on both sides, judged
	// against the SKU's gpuDirectWrite floor for every op (the SKU has no
	// GPUDirect read floor, and a read's threshold source says so).
	gpuDirectMetric = func() metric {
		m := bandwidthMetric
		m.prefix, m.titleHead, m.memory, m.rails = GPUDirectPrefix, "GPUDirect RDMA", "GPU memory on both sides", "GPUDirect"
		m.bound = func(sku *thresholds.SKU, op string) (thresholds.Bound, error, error) {
			if missing := sku.Given("gpuDirectWrite"); missing != nil {
				return thresholds.Bound{}, missing, nil // a SKU that does not judge GPUDirect: not-run
			}
			k := *sku
			k.Write, k.Read = k.GPUDirectWrite, k.GPUDirectWrite
			k.Read.Source = "the gpuDirectWrite floor (the SKU has no GPUDirect read floor): " + k.Read.Source
			b, err := k.BandwidthFloor(op)
			return b, nil, err
		}
		m.floor = func(string) string { return "gpuDirectWrite" }
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
