#!/usr/bin/env bash
# selftest.sh NAME [PEER] — proves guest node NAME (hack/guestnode/up.sh NAME) works
# as an RDMA node with every rail, in a namespace of its own that it deletes
# afterwards:
#   1. a non-privileged pod requesting rdma/rdma_shared_device_a: 1 runs
#      `rdmaprobe devices` and lists every rail's rxe device (rxe0, rxe1, ...
#      as hack/guestnode/rail.sh finds them in the guest) with an ACTIVE port;
#      its log is read with `kubectl logs` (the apiserver -> kubelet path
#      through the relay);
#   2. a pod without the resource (on PEER when given: the device plugin's
#      rule is every node's) sees no verbs device (`rdmaprobe env`:
#      "rdmaDevices":[]);
#   3. per rail rxeN: two pods with the resource and IPC_LOCK run `rdmaprobe
#      bw` server (on NAME, --device rxeN) and client (on PEER, another guest
#      node, when given: RoCE v2 across rail N; else on NAME too), 64 KiB
#      writes, and the client reports non-zero bandwidth.
#   One server pod and one client pod measure every rail in turn (the
#   probe's default: every device the pod sees, rail i to rail i): a pod
#   start under TCG costs more than a measurement.
# SELFTEST_BW=0 skips 3 (for a caller whose own run measures every rail
# between the guests right after).
# With SELFTEST_DOWN_RAIL=rxeN (needs PEER): 4. rail.sh sets rxeN's link down
# on NAME (port DOWN), the bandwidth test on rxeN fails while every other rail
# still measures; 5. rail.sh brings it back up and rxeN measures again.
# Prints each check and the pod start latency (create -> Ready, bw server).
# SELFTEST_POD_TIMEOUT (seconds, 240) bounds each pod's start and run.
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
kubectl delete namespace "$ns" --wait=false >/dev/null 2>&1 || true
deadline=$((SECONDS + 120))
while kubectl get namespace "$ns" >/dev/null 2>&1; do
  ((SECONDS < deadline)) || die "namespace $ns (an earlier run's) still terminating after 120 s"
  sleep 1
done
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
# Polled, not `kubectl wait`: lib.sh bounds every kubectl call to 30 s, and
# under TCG on a busy host a pod can take minutes to start.
wait_done() { # pod seconds
  local deadline=$((SECONDS + $2)) p
  while :; do
    p=$(phase "$1" 2>/dev/null || true)
    [[ $p == Succeeded || $p == Failed ]] && return 0
    ((SECONDS < deadline)) || return 1
    sleep 0.5
  done
}
wait_ready() { # pod seconds
  local deadline=$((SECONDS + $2))
  until [[ $(kubectl -n "$ns" get pod "$1" -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null) == True ]]; do
    ((SECONDS < deadline)) || return 1
    sleep 0.5
  done
}
# How long a pod may take to start and finish (SELFTEST_POD_TIMEOUT seconds).
pt=${SELFTEST_POD_TIMEOUT:-240}
# bw_server NAME SELECT: a bw server pod on NAME; it waits for its client
# up to twice the pod timeout (the early one, below, waits for the device
# checks too).
bw_server() { pod "$1" 1 1 "[rdmaprobe, bw, server, $2--timeout, $((2 * pt + 60))s]"; }

# The rails, from the guest itself (the control channel: rail.sh).
rails=$("$here/rail.sh" "$name" | awk '{print $1}' | tr '\n' ' ') || die "rail.sh $name: cannot read the guest's rails"
[[ -n $rails ]] || die "$name has no rxe device"
log "rails on $name: $rails"

# 1 and 2 together, and the every-rail bandwidth server of 3 beside them,
# so that it is Ready when they end; the pod without the resource goes to
# the peer (the device plugin's rule is the same on every node), whose one
# vCPU would otherwise wait (under TCG a pod start is CPU work,
# and pods started together on one vCPU only queue).
pod devices 1 0 '[rdmaprobe, devices]'
pod nodev 0 0 '[rdmaprobe, env]' "$peer"
bw_early=
if [[ ${SELFTEST_BW:-1} != 0 ]]; then
  bw_early=bw-server-all
  bw_server "$bw_early" ""
