#!/usr/bin/env bash
# `make bench-verbs`: our bandwidth core against Debian's perftest on the same
# Soft-RoCE devices (rxe1 -> rxe0) in one guest run; prints both and the ratio
# ours/perftest per op and size, paired per repetition with an interval
# (hack/tools/benchtable), then message rate (small writes, several QPs) and
# latency (ib_write_lat / ib_read_lat / ib_send_lat against rdmaprobe bw --latency). TCG is
# slow: only the ratios mean anything. Knobs (environment): REPS, QPS_LIST,
# CQMODS, OPS, SIZES (bytes), MR_SIZES, MR_QPS, MR_ITERS, LAT_OPS, LAT_SIZES,
# LAT_ITERS, ATTEMPTS, OURS_FLAGS (extra rdmaprobe flags, e.g. --go-loop),
# PERFTEST_FLAGS (extra perftest flags, e.g. --use_old_post_send),
# CLIENT_CPUS / SERVER_CPUS (pin both tools' clients or servers to these
# guest CPUs), WQ_CPUMASK (hex: where the kernel's unbound kworkers, rxe's
# among them, may run), NO_ASLR=1 (the same address layout in every run),
# GUEST_SMP (the guest's vCPUs, default 2). An empty
# OPS, SIZES, MR_SIZES or LAT_OPS skips that group (LAT_OPS= MR_SIZES= runs
# bandwidth only).
#
# A/B: AB_PATCH=FILE also builds rdmaprobe from this tree with FILE applied
# (`patch -p1`; hack/ab/ holds the ones behind the figures in hack/README)
# and runs that build beside the tree's in every repetition, in rotation
# with perftest; it then prints A/perftest, B/perftest and B/A, each with
# every repetition's pair, so one run shows what that one difference does.
set -euo pipefail
cd "$(dirname "$0")/.."
# Placement, the same for both tools: each vCPU on its own host CPU and every
# client on guest CPU 1 (empty values undo either). Unpinned, a process's
# placement decides its figure: READ latency in one process went from ≈ 105
# to ≈ 52 µs pinned (hack/bench-loop-shapes.sh), and runs a second apart
# differed by up to 2 ×.
export GUEST_PIN_VCPUS=${GUEST_PIN_VCPUS-1}
CLIENT_CPUS=${CLIENT_CPUS-1}
out=$(mktemp -d "${TMPDIR:-/tmp}/rdmasuite-bench.XXXXXX")
trap 'rm -rf "$out"' EXIT
make -s rdmaprobe BIN_DIR="$out"
files=(-f "$out/rdmaprobe")
if [ -n "${AB_PATCH:-}" ]; then
  mkdir "$out/b"
  hack/ab-tree.sh "$AB_PATCH" "$out/b-src"
  make -s -C "$out/b-src" rdmaprobe BIN_DIR="$out/b"
  cp "$out/b/rdmaprobe" "$out/rdmaprobe-b"
  files+=(-f "$out/rdmaprobe-b")
  echo "A/B: B is this tree with $AB_PATCH applied"
fi
cp hack/guest-bench.sh "$out/"
# About 2.5 min of guest time per repetition of the default cells.
hack/guest/run.sh -t $((${REPS:-6} * ${AB_PATCH:+3 / 2 *} 150 + 300)) "${files[@]}" -f "$out/guest-bench.sh" -- \
  "REPS=${REPS:-6} QPS_LIST='${QPS_LIST:-1}' CQMODS='${CQMODS:-1 100}' OPS='${OPS-write read}' SIZES='${SIZES-65536 1048576}' \
   MR_SIZES='${MR_SIZES-2 4096}' MR_QPS='${MR_QPS:-4}' MR_ITERS='${MR_ITERS:-5000}' LAT_OPS='${LAT_OPS-write read send}' \
   LAT_SIZES='${LAT_SIZES:-2}' LAT_ITERS='${LAT_ITERS:-1000}' ATTEMPTS='${ATTEMPTS:-3}' \
   OURS_FLAGS='${OURS_FLAGS:-}' PERFTEST_FLAGS='${PERFTEST_FLAGS:-}' CLIENT_CPUS='${CLIENT_CPUS:-}' SERVER_CPUS='${SERVER_CPUS:-}' WQ_CPUMASK='${WQ_CPUMASK:-}' NO_ASLR='${NO_ASLR:-}' \
   sh guest-bench.sh" | tee "$out/raw.txt"
if [ -z "${AB_PATCH:-}" ]; then
  hack/tool.sh benchtable -reps <"$out/raw.txt"
  exit
fi
echo; echo "== A (this tree) against perftest"
hack/tool.sh benchtable -reps <"$out/raw.txt"
echo; echo "== B (with $AB_PATCH) against perftest"
hack/tool.sh benchtable -reps -ours rdmaprobe-b <"$out/raw.txt"
echo; echo "== B against A"
hack/tool.sh benchtable -reps -ref rdmaprobe -ours rdmaprobe-b <"$out/raw.txt"
