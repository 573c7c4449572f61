#!/usr/bin/env bash
# Faults in the middle of a run, injected for real on the bed: the
# bandwidth feature between the two Soft-RoCE guest nodes (shared-dev, node
# pods, runs over pods/exec, a same-node pair per node), and while it
# measures, one of:
#   none               no fault: the time the others compare with
#   pod-deleted        a probe pod deleted (kubectl delete) mid-measurement
#   drain              a guest node cordoned and drained (kubectl drain,
#                      the Eviction API) mid-run, uncordoned after
#   apiserver-restart  the API server stopped for FAULT_API_DOWN (15) s and
#                      started again, mid-round (hack/bed.sh apiserver-restart)
#   network-block      the runner's packets to the API server dropped for
#                      FAULT_BLOCK (20) s (iptables, matched on the runner's
#                      group only: the kubelets keep their connections)
#   sigkill            the runner killed with SIGKILL mid-run; then
#                      `rdmasuite cleanup --run ID` on what it left
#   incluster-evicted  the in-cluster runner pod (rdmasuite run --wait=false)
#                      evicted through the Eviction API mid-run; then
#                      `rdmasuite results --delete`
# Each fault's run must: end within its deadline, exit with its results'
# verdict (never 0 when something was not measured), name the fault in the
# rows it affected, and leave nothing (or, after SIGKILL, a results file
# marked unfinished, and nothing once cleanup ran). One line per fault in
# $FAULT_DIR/faults.tsv: fault, injected at, wall s, exit, statuses, what
# the affected rows say, left behind. Exits non-zero when a fault's run
# broke one of those rules.
#
# Env: FAULTS (all, in the order above), FAULT_DIR (./fault-results),
# FAULT_BED_UP=1 (a bed with the guests is already up: use it and leave it
# up), SUITE_BIN (a compiled suite; default: built here).
set -euo pipefail
cd "$(dirname "$0")/.."
. hack/versions.sh
. hack/guest-suite-args.sh
export BED_DIR BED_GUEST_NODES=${BED_GUEST_NODES-rxe-node-1 rxe-node-2}
FAULTS=${FAULTS:-none pod-deleted drain apiserver-restart network-block sigkill incluster-evicted}
out=${FAULT_DIR:-$PWD/fault-results}
API_DOWN=${FAULT_API_DOWN:-15}
BLOCK=${FAULT_BLOCK:-20}
RUNNER_GID=4242 # the group the network-block fault's runner runs as
victim=rxe-node-2
mkdir -p "$out"
kc() { "$K8S_BIN_DIR/kubectl" --kubeconfig "$BED_DIR/kubeconfig" "$@"; }
iptables_rule=(OUTPUT -p tcp --dport 6443 -m owner --gid-owner "$RUNNER_GID" -j DROP)
cleanup() {
  iptables -D "${iptables_rule[@]}" 2>/dev/null || true
  kc uncordon "$victim" >/dev/null 2>&1 || true
  [[ -n ${FAULT_BED_UP:-} ]] || hack/bed.sh down
}
trap cleanup EXIT
trap 'exit 130' INT TERM

if [[ -z ${FAULT_BED_UP:-} ]]; then hack/bed.sh up; fi
if [[ -n ${SUITE_BIN:-} ]]; then cp "$SUITE_BIN" "$out/suites.test"; else go test -c -o "$out/suites.test" ./suites; fi
go build -o "$out/rdmasuite" ./cmd/rdmasuite

