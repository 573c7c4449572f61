package verdict

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/rdmasuite/rdmasuite/reports"
	"github.com/rdmasuite/rdmasuite/thresholds"
	"github.com/rdmasuite/rdmasuite/workloads/bw"
	"github.com/rdmasuite/rdmasuite/workloads/lat"
	"github.com/rdmasuite/rdmasuite/workloads/probeout"
)

// loadOut is a pair's outputs where every rail measured write latency at
// 2 B under a covered 64 KiB stream at 90 Gb/s: typical/p99 alone
// (baseline) and loaded as given, unless edit changes the client's run.
func loadOut(t *testing.T, alone, loaded [2]float64, edit func(run *bw.Report)) (string, string) {
	summary := func(typ, p99 float64) *lat.Summary {
		return &lat.Summary{Samples: 997, Min: typ * 0.9, Typical: typ, Avg: typ * 1.1, P99: p99, P999: p99, Max: p99 * 1.2, Halved: true}
	}
	return pairOut(t, []string{"write"}, []int{2}, 1, 0, func(cli, srv *bw.ProbeOutput) {
		for i := range cli.Rails {
			r := &cli.Rails[i].Runs[0]
			r.Params.Latency, r.Params.LoadSize = true, 65536
			r.Results[0].Local.Latency = summary(loaded[0], loaded[1])
			base := *r
			base.Params.LoadSize = 0
			base.Results = []bw.SizeResult{{Local: bw.Figures{Bytes: 2, Iterations: 1000, ElapsedSec: 0.01, Latency: summary(alone[0], alone[1])}}}
			r.Baseline = &base
			stream := bw.Report{Role: "client", Params: bw.Params{Op: bw.OpWrite, Sizes: []int{65536}, Duration: 5 * time.Second, QPs: 1},
				Results: []bw.SizeResult{{Local: bw.Compute(65536, 858307, 5*time.Second, 0)}}}
			r.Load = &bw.LoadStream{Report: stream, Covered: true}
			if edit != nil {
				edit(r)
			}
		}
	})
}

// loadInput judges against a copy of the H100 SKU with a factor (0:
// none, as every built-in hardware SKU).
func loadInput(t *testing.T, cli, srv string, factor float64) BWInput {
	in := bwInput(t, []string{"write"}, []int{2}, cli, srv)
	k := *sku(t, "H100/NDR-400")
	if factor > 0 {
		k.LatencyUnderLoadFactor = thresholds.Value{Value: &factor, Source: "site setting"}
	}
	in.SKU = &k
	return in
}

func measurement(c reports.Check, name string) *reports.Measurement {
	for i := range c.Measured {
		if c.Measured[i].Name == name {
			return &c.Measured[i]
		}
	}
	return nil
}

// Typical and p99 under the stream are judged against the factor times
// the same figures alone; both alone figures and the stream's bandwidth
// are recorded beside them.
func TestLatencyUnderLoadPassAndFail(t *testing.T) {
	cli, srv := loadOut(t, [2]float64{2, 4}, [2]float64{3, 7.5}, nil)
	res := LatencyUnderLoad(loadInput(t, cli, srv, 2))
	if got := statuses(res.Checks); got != "latency-load/write{mlx5_0/1→mlx5_0/1}=pass" {
		t.Fatalf("statuses: %s (%+v)", got, res.Checks)
	}
	c := res.Checks[0]
	if err := (reports.Run{Schema: reports.Schema, RunID: "x", Checks: []reports.Check{c}}).Validate(); err != nil {
		t.Errorf("contract of the pass: %v", err)
	}
	typ, p99 := measurement(c, "write_2B_lat_typical"), measurement(c, "write_2B_lat_p99")
	if typ == nil || typ.Value != 3 || typ.Threshold == nil || typ.Threshold.Value != 4 || !strings.Contains(typ.Threshold.Source, "2 × its typical alone (2 µs") ||
		!strings.Contains(typ.Threshold.Source, "site setting") || p99 == nil || p99.Threshold == nil || p99.Threshold.Value != 8 {
		t.Fatalf("measured %+v", c.Measured)
	}
	if m := measurement(c, "write_2B_lat_typical_alone"); m == nil || m.Value != 2 {
		t.Errorf("typical alone: %+v", m)
	}
	if m := measurement(c, "load_write_64KiB_avg"); m == nil || m.Value < 89.9 || m.Value > 90.1 || m.Unit != "Gb/s" {
		t.Errorf("stream: %+v", m)
	}
	// A run measured again beside a longer stream says so.
	cli, srv = loadOut(t, [2]float64{2, 4}, [2]float64{3, 7.5}, func(r *bw.Report) { r.Load.Retried = "the stream's measurement (5s) ended 1s before" })
	if c := LatencyUnderLoad(loadInput(t, cli, srv, 2)).Checks[0]; c.Status != reports.Pass ||
		!strings.Contains(strings.Join(c.Evidence, "\n"), "measured twice: the stream's measurement (5s) ended 1s before") {
		t.Errorf("retried: %s %v", c.Status, c.Evidence)
	}
	if c.Traits == nil || *c.Traits != (reports.Traits{Pair: true, Op: "write"}) {
		t.Errorf("traits %+v", c.Traits)
	}
	// p99 9 µs is over 2 × 4: fails naming it, the fix is the fabric's.
	cli, srv = loadOut(t, [2]float64{2, 4}, [2]float64{3, 9}, nil)
	c = LatencyUnderLoad(loadInput(t, cli, srv, 2)).Checks[0]
	if c.Status != reports.Fail || c.Fix != FixLatencyUnderLoad || !strings.Contains(c.Diagnosis, "p99 9 µs is 2.25 × its 4 µs alone (bound 2 ×)") ||
		strings.Contains(c.Diagnosis, "typical") {
		t.Fatalf("%+v", c)
	}
	// The report's own contract holds: a fail carries the value that
	// misses its recorded bound, a pass none.
	if err := (reports.Run{Schema: reports.Schema, RunID: "x", Checks: []reports.Check{c}}).Validate(); err != nil {
		t.Errorf("contract: %v", err)
	}
}

