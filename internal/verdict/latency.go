package verdict

// LatencyPrefix is the latency checks' family: latency/write, latency/read,
// latency/send.
const LatencyPrefix = "latency/"

// FixSlowLatency is the fix named when a pair's latency is over the ceiling.
const FixSlowLatency = "compare with ib_write_lat / ib_read_lat / ib_send_lat (2 B) between the same nodes; check the path between them " +
	"(switch hops, other traffic sharing the links, adaptive routing), the port rate (ibstat), CPU power states on both nodes " +
	"(C-states add wake-up latency to polling loops), and on RoCE PFC/ECN"

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
