#!/usr/bin/env bash
# The main job on the local bed (`make demo`): the Kubernetes bed with its
# host nodes plus two guest nodes with a real Soft-RoCE device each (qemu,
# linked to each other), the smoke features on every node, the bandwidth
# (node to node and same node), memlock and preflight features on the guest
# nodes, the acceptance report (table and Markdown), teardown.
# Exits non-zero when a check did not pass.
set -euo pipefail
cd "$(dirname "$0")/.."
. hack/versions.sh
. hack/guest-suite-args.sh
export BED_DIR BED_GUEST_NODES=${BED_GUEST_NODES-rxe-node-1 rxe-node-2}
results=${REPORT_DIR:-$PWD/demo-results}
trap 'hack/bed.sh down' EXIT
trap 'exit 130' INT TERM
t0=$SECONDS
hack/bed.sh up
mkdir -p "$results"
go test -count=1 ./suites -args --kubeconfig="$BED_DIR/kubeconfig" --labels suite=smoke \
  --report-dir="$results/smoke" >"$results/smoke.log" 2>&1 || { tail -30 "$results/smoke.log"; exit 1; }
echo "demo: smoke features passed on every node"
rc=0
go test -count=1 -timeout 30m ./suites -args --kubeconfig="$BED_DIR/kubeconfig" --labels suite=rdma,suite=doctor \
  --report-dir="$results" "${GUEST_SUITE_ARGS[@]}" >"$results.log" 2>&1 || rc=$?
[[ -f $results/results.json ]] || { tail -30 "$results.log"; echo "demo: the suite wrote no results"; exit 1; }
echo
# The report's exit code agrees with go test's (README "Exit codes"): show
# the report whatever it says, then exit with the suite's code.
go run ./cmd/rdmasuite report "$results/results.json" --format markdown -o "$results/report.md" || true
go run ./cmd/rdmasuite report "$results/results.json" || true
echo "demo: suite log $results.log; Markdown report $results/report.md; $((SECONDS - t0)) s"
exit $rc
