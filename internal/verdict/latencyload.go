package verdict

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/rdmasuite/rdmasuite/reports"
	"github.com/rdmasuite/rdmasuite/thresholds"
	"github.com/rdmasuite/rdmasuite/workloads/bw"
	"github.com/rdmasuite/rdmasuite/workloads/lat"
)

// LatencyLoadPrefix is the latency-under-load checks' family:
// latency-load/write, …
const LatencyLoadPrefix = "latency-load/"

// FixLatencyUnderLoad is the fix named when latency under a stream grew
// past its factor: the fabric does not keep a small flow's latency while
// a large one fills the same path.
const FixLatencyUnderLoad = "a bulk flow on the same rail pair delays small messages: on RoCE check that ECN marking " +
	"(DCQCN: the switch's ECN thresholds and the NIC's roce_np/roce_rp enable) and PFC on the RDMA priority are set on both nodes " +
	"and every switch hop, and that the traffic class (DSCP/trust) puts RDMA in the lossless queue; on InfiniBand check congestion " +
	"control and adaptive routing on the switches; compare ib_write_lat between the same nodes while ib_write_bw runs between them"

// latencyLoadMetric is latency measured while the rail pair carries a
// write stream: every check of the latency verdict (each rail and op
// measured, errors typed, impossible figures refused, the server's
// trouble and exit codes), with typical and p99 judged against the
// unloaded figures (judgeUnderLoad) where a latency ceiling would be.
var latencyLoadMetric = func() metric {
	m := latencyMetric
	m.prefix, m.what, m.rails, m.fix = LatencyLoadPrefix, "latency under a write stream", "latency-under-load", FixLatencyUnderLoad
	// No bound of the SKU's on the average: it is recorded, not judged.
	m.bound = func(*thresholds.SKU, string) (thresholds.Bound, error, error) {
		return thresholds.Bound{}, errors.New("judged against the same rail pair's figures alone"), nil
	}
	m.againstAlone = BWInput.judgeUnderLoad
	return m
}()

// LatencyUnderLoad judges one pair's latency under load. The probe
// measured each op twice per rail pair (rdmaprobe bw --latency
// --load-size): alone, then while a WRITE stream ran between the same
// rails; the loaded run is the measurement, and its typical and p99 at the
// judged size must stay within the SKU's latencyUnderLoadFactor times the
// same figures alone. Not a pass: a run the stream did not cover, a
// stream that measured nothing or an impossible figure, a baseline that
// failed or is missing. Without a factor the check is not-run, its values
// kept.
func LatencyUnderLoad(in BWInput) BWResult {
	in.metric = &latencyLoadMetric
	return Bandwidth(in)
}

// judgeUnderLoad judges one measured (rail pair, op) check of a loaded
// run against its baseline, once the latency verdict found nothing wrong:
// the stream must have covered the run, the baseline must be a valid
// measurement, then typical and p99 are compared.
func (in BWInput) judgeUnderLoad(c *reports.Check, op string, rr bw.RailResult, run *bw.Report) {
	if run == nil {
		setOutcome(c, reports.Error, fmt.Sprintf("no %s run on %s in the client's output to compare with its baseline", op, c.Rail), "")
		return
	}
	rate, _ := lineRateOf(rr.Local, rr.Peer, in.Client.Node == in.Server.Node)
	stream, msg, fix := in.loadStream(c, rr.Local.Name(), run.Load, rate)
	if msg == "" {
		var alone bw.Figures
		alone, msg, fix = in.aloneFigures(op, run, rate)
		if msg == "" {
			in.compareWithAlone(c, op, rr.Local.Name(), run, alone, stream)
			return
		}
	}
	setOutcome(c, reports.Error, msg, fix)
}

// judgedFigures are r's figures at the judged size (the largest).
func (in BWInput) judgedFigures(r *bw.Report) (bw.Figures, bool) {
	size := slices.Max(in.Sizes)
	for _, sr := range r.Results {
		if sr.Local.Bytes == size {
			return sr.Local, true
		}
	}
	return bw.Figures{}, false
}

// loadStream checks the stream that ran beside a loaded run, records its
// bandwidth on c, and says why the run is no measurement under load
// (msg "" when it is one).
func (in BWInput) loadStream(c *reports.Check, port string, load *bw.LoadStream, rate float64) (stream bw.Figures, msg, fix string) {
	if load == nil {
		return stream, "the client's output does not say a stream ran beside this run (a probe without --load-size?): " +
			"not a measurement under load", FixUsage
	}
	if len(load.Report.Results) == 0 {
		return stream, "the write stream beside it measured nothing (" + orDash(load.Why) + "): not a measurement under load", ""
	}
	stream = load.Report.Results[0].Local
	if faults := figureFaults(stream, &bandwidthMetric, rate); len(faults) > 0 {
		return stream, "the write stream beside it printed figures that cannot be true: " + strings.Join(faults, "; ") +
			": not a measurement under load", FixImpossible
	}
	c.Measured = append(c.Measured, reports.Measurement{Name: fmt.Sprintf("load_%s_%s_avg", load.Report.Params.Op, SizeName(stream.Bytes)),
		Node: in.Client.Node, Port: port, Value: stream.AvgGbps, Unit: "Gb/s"})
	if load.Retried != "" {
		c.Evidence = append(c.Evidence, "the loaded run was measured twice: "+load.Retried)
	}
	if !load.Covered {
		return stream, "not measured under load throughout: " + orDash(load.Why), ""
	}
	return stream, "", ""
}

