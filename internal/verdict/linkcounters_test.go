package verdict

import (
	"strings"
	"testing"
	"time"

	"github.com/rdmasuite/rdmasuite/reports"
	"github.com/rdmasuite/rdmasuite/workloads/bw"
	"github.com/rdmasuite/rdmasuite/workloads/portcounters"
)

// deltas is one side's compact counter deltas on an mlx5 InfiniBand port
// (counters/ with the PMA's data counters, hw_counters/ of mlx5): dataWords
// is port_xmit_data and port_rcv_data's rise (4-octet words), errs the
// judged counters that rose.
func deltas(dev string, dataWords uint64, errs map[string]uint64) *portcounters.Deltas {
	t0 := time.Unix(1700000000, 0)
	d := &portcounters.Deltas{Device: dev, Port: 1, Driver: "mlx5", Before: t0, After: t0.Add(2 * time.Second), Unchanged: 20, UnchangedJudged: 8}
	add := func(g portcounters.Group, name string, v uint64) {
		d.Items = append(d.Items, portcounters.Delta{Group: g, Name: name, Before: 1000, After: 1000 + v, Delta: v, Status: portcounters.OK})
	}
	add(portcounters.Counters, "port_rcv_data", dataWords)
	add(portcounters.Counters, "port_xmit_data", dataWords)
	for name, v := range errs {
		g := portcounters.Counters
		if _, ok := portcounters.Lookup(portcounters.HWCounters, name, "mlx5"); ok {
			g = portcounters.HWCounters
		}
		add(g, name, v)
	}
	return d
}

// withCounters gives every size of every client run both sides' deltas,
// the words covering the payload (1000 operations × size) plus headers,
// and lets edit change them per rail.
func withCounters(edit func(rail int, op bw.Op, sc *bw.SizeCounters)) func(c, s *bw.ProbeOutput) {
	return func(c, s *bw.ProbeOutput) {
		for i := range c.Rails {
			rr := &c.Rails[i]
			for j := range rr.Runs {
				for k := range rr.Runs[j].Results {
					sr := &rr.Runs[j].Results[k]
					words := uint64(sr.Local.Bytes) * uint64(sr.Local.Iterations) / 4 * 102 / 100
					sc := &bw.SizeCounters{Local: deltas(rr.Local.Device, words, nil), Peer: deltas(rr.Peer.Device, words, nil)}
					if edit != nil {
						edit(i, rr.Runs[j].Params.Op, sc)
					}
					sr.Counters = sc
				}
			}
		}
	}
}

func linkByRail(t *testing.T, res BWResult) map[string]reports.Check {
	t.Helper()
	out := map[string]reports.Check{}
	for _, c := range res.LinkChecks {
		if c.ID != "bandwidth/link" {
			t.Errorf("link check id %q", c.ID)
		}
		out[c.Rail[:strings.Index(c.Rail, "→")]] = c
	}
	return out
}

