#!/usr/bin/env bash
# The main job on the local bed (`make demo`): bed up, every feature of the
# suite, the acceptance report (table and Markdown), bed down. On the host
# bed the RDMA checks fail by design (nodes advertise RDMA without a device)
# and node-1 reproduces seed 002's 64 KiB memlock: the report shows what an
# operator would see on such a cluster.
set -euo pipefail
cd "$(dirname "$0")/.."
. hack/versions.sh
export BED_DIR
results=${REPORT_DIR:-$PWD/demo-results}
trap 'hack/bed.sh down' EXIT
trap 'exit 130' INT TERM
t0=$SECONDS
hack/bed.sh up
go test -count=1 ./suites -args --kubeconfig="$BED_DIR/kubeconfig" --report-dir="$results" \
  --bw-duration=2s >"$results.log" 2>&1 || true
[[ -f $results/results.json ]] || { tail -30 "$results.log"; echo "demo: the suite wrote no results"; exit 1; }
echo
go run ./cmd/rdmasuite report "$results/results.json" --format markdown -o "$results/report.md"
go run ./cmd/rdmasuite report "$results/results.json"
grep -A6 'time per phase' "$results.log" || true
echo "demo: suite log $results.log; Markdown report $results/report.md; $((SECONDS - t0)) s"
