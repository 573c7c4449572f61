package ncclbench

import (
	"fmt"
	"strings"

	"github.com/rdmasuite/rdmasuite/workloads/nccl"
)

// ElemSize is the size of the engine's element type (float32), and
// TypeName and the RedOp names what nccl-tests prints for it.
const (
	ElemSize = 4
	TypeName = "float"
)

// Supported are the collectives Run measures, in nccl-tests' binary order.
// Broadcast and reduce need a root and are left to RunBinary.
var Supported = []nccl.Collective{nccl.AllReduce, nccl.AllGather, nccl.ReduceScatter, nccl.AllToAll, nccl.SendRecv}

func supported(c nccl.Collective) bool {
	for _, s := range Supported {
		if s == c {
			return true
		}
	}
	return false
}

func errUnsupported(c nccl.Collective) error {
	names := make([]string, len(Supported))
	for i, s := range Supported {
		names[i] = string(s)
	}
	if _, err := nccl.ParseCollective(string(c)); err == nil {
		return fmt.Errorf("ncclbench: %s is not measured by this engine (it runs %s); run the operator's %s with RunBinary",
			c, strings.Join(names, ", "), c.Binary())
	}
	return fmt.Errorf("ncclbench: unknown collective %q (this engine runs %s)", c, strings.Join(names, ", "))
}

// RedOp is the redop column nccl-tests prints for c: "sum" for the
// collectives it runs with the default -o sum (all_reduce, reduce_scatter,
// sendrecv, whose send/recv ignore it), "none" for all_gather and alltoall
// (their RunTest passes "none").
func RedOp(c nccl.Collective) string {
	switch c {
	case nccl.AllGather, nccl.AllToAll:
		return "none"
	}
	return "sum"
}

// Shape is what one size of the sweep means for a collective on World
// ranks, as nccl-tests' setupArgs and *GetCollByteCount compute it for
// float32. All byte figures are per rank.
type Shape struct {
	// Size is the size column: max(send, receive bytes).
	Size int64
	// Count is the count column and the count passed to the call:
	// all_reduce, sendrecv: elements of the buffer; all_gather: elements
	// each rank sends; reduce_scatter: elements each rank receives;
	// alltoall: elements sent to each peer.
	Count int64
	// SendBytes and RecvBytes are the operands' sizes.
	SendBytes, RecvBytes int64
	// SendInPlaceOffset and RecvInPlaceOffset place the in-place operands
	// inside the receive buffer: send = recv + SendInPlaceOffset*rank,
	// recv = recv + RecvInPlaceOffset*rank (all_gather: the rank's slot of
	// the output is its input; reduce_scatter: its output is its slot of
	// the input).
	SendInPlaceOffset, RecvInPlaceOffset int64
}

// ShapeOf is the Shape of a requested size (the -b/-e sweep value) for c
// on world ranks. The element count is size/4 rounded down; all_gather,
// reduce_scatter and alltoall round the per-rank count down to a multiple
// of 16 bytes ((count/world) & ~(16/4-1)), so small sizes on many ranks
// give count 0 and size 0, as nccl-tests prints them.
func ShapeOf(c nccl.Collective, size int64, world int) (Shape, error) {
	if world < 1 {
		return Shape{}, fmt.Errorf("ncclbench: world %d < 1", world)
	}
	if size < 0 {
		return Shape{}, fmt.Errorf("ncclbench: size %d < 0", size)
	}
	const align = 16/ElemSize - 1
	count := size / ElemSize
	w := int64(world)
	var send, recv, param, sendOff, recvOff int64
	switch c {
	case nccl.AllReduce, nccl.SendRecv:
		send, recv, param = count, count, count
	case nccl.AllGather:
		base := (count / w) &^ align
		send, recv, param, sendOff = base, base*w, base, base
	case nccl.ReduceScatter:
		base := (count / w) &^ align
		send, recv, param, recvOff = base*w, base, base, base
	case nccl.AllToAll:
		base := (count / w) &^ align
		send, recv, param = base*w, base*w, base
	default:
		return Shape{}, errUnsupported(c)
	}
	return Shape{
		Size:              max(send, recv) * ElemSize,
		Count:             param,
		SendBytes:         send * ElemSize,
		RecvBytes:         recv * ElemSize,
		SendInPlaceOffset: sendOff * ElemSize,
		RecvInPlaceOffset: recvOff * ElemSize,
	}, nil
}

// inPlaceChecked tells whether nccl-tests checks (and reports #wrong for)
// the in-place variant of c: not for alltoall and sendrecv, whose InitData
// sets reportErrors = 0 in place ("We don't support in-place ...") and
// whose in-place #wrong column prints N/A. They are still timed.
func inPlaceChecked(c nccl.Collective) bool {
	return c != nccl.AllToAll && c != nccl.SendRecv
}
