package ncclbench

// Buffer is a device pointer, opaque to this package except for byte
// offsets: Run passes Buffer+n for the n-th byte of an allocation (nccl-tests
// shifts its buffers per iteration and places in-place operands inside
// the receive buffer), so an adapter must accept any address inside an
// allocation it returned.
type Buffer uintptr

// Memory is one rank's device memory. Data is raw bytes; the engine
// writes and reads float32 values little-endian, as CUDA devices store
// them.
type Memory interface {
	Alloc(bytes int) (Buffer, error)
	Free(Buffer) error
	// Upload copies src to the device at dst; Download copies
	// len(dst) bytes from the device at src. Both complete before they
	// return (the adapter orders them after the collectives queued on its
	// stream, or synchronises first).
	Upload(dst Buffer, src []byte) error
	Download(dst []byte, src Buffer) error
}

// Comm is one rank's communicator. Element type float32, reduction sum.
// Counts are elements. Calls may return before the operation completes
// (NCCL queues on a stream); Sync waits for everything queued.
//
// On any error Run returns at once. Peers that are still inside a
// collective then wait for a rank that will never come: an adapter should
// abort its communicator (ncclCommAbort) when Run returns an error or its
// context ends, so the peers' calls fail instead of hanging.
type Comm interface {
	Rank() int
	World() int
	AllReduce(send, recv Buffer, count int) error
	AllGather(send, recv Buffer, sendCount int) error
	ReduceScatter(send, recv Buffer, recvCount int) error
	// AllToAll sends countPerPeer elements at send+p*countPerPeer*4 to
	// every rank p and receives countPerPeer elements from rank p at
	// recv+p*countPerPeer*4: ncclAlltoAll, or grouped ncclSend/ncclRecv as
	// nccl-tests does before NCCL 2.28.
	AllToAll(send, recv Buffer, countPerPeer int) error
	// SendRecv sends count elements to sendPeer and receives count
	// elements from recvPeer in one group; Run uses the ring of
	// nccl-tests: sendPeer = rank+1, recvPeer = rank-1 (mod World).
	SendRecv(send, recv Buffer, count int, sendPeer, recvPeer int) error
	// Sync waits for the stream.
	Sync() error
}
