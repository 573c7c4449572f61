package verdict

import (
	"strings"
	"testing"

	"github.com/rdmasuite/rdmasuite/reports"
	"github.com/rdmasuite/rdmasuite/workloads/bw"
	"github.com/rdmasuite/rdmasuite/workloads/portcounters"
)

// A port whose counters were reset during the measurement (perfquery -R,
// a driver reload) has no error counter that can be read as clean: a
// counter that rose and was cleared reads the same before and after. Its
// data counter fell, whether the probe wrote that as backwards, as a known
// 0 or as the unsigned wrap of after − before: the link check is an error
// naming the side, the counter, both readings and the reset, never a pass.
func TestLinkWhoseCountersWereResetIsNotClean(t *testing.T) {
	ops, sizes := []string{"write"}, []int{k64}
	var hi, lo uint64 = 5000000000, 1200
	for _, tc := range []struct {
		name   string
		status portcounters.Status
		delta  uint64
	}{{"backwards", portcounters.Backwards, 0}, {"ok at 0", portcounters.OK, 0}, {"ok wrapped", portcounters.OK, lo - hi}} {
		cli, srv := pairOut(t, ops, sizes, 1, 195, withCounters(func(rail int, op bw.Op, sc *bw.SizeCounters) {
			for i, x := range sc.Peer.Items {
				if x.Name == "port_rcv_data" {
					sc.Peer.Items[i] = portcounters.Delta{Group: x.Group, Name: x.Name, Before: hi, After: lo, Delta: tc.delta, Status: tc.status}
				}
			}
		}))
		c := Bandwidth(bwInput(t, ops, sizes, cli, srv)).LinkChecks[0]
		if c.Status != reports.Error || c.Fix != FixCountersReset {
			t.Errorf("%s: link check %s (%s%s), want error", tc.name, c.Status, c.Reason, c.Diagnosis)
			continue
		}
		for _, want := range []string{"server mlx5_0/1 on node-1 during write 64KiB",
			"the counters were reset during the measurement (a driver reload or perfquery -R)",
			"counters/port_rcv_data read 5000000000 before and 1200 after", "the rail's errors in that window are unknown"} {
			if !strings.Contains(c.Reason, want) {
				t.Errorf("%s: reason lacks %q: %s", tc.name, want, c.Reason)
			}
		}
	}
}

// The link check judges the deltas of the rail it names: another port's
// clean deltas do not pass it and another port's errors do not fail it;
// either is an error naming both ports, and another port's data counter
// confirms no bytes of this rail.
func TestCountersOfAnotherPortAreAnError(t *testing.T) {
	ops, sizes := []string{"write"}, []int{k64}
	cli, srv := pairOut(t, ops, sizes, 2, 195, withCounters(func(rail int, op bw.Op, sc *bw.SizeCounters) {
		switch rail {
		case 0: // mlx5_1's clean counters reported as the client's of mlx5_0
			sc.Local = deltas("mlx5_1", sc.Local.Items[0].Delta, nil)
		case 1: // mlx5_0's errors reported as the server's of mlx5_1
			sc.Peer = deltas("mlx5_0", sc.Peer.Items[0].Delta, map[string]uint64{"port_rcv_errors": 37})
		}
	}))
	res := Bandwidth(bwInput(t, ops, sizes, cli, srv))
	links := linkByRail(t, res)
	for rail, want := range map[string]string{
		"mlx5_0/1": "client mlx5_0/1 on node-2 during write 64KiB: the counters are of port mlx5_1/1, not of the rail's port mlx5_0/1",
		"mlx5_1/1": "server mlx5_1/1 on node-1 during write 64KiB: the counters are of port mlx5_0/1, not of the rail's port mlx5_1/1",
	} {
		c := links[rail]
		if c.Status != reports.Error || !strings.Contains(c.Reason, want) {
			t.Errorf("%s: link check %s (%s%s), want an error saying %q", rail, c.Status, c.Reason, c.Diagnosis, want)
		}
	}
	for _, c := range res.Checks {
		if c.Status == reports.Pass || !strings.Contains(c.Reason, "the counters are of port") {
			t.Errorf("%s{%s} = %s (%s): bytes confirmed by another port's counters", c.ID, c.Rail, c.Status, c.Reason)
		}
	}
}

// A probe's delta that its own before and after readings contradict
// confirms no bytes and judges no link: the op's check and the link check
// are errors, figures that cannot be true, naming the counter and readings.
func TestDeltaItsReadingsContradictIsAnError(t *testing.T) {
	ops, sizes := []string{"write"}, []int{k64}
	cli, srv := pairOut(t, ops, sizes, 1, 195, withCounters(func(rail int, op bw.Op, sc *bw.SizeCounters) {
		for i, x := range sc.Local.Items {
			if x.Name == "port_xmit_data" {
				sc.Local.Items[i].After = x.Before + 12 // 48 bytes, while the delta claims the payload
			}
		}
	}))
	res := Bandwidth(bwInput(t, ops, sizes, cli, srv))
	want := "client mlx5_0/1 on node-2 during write 64KiB"
	for _, c := range append(res.Checks, res.LinkChecks...) {
		if c.Status != reports.Error || !strings.Contains(c.Reason, "figures that cannot be true") || !strings.Contains(c.Reason, want) ||
			!strings.Contains(c.Reason, "but it read 1000 before and 1012 after (a rise of 12)") {
			t.Errorf("%s{%s} = %s (%s%s), want an error: figures that cannot be true", c.ID, c.Rail, c.Status, c.Reason, c.Diagnosis)
		}
	}
}
