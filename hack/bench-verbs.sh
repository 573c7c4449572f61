#!/usr/bin/env bash
# `make bench-verbs`: our bandwidth core against Debian's perftest on the same
# Soft-RoCE devices (rxe1 -> rxe0) in one guest run; prints both and the ratio
# ours/perftest per op and size (medians over REPS runs). TCG is slow: only
# the ratio means anything. Knobs (environment): REPS, QPS_LIST, CQMODS, OPS,
# SIZES (bytes), OURS_FLAGS (extra rdmaprobe flags, e.g. --go-loop),
# PERFTEST_FLAGS (extra perftest flags, e.g. --use_old_post_send).
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(mktemp -d "${TMPDIR:-/tmp}/rdmasuite-bench.XXXXXX")
trap 'rm -rf "$out"' EXIT
make -s rdmaprobe BIN_DIR="$out"
cp hack/guest-bench.sh "$out/"
hack/guest/run.sh -t 900 -f "$out/rdmaprobe" -f "$out/guest-bench.sh" -- \
  "REPS=${REPS:-3} QPS_LIST='${QPS_LIST:-1}' CQMODS='${CQMODS:-1 100}' OPS='${OPS:-write read}' SIZES='${SIZES:-65536 1048576}' OURS_FLAGS='${OURS_FLAGS:-}' PERFTEST_FLAGS='${PERFTEST_FLAGS:-}' sh guest-bench.sh" | tee "$out/raw.txt"
hack/tool.sh benchtable <"$out/raw.txt"
