package nccl

import (
	"fmt"
	"path"
	"strings"
)

// Collective is one of the operations the nccl-tests binaries measure, named
// as the binary is (all_reduce for all_reduce_perf).
type Collective string

// The collectives the suite runs. nccl-tests has more binaries (gather,
// scatter, hypercube, alltoallv); their bandwidth rules are not modelled here.
const (
	AllReduce     Collective = "all_reduce"
	AllGather     Collective = "all_gather"
	ReduceScatter Collective = "reduce_scatter"
	AllToAll      Collective = "alltoall"
	Broadcast     Collective = "broadcast"
	Reduce        Collective = "reduce"
	SendRecv      Collective = "sendrecv"
)

// Collectives lists every Collective.
var Collectives = []Collective{AllReduce, AllGather, ReduceScatter, AllToAll, Broadcast, Reduce, SendRecv}

// Binary is the nccl-tests program that measures c ("all_reduce_perf").
func (c Collective) Binary() string { return string(c) + "_perf" }

// ParseCollective accepts a collective name, a binary name or a path to the
// binary ("./build/all_gather_perf").
func ParseCollective(s string) (Collective, error) {
	name := strings.TrimSuffix(path.Base(strings.TrimSpace(s)), "_perf")
	for _, c := range Collectives {
		if string(c) == name {
			return c, nil
		}
	}
	return "", fmt.Errorf("nccl: unknown collective %q", s)
}

// BusFactor is the correction nccl-tests applies to the algorithm bandwidth
// to get the bus bandwidth of c on nRanks ranks:
//
//	all_reduce                       2(n-1)/n   (all_reduce.cu AllReduceGetBw)
//	all_gather, reduce_scatter,
//	alltoall                         (n-1)/n    (AllGatherGetBw, ReduceScatterGetBw, AlltoAllGetBw)
//	broadcast, reduce, sendrecv      1          (BroadcastGetBw, ReduceGetBw, SendRecvGetBw)
//
// (NVIDIA/nccl-tests src/*.cu and doc/PERFORMANCE.md "Summary"). With one
// rank the (n-1)/n factors are 0: a collective on one GPU moves nothing over
// a bus, and nccl-tests prints busbw 0.00. nRanks < 1 gives 0.
func (c Collective) BusFactor(nRanks int) float64 {
	if nRanks < 1 {
		return 0
	}
	n := float64(nRanks)
	switch c {
	case AllReduce:
		return 2 * (n - 1) / n
	case AllGather, ReduceScatter, AllToAll:
		return (n - 1) / n
	case Broadcast, Reduce, SendRecv:
		return 1
	}
	return 0
}

// BusBandwidth is nccl-tests' busbw for an algorithm bandwidth algbwGBs
// (GB/s) of c on nRanks ranks: algbw × BusFactor.
func BusBandwidth(c Collective, algbwGBs float64, nRanks int) float64 {
	return algbwGBs * c.BusFactor(nRanks)
}

// AlgBandwidth is nccl-tests' algbw: bytes / seconds in GB/s with
// GB = 1e9 bytes (every *GetBw divides by 1.0E9; doc/PERFORMANCE.md
// "algbw = S/t"). bytes is the table's size column (see SizeBytes); seconds
// is the time column (printed in µs) / 1e6. A zero or negative time gives 0.
func AlgBandwidth(bytes int64, seconds float64) float64 {
	if seconds <= 0 {
		return 0
	}
	return float64(bytes) / 1e9 / seconds
}

// SizeBytes is the size column nccl-tests prints for a row whose count
// column is count elements of typeSize bytes on nRanks ranks. The size
// column is max(send bytes, receive bytes) of one rank
// (common.cu TimeTest: writeBenchmarkLinePreamble(max(sendBytes,
// expectedBytes), nbytes/wordSize(type), ...)), and the count column is the
// count passed to the NCCL call, so:
//
//	all_reduce, broadcast, reduce, sendrecv   size = count × typeSize
//	all_gather       count = elements each rank sends; size = the whole output, count × typeSize × n
//	reduce_scatter   count = elements each rank receives; size = the whole input, count × typeSize × n
//	alltoall         count = elements sent to each peer; size = count × typeSize × n
//
// (all_gather.cu, reduce_scatter.cu, alltoall.cu *GetCollByteCount). The
// algbw of every collective is this size over the time (doc/PERFORMANCE.md:
// "S is the size in bytes of the total array" for all_gather and
// reduce_scatter). Since June 2020 only: before NVIDIA/nccl-tests#45 was
// fixed, all_gather and reduce_scatter printed an algbw that already
// carried the (n-1)/n factor.
func (c Collective) SizeBytes(count int64, typeSize, nRanks int) int64 {
	b := count * int64(typeSize)
	switch c {
	case AllGather, ReduceScatter, AllToAll:
		return b * int64(nRanks)
	}
	return b
}

// RanksFromSize inverts SizeBytes for the collectives whose size column
// spans all ranks (all_gather, reduce_scatter, alltoall): the number of
// ranks a row was measured on, 0 when it cannot tell (other collectives,
// count 0, an unknown type, or a size that is not a whole multiple).
func (c Collective) RanksFromSize(size, count int64, typeName string) int {
	ts, ok := TypeSize(typeName)
	switch {
	case !ok || count <= 0:
		return 0
	case c != AllGather && c != ReduceScatter && c != AllToAll:
		return 0
	}
	per := count * int64(ts)
	if size%per != 0 {
		return 0
	}
	return int(size / per)
}

// TypeSize is the size in bytes of an nccl-tests data type name, as the
// type column prints it (common.cu test_typenames; "char" and "int" are the
// names of builds against NCCL 1).
func TypeSize(name string) (int, bool) {
	switch name {
	case "int8", "uint8", "char", "f8e4m3", "f8e5m2":
		return 1, true
	case "half", "bfloat16":
		return 2, true
	case "int32", "uint32", "int", "float":
		return 4, true
	case "int64", "uint64", "double":
		return 8, true
	}
	return 0, false
}
