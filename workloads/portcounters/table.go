package portcounters

// Class groups counters by what their rise says about the rail.
type Class string

const (
	ClassPhysicalLink Class = "physical/link error"
	ClassReceiveError Class = "receive error"
	ClassDiscard      Class = "discard/overrun"
	ClassTransport    Class = "transport retransmission/sequence error"
	ClassCompletion   Class = "completion error"
	ClassCongestion   Class = "congestion signal"
	ClassData         Class = "data bytes"
	ClassPackets      Class = "packets"
	ClassOperations   Class = "operations"
	ClassInfo         Class = "informational"
)

// Policy is how Judge treats a counter when no SKU allowance names it.
type Policy string

const (
	// Judged: a rise above DefaultAllowance fails the rail.
	Judged Policy = "judged"
	// Recorded: a rise is shown; it fails only where a SKU sets a bound
	// (congestion signals, management drops, QP-teardown flushes).
	Recorded Policy = "recorded"
	// Informational: counts activity (bytes, packets, operations); not
	// shown, not judged. The data and packet counters feed ConfirmBytes.
	Informational Policy = "informational"
)

// Entry documents one counter: what raises it, what it means, how it is
// judged, and where the name (and, for counters/, the width) comes from.
type Entry struct {
	Name  string `json:"name"`
	Group Group  `json:"group"`
	// Driver is "" for counters/ (any device with a PMA), else the driver
	// whose hw_counters define the name ("mlx5", "rxe").
	Driver           string `json:"driver,omitempty"`
	Class            Class  `json:"class"`
	Policy           Policy `json:"policy"`
	DefaultAllowance uint64 `json:"default_allowance"`
	// Bits is the counter's width in the IBTA PortCounters attribute as
	// sysfs.c reads it (PORT_PMA_ATTR); ExtBits its width when the device
	// answers PortCountersExtended (PORT_PMA_ATTR_EXT), 0 if unchanged.
	// PortCounters counters stop at all ones instead of wrapping.
	Bits    int    `json:"bits,omitempty"`
	ExtBits int    `json:"ext_bits,omitempty"`
	Meaning string `json:"meaning"`
	Source  string `json:"source"`
}

// Where names, widths and meanings come from (Linux kernel tree).
const (
	srcCore = "drivers/infiniband/core/sysfs.c; Documentation/ABI/stable/sysfs-class-infiniband"
	srcMlx5 = "drivers/infiniband/hw/mlx5/counters.c"
	srcRxe  = "drivers/infiniband/sw/rxe/rxe_hw_counters.c"
)

func core(name string, bits, ext int, c Class, p Policy, meaning string) Entry {
	return Entry{Name: name, Group: Counters, Class: c, Policy: p, Bits: bits, ExtBits: ext, Meaning: meaning, Source: srcCore}
}

func mlx5(name, list string, c Class, p Policy, meaning string) Entry {
	return Entry{Name: name, Group: HWCounters, Driver: "mlx5", Class: c, Policy: p, Meaning: meaning,
		Source: srcMlx5 + " " + list}
}

func rxe(name, raisedIn string, c Class, p Policy, meaning string) Entry {
	return Entry{Name: name, Group: HWCounters, Driver: "rxe", Class: c, Policy: p, Meaning: meaning,
		Source: srcRxe + "; raised in " + raisedIn}
}