// A rail whose bandwidth passes while its receive errors rise
// fails its link check, naming the side, port, counter and delta; the
// clean rail passes with the counters read as its measurement.
func TestDirtyLinkFailsAlthoughBandwidthPasses(t *testing.T) {
	ops, sizes := []string{"write", "read"}, []int{k64, m1}
	cli, srv := pairOut(t, ops, sizes, 2, 195, withCounters(func(rail int, op bw.Op, sc *bw.SizeCounters) {
		if rail == 1 && op == bw.OpWrite {
			sc.Peer = deltas("mlx5_1", sc.Peer.Items[0].Delta, map[string]uint64{"port_rcv_errors": 37, "symbol_error": 5})
		}
		if rail == 0 {
			// Congestion is recorded, not judged without a SKU bound.
			sc.Local.Items = append(sc.Local.Items, portcounters.Delta{Group: portcounters.HWCounters, Name: "np_cnp_sent", Delta: 9, After: 9, Status: portcounters.OK})
		}
	}))
	res := Bandwidth(bwInput(t, ops, sizes, cli, srv))
	for _, c := range res.Checks {
		if c.Status != reports.Pass {
			t.Errorf("%s{%s} = %s (%s%s): the bandwidth itself passed", c.ID, c.Rail, c.Status, c.Reason, c.Diagnosis)
		}
		if !strings.Contains(strings.Join(c.Evidence, "\n"), "port counters confirm the bytes of every measured size (client counters/port_") {
			t.Errorf("%s{%s}: no byte confirmation in the evidence: %q", c.ID, c.Rail, c.Evidence)
		}
	}
	links := linkByRail(t, res)
	if len(links) != 2 {
		t.Fatalf("want a link check per rail pair, got %s", statuses(res.LinkChecks))
	}
	dirty := links["mlx5_1/1"]
	if dirty.Status != reports.Fail || dirty.Fix != FixDirtyLink {
		t.Fatalf("dirty rail: %s %q", dirty.Status, dirty.Diagnosis)
	}
	for _, want := range []string{"server mlx5_1/1 on node-1 during write 64KiB: counters/port_rcv_errors rose by 37 (allowed 0)",
		"counters/symbol_error rose by 5", "during write 1MiB"} {
		if !strings.Contains(dirty.Diagnosis, want) {
			t.Errorf("dirty diagnosis lacks %q: %s", want, dirty.Diagnosis)
		}
	}
	if m := dirty.Measured; len(m) != 2 || m[1].Name != "server_counters_over_allowance" || m[1].Value != 4 || m[0].Value != 0 {
		t.Errorf("dirty measurements: %+v", m)
	}
	clean := links["mlx5_0/1"]
	if clean.Status != reports.Pass || len(clean.Measured) != 2 || clean.Measured[0].Value != 0 || clean.Measured[0].Threshold == nil {
		t.Errorf("clean rail: %s %+v", clean.Status, clean.Measured)
	}
	if ev := strings.Join(clean.Evidence, "\n"); !strings.Contains(ev, "recorded, not judged: client mlx5_0/1 on node-2 during write 64KiB: hw_counters/np_cnp_sent rose by 9") {
		t.Errorf("congestion not recorded: %s", ev)
	}

	// A SKU allowance lifts the bar for the counter it names, and the
	// measurement names the SKU as the source.
	k := *bwInput(t, ops, sizes, cli, srv).SKU
	k.PortCounters.Allow = map[string]uint64{"port_rcv_errors": 100, "symbol_error": 10}
	k.PortCounters.Source = "vendor burn-in limits"
	in := bwInput(t, ops, sizes, cli, srv)
	in.SKU = &k
	if c := linkByRail(t, Bandwidth(in))["mlx5_1/1"]; c.Status != reports.Pass || !strings.Contains(c.Measured[0].Threshold.Source, "vendor burn-in limits") {
		t.Errorf("with allowances: %s %+v", c.Status, c.Measured)
	}
}

// A port whose own data counter is below the bytes the
// measurement claims did not carry them: the op's check is an error, never
// a pass, whatever its bandwidth says; the other op on the rail keeps its
// verdict.
func TestBytesThePortDidNotCarryAreAnError(t *testing.T) {
	ops, sizes := []string{"write", "read"}, []int{m1}
	cli, srv := pairOut(t, ops, sizes, 2, 195, withCounters(func(rail int, op bw.Op, sc *bw.SizeCounters) {
		if rail == 0 && op == bw.OpWrite {
			sc.Local = deltas("mlx5_0", 12, nil) // 48 bytes for a 1 GB claim
		}
	}))
	res := Bandwidth(bwInput(t, ops, sizes, cli, srv))
	for _, c := range res.Checks {
		short := c.ID == "bandwidth/write" && strings.HasPrefix(c.Rail, "mlx5_0/1")
		if short != (c.Status == reports.Error) {
			t.Errorf("%s{%s} = %s %s", c.ID, c.Rail, c.Status, c.Reason)
		}
		if short && (c.Fix != FixCountersShort || !strings.Contains(c.Reason,
			"client mlx5_0/1 on node-2 during write 1MiB (transmit): counters/port_xmit_data counted 48 bytes, below the 1048576000 claimed")) {
			t.Errorf("short claim: %q fix %q", c.Reason, c.Fix)
		}
	}
	// Old probe output (no counters): nothing confirmed, nothing clean.
	cli, srv = pairOut(t, ops, sizes, 1, 195, nil)
	res = Bandwidth(bwInput(t, ops, sizes, cli, srv))
	for _, c := range res.Checks {
		if c.Status != reports.Pass || !strings.Contains(strings.Join(c.Evidence, "\n"), "bytes not confirmed by port counters: client mlx5_0/1 on node-2: the probe reported no port counters") {
			t.Errorf("old probe %s: %s %q", c.ID, c.Status, c.Evidence)
		}
	}
	if l := res.LinkChecks; len(l) != 1 || l[0].Status != reports.NotRun || !strings.Contains(l[0].Reason, "could not all be judged") {
		t.Errorf("old probe link: %s %q", statuses(l), l[0].Reason)
	}
}

