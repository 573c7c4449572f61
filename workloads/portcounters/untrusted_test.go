package portcounters

import (
	"strconv"
	"strings"
	"testing"
)

// A port whose counters were reset during the measurement (perfquery -R
// clears every PMA counter: an error counter that rose and was cleared
// reads the same before and after) is not clean: the fall of its data
// counter makes the whole side unknown, with both readings named. A delta
// a probe wrote as a known 0 or as the unsigned wrap of after − before is
// read the same way, never as 0 and never as a rise.
func TestResetDuringTheMeasurementIsNeverClean(t *testing.T) {
	d := roceMeasurement(t, func(root string) {
		setCounter(t, root, roceDev, Counters, "port_xmit_data", "1200")
	})
	x := mustDelta(t, d, Counters, "port_xmit_data")
	fs := Judge(d, nil)
	if Worst(fs) != Unknown {
		t.Fatalf("reset port judged %q (want unknown): %+v", Worst(fs), fs)
	}
	f, ok := findingFor(fs, roceDev+"/1")
	if !ok || f.Status != Reset {
		t.Fatalf("no reset finding for the side: %+v", fs)
	}
	for _, want := range []string{"the counters were reset during the measurement (a driver reload or perfquery -R)",
		"counters/port_xmit_data read " + strconv.FormatUint(x.Before, 10) + " before and 1200 after", "the rail's errors in that window are unknown"} {
		if !strings.Contains(f.Message, want) {
			t.Errorf("reset finding lacks %q: %s", want, f.Message)
		}
	}

	// The same fall written by a probe as status ok, delta 0 or wrapped;
	// and on a judged counter it is unknown, never a rise of 2^64 − 7.
	var hi, lo uint64 = 5000000000, 1200
	for _, delta := range []uint64{0, lo - hi} {
		d := Deltas{Device: "mlx5_0", Port: 1, Driver: "mlx5", UnchangedJudged: 8, Items: []Delta{
			{Group: Counters, Name: "port_rcv_data", Before: 5000000000, After: 1200, Delta: delta, Status: OK},
			{Group: Counters, Name: "symbol_error", Before: 9, After: 2, Delta: lo - hi, Status: OK},
		}}
		fs := Judge(d, nil)
		if Worst(fs) != Unknown {
			t.Errorf("delta %d: judged %q: %+v", delta, Worst(fs), fs)
		}
		if f, ok := findingFor(fs, "mlx5_0/1"); !ok || f.Status != Reset ||
			!strings.Contains(f.Message, "counters/port_rcv_data read 5000000000 before and 1200 after") ||
			!strings.Contains(f.Message, "counters/symbol_error read 9 before and 2 after") {
			t.Errorf("delta %d: reset finding %+v", delta, f)
		}
		if c := ConfirmBytes(d, Claim{Direction: Receive, Bytes: 1 << 20}, 0.01); c.Verdict == Confirmed {
			t.Errorf("delta %d: a reset counter confirmed the bytes: %+v", delta, c)
		}
	}
}

// A delta that its own readings contradict is a figure that cannot be
// true: it confirms no bytes, and no delta of that side is judged.
func TestDeltaItsReadingsContradictConfirmsNothing(t *testing.T) {
	d := Deltas{Device: "mlx5_0", Port: 1, Driver: "mlx5", UnchangedJudged: 8, Items: []Delta{
		{Group: Counters, Name: "port_xmit_data", Before: 1000, After: 1012, Delta: 1 << 30, Status: OK},
		{Group: Counters, Name: "port_rcv_errors", Before: 3, After: 40, Delta: 0, Status: OK},
	}}
	c := ConfirmBytes(d, Claim{Direction: Transmit, Bytes: 1 << 30}, 0.01)
	if c.Verdict != Impossible || !strings.Contains(c.Reason, "counters/port_xmit_data: delta 1073741824, but it read 1000 before and 1012 after (a rise of 12)") {
		t.Errorf("contradicted delta: %+v", c)
	}
	fs := Judge(d, nil)
	if len(fs) != 1 || fs[0].Status != Contradicted || fs[0].Severity != Unknown ||
		!strings.Contains(fs[0].Message, "figures that cannot be true") || !strings.Contains(fs[0].Message, "counters/port_rcv_errors: delta 0, but it read 3 before and 40 after") {
		t.Errorf("contradicted side judged: %+v", fs)
	}
	// Compact keeps what it cannot show unchanged.
	if k := d.Compact(); len(k.Items) != 2 {
		t.Errorf("compact dropped a contradicted counter: %+v", k.Items)
	}
}
