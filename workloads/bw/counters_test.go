package bw

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rdmasuite/rdmasuite/workloads/portcounters"
	"github.com/rdmasuite/rdmasuite/workloads/probeout"
)

// fakePorts is a port-counter reader whose sent_pkts rises by step on
// every read of a device; failing devices cannot be read.
type fakePorts struct {
	mu      sync.Mutex
	reads   map[string]uint64
	step    uint64
	failing map[string]bool
}

func (f *fakePorts) read(r Rail) (portcounters.Snapshot, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failing[r.Device] {
		return portcounters.Snapshot{}, errors.New("no such file or directory")
	}
	if f.reads == nil {
		f.reads = map[string]uint64{}
	}
	f.reads[r.Device]++
	v := f.reads[r.Device] * f.step
	return portcounters.Snapshot{Device: r.Device, Port: r.Port, Time: time.Now(), Absent: []portcounters.Group{portcounters.Counters},
		Counters: []portcounters.Counter{
			{Group: portcounters.HWCounters, Name: "sent_pkts", Value: v},
			{Group: portcounters.HWCounters, Name: "link_downed", Value: 0},
		}}, nil
}

func sentDelta(t *testing.T, d *portcounters.Deltas, dev string) uint64 {
	t.Helper()
	if d == nil {
		t.Fatalf("no deltas for %s", dev)
	}
	if d.Device != dev {
		t.Fatalf("deltas of %s, want %s", d.Device, dev)
	}
	x, ok := d.Get(portcounters.HWCounters, "sent_pkts")
	if !ok || x.Status != portcounters.OK {
		t.Fatalf("%s: sent_pkts %+v", dev, x)
	}
	if d.Unchanged != 1 { // link_downed stood still: dropped, counted
		t.Errorf("%s: %d unchanged counters, want 1", dev, d.Unchanged)
	}
	return x.Delta
}

// Both sides bracket every (op, size) and the client's result
// carries both sides' deltas, each of its own rail.
func TestEverySizeCarriesBothSidesPortCounters(t *testing.T) {
	cp, sp := &fakePorts{step: 100}, &fakePorts{step: 7}
	ops := []Op{OpWrite, OpRead}
	c, s := runBoth(t, testRails("s0", "s1"), &fakeSide{counters: sp.read},
		ClientConfig{Rails: testRails("c0", "c1"), Params: testParams(4096, 65536), Ops: ops, Counters: cp.read}, &fakeSide{})
	for i, rr := range c.out.Rails {
		measured(t, "client", rr, ops, 2)
		for _, run := range rr.Runs {
			for _, sr := range run.Results {
				if sr.Counters == nil || sr.Counters.LocalErr != "" || sr.Counters.PeerErr != "" {
					t.Fatalf("rail %d %s %d B: counters %+v", i, run.Params.Op, sr.Local.Bytes, sr.Counters)
				}
				if got := sentDelta(t, sr.Counters.Local, rr.Local.Device); got != 100 {
					t.Errorf("client delta %d, want 100 (one step between its two reads)", got)
				}
				if got := sentDelta(t, sr.Counters.Peer, rr.Peer.Device); got != 7 {
					t.Errorf("server delta %d, want 7", got)
				}
			}
		}
	}
	for _, rr := range s.out.Rails {
		for _, run := range rr.Runs {
			for _, sr := range run.Results {
				if sr.Counters == nil || sentDelta(t, sr.Counters.Local, rr.Local.Device) != 7 {
					t.Fatalf("server rail %s: its own result lacks its deltas: %+v", rr.Local.Name(), sr.Counters)
				}
			}
		}
	}
	// Two reads per size per op per rail on each side, no more.
	for _, dev := range []string{"c0", "c1"} {
		if cp.reads[dev] != 2*2*2 {
			t.Errorf("client read %s %d times, want 8", dev, cp.reads[dev])
		}
	}
}

// A counter that cannot be read is named, never taken as zero; a side that
// reads none says so; and the size that failed keeps the client's deltas.
func TestCountersThatCannotBeReadAreNamed(t *testing.T) {
	cp := &fakePorts{step: 1, failing: map[string]bool{"c1": true}}
	c, _ := runBoth(t, testRails("s0", "s1"), &fakeSide{}, // the server reads none
		ClientConfig{Rails: testRails("c0", "c1"), Params: testParams(4096), Ops: []Op{OpWrite}, Counters: cp.read}, &fakeSide{})
	sc := c.out.Rails[1].Runs[0].Results[0].Counters
	if sc.Local != nil || !strings.Contains(sc.LocalErr, "port counters of c1/1 not read before the measurement: no such file") {
		t.Errorf("unreadable rail: %+v", sc)
	}
	if sc.Peer != nil || sc.PeerErr != noCounterReader {
		t.Errorf("server without a reader: peer %+v, %q", sc.Peer, sc.PeerErr)
	}

	cp = &fakePorts{step: 5}
	cli := &fakeSide{failAfter: map[string]int{"c0": 200}} // size 1 is 200 posts
	c, _ = runBoth(t, testRails("s0"), &fakeSide{}, ClientConfig{Rails: testRails("c0"), Params: testParams(4096, 65536), Ops: []Op{OpWrite}, Counters: cp.read}, cli)
	run := c.out.Rails[0].Runs[0]
	if run.Error == nil || run.Error.Kind != probeout.KindTransport || run.FailedSize != 65536 || run.FailedCounters == nil {
		t.Fatalf("failed size: error %v, size %d, counters %+v", run.Error, run.FailedSize, run.FailedCounters)
	}
	if got := sentDelta(t, run.FailedCounters.Local, "c0"); got != 5 || run.FailedCounters.PeerErr == "" {
		t.Errorf("failed size's counters: delta %d, peer err %q", got, run.FailedCounters.PeerErr)
	}
}

// hw_counters are cached for their lifespan: the second read waits it out.
func TestBracketWaitsOutTheCounterLifespan(t *testing.T) {
	var times []time.Time
	read := func(r Rail) (portcounters.Snapshot, error) {
		times = append(times, time.Now())
		return portcounters.Snapshot{Device: r.Device, Port: r.Port, Time: time.Now(), Lifespan: 30 * time.Millisecond}, nil
	}
	b := openBracket(read, Rail{Device: "mlx5_0", Port: 1})
	if d, why := b.close(); d == nil || why != "" {
		t.Fatalf("close: %v %q", d, why)
	}
	if gap := times[1].Sub(times[0]); gap < 30*time.Millisecond {
		t.Errorf("second read %s after the first, inside the 30 ms lifespan", gap)
	}
}