fi
if wait_done devices "$pt"; then
  out=$(kubectl -n "$ns" logs devices 2>&1 || true)
  missing=
  for r in $rails; do grep -q "\"name\":\"$r\"" <<<"$out" || missing+=" $r"; done
  active=$(grep -o '"state":"ACTIVE"' <<<"$out" | wc -l)
  if [[ -z $missing ]] && ((active >= $(wc -w <<<"$rails"))); then
    pass "pod with $RESOURCE: rdmaprobe devices lists ${rails% } ($active ports ACTIVE; read with kubectl logs)"
  else
    fail "pod with $RESOURCE: rdmaprobe devices ($(phase devices)) misses${missing:- no device} or has only $active ACTIVE ports: $out"
  fi
else
  fail "pod with $RESOURCE did not finish in $pt s: $(kubectl -n "$ns" describe pod devices | tail -15)"
fi
if wait_done nodev "$pt"; then
  out=$(kubectl -n "$ns" logs nodev 2>&1 || true)
  if grep -q '"rdmaDevices":\[\]' <<<"$out"; then
    pass "pod without $RESOURCE: no /dev/infiniband (rdmaDevices: [])"
  else
    fail "pod without $RESOURCE sees RDMA devices: $out"
  fi
else
  fail "pod without $RESOURCE did not finish in $pt s"
fi

# 3: bandwidth between two pods on each rail, on the node or from the peer node.
# bw_pods SRV CLI SELECT WHAT: a bw server pod SRV on NAME and, once it is
# Ready, a client pod CLI on PEER against its IP (64 KiB writes x 200,
# --table); SELECT is the probe's device flags for both ("--device, rxeN, "
# or empty: every rail). Sets out (the client's log), p (its phase) and t
# (when the client was created, ms); fails the check WHAT and returns 1 when
# a pod does not start or finish in time.
bw_pods() {
  local srv=$1 cli=$2 sel=$3 what=$4 ip
  t=$(now_ms)
  [[ $srv == "$bw_early" ]] || bw_server "$srv" "$sel"
  if ! wait_ready "$srv" "$pt"; then
    fail "$what: bw server pod not Ready in $pt s: $(kubectl -n "$ns" describe pod "$srv" | tail -15)"
    return 1
  fi
  if [[ $srv == "$bw_early" ]]; then
    log "$what: bw server pod (created beside the device checks) Ready $(($(now_ms) - t)) ms after they ended"
  else
    log "$what: bw server pod create -> Ready $(($(now_ms) - t)) ms"
  fi
  ip=$(kubectl -n "$ns" get pod "$srv" -o 'jsonpath={.status.podIP}')
  t=$(now_ms)
  pod "$cli" 1 1 "[rdmaprobe, bw, client, $sel--size, 64K, --iters, \"200\", --table, \"$ip\"]" "$peer"
  if ! wait_done "$cli" "$pt"; then
    fail "$what: bw client did not finish in $pt s: $(kubectl -n "$ns" logs "$cli" 2>&1 | tail -5)"
    return 1
  fi
  out=$(kubectl -n "$ns" logs "$cli" 2>&1 || true)
  p=$(phase "$cli" || true)
}
# bw_rail DEV want(pass|fail) tag: server pod on NAME, client pod on PEER,
# both on DEV; "fail" expects the client to fail (a rail staged down).
bw_rail() {
  local dev=$1 want=$2 tag=$3 t out avg mbs gid p
  local srv=bw-server-$dev-$tag cli=bw-client-$dev-$tag
  bw_pods "$srv" "$cli" "--device, $dev, " "$dev" || return 0
  avg=$(grep -o '"bwAvgGbps":[0-9.e+-]*' <<<"$out" | head -1 | cut -d: -f2 || true)
  mbs=$(grep -o '"bwAvgMBps":[0-9.e+-]*' <<<"$out" | head -1 | cut -d: -f2 || true)
  gid=$(grep -o '"gid":"[^"]*"' <<<"$out" | head -1 || true)
  local ok=0
  [[ $p == Succeeded ]] && awk -v a="${avg:-0}" 'BEGIN {exit !(a > 0)}' && ok=1
  if [[ $want == pass ]]; then
    if ((ok)); then
      pass "$dev: rdmaprobe bw pod on $peer -> pod on $name ($gid), 64 KiB RDMA writes x 200: avg ${avg} Gb/s (${mbs} MB/s), client $(($(now_ms) - t)) ms"
    else
      fail "$dev: rdmaprobe bw client ($p): $out"
    fi
  else
    if ((ok)); then
      fail "$dev is staged down on $name but the bandwidth test passed: avg ${avg} Gb/s"
    else
      pass "$dev staged down on $name: the bandwidth test fails as it must ($p after $(($(now_ms) - t)) ms): $(tr -d '\n' <<<"$out" | cut -c1-300)"
    fi
  fi
  kubectl -n "$ns" delete pod "$srv" "$cli" --wait=false --grace-period=0 --force >/dev/null 2>&1 || true
}
# bw_all: one pod pair, every rail in turn; each rail must show a
# non-zero average in the probe's per-rail table (--table, on stderr, which
# kubectl logs returns with stdout).
bw_all() {
  local srv=bw-server-all cli=bw-client-all t out p r avg
  bw_pods "$srv" "$cli" "" "every rail" || return 0
  for r in $rails; do
    # The row under this rail's table header: " 65536  200  peak  avg  rate".
    avg=$(awk -v d="$r" '$0 ~ "BW \\(rdmaprobe\\) +device " d " port" {f = 1; next} f && $1 ~ /^[0-9]+$/ {print $4; exit}' <<<"$out")
    # Per rail, not the pod's phase: a client with one rail down exits
    # non-zero and still measured the others.
    if awk -v a="${avg:-0}" 'BEGIN {exit !(a > 0)}'; then
      pass "$r: rdmaprobe bw pod on $peer -> pod on $name, 64 KiB RDMA writes x 200: avg ${avg} Gb/s (client pod, every rail: $(($(now_ms) - t)) ms)"
    else
      fail "$r: no bandwidth measured on this rail (client $p): $(tr -d '\n' <<<"$out" | cut -c1-600)"
    fi
  done
  [[ $p == Succeeded ]] || log "bw client (every rail) ended $p: $(tr -d '\n' <<<"$out" | cut -c1-300)"
  kubectl -n "$ns" delete pod "$srv" "$cli" --wait=false --grace-period=0 --force >/dev/null 2>&1 || true
}
if [[ ${SELFTEST_BW:-1} != 0 ]]; then
  bw_all