// Without a factor the check is not-run naming the field and why it is a
// site setting, with every value kept.
func TestLatencyUnderLoadWithoutFactorIsNotRun(t *testing.T) {
	cli, srv := loadOut(t, [2]float64{2, 4}, [2]float64{3, 7.5}, nil)
	c := LatencyUnderLoad(loadInput(t, cli, srv, 0)).Checks[0]
	if c.Status != reports.NotRun || !strings.Contains(c.Reason, "no latencyUnderLoadFactor") || !strings.Contains(c.Reason, "site setting") ||
		measurement(c, "write_2B_lat_p99_alone") == nil || measurement(c, "load_write_64KiB_avg") == nil {
		t.Fatalf("%+v", c)
	}
}

// What makes a loaded run no measurement under load is never a pass,
// whatever its latency says.
func TestLatencyUnderLoadMissingOrImpossibleIsNeverAPass(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(r *bw.Report)
		want reports.Status
		says string
	}{
		{"no stream record", func(r *bw.Report) { r.Load = nil }, reports.Error, "does not say a stream ran"},
		{"stream did not cover", func(r *bw.Report) {
			r.Load.Covered, r.Load.Why = false, "the stream's measurement (5s) ended 1.2s before the latency measurement did"
		}, reports.Error,
			"not measured under load throughout: the stream's measurement (5s) ended"},
		{"stream measured nothing", func(r *bw.Report) { r.Load.Report.Results = nil; r.Load.Why = "ibv_reg_mr failed" }, reports.Error, "measured nothing (ibv_reg_mr failed)"},
		{"stream zero iterations", func(r *bw.Report) { r.Load.Report.Results[0].Local.Iterations = 0 }, reports.Error, "cannot be true"},
		{"stream above line rate", func(r *bw.Report) { r.Load.Report.Results[0].Local.AvgGbps = 900 }, reports.Error, "cannot be true"},
		{"no baseline", func(r *bw.Report) { r.Baseline = nil }, reports.Error, "has no baseline"},
		{"baseline failed", func(r *bw.Report) {
			r.Baseline.Error = probeout.Errorf(probeout.KindTransport, "transport retry counter exceeded")
		}, reports.Error, "the baseline (the latency alone) failed: transport retry"},
		{"baseline without latency", func(r *bw.Report) { r.Baseline.Results[0].Local.Latency = nil }, reports.Error, "has no write latency at 2B"},
		{"baseline zero iterations", func(r *bw.Report) { r.Baseline.Results[0].Local.Iterations = 0 }, reports.Error, "cannot be true"},
		{"baseline p99 of 0", func(r *bw.Report) { r.Baseline.Results[0].Local.Latency.P99 = 0 }, reports.Error, "cannot be true"},
		{"loaded p99 of 0", func(r *bw.Report) { r.Results[0].Local.Latency.P99 = 0 }, reports.Error, "cannot be true"},
		{"loaded typical of 0", func(r *bw.Report) { r.Results[0].Local.Latency.Typical = 0 }, reports.Error, "cannot be true"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cli, srv := loadOut(t, [2]float64{2, 4}, [2]float64{3, 7.5}, tc.edit)
			c := LatencyUnderLoad(loadInput(t, cli, srv, 2)).Checks[0]
			if c.Status != tc.want || !strings.Contains(c.Reason+c.Diagnosis, tc.says) {
				t.Fatalf("%s %s%s", c.Status, c.Reason, c.Diagnosis)
			}
		})
	}
	// A loaded run the probe could not measure is the latency verdict's
	// own failure (here: the port went down), with its diagnosis.
	cli, srv := loadOut(t, [2]float64{2, 4}, [2]float64{3, 7.5}, func(r *bw.Report) {
		r.Results = nil
		r.Error = probeout.Errorf(probeout.KindLinkDown, "port mlx5_0/1 is DOWN")
	})
	c := LatencyUnderLoad(loadInput(t, cli, srv, 2)).Checks[0]
	if c.Status == reports.Pass || c.Status == reports.NotRun {
		t.Fatalf("a loaded run that failed: %s %s%s", c.Status, c.Reason, c.Diagnosis)
	}
}

// What the verdict checks after every rail holds for latency under load
// too: a client exit the output does not explain, a server that did not
// end or whose output is unreadable is never a pass.
func TestLatencyUnderLoadPodTroubleIsNeverAPass(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(in *BWInput)
	}{
		{"client exit 1 with a clean output", func(in *BWInput) { in.Client.Exit = 1 }},
		{"server exit 1 unexplained", func(in *BWInput) { in.Server.Exit = 1 }},
		{"server did not end", func(in *BWInput) { in.Server.WaitErr = errors.New("the server pod did not end within 1m") }},
		{"server output unreadable", func(in *BWInput) { in.Server.Logs = "rdmaprobe bw: starting\nSegmentation fault" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cli, srv := loadOut(t, [2]float64{2, 4}, [2]float64{3, 7.5}, nil)
			in := loadInput(t, cli, srv, 2)
			tc.edit(&in)
			if c := LatencyUnderLoad(in).Checks[0]; c.Status == reports.Pass {
				t.Fatalf("passed: %+v", c)
			}
		})
	}
}
