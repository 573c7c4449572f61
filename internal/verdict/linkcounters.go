package verdict

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/rdmasuite/rdmasuite/reports"
	"github.com/rdmasuite/rdmasuite/workloads/bw"
	"github.com/rdmasuite/rdmasuite/workloads/portcounters"
)

// The port counters each side read around every (op, size).
// Two judgements come from them: the link stayed clean while it carried
// the pair's traffic (one check per rail pair, <prefix>link), and the
// port's own data or packet counter backs the bytes each measurement
// claims (part of the op's check: a claim the port does not back is an
// error, the traffic went elsewhere).

// byteTolerance is the fraction below a claim a port counter may read and
// still confirm it: port_*_data count 4-octet words, and hw_counters are
// cached for their lifespan. Headers, ACKs and retransmissions only make a
// counter larger than the payload, so no more is needed.
const byteTolerance = 0.01

// maxRecorded bounds the recorded (not judged) counter lines a link check
// keeps in its evidence.
const maxRecorded = 6

// Fixes named by the link check and the byte confirmation.
const (
	FixDirtyLink = "the link dropped, corrupted or re-sent packets while it carried the test: look at the side whose " +
		"receive, sequence or physical counters rose (perfquery -x, or ethtool -S on RoCE, on that node), reseat or " +
		"replace its cable or transceiver, check the switch port's error counters; on RoCE also PFC/ECN (pause and CNP " +
		"counters) and the MTU on the path"
	FixCountersReset = "run the check again while nothing resets the port counters: no perfquery -R or counter-clearing agent " +
		"(some fabric monitors and exporters clear them on a schedule) and no driver reload (the MOFED/DOCA driver container " +
		"restarting) during the run; the node's driver container restarts and its kernel log say which it was"
	FixCountersShort = "the port the check judged did not carry the bytes the measurement claims: the traffic went " +
		"another way (another rail, a loopback through memory, the wrong device): check the pod's devices and GIDs " +
		"(rdmaprobe devices), the routing of the rail's subnet and the NIC-to-netdev mapping"
)

// counterSide is one side's deltas around one measurement.
type counterSide struct {
	who    string // client or server
	node   string
	port   string
	during string // "write 64KiB"
	d      *portcounters.Deltas
	why    string // why d is nil
	// other says why d is not the rail's own: the port the deltas were
	// read on is not the one judged (they are not used then).
	other string
}

// sides lists both sides' deltas of one size; a result without counters
// (an older probe) names that instead of looking clean.
func (in BWInput) counterSides(rr bw.RailResult, during string, sc *bw.SizeCounters) []counterSide {
	cli := counterSide{who: "client", node: in.Client.Node, port: rr.Local.Name(), during: during}
	srv := counterSide{who: "server", node: in.Server.Node, during: during}
	if rr.Peer != nil {
		srv.port = rr.Peer.Name()
	}
	if sc == nil {
		cli.why = "the probe reported no port counters (a probe older than this suite: run the rdmaprobe image of this version)"
		srv.why = cli.why
		return []counterSide{cli, srv}
	}
	cli.d, cli.why = sc.Local, sc.LocalErr
	srv.d, srv.why = sc.Peer, sc.PeerErr
	for _, s := range []*counterSide{&cli, &srv} {
		if s.d == nil && s.why == "" {
			s.why = "no port counters and no reason given"
		}
		s.checkPort()
	}
	return []counterSide{cli, srv}
}

// checkPort sets other when the deltas were read on another port than the
// side's rail: another port's clean deltas must not pass the rail, nor
// another port's errors fail it.
func (s *counterSide) checkPort() {
	if s.d == nil {
		return
	}
	got := fmt.Sprintf("%s/%d", s.d.Device, s.d.Port)
	switch {
	case s.port == "":
		s.other = fmt.Sprintf("%s during %s: the counters are of port %s, and the rail they were to bracket is not known: "+
			"they cannot be shown to be its", s.where(), s.during, got)
	case got != s.port:
		s.other = fmt.Sprintf("%s during %s: the counters are of port %s, not of the rail's port %s: "+
			"another port's counters say nothing about this rail", s.where(), s.during, got, s.port)
	}
}

func (s counterSide) where() string { return fmt.Sprintf("%s %s on %s", s.who, s.port, s.node) }

