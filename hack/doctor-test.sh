#!/usr/bin/env bash
# Stages each seed's broken state for real in the running bed's API, runs the
# doctor (go test ./suites --labels suite=doctor) and asserts its results
# JSON names the right finding on the right node, and nothing on the healthy
# one (hack/tool.sh expectresults fails on any row the expect file does not
# cover). Where the finding's evidence matters, it is asserted too, from the
# report's Evidence section. Each state is undone before the next; every
# staged object is removed also on failure. Needs `make bed-up`.
set -euo pipefail
cd "$(dirname "$0")/.."
. hack/versions.sh
IMAGE_TAG=${IMAGE_TAG:-dev}
kc() { "$K8S_BIN_DIR/kubectl" --kubeconfig "$BED_DIR/kubeconfig" "$@"; }
out=$(mktemp -d "${TMPDIR:-/tmp}/rdmasuite-doctor.XXXXXX")
# make test's one compiled suite (SUITE_BIN), or our own.
if [[ -n ${SUITE_BIN:-} ]]; then cp "$SUITE_BIN" "$out/suites.test"; else go test -c -o "$out/suites.test" ./suites; fi
# make test's rdmasuite binary (RDMASUITE_BIN), or our own.
if [[ -n ${RDMASUITE_BIN:-} ]]; then cp "$RDMASUITE_BIN" "$out/rdmasuite"; else go build -o "$out/rdmasuite" ./cmd/rdmasuite; fi
t_all=$SECONDS
# Every doctor run below runs in this one namespace (--namespace), made
# here as an operator without namespace rights would make it: a run
# namespace of its own costs each run the namespace controller's fixed 5 s
# grace before the deletion it waits for (12 runs: a minute).
# The run namespace's own life (created, deleted, kept on failure) is
# proven by the stages around this one.
doctor_ns=rdmasuite-doctor-seeds

# Taints the stages put on the nodes (key, node), removed by undo.
staged_taints=(crater.raids.io/account:node-2 example.com/maintenance:node-2 example.com/reserved:node-2)

undo() {
  # The staged pods go; their namespaces stay until the end (an empty
  # namespace is nothing the doctor reads, and deleting it costs the
  # namespace controller's fixed 5 s grace at every stage).
  kc delete pods -A -l rdmasuite.io/bed-seed --force --grace-period=0 >/dev/null 2>&1 || true
  local t
  for t in "${staged_taints[@]}"; do
    kc taint node "${t#*:}" "${t%%:*}-" >/dev/null 2>&1 || true
  done
  kc uncordon node-1 >/dev/null 2>&1 || true
  kc label node node-2 network.nvidia.com/operator.mofed.wait=false --overwrite >/dev/null 2>&1 || true
  # Capacity and allocatable together, as the kubelet's next status sync
  # would compute them (no wait for that sync).
  kc patch node node-1 --subresource=status --type=merge \
    -p '{"status":{"capacity":{"rdma/rdma_shared_device_a":"63"},"allocatable":{"rdma/rdma_shared_device_a":"63"}}}' >/dev/null 2>&1 || true
  rm -rf "$BED_DIR/hostroots"
}
cleanup() {
  undo
  kc delete ns nvidia-network-operator nvidia-gpu-operator "$doctor_ns" --ignore-not-found --wait=false >/dev/null 2>&1 || true
  # The operators' namespaces are names later stages make again.
  kc wait --for=delete ns/nvidia-network-operator ns/nvidia-gpu-operator --timeout=60s >/dev/null 2>&1 || true
  kc delete crd nicclusterpolicies.mellanox.com --ignore-not-found >/dev/null 2>&1 || true
}
trap cleanup EXIT

