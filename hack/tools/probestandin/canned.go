package main

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/rdmasuite/rdmasuite/workloads/bw"
	"github.com/rdmasuite/rdmasuite/workloads/portcounters"
)

// fabric is the simulated fleet's hardware: every node has ports rails,
// mlx5_0..mlx5_{ports-1} port 1, InfiniBand at rateGbps, MTU 4096.
type fabric struct {
	ports    int
	rateGbps float64
	// frac is the share of the link rate every measurement reaches.
	frac float64
	// otherPort makes every counter reading name the next device instead
	// of the rail's own: a probe that read the wrong port, which the link
	// check must refuse (the test proves the verdict can fail).
	otherPort bool
}

const mtu = 4096

func (f fabric) rail(i int) bw.Rail {
	return bw.Rail{Index: i, Device: fmt.Sprintf("mlx5_%d", i), Port: 1, State: "ACTIVE", LinkLayer: "InfiniBand", RateGbps: f.rateGbps}
}

func (f fabric) device(r bw.Rail) bw.Device {
	return bw.Device{Name: r.Device, Port: r.Port, GIDIndex: -1, LinkLayer: r.LinkLayer, RateGbps: r.RateGbps, MTU: mtu}
}

// run is one bw run as the runner asks for it (its flags; the client's
// server address is not needed: nothing is dialled).
type run struct {
	name   string
	params bw.Params
	ops    []bw.Op
	rails  string
	device string // --device: measure only this device's port
}

// measurement is one (op, size)'s figures: n operations of size bytes at
// frac of the link rate, made by perftest's arithmetic (bw.Compute), so
// the verdict's re-derivation agrees with them.
func (f fabric) measurement(size int) bw.Figures {
	gbps := f.frac * f.rateGbps
	// About 0.2 s of traffic per size, at least 1000 operations.
	n := max(1000, int(gbps*1e9/8*0.2/float64(size)))
	elapsed := time.Duration(float64(size) * float64(n) * 8 / (gbps * 1e9) * float64(time.Second))
	return bw.Compute(size, n, elapsed, elapsed/time.Duration(n)*99/100)
}

// snapshot is one read of a port's counters: every counters/ counter the
// suite's table knows (PortCountersExtended, so the data counters are 64
// bits) and mlx5's hw_counters, errors all at their base (nothing rose),
// data and packet counters at base plus what moved so far.
func snapshot(device string, port int, at time.Time, moved map[string]uint64) portcounters.Snapshot {
	s := portcounters.Snapshot{Device: device, Port: port, Time: at, Took: 200 * time.Microsecond, Root: "/host",
		Lifespan: 10 * time.Millisecond}
	for _, e := range portcounters.Table() {
		if e.Group == portcounters.HWCounters && e.Driver != "mlx5" {
			continue
		}
		// A base that is neither zero nor near any width's maximum: a
		// port that has carried traffic before the run.
		v := uint64(7)
		if e.Class == portcounters.ClassData || e.Class == portcounters.ClassPackets || e.Class == portcounters.ClassOperations {
			v = 1 << 36
		}
		s.Counters = append(s.Counters, portcounters.Counter{Group: e.Group, Name: e.Name, Value: v + moved[e.Name]})
	}
	slices.SortFunc(s.Counters, func(a, b portcounters.Counter) int {
		return strings.Compare(a.Key(), b.Key())
	})
	s.Counters = slices.CompactFunc(s.Counters, func(a, b portcounters.Counter) bool { return a.Key() == b.Key() })
	return s
}

// bracket is one side's counter deltas around one (op, size): what a
// healthy port moved (the payload and its headers in the direction of the
// data, acknowledgements the other way), read before and after the
// measurement as the real probe's bracket does.
func (f fabric) bracket(r bw.Rail, start time.Time, fig bw.Figures, sends bool) *portcounters.Deltas {
	msgs := uint64(fig.Iterations)
	pkts := msgs * uint64(max(1, (fig.Bytes+mtu-1)/mtu))
	words := (uint64(fig.Bytes)*msgs + pkts*66) / 4 // payload + LRH/BTH/RETH/ICRC per packet, in 4-octet words
	acks := (pkts + 15) / 16
	moved := map[string]uint64{}
	tx, rx := "xmit", "rcv"
	if !sends {
		tx, rx = rx, tx
	}
	moved["port_"+tx+"_data"], moved["port_"+tx+"_packets"], moved["unicast_"+tx+"_packets"] = words, pkts, pkts
	moved["port_"+rx+"_data"], moved["port_"+rx+"_packets"], moved["unicast_"+rx+"_packets"] = acks*8, acks, acks
	device := r.Device
	if f.otherPort {
		device = fmt.Sprintf("mlx5_%d", (r.Index+1)%max(f.ports, 2))
	}
	before := snapshot(device, r.Port, start, nil)
	after := snapshot(device, r.Port, start.Add(time.Duration(fig.ElapsedSec*float64(time.Second))+15*time.Millisecond), moved)
	d := portcounters.Diff(before, after).Compact()
	return &d
}

// output is the run's bw result for role as a healthy probe prints it:
// every rail the pod sees (or the --device one), the same-index rail on
// the peer, every op and size measured with both sides' port counters.
func (f fabric) output(role string, rn run, start time.Time) bw.ProbeOutput {
	req := bw.Requested{Ops: rn.ops, Sizes: rn.params.Sizes, RailMode: rn.rails, Parallel: false}
	out := bw.ProbeOutput{Role: role, Requested: req, Found: []bw.Rail{}, Rails: []bw.RailResult{}}
	for i := range f.ports {
		r := f.rail(i)
		if rn.device != "" && r.Device != rn.device {
			continue
		}
		out.Found = append(out.Found, r)
	}
	at := start
	for _, local := range out.Found {
		peer := local
		rr := bw.RailResult{Local: local, Peer: &peer, Runs: []bw.Report{}, Memory: &bw.Memory{Kind: bw.MemoryHost}}
		for _, op := range rn.ops {
			p := rn.params
			p.Op = op
			rep := bw.Report{Role: role, Params: p, Device: f.device(local), Results: []bw.SizeResult{}, SetupSec: 0.05}
			for _, size := range p.Sizes {
				fig := f.measurement(size)
				// The client sends a WRITE's data and takes a READ's in.
				clientSends := op != bw.OpRead
				if role == "client" {
					cli := f.bracket(local, at, fig, clientSends)
					srv := f.bracket(peer, at, fig, !clientSends)
					rep.Results = append(rep.Results, bw.SizeResult{Local: fig, Total: fig, Counters: &bw.SizeCounters{Local: cli, Peer: srv}})
				} else {
					// The server's own record of the size: no figures of
					// its own (not bidirectional), its port's counters.
					rep.Results = append(rep.Results, bw.SizeResult{Counters: &bw.SizeCounters{Local: f.bracket(local, at, fig, !clientSends)}})
				}
				at = at.Add(time.Duration(fig.ElapsedSec*float64(time.Second)) + 20*time.Millisecond)
			}
			rr.Runs = append(rr.Runs, rep)
		}
		out.Rails = append(out.Rails, rr)
	}
	return out
}