// claims are what one size of op moved across each side's port: the
// payload in each direction (latency ping-pongs move it both ways, and so
// does a bidirectional run).
func claims(op string, p bw.Params, sr bw.SizeResult, mtu int) (client, server []portcounters.Claim) {
	n := uint64(sr.Local.Iterations)
	size := uint64(max(sr.Local.Bytes, 0))
	packetsPer := uint64(1)
	if mtu > 0 && size > uint64(mtu) {
		packetsPer = (size + uint64(mtu) - 1) / uint64(mtu)
	}
	claim := func(d portcounters.Direction, msgs uint64) portcounters.Claim {
		return portcounters.Claim{Direction: d, Bytes: msgs * size, Packets: msgs * packetsPer, MTU: mtu}
	}
	tx, rx := portcounters.Transmit, portcounters.Receive
	pingPong := p.Latency && bw.Op(op).PingPongs()
	switch {
	case pingPong:
		client = []portcounters.Claim{claim(tx, n), claim(rx, n)}
		server = []portcounters.Claim{claim(rx, n), claim(tx, n)}
	case op == string(bw.OpRead):
		client, server = []portcounters.Claim{claim(rx, n)}, []portcounters.Claim{claim(tx, n)}
	default:
		client, server = []portcounters.Claim{claim(tx, n)}, []portcounters.Claim{claim(rx, n)}
	}
	if sr.Remote != nil && sr.Remote.Iterations > 0 && !pingPong {
		m := uint64(sr.Remote.Iterations)
		client = append(client, claim(rx, m))
		server = append(server, claim(tx, m))
	}
	return client, server
}

// confirmBytes asks each side's port whether it carried what every size of
// the run claims. shorts are the claims a port did not back (the op's
// check is an error then); impossible are counters that cannot be taken
// as the port's (another port's, or deltas their own readings contradict:
// figures that cannot be true, also an error); note says, once, what
// confirmed the bytes or why they could not be.
func (in BWInput) confirmBytes(op string, run *bw.Report, rr bw.RailResult) (shorts, impossible []string, note string) {
	if run == nil || len(run.Results) == 0 {
		return nil, nil, ""
	}
	if rr.Peer != nil && in.Client.Node == in.Server.Node && rr.Peer.Name() == rr.Local.Name() {
		return nil, nil, fmt.Sprintf("bytes not confirmed by port counters: client and server share port %s on %s, where the traffic "+
			"can turn inside the device without crossing the port", rr.Local.Name(), in.Client.Node)
	}
	confirmedBy := map[string]bool{}
	var unconfirmable []string
	for _, sr := range run.Results {
		during := op + " " + SizeName(sr.Local.Bytes)
		cc, sc := claims(op, run.Params, sr, run.Device.MTU)
		for _, s := range in.counterSides(rr, during, sr.Counters) {
			want := cc
			if s.who == "server" {
				want = sc
			}
			if s.other != "" {
				impossible = append(impossible, s.other)
				continue
			}
			if s.d == nil {
				unconfirmable = append(unconfirmable, s.where()+": "+s.why)
				continue
			}
			for _, cl := range want {
				c := portcounters.ConfirmBytes(*s.d, cl, byteTolerance)
				switch c.Verdict {
				case portcounters.Confirmed:
					confirmedBy[s.who+" "+c.Counter] = true
				case portcounters.Impossible:
					impossible = append(impossible, fmt.Sprintf("%s during %s: %s", s.where(), during, c.Reason))
				case portcounters.Short:
					shorts = append(shorts, fmt.Sprintf("%s during %s (%s): %s", s.where(), during, cl.Direction, c.Reason))
				default:
					unconfirmable = append(unconfirmable, fmt.Sprintf("%s (%s): %s", s.where(), cl.Direction, c.Reason))
				}
			}
		}
	}
	if len(confirmedBy) > 0 {
		note = "port counters confirm the bytes of every measured size (" + strings.Join(slices.Sorted(maps.Keys(confirmedBy)), ", ") + ")"
	}
	if len(unconfirmable) > 0 {
		slices.Sort(unconfirmable)
		unconfirmable = slices.Compact(unconfirmable)
		if note != "" {
			note += "; "
		}
		note += "bytes not confirmed by port counters: " + strings.Join(unconfirmable, "; ")
	}
	return shorts, slices.Compact(impossible), note
}

