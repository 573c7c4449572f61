package node

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rdmasuite/rdmasuite/workloads/portcounters"
)

// Every RDMA port's counters are read right before and right
// after the sampling window, through the host root, and the report keeps
// their compact deltas (or why they are unknown).

func atRestPort(t *testing.T, r Report, dev string, n int) PortAtRest {
	t.Helper()
	for _, p := range r.AtRest.Ports {
		if p.Device == dev && p.Port == n {
			return p
		}
	}
	t.Fatalf("no at-rest read of %s port %d in %+v", dev, n, r.AtRest)
	return PortAtRest{}
}

// judged returns the counters portcounters.Judge fails with the default
// allowances, and the unknown ones.
func judged(d *portcounters.Deltas) (fails, unknowns []string) {
	for _, f := range portcounters.Judge(*d, nil) {
		switch f.Severity {
		case portcounters.Fail:
			fails = append(fails, f.Counter)
		case portcounters.Unknown:
			unknowns = append(unknowns, f.Counter)
		}
	}
	return fails, unknowns
}

func deltaOf(t *testing.T, d *portcounters.Deltas, g portcounters.Group, name string) portcounters.Delta {
	t.Helper()
	x, ok := d.Get(g, name)
	if !ok {
		t.Fatalf("%s/%d: no delta for %s/%s in %+v", d.Device, d.Port, g, name, d.Items)
	}
	return x
}

var atRestTrees = []string{"base.tree", "healthy.tree", "atrest.tree"}

func TestAtRestErrorsRise(t *testing.T) {
	r := collectTrees(t, 2*time.Second, atRestTrees, []string{"atrest_errors_after.tree"})
	a := r.AtRest
	if a.NotRead != "" || a.WindowSeconds != 2 || len(a.Ports) != 4 {
		t.Fatalf("at rest: %+v", a)
	}
	// Every port collectRDMA found, in its order.
	var order []string
	for _, p := range a.Ports {
		order = append(order, p.Device)
		if p.Err != "" || p.Deltas == nil {
			t.Errorf("%s/%d: err %q deltas %v", p.Device, p.Port, p.Err, p.Deltas)
		}
	}
	if strings.Join(order, ",") != "mlx5_0,mlx5_1,mlx5_bond_0,rxe0" {
		t.Errorf("ports %q", order)
	}

	ib := atRestPort(t, r, "mlx5_0", 1).Deltas
	if ib.Interval() != 2*time.Second || ib.Driver != "mlx5" || ib.Root != r.HostRoot {
		t.Errorf("mlx5_0: interval %v driver %q root %q", ib.Interval(), ib.Driver, ib.Root)
	}
	if x := deltaOf(t, ib, portcounters.Counters, "symbol_error"); x.Status != portcounters.OK || x.Delta != 12 {
		t.Errorf("symbol_error %+v", x)
	}
	if x := deltaOf(t, ib, portcounters.Counters, "link_downed"); x.Status != portcounters.OK || x.Delta != 1 || x.Before != 1 {
		t.Errorf("link_downed %+v", x)
	}
	// Compacted: an error counter that stood still is counted, not kept;
	// the data and packet counters stay (a zero there says idle).
	if _, kept := ib.Get(portcounters.Counters, "port_rcv_errors"); kept || ib.Unchanged == 0 || ib.UnchangedJudged == 0 {
		t.Errorf("not compact: kept port_rcv_errors %v, unchanged %d/%d", kept, ib.Unchanged, ib.UnchangedJudged)
	}
	if x := deltaOf(t, ib, portcounters.Counters, "port_xmit_packets"); x.Delta != 0 {
		t.Errorf("idle port's packets moved: %+v", x)
	}
	if f, u := judged(ib); strings.Join(f, ",") != "counters/link_downed,counters/symbol_error" || len(u) != 0 {
		t.Errorf("mlx5_0 fails %q unknowns %q", f, u)
	}

	roce := atRestPort(t, r, "mlx5_bond_0", 1).Deltas
	if f, u := judged(roce); strings.Join(f, ",") != "hw_counters/local_ack_timeout_err,hw_counters/out_of_sequence" || len(u) != 0 {
		t.Errorf("mlx5_bond_0 fails %q unknowns %q", f, u)
	}
	if x := deltaOf(t, roce, portcounters.Counters, "port_xmit_packets"); x.Delta != 5000 {
		t.Errorf("bond traffic %+v", x)
	}
	if x := deltaOf(t, roce, portcounters.HWCounters, "np_cnp_sent"); x.Delta != 4 {
		t.Errorf("np_cnp_sent %+v", x)
	}

	// Soft-RoCE: the flapping rail. The table judges rxe's link_downed by
	// default (allowance 0), and counters/ is absent, not a failure.
	rxe := atRestPort(t, r, "rxe0", 1).Deltas
	if rxe.Driver != "rxe" || len(rxe.Absent) != 1 || rxe.Absent[0] != portcounters.Counters {
		t.Errorf("rxe0: driver %q absent %v", rxe.Driver, rxe.Absent)
	}
	if f, u := judged(rxe); strings.Join(f, ",") != "hw_counters/link_downed" || len(u) != 0 {
		t.Errorf("rxe0 fails %q unknowns %q", f, u)
	}

	// No counter directory at all: both groups recorded absent, no finding.
	none := atRestPort(t, r, "mlx5_1", 1).Deltas
	if len(none.Absent) != 2 || len(none.Items) != 0 {
		t.Errorf("mlx5_1: %+v", none)
	}
	if f, u := judged(none); len(f)+len(u) != 0 {
		t.Errorf("mlx5_1 fails %q unknowns %q", f, u)
	}
	// The PSI sampling shares the window.
	if r.Pressure.WindowSeconds != 2 || r.Pressure.IO.SomeStallFraction == nil {
		t.Errorf("pressure %+v", r.Pressure)
	}
}

