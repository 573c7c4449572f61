package doctor

import (
	"strings"
	"testing"
	"time"

	"github.com/rdmasuite/rdmasuite/reports"
	"github.com/rdmasuite/rdmasuite/workloads/portcounters"
)

// Port counters read twice over the host probe's window while
// the suite runs nothing. The deltas are staged in the form the host probe
// reports them (portcounters.Deltas, compacted); the counter names and what
// each driver has are those of workloads/portcounters/testdata and
// workloads/node/testdata/atrest*.tree.

const (
	pc = portcounters.Counters
	hw = portcounters.HWCounters
)

// moved is a counter read on both sides that rose by delta from before.
func moved(g portcounters.Group, name string, before, delta uint64) portcounters.Delta {
	return portcounters.Delta{Group: g, Name: name, Before: before, After: before + delta, Delta: delta, Status: portcounters.OK}
}

// atRestPort is a port's deltas over a 2 s window. unchanged is how many
// counters Compact dropped (judged ones included in unchangedJudged).
func atRestPort(dev, driver string, absent []portcounters.Group, unchanged, unchangedJudged int, items ...portcounters.Delta) PortAtRest {
	at := t0.Add(-time.Minute)
	d := &portcounters.Deltas{Device: dev, Port: 1, Driver: driver, Before: at, After: at.Add(2 * time.Second),
		Items: items, Absent: absent, Unchanged: unchanged, UnchangedJudged: unchangedJudged, Root: "/host"}
	return PortAtRest{Port: dev + "/1", Deltas: d}
}

// ibData are an InfiniBand port's data and packet counters (Compact keeps
// them), all moved by the given words and packets each way.
func ibData(words, packets uint64) []portcounters.Delta {
	return []portcounters.Delta{moved(pc, "port_rcv_data", 198220113102, words), moved(pc, "port_rcv_packets", 1798440012, packets),
		moved(pc, "port_xmit_data", 205143497464, words), moved(pc, "port_xmit_packets", 1834125771, packets)}
}

func rxeData(packets uint64) []portcounters.Delta {
	return []portcounters.Delta{moved(hw, "rcvd_pkts", 2190542, packets), moved(hw, "sent_pkts", 2201733, packets)}
}

// mlx5IBIdle: symbol_error +12 and link_downed +1 on an idle port.
func mlx5IBIdle() PortAtRest {
	return atRestPort("mlx5_0", "mlx5", nil, 28, 18,
		append(ibData(0, 0), moved(pc, "link_downed", 1, 1), moved(pc, "symbol_error", 0, 12))...)
}

// mlx5RoCEBusy: out_of_sequence +3, local_ack_timeout_err +2 while someone
// else's traffic crossed the port, and a congestion counter moved.
func mlx5RoCEBusy() PortAtRest {
	return atRestPort("mlx5_bond_0", "mlx5", nil, 17, 13,
		append(ibData(20000, 5000), moved(hw, "local_ack_timeout_err", 0, 2), moved(hw, "np_cnp_sent", 140, 4),
			moved(hw, "out_of_sequence", 0, 3))...)
}

// rxeFlap: Soft-RoCE whose netdev went down and up during the window.
func rxeFlap() PortAtRest {
	return atRestPort("rxe0", "rxe", []portcounters.Group{pc}, 12, 10, append(rxeData(0), moved(hw, "link_downed", 0, 1))...)
}

func cleanIB() PortAtRest { return atRestPort("mlx5_1", "mlx5", nil, 32, 20, ibData(100000, 1000)...) }

func atRestHost(node string, ports ...PortAtRest) func(*State) {
	return func(s *State) { s.host(node, func(h *HostFacts) { h.PortsAtRest = ports }) }
}

func withAtRest(edits ...func(*State)) State {
	s := healthy()
	for _, e := range edits {
		e(&s)
	}
	return s
}

var _ = answer(knownAnswer{rule: PortErrorsAtRest, name: "mlx5 InfiniBand, idle: symbol_error +12, link_downed +1", source: "staged (workloads/node/testdata/atrest_errors_after.tree)",
	raises: true, node: "node-1", evidence: `host: port mlx5_0/1 at rest over 2\.0 s: counters/symbol_error rose by 12 \(allowed 0\): physical/link error\. Minor link errors`,
	state: func(*testing.T) State { return withAtRest(atRestHost("node-1", mlx5IBIdle(), cleanIB())) }})

