#!/usr/bin/env bash
# hack/gpu-device-check-test.sh — make test's proof of hack/gpu-device-check.sh
# on this machine, which has no GPU (the GPU paths need a GPU machine, which
# CI does not have; the script's other paths are proven here):
#   1. as on the GPU machine: no Go on PATH, the probe and its libibverbs
#      closure from `make gpu-check-bundle` (hack/.gpu-check); no libcuda:
#      PASS probe, NOT-RUN cuda naming libcuda.so.1, NOT-RUN nccl, exit 1
#      (the CUDA proofs did not run, so the script must not say it passed);
#   2. the CUDA path through the probe's real loader against the stand-in
#      libcuda (workloads/cuda/testdata/fakecuda.c, two fake GPUs), with an
#      NCCL library that does not exist: every GPU allocated, read back and
#      exported (PASS), the fake GPUs missing from this PCI bus (FAIL
#      topology), both NCCL worlds FAIL naming the library, the NCCL log
#      parser FAIL (no NCCL line), exit 1. This is the script's own
#      plumbing (which lines it prints and what it counts), not a GPU proof.
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(mktemp -d "${TMPDIR:-/tmp}/gpu-check-test.XXXXXX")
trap 'rm -rf "$out"' EXIT
fail() { echo "gpu-device-check-test: $*"; exit 1; }

make -s gpu-check-bundle >"$out/bundle.log" 2>&1 || { cat "$out/bundle.log"; fail "make gpu-check-bundle failed"; }
# want FILE REGEX...: each regex matches a line of FILE.
want() {
  local f=$1 re
  shift
  for re in "$@"; do grep -Eq -- "$re" "$f" || { cat "$f"; fail "no line matching '$re' in the output above"; }; done
}

rc=0
env -u RDMAPROBE -u RDMASUITE_LIBCUDA PATH=/usr/sbin:/usr/bin:/sbin:/bin GPU_CHECK_DIR="$out/1" \
  hack/gpu-device-check.sh >"$out/1.txt" 2>&1 || rc=$?
((rc == 1)) || { cat "$out/1.txt"; fail "without a GPU the script exited $rc, want 1"; }
want "$out/1.txt" '^PASS +probe: hack/\.gpu-check/bin/rdmaprobe runs' \
  '^NOT-RUN +cuda: .*libcuda\.so\.1 could not be loaded' '^NOT-RUN +nccl: no GPU for NCCL' \
  ', 0 failure\(s\), the CUDA proofs did not run \(no GPU\)$'
! grep -q '^FAIL' "$out/1.txt" || { cat "$out/1.txt"; fail "a FAIL line without a GPU"; }
echo "gpu-device-check without a GPU (bundle, no Go on PATH): exit 1, PASS probe, NOT-RUN cuda and nccl with the reason"

mkdir -p "$out/cuda"
gcc -shared -fPIC -o "$out/cuda/libcuda.so.1" workloads/cuda/testdata/fakecuda.c
rc=0
# FAKE_STDOUT_LINES: the stand-in prints 80 lines through C's stdout at
# cuInit, as NCCL prints its debug lines; the probe must keep them off its
# envelope (else the NCCL worlds FAIL with "stdout holds N line(s)").
FAKE_STDOUT_LINES=80 RDMAPROBE=$PWD/hack/.gpu-check/bin/rdmaprobe LD_LIBRARY_PATH=$PWD/hack/.gpu-check/lib RDMASUITE_LIBCUDA=$out/cuda/libcuda.so.1 \
  RDMASUITE_LIBNCCL=$out/no-such-libnccl.so.2 GPU_CHECK_DIR="$out/2" hack/gpu-device-check.sh >"$out/2.txt" 2>&1 || rc=$?
((rc == 1)) || { cat "$out/2.txt"; fail "with the stand-in libcuda and no NCCL the script exited $rc, want 1"; }
want "$out/2.txt" '^PASS +cuda-driver: .*, 2 GPU\(s\): ' \
  '^PASS +gpu0/alloc: 64 MiB of device memory allocated' '^PASS +gpu1/alloc: ' \
  '^PASS +gpu0/dmabuf: cuMemGetHandleForAddressRange exported 64 MiB' '^PASS +gpu1/dmabuf: ' \
  '^FAIL +gpu0/topology: .*on the PCI bus' \
  '^FAIL +nccl-1rank: .*no-such-libnccl\.so\.2 could not be loaded' '^FAIL +nccl-2rank: ' \
  '^FAIL +nccl-log: ' ', 5 failure\(s\)$'
echo "gpu-device-check with the stand-in libcuda (2 fake GPUs) and no NCCL: exit 1, alloc and dma-buf PASS, topology, NCCL worlds and log FAIL with their reasons"