// Only data and packet counters moved: nothing fails.
func TestAtRestCleanTraffic(t *testing.T) {
	r := collectTrees(t, 2*time.Second, atRestTrees, []string{"atrest_clean_after.tree"})
	for _, p := range r.AtRest.Ports {
		if p.Deltas == nil {
			t.Fatalf("%s/%d: %q", p.Device, p.Port, p.Err)
		}
		if f, u := judged(p.Deltas); len(f)+len(u) != 0 {
			t.Errorf("%s/%d: fails %q unknowns %q", p.Device, p.Port, f, u)
		}
	}
	if x := deltaOf(t, atRestPort(t, r, "mlx5_0", 1).Deltas, portcounters.Counters, "port_rcv_packets"); x.Delta != 1000 {
		t.Errorf("mlx5_0 rcv packets %+v", x)
	}
	if x := deltaOf(t, atRestPort(t, r, "rxe0", 1).Deltas, portcounters.HWCounters, "sent_pkts"); x.Delta != 10 {
		t.Errorf("rxe0 sent_pkts %+v", x)
	}
}

// A counter that cannot be read is named, never a zero: garbage in a file,
// a directory where a counter was, a group that cannot be listed, a port
// directory gone by the end of the window.
func TestAtRestUnreadableIsNamed(t *testing.T) {
	root := buildTree(t, atRestTrees...)
	dev := func(p string) string { return filepath.Join(root, "sys/devices/pci0000:00", p) }
	clock := &fakeClock{t: t, now: t0, root: root, after: []string{"atrest_errors_after.tree"}}
	sleep := func(d time.Duration) {
		clock.Sleep(d)
		must := func(err error) {
			t.Helper()
			if err != nil {
				t.Fatal(err)
			}
		}
		ib := dev("0000:01:00.0/infiniband/mlx5_0/ports/1")
		// What sysfs.c show_pma_counter prints when the PMA query fails.
		must(os.WriteFile(filepath.Join(ib, "counters/symbol_error"), []byte("N/A (no PMA)\n"), 0o644))
		must(os.Remove(filepath.Join(ib, "counters/link_error_recovery")))
		must(os.Mkdir(filepath.Join(ib, "counters/link_error_recovery"), 0o755))
		// hw_counters/ turned into a file: listing it fails (ENOTDIR).
		roce := dev("0000:03:00.0/infiniband/mlx5_bond_0/ports/1")
		must(os.RemoveAll(filepath.Join(roce, "hw_counters")))
		must(os.WriteFile(filepath.Join(roce, "hw_counters"), nil, 0o644))
		must(os.RemoveAll(filepath.Join(root, "sys/devices/virtual/infiniband/rxe0/ports/1")))
	}
	r, err := Collect(Options{HostRoot: root, SampleWindow: 2 * time.Second, Now: clock.Now, Sleep: sleep})
	if err != nil {
		t.Fatal(err)
	}

	ib := atRestPort(t, r, "mlx5_0", 1).Deltas
	x := deltaOf(t, ib, portcounters.Counters, "symbol_error")
	if x.Status != portcounters.Unreadable || !strings.Contains(x.Detail, "N/A (no PMA)") || x.Delta != 0 {
		t.Errorf("symbol_error %+v", x)
	}
	if x := deltaOf(t, ib, portcounters.Counters, "link_error_recovery"); x.Status != portcounters.OnlyBefore {
		t.Errorf("link_error_recovery %+v", x)
	}
	f, u := judged(ib)
	if strings.Join(f, ",") != "counters/link_downed" || strings.Join(u, ",") != "counters/link_error_recovery,counters/symbol_error" {
		t.Errorf("mlx5_0 fails %q unknowns %q", f, u)
	}

	roce := atRestPort(t, r, "mlx5_bond_0", 1).Deltas
	if len(roce.GroupErrs) != 1 || roce.GroupErrs[0].Side != "after" || roce.GroupErrs[0].Group != portcounters.HWCounters {
		t.Errorf("bond group errors %+v", roce.GroupErrs)
	}
	if _, u := judged(roce); len(u) == 0 || u[0] != "hw_counters" {
		t.Errorf("bond unknowns %q", u)
	}

	p := atRestPort(t, r, "rxe0", 1)
	if p.Deltas != nil || !strings.HasPrefix(p.Err, "after the window: ") || !strings.Contains(p.Err, "rxe0") {
		t.Errorf("rxe0: deltas %v err %q", p.Deltas, p.Err)
	}
}