var _ = answer(knownAnswer{rule: PortErrorsAtRest, name: "mlx5 RoCE carrying other traffic: out_of_sequence +3, local_ack_timeout_err +2", source: "staged (workloads/node/testdata/atrest_errors_after.tree)",
	raises: true, node: "node-2", evidence: `hw_counters/out_of_sequence rose by 3(.|\n)*was not idle over the 2\.0 s window: it carried 10000 packets and 160000 bytes`,
	state: func(*testing.T) State { return withAtRest(atRestHost("node-2", mlx5RoCEBusy())) }})

var _ = answer(knownAnswer{rule: PortErrorsAtRest, name: "Soft-RoCE flapping rail: hw_counters/link_downed +1, no counters/", source: "staged (drivers/infiniband/sw/rxe/rxe_net.c rxe_port_down)",
	raises: true, node: "node-1", evidence: `port rxe0/1 at rest over 2\.0 s: hw_counters/link_downed rose by 1 \(allowed 0\)(.|\n)*port rxe0/1 was idle`,
	state: func(*testing.T) State { return withAtRest(atRestHost("node-1", rxeFlap())) }})

var _ = answer(knownAnswer{rule: PortErrorsAtRest, name: "only data and packet counters moved", source: "staged (workloads/node/testdata/atrest_clean_after.tree)",
	clean: true,
	state: func(*testing.T) State {
		return withAtRest(atRestHost("node-1", cleanIB(), atRestPort("rxe0", "rxe", []portcounters.Group{pc}, 13, 11, rxeData(10)...)))
	}})

var _ = answer(knownAnswer{rule: PortErrorsAtRest, name: "a congestion counter moved (np_cnp_sent: recorded, not judged)", source: "staged",
	clean: true,
	state: func(*testing.T) State {
		return withAtRest(atRestHost("node-2", atRestPort("mlx5_bond_0", "mlx5", nil, 19, 15,
			append(ibData(20000, 5000), moved(hw, "np_cnp_sent", 140, 4))...)))
	}})

var _ = answer(knownAnswer{rule: PortErrorsAtRest, name: "symbol_error unreadable (N/A (no PMA)): unknown, not a finding", source: "staged (sysfs.c show_pma_counter)",
	state: func(*testing.T) State { return withAtRest(atRestHost("node-1", unreadableIB())) }})

var _ = answer(knownAnswer{rule: PortErrorsAtRest, name: "link_downed stuck at its 8-bit maximum 255: unknown, not a finding", source: "workloads/portcounters/testdata/mlx5_ib (a ConnectX-7 listing)",
	state: func(*testing.T) State { return withAtRest(atRestHost("node-1", saturatedIB())) }})

var _ = answer(knownAnswer{rule: PortErrorsAtRest, name: "errors on a port declared unused", source: "staged",
	clean: true,
	state: func(*testing.T) State {
		s := withAtRest(atRestHost("node-1", mlx5IBIdle()))
		s.UnusedPorts = []string{"node-1:mlx5_0/1"}
		return s
	}})

var _ = answer(knownAnswer{rule: PortErrorsAtRest, name: "probe without a window (no at-rest read)", source: "staged",
	state: func(*testing.T) State {
		s := healthy()
		s.host("node-1", func(h *HostFacts) { h.PortsAtRestNotRead = "no sampling window (--window 0)" })
		return s
	}})

func unreadableIB() PortAtRest {
	p := atRestPort("mlx5_0", "mlx5", nil, 28, 18, ibData(0, 0)...)
	p.Deltas.Items = append(p.Deltas.Items, portcounters.Delta{Group: pc, Name: "symbol_error", Status: portcounters.Unreadable,
		Detail: `after: not a counter value: "N/A (no PMA)"`})
	return p
}

func saturatedIB() PortAtRest {
	p := atRestPort("mlx5_1", "mlx5", nil, 28, 18, ibData(0, 0)...)
	p.Deltas.Items = append(p.Deltas.Items, portcounters.Delta{Group: pc, Name: "link_downed", Before: 255, After: 255, Bits: 8,
		Status: portcounters.Saturated, Detail: "stuck at its 8-bit maximum 255 before the measurement"})
	return p
}

func findingOf(t *testing.T, s State, id, node string) Finding {
	t.Helper()
	for _, f := range Diagnose(s) {
		if f.ID == id && f.Node == node {
			return f
		}
	}
	t.Fatalf("no %s on %s in %v", id, node, ids(Diagnose(s)))
	return Finding{}
}

