// Package nccl holds the pure logic of the suite's NCCL probe: the
// bandwidth arithmetic of NVIDIA's nccl-tests, a parser for the output of
// the nccl-tests binaries, and a verdict on the transport NCCL chose, read
// from its NCCL_DEBUG=INFO log.
//
// Later work runs NCCL collectives on GPU nodes with the operator's own
// nccl-tests image, hands the binaries' stdout to ParseNCCLTests and the
// interleaved NCCL log to ParseNCCLLog, and reports Judge's verdict. The
// verdict exists for the classic silent failure: when the pod lacks the
// RDMA resource, IPC_LOCK or a high enough RLIMIT_MEMLOCK, or its image
// lacks libibverbs, NCCL does not fail, it quietly uses TCP sockets (or IB
// without GPUDirect RDMA) and the job is just slow. Judge names the most
// likely reason from the log's own lines.
//
// Sources (facts and numbers only, cited where used):
//   - NVIDIA/nccl-tests: doc/PERFORMANCE.md (algbw = S/t, the busbw
//     factors), src/*.cu *GetBw and *GetCollByteCount (the factors and the
//     meaning of the size and count columns), src/common.cu and
//     src/util.cu (the output format).
//   - NVIDIA/nccl: the INFO/WARN lines of src/init.cc, src/transport/net.cc,
//     src/transport/net_ib/, src/transport/net_socket.cc, src/plugin/,
//     src/graph/, src/misc/ibvwrap.cc and ibvsymbols.cc, and their older
//     forms back to 2.4 (git history); docs/userguide troubleshooting for
//     the memlock and nvidia-peermem advice.
//   - Real outputs from public GitHub issues, in testdata/, each file's
//     first line naming its source.
package nccl