doctor() { # expectation-file [suite flags]
  local name t exp=$1
  shift
  name=$(basename "$exp" .txt)
  t=$SECONDS
  (cd suites && "$out/suites.test" --kubeconfig="$BED_DIR/kubeconfig" --labels suite=doctor --namespace "$doctor_ns" \
    --report-dir="$out/$name" "$@" >"$out/$name.log" 2>&1) || true
  hack/tool.sh expectresults -results "$out/$name/results.json" -expect "$exp" ||
    { tail -30 "$out/$name.log"; exit 1; }
  echo "doctor on '$name': $((SECONDS - t)) s"
}

# evidence expectation-file check-id node text... : every text appears in the
# evidence of the check on the node (the report's Evidence section).
evidence() {
  local name ev s
  name=$(basename "$1" .txt)
  ev=$({ "$out/rdmasuite" report "$out/$name/results.json" --format markdown 2>/dev/null || true; } |
    awk -v h="### $2  ($3)" '$0 == h { f = 1; next } f && /^```/ { if (++n == 2) exit; next } f && n == 1')
  for s in "${@:4}"; do
    grep -qF -- "$s" <<<"$ev" || { printf '%s on %s: evidence lacks %q; it is:\n%s\n' "$2" "$3" "$s" "$ev"; exit 1; }
  done
}

wait_for() { # what tries jsonpath regex kubectl-get-args... (every 0.5 s)
  local what=$1 tries=$2 path=$3 want=$4
  shift 4
  for _ in $(seq 1 "$tries"); do
    [[ $(kc get "$@" -o "jsonpath=$path" 2>/dev/null) =~ $want ]] && return 0
    sleep 0.5
  done
  echo "$what: timed out"; kc get "$@" -o yaml | tail -40; return 1
}

wait_crashed() { # namespace pod: it restarted, and its crash is readable
  local _
  for _ in $(seq 1 120); do
    [[ $(kc -n "$1" get pod "$2" -o 'jsonpath={.status.containerStatuses[0].restartCount}' 2>/dev/null) -ge 1 ]] && break
    sleep 0.5
  done
  [[ $(kc -n "$1" get pod "$2" -o 'jsonpath={.status.containerStatuses[0].restartCount}' 2>/dev/null) -ge 1 ]] ||
    { echo "pod $1/$2 never restarted"; return 1; }
  # The staged failure is the crash's log line: stage it whole before the
  # doctor judges (right after a restart the kubelet may show neither the
  # dead container's log nor the new one's yet).
  local c
  c=$(kc -n "$1" get pod "$2" -o 'jsonpath={.status.containerStatuses[0].name}')
  for _ in $(seq 1 60); do
    [[ -n $(kc -n "$1" logs "$2" -c "$c" --previous 2>/dev/null)$(kc -n "$1" logs "$2" -c "$c" 2>/dev/null) ]] && return 0
    sleep 0.5
  done
  echo "pod $1/$2 restarted, but no log of it could be read for 30 s"; return 1
}

stage() { sed -e "s/NODE/$2/g" -e "s/IMAGE_TAG/$IMAGE_TAG/g" "hack/seeds/$1" | kc apply -f - >/dev/null; }

policy() {
  kc apply -f hack/seeds/nicclusterpolicy-crd.yaml >/dev/null
  kc wait --for=condition=Established crd/nicclusterpolicies.mellanox.com --timeout=30s >/dev/null
  kc apply -f hack/seeds/nicclusterpolicy.yaml >/dev/null
}

kc create ns "$doctor_ns" >/dev/null
kc label ns "$doctor_ns" pod-security.kubernetes.io/enforce=privileged >/dev/null
wait_for "namespace $doctor_ns's default ServiceAccount" 60 '{.metadata.name}' '^default$' -n "$doctor_ns" serviceaccount default

echo "== healthy bed"
doctor hack/seeds/expect-healthy.txt
# The API-only command on the same healthy bed, told what it cannot derive
# without a NicClusterPolicy: exit 0 (no policy is no finding), node rows doctor/node-api,
# and it says the host checks did not run and how to run them.
rc=0
"$out/rdmasuite" doctor --kubeconfig "$BED_DIR/kubeconfig" --network-operator=false --resources rdma/rdma_shared_device_a \
  -o "$out/api-doctor.json" >"$out/api-doctor.txt" 2>&1 || rc=$?