// The evidence lines the bed's expectations are written against: one per
// judged counter that rose, then whether the port was idle.
func TestPortErrorsAtRestEvidence(t *testing.T) {
	meaning := func(g portcounters.Group, name, driver string) string {
		e, _ := portcounters.Lookup(g, name, driver)
		return string(e.Class) + ". " + e.Meaning
	}
	for _, tc := range []struct {
		name string
		port PortAtRest
		want []string
	}{
		{"mlx5 IB idle", mlx5IBIdle(), []string{
			"host: port mlx5_0/1 at rest over 2.0 s: counters/link_downed rose by 1 (allowed 0): " + meaning(pc, "link_downed", ""),
			"host: port mlx5_0/1 at rest over 2.0 s: counters/symbol_error rose by 12 (allowed 0): " + meaning(pc, "symbol_error", ""),
			"host: port mlx5_0/1 was idle over the 2.0 s window: counters/port_rcv_data, counters/port_rcv_packets, counters/port_xmit_data, counters/port_xmit_packets did not move",
		}},
		{"mlx5 RoCE busy", mlx5RoCEBusy(), []string{
			"host: port mlx5_bond_0/1 at rest over 2.0 s: hw_counters/local_ack_timeout_err rose by 2 (allowed 0): " + meaning(hw, "local_ack_timeout_err", "mlx5"),
			"host: port mlx5_bond_0/1 at rest over 2.0 s: hw_counters/out_of_sequence rose by 3 (allowed 0): " + meaning(hw, "out_of_sequence", "mlx5"),
			"host: port mlx5_bond_0/1 was not idle over the 2.0 s window: it carried 10000 packets and 160000 bytes of other traffic " +
				"(counters/port_rcv_packets + counters/port_xmit_packets; counters/port_rcv_data + counters/port_xmit_data, ×4); " +
				"the errors count all the same: a healthy link loses no frames at any load",
		}},
		{"rxe flap", rxeFlap(), []string{
			"host: port rxe0/1 at rest over 2.0 s: hw_counters/link_downed rose by 1 (allowed 0): " + meaning(hw, "link_downed", "rxe"),
			"host: port rxe0/1 was idle over the 2.0 s window: hw_counters/rcvd_pkts, hw_counters/sent_pkts did not move",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := findingOf(t, withAtRest(atRestHost("node-1", tc.port)), PortErrorsAtRest, "node-1")
			if got := strings.Join(f.Evidence, "\n"); got != strings.Join(tc.want, "\n") {
				t.Errorf("evidence:\n%s\nwant:\n%s", got, strings.Join(tc.want, "\n"))
			}
			if f.Severity != Warning {
				t.Errorf("severity %s", f.Severity)
			}
		})
	}

	// Two failing ports on one node: one finding with both ports' lines.
	f := findingOf(t, withAtRest(atRestHost("node-1", mlx5IBIdle(), rxeFlap())), PortErrorsAtRest, "node-1")
	ev := strings.Join(f.Evidence, "\n")
	if !strings.Contains(ev, "port mlx5_0/1 at rest") || !strings.Contains(ev, "port rxe0/1 at rest") {
		t.Errorf("evidence:\n%s", ev)
	}

	// A failing port whose other counters could not all be read says so.
	p := mlx5IBIdle()
	p.Deltas.Items = append(p.Deltas.Items, portcounters.Delta{Group: pc, Name: "port_rcv_errors", Status: portcounters.Backwards,
		Detail: "fell from 9 to 0: the counter was reset or wrapped"})
	f = findingOf(t, withAtRest(atRestHost("node-1", p)), PortErrorsAtRest, "node-1")
	if ev := strings.Join(f.Evidence, "\n"); !strings.Contains(ev, "host: port mlx5_0/1 at rest, not judged: counters/port_rcv_errors: backwards") {
		t.Errorf("evidence:\n%s", ev)
	}

	// Whether the port carried traffic cannot be told: said, not guessed.
	p = atRestPort("mlx5_0", "mlx5", nil, 28, 18, moved(pc, "symbol_error", 0, 12))
	f = findingOf(t, withAtRest(atRestHost("node-1", p)), PortErrorsAtRest, "node-1")
	if ev := strings.Join(f.Evidence, "\n"); !strings.Contains(ev, "host: port mlx5_0/1: whether it carried other traffic over the 2.0 s window is unknown") {
		t.Errorf("evidence:\n%s", ev)
	}
}

