package verdict

import (
	"strings"
	"testing"

	"github.com/rdmasuite/rdmasuite/reports"
	"github.com/rdmasuite/rdmasuite/thresholds"
	"github.com/rdmasuite/rdmasuite/workloads/bw"
	"github.com/rdmasuite/rdmasuite/workloads/lat"
	"github.com/rdmasuite/rdmasuite/workloads/probeout"
)

// latencyOut is a pair's outputs where every rail measured latency at 2 B
// with the given average (µs) unless edit changes it.
func latencyOut(t *testing.T, ops []string, rails int, avg float64, edit func(cli, srv *bw.ProbeOutput)) (string, string) {
	return pairOut(t, ops, []int{2}, rails, 0, func(cli, srv *bw.ProbeOutput) {
		for i := range cli.Rails {
			for j := range cli.Rails[i].Runs {
				r := &cli.Rails[i].Runs[j]
				r.Params.Latency = true
				for k := range r.Results {
					r.Results[k].Local.Latency = &lat.Summary{Samples: 997, Min: avg * 0.9, Typical: avg, Avg: avg, P99: avg * 1.5, P999: avg * 2, Max: avg * 2,
						Halved: r.Params.Op.PingPongs()}
				}
			}
		}
		if edit != nil {
			edit(cli, srv)
		}
	})
}

func latInput(t *testing.T, ops []string, cli, srv string) BWInput {
	in := bwInput(t, ops, []int{2}, cli, srv)
	in.metric = &latencyMetric
	in.SKU = sku(t, "H100/NDR-400")
	return in
}

// Each rail pair and op is one latency/<op> check, judged on the average
// against the SKU's ceiling, with typical, p99 and max beside it.
func TestLatencyPassAndFail(t *testing.T) {
	cli, srv := latencyOut(t, []string{"write", "read"}, 2, 2.0, nil)
	res := Latency(latInput(t, []string{"write", "read"}, cli, srv))
	if got := statuses(res.Checks); got != "latency/write{mlx5_0/1→mlx5_0/1}=pass latency/read{mlx5_0/1→mlx5_0/1}=pass latency/write{mlx5_1/1→mlx5_1/1}=pass latency/read{mlx5_1/1→mlx5_1/1}=pass" {
		t.Fatalf("statuses: %s", got)
	}
	c := res.Checks[0]
	var names []string
	for _, m := range c.Measured {
		names = append(names, m.Name)
		if m.Unit != reports.UnitMicroseconds {
			t.Errorf("%s in %s", m.Name, m.Unit)
		}
	}
	if strings.Join(names, ",") != "write_2B_lat_avg,write_2B_lat_typical,write_2B_lat_p99,write_2B_lat_max" ||
		c.Measured[0].Threshold == nil || c.Measured[0].Threshold.Op != "<=" || c.Measured[0].Threshold.Value != 2.5 {
		t.Fatalf("measured %+v", c.Measured)
	}
	// 3 µs write is over 2.5 µs; read at 3 µs is under its 4.5 µs.
	cli, srv = latencyOut(t, []string{"write", "read"}, 1, 3.0, nil)
	res = Latency(latInput(t, []string{"write", "read"}, cli, srv))
	if res.Checks[0].Status != reports.Fail || !strings.Contains(res.Checks[0].Diagnosis, "write_2B_lat_avg = 3 µs, threshold <= 2.5 µs") ||
		res.Checks[0].Fix != FixSlowLatency || res.Checks[1].Status != reports.Pass {
		t.Fatalf("%+v", res.Checks)
	}
}

// Send latency (ib_send_lat) is judged like write, against the SKU's
// sendLatencyUs; a SKU without it leaves send not-run while write passes.
func TestSendLatencyHasItsOwnCeiling(t *testing.T) {
	cli, srv := latencyOut(t, []string{"write", "send"}, 1, 2.0, nil)
	in := latInput(t, []string{"write", "send"}, cli, srv)
	res := Latency(in)
	if got := statuses(res.Checks); got != "latency/write{mlx5_0/1→mlx5_0/1}=pass latency/send{mlx5_0/1→mlx5_0/1}=pass" {
		t.Fatalf("statuses: %s", got)
	}
	if m := res.Checks[1].Measured[0]; m.Name != "send_2B_lat_avg" || m.Threshold == nil || m.Threshold.Value != 2.5 {
		t.Fatalf("send measured %+v", res.Checks[1].Measured)
	}
	k := *in.SKU
	k.SendLatencyUs = thresholds.Value{}
	in.SKU = &k
	res = Latency(in)
	if res.Checks[0].Status != reports.Pass || res.Checks[1].Status != reports.NotRun || !strings.Contains(res.Checks[1].Reason, "sendLatencyUs") {
		t.Fatalf("%+v", res.Checks)
	}
}

