package node

import (
	"time"

	"github.com/rdmasuite/rdmasuite/workloads/portcounters"
)

// AtRest is every RDMA port's counters read twice, right before and right
// after the sampling window, while the suite runs nothing on the node.
// An error counter that rises on an idle port points at the cable, the
// transceiver or the port itself: no load of ours caused it.
// The verdict is the doctor's (rule port-errors-at-rest); this is the
// evidence.
type AtRest struct {
	// WindowSeconds is the time between the reads before and after the
	// window by the probe's clock; 0 when none was made.
	WindowSeconds float64 `json:"windowSeconds"`
	// NotRead says why no at-rest read was made although the node has
	// RDMA ports (a sampling window of 0). Empty when read, or when there
	// is no port to read.
	NotRead string `json:"notRead,omitempty"`
	// Ports holds one entry per port collectRDMA found, in its order.
	Ports []PortAtRest `json:"ports"`
}

// PortAtRest is one port's counter deltas over the window, compacted
// (portcounters.Deltas.Compact: counters that stood still are counted, not
// listed; the data and packet counters stay, so a zero there shows the port
// was idle), or why there are none.
type PortAtRest struct {
	Device string               `json:"device"`
	Port   int                  `json:"port"`
	Deltas *portcounters.Deltas `json:"deltas,omitempty"`
	// Err is why Deltas is nil: the port could not be read on one side
	// ("before the window: …", "after the window: …"). Never a zero.
	Err string `json:"err,omitempty"`
}

// noWindow is AtRest.NotRead for a single read.
const noWindow = "no sampling window (--window 0): counters read once cannot show a rise at rest; give the probe a window (e.g. --window 2s)"

// portRead is one port's read on one side of the window.
type portRead struct {
	device string
	port   int
	snap   portcounters.Snapshot
	err    error
}

// readPortCounters reads every port of rdma under the host root. Each
// snapshot is stamped by the probe's clock (now), so the interval a
// verdict quotes is the window the PSI samples measure (tests fake it).
func readPortCounters(h hostFS, rdma RDMA, now func() time.Time) []portRead {
	var out []portRead
	for _, d := range rdma.Devices {
		for _, p := range d.Ports {
			at := now()
			s, err := portcounters.Read(h.root, d.Name, p.Port)
			s.Time, s.Root = at, h.root
			out = append(out, portRead{device: d.Name, port: p.Port, snap: s, err: err})
		}
	}
	return out
}

// atRest pairs the reads made before the window with those made after it.
// before and after come from readPortCounters over the same RDMA view, so
// they list the same ports in the same order.
func atRest(before, after []portRead) AtRest {
	a := AtRest{Ports: []PortAtRest{}}
	if len(before) > 0 && len(after) > 0 {
		a.WindowSeconds = after[0].snap.Time.Sub(before[0].snap.Time).Seconds()
	}
	for i, b := range before {
		p := PortAtRest{Device: b.device, Port: b.port}
		switch {
		case b.err != nil:
			p.Err = "before the window: " + b.err.Error()
		case i >= len(after) || after[i].device != b.device || after[i].port != b.port:
			p.Err = "after the window: the port was not read" // cannot happen: same view both times
		case after[i].err != nil:
			p.Err = "after the window: " + after[i].err.Error()
		default:
			d := portcounters.Diff(b.snap, after[i].snap).Compact()
			p.Deltas = &d
		}
		a.Ports = append(a.Ports, p)
	}
	return a
}

// hasPorts reports whether the RDMA view lists any port.
func (r RDMA) hasPorts() bool {
	for _, d := range r.Devices {
		if len(d.Ports) > 0 {
			return true
		}
	}
	return false
}
