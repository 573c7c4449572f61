package portcounters

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

const gib = 1 << 30

// ibMeasurement moves the IB port's data counters by the given byte counts
// (converted to the counters' 4-octet words).
func ibMeasurement(t *testing.T, xmitBytes, rcvBytes uint64) Deltas {
	t.Helper()
	root := copyTree(t, ibRoot)
	before := mustRead(t, root, ibDev)
	addCounter(t, root, ibDev, Counters, "port_xmit_data", xmitBytes/4)
	addCounter(t, root, ibDev, Counters, "port_rcv_data", rcvBytes/4)
	return Diff(before, mustRead(t, root, ibDev))
}

func TestConfirmBytesInfiniBandDataCounters(t *testing.T) {
	// Headers and retransmissions make the counter larger than the payload.
	d := ibMeasurement(t, gib*102/100, gib/2)
	c := ConfirmBytes(d, Claim{Direction: Transmit, Bytes: gib}, 0.01)
	if c.Verdict != Confirmed || c.Counter != "counters/port_xmit_data" || c.Unit != "bytes" {
		t.Fatalf("transmit 1.02 GiB for a 1 GiB claim: %+v", c)
	}
	if c.Ratio < 1.01 || c.Ratio > 1.03 {
		t.Errorf("Ratio = %v, want ~1.02", c.Ratio)
	}
	// Half the claim on the receive side: the port's own counter does not
	// back it (traffic went elsewhere).
	c = ConfirmBytes(d, Claim{Direction: Receive, Bytes: gib}, 0.01)
	if c.Verdict != Short || c.Counter != "counters/port_rcv_data" || c.Counted != gib/2 {
		t.Fatalf("receive 0.5 GiB for a 1 GiB claim: %+v", c)
	}
	if !strings.Contains(c.Reason, "port_rcv_data") {
		t.Errorf("reason does not name the counter: %q", c.Reason)
	}
}

func TestConfirmBytesTolerance(t *testing.T) {
	d := ibMeasurement(t, gib*995/1000, gib*98/100)
	if c := ConfirmBytes(d, Claim{Direction: Transmit, Bytes: gib}, 0.01); c.Verdict != Confirmed {
		t.Errorf("0.5%% under within a 1%% tolerance: %+v", c)
	}
	if c := ConfirmBytes(d, Claim{Direction: Receive, Bytes: gib}, 0.01); c.Verdict != Short {
		t.Errorf("2%% under beyond a 1%% tolerance: %+v", c)
	}
	for _, bad := range []float64{-0.1, 1, 2} {
		if c := ConfirmBytes(d, Claim{Direction: Transmit, Bytes: gib}, bad); c.Verdict != NotConfirmable {
			t.Errorf("tolerance %v accepted: %+v", bad, c)
		}
	}
	if c := ConfirmBytes(d, Claim{Direction: Transmit}, 0.01); c.Verdict != NotConfirmable {
		t.Errorf("empty claim confirmed: %+v", c)
	}
}

