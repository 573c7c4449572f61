package nccl

import (
	"math"
	"testing"
)

func TestBusFactor(t *testing.T) {
	// doc/PERFORMANCE.md "Summary" and the *GetBw functions of nccl-tests.
	cases := []struct {
		c    Collective
		n    int
		want float64
	}{
		{AllReduce, 2, 1}, {AllReduce, 8, 1.75}, {AllReduce, 64, 126.0 / 64}, {AllReduce, 1, 0},
		{AllGather, 2, 0.5}, {AllGather, 8, 0.875}, {ReduceScatter, 8, 0.875},
		{AllToAll, 64, 63.0 / 64}, {AllToAll, 1, 0},
		{Broadcast, 2, 1}, {Reduce, 16, 1}, {SendRecv, 2, 1},
		{AllReduce, 0, 0}, {Collective("gather"), 8, 0},
	}
	for _, tc := range cases {
		if got := tc.c.BusFactor(tc.n); math.Abs(got-tc.want) > 1e-15 {
			t.Errorf("%s.BusFactor(%d) = %v, want %v", tc.c, tc.n, got, tc.want)
		}
	}
}

func TestAlgAndBusBandwidth(t *testing.T) {
	// all_gather_perf, 2 ranks, NVIDIA/dgx-spark-playbooks#25: size
	// 17179869184 B in 453650 us printed algbw 37.87 and busbw 18.94.
	alg := AlgBandwidth(17179869184, 453650e-6)
	if math.Abs(alg-37.8703) > 1e-4 {
		t.Errorf("AlgBandwidth = %v, want 37.8703", alg)
	}
	if bus := BusBandwidth(AllGather, alg, 2); math.Abs(bus-18.935) > 1e-3 {
		t.Errorf("BusBandwidth = %v, want 18.935", bus)
	}
	// all_reduce_perf on 64 ranks, NVIDIA/nccl-tests#78: 268435456 B in
	// 122131 us printed 2.20 and 4.33.
	alg = AlgBandwidth(268435456, 122131e-6)
	if bus := BusBandwidth(AllReduce, alg, 64); math.Round(alg*100) != 220 || math.Round(bus*100) != 433 {
		t.Errorf("all_reduce 64 ranks: algbw %v busbw %v, want 2.20 4.33", alg, bus)
	}
	if AlgBandwidth(1<<20, 0) != 0 || AlgBandwidth(1<<20, -1) != 0 {
		t.Error("AlgBandwidth of a zero or negative time is not 0")
	}
}

func TestSizeConventions(t *testing.T) {
	// Rows of real tables: the count column and the size column.
	cases := []struct {
		c           Collective
		count       int64
		typ         string
		nRanks      int
		size        int64
		ranksBySize int
	}{
		{AllGather, 2147483648, "float", 2, 17179869184, 2}, // dgx-spark-playbooks#25
		{AllGather, 4194304, "bfloat16", 2, 16777216, 2},    // nccl#1435
		{ReduceScatter, 4, "float", 8, 128, 8},              // nccl-tests#128
		{AllToAll, 1048576, "float", 64, 268435456, 64},     // nccl-tests#78
		{AllToAll, 8388608, "float", 1, 33554432, 1},        // nccl-tests#287
		{AllReduce, 67108864, "float", 64, 268435456, 0},    // nccl-tests#78: size = count × 4 whatever the ranks
		{SendRecv, 64, "float", 2, 256, 0},                  // nccl-tests#214
		{Broadcast, 2, "float", 2, 8, 0},                    // nccl-tests#82
		{AllReduce, 33554432, "float", 2, 134217728, 0},     // nccl#1706
		{ReduceScatter, 0, "float", 8, 0, 0},                // nccl-tests#128: count 0 tells nothing
		{AllGather, 4, "float8", 2, 0, 0},                   // unknown type
		// Synthetic: every type name once, and uneven rank counts.
		{AllGather, 3, "int8", 3, 9, 3},
		{AllToAll, 7, "uint8", 3, 21, 3},
		{ReduceScatter, 5, "half", 4, 40, 4},
		{AllGather, 1, "int32", 5, 20, 5},
		{AllToAll, 2, "uint32", 6, 48, 6},
		{ReduceScatter, 1, "int64", 16, 128, 16},
		{AllGather, 1, "uint64", 7, 56, 7},
		{AllToAll, 1, "double", 9, 72, 9},
		{AllGather, 2, "f8e4m3", 8, 16, 8},
		{ReduceScatter, 2, "f8e5m2", 8, 16, 8},
		{AllGather, 2, "int", 2, 16, 2}, // NCCL 1 type names
		{AllGather, 5, "char", 3, 15, 3},
		{Reduce, 9, "int8", 4, 9, 0},
	}
	for _, tc := range cases {
		ts, ok := TypeSize(tc.typ)
		if got := tc.c.SizeBytes(tc.count, ts, tc.nRanks); ok && got != tc.size {
			t.Errorf("%s.SizeBytes(%d %s, %d ranks) = %d, want %d", tc.c, tc.count, tc.typ, tc.nRanks, got, tc.size)
		}
		if got := tc.c.RanksFromSize(tc.size, tc.count, tc.typ); got != tc.ranksBySize {
			t.Errorf("%s.RanksFromSize(%d, %d %s) = %d, want %d", tc.c, tc.size, tc.count, tc.typ, got, tc.ranksBySize)
		}
	}
	if got := AllGather.RanksFromSize(100, 3, "float"); got != 0 {
		t.Errorf("RanksFromSize of a size that is no multiple = %d, want 0", got)
	}
}

func TestParseCollective(t *testing.T) {
	for in, want := range map[string]Collective{
		"all_reduce_perf": AllReduce, "./build/alltoall_perf": AllToAll, "sendrecv": SendRecv,
		" /opt/nccl-tests/build/reduce_scatter_perf ": ReduceScatter, "broadcast_perf": Broadcast,
	} {
		if got, err := ParseCollective(in); err != nil || got != want {
			t.Errorf("ParseCollective(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"gather_perf", "hypercube_perf", "", "allreduce"} {
		if _, err := ParseCollective(in); err == nil {
			t.Errorf("ParseCollective(%q) accepted", in)
		}
	}
	for _, c := range Collectives {
		if got, err := ParseCollective(c.Binary()); err != nil || got != c {
			t.Errorf("round trip of %s via %s = %q, %v", c, c.Binary(), got, err)
		}
	}
}
