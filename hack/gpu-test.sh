#!/usr/bin/env bash
# hack/gpu-test.sh RESULTS_DIR: the GPU features (suite=gpu: nccl,
# gpudirect) on the bed's two guest nodes, which have real Soft-RoCE
# devices and no GPU. Issue 14's bed test: everything up to CUDA is real.
#   1. Only rxe-node-1 gets a fake nvidia.com/gpu capacity: rxe-node-2 is
#      not-run naming the missing resource, and one GPU node cannot form a
#      world or a pair: not-run saying so. No pod is created.
#   2. Both get two (a terminating pod of the last feature must not block the next): per variant an Indexed Job + headless Service world of
#      two ranks runs for real, rank 1 finds rank 0 by its DNS name, both
#      join, and rank 0 calls the world off because no pod has a CUDA
#      driver: every nccl check is not-run naming libcuda.so.1, with the
#      ranks' join in the evidence; the gpudirect pairs stop the same way.
# The run must fail (a not-run is not a pass), match
# hack/gpu-expect*.txt, and leave nothing in the cluster; the fake
# capacity is removed again, also on failure. Needs the guest bed up
# (BED_GUEST_NODES="rxe-node-1 rxe-node-2").
set -euo pipefail
cd "$(dirname "$0")/.."
. hack/versions.sh
. hack/guest-suite-args.sh
out=${1:?usage: hack/gpu-test.sh RESULTS_DIR}
mkdir -p "$out"
kc() { "$K8S_BIN_DIR/kubectl" --kubeconfig "$BED_DIR/kubeconfig" "$@"; }

# fake_gpus NODE N: advertise N nvidia.com/gpu (the documented way to
# advertise a node-level extended resource: a status patch; the kubelet
# keeps it). N "-" removes it.
fake_gpus() {
  local op='[{"op":"add","path":"/status/capacity/nvidia.com~1gpu","value":"'"$2"'"}]'
  if [[ $2 == - ]]; then
    kc get node "$1" -o 'jsonpath={.status.capacity.nvidia\.com/gpu}' | grep -q . || return 0
    op='[{"op":"remove","path":"/status/capacity/nvidia.com~1gpu"}]'
  fi
  kc patch node "$1" --subresource=status --type=json -p "$op" >/dev/null
}
# wait_gpus NODE N: the scheduler sees it once allocatable follows.
wait_gpus() {
  for _ in $(seq 1 60); do
    [[ $(kc get node "$1" -o 'jsonpath={.status.allocatable.nvidia\.com/gpu}') == "$2" ]] && return 0
    sleep 1
  done
  echo "$1: allocatable nvidia.com/gpu did not become '$2'"
  return 1
}
restore() {
  for g in rxe-node-1 rxe-node-2; do fake_gpus "$g" - || true; done
}
trap restore EXIT

# Small sweep: nothing gets past CUDA here. Two fake GPUs per node: a
# feature's pods still terminating must not keep the next world's rank
# from scheduling (CI of a2105e2: the hostdev world's rank 0 stayed
# unscheduled until rank 1 gave up after 90 s, right after the deadline
# stage, on a loaded machine); 3m for ranks to join, for the same reason.
GPU_ARGS=("${GUEST_SUITE_ARGS[@]}" --labels suite=gpu --nccl-max-bytes 64K --nccl-iters 5 --nccl-warmup 1 --nccl-timeout 3m)
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

# Every rail up: make test's earlier stages leave rxe-node-2's rail 1
# down, which the gpudirect pairs would (rightly) fail on before any GPU.
hack/guestnode/rail.sh rxe-node-2 rxe1 up

t=$SECONDS
fake_gpus rxe-node-1 2
wait_gpus rxe-node-1 2
gpu_run one-gpu-node
hack/tool.sh expectresults -results "$out/one-gpu-node/results.json" -expect hack/gpu-expect-one.txt ||
  { tail -40 "$out/one-gpu-node.log"; exit 1; }
nothing_left one-gpu-node
echo "one fake-GPU node: not-run rows name the missing GPU and the missing peer, $((SECONDS - t)) s"

t=$SECONDS
fake_gpus rxe-node-2 2
wait_gpus rxe-node-2 2
gpu_run two-gpu-nodes
hack/tool.sh expectresults -results "$out/two-gpu-nodes/results.json" -expect hack/gpu-expect.txt ||
  { tail -40 "$out/two-gpu-nodes.log"; exit 1; }
# The world really formed: both ranks joined rank 0 over the headless
# Service before CUDA stopped it, in each variant's world.
joined=$(grep -o 'ranks joined 2/2' "$out/two-gpu-nodes/results.json" | wc -l)
((joined >= 2)) || { echo "the results do not show both ranks joining in each variant's world ($joined)"; exit 1; }
nothing_left two-gpu-nodes
echo "two fake-GPU nodes: worlds of 2 ranks joined over DNS and stopped at CUDA (no-gpu not-run), $((SECONDS - t)) s"

restore
trap - EXIT
for g in rxe-node-1 rxe-node-2; do wait_gpus "$g" ""; done
echo "fake nvidia.com/gpu capacity removed"
