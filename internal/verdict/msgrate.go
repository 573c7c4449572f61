package verdict

// MsgRatePrefix is the message-rate checks' family: msgrate/write.
const MsgRatePrefix = "msgrate/"

// FixSlowMsgRate is the fix named when a pair's message rate is under the
// floor.
const FixSlowMsgRate = "compare with ib_write_bw -s 2 -q <same QPs> (perftest's MsgRate column) between the same nodes; " +
	"small-message rate is bound by the CPU posting them and the NIC's doorbell path: check CPU frequency scaling and " +
	"C-states, the probe's core sharing with other pods, PCIe link width/speed of the NIC (lspci -vv), and on RoCE PFC pause storms"

// MsgRate judges one pair that ran small RDMA writes over several QPs
// (perftest's message-rate runs): the bandwidth verdict's rules for pods,
// rails and errors, with msgrate/<op> checks judged on the client's
// MsgRate (Mpps) of the smallest requested size against the SKU's floor.
// No public per-process reference exists for hardware SKUs (vendor figures
// are whole-adapter, many cores), so a SKU without the floor leaves the
// measured check not-run, naming the field to set from a known-good run.
func MsgRate(in BWInput) BWResult {
	in.metric = &msgRateMetric
	return Bandwidth(in)
}