// table is the source of COUNTERS.md. Every default allowance is 0: a
// healthy link raises no physical or link error, and the other counters'
// allowances are a SKU's to raise (portCounters.allow in its thresholds).
//
// counters/ widths: sysfs.c PORT_PMA_ATTR(name, counter, width, offset).
// Meanings of counters/: the kernel ABI document. mlx5 meanings follow
// NVIDIA's "Understanding mlx5 Linux Counters and Status Parameters"
// (enterprise-support.nvidia.com); rxe meanings come from the code that
// raises each counter.
var table = []Entry{
	core("symbol_error", 16, 0, ClassPhysicalLink, Judged,
		"Minor link errors detected on one or more physical lanes: bit errors from a dirty or damaged cable, connector or transceiver, or a marginal signal."),
	core("link_error_recovery", 8, 0, ClassPhysicalLink, Judged,
		"Times the port training state machine completed link error recovery: the link re-trained under traffic and stalled meanwhile."),
	core("link_downed", 8, 0, ClassPhysicalLink, Judged,
		"Times the port training state machine failed link error recovery and downed the link."),
	core("local_link_integrity_errors", 4, 0, ClassPhysicalLink, Judged,
		"Times the count of local physical errors exceeded the LocalPhyErrors threshold."),
	core("port_rcv_errors", 16, 0, ClassReceiveError, Judged,
		"Packets received with an error (bad CRC and other local physical errors, malformed packets, buffer overrun); they are dropped."),
	core("port_rcv_remote_physical_errors", 16, 0, ClassReceiveError, Judged,
		"Packets received marked with the EBP delimiter: corrupted on an upstream link and forwarded anyway."),
	core("port_rcv_switch_relay_errors", 16, 0, ClassDiscard, Judged,
		"Received packets discarded because the switch relay could not forward them (routing)."),
	core("port_xmit_discards", 16, 0, ClassDiscard, Judged,
		"Outbound packets discarded because the port was down or congested."),
	core("port_xmit_constraint_errors", 8, 0, ClassDiscard, Judged,
		"Packets not sent because of outbound raw filtering or a failed outbound partition or IP version check."),
	core("port_rcv_constraint_errors", 8, 0, ClassDiscard, Judged,
		"Received packets discarded by inbound raw filtering or a failed inbound partition (P_Key) or IP version check: a partition misconfiguration."),
	core("excessive_buffer_overrun_errors", 4, 0, ClassDiscard, Judged,
		"Input buffer overruns: a port misconfigured by the subnet manager or by hand, a hardware issue, or very poor link signal integrity."),
	core("VL15_dropped", 16, 0, ClassDiscard, Recorded,
		"Incoming VL15 (subnet management) packets dropped for lack of resources. Management traffic, not data: recorded, judged only under a SKU bound."),
	core("port_xmit_wait", 32, 0, ClassCongestion, Recorded,
		"Ticks in which the port had data to send but sent none for the whole tick (no credits or no arbitration): back-pressure from the fabric."),
	core("port_xmit_data", 32, 64, ClassData, Informational,
		"Data octets divided by 4 sent on all VLs (DataBytes gives bytes). Counts headers, CRC and retransmissions, so never less than the payload sent."),
	core("port_rcv_data", 32, 64, ClassData, Informational,
		"Data octets divided by 4 received on all VLs (DataBytes gives bytes). Counts headers, CRC and retransmissions, so never less than the payload received."),
	core("port_xmit_packets", 32, 64, ClassPackets, Informational,
		"Packets sent on all VLs, including packets with errors."),
	core("port_rcv_packets", 32, 64, ClassPackets, Informational,
		"Packets received on all VLs, including packets with errors."),
	core("unicast_xmit_packets", 64, 0, ClassPackets, Informational,
		"Unicast packets sent (PortCountersExtended only)."),
	core("unicast_rcv_packets", 64, 0, ClassPackets, Informational,
		"Unicast packets received (PortCountersExtended only)."),
	core("multicast_xmit_packets", 64, 0, ClassPackets, Informational,
		"Multicast packets sent (PortCountersExtended only)."),
	core("multicast_rcv_packets", 64, 0, ClassPackets, Informational,
		"Multicast packets received (PortCountersExtended only)."),

	mlx5("rx_write_requests", "basic_q_cnts", ClassOperations, Informational,
		"RDMA WRITE requests received (responder side)."),
	mlx5("rx_read_requests", "basic_q_cnts", ClassOperations, Informational,
		"RDMA READ requests received (responder side)."),
	mlx5("rx_atomic_requests", "basic_q_cnts", ClassOperations, Informational,
		"Atomic requests received (responder side)."),
	mlx5("rx_dct_connect", "basic_q_cnts", ClassOperations, Informational,
		"DCT connect requests received."),
	mlx5("out_of_buffer", "basic_q_cnts", ClassDiscard, Judged,
		"Packets dropped because the receive queue had no WQE posted: the receiver fell behind."),
	mlx5("out_of_sequence", "out_of_seq_q_cnts", ClassTransport, Judged,
		"Packets received with a PSN beyond the expected one: an earlier packet was lost."),
	mlx5("duplicate_request", "retrans_q_cnts", ClassTransport, Judged,
		"Requests received that were already executed: the requester retransmitted after a lost packet or ACK."),
	mlx5("rnr_nak_retry_err", "retrans_q_cnts", ClassTransport, Judged,
		"RNR NAKs received (the responder had no receive posted); retried within the QP's limit."),
	mlx5("packet_seq_err", "retrans_q_cnts", ClassTransport, Judged,
		"NAK sequence errors received: the responder saw a PSN gap (a lost packet) and the requester retransmitted."),
	mlx5("implied_nak_seq_err", "retrans_q_cnts", ClassTransport, Judged,
		"Read responses or atomic ACKs that arrived with a PSN beyond the expected one: responses were lost (an implied NAK)."),
	mlx5("local_ack_timeout_err", "retrans_q_cnts", ClassTransport, Judged,
		"Times a QP's ACK timer expired at the sender: a packet or its ACK was lost; retransmitted within the retry limit."),
	mlx5("resp_local_length_error", "extended_err_cnts", ClassCompletion, Judged,
		"Responder local length errors: an incoming message did not fit the posted receive."),
	mlx5("resp_cqe_error", "extended_err_cnts", ClassCompletion, Judged,
		"Responder completions with an error."),
	mlx5("req_cqe_error", "extended_err_cnts", ClassCompletion, Judged,
		"Requester completions with an error."),
	mlx5("req_remote_invalid_request", "extended_err_cnts", ClassCompletion, Judged,
		"NAK invalid request received: the responder rejected the request."),
	mlx5("req_remote_access_errors", "extended_err_cnts", ClassCompletion, Judged,
		"NAK remote access error received: bad rkey or permissions at the responder."),
	mlx5("resp_remote_access_errors", "extended_err_cnts", ClassCompletion, Judged,
		"Incoming requests rejected for a bad rkey or permissions."),
	mlx5("resp_cqe_flush_error", "extended_err_cnts", ClassCompletion, Recorded,
		"Responder completions flushed with error: receives still posted when a QP entered the error state, as at teardown. Recorded, not judged."),
	mlx5("req_cqe_flush_error", "extended_err_cnts", ClassCompletion, Recorded,
		"Requester completions flushed with error: work still queued when a QP entered the error state, as at teardown. Recorded, not judged."),
	mlx5("req_transport_retries_exceeded", "extended_err_cnts", ClassTransport, Judged,
		"Requests that failed after the transport retry count ran out; the QP went to error."),
	mlx5("req_rnr_retries_exceeded", "extended_err_cnts", ClassTransport, Judged,
		"Requests that failed after the RNR retry count ran out; the QP went to error."),
	mlx5("roce_adp_retrans", "roce_accl_cnts", ClassTransport, Judged,
		"RoCE adaptive retransmissions."),
	mlx5("roce_adp_retrans_to", "roce_accl_cnts", ClassTransport, Judged,
		"Times RoCE traffic hit a timeout under adaptive retransmission."),
	mlx5("roce_slow_restart", "roce_accl_cnts", ClassTransport, Judged,
		"Times RoCE slow restart was used after losses."),
	mlx5("roce_slow_restart_trans", "roce_accl_cnts", ClassTransport, Judged,
		"Times a QP changed state to slow restart."),
	mlx5("roce_slow_restart_cnps", "roce_accl_cnts", ClassCongestion, Recorded,
		"CNPs generated by RoCE slow restart."),
	mlx5("np_ecn_marked_roce_packets", "cong_cnts", ClassCongestion, Recorded,
		"RoCEv2 packets received with an ECN congestion-experienced mark (notification point)."),
	mlx5("np_cnp_sent", "cong_cnts", ClassCongestion, Recorded,
		"CNPs sent by the notification point after ECN-marked packets arrived: the path toward this port is congested."),
	mlx5("rp_cnp_handled", "cong_cnts", ClassCongestion, Recorded,
		"CNPs the reaction point acted on by lowering its send rate (DCQCN)."),
	mlx5("rp_cnp_ignored", "cong_cnts", ClassCongestion, Recorded,
		"CNPs the reaction point received and ignored."),
	mlx5("rx_icrc_encapsulated", "ext_ppcnt_cnts", ClassReceiveError, Judged,
		"RoCE packets received with a bad ICRC: corrupted on the path."),

	rxe("sent_pkts", "rxe_net.c rxe_xmit_packet()", ClassPackets, Informational,
		"Packets handed to the network or looped back, ACKs and retransmissions included; loopback counts too, so it cannot tell the wire from memory."),
	rxe("rcvd_pkts", "rxe_recv.c rxe_rcv()", ClassPackets, Informational,
		"Packets that passed the receive header checks, ACKs included."),
	rxe("duplicate_request", "rxe_resp.c check_psn()", ClassTransport, Judged,
		"Requests received with an already-seen PSN: the requester retransmitted."),
	rxe("out_of_seq_request", "rxe_resp.c check_psn()", ClassTransport, Judged,
		"Requests received with a PSN beyond the expected one (a packet was lost); the responder sent a NAK sequence error."),
	rxe("rcvd_rnr_err", "rxe_comp.c check_ack()", ClassTransport, Judged,
		"RNR NAKs received by the requester: the responder had no receive posted."),
	rxe("send_rnr_err", "rxe_resp.c rxe_responder()", ClassTransport, Judged,
		"RNR NAKs sent by the responder: no receive was posted."),
	rxe("rcvd_seq_err", "rxe_comp.c check_ack()", ClassTransport, Judged,
		"NAK sequence errors received by the requester; it retransmits."),
	rxe("ack_deferred", "rxe_comp.c rxe_comp_queue_pkt()", ClassInfo, Informational,
		"Responses queued because the completer was busy: scheduling, not an error."),
	rxe("retry_exceeded_err", "rxe_comp.c rxe_completer()", ClassTransport, Judged,
		"Requests that failed after the retry count ran out (RETRY_EXC_ERR)."),
	rxe("retry_rnr_exceeded_err", "rxe_comp.c rxe_completer()", ClassTransport, Judged,
		"Requests that failed after the RNR retry count ran out (RNR_RETRY_EXC_ERR)."),
	rxe("completer_retry_err", "rxe_comp.c rxe_completer()", ClassTransport, Judged,
		"Retransmissions started from the last acknowledged PSN after a timeout or NAK."),
	rxe("send_err", "rxe_net.c rxe_xmit_packet()", ClassDiscard, Judged,
		"Packets whose network send failed: they never left."),
	rxe("link_downed", "rxe_net.c rxe_port_down()", ClassPhysicalLink, Judged,
		"The underlying netdev went down or lost carrier."),
	rxe("rdma_sends", "rxe_comp.c do_complete()", ClassOperations, Informational,
		"SEND work requests completed by the requester (RDMA WRITE/READ not counted)."),
	rxe("rdma_recvs", "rxe_resp.c do_complete()", ClassOperations, Informational,
		"Receives completed successfully by the responder."),
}

// byKey indexes table by "group/name"; a name can have one entry per driver.
var byKey = func() map[string][]Entry {
	m := map[string][]Entry{}
	for _, e := range table {
		k := key(e.Group, e.Name)
		m[k] = append(m[k], e)
	}
	return m
}()

// Table returns a copy of the counter table.
func Table() []Entry { return append([]Entry(nil), table...) }

// Lookup finds the entry for group/name, preferring driver's; with no
// driver match it returns the first entry of that name.
func Lookup(g Group, name, driver string) (Entry, bool) {
	es := byKey[key(g, name)]
	for _, e := range es {
		if e.Driver == driver {
			return e, true
		}
	}
	if len(es) > 0 {
		return es[0], true
	}
	return Entry{}, false
}
