package bw

import (
	"time"

	"github.com/rdmasuite/rdmasuite/workloads/portcounters"
)

// CounterReader reads one rail's port counters (portcounters.Read on the
// pod's sysfs). Each side brackets every (op, size) with two reads of its
// own rail: the client right after the server said ready and right after
// its measurement, the server on start and on the client's done, so both
// brackets hold the whole measurement.
type CounterReader func(r Rail) (portcounters.Snapshot, error)

// SizeCounters is one size's port-counter deltas: this side's rail and, on
// the client, the server's rail as the server sent them. A side without
// deltas says why in its Err field; a reader never takes a missing delta
// for a clean port.
type SizeCounters struct {
	Local    *portcounters.Deltas `json:"local,omitempty"`
	LocalErr string               `json:"localErr,omitempty"`
	Peer     *portcounters.Deltas `json:"peer,omitempty"`
	PeerErr  string               `json:"peerErr,omitempty"`
}

// noCounterReader is said where a side was started without a reader
// (rdmaprobe bw --port-counters=false).
const noCounterReader = "port counters not read: the probe ran with --port-counters=false"

// bracket is one side's first read around a measurement.
type bracket struct {
	read   CounterReader
	rail   Rail
	before portcounters.Snapshot
	err    error
}

func openBracket(read CounterReader, r Rail) *bracket {
	b := &bracket{read: read, rail: r}
	if read != nil {
		b.before, b.err = read(r)
	}
	return b
}

// close reads again and returns the compact deltas, or why there are none.
func (b *bracket) close() (*portcounters.Deltas, string) {
	switch {
	case b.read == nil:
		return nil, noCounterReader
	case b.err != nil:
		return nil, "port counters of " + b.rail.Name() + " not read before the measurement: " + b.err.Error()
	}
	// hw_counters are cached for their lifespan (10 ms by default, the
	// hw_counters/lifespan file): a read sooner than that after the first
	// returns the first read's values, which would show no traffic.
	if wait := b.before.Lifespan + time.Millisecond - time.Since(b.before.Time); b.before.Lifespan > 0 && wait > 0 {
		time.Sleep(wait)
	}
	after, err := b.read(b.rail)
	if err != nil {
		return nil, "port counters of " + b.rail.Name() + " not read after the measurement: " + err.Error()
	}
	d := portcounters.Diff(b.before, after).Compact()
	return &d, ""
}