// A counter stuck at its maximum (an 8-bit link_downed at 255 on a
// long-lived InfiniBand port) counted errors over the port's life, not now:
// noted beside the pass with the reset that lets it count again, instead of
// holding the node's check at not-run on every such fleet.
func TestAtRestSaturatedCounterIsANote(t *testing.T) {
	s := healthy()
	s.host("node-2", func(h *HostFacts) { h.PortsAtRest = []PortAtRest{saturatedIB()} })
	c := nodeChecks(t, s)["node-2"]
	ev := strings.Join(c.Evidence, "\n")
	if c.Status != reports.Pass || !strings.Contains(ev, "port mlx5_1/1 at rest, not judged: counters/link_downed is stuck at its 8-bit maximum 255") ||
		!strings.Contains(ev, "perfquery -R") {
		t.Fatalf("node-2: %s %q\n%s", c.Status, c.Reason, ev)
	}
}

// What the at-rest read could not judge makes the node check not-run,
// naming the port; what it recorded stands beside the pass.
func TestAtRestUnknownsAreNotAPass(t *testing.T) {
	for _, tc := range []struct {
		name string
		port PortAtRest
		why  string
		want string
	}{
		{"unreadable counter", unreadableIB(), "",
			`port mlx5_0/1 at rest: counters/symbol_error: unreadable (after: not a counter value: "N/A (no PMA)"); its delta is unknown`},
		{"group not listable", func() PortAtRest {
			p := cleanIB()
			p.Deltas.GroupErrs = []portcounters.GroupErr{{Side: "after", Group: hw, Err: "readdirent: not a directory"}}
			return p
		}(), "", "port mlx5_1/1 at rest: hw_counters/ could not be listed after the measurement (readdirent: not a directory)"},
		{"port unreadable", PortAtRest{Port: "rxe0/1", Err: "after the window: portcounters: rxe0 port 1: no such file or directory"}, "",
			"the counters of RDMA port rxe0/1 could not be read at rest (after the window: portcounters: rxe0 port 1: no such file or directory)"},
		{"no window", PortAtRest{}, "no sampling window (--window 0)", "port counters at rest not read: no sampling window (--window 0)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := healthy()
			s.host("node-2", func(h *HostFacts) {
				if tc.port.Port != "" {
					h.PortsAtRest = []PortAtRest{tc.port}
				}
				h.PortsAtRestNotRead = tc.why
			})
			c := nodeChecks(t, s)["node-2"]
			if c.Status != reports.NotRun || !strings.Contains(c.Reason, tc.want) {
				t.Fatalf("node-2: %s %q, want not-run naming %q", c.Status, c.Reason, tc.want)
			}
			// Declared unused: noted beside the pass instead.
			s.UnusedPorts = []string{"node-2:" + tc.port.Port}
			if tc.port.Port == "" {
				return
			}
			c = nodeChecks(t, s)["node-2"]
			if ev := strings.Join(c.Evidence, "\n"); c.Status != reports.Pass || !strings.Contains(ev, "port "+tc.port.Port+" declared unused") {
				t.Fatalf("unused: %s %q %s", c.Status, c.Reason, ev)
			}
		})
	}

	s := healthy()
	s.host("node-1", func(h *HostFacts) {
		h.PortsAtRest = []PortAtRest{cleanIB(), atRestPort("rxe0", "rxe", []portcounters.Group{pc}, 13, 11, rxeData(10)...),
			atRestPort("mlx5_bond_0", "mlx5", nil, 19, 15, append(ibData(20000, 5000), moved(hw, "np_cnp_sent", 140, 4))...)}
	})
	c := nodeChecks(t, s)["node-1"]
	ev := strings.Join(c.Evidence, "\n")
	for _, want := range []string{
		"port counters at rest over 2.0 s: no judged counter rose on mlx5_1/1, rxe0/1, mlx5_bond_0/1",
		"port rxe0/1 at rest, recorded, not judged: counters/ is absent on this device (no PMA, e.g. rxe)",
		"port mlx5_bond_0/1 at rest, recorded, not judged: hw_counters/np_cnp_sent rose by 4 (recorded, no bound)",
	} {
		if c.Status != reports.Pass || !strings.Contains(ev, want) {
			t.Errorf("%s %q, evidence lacks %q:\n%s", c.Status, c.Reason, want, ev)
		}
	}
}
