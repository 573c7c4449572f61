package verdict

import "strings"

// completionStatus is what a work completion's status says happened and
// where to look. The names are libibverbs' ibv_wc_status_str texts (the
// probe prints them, workloads/verbs; rdma-core's libibverbs/enum_strs.c,
// "Work Request Flushed Error" the one capitalised, so they are matched
// case-insensitively); their meanings follow the IBTA
// completion codes as the verbs man pages (ibv_poll_cq(3)) describe them.
// Only a retry-exceeded status is the fabric's: the others are a refusal,
// an empty receive queue or a local setup fault, which cabling cannot fix.
type completionStatus struct {
	text, means, fix string
}

// Fixes for the completion statuses that are not the fabric's.
const (
	FixRemoteInvalid = "the responder refused the request itself: check that the remote memory region covers every offset the requester " +
		"writes or reads (size × QPs × depth against the peer's registration), that it was registered with remote write/read access, " +
		"and that both pods run the same rdmaprobe version (--image); on Soft-RoCE (rxe) a resend after an ACK timeout can be refused this way on a loaded host: " +
		"if the requester's completer_retry_err and the responder's duplicate_request rose (rdma statistic show), raise --qp-timeout (the error names the one used) " +
		"and compare with ib_write_bw/ib_read_bw -u between the same devices"
	FixRemoteAccess = "the peer refused access to its memory: the rkey, address or length the requester used does not match the peer's " +
		"registration, or the region lacks remote access; both pods must run the same rdmaprobe version (--image)"
	FixRemoteOp = "the peer could not complete the operation on its side (its QP went to error, a local fault there): the peer's row " +
		"and its pod log name its own error; check that node's device and driver"
	FixRNR = "the receiver had no receive posted when a SEND arrived (receiver not ready, retries used up): the peer must keep receives " +
		"posted; check that both pods run the same rdmaprobe version (--image) and that the peer is not starved of CPU"
	FixFlushed         = "the QP had already gone to the error state: this completion was flushed; the first error on this QP (its evidence) is the cause"
	FixLocalProtection = "the local side's memory registration does not cover the buffer the work request used (a wrong lkey, address or " +
		"length): a probe fault, not the fabric's; run the rdmaprobe image of this suite version (--image) and report it with the results"
	FixLocalLength = "a work request's length did not fit the local buffer or the receive: a probe fault in the sizes it posted; " +
		"run the rdmaprobe image of this suite version (--image) and report it with the results"
)

var completionStatuses = []completionStatus{
	{"transport retry counter exceeded", "no acknowledgement came back from the peer within the retry count: packets were lost on the path or the peer's port went away", FixTransport},
	{"RNR retry counter exceeded", "the peer had no receive queue entry for a SEND (receiver not ready) until the retries ran out", FixRNR},
	{remoteInvalid, "the responder refused the request itself (an opcode its QP does not allow, a length or offset outside its memory region): the peer or the probe's memory layout, not the link", FixRemoteInvalid},
	{"remote access error", "the responder refused access to its memory (rkey, address or permissions): the peer's registration, not the link", FixRemoteAccess},
	{"remote operation error", "the responder could not complete the operation on its side (a local fault at the peer)", FixRemoteOp},
	{"work request flushed error", "the work request was flushed because the QP had already failed: an earlier error is the cause", FixFlushed},
	{"local protection error", "the local memory registration did not cover the work request's buffer", FixLocalProtection},
	{"local length error", "a work request's length did not fit its local buffer", FixLocalLength},
	{"local access error", "the local side's memory was not accessible as the operation needed (a READ's response landing in a region without local write)", FixLocalProtection},
	{"bad response error", "an unexpected transport response came back from the peer: a peer or path fault, not a clean loss", FixRemoteOp},
	{"local QP operation error", "the local QP could not execute the work request (a malformed request for its state or type)", FixLocalLength},
}

const remoteInvalid = "remote invalid request error"

// rxeRefusedResend is what a remote invalid request means on Soft-RoCE,
// where it is the driver's own limit and not the probe's: perftest fails
// the same way between two rxe hosts (ib_write_bw -q 4 -s 1048576 -n 150
// at its default -u 14: "Failed status 9" after 15 resends and 1 095
// duplicate requests counted at the responder).
const rxeRefusedResend = "on Soft-RoCE (rxe) this is the responder refusing a resend after an ACK timeout, " +
	"which perftest's ib_write_bw hits too between the same devices (status 9) when the host acknowledges late"

// FixRemoteInvalidRxe is the fix for a Soft-RoCE port.
const FixRemoteInvalidRxe = "the Soft-RoCE host acknowledged later than the QPs' ACK timeout and rxe refused the resend: raise --qp-timeout " +
	"(18 ≈ 1.07 s, the exponent used is in the error) or give the node's CPUs to the test; if completer_retry_err and duplicate_request " +
	"did not rise (rdma statistic show), check the peer's memory registration as for any remote invalid request"

// softRoCE says whether a port ("rxe0/1", "rxe0/1→rxe1/1") is a Soft-RoCE
// device by its default name (rdma link add rxeN type rxe).
func softRoCE(port string) bool { return strings.HasPrefix(port, "rxe") }

// completionStatusOf finds a known completion status in a transport
// error's message.
func completionStatusOf(msg string) (completionStatus, bool) {
	lower := strings.ToLower(msg)
	for _, s := range completionStatuses {
		if strings.Contains(lower, strings.ToLower(s.text)) {
			return s, true
		}
	}
	return completionStatus{}, false
}