[[ $rc == 0 ]] && grep -q 'host checks did not run' "$out/api-doctor.txt" && grep -q '"doctor/node-api"' "$out/api-doctor.json" &&
  ! grep -q '"doctor/node"' "$out/api-doctor.json" ||
  { cat "$out/api-doctor.txt"; echo "rdmasuite doctor on the healthy bed: exit $rc, want 0 with doctor/node-api rows and the host-checks line"; exit 1; }
echo "rdmasuite doctor (API only) on the healthy bed: exit 0, doctor/node-api pass on both nodes, host checks named as not run"

echo "== seed 002: untolerated taint keeps mofed.wait=true on node-2"
policy
kc taint node node-2 crater.raids.io/account=exclusive:NoSchedule --overwrite >/dev/null
kc label node node-2 network.nvidia.com/operator.mofed.wait=true --overwrite >/dev/null
doctor hack/seeds/expect-002-taint.txt
undo

echo "== seed 000: MOFED crash-loops on storage modules on node-1"
stage 000-mofed-storage-modules.yaml node-1
wait_crashed nvidia-network-operator mofed-ubuntu22.04-ds-seed000
doctor hack/seeds/expect-000-storage.txt
undo

echo "== seeds 001/003: nvidia_peermem before MOFED on node-2, GPU Operator pods stuck in Init"
stage 001-peermem-race.yaml node-2
wait_crashed nvidia-gpu-operator nvidia-driver-daemonset-418.94.202510230424-0-seed1
doctor hack/seeds/expect-001-peermem.txt
undo

echo "== seed 002: node-1 stops advertising its RDMA resource"
# As the kubelet shows a device plugin that stopped advertising: capacity
# and allocatable 0 (its next status sync computes the same).
kc patch node node-1 --subresource=status --type=merge \
  -p '{"status":{"capacity":{"rdma/rdma_shared_device_a":"0"},"allocatable":{"rdma/rdma_shared_device_a":"0"}}}' >/dev/null
# The policy has no device-plugin config: the resource is named explicitly.
doctor hack/seeds/expect-002-allocatable.txt --preflight-resources=rdma/rdma_shared_device_a
undo

echo "== seed 002: a NoExecute-only taint on node-2 (no mofed.wait label)"
# node-2 is an RDMA node by its NFD label alone; undo puts mofed.wait=false back.
kc label node node-2 feature.node.kubernetes.io/pci-15b3.present=true network.nvidia.com/operator.mofed.wait- --overwrite >/dev/null
kc taint node node-2 example.com/maintenance=true:NoExecute --overwrite >/dev/null
doctor hack/seeds/expect-002-taint-noexecute.txt
evidence hack/seeds/expect-002-taint-noexecute.txt doctor/nicclusterpolicy-untolerated-taint node-2 \
  "taint example.com/maintenance=true:NoExecute" "tolerations: none"
undo

echo "== seed 002: node-2's MOFED DaemonSet pod Pending on an untolerated NoSchedule taint"
kc taint node node-2 example.com/reserved=team-a:NoSchedule --overwrite >/dev/null
stage 002-mofed-pending.yaml node-2
wait_for "MOFED pod unschedulable" 60 '{.status.conditions[?(@.type=="PodScheduled")].status}' '^False$' \
  -n nvidia-network-operator pod mofed-ubuntu22.04-ds-pending
doctor hack/seeds/expect-002-mofed-pending.txt
evidence hack/seeds/expect-002-mofed-pending.txt doctor/mofed-not-ready node-2 \
  "mofed-ubuntu22.04-ds-pending: Pending, not scheduled (Unschedulable:" "had untolerated taint"