// Defect guards: a rail whose output holds no latency (an old probe, a
// bandwidth-only run) fails as not measured, never passes on a zero; a
// SKU without a ceiling is not-run naming the field, with the values kept.
func TestLatencyMissingIsNeverAPass(t *testing.T) {
	cli, srv := latencyOut(t, []string{"write"}, 1, 2.0, func(cli, _ *bw.ProbeOutput) {
		cli.Rails[0].Runs[0].Results[0].Local.Latency = nil
	})
	res := Latency(latInput(t, []string{"write"}, cli, srv))
	if len(res.Checks) != 1 || res.Checks[0].Status != reports.Fail || !strings.Contains(res.Checks[0].Diagnosis, "not measured") {
		t.Fatalf("%+v", res.Checks)
	}
	cli, srv = latencyOut(t, []string{"read"}, 1, 2.0, nil)
	in := latInput(t, []string{"read"}, cli, srv)
	k := *sku(t, "A100/HDR-200")
	k.ReadLatencyUs.Value = nil
	in.SKU = &k
	res = Latency(in)
	if c := res.Checks[0]; c.Status != reports.NotRun || !strings.Contains(c.Reason, "readLatencyUs") || len(c.Measured) != 4 {
		t.Fatalf("%+v", c)
	}
}

// A rail that failed says why even when the SKU has no ceiling: the
// probe's diagnosis wins over "no ceiling" (not-run would hide a down link).
func TestLatencyRailErrorWithoutCeiling(t *testing.T) {
	cli, srv := latencyOut(t, []string{"write"}, 1, 2.0, func(cli, _ *bw.ProbeOutput) {
		cli.Rails[0].Runs = nil
		cli.Rails[0].Error = probeout.Errorf(probeout.KindLinkDown, "mlx5_0/1 is DOWN")
	})
	in := latInput(t, []string{"write"}, cli, srv)
	k := *sku(t, "A100/HDR-200")
	k.WriteLatencyUs.Value = nil
	in.SKU = &k
	if c := Latency(in).Checks[0]; c.Status != reports.Fail || !strings.Contains(c.Diagnosis, "DOWN") {
		t.Fatalf("%+v", c)
	}
}

// A bandwidth READ run at one QP and depth 1 carries a latency summary
// (ib_read_lat's loop): the bandwidth check still records Gb/s only, never
// latency figures under its name.
func TestBandwidthIgnoresALatencySummary(t *testing.T) {
	cli, srv := latencyOut(t, []string{"read"}, 1, 2.0, func(cli, _ *bw.ProbeOutput) {
		for i := range cli.Rails[0].Runs[0].Results {
			cli.Rails[0].Runs[0].Results[i].Local.Iterations = 1000
			setGbps(&cli.Rails[0].Runs[0].Results[i].Local, 390)
		}
	})
	in := bwInput(t, []string{"read"}, []int{2}, cli, srv)
	in.SKU = sku(t, "H100/NDR-400")
	res := Bandwidth(in)
	if len(res.Checks) == 0 || res.Checks[0].ID != "bandwidth/read" {
		t.Fatalf("checks %+v", res.Checks)
	}
	for _, m := range res.Checks[0].Measured {
		if m.Unit != "Gb/s" || strings.Contains(m.Name, "lat") {
			t.Errorf("bandwidth check records %s in %s", m.Name, m.Unit)
		}
	}
	if len(res.Checks[0].Measured) != 1 || res.Checks[0].Measured[0].Value != 390 {
		t.Fatalf("measured %+v", res.Checks[0].Measured)
	}
}

// What competed with the measuring thread is evidence beside the figure;
// counts no kernel could give (a CPU share of 3, a loop of no time) make
// the figure unjudgeable, not a pass.
func TestLatencyDisturbanceIsEvidenceAndChecked(t *testing.T) {
	disturb := func(d bw.Disturbance) func(cli, srv *bw.ProbeOutput) {
		return func(cli, srv *bw.ProbeOutput) {
			for i := range cli.Rails {
				for j := range cli.Rails[i].Runs {
					for k := range cli.Rails[i].Runs[j].Results {
						d := d
						cli.Rails[i].Runs[j].Results[k].Local.Disturbance = &d
					}
				}
			}
		}
	}
	cli, srv := latencyOut(t, []string{"write"}, 1, 2.0, disturb(bw.Disturbance{WallMs: 850, ThreadCPUShare: 0.62, Preemptions: 717, OtherThreadsCPUMs: 4.9}))
	c := Latency(latInput(t, []string{"write"}, cli, srv)).Checks[0]
	if c.Status != reports.Pass || !strings.Contains(strings.Join(c.Evidence, "\n"), "62 % of a CPU over the 850 ms loop, was preempted 717 times") {
		t.Fatalf("%s %s: evidence %q: want the measuring thread's counts", c.Status, c.Reason, c.Evidence)
	}
	for _, bad := range []bw.Disturbance{{WallMs: 850, ThreadCPUShare: 3}, {WallMs: 0, ThreadCPUShare: 0.5}, {WallMs: 10, ThreadCPUShare: 0.5, Preemptions: -1}} {
		cli, srv = latencyOut(t, []string{"write"}, 1, 2.0, disturb(bad))
		c = Latency(latInput(t, []string{"write"}, cli, srv)).Checks[0]
		if c.Status == reports.Pass || !strings.Contains(c.Reason+c.Diagnosis, "cannot be true") {
			t.Fatalf("disturbance %+v: %s %q: want the figure refused", bad, c.Status, c.Reason+c.Diagnosis)
		}
	}
}

