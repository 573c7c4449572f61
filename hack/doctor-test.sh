#!/usr/bin/env bash
# Stages each seed's broken state for real in the running bed's API, runs the
# doctor (go test ./suites --labels suite=doctor) and asserts its results
# JSON names the right finding on the right node, and nothing on the healthy
# one. Each state is undone before the next. Needs `make bed-up`.
set -euo pipefail
cd "$(dirname "$0")/.."
. hack/versions.sh
IMAGE_TAG=${IMAGE_TAG:-dev}
kc() { "$K8S_BIN_DIR/kubectl" --kubeconfig "$BED_DIR/kubeconfig" "$@"; }
out=$(mktemp -d "${TMPDIR:-/tmp}/rdmasuite-doctor.XXXXXX")
go test -c -o "$out/suites.test" ./suites

undo() {
  kc delete ns nvidia-network-operator nvidia-gpu-operator --ignore-not-found --wait=false >/dev/null 2>&1 || true
  kc delete pods -A -l rdmasuite.io/bed-seed --force --grace-period=0 >/dev/null 2>&1 || true
  kc taint node node-2 crater.raids.io/account- >/dev/null 2>&1 || true
  kc label node node-2 network.nvidia.com/operator.mofed.wait=false --overwrite >/dev/null 2>&1 || true
  kc patch node node-1 --subresource=status --type=merge -p '{"status":{"capacity":{"rdma/rdma_shared_device_a":"63"}}}' >/dev/null 2>&1 || true
  # The kubelet recomputes allocatable from capacity on its next status sync.
  for _ in $(seq 1 60); do
    [[ $(kc get node node-1 -o 'jsonpath={.status.allocatable.rdma/rdma_shared_device_a}' 2>/dev/null) == 63 ]] && break
    sleep 0.5
  done
}
cleanup() {
  undo
  kc delete crd nicclusterpolicies.mellanox.com --ignore-not-found >/dev/null 2>&1 || true
  rm -rf "$BED_DIR/hostroots"
}
trap cleanup EXIT

doctor() { # expectation-file [suite flags]
  local name t exp=$1
  shift
  name=$(basename "$exp" .txt)
  t=$SECONDS
  (cd suites && "$out/suites.test" --kubeconfig="$BED_DIR/kubeconfig" --labels suite=doctor \
    --report-dir="$out/$name" "$@" >"$out/$name.log" 2>&1) || true
  hack/tool.sh expectresults -results "$out/$name/results.json" -expect "$exp" ||
    { tail -30 "$out/$name.log"; exit 1; }
  echo "doctor on '$name': $((SECONDS - t)) s"
}

wait_crashed() { # namespace pod
  for _ in $(seq 1 120); do
    [[ $(kc -n "$1" get pod "$2" -o 'jsonpath={.status.containerStatuses[0].restartCount}' 2>/dev/null) -ge 1 ]] && return 0
    sleep 0.5
  done
  echo "pod $1/$2 never restarted"; return 1
}

stage() { sed -e "s/NODE/$2/g" -e "s/IMAGE_TAG/$IMAGE_TAG/g" "hack/seeds/$1" | kc apply -f - >/dev/null; }

echo "== healthy bed"
doctor hack/seeds/expect-healthy.txt

echo "== seed 002: untolerated taint keeps mofed.wait=true on node-2"
kc apply -f hack/seeds/nicclusterpolicy-crd.yaml >/dev/null
kc wait --for=condition=Established crd/nicclusterpolicies.mellanox.com --timeout=30s >/dev/null
kc apply -f hack/seeds/nicclusterpolicy.yaml >/dev/null
kc taint node node-2 crater.raids.io/account=exclusive:NoSchedule --overwrite >/dev/null
kc label node node-2 network.nvidia.com/operator.mofed.wait=true --overwrite >/dev/null
doctor hack/seeds/expect-002-taint.txt
undo

echo "== seed 000: MOFED crash-loops on storage modules on node-1"
stage 000-mofed-storage-modules.yaml node-1
wait_crashed nvidia-network-operator mofed-ubuntu22.04-ds-seed000
doctor hack/seeds/expect-000-storage.txt
undo
kc wait --for=delete ns/nvidia-network-operator --timeout=60s >/dev/null 2>&1 || true

echo "== seeds 001/003: nvidia_peermem before MOFED on node-2, GPU Operator pods stuck in Init"
stage 001-peermem-race.yaml node-2
wait_crashed nvidia-gpu-operator nvidia-driver-daemonset-418.94.202510230424-0-seed1
doctor hack/seeds/expect-001-peermem.txt
undo
kc wait --for=delete ns/nvidia-gpu-operator --timeout=60s >/dev/null 2>&1 || true

echo "== seed 002: node-1 stops advertising its RDMA resource"
kc patch node node-1 --subresource=status --type=merge -p '{"status":{"capacity":{"rdma/rdma_shared_device_a":"0"}}}' >/dev/null
for _ in $(seq 1 40); do
  [[ $(kc get node node-1 -o 'jsonpath={.status.allocatable.rdma/rdma_shared_device_a}') == 0 ]] && break
  sleep 0.5
done
doctor hack/seeds/expect-002-allocatable.txt
undo

echo "== seed 000 on the host: node-1's host root shows rpcrdma loaded before .driver-ready"
hack/seeds/hostroot.sh "$BED_DIR/hostroots/node-1" storage-modules
hack/seeds/hostroot.sh "$BED_DIR/hostroots/node-2" healthy
doctor hack/seeds/expect-000-hostroot.txt --node-probe-host-path="$BED_DIR/hostroots/{node}"
rm -rf "$BED_DIR/hostroots"
kc delete crd nicclusterpolicies.mellanox.com --ignore-not-found >/dev/null
echo "doctor: every staged seed state reported on the right node, nothing on the healthy one"