else
  log "bandwidth per rail left to the caller (SELFTEST_BW=0)"
fi

down=${SELFTEST_DOWN_RAIL:-}
if [[ -n $down ]]; then
  [[ $peer != "$name" ]] || die "SELFTEST_DOWN_RAIL needs a PEER node"
  [[ " $rails " == *" $down "* ]] || die "SELFTEST_DOWN_RAIL=$down is not a rail of $name ($rails)"
  trap '"$here/rail.sh" "$name" "$down" up >/dev/null 2>&1 || true; kubectl delete namespace "$ns" --wait=false >/dev/null 2>&1 || true' EXIT
  if out=$("$here/rail.sh" "$name" "$down" down) && grep -q "^$down .*port=DOWN" <<<"$out"; then
    pass "rail.sh $name $down down: $(grep "^$down " <<<"$out")"
    for r in $rails; do
      if [[ $r == "$down" ]]; then bw_rail "$r" fail down; else bw_rail "$r" pass down; fi
    done
  else
    fail "rail.sh $name $down down: $out"
  fi
  if out=$("$here/rail.sh" "$name" "$down" up) && grep -q "^$down .*port=ACTIVE" <<<"$out"; then
    pass "rail.sh $name $down up: $(grep "^$down " <<<"$out")"
    bw_rail "$down" pass up
  else
    fail "rail.sh $name $down up: $out"
  fi
fi

if ((fails)); then
  log "$fails check(s) failed"
  exit 1
fi
log "all checks passed on $name"
