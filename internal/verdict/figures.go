package verdict

import (
	"fmt"
	"math"

	"github.com/rdmasuite/rdmasuite/workloads/bw"
)

// A probe's figures are evidence, not verdicts: before one is judged
// against a bar, the runner re-derives it from the facts printed beside it
// (perftest's own arithmetic, workloads/bw.Compute) and refuses what
// cannot be true.

// consistencyTolerance is how far (relative) a printed average or message
// rate may stray from bytes × operations / elapsed recomputed here: the
// probe prints full float64s, so anything beyond rounding is a different
// figure.
const consistencyTolerance = 0.01

// lineRateTolerance is how far (relative) a bandwidth may exceed the
// slower port's reported rate. The sysfs rate is the data rate after
// encoding ("400 Gb/sec (4X NDR)"); perftest's best on such a port is a few
// percent under it, so a figure 5 % above it did not cross that link.
const lineRateTolerance = 0.05

// maxCPUShare is the most CPU time one thread can have per wall second,
// with room for the kernel's accounting granularity over a short loop.
const maxCPUShare = 1.2

// DisturbanceNote says what competed with the measuring thread while a
// figure was taken: on a busy node the average and the tail grow with it
// while the typical figure holds.
func DisturbanceNote(what string, d *bw.Disturbance) string {
	return fmt.Sprintf("%s: the measuring thread had %.0f %% of a CPU over the %.0f ms loop, was preempted %d times and blocked %d times; "+
		"the probe's other threads used %.1f ms of CPU meanwhile (a busy node raises the average and the tail, less the typical figure)",
		what, d.ThreadCPUShare*100, d.WallMs, d.Preemptions, d.Blocks, d.OtherThreadsCPUMs)
}

// figureFaults lists what makes one size's figures impossible for the
// metric: no operations, a time that is not positive, an average or rate
// that bytes × operations / elapsed does not give, a bandwidth above
// lineRate (0: unknown, not checked), a latency that is not positive,
// without samples or outside its own minimum and maximum, or measuring-
// thread counts no kernel gives.
func figureFaults(f bw.Figures, m *metric, lineRate float64) []string {
	var out []string
	if f.Iterations < 1 {
		// Nothing was measured, whatever the other fields say.
		return []string{fmt.Sprintf("%d operations: nothing was measured at %s", f.Iterations, SizeName(f.Bytes))}
	}
	for _, v := range []struct {
		name string
		x    float64
	}{{"average bandwidth", f.AvgGbps}, {"peak bandwidth", f.PeakGbps}, {"message rate", f.MsgRateMpps}, {"elapsed time", f.ElapsedSec}} {
		if v.x < 0 || math.IsNaN(v.x) || math.IsInf(v.x, 0) {
			out = append(out, fmt.Sprintf("%s %g is negative or not a number", v.name, v.x))
		}
	}
	if d := f.Disturbance; d != nil && (!(d.WallMs > 0) || !(d.ThreadCPUShare >= 0 && d.ThreadCPUShare <= maxCPUShare) ||
		d.Preemptions < 0 || d.Blocks < 0 || !(d.OtherThreadsCPUMs >= 0)) {
		out = append(out, fmt.Sprintf("the measuring thread's counts cannot be true (%.4g ms of loop, %.4g of a CPU, %d preemptions, %d blocks, %.4g ms of other threads): "+
			"the kernel's accounting or the probe's output is broken", d.WallMs, d.ThreadCPUShare, d.Preemptions, d.Blocks, d.OtherThreadsCPUMs))
	}
	if len(out) > 0 {
		return out
	}
	if m.latencyStats {
		return latencyFaults(f)
	}
	if f.ElapsedSec <= 0 {
		return []string{fmt.Sprintf("elapsed time %g s for %d operations: no time was measured", f.ElapsedSec, f.Iterations)}
	}
	gbps := float64(f.Bytes) * float64(f.Iterations) * 8 / f.ElapsedSec / 1e9
	if off(f.AvgGbps, gbps) {
		out = append(out, fmt.Sprintf("average %g Gb/s is not bytes × operations / elapsed (%d B × %d / %g s = %.4g Gb/s)",
			f.AvgGbps, f.Bytes, f.Iterations, f.ElapsedSec, gbps))
	}
	if mpps := float64(f.Iterations) / f.ElapsedSec / 1e6; off(f.MsgRateMpps, mpps) {
		out = append(out, fmt.Sprintf("message rate %g Mpps is not operations / elapsed (%d / %g s = %.4g Mpps)",
			f.MsgRateMpps, f.Iterations, f.ElapsedSec, mpps))
	}
	if lineRate > 0 && f.AvgGbps > lineRate*(1+lineRateTolerance) {
		out = append(out, fmt.Sprintf("average %g Gb/s is above the ports' line rate of %g Gb/s (tolerance %g %%): "+
			"a figure in another unit (MiB/s, GB/s) or a timer that ran short; it did not cross this link",
			f.AvgGbps, lineRate, lineRateTolerance*100))
	}
	return out
}

// latencyFaults checks a latency run's summary.
func latencyFaults(f bw.Figures) []string {
	l := f.Latency
	if l == nil {
		return nil // not measured: the verdict says so
	}
	switch {
	case l.Samples < 1:
		return []string{fmt.Sprintf("latency summary from %d samples", l.Samples)}
	case !(l.Avg > 0) || !(l.Min > 0) || math.IsInf(l.Max, 0):
		return []string{fmt.Sprintf("latency min %g / average %g / max %g µs: not positive", l.Min, l.Avg, l.Max)}
	case l.Min > l.Avg:
		return []string{fmt.Sprintf("latency average %g µs is under its own minimum %g µs", l.Avg, l.Min)}
	case l.Avg > l.Max || l.P99 > l.Max || l.Typical > l.Max:
		return []string{fmt.Sprintf("latency average %g / typical %g / p99 %g µs exceed its own maximum %g µs", l.Avg, l.Typical, l.P99, l.Max)}
	}
	return nil
}

// off says whether printed strays from derived beyond the tolerance.
func off(printed, derived float64) bool {
	return math.Abs(printed-derived) > consistencyTolerance*math.Max(math.Abs(derived), 1e-12)
}

// lineRateOf is the rate a pair's traffic is bounded by: the slower of the
// two ports' reported rates (0: unknown), and why none applies.
func lineRateOf(local bw.Rail, peer *bw.Rail, sameNode bool) (float64, string) {
	if peer != nil && sameNode && peer.Device == local.Device {
		return 0, "line rate not applied: a same-node pair on one device (" + local.Device + ") is looped back without crossing the wire"
	}
	rate := local.RateGbps
	if peer != nil && peer.RateGbps > 0 && (rate <= 0 || peer.RateGbps < rate) {
		rate = peer.RateGbps
	}
	if rate <= 0 {
		return 0, "line rate not applied: neither port reported its rate"
	}
	return rate, ""
}
