// Package ncclbench is the suite's NCCL measurement engine: the size sweep,
// timing, bandwidth arithmetic and data check of NVIDIA's nccl-tests,
// written against small interfaces (Comm, Memory) instead of NCCL and CUDA,
// so that every rule is unit-tested without a GPU. The in-pod probe loads
// NCCL and CUDA at run time and adapts them to Comm and Memory; the tests
// here drive Run with an in-process fake that simulates N ranks.
//
// Run measures one rank; Combine merges every rank's RankResult the way
// nccl-tests' multi-process mode does on rank 0; Render prints the merged
// result as an nccl-tests-like table that nccl.ParseNCCLTests reads back,
// so one verdict path judges this engine and the operator's own
// nccl-tests binaries (RunBinary); Result.Table is one collective's table
// as workloads/nccl's Table.
//
// Semantics follow NVIDIA/nccl-tests (src/common.cu TimeTest, BenchTime,
// startColl, setupArgs, CheckData; src/all_reduce.cu, all_gather.cu,
// reduce_scatter.cu, alltoall.cu, sendrecv.cu *GetCollByteCount,
// *InitData, *GetBw; src/util.cu for the output format; doc/PERFORMANCE.md
// for algbw and busbw), read at commit a0b82b2 (July 2026). Where this
// engine differs, the identifier that differs says so.
package ncclbench