evidence hack/seeds/expect-002-mofed-pending.txt doctor/nicclusterpolicy-untolerated-taint node-2 \
  "taint example.com/reserved=team-a:NoSchedule" "not scheduled"
undo

echo "== field: node-1 cordoned (its unschedulable taint is tolerated by DaemonSets)"
kc cordon node-1 >/dev/null
doctor hack/seeds/expect-field-cordoned.txt
undo

echo "== seeds 001/003: node-2's GPU driver pod waits in mofed-validation for .driver-ready"
stage 001-gpu-driver-waits-mofed.yaml node-2
wait_for "mofed-validation running" 120 '{.status.initContainerStatuses[0].state.running.startedAt}' . \
  -n nvidia-gpu-operator pod nvidia-gpu-driver-ubuntu22.04-7c9d8-seed11
doctor hack/seeds/expect-001-driver-waits-mofed.txt
evidence hack/seeds/expect-001-driver-waits-mofed.txt doctor/gpu-driver-waits-for-mofed node-2 \
  "nvidia-gpu-driver-ubuntu22.04-7c9d8-seed11: Init:0/1 (waiting in init container mofed-validation)" \
  "mofed-validation log: running command bash with args [-c stat /run/mellanox/drivers/.driver-ready]"
undo

echo "== seed 000 on the host: node-1's host root shows rpcrdma loaded before .driver-ready"
hack/seeds/hostroot.sh "$BED_DIR/hostroots/node-1" storage-modules
hack/seeds/hostroot.sh "$BED_DIR/hostroots/node-2" healthy
# The seed policy deploys MOFED but configures no device plugin, so the RDMA
# resource to expect is named here (without it node-2 is not-run: unknown).
doctor hack/seeds/expect-000-hostroot.txt --node-probe-host-path="$BED_DIR/hostroots/{node}" \
  --preflight-resources=rdma/rdma_shared_device_a
evidence hack/seeds/expect-000-hostroot.txt doctor/mofed-storage-modules node-1 \
  "host: storage modules loaded: rpcrdma, xprtrdma" "host: /run/mellanox/drivers/.driver-ready absent"
undo

echo "== host configuration: node-1's HCA trained at PCIe x8 of x16, a RoCE address without a v2 GID; node-2 healthy"
hack/seeds/hostroot.sh "$BED_DIR/hostroots/node-1" host-config
hack/seeds/hostroot.sh "$BED_DIR/hostroots/node-2" healthy
doctor hack/seeds/expect-field-hostcfg.txt --node-probe-host-path="$BED_DIR/hostroots/{node}" \
  --preflight-resources=rdma/rdma_shared_device_a
undo

echo "== seed 000's look-alike: host-installed MOFED with rpcrdma for NFS over RDMA on both nodes"
hack/seeds/hostroot.sh "$BED_DIR/hostroots/node-1" host-mofed
hack/seeds/hostroot.sh "$BED_DIR/hostroots/node-2" host-mofed
# The operator deploys the device plugins only (no spec.ofedDriver), no MOFED pod.
kc delete nicclusterpolicy nic-cluster-policy >/dev/null
kc apply -f hack/seeds/nicclusterpolicy-host-mofed.yaml >/dev/null
doctor hack/seeds/expect-000-host-mofed-policy.txt --node-probe-host-path="$BED_DIR/hostroots/{node}"
# No Network Operator at all, so no policy names the RDMA resource: the flag does.
kc delete crd nicclusterpolicies.mellanox.com --ignore-not-found >/dev/null
doctor hack/seeds/expect-000-host-mofed.txt --network-operator=false \
  --preflight-resources=rdma/rdma_shared_device_a,nvidia.com/gpu --node-probe-host-path="$BED_DIR/hostroots/{node}"
undo
echo "doctor: every staged seed state reported on the right node, nothing on the healthy one ($((SECONDS - t_all)) s)"