func TestConfirmBytesRXEPackets(t *testing.T) {
	root := copyTree(t, rxeRoot)
	before := mustRead(t, root, rxeDev)
	addCounter(t, root, rxeDev, HWCounters, "sent_pkts", 1100) // 1024 data packets + ACKs/retries
	addCounter(t, root, rxeDev, HWCounters, "rcvd_pkts", 500)
	d := Diff(before, mustRead(t, root, rxeDev))

	c := ConfirmBytes(d, Claim{Direction: Transmit, Bytes: 1 << 20, MTU: 1024}, 0)
	if c.Verdict != Confirmed || c.Counter != "hw_counters/sent_pkts" || c.Unit != "packets" || c.Claimed != 1024 || c.Counted != 1100 {
		t.Fatalf("rxe transmit: %+v", c)
	}
	c = ConfirmBytes(d, Claim{Direction: Receive, Bytes: 1 << 20, MTU: 1024}, 0)
	if c.Verdict != Short || c.Counter != "hw_counters/rcvd_pkts" {
		t.Fatalf("rxe receive 500 packets for 1024: %+v", c)
	}
	// A caller that knows its packet count exactly passes it.
	c = ConfirmBytes(d, Claim{Direction: Transmit, Bytes: 1 << 20, Packets: 1200, MTU: 1024}, 0)
	if c.Verdict != Short || c.Claimed != 1200 {
		t.Errorf("explicit packet claim: %+v", c)
	}
	// A packets-only claim skips the byte counters.
	moved := roceMeasurement(t, func(root string) { addCounter(t, root, roceDev, Counters, "port_xmit_packets", 20) })
	if c := ConfirmBytes(moved, Claim{Direction: Transmit, Packets: 10}, 0); c.Verdict != Confirmed || c.Counter != "counters/port_xmit_packets" {
		t.Errorf("packets-only claim: %+v", c)
	}
	if c := ConfirmBytes(d, Claim{Direction: Direction(7), Bytes: 1}, 0); c.Verdict != NotConfirmable {
		t.Errorf("unknown direction: %+v", c)
	}
	// Packets need an MTU to turn bytes into a minimum count.
	if c := ConfirmBytes(d, Claim{Direction: Transmit, Bytes: 1 << 20}, 0); c.Verdict != NotConfirmable || !strings.Contains(c.Reason, "MTU") {
		t.Errorf("no MTU: %+v", c)
	}
}

func TestConfirmBytesFallsBackToPacketsWhenDataSaturated(t *testing.T) {
	root := copyTree(t, roceRoot)
	for _, n := range []string{"unicast_rcv_packets", "unicast_xmit_packets", "multicast_rcv_packets", "multicast_xmit_packets"} {
		if err := os.Remove(counterPath(root, roceDev, Counters, n)); err != nil {
			t.Fatal(err)
		}
	}
	setCounter(t, root, roceDev, Counters, "port_rcv_data", "123456") // below 2^32: nothing proves 64 bits
	setCounter(t, root, roceDev, Counters, "port_xmit_data", strconv.FormatUint(1<<32-1, 10))
	setCounter(t, root, roceDev, Counters, "port_xmit_packets", "7")
	before := mustRead(t, root, roceDev)
	addCounter(t, root, roceDev, Counters, "port_xmit_packets", 262144)
	d := Diff(before, mustRead(t, root, roceDev))
	c := ConfirmBytes(d, Claim{Direction: Transmit, Bytes: gib, MTU: 4096}, 0.01)
	if c.Verdict != Confirmed || c.Counter != "counters/port_xmit_packets" {
		t.Fatalf("fallback: %+v", c)
	}
	if !strings.Contains(c.Reason, "port_xmit_data") || !strings.Contains(c.Reason, "saturated") {
		t.Errorf("reason does not say why the data counter was skipped: %q", c.Reason)
	}
}

func TestConfirmBytesDeviceWithoutCounters(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(PortDir(root, "bare0", 1), 0o755); err != nil {
		t.Fatal(err)
	}
	s, err := Read(root, "bare0", 1)
	if err != nil {
		t.Fatal(err)
	}
	c := ConfirmBytes(Diff(s, s), Claim{Direction: Transmit, Bytes: gib, MTU: 4096}, 0.01)
	if c.Verdict != NotConfirmable {
		t.Fatalf("%+v", c)
	}
	for _, name := range []string{"port_xmit_data", "port_xmit_packets", "sent_pkts"} {
		if !strings.Contains(c.Reason, name) {
			t.Errorf("reason %q does not name %s", c.Reason, name)
		}
	}
}

func TestConfirmBytesRefusesMismatchedSnapshots(t *testing.T) {
	a := mustRead(t, roceRoot, roceDev)
	b := mustRead(t, ibRoot, ibDev)
	if c := ConfirmBytes(Diff(a, b), Claim{Direction: Transmit, Bytes: 1}, 0); c.Verdict != NotConfirmable {
		t.Errorf("%+v", c)
	}
}