// A counter that cannot be read or went backwards (a reset: an error) is
// never a clean link;
// a rail that measured nothing has nothing to bracket (not-run, its op
// checks say why); the size that failed brings its counters as evidence.
func TestLinkCounterUnknownsAndFailedSize(t *testing.T) {
	ops, sizes := []string{"write"}, []int{k64}
	cli, srv := pairOut(t, ops, sizes, 3, 195, withCounters(func(rail int, op bw.Op, sc *bw.SizeCounters) {
		switch rail {
		case 0:
			sc.Peer.Items = append(sc.Peer.Items, portcounters.Delta{Group: portcounters.Counters, Name: "link_downed", Before: 9, After: 2,
				Status: portcounters.Backwards, Detail: "reset or wrapped"})
		case 1:
			sc.Peer, sc.PeerErr = nil, "port counters of mlx5_1/1 not read after the measurement: permission denied"
		case 2:
			// What a pod in shared netns mode reads without the host's
			// /sys: the port, but neither counter group.
			sc.Local = &portcounters.Deltas{Device: "mlx5_2", Port: 1, Items: []portcounters.Delta{},
				Absent: []portcounters.Group{portcounters.Counters, portcounters.HWCounters}}
		}
	}))
	res := Bandwidth(bwInput(t, ops, sizes, cli, srv))
	links := linkByRail(t, res)
	if c := links["mlx5_0/1"]; c.Status != reports.Error || !strings.Contains(c.Reason, "counters/link_downed read 9 before and 2 after") {
		t.Errorf("backwards counter: %s %q", c.Status, c.Reason)
	}
	if c := links["mlx5_1/1"]; c.Status != reports.NotRun || !strings.Contains(c.Reason, "permission denied") {
		t.Errorf("unread side: %s %q", c.Status, c.Reason)
	}
	if c := links["mlx5_2/1"]; c.Status != reports.NotRun ||
		!strings.Contains(c.Reason, "client mlx5_2/1 on node-2: no counter the table judges was read (absent: counters/, hw_counters/)") {
		t.Errorf("nothing watched: %s %q", c.Status, c.Reason)
	}

	cli, srv = pairOut(t, ops, sizes, 1, 195, func(c, s *bw.ProbeOutput) {
		r := &c.Rails[0].Runs[0]
		r.Results = nil
		r.Error = bw.Classify(bw.Tag(bw.ErrTransport, errorString("completion error on QP 2 op 73: remote invalid request error")))
		r.FailedSize = k64
		r.FailedCounters = &bw.SizeCounters{Local: deltas("mlx5_0", 0, map[string]uint64{"duplicate_request": 12}), PeerErr: "failed first"}
		c.Rails[0].Error = r.Error
	})
	res = Bandwidth(bwInput(t, ops, sizes, cli, srv))
	if c := res.LinkChecks[0]; c.Status != reports.Fail || !strings.Contains(c.Diagnosis, "during write 64KiB (failed): hw_counters/duplicate_request rose by 12") {
		t.Errorf("failed size's counters: %s %q %q", c.Status, c.Diagnosis, c.Reason)
	}
	cli, srv = pairOut(t, ops, sizes, 1, 195, func(c, s *bw.ProbeOutput) { c.Rails[0].Runs[0].Results = nil })
	if c := Bandwidth(bwInput(t, ops, sizes, cli, srv)).LinkChecks[0]; c.Status != reports.NotRun || !strings.Contains(c.Reason, "nothing to bracket") {
		t.Errorf("nothing measured: %s %q", c.Status, c.Reason)
	}
}

type errorString string

func (e errorString) Error() string { return string(e) }

// Congestion counters that move on every size are recorded, not judged,
// and a rail pair keeps a bounded number of those lines (a busy RoCE fleet
// would otherwise carry them for every size and side).
func TestRecordedCountersAreBounded(t *testing.T) {
	ops, sizes := []string{"write", "read"}, []int{k64, m1}
	cli, srv := pairOut(t, ops, sizes, 1, 195, withCounters(func(rail int, op bw.Op, sc *bw.SizeCounters) {
		for _, d := range []*portcounters.Deltas{sc.Local, sc.Peer} {
			d.Items = append(d.Items, portcounters.Delta{Group: portcounters.HWCounters, Name: "np_cnp_sent", Delta: 3, After: 3, Status: portcounters.OK},
				portcounters.Delta{Group: portcounters.HWCounters, Name: "rp_cnp_handled", Delta: 4, After: 4, Status: portcounters.OK})
		}
	}))
	c := Bandwidth(bwInput(t, ops, sizes, cli, srv)).LinkChecks[0]
	if c.Status != reports.Pass {
		t.Fatalf("congestion alone is not judged: %s %q", c.Status, c.Diagnosis)
	}
	var rec string
	for _, e := range c.Evidence {
		if strings.HasPrefix(e, "recorded, not judged: ") {
			rec = e
		}
	}
	if n := strings.Count(rec, "rose by"); n != maxRecorded || !strings.HasSuffix(rec, "… and 10 more") {
		t.Errorf("%d recorded lines kept (want %d and the rest counted): %s", n, maxRecorded, rec)
	}
}