// aloneFigures are the baseline's figures (the same op alone on the same
// rail pair, just before), and why they cannot be compared with (msg ""
// when they can).
func (in BWInput) aloneFigures(op string, run *bw.Report, rate float64) (alone bw.Figures, msg, fix string) {
	b := run.Baseline
	if b == nil {
		return alone, "the client's output has no baseline (the latency alone) for this run: nothing to compare with", ""
	}
	if b.Error != nil {
		return alone, "the baseline (the latency alone) failed: " + b.Error.Message, ""
	}
	alone, ok := in.judgedFigures(b)
	if !ok || alone.Latency == nil {
		return alone, fmt.Sprintf("the baseline (the latency alone) has no %s latency at %s", op, SizeName(slices.Max(in.Sizes))), ""
	}
	if faults := figureFaults(alone, &latencyMetric, rate); len(faults) > 0 {
		return alone, "the baseline (the latency alone) printed figures that cannot be true: " + strings.Join(faults, "; "), FixImpossible
	}
	loaded, _ := in.judgedFigures(run)
	if loaded.Latency == nil {
		return alone, fmt.Sprintf("the loaded run has no latency summary at %s", SizeName(slices.Max(in.Sizes))), ""
	}
	// The figures compared must be latencies at all: positive, typical
	// not above p99 (a zero would pass any bound, or make one of 0).
	for _, x := range []struct {
		what string
		l    *lat.Summary
	}{{"alone", alone.Latency}, {"under the stream", loaded.Latency}} {
		if !(x.l.Typical > 0 && x.l.P99 >= x.l.Typical) {
			return alone, fmt.Sprintf("figures that cannot be true: the latency %s has typical %g µs and p99 %g µs (both must be above 0, p99 not below typical)",
				x.what, x.l.Typical, x.l.P99), FixImpossible
		}
	}
	return alone, "", ""
}

// compareWithAlone judges the loaded typical and p99 against the SKU's
// factor × the same figures alone, records the alone figures and the
// bounds, and sets the outcome: not-run without a factor.
func (in BWInput) compareWithAlone(c *reports.Check, op, port string, run *bw.Report, alone, stream bw.Figures) {
	size := SizeName(slices.Max(in.Sizes))
	loaded, _ := in.judgedFigures(run)
	factor, err := in.SKU.LoadLatencyFactor()
	var misses []string
	for _, x := range []struct {
		what            string
		loaded, aloneAt float64
	}{{"typical", loaded.Latency.Typical, alone.Latency.Typical}, {"p99", loaded.Latency.P99, alone.Latency.P99}} {
		name := fmt.Sprintf("%s_%s_lat_%s", op, size, x.what)
		c.Measured = append(c.Measured, reports.Measurement{Name: name + "_alone", Node: in.Client.Node, Port: port, Value: x.aloneAt, Unit: reports.UnitMicroseconds})
		if err != nil {
			continue
		}
		bound := reports.Threshold{Op: "<=", Value: factor.Value * x.aloneAt,
			Source: fmt.Sprintf("%g × its %s alone (%g µs, the same rail pair just before, same run); %s", factor.Value, x.what, x.aloneAt, factor.Source)}
		for k := range c.Measured {
			if c.Measured[k].Name == name {
				c.Measured[k].Threshold = &bound
			}
		}
		if x.loaded > bound.Value {
			misses = append(misses, fmt.Sprintf("%s %g µs is %.3g × its %g µs alone (bound %g ×)", x.what, x.loaded, x.loaded/x.aloneAt, x.aloneAt, factor.Value))
		}
	}
	load := run.Load.Report
	c.Evidence = append(c.Evidence, fmt.Sprintf("%s on %s under a %s %s stream at %.4g Gb/s (%s): typical %g µs (alone %g), p99 %g µs (alone %g)",
		op, c.Rail, load.Params.Op, SizeName(stream.Bytes), stream.AvgGbps, load.Params.Duration, loaded.Latency.Typical,
		alone.Latency.Typical, loaded.Latency.P99, alone.Latency.P99))
	switch {
	case err != nil:
		setOutcome(c, reports.NotRun, err.Error(), "")
	case len(misses) > 0:
		setOutcome(c, reports.Fail, fmt.Sprintf("under a %s stream on the same rail pair, %s", SizeName(stream.Bytes), strings.Join(misses, "; ")), FixLatencyUnderLoad)
	default:
		c.Status, c.Reason = reports.Pass, ""
	}
}
