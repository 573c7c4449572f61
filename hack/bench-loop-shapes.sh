#!/usr/bin/env bash
# READ latency's loop, shape against shape, on the same QPs in one process:
# perftest's run_iter_lat shape (what rdmaprobe runs for one operation at a
# time) against the general many-QP loop, in alternating blocks of 200 READs
# (BenchmarkReadLatencyLoopShapes, workloads/bwverbs). Interleaving by
# blocks of milliseconds leaves the Soft-RoCE guest's drifts, which last
# seconds, out of the ratio that process-by-process runs cannot resolve.
# AB_PATCH=FILE builds the benchmark from this tree with FILE applied, so its
# "general" side can be one part of the general loop at a time (hack/ab/one-at-a-time-*).
# BLOCKS (default 400) block pairs. Pinned as make bench-verbs pins (each
# vCPU on its own host CPU, the process on guest CPU 1); GUEST_PIN_VCPUS= and
# CLIENT_CPUS= (empty) measure unpinned.
set -euo pipefail
cd "$(dirname "$0")/.."
export GUEST_PIN_VCPUS=${GUEST_PIN_VCPUS-1}
CLIENT_CPUS=${CLIENT_CPUS-1}
out=$(mktemp -d "${TMPDIR:-/tmp}/rdmasuite-shapes.XXXXXX")
trap 'rm -rf "$out"' EXIT
src=.
if [ -n "${AB_PATCH:-}" ]; then
  src=$out/src
  hack/ab-tree.sh "$AB_PATCH" "$src"
  echo "the benchmark's general side: $(head -1 "$AB_PATCH")"
fi
(cd "$src" && CGO_ENABLED=1 go test -c -tags verbsbed -o "$out/bwverbs.test" ./workloads/bwverbs)
pin=${CLIENT_CPUS:+taskset -c $CLIENT_CPUS}
hack/guest/run.sh -t 600 -f "$out/bwverbs.test" -- \
  "$pin ./bwverbs.test -test.run '^\$' -test.bench ReadLatencyLoopShapes -test.benchtime ${BLOCKS:-400}x -test.v" | tee "$out/raw.txt"
# The median ratio with its bootstrap interval, the warm-up pair left out.
hack/tool.sh benchtable -blocks <"$out/raw.txt"
