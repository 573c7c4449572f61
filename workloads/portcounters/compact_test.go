package portcounters

import (
	"os"
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

// A pod's compat view of a device (shared RDMA netns mode) has the port
// but no counter group: ReadFirst falls back to the host's /sys mounted in
// the pod, and says which root it read; with no root showing a group the
// pod's own read stands, absent groups named.
func TestReadFirstFallsBackToTheHostRoot(t *testing.T) {
	pod := t.TempDir()
	if err := os.MkdirAll(PortDir(pod, "rxe0", 1), 0o755); err != nil {
		t.Fatal(err)
	}
	host := "testdata/rxe"
	s, err := ReadFirst([]string{pod, host}, "rxe0", 1)
	if err != nil || s.Root != host || len(s.Counters) == 0 {
		t.Fatalf("fallback: root %q, %d counters, err %v", s.Root, len(s.Counters), err)
	}
	s, err = ReadFirst([]string{host, pod}, "rxe0", 1)
	if err != nil || s.Root != host {
		t.Fatalf("own sysfs first: root %q, err %v", s.Root, err)
	}
	s, err = ReadFirst([]string{pod, t.TempDir()}, "rxe0", 1)
	if err != nil || s.Root != pod || len(s.Absent) != 2 {
		t.Fatalf("no root with counters: root %q absent %v err %v", s.Root, s.Absent, err)
	}
	d := Diff(s, s)
	if d.JudgedWatched() != 0 {
		t.Errorf("nothing read, yet %d judged counters watched", d.JudgedWatched())
	}
	h, _ := ReadFirst([]string{host}, "rxe0", 1)
	if Diff(s, h).Problem == "" {
		t.Error("snapshots under different roots compared")
	}
	if n := Diff(h, h).Compact().JudgedWatched(); n == 0 {
		t.Error("the rxe fixture's judged counters were not counted as watched")
	}
}