// An average over the ceiling stays a FAIL: the ceiling's source judges
// perftest's t_avg. When the typical round trip met it, the diagnosis says
// so, and when the measuring thread also lost its CPU (a busy node), the
// fix points at the node's CPU, not the fabric. A typical figure over the
// ceiling, or a thread that kept its CPU, keeps the fabric fix.
func TestLatencyOverCeilingNamesContention(t *testing.T) {
	judge := func(typical float64, d *bw.Disturbance) reports.Check {
		cli, srv := latencyOut(t, []string{"write"}, 1, 3.0, func(cli, _ *bw.ProbeOutput) {
			r := &cli.Rails[0].Runs[0].Results[0].Local
			r.Latency.Typical, r.Latency.Min, r.Iterations = typical, typical*0.9, 1000
			r.Disturbance = d
		})
		return Latency(latInput(t, []string{"write"}, cli, srv)).Checks[0]
	}
	busy := &bw.Disturbance{WallMs: 900, ThreadCPUShare: 0.55, Preemptions: 640, OtherThreadsCPUMs: 2}
	quiet := &bw.Disturbance{WallMs: 900, ThreadCPUShare: 0.99, Preemptions: 4, OtherThreadsCPUMs: 2}

	c := judge(2.0, busy)
	if c.Status != reports.Fail || c.Fix != FixContendedLatency ||
		!strings.Contains(c.Diagnosis, "write_2B_lat_avg = 3 µs, threshold <= 2.5 µs") ||
		!strings.Contains(c.Diagnosis, "typical latency (2 µs) meets it") ||
		!strings.Contains(c.Diagnosis, "preempted 640 times in 1000 iterations with 55 % of a CPU") {
		t.Fatalf("busy node, typical within: %s %q fix %q", c.Status, c.Diagnosis, c.Fix)
	}
	// Half the iterations preempted is contention even at a full share.
	c = judge(2.0, &bw.Disturbance{WallMs: 900, ThreadCPUShare: 0.97, Preemptions: 500})
	if c.Status != reports.Fail || c.Fix != FixContendedLatency {
		t.Fatalf("many preemptions: %s fix %q", c.Status, c.Fix)
	}
	c = judge(2.0, quiet)
	if c.Status != reports.Fail || c.Fix != FixSlowLatency || !strings.Contains(c.Diagnosis, "typical latency (2 µs) meets it") ||
		strings.Contains(c.Diagnosis, "competed") {
		t.Fatalf("quiet thread, typical within: %s %q fix %q", c.Status, c.Diagnosis, c.Fix)
	}
	c = judge(2.0, nil)
	if c.Status != reports.Fail || c.Fix != FixSlowLatency || !strings.Contains(c.Diagnosis, "typical latency (2 µs) meets it") {
		t.Fatalf("no counts, typical within: %s %q fix %q", c.Status, c.Diagnosis, c.Fix)
	}
	c = judge(2.8, busy)
	if c.Status != reports.Fail || c.Fix != FixSlowLatency || strings.Contains(c.Diagnosis, "typical latency") {
		t.Fatalf("typical over the ceiling too: %s %q fix %q", c.Status, c.Diagnosis, c.Fix)
	}
	// Within the ceiling a busy thread is evidence only.
	cli, srv := latencyOut(t, []string{"write"}, 1, 2.0, func(cli, _ *bw.ProbeOutput) {
		cli.Rails[0].Runs[0].Results[0].Local.Disturbance = busy
	})
	if c = Latency(latInput(t, []string{"write"}, cli, srv)).Checks[0]; c.Status != reports.Pass {
		t.Fatalf("within the ceiling on a busy node: %s %q", c.Status, c.Diagnosis)
	}
}
