package doctor

import (
	"fmt"
	"slices"
	"strings"

	"github.com/rdmasuite/rdmasuite/workloads/portcounters"
)

// The host probe reads every RDMA port's counters right before and
// right after its sampling window while the suite runs nothing on the
// node. An error counter that rises there was raised by no load of ours:
// the cable, the transceiver or the port is bad. Each counter is judged as
// workloads/portcounters/COUNTERS.md documents it, with the table's default
// allowances (0 for every judged counter: the doctor has no SKU to raise
// one). Counters the table only records (congestion signals, QP-teardown
// flushes) are shown beside the node's pass, and one that could not be
// judged (unreadable, reset, a group not listable, a port not readable)
// makes the node check not-run naming it: never a pass. A counter stuck at
// its maximum is noted instead (see atRestFacts).
//
// Severity Warning, not Critical: the port still carries traffic, so the
// node's RDMA capacity is at risk, not lost (a port that went down is
// rdma-port-down's, Critical). A 2 s window catches a link that is bad now;
// the link checks of the measurements then show what it costs under load.

const PortErrorsAtRest = "port-errors-at-rest"

var _ = register(Rule{ID: PortErrorsAtRest, Severity: Warning, Seed: "field",
	Cause: "an RDMA port's error counters rose while the suite ran nothing on the node (two reads of the port's counters over the host probe's window): " +
		"errors or link retrains without any load of ours point at a bad cable, transceiver or port",
	Fix: "reseat the port's cable and transceiver, then replace them (or move the link to another switch port) if the counters keep rising; " +
		"ibstat for the link state, perfquery -x (InfiniBand) or ethtool -S <netdev> (RoCE) for the counters, on mlx5 mlxlink -d <dev> -p <port> -c -m " +
		"for the physical counters, the bit error rate and the cable or module; check the switch port's counters; until fixed, move the workload off the port " +
		"(leave it out of the run with --unused-ports)",
	Raises: "host probe: a counter the table judges (workloads/portcounters/COUNTERS.md: physical/link, receive, discard, transport and completion errors; " +
		"allowance 0) rose between two reads of the port's counters/ and hw_counters/ over the probe's window (--node-probe-window, 2 s by default). " +
		"The evidence names each counter with its rise and meaning, and whether the port was idle or carried other traffic",
	Silent: []string{"only data, packet or operation counters moved (other traffic, no error)",
		"a congestion counter moved (CNPs, ECN marks, port_xmit_wait): recorded beside the node's pass, judged only under a SKU bound",
		"a counter unreadable or reset, a group not listable, a port not readable, a probe without a window: the node check is not-run naming the port",
		"a counter stuck at its maximum (8- or 16-bit IBTA counters on long-lived ports): noted beside the node's pass with the reset to run (perfquery -R)",
		"a group the device does not have (rxe has no counters/): recorded beside the pass",
		"a port declared in --unused-ports (noted beside the node's pass)"},
	Eval: func(v *View) []Hit {
		var out []Hit
		for _, n := range v.Nodes {
			if n.Host == nil {
				continue
			}
			for _, p := range n.Host.PortsAtRest {
				if p.Deltas == nil || v.portUnused(n.Name, p.Port) {
					continue
				}
				fs := portcounters.Judge(*p.Deltas, nil)
				if portcounters.Worst(fs) != portcounters.Fail {
					continue
				}
				out = append(out, hit(n.Name, atRestEvidence(p, fs)...))
			}
		}
		return out
	}})

// atRestEvidence is a failing port's evidence: each judged counter that
// rose, with its rise and meaning (Judge's message), whether the port was
// idle, and what on it could not be judged.
func atRestEvidence(p PortAtRest, fs []portcounters.Finding) []string {
	secs := p.Deltas.Interval().Seconds()
	var ev, unknown []string
	for _, f := range fs {
		switch f.Severity {
		case portcounters.Fail:
			ev = append(ev, fmt.Sprintf("host: port %s at rest over %.1f s: %s", p.Port, secs, f.Message))
		case portcounters.Unknown:
			unknown = append(unknown, fmt.Sprintf("host: port %s at rest, not judged: %s", p.Port, f.Message))
		}
	}
	ev = append(ev, portTraffic(p.Port, *p.Deltas))
	return append(ev, unknown...)
}

// trafficCounters are the counters that show whether a port carried
// anything: the ones ConfirmBytes reads (Compact keeps them at 0). Packets
// come from counters/ where the device has a PMA, else from rxe's
// hw_counters; data words only from counters/.
var trafficCounters = struct{ data, packets, rxePackets []string }{
	data:       []string{"port_rcv_data", "port_xmit_data"},
	packets:    []string{"port_rcv_packets", "port_xmit_packets"},
	rxePackets: []string{"rcvd_pkts", "sent_pkts"},
}

