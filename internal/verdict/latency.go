package verdict

import (
	"fmt"

	"github.com/rdmasuite/rdmasuite/reports"
	"github.com/rdmasuite/rdmasuite/workloads/bw"
	"github.com/rdmasuite/rdmasuite/workloads/lat"
)

// LatencyPrefix is the latency checks' family: latency/write, latency/read,
// latency/send.
const LatencyPrefix = "latency/"

// FixSlowLatency is the fix named when a pair's latency is over the ceiling.
const FixSlowLatency = "compare with ib_write_lat / ib_read_lat / ib_send_lat (2 B) between the same nodes; check the path between them " +
	"(switch hops, other traffic sharing the links, adaptive routing), the port rate (ibstat), CPU power states on both nodes " +
	"(C-states add wake-up latency to polling loops), and on RoCE PFC/ECN"

// FixContendedLatency is the fix when the average missed the ceiling, the
// typical latency met it and the measuring thread lost its CPU: the
// slow iterations are the node's CPU contention, not the fabric's.
const FixContendedLatency = "the probe's polling thread shared its CPU with other work on the node: give the probe pods exclusive CPUs " +
	"(Guaranteed QoS with the kubelet's static CPU manager policy, or a node kept free of other pods for the run) and run again; " +
	"if the average still misses the ceiling with the thread on its own CPU, compare with ib_write_lat / ib_read_lat / ib_send_lat " +
	"between the same nodes and check the path between them"

// Contention thresholds of a measuring thread. A polling loop that owns
// its CPU uses nearly all of it and is preempted only now and then by the
// kernel's own housekeeping; less than 90 % of a CPU, or a preemption in
// one iteration of ten, means the scheduler shared that CPU with other
// work while the loop ran.
const (
	contendedCPUShare       = 0.9
	contendedPreemptionsPer = 10 // iterations per preemption at the limit
)

// contendedLatency explains an average over the ceiling whose typical
// latency met it (judged is the average's judged measurement, its
// threshold the ceiling): a minority of slow iterations raised the
// average, and when f's disturbance shows the measuring thread on node
// lost its CPU, contended says the node's CPU contention is the likely
// cause. An empty note: the typical figure missed the ceiling too (or is
// unknown), which the fabric fix covers.
func contendedLatency(f bw.Figures, l *lat.Summary, judged reports.Measurement, node string) (note string, contended bool) {
	if l == nil || judged.Threshold == nil {
		return "", false
	}
	if _, st, _ := reports.Judge(judged.Name, judged.Unit, judged.Node, judged.Port, &l.Typical, *judged.Threshold); st != reports.Pass {
		return "", false
	}
	note = fmt.Sprintf("; the typical latency (%g %s) meets it: a minority of slow iterations (p99 %g, max %g %s) raised the average",
		l.Typical, judged.Unit, l.P99, l.Max, judged.Unit)
	d := f.Disturbance
	if d == nil || (d.ThreadCPUShare >= contendedCPUShare && d.Preemptions*contendedPreemptionsPer < int64(f.Iterations)) {
		return note, false
	}
	return note + fmt.Sprintf(", and the measuring thread on %s was preempted %d times in %d iterations with %.0f %% of a CPU: "+
		"other work on the node competed for its CPU", node, d.Preemptions, f.Iterations, d.ThreadCPUShare*100), true
}

// Latency judges one pair that ran rdmaprobe bw --latency: the bandwidth
// verdict's rules for pods, rails and errors (every expected rail pair and
// requested op is a check, nothing vanishes), with latency/<op> checks
// judged on perftest's average latency of the largest requested size
// against the SKU's ceiling, its typical, p99 and max recorded beside it.
// A SKU without a ceiling leaves the measured check not-run, naming the
// missing field.
func Latency(in BWInput) BWResult {
	in.metric = &latencyMetric
	return Bandwidth(in)
}
