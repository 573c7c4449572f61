package portcounters

import (
	"os"
	"strings"
	"testing"
)

func TestDiffCleanIsAllZero(t *testing.T) {
	before := mustRead(t, roceRoot, roceDev)
	after := mustRead(t, roceRoot, roceDev)
	d := Diff(before, after)
	if d.Problem != "" {
		t.Fatal(d.Problem)
	}
	if len(d.Items) != 52 {
		t.Errorf("%d deltas, want 52", len(d.Items))
	}
	for _, x := range d.Items {
		if x.Status != OK || x.Delta != 0 {
			t.Errorf("%s/%s: %+v", x.Group, x.Name, x)
		}
	}
	if d.Interval() < 0 {
		t.Errorf("Interval %v", d.Interval())
	}
}

// The ConnectX-7 listing has four counters stuck at their PortCounters
// maximum: their delta is unknown, never 0.
func TestDiffSaturatedCountersAreUnknown(t *testing.T) {
	s := mustRead(t, ibRoot, ibDev)
	d := Diff(s, s)
	for name, bits := range map[string]int{"port_xmit_wait": 32, "link_downed": 8, "port_xmit_discards": 16, "excessive_buffer_overrun_errors": 4} {
		x := mustDelta(t, d, Counters, name)
		if x.Status != Saturated || x.Bits != bits || x.AtLeast != 0 {
			t.Errorf("%s: %+v, want saturated at %d bits", name, x, bits)
		}
	}
	// Extended layout: the 64-bit data counter is not "saturated" at 2^32-1.
	if x := mustDelta(t, d, Counters, "port_xmit_data"); x.Status != OK || x.Bits != 64 {
		t.Errorf("port_xmit_data: %+v, want ok at 64 bits", x)
	}
}

func TestDiffSaturatingDuringMeasurementGivesLowerBound(t *testing.T) {
	root := copyTree(t, ibRoot)
	setCounter(t, root, ibDev, Counters, "symbol_error", "65530")
	before := mustRead(t, root, ibDev)
	setCounter(t, root, ibDev, Counters, "symbol_error", "65535")
	after := mustRead(t, root, ibDev)
	x := mustDelta(t, Diff(before, after), Counters, "symbol_error")
	if x.Status != Saturated || x.AtLeast != 5 || x.Bits != 16 {
		t.Errorf("symbol_error: %+v, want saturated, at least 5", x)
	}
}

// Without PortCountersExtended (no unicast_*/multicast_* files) the data
// counters are 32 bits wide and stick at 4294967295.
func TestDiffSaturated32BitDataCounter(t *testing.T) {
	root := copyTree(t, roceRoot)
	for _, n := range []string{"unicast_rcv_packets", "unicast_xmit_packets", "multicast_rcv_packets", "multicast_xmit_packets"} {
		if err := os.Remove(counterPath(root, roceDev, Counters, n)); err != nil {
			t.Fatal(err)
		}
	}
	setCounter(t, root, roceDev, Counters, "port_rcv_data", "123456") // below 2^32: nothing proves 64 bits
	setCounter(t, root, roceDev, Counters, "port_xmit_data", "4294967295")
	setCounter(t, root, roceDev, Counters, "port_xmit_packets", "1000")
	before := mustRead(t, root, roceDev)
	setCounter(t, root, roceDev, Counters, "port_xmit_packets", "2000")
	after := mustRead(t, root, roceDev)
	d := Diff(before, after)
	if x := mustDelta(t, d, Counters, "port_xmit_data"); x.Status != Saturated || x.Bits != 32 {
		t.Errorf("port_xmit_data: %+v, want saturated at 32 bits", x)
	}
	if x := mustDelta(t, d, Counters, "port_xmit_packets"); x.Status != OK || x.Delta != 1000 || x.Bits != 32 {
		t.Errorf("port_xmit_packets: %+v", x)
	}
}

func TestDiffResetIsBackwardsNotZero(t *testing.T) {
	root := copyTree(t, roceRoot)
	before := mustRead(t, root, roceDev)
	setCounter(t, root, roceDev, Counters, "port_xmit_data", "10")
	setCounter(t, root, roceDev, HWCounters, "out_of_sequence", "0")
	after := mustRead(t, root, roceDev)
	d := Diff(before, after)
	for _, k := range []struct {
		g    Group
		name string
	}{{Counters, "port_xmit_data"}, {HWCounters, "out_of_sequence"}} {
		x := mustDelta(t, d, k.g, k.name)
		if x.Status != Backwards || x.Delta != 0 || !strings.Contains(x.Detail, "reset") {
			t.Errorf("%s/%s: %+v, want backwards", k.g, k.name, x)
		}
	}
}

func TestDiffOneSidedAndUnreadable(t *testing.T) {
	root := copyTree(t, rxeRoot)
	before := mustRead(t, root, rxeDev)
	if err := os.Remove(counterPath(root, rxeDev, HWCounters, "rdma_sends")); err != nil {
		t.Fatal(err)
	}
	setCounter(t, root, rxeDev, HWCounters, "sent_bytes", "42")
	setCounter(t, root, rxeDev, HWCounters, "rcvd_seq_err", "garbage")
	after := mustRead(t, root, rxeDev)
	d := Diff(before, after)
	if x := mustDelta(t, d, HWCounters, "rdma_sends"); x.Status != OnlyBefore {
		t.Errorf("rdma_sends: %+v", x)
	}
	if x := mustDelta(t, d, HWCounters, "sent_bytes"); x.Status != OnlyAfter {
		t.Errorf("sent_bytes: %+v", x)
	}
	if x := mustDelta(t, d, HWCounters, "rcvd_seq_err"); x.Status != Unreadable || !strings.Contains(x.Detail, "garbage") {
		t.Errorf("rcvd_seq_err: %+v", x)
	}
	if len(d.Absent) != 1 || d.Absent[0] != Counters {
		t.Errorf("Absent %v", d.Absent)
	}
}

func TestDiffOfDifferentPortsIsAProblem(t *testing.T) {
	a := mustRead(t, roceRoot, roceDev)
	b := mustRead(t, ibRoot, ibDev)
	if d := Diff(a, b); d.Problem == "" {
		t.Error("diff across devices has no Problem")
	}
	later := mustRead(t, roceRoot, roceDev)
	if d := Diff(later, a); d.Problem == "" {
		t.Error("after read before before: no Problem")
	}
}

func TestDataBytes(t *testing.T) {
	if DataBytes(256) != 1024 {
		t.Errorf("DataBytes(256) = %d", DataBytes(256))
	}
	if DataBytes(1<<63) != ^uint64(0) {
		t.Error("DataBytes does not saturate on overflow")
	}
}
