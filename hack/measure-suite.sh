#!/usr/bin/env bash
# Measures a full non-destructive run of the suite's features against the
# running bed (`make bed-up` first) and prints the wall time and the
# per-phase breakdown the suite records. Extra arguments go to the suite.
set -euo pipefail
cd "$(dirname "$0")/.."
. hack/versions.sh
out=$(mktemp -d "${TMPDIR:-/tmp}/rdmasuite-measure.XXXXXX")
go test -c -o "$out/suites.test" ./suites
t0=$(date +%s.%N)
(cd suites && "$out/suites.test" --kubeconfig="$BED_DIR/kubeconfig" --report-dir="$out" "$@" >"$out/log" 2>&1) || true
t1=$(date +%s.%N)
grep -E '^rdmasuite: (time per phase|results)|^  [a-z ]+ +[0-9]+ ×|NOT PASSED|PASSED' "$out/log" || tail -20 "$out/log"
awk -v a="$t0" -v b="$t1" 'BEGIN {printf "suite wall time: %.1f s (target < 180 s)\n", b - a}'
echo "log: $out/log"
