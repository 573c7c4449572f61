#!/usr/bin/env bash
# hack/gpu-test.sh RESULTS_DIR: the GPU features (suite=gpu: nccl,
# gpudirect) when only one of the bed's two guest nodes has a GPU. The GPU
# features' bed test, its one-node half: only rxe-node-1 gets a fake
# nvidia.com/gpu capacity; rxe-node-2 is not-run naming the missing
# resource, and one GPU node cannot form a world or a pair: not-run saying
# so, and no pod is created. The run must fail (a not-run is not a pass),
# match hack/gpu-expect-one.txt and leave nothing in the cluster; the fake
# capacity is removed again, also on failure. The two-node half (real NCCL
# worlds over DNS and GPUDirect pairs sharing the bandwidth pods, all
# stopping at CUDA) is make test's main guest run (hack/guest-expect.txt).
# Needs the guest bed up (BED_GUEST_NODES="rxe-node-1 rxe-node-2").
set -euo pipefail
cd "$(dirname "$0")/.."
. hack/versions.sh
. hack/guest-suite-args.sh
out=${1:?usage: hack/gpu-test.sh RESULTS_DIR}
mkdir -p "$out"
kc() { "$K8S_BIN_DIR/kubectl" --kubeconfig "$BED_DIR/kubeconfig" "$@"; }

. hack/fake-gpus.sh
restore() {
  for g in rxe-node-1 rxe-node-2; do fake_gpus "$g" - || true; done
}
trap restore EXIT

GPU_ARGS=("${GUEST_SUITE_ARGS[@]}" --labels suite=gpu "${GPU_RUN_ARGS[@]}")
# make test's one compiled suite (SUITE_BIN), or our own.
suite_bin=${SUITE_BIN:-$out/suites.test}
[[ -n ${SUITE_BIN:-} ]] || go test -c -o "$suite_bin" ./suites
# gpu_run NAME: the suite=gpu run into $out/NAME; it must fail.
gpu_run() {
  if (cd suites && exec "$suite_bin" -test.timeout=20m --kubeconfig="$BED_DIR/kubeconfig" --report-dir="$out/$1" \
    "${GPU_ARGS[@]}") >"$out/$1.log" 2>&1; then
    tail -40 "$out/$1.log"
    echo "the gpu suite passed on nodes without a GPU: it must not"
    exit 1
  fi
  [[ -f $out/$1/results.json ]] || { tail -40 "$out/$1.log"; echo "the gpu suite wrote no results"; exit 1; }
  grep -E '^(rdmasuite:|│|┌|└|├)' "$out/$1.log" | cut -c1-220 || true
}
nothing_left() {
  local left
  left=$(kc get ns,jobs,svc,pods -A -l app.kubernetes.io/managed-by=rdmasuite -o name 2>/dev/null)
  [[ -z $left ]] || { echo "left in the cluster after the gpu run ($1): $left"; exit 1; }
}

t=$SECONDS
fake_gpus rxe-node-1 2
wait_gpus rxe-node-1 2
gpu_run one-gpu-node
hack/tool.sh expectresults -results "$out/one-gpu-node/results.json" -expect hack/gpu-expect-one.txt ||
  { tail -40 "$out/one-gpu-node.log"; exit 1; }
nothing_left one-gpu-node
echo "one fake-GPU node: not-run rows name the missing GPU and the missing peer, $((SECONDS - t)) s"

restore
trap - EXIT
for g in rxe-node-1 rxe-node-2; do wait_gpus "$g" ""; done
echo "fake nvidia.com/gpu capacity removed"