// A single read (window 0) cannot see a counter rise: no read is made and
// the report says why.
func TestAtRestWithoutWindow(t *testing.T) {
	r := collectTrees(t, 0, atRestTrees, nil)
	a := r.AtRest
	if len(a.Ports) != 0 || a.WindowSeconds != 0 || !strings.Contains(a.NotRead, "window") {
		t.Errorf("at rest without a window: %+v", a)
	}
	b, _ := json.Marshal(r)
	if !strings.Contains(string(b), `"atRest":{"windowSeconds":0,"notRead":"`) || !strings.Contains(string(b), `"ports":[]}`) {
		t.Errorf("JSON: %s", b)
	}
}

// A node without RDMA ports has nothing to read and nothing to explain.
func TestAtRestNoPorts(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "proc"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "proc/modules"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, w := range []time.Duration{0, time.Second} {
		clock := &fakeClock{t: t, now: t0, root: root}
		r, err := Collect(Options{HostRoot: root, SampleWindow: w, Now: clock.Now, Sleep: clock.Sleep})
		if err != nil {
			t.Fatal(err)
		}
		if r.AtRest.NotRead != "" || r.AtRest.Ports == nil || len(r.AtRest.Ports) != 0 {
			t.Errorf("window %v: %+v", w, r.AtRest)
		}
	}
}

func TestAtRestJSON(t *testing.T) {
	r := collectTrees(t, 2*time.Second, atRestTrees, []string{"atrest_errors_after.tree"})
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{`"atRest":{"windowSeconds":2,"ports":[{"device":"mlx5_0","port":1,"deltas":{"device":"mlx5_0","port":1,"driver":"mlx5"`,
		`{"group":"counters","name":"symbol_error","before":0,"after":12,"delta":12,"bits":16,"status":"ok"}`} {
		if !strings.Contains(string(b), key) {
			t.Errorf("JSON lacks %s", key)
		}
	}
	var back Report
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	d := atRestPort(t, back, "mlx5_0", 1).Deltas
	if x := deltaOf(t, d, portcounters.Counters, "symbol_error"); x.Delta != 12 || d.Interval() != 2*time.Second {
		t.Errorf("round trip: %+v, interval %v", x, d.Interval())
	}
}