// linkCheck judges the counters of every measurement the client printed
// for one rail pair (the sizes it completed and the one that failed, if
// any), on both sides, against the SKU's allowances (the counter table's
// defaults where the SKU sets none).
func (in BWInput) linkCheck(label string, rr bw.RailResult, ok bool) reports.Check {
	c := reports.Check{ID: in.prefix() + "link", Title: fmt.Sprintf("the %s rails' port counters stayed clean %s → %s", cmp.Or(in.measures().rails, in.measures().what), in.Client.Node, in.Server.Node),
		Nodes: []string{in.Client.Node, in.Server.Node}, Variant: in.Variant, Rail: label, Evidence: in.evidence(),
		Traits: &reports.Traits{Pair: true, Link: true, Localize: in.measures().localize}}
	allow, allowSrc := in.SKU.CounterAllowances()
	if allowSrc == "" {
		allowSrc = "workloads/portcounters/COUNTERS.md defaults (0 for every error counter)"
	} else {
		allowSrc = "SKU " + in.SKU.Name + " portCounters: " + allowSrc
	}
	var brackets []counterSide
	if ok {
		for _, run := range rr.Runs {
			if !slices.Contains(in.Ops, string(run.Params.Op)) {
				continue
			}
			for _, sr := range run.Results {
				brackets = append(brackets, in.counterSides(rr, string(run.Params.Op)+" "+SizeName(sr.Local.Bytes), sr.Counters)...)
			}
			if run.FailedCounters != nil {
				// The failed size: only the client's side was read.
				during := string(run.Params.Op) + " " + SizeName(run.FailedSize) + " (failed)"
				cs := in.counterSides(rr, during, run.FailedCounters)
				brackets = append(brackets, cs[0])
			}
		}
	}
	if len(brackets) == 0 {
		setOutcome(&c, reports.NotRun, fmt.Sprintf("no measurement on %s completed or failed with its counters read: nothing to bracket "+
			"(the rail's %s checks say why)", label, in.measures().what), "")
		return c
	}
	var fails, unknowns, records, others, impossible, resets []string
	over := map[string]int{}           // judged counters over their allowance, per side
	sideOf := map[string]counterSide{} // the sides read: node and port of each
	untrusted := map[string]bool{}     // sides whose counts cannot be the rail's
	for _, b := range brackets {
		sideOf[b.who] = b
		if b.other != "" {
			others = append(others, b.other)
			untrusted[b.who] = true
			continue
		}
		if b.d == nil {
			unknowns = append(unknowns, b.where()+": "+b.why)
			continue
		}
		if b.d.Problem == "" && b.d.JudgedWatched() == 0 {
			// A port read with nothing on it that could fail the link
			// (both groups absent: a pod's compat device in shared netns
			// mode without the host's /sys) is not a clean link.
			what := "no counter the table judges was read"
			if len(b.d.Absent) > 0 {
				var gs []string
				for _, g := range b.d.Absent {
					gs = append(gs, string(g)+"/")
				}
				what += " (absent: " + strings.Join(gs, ", ") + ")"
			}
			unknowns = append(unknowns, b.where()+": "+what)
			continue
		}
		for _, f := range portcounters.Judge(*b.d, allow) {
			line := fmt.Sprintf("%s during %s: %s", b.where(), b.during, f.Message)
			switch {
			case f.Status == portcounters.Contradicted:
				impossible = append(impossible, line)
				untrusted[b.who] = true
			case f.Status == portcounters.Reset:
				resets = append(resets, line)
			case f.Severity == portcounters.Fail:
				over[b.who]++
				fails = append(fails, line)
			case f.Severity == portcounters.Unknown:
				unknowns = append(unknowns, line)
			default:
				records = append(records, line)
			}
		}
	}
	for _, who := range []string{"client", "server"} {
		b, seen := sideOf[who]
		if !seen || untrusted[who] {
			continue
		}
		c.Measured = append(c.Measured, reports.Measurement{Name: who + "_counters_over_allowance", Node: b.node, Port: b.port,
			Value: float64(over[who]), Unit: "counters", Threshold: &reports.Threshold{Op: "<=", Value: 0, Source: allowSrc}})
	}
	records = slices.Compact(records)
	if len(records) > maxRecorded {
		// Congestion counters move on every size of a busy RoCE fabric: a
		// 1024-node run keeps the first few per rail pair, and the count.
		records = append(records[:maxRecorded], fmt.Sprintf("… and %d more", len(records)-maxRecorded))
	}
	if len(records) > 0 {
		c.Evidence = append(c.Evidence, "recorded, not judged: "+strings.Join(records, "; "))
	}
	switch {
	case len(others) > 0:
		setOutcome(&c, reports.Error, fmt.Sprintf("the port counters reported for %s are not the rail's own (%d): %s",
			label, len(others), strings.Join(slices.Compact(others), "; ")), FixImpossible)
	case len(impossible) > 0:
		setOutcome(&c, reports.Error, "figures that cannot be true: "+strings.Join(impossible, "; ")+
			" (a counter is judged only when the readings printed beside its delta agree with it)", FixImpossible)
	case len(fails) > 0:
		setOutcome(&c, reports.Fail, fmt.Sprintf("port counters rose above their allowance while %s carried the test (%d): %s",
			label, len(fails), strings.Join(fails, "; ")), FixDirtyLink)
	case len(resets) > 0:
		setOutcome(&c, reports.Error, fmt.Sprintf("the link's counters cannot be judged clean on %s (%d): %s", label, len(resets),
			strings.Join(resets, "; ")), FixCountersReset)
	case len(unknowns) > 0:
		slices.Sort(unknowns)
		setOutcome(&c, reports.NotRun, "the link's counters could not all be judged: "+strings.Join(slices.Compact(unknowns), "; "), "")
	default:
		c.Status = reports.Pass
		c.Evidence = append(c.Evidence, fmt.Sprintf("port counters read around %d measurement side(s) of %s: no judged counter rose above its allowance (%s)",
			len(brackets), label, allowSrc))
	}
	return c
}
