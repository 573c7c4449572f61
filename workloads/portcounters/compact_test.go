package portcounters

import (
	"reflect"
	"testing"
	"time"
)

func TestCompactKeepsWhatMovedWhatIsUnknownAndTheConfirmCounters(t *testing.T) {
	t0 := time.Unix(1000, 0)
	d := Deltas{Device: "rxe0", Port: 1, Driver: "rxe", Before: t0, After: t0.Add(time.Second), Items: []Delta{
		{Group: HWCounters, Name: "ack_deferred", Status: OK},
		{Group: HWCounters, Name: "duplicate_request", Before: 3, After: 5, Delta: 2, Status: OK},
		{Group: HWCounters, Name: "link_downed", Status: OK},
		{Group: HWCounters, Name: "rcvd_pkts", Status: OK}, // a confirm counter: kept at 0
		{Group: HWCounters, Name: "retry_exceeded_err", Status: Unreadable, Detail: "EIO"},
		{Group: HWCounters, Name: "sent_pkts", Before: 10, After: 110, Delta: 100, Status: OK},
	}}
	c := d.Compact()
	var kept []string
	for _, x := range c.Items {
		kept = append(kept, x.Name)
	}
	if want := []string{"duplicate_request", "rcvd_pkts", "retry_exceeded_err", "sent_pkts"}; !reflect.DeepEqual(kept, want) {
		t.Fatalf("kept %v, want %v", kept, want)
	}
	if c.Unchanged != 2 {
		t.Errorf("Unchanged = %d, want 2 (ack_deferred, link_downed)", c.Unchanged)
	}
	// The same findings and the same confirmation on both forms.
	if a, b := Judge(d, nil), Judge(c, nil); !reflect.DeepEqual(a, b) {
		t.Errorf("Judge differs after Compact:\n%v\n%v", a, b)
	}
	claim := Claim{Direction: Receive, Bytes: 64 << 10, MTU: 1024}
	if a, b := ConfirmBytes(d, claim, 0), ConfirmBytes(c, claim, 0); a != b || b.Verdict != Short {
		t.Errorf("ConfirmBytes: full %+v, compact %+v; want both short (rcvd_pkts did not move)", a, b)
	}
	// Compacting twice drops nothing more and keeps the count.
	if cc := c.Compact(); cc.Unchanged != 2 || len(cc.Items) != len(c.Items) {
		t.Errorf("Compact twice: %d items, %d unchanged", len(cc.Items), cc.Unchanged)
	}
}