# start NAME [PREFIX...]: the bandwidth feature in the background (PREFIX
# runs the suite, e.g. setpriv), its output in $out/NAME.log.
start() {
  local name=$1
  shift
  rm -rf "${out:?}/$name"
  mkdir -p "$out/$name"
  t_start=$SECONDS
  (cd suites && exec "$@" "$out/suites.test" -test.timeout=12m -test.run 'TestBandwidth$' --kubeconfig="$BED_DIR/kubeconfig" \
    --labels suite=rdma --report-dir="$out/$name" "${GUEST_SUITE_ARGS[@]}" --variants shared-dev) >"$out/$name.log" 2>&1 &
  suite_pid=$!
}
# await NAME REGEX SECONDS: until the run's progress log has a line
# matching REGEX (the fault goes in then).
await() {
  local deadline=$((SECONDS + $3)) f
  while ((SECONDS < deadline)); do
    f=$(compgen -G "$out/$1/progress-*.log" | head -1 || true)
    if [[ -n $f ]] && grep -Eq "$2" "$f"; then return 0; fi
    kill -0 "$suite_pid" 2>/dev/null || { echo "fault-test: the $1 run ended before /$2/"; return 1; }
    sleep 0.5
  done
  echo "fault-test: no /$2/ in the $1 run's progress after $3 s"
  return 1
}
run_id() { sed -n 's/.*, run \([0-9a-f]*\), namespace.*/\1/p' "$out/$1.log" | head -1 || true; }
node_pod() { # RUN NODE: the run's probe pod on NODE (the main one, -n-)
  kc get pods -n "rdmasuite-$1" -l "rdmasuite.io/run=$1" --field-selector "spec.nodeName=$2" -o name 2>/dev/null | grep -- '-n-' | head -1 || true
}
left() { # RUN: what of the run is still in the cluster
  local pods ns
  pods=$({ kc get pods -A -l "rdmasuite.io/run=$1" --no-headers 2>/dev/null || true; } | wc -l)
  ns=$({ kc get ns "rdmasuite-$1" --no-headers 2>/dev/null || true; } | wc -l)
  echo "pods=$pods namespace=$ns"
}
bad=0
printf 'fault\tinjected\twall s\texit\tstatuses\taffected rows say\tleft behind\n' >"$out/faults.tsv"
# finish NAME FAULT-REGEX WHEN [recoverable]: waits for the run, checks the
# rules, adds its line. A recoverable fault (the API server back, the
# network back) may leave a run that measured everything: then exit 0 with
# every row passed is right; anything else must name the fault.
finish() {
  local name=$1 want=$2 when=$3 recoverable=${4:-} rc=0 id statuses says lefto
  wait "$suite_pid" || rc=$?
  local wall=$((SECONDS - t_start))
  id=$(run_id "$name")
  local res=$out/$name/results.json
  statuses=$(jq -r '[.checks[].status] | group_by(.) | map("\(.[0])=\(length)") | join(" ")' "$res" 2>/dev/null || echo "no results")
  says=$(jq -r --arg re "$want" '[.checks[] | select((.reason // "") | test($re)) | "\(.status): \(.reason)"] | .[0] // "none"' "$res" 2>/dev/null | cut -c1-300)
  sleep 2
  lefto=$(left "$id")
  local why=() allpass
  allpass=$(jq -r '[.checks[].status] | all(. == "pass" or . == "warn")' "$res" 2>/dev/null || echo false)
  [[ -f $res ]] || why+=("no results file")
  if [[ -n $recoverable && $rc -eq 0 && $allpass == true ]]; then
    says="recovered: every row measured and passed"
  else
    [[ $rc -ne 0 ]] || why+=("exit 0 after a fault")
    [[ $says != none ]] || why+=("no row names the fault (/$want/)")
  fi
  [[ $allpass != true || $rc -eq 0 ]] || why+=("every row passed, exit $rc")
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$when" "$wall" "$rc" "$statuses" "$says" "$lefto" >>"$out/faults.tsv"
  echo "fault-test: $name: run $id exit $rc in ${wall}s; $statuses; $lefto"
  echo "  affected: $says"
  [[ $lefto == "pods=0 namespace=0" ]] || why+=("left behind: $lefto")
  if ((${#why[@]})); then
    echo "fault-test: FAIL $name: ${why[*]}"
    bad=$((bad + 1))
  else
    echo "fault-test: PASS $name"
  fi
}

# The rounds have begun once the node pods run; a TCG pair then takes
# seconds, so 3 s in is the middle of the first round's measurement.
started='node pods \[shared-dev\]: [0-9]+ of [0-9]+ running'
for fault in $FAULTS; do
  echo "=== fault: $fault"
  case $fault in
  none)
    # The same run without a fault: the time the others compare with.
    start "$fault"
    wait "$suite_pid" && rc=0 || rc=$?
    res=$out/$fault/results.json
    statuses=$(jq -r '[.checks[].status] | group_by(.) | map("\(.[0])=\(length)") | join(" ")' "$res" 2>/dev/null || echo "no results")
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$fault" "-" "$((SECONDS - t_start))" "$rc" "$statuses" "-" "$(left "$(run_id "$fault")")" >>"$out/faults.tsv"
    echo "fault-test: none: exit $rc in $((SECONDS - t_start))s; $statuses"
    [[ $rc -eq 0 ]] || { echo "fault-test: FAIL none: the run without a fault did not pass"; bad=$((bad + 1)); }
    ;;
  pod-deleted)
    start "$fault"
    await "$fault" "$started" 300
    sleep 3
    id=$(run_id "$fault")
    pod=$(node_pod "$id" "$victim")
    kc delete -n "rdmasuite-$id" "$pod" --wait=false
    finish "$fault" "deleted" "$pod deleted 3 s into round 1"
    ;;
  drain)
    start "$fault"
    await "$fault" "$started" 300
    sleep 3
    id=$(run_id "$fault")
    # --force: the probe pods have no controller (kubectl drain refuses
    # such pods without it); the Eviction API is used all the same.
    kc drain "$victim" --pod-selector "rdmasuite.io/run=$id" --ignore-daemonsets --delete-emptydir-data --force --timeout 90s >"$out/$fault-drain.log" 2>&1 || true
    sed 's/^/  drain: /' "$out/$fault-drain.log" | head -5
    finish "$fault" "evicted through the Eviction API|cordoned" "kubectl drain $victim 3 s into round 1"
    kc uncordon "$victim" >/dev/null
    ;;
  apiserver-restart)
    start "$fault"
    await "$fault" "$started" 300
    sleep 3
    hack/bed.sh apiserver-restart "$API_DOWN"
    finish "$fault" "exec|connection|API|stream|refused|EOF" "API server down ${API_DOWN} s from 3 s into round 1" recoverable
    ;;
  network-block)
    start "$fault" setpriv --egid="$RUNNER_GID" --clear-groups
    await "$fault" "$started" 300
    sleep 3
    iptables -I "${iptables_rule[@]}"
    sleep "$BLOCK"
    iptables -D "${iptables_rule[@]}"
    finish "$fault" "exec|connection|API|stream|timeout|i/o" "runner→API packets dropped ${BLOCK} s from 3 s into round 1" recoverable
    ;;
  sigkill)
    start "$fault"
    await "$fault" "$started" 300
    sleep 3
    id=$(run_id "$fault")
    kill -KILL "$suite_pid"
    wait "$suite_pid" 2>/dev/null || true
    wall=$((SECONDS - t_start))
    res=$out/$fault/results.json
    unfinished=$(jq -r '[.checks[] | select(.id == "run/incomplete") | .reason] | .[0] // "none"' "$res" 2>/dev/null | cut -c1-200)
    before=$(left "$id")
    "$out/rdmasuite" cleanup --kubeconfig "$BED_DIR/kubeconfig" --run "$id" >"$out/$fault-cleanup.log" 2>&1 || true
    after=$(left "$id")
    progress=$(compgen -G "$out/$fault/progress-*.log" | wc -l || true)
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$fault" "SIGKILL 3 s into round 1" "$wall" 137 "progress logs=$progress" "$unfinished" "before cleanup: $before; after: $after" >>"$out/faults.tsv"
    echo "fault-test: sigkill: run $id; results: $unfinished; before cleanup $before; after $after"
    if [[ $unfinished == none || $progress -eq 0 || $after != "pods=0 namespace=0" ]]; then
      echo "fault-test: FAIL sigkill"
      bad=$((bad + 1))
    else
      echo "fault-test: PASS sigkill"
    fi
    ;;
  incluster-evicted)
    # The in-cluster runner (rdmasuite run --wait=false: the acceptance
    # Job) evicted through the Eviction API while its doctor probe pods
    # sample for 60 s; then rdmasuite results, as an operator fetches it.
    t_start=$SECONDS
    runjob=("$out/rdmasuite" run --kubeconfig "$BED_DIR/kubeconfig" --image docker.io/rdmasuite/rdmasuite-runner:dev --timeout 30m
      --runner-node-selector kubernetes.io/hostname=node-1 --runner-env KUBERNETES_SERVICE_HOST=10.250.0.1,KUBERNETES_SERVICE_PORT=6443)
    "${runjob[@]}" --wait=false -- --labels suite=doctor --node-probe-window 60s >"$out/$fault-run.log" 2>&1
    job=$(sed -n 's/.*rdmasuite results --namespace rdmasuite --job \([^ ]*\) --delete.*/\1/p' "$out/$fault-run.log")
    for _ in $(seq 1 240); do
      [[ -n $(kc get pods -n rdmasuite -l app.kubernetes.io/managed-by=rdmasuite -o name 2>/dev/null || true) ]] && break
      sleep 0.5
    done
    runner=$(kc get pods -n rdmasuite -l "job-name=$job" -o jsonpath='{.items[0].metadata.name}')
    printf '{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"%s","namespace":"rdmasuite"}}' "$runner" >"$out/eviction.json"
    kc create --raw "/api/v1/namespaces/rdmasuite/pods/$runner/eviction" -f "$out/eviction.json" >/dev/null
    rc=0
    "$out/rdmasuite" results --kubeconfig "$BED_DIR/kubeconfig" --namespace rdmasuite --job "$job" --delete --report-dir "$out/$fault" >"$out/$fault.log" 2>&1 || rc=$?
    wall=$((SECONDS - t_start))
    # The eviction named: by the runner itself (its pod's record, in the
    # unfinished feature's row) or by rdmasuite results (the pod's record
    # when it is still there).
    says=$(jq -r '[.checks[] | select((.reason // "") | test("evicted through the Eviction API")) | .reason] | .[0] // ""' "$out/$fault/results.json" 2>/dev/null | cut -c1-300 || true)
    [[ -n $says ]] || says=$(grep -o 'the runner was stopped from outside: its pod [^;]*\|the runner did not finish: its pod [^;]*' "$out/$fault.log" | head -1 | cut -c1-250 || true)
    incomplete=$(jq -r '[.checks[] | select(.id == "run/incomplete" or ((.reason // "") | test("when the run stopped"))) | .reason] | .[0] // "none"' "$out/$fault/results.json" 2>/dev/null | cut -c1-120 || echo none)
    lefto=$(kc get ns,pods,jobs -A -l app.kubernetes.io/part-of=rdmasuite -o name 2>/dev/null | wc -l || true)
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$fault" "Eviction API on runner pod $runner" "$wall" "$rc" "run/incomplete: $incomplete" "${says:-none}" "objects=$lefto" >>"$out/faults.tsv"
    echo "fault-test: incluster-evicted: rdmasuite results exit $rc in ${wall}s; ${says:-no eviction named}; incomplete: $incomplete; left $lefto"
    if [[ $rc -eq 0 || -z $says || $incomplete == none || $lefto -ne 0 ]]; then
      echo "fault-test: FAIL incluster-evicted"
      tail -20 "$out/$fault.log"
      bad=$((bad + 1))
    else
      echo "fault-test: PASS incluster-evicted"
    fi
    ;;
  *)
    echo "fault-test: unknown fault $fault" >&2
    exit 2
    ;;
  esac
done
column -t -s $'\t' "$out/faults.tsv" || cat "$out/faults.tsv"
echo "fault-test: $bad fault run(s) broke a rule"
exit "$bad"
