#!/usr/bin/env bash
# selftest.sh NAME [PEER] — proves guest node NAME (hack/guestnode/up.sh NAME) works
# as an RDMA node, in a namespace of its own that it deletes afterwards:
#   1. a non-privileged pod requesting rdma/rdma_shared_device_a: 1 runs
#      `rdmaprobe devices` and lists rxe0 with an ACTIVE port; its log is read
#      with `kubectl logs` (the apiserver -> kubelet path through the relay);
#   2. a pod without the resource sees no verbs device (`rdmaprobe env`:
#      "rdmaDevices":[]);
#   3. two pods with the resource and IPC_LOCK run `rdmaprobe bw` server (on
#      NAME) and client (on PEER, another guest node, when given: RoCE v2
#      across the guest-to-guest link; else on NAME too), 64 KiB writes, and
#      the client reports non-zero bandwidth.
# Prints each check and the pod start latency (create -> Ready, bw server).
set -euo pipefail
# shellcheck source=lib.sh
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"

name=${1:-}
check_name "$name"
peer=${2:-$name}
check_name "$peer"
ns=gn-selftest-$name
img=rdmasuite/rdmaprobe:$IMAGE_TAG
fails=0
pass() { log "PASS $*"; }
fail() { log "FAIL $*"; fails=$((fails + 1)); }
now_ms() { echo $(($(date +%s%N) / 1000000)); }

for n in "$name" "$peer"; do kubectl get node "$n" >/dev/null || die "no node $n (hack/guestnode/up.sh $n)"; done
kubectl delete namespace "$ns" --wait=true --timeout=60s >/dev/null 2>&1 || true
kubectl create namespace "$ns" >/dev/null
trap 'kubectl delete namespace "$ns" --wait=false >/dev/null 2>&1 || true' EXIT

pod() { # name resource(0|1) ipc_lock(0|1) command-json-array [node]
  local res="" sec="" node=${5:-$name}
  (($2)) && res="resources: {limits: {$RESOURCE: 1}}"
  (($3)) && sec="securityContext: {capabilities: {add: [IPC_LOCK]}}"
  kubectl -n "$ns" apply -f - >/dev/null <<YAML
apiVersion: v1
kind: Pod
metadata: {name: $1, labels: {app.kubernetes.io/name: guestnode-selftest}}
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: 1
  nodeSelector: {kubernetes.io/hostname: $node}
  containers:
  - name: probe
    image: $img
    imagePullPolicy: IfNotPresent
    command: $4
    $res
    $sec
YAML
}
phase() { kubectl -n "$ns" get pod "$1" -o 'jsonpath={.status.phase}'; }
wait_done() { # pod seconds
  local deadline=$((SECONDS + $2)) p
  while :; do
    p=$(phase "$1" 2>/dev/null || true)
    [[ $p == Succeeded || $p == Failed ]] && return 0
    ((SECONDS < deadline)) || return 1
    sleep 0.5
  done
}

# 1 and 2 together.
pod devices 1 0 '[rdmaprobe, devices]'
pod nodev 0 0 '[rdmaprobe, env]'
if wait_done devices 120; then
  out=$(kubectl -n "$ns" logs devices 2>&1 || true)
  if grep -q '"name":"rxe0"' <<<"$out" && grep -q '"state":"ACTIVE"' <<<"$out"; then
    pass "pod with $RESOURCE: rdmaprobe devices lists rxe0, port ACTIVE (read with kubectl logs)"
  else
    fail "pod with $RESOURCE: rdmaprobe devices ($(phase devices)): $out"
  fi
else
  fail "pod with $RESOURCE did not finish in 120 s: $(kubectl -n "$ns" describe pod devices | tail -15)"
fi
if wait_done nodev 120; then
  out=$(kubectl -n "$ns" logs nodev 2>&1 || true)
  if grep -q '"rdmaDevices":\[\]' <<<"$out"; then
    pass "pod without $RESOURCE: no /dev/infiniband (rdmaDevices: [])"
  else
    fail "pod without $RESOURCE sees RDMA devices: $out"
  fi
else
  fail "pod without $RESOURCE did not finish in 120 s"
fi

# 3: bandwidth between two pods, on the node or from the peer node.
t=$(now_ms)
pod bw-server 1 1 '[rdmaprobe, bw, server, --device, rxe0]'
if kubectl -n "$ns" wait --for=condition=Ready pod/bw-server --timeout=120s >/dev/null; then
  start_ms=$(($(now_ms) - t))
  log "bw server pod: create -> Ready $start_ms ms"
  ip=$(kubectl -n "$ns" get pod bw-server -o 'jsonpath={.status.podIP}')
  pod bw-client 1 1 "[rdmaprobe, bw, client, --device, rxe0, --size, 64K, --iters, \"200\", --table, \"$ip\"]" "$peer"
  if wait_done bw-client 180; then
    out=$(kubectl -n "$ns" logs bw-client 2>&1 || true)
    avg=$(grep -o '"bwAvgGbps":[0-9.e+-]*' <<<"$out" | head -1 | cut -d: -f2)
    mbs=$(grep -o '"bwAvgMBps":[0-9.e+-]*' <<<"$out" | head -1 | cut -d: -f2)
    if [[ $(phase bw-client) == Succeeded ]] && awk -v a="${avg:-0}" 'BEGIN {exit !(a > 0)}'; then
      gid=$(grep -o '"gid":"[^"]*"' <<<"$out" | head -1)
      pass "rdmaprobe bw pod on $peer -> pod on $name over rxe0 ($gid), 64 KiB RDMA writes x 200: avg ${avg} Gb/s (${mbs} MB/s)"
    else
      fail "rdmaprobe bw client ($(phase bw-client)): $out"
    fi
  else
    fail "bw client did not finish in 180 s: $(kubectl -n "$ns" logs bw-client 2>&1 | tail -5)"
  fi
else
  fail "bw server pod not Ready in 120 s: $(kubectl -n "$ns" describe pod bw-server | tail -15)"
fi

if ((fails)); then
  log "$fails check(s) failed"
  exit 1
fi
log "all checks passed on $name"
