#!/usr/bin/env bash
# Runs the verbs tests on a real verbs device: Soft-RoCE (rxe0, rxe1) in the
# qemu guest (hack/guest). Builds the tagged test binaries and rdmaprobe,
# boots one guest, runs every check there, and fails if any check failed.
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(mktemp -d "${TMPDIR:-/tmp}/rdmasuite-verbs.XXXXXX")
trap 'rm -rf "$out"' EXIT
CGO_ENABLED=1 go test -c -tags verbsbed -o "$out/verbs.test" ./workloads/verbs
CGO_ENABLED=1 go test -c -tags verbsbed -o "$out/bwverbs.test" ./workloads/bwverbs
make -s rdmaprobe BIN_DIR="$out"
cp hack/guest-tests.sh "$out/guest-tests.sh"
t=$SECONDS
hack/guest/run.sh -t 600 -f "$out/verbs.test" -f "$out/bwverbs.test" -f "$out/rdmaprobe" -f "$out/guest-tests.sh" -- sh guest-tests.sh
echo "verbs tests in the guest: $((SECONDS - t)) s (boot, tests, poweroff)"