// portTraffic is the line saying whether the port was idle over the
// window or carried other traffic (the errors count either way: a healthy
// link loses no frames at any load).
func portTraffic(port string, d portcounters.Deltas) string {
	secs := d.Interval().Seconds()
	sum := func(g portcounters.Group, names []string) (n uint64, from []string) {
		for _, name := range names {
			if x, ok := d.Get(g, name); ok && x.Status == portcounters.OK {
				n += x.Delta
				from = append(from, x.Key())
			}
		}
		return n, from
	}
	words, wordsFrom := sum(portcounters.Counters, trafficCounters.data)
	packets, packetsFrom := sum(portcounters.Counters, trafficCounters.packets)
	if len(packetsFrom) == 0 {
		packets, packetsFrom = sum(portcounters.HWCounters, trafficCounters.rxePackets)
	}
	read := append(append([]string{}, wordsFrom...), packetsFrom...)
	switch {
	case len(read) == 0:
		return fmt.Sprintf("host: port %s: whether it carried other traffic over the %.1f s window is unknown "+
			"(no data or packet counter was read on both sides); the errors count all the same", port, secs)
	case words == 0 && packets == 0:
		slices.Sort(read)
		return fmt.Sprintf("host: port %s was idle over the %.1f s window: %s did not move", port, secs, strings.Join(read, ", "))
	}
	var what, from []string
	if len(packetsFrom) > 0 {
		what = append(what, fmt.Sprintf("%d packets", packets))
		from = append(from, strings.Join(packetsFrom, " + "))
	}
	if len(wordsFrom) > 0 {
		what = append(what, fmt.Sprintf("%d bytes", portcounters.DataBytes(words)))
		from = append(from, strings.Join(wordsFrom, " + ")+", ×4")
	}
	return fmt.Sprintf("host: port %s was not idle over the %.1f s window: it carried %s of other traffic (%s); "+
		"the errors count all the same: a healthy link loses no frames at any load", port, secs, strings.Join(what, " and "), strings.Join(from, "; "))
}

// atRestFacts says, beside a node's pass, what its at-rest read showed, and
// names what it could not judge (the node check is then not-run). Ports
// declared unused are noted, never judged.
func (v *View) atRestFacts(n *NodeView) (notes, unjudged []string) {
	h := n.Host
	if h.PortsAtRestNotRead != "" {
		unjudged = append(unjudged, "port counters at rest not read: "+h.PortsAtRestNotRead)
	}
	var clean []string
	var secs float64
	for _, p := range h.PortsAtRest {
		unused := v.portUnused(n.Name, p.Port)
		notJudged := func(line string) {
			if unused {
				notes = append(notes, "port "+p.Port+" declared unused: "+line)
			} else {
				unjudged = append(unjudged, line)
			}
		}
		if p.Deltas == nil {
			notJudged(fmt.Sprintf("the counters of RDMA port %s could not be read at rest (%s)", p.Port, p.Err))
			continue
		}
		fs := portcounters.Judge(*p.Deltas, nil)
		for _, f := range fs {
			switch f.Severity {
			case portcounters.Unknown:
				if f.Status == portcounters.Saturated {
					// An 8- or 16-bit IBTA counter stuck at its maximum
					// counted that many errors over the port's life, not
					// now; common on long-lived InfiniBand ports, so it
					// is said beside the pass instead of holding every such
					// node's check at not-run until someone resets it.
					notes = append(notes, fmt.Sprintf("port %s at rest, not judged: %s", p.Port, f.Message))
					continue
				}
				notJudged(fmt.Sprintf("port %s at rest: %s", p.Port, f.Message))
			case portcounters.Record:
				notes = append(notes, fmt.Sprintf("port %s at rest, recorded, not judged: %s", p.Port, f.Message))
			case portcounters.Fail:
				if unused {
					notes = append(notes, fmt.Sprintf("port %s declared unused: at rest %s", p.Port, f.Message))
				}
			}
		}
		if w := portcounters.Worst(fs); (w == "" || w == portcounters.Record) && p.Deltas.JudgedWatched() > 0 {
			clean = append(clean, p.Port)
			secs = p.Deltas.Interval().Seconds()
		}
	}
	if len(clean) > 0 {
		notes = append(notes, fmt.Sprintf("port counters at rest over %.1f s: no judged counter rose on %s "+
			"(allowance 0, workloads/portcounters/COUNTERS.md)", secs, strings.Join(clean, ", ")))
	}
	return notes, unjudged
}
