#!/usr/bin/env bash
# The README's test command (`make test`), also what CI runs: installs what the
# beds need, checks formatting and vet, runs the unit tests, brings the local
# Kubernetes bed up, runs the suite against it, and tears the bed down, also
# when anything fails. Prints the bed timings it measured.
set -euo pipefail
cd "$(dirname "$0")/.."
. hack/versions.sh
export BED_DIR
# Pure Go everywhere but where libibverbs is linked (the Makefile's
# CGO_PKGS; hack/verbs-test.sh and `make rdmaprobe` set CGO_ENABLED=1): the
# suite binary, the CLI and the hack tools then share one compile of
# client-go and the rest with lint, the unit tests and the images (cgo on
# compiles net and everything above it twice on a cold cache).
export CGO_ENABLED=0
t_start=$SECONDS
step() { printf '\n=== %s\n' "$*"; stage="$*"; }
# timed_in_background LOG KEY CMD [ARG]...: runs CMD in its own session (so
# that a failing make test can stop it, guests and all), its output and a
# last KEY=seconds line in LOG, its exit status its own; bg_pid is its pid.
timed_in_background() {
  local log=$1 key=$2
  shift 2
  setsid bash -c 't=$SECONDS rc=0; "${@:2}" || rc=$?; echo "$1=$((SECONDS - t))"; exit $rc' _ "$key" "$@" >"$log" 2>&1 &
  bg_pid=$!
}
# expect_rc N CMD...: CMD must exit N (the README's exit-code table).
expect_rc() {
  local want=$1 rc=0
  shift
  "$@" || rc=$?
  [[ $rc == "$want" ]] || { echo "exit $rc from: $*; want $want"; exit 1; }
}

step "dependencies"
hack/install-deps.sh

# Kubernetes builds beside lint and the unit tests: on an empty
# cache it downloads and compiles for minutes while they compile too, and
# each leaves the other's idle moments (module downloads, single-threaded
# links, test runs) to fill; on a warm cache it is done at once. Its own
# session, so that a failing make test stops it.
k8s_log=$(mktemp "${TMPDIR:-/tmp}/rdmasuite-k8s.XXXXXX")
timed_in_background "$k8s_log" K8S_SECONDS hack/build-k8s.sh
k8s_pid=$bg_pid
trap 'kill -TERM -- "-$k8s_pid" 2>/dev/null || true' EXIT
trap 'exit 130' INT TERM

step "lint (gofmt, go vet)"
make -s lint

step "unit tests"
# go vet ran in full above: go test's own vet pass would type-check every
# package a second time.
make -s unit VET=off

step "Kubernetes binaries ($K8S_VERSION; etcd $ETCD_SERIES from Debian $ETCD_DEBIAN_SUITE), built beside lint and the unit tests"
t=$SECONDS
rc=0
wait "$k8s_pid" || rc=$?
trap - EXIT
out=$(grep -v '^K8S_SECONDS=' "$k8s_log")
((rc == 0)) || { echo "$out"; echo "building Kubernetes failed (exit $rc)"; exit 1; }
build_s=$(sed -n 's/^K8S_SECONDS=//p' "$k8s_log")
# A run that builds Kubernetes started from an empty bed cache: it is
# judged against the cold budget, any other against the warm one.
if grep -q 'building' <<<"$out"; then
  build_note="built in ${build_s} s (cold) beside lint and the unit tests; waited $((SECONDS - t)) s for it here"; run_kind=cold
else build_note="cached in $RDMASUITE_CACHE"; run_kind=warm; fi
echo "binaries: $build_note"
# The guest nodes' image, their upstream CNIs and CoreDNS (cached by
# version; minutes on a cold cache, nothing on a warm one) build in the
# background while the host-node stages below wait on pods; the guest
# bring-up waits for them.
prebuild_log=$(mktemp "${TMPDIR:-/tmp}/rdmasuite-prebuild.XXXXXX")
(hack/guestnode/build.sh && hack/guestnode/upstream.sh && hack/guestnode/coredns.sh; rc=$?; echo "PREBUILD_RC=$rc"; exit $rc) >"$prebuild_log" 2>&1 &
prebuild_pid=$!
t_prebuild=$SECONDS
# The verbs tests boot their own one-vCPU Soft-RoCE guest; they run beside
# the host-node stages below, which mostly wait on the API server and
# pods, and are waited for (their output printed then) before the guest
# nodes boot (about 100 s off a warm run).
verbs_log=$(mktemp "${TMPDIR:-/tmp}/rdmasuite-verbs-log.XXXXXX")
# Its own session, so that a failing make test stops its guest too.
timed_in_background "$verbs_log" VERBS_SECONDS hack/verbs-test.sh
verbs_pid=$bg_pid
echo "verbs tests on a real verbs device (Soft-RoCE guest): started in the background, log $verbs_log"

cleanup() {
  rc=$?
  kill -TERM -- "-$verbs_pid" 2>/dev/null || true
  [[ -z ${guestboot_pid:-} ]] || kill -TERM -- "-$guestboot_pid" 2>/dev/null || true
  [[ -z ${html_pid:-} ]] || kill -TERM -- "-$html_pid" 2>/dev/null || true
  # Guest node logs (console, kubelet, containerd, plugin) outlive a failure:
  # bed down removes their directories.
  if ((rc)) && [[ -n ${results:-} ]] && compgen -G "$BED_DIR/guestnodes/*/*.log" >/dev/null; then
    for g in "$BED_DIR"/guestnodes/*/; do
      mkdir -p "$results/guestnodes/$(basename "$g")"
      cp -a "$g"*.log "$results/guestnodes/$(basename "$g")/" 2>/dev/null || true
    done
    echo "guest node logs kept in $results/guestnodes"
  fi
  hack/bed.sh down || true
  # Why, last: CI shows only the log's tail, and what a failed stage
  # printed (a suite log's tail, bed down) pushes its reason out of it.
  if ((rc)); then
    echo "=== make test FAILED (exit $rc) in stage: ${stage:-before the first}"
    [[ -z ${results:-} || ! -s $results/why ]] || head -c 4000 "$results/why"
  fi
  exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# One compiled suite for every stage (hack/*-test.sh take it as
# SUITE_BIN): `go test ./suites` links the suite anew on every call, ten
# seconds each on a loaded 2-core machine.
results=$(mktemp -d "${TMPDIR:-/tmp}/rdmasuite-results.XXXXXX")
# hack/tools/expectresults appends what an expectation table did not
# find to this file; cleanup prints it as the run's last lines.
export RDMASUITE_WHY_FILE=$results/why
go test -c -o "$results/suites.test" ./suites
export SUITE_BIN=$results/suites.test
# suite ARGS...: the compiled suite, run from suites/ as go test would.
suite() { (cd suites && exec "$SUITE_BIN" "$@"); }
# follow DIR / unfollow: stream a run's progress log (DIR/progress.log,
# internal/progress) into make test's output while the suite runs, so a
# long guest stage is not silent in the CI log.
follow() {
  mkdir -p "$1"
  tail -n +1 -F "$1/progress.log" 2>/dev/null > >(sed -u 's/^/  | /') &
  follow_pid=$!
}
unfollow() { kill "$follow_pid" 2>/dev/null || true; wait "$follow_pid" 2>/dev/null || true; }
# await_background PID LOG KEY WHAT: waits for a job started beside the
# stages, prints its log but its last KEY=seconds line, fails make test if
# it failed, and sets background_s to those seconds.
await_background() {
  local rc=0
  wait "$1" || rc=$?
  grep -v "^$3=" "$2" || true
  ((rc == 0)) || { echo "$4 failed (exit $rc)"; exit 1; }
  background_s=$(sed -n "s/^$3=//p" "$2")
}

step "bed up"
t=$SECONDS
hack/bed.sh up
up1_s=$((SECONDS - t))

step "a second bed-up while one runs is refused"
if msg=$(hack/bed.sh up 2>&1); then echo "second bed-up succeeded: $msg"; exit 1; fi
grep -q 'already running' <<<"$msg" || { echo "unexpected refusal message: $msg"; exit 1; }
echo "refused: $(tail -1 <<<"$msg")"

# The guest nodes boot beside the host-node stages below, held before
# their kubelets (hack/bed.sh guests-boot): rails, images and the NFS
# server are up when those stages end, and the guests then only join
# in seconds. They boot once the verbs tests' two-vCPU guest is done, so
# no more than two emulated vCPUs share this machine's cores, and once the
# guest image, CNIs and CoreDNS are built.
# The guest node table with rxe-node-2's containers at seed 002's 64 KiB
# memlock: the memlock feature must fail there (and only there), while the
# bandwidth pods, which hold IPC_LOCK, pass on both. rxe-node-2 also gets a
# taint (PreferNoSchedule: the pinned suite pods still land there) to prove
# the table's taints reach the node.
guest_conf=$results/bed-guest-nodes.conf
awk '$1 == "rxe-node-2" {$7 = "rdmasuite.io/staged=memlock:PreferNoSchedule"; $8 = "64K"} {print}' \
  hack/bed-guest-nodes.conf >"$guest_conf"
grep -q '^rxe-node-2 .* 64K$' "$guest_conf" || { echo "could not stage rxe-node-2's 64K memlock"; exit 1; }
guestboot_log=$(mktemp "${TMPDIR:-/tmp}/rdmasuite-guestboot.XXXXXX")
# (Their last lines say they are done: a finished job stays a zombie, alive
# to kill -0, until this shell waits for it.)
BED_GUEST_NODES="rxe-node-1 rxe-node-2" BED_GUEST_NODES_CONF=$guest_conf setsid bash -c '
  until grep -q "^VERBS_SECONDS=" "$1" && grep -q "^PREBUILD_RC=" "$2"; do sleep 1; done
  t=$SECONDS
  hack/bed.sh guests-boot && echo "GUESTBOOT_SECONDS=$((SECONDS - t))"' _ "$verbs_log" "$prebuild_log" >"$guestboot_log" 2>&1 &
guestboot_pid=$!
echo "guest nodes: booting in the background once the verbs tests are done, log $guestboot_log"

step "suite against the bed: smoke (must pass)"
t=$SECONDS
make -s e2e
e2e_s=$((SECONDS - t))

step "--dry-run: the plan, and nothing created"
before=$("$K8S_BIN_DIR/kubectl" --kubeconfig "$BED_DIR/kubeconfig" get ns,pods -A -o name | sort)
suite --kubeconfig="$BED_DIR/kubeconfig" --labels suite=rdma --dry-run >"$results/dry-run.log" 2>&1 ||
  { cat "$results/dry-run.log"; echo "--dry-run did not exit 0"; exit 1; }
grep -E 'plan \[shared-dev\]: [0-9]+ node\(s\) measured, [0-9]+ round\(s\).*wave\(s\); .*estimated' "$results/dry-run.log" ||
  { cat "$results/dry-run.log"; echo "--dry-run printed no plan with rounds, waves and an estimate"; exit 1; }
grep -E 'plan \[shared-dev\]: round 1: bandwidth(, [a-z-]+)*: [0-9]+ pair\(s\): [a-z0-9-]+ → [a-z0-9-]+' "$results/dry-run.log" ||
  { cat "$results/dry-run.log"; echo "--dry-run did not list the plan's rounds (features, pairs)"; exit 1; }
# The defaults on a cluster without Multus: --variants auto runs shared-dev
# and names the skipped hostdev with its reason; without --node-selector the
# nodes that advertise the RDMA resource are selected, and the header says so.
grep -F 'variants: shared-dev (auto: what the cluster can run; skipped hostdev (Multus is not installed' "$results/dry-run.log" &&
  grep -E '^rdmasuite: nodes: 2 selected \(no --node-selector: the nodes that advertise rdma/rdma_shared_device_a, never the control plane\)' "$results/dry-run.log" ||
  { cat "$results/dry-run.log"; echo "--dry-run's header does not say which variants and nodes the defaults chose"; exit 1; }
[[ $("$K8S_BIN_DIR/kubectl" --kubeconfig "$BED_DIR/kubeconfig" get ns,pods -A -o name | sort) == "$before" ]] ||
  { echo "--dry-run created namespaces or pods"; exit 1; }

step "suite against the bed: bandwidth + memlock (must report the bed's real state)"
t=$SECONDS
# Both variants named: a variant the operator asks for and the cluster
# cannot run (hostdev, no Multus) is not skipped, it fails the run.
if suite -test.timeout=10m --kubeconfig="$BED_DIR/kubeconfig" --labels suite=rdma --variants shared-dev,hostdev \
  --report-dir="$results" --bw-duration=2s >"$results/suite.log" 2>&1; then
  cat "$results/suite.log"
  echo "the rdma suite passed on a bed without RDMA devices: it must fail there"; exit 1
fi
rdma_s=$((SECONDS - t))
grep -E '^(rdmasuite:|│|┌|└|├)' "$results/suite.log" || true
hack/tool.sh expectresults -results "$results/results.json" -expect hack/bed-expect.txt
# The report tells the same story as go test: NOT PASSED, exit 1, also as
# JUnit (failures, not skips) and against a baseline (1 wins over 3).
make -s rdmasuite
rdmasuite=$PWD/bin/rdmasuite
expect_rc 1 "$rdmasuite" report "$results/results.json" --format junit -o "$results/junit.xml"
expect_rc 1 "$rdmasuite" report "$results/results.json" --format markdown -o "$results/report.md"
# A run is no baseline of itself (results.json links to it): refused, exit 2.
# An earlier run with the same figures (this run's file under another id)
# is one, and the run's own failure (1) wins over the comparison.
expect_rc 2 "$rdmasuite" report "$results/results.json" --baseline "$results/results.json" >/dev/null
sed -E '0,/"runId": *"([^"]*)"/s//"runId": "\1-earlier"/' "$results/results.json" >"$results/earlier.json"
expect_rc 1 "$rdmasuite" report "$results/results.json" --baseline "$results/earlier.json" >/dev/null
grep -q '<testsuites>' "$results/junit.xml" && grep -q '## Checks' "$results/report.md"
grep -Eq 'failures="[1-9]' "$results/junit.xml" || { echo "JUnit shows no failure for a failed run"; exit 1; }
echo '{"schema":"rdmasuite.io/results/v1","runId":"empty","checks":[]}' >"$results/empty.json"
expect_rc 2 "$rdmasuite" report "$results/empty.json" >/dev/null
echo "reports rendered and exit codes agree: $results/junit.xml $results/report.md"

step "doctor: each seed failure mode staged in the bed is named on the right node"
t=$SECONDS
RDMASUITE_BIN=$rdmasuite hack/doctor-test.sh
doctor_s=$((SECONDS - t))

step "SIGINT deletes everything the suite created"
# The suite's --help: its own flags first, exit 0, no panic from a framework flag.
(cd suites && "$results/suites.test" --help) >"$results/suite-help.txt" 2>&1 ||
  { tail -5 "$results/suite-help.txt"; echo "the suite's --help did not exit 0"; exit 1; }
grep -q '^Suite flags:' "$results/suite-help.txt" && ! grep -q 'panic calling' "$results/suite-help.txt" ||
  { head -20 "$results/suite-help.txt"; echo "the suite's --help does not list its own flags first, or panicked"; exit 1; }
# A bad flag value fails before any API call, naming the flag: with a
# kubeconfig that does not exist, the message must be about the flag.
for bad in "--variants bogus" "--bw-sizes 64Q" "--pairing ringg"; do
  rc=0
  # shellcheck disable=SC2086
  msg=$(cd suites && "$results/suites.test" --kubeconfig=/nonexistent/kubeconfig $bad 2>&1) || rc=$?
  [[ $rc == 2 && $msg == *"${bad%% *}"* && $msg != *nonexistent* ]] ||
    { echo "$msg"; echo "suite $bad: exit $rc; want 2 naming ${bad%% *} before reading the kubeconfig"; exit 1; }
done
(cd suites && exec "$results/suites.test" --kubeconfig="$BED_DIR/kubeconfig" --labels suite=rdma \
  --bw-duration=30s --bw-iters=0 >"$results/sigint.log" 2>&1) &
suite_pid=$!
kc() { "$K8S_BIN_DIR/kubectl" --kubeconfig "$BED_DIR/kubeconfig" "$@"; }
for _ in $(seq 1 120); do
  [[ -n $(kc get pods -A -l app.kubernetes.io/managed-by=rdmasuite -o name 2>/dev/null) ]] && break
  sleep 0.5
done
kill -INT "$suite_pid"
wait "$suite_pid" || true
grep -q 'deleting run namespace' "$results/sigint.log" || { cat "$results/sigint.log"; echo "no cleanup on SIGINT"; exit 1; }
left=$(kc get ns,pods -A -l app.kubernetes.io/managed-by=rdmasuite -o name 2>/dev/null)
[[ -z $left ]] || { echo "left in the cluster after SIGINT: $left"; exit 1; }
echo "nothing of the run left in the cluster after SIGINT"

step "rdmasuite cleanup deletes leftover run namespaces by label, and only those"
kc create ns rdmasuite-stale0001 >/dev/null
kc label ns rdmasuite-stale0001 app.kubernetes.io/managed-by=rdmasuite rdmasuite.io/run=stale0001 >/dev/null
kc create ns rdmasuite-not-ours >/dev/null
"$rdmasuite" cleanup --kubeconfig "$BED_DIR/kubeconfig" --older-than 0s --dry-run | grep -q 'would delete rdmasuite-stale0001'
"$rdmasuite" cleanup --kubeconfig "$BED_DIR/kubeconfig" --older-than 0s
kc get ns rdmasuite-stale0001 >/dev/null 2>&1 && { echo "cleanup left rdmasuite-stale0001"; exit 1; }
kc get ns rdmasuite-not-ours >/dev/null || { echo "cleanup deleted a namespace that is not a run's"; exit 1; }
kc delete ns rdmasuite-not-ours --wait=false >/dev/null
expect_rc 2 "$rdmasuite" cleanup --kubeconfig "$BED_DIR/kubeconfig" --run no-such-run
echo "cleanup: stale run namespace deleted, others untouched"
# --keep-on-failure: a failed run (host probe off: doctor/node not-run) keeps
# its namespace, labelled, and names the command that removes it.
(cd suites && exec "$results/suites.test" --kubeconfig="$BED_DIR/kubeconfig" --labels suite=doctor --node-probe=false \
  --network-operator=false --keep-on-failure --report-dir="$results/kept" >"$results/kept.log" 2>&1) && { echo "kept run passed"; exit 1; }
kept=$(sed -n 's/.*rdmasuite cleanup --run \([0-9a-f]*\).*/\1/p' "$results/kept.log" | head -1)
[[ -n $kept && $(kc get ns "rdmasuite-$kept" -o 'jsonpath={.metadata.labels.rdmasuite\.io/kept}') == true ]] ||
  { tail -20 "$results/kept.log"; echo "--keep-on-failure did not keep a labelled namespace"; exit 1; }
"$rdmasuite" cleanup --kubeconfig "$BED_DIR/kubeconfig" --run "$kept" | grep -q 'kept by --keep-on-failure'
echo "keep-on-failure: rdmasuite-$kept kept, then removed by cleanup --run"

step "in-cluster: the nightly CronJob and a failing Job under the least-privilege ServiceAccount (suites/deploy)"
t=$SECONDS
hack/incluster-test.sh "$results/incluster"
incluster_s=$((SECONDS - t))

step "rdmasuite run on the host nodes: detached and fetched later (--wait=false, rdmasuite results), and Ctrl-C"
# rdmasuite run's other two paths, on the host nodes while the guests boot
# (the Ctrl-C case cost a guest pod start in the exclusive stage).
# The runner pod sits on host node node-1, where the bed loaded the runner
# image and the API server's address is reachable (as hack/incluster's
# overlays place it); the exclusive stage below runs the guest suites so.
t=$SECONDS
runjob=("$rdmasuite" run --kubeconfig "$BED_DIR/kubeconfig" --image docker.io/rdmasuite/rdmasuite-runner:dev --timeout 30m
  --runner-node-selector kubernetes.io/hostname=node-1 --runner-env KUBERNETES_SERVICE_HOST=10.250.0.1,KUBERNETES_SERVICE_PORT=6443)
# --wait=false returns once the Job exists and names the command that
# fetches it; rdmasuite results follows the run, brings its results back,
# deletes what it created (--delete) and exits with the suite's code.
"${runjob[@]}" --wait=false -- --labels suite=doctor >"$results/run-detached.log" 2>&1 ||
  { cat "$results/run-detached.log"; echo "rdmasuite run --wait=false failed"; exit 1; }
job=$(sed -n 's/.*rdmasuite results --namespace rdmasuite --job \([^ ]*\) --delete.*/\1/p' "$results/run-detached.log")
[[ -n $job ]] || { cat "$results/run-detached.log"; echo "rdmasuite run --wait=false did not name the command that fetches the run"; exit 1; }
# Polled while it runs (its runner pod has only just been created): exit 4,
# still running, which a script polls on; not 2, broken.
rc=0
"$rdmasuite" results --kubeconfig "$BED_DIR/kubeconfig" --namespace rdmasuite --job "$job" --wait=false >"$results/results-poll.log" 2>&1 || rc=$?
[[ $rc == 4 ]] || { cat "$results/results-poll.log"; echo "rdmasuite results --wait=false on a running job exited $rc, want 4 (still running)"; exit 1; }
rc=0
"$rdmasuite" results --kubeconfig "$BED_DIR/kubeconfig" --namespace rdmasuite --job "$job" --delete --report-dir "$results/detached" \
  >"$results/results-detached.log" 2>&1 || rc=$?
[[ -f $results/detached/results.json ]] || { tail -30 "$results/results-detached.log"; echo "rdmasuite results brought no results back (exit $rc)"; exit 1; }
rrc=0
"$rdmasuite" report "$results/detached/results.json" >/dev/null 2>&1 || rrc=$?
[[ $rc == "$rrc" ]] && (( rc <= 1 )) && grep -q '"doctor/node"' "$results/detached/results.json" ||
  { tail -30 "$results/results-detached.log"; echo "rdmasuite results exited $rc, its results say $rrc (or they lack the doctor's node rows)"; exit 1; }
left=$(kc get ns,pods,jobs -A -l app.kubernetes.io/part-of=rdmasuite -o name 2>/dev/null; kc get clusterrole,clusterrolebinding rdmasuite-runner -o name 2>/dev/null || true)
[[ -z $left ]] || { echo "left in the cluster after rdmasuite results --delete: $left"; exit 1; }
echo "rdmasuite run --wait=false, then rdmasuite results: job $job followed, results back, exit $rc as the suite's, nothing left"
# An rdmasuite run killed outright (SIGKILL: no cleanup of its own) leaves
# its Job and what it created; rdmasuite cleanup --run finds them by the
# run's label and deletes them (the in-cluster suite deletes its pods).
"${runjob[@]}" -- --labels suite=doctor >"$results/run-killed.log" 2>&1 &
kpid=$!
for _ in $(seq 60); do grep -q '^rdmasuite run: created' "$results/run-killed.log" && break; sleep 1; done
kill -9 "$kpid" 2>/dev/null || true
wait "$kpid" 2>/dev/null || true
killed=$(sed -n 's|.*job rdmasuite/rdmasuite-run-\([^,]*\),.*|\1|p' "$results/run-killed.log" | head -1)
[[ -n $killed ]] || { cat "$results/run-killed.log"; echo "the killed rdmasuite run named no job"; exit 1; }
"$rdmasuite" cleanup --kubeconfig "$BED_DIR/kubeconfig" --run "$killed" >"$results/cleanup-killed.log" 2>&1 ||
  { cat "$results/cleanup-killed.log"; echo "rdmasuite cleanup --run $killed failed"; exit 1; }
grep -q "deleted job rdmasuite/rdmasuite-run-$killed" "$results/cleanup-killed.log" ||
  { cat "$results/cleanup-killed.log"; echo "rdmasuite cleanup did not find the killed run's job"; exit 1; }
left=$(kc get ns,pods,jobs -A -l app.kubernetes.io/part-of=rdmasuite -o name 2>/dev/null; kc get clusterrole,clusterrolebinding rdmasuite-runner -o name 2>/dev/null || true)
[[ -z $left ]] || { echo "left in the cluster after rdmasuite cleanup of a killed run: $left"; exit 1; }
echo "rdmasuite run killed with SIGKILL: rdmasuite cleanup --run $killed deleted its job and what it created, nothing left"
# Ctrl-C while the in-cluster suite has probe pods running (the host probe
# samples for 60 s, so the run is surely mid-way): the Job goes, the suite
# deletes its pods on SIGTERM, and what the run created goes after it.
"${runjob[@]}" --report-dir "$results/run-interrupted" -- --labels suite=doctor --node-probe-window 60s \
  >"$results/run-interrupted.log" 2>&1 &
run_pid=$!
for _ in $(seq 1 240); do
  [[ -n $(kc get pods -n rdmasuite -l app.kubernetes.io/managed-by=rdmasuite -o name 2>/dev/null) ]] && break
  sleep 0.5
done
[[ -n $(kc get pods -n rdmasuite -l app.kubernetes.io/managed-by=rdmasuite -o name 2>/dev/null) ]] ||
  { kill -INT "$run_pid"; wait "$run_pid" || true; tail -30 "$results/run-interrupted.log"; echo "the in-cluster suite started no probe pod within 2 minutes"; exit 1; }
kill -INT "$run_pid"
rc=0
wait "$run_pid" || rc=$?
left=$(kc get ns,pods,jobs -A -l app.kubernetes.io/part-of=rdmasuite -o name 2>/dev/null; kc get pods -A -l app.kubernetes.io/managed-by=rdmasuite -o name 2>/dev/null
  kc get clusterrole,clusterrolebinding rdmasuite-runner -o name 2>/dev/null || true)
[[ $rc == 130 && -z $left ]] && grep -q 'rdmasuite run: interrupted: nothing of the run is left' "$results/run-interrupted.log" ||
  { tail -30 "$results/run-interrupted.log"; echo "Ctrl-C of rdmasuite run: exit $rc (want 130), left: ${left:-nothing}"; exit 1; }
echo "rdmasuite run: Ctrl-C with the suite's probe pods running: exit 130, nothing left in the cluster, $((SECONDS - t)) s for both"
runjob_s=$((SECONDS - t))

step "verbs tests on a real verbs device (Soft-RoCE guest), started in the background after the binaries"
t=$SECONDS
await_background "$verbs_pid" "$verbs_log" VERBS_SECONDS "the verbs tests"
verbs_s=$background_s
echo "verbs tests: ${verbs_s} s beside the host-node stages; waited $((SECONDS - t)) s for them here"

step "two guest nodes join the bed (real Soft-RoCE devices, device plugin): the success path"
# They join the bed the host-node stages used (hack/bed.sh guests): its
# control plane and host nodes are what a fresh bring-up would make, and
# the final bed down below proves that nothing is left behind.
wait "$prebuild_pid" || { grep -v '^PREBUILD_RC=' "$prebuild_log"; echo "building the guest nodes' image, CNIs or CoreDNS failed"; exit 1; }
echo "guest-node image, CNIs and CoreDNS ready in the background, $((SECONDS - t_prebuild)) s after they started"
. hack/guest-suite-args.sh
trap cleanup EXIT
t=$SECONDS
await_background "$guestboot_pid" "$guestboot_log" GUESTBOOT_SECONDS "booting the guest nodes"
boot_s=$background_s
echo "guest nodes booted held in ${boot_s} s beside the host-node stages; waited $((SECONDS - t)) s for them here"
t=$SECONDS
BED_GUEST_NODES="rxe-node-1 rxe-node-2" BED_GUEST_NODES_CONF=$guest_conf hack/bed.sh guests
up2_s=$((SECONDS - t))
# The node table's labels reached the nodes.
for g in rxe-node-1 rxe-node-2; do
  [[ $(kc get node "$g" -o 'jsonpath={.metadata.labels.nvidia\.com/gpu\.product}') == rdmasuite-soft-roce-bed ]] ||
    { echo "$g lacks the gpu.product label of $guest_conf"; exit 1; }
done
[[ $(kc get node rxe-node-2 -o 'jsonpath={.spec.taints[*].key}') == *rdmasuite.io/staged* ]] ||
  { echo "rxe-node-2 lacks the taint of $guest_conf"; exit 1; }
# The host nodes beside the guests become the defaults' traps (the defaults
# must pick the RDMA nodes and skip the others):
# node-1 still advertises the RDMA resource but is labelled control plane;
# node-2 becomes a CPU node (no RDMA labels, no extended resources). The
# main guest run names no --node-selector and no --variants: it must take
# the two guests and both variants, and say why it left the others out.
kc label node node-1 node-role.kubernetes.io/control-plane= --overwrite >/dev/null
kc label node node-2 feature.node.kubernetes.io/pci-15b3.present- network.nvidia.com/operator.mofed.wait- nvidia.com/gpu.present- nvidia.com/gpu.product- >/dev/null
kc patch node node-2 --subresource=status --type=json -p '[{"op":"remove","path":"/status/capacity/rdma~1rdma_shared_device_a"},{"op":"remove","path":"/status/capacity/nvidia.com~1hostdev"},{"op":"remove","path":"/status/capacity/nvidia.com~1gpu"}]' >/dev/null
for _ in $(seq 30); do
  [[ $(kc get node node-2 -o 'jsonpath={.status.allocatable}') != *rdma_shared_device_a* ]] && break
  sleep 1
done
[[ $(kc get node node-2 -o 'jsonpath={.status.allocatable}') != *rdma_shared_device_a* ]] ||
  { echo "node-2 still advertises rdma/rdma_shared_device_a"; exit 1; }
t=$SECONDS
# The device checks only (SELFTEST_BW=0): the suite run below measures every
# rail between the guests right after, with more to show for it than the
# self-test's own client pod (≈ 20 s).
SELFTEST_BW=0 hack/guestnode/selftest.sh rxe-node-1 rxe-node-2
# Rail 1 of rxe-node-2 goes down (its eth2, under rxe1): that rail must fail
# on every pair that uses it, with the link-down diagnosis naming the node
# and port, and every other rail must still measure.
hack/guestnode/rail.sh rxe-node-2 rxe1 down
guest_results=$results/guest
# The GPU features run in the same suite run, as an operator's run without
# --labels would (a GPUDirect pair shares its node pair's
# bandwidth, latency and msgrate pods instead of starting its own; the NCCL
# worlds follow). The guests get a fake nvidia.com/gpu capacity of 2 for it
# (no CUDA driver: every GPU check stops there, not-run), removed after.
. hack/fake-gpus.sh
for g in rxe-node-1 rxe-node-2; do fake_gpus "$g" 2; done
for g in rxe-node-1 rxe-node-2; do wait_gpus "$g" 2 || exit 1; done
# Rail 0 of rxe-node-2 turns lossy for this run: the host
# bridge drops 1 % of the full-size RoCE frames it sends there. Both
# cross-node pairs' bandwidth/link checks must fail on that rail naming the
# Soft-RoCE counters that rose, whatever their bandwidth said; the clean
# rails (rxe1 of rxe-node-1, the hostdev NICs, the loopbacks) must pass
# with their counters read, and the ports must back the bytes measured.
hack/guestnode/lossy.sh rxe-node-2 0 1
# Rail 0 of rxe-node-2 also runs at netdev MTU 1500 (active 1024) for this
# run, every other RoCE port at 9000 (4096), and carries a second address
# (TEST-NET-1, a /32: a local route only, no traffic), so its GID table
# holds an IPv4 RoCE v2 GID more than its peers': the doctor must name both
# on that node and port (below the bed SKU's pinned 4096, and unlike the
# SKU's other ports) and nothing on rxe-node-1.
hack/guestnode/netdev.sh rxe-node-2 eth1 mtu 1500
hack/guestnode/netdev.sh rxe-node-2 eth1 addr add 192.0.2.2/32
# The staged 64 KiB memlock, the down rail and the lossy rail on rxe-node-2
# must make the run fail; every other check must pass or stop at CUDA
# (hack/guest-expect.txt says which is which).
follow "$guest_results"
if suite -test.timeout=30m --kubeconfig="$BED_DIR/kubeconfig" --labels suite=rdma,suite=doctor,suite=latency,suite=latency-load,suite=msgrate,suite=gpu \
  --report-dir="$guest_results" "${GUEST_RUN_ARGS[@]}" "${GPU_RUN_ARGS[@]}" >"$results/guest.log" 2>&1; then
  unfollow
  echo "the guest suite passed although rxe-node-2's memlock is 64 KiB and its rail 1 is down: it must fail there"; exit 1
fi
unfollow
# The staging itself is proven: the rule dropped frames during the run.
dropped=$(nft list table bridge rdmasuite_lossy | sed -n 's/.*counter packets \([0-9]*\) .*/\1/p')
hack/guestnode/lossy.sh off
hack/guestnode/netdev.sh rxe-node-2 eth1 mtu 9000
hack/guestnode/netdev.sh rxe-node-2 eth1 addr del 192.0.2.2/32
((${dropped:-0} > 0)) || { echo "the lossy rail dropped no frame during the guest run: the link checks prove nothing"; exit 1; }
echo "lossy rail rxe-node-2 rxe0: $dropped full-size RoCE frames dropped on the host bridge during the run"
for g in rxe-node-1 rxe-node-2; do fake_gpus "$g" -; done
for g in rxe-node-1 rxe-node-2; do wait_gpus "$g" "" || exit 1; done
grep -Eq 'round [0-9]+/[0-9]+, pairs [0-9]+/[0-9]+, ' "$guest_results/progress.log" ||
  { cat "$guest_results/progress.log"; echo "the progress log has no per-pair line with its round"; exit 1; }
[[ -f $guest_results/results.json ]] || { tail -40 "$results/guest.log"; echo "the guest suite wrote no results"; exit 1; }
hack/tool.sh expectresults -results "$guest_results/results.json" -expect hack/guest-expect.txt ||
  { tail -40 "$results/guest.log"; exit 1; }
# What the host probe's reads cost on a guest (TCG): rxe-node-1's
# doctor/node pass carries it (its RDMA part reads every GID table entry).
grep -o 'host probe: reads took [^"]*' "$guest_results/results.json" ||
  { echo "the guest doctor's node check does not say what the host probe's reads cost"; exit 1; }
# The ports back the bytes: on the rails between the guests the client's
# transmit and the server's receive counters confirmed every size (write),
# and a failed link check names the counters and the side that saw them.
grep -q 'port counters confirm the bytes of every measured size (client counters/port_xmit_data, server counters/port_rcv_data)' "$guest_results/results.json" &&
  grep -q 'server rxe0/1 on rxe-node-1 during write 64KiB: hw_counters/' "$guest_results/results.json" ||
  { echo "the guest run's results lack the byte confirmation or the lossy rail's counters"; exit 1; }
grep -F 'rdmasuite: variants: shared-dev, hostdev (auto: what the cluster can run)' "$results/guest.log" &&
  grep -F ': 2 advertise; left out: 1 control plane (node-1), 1 without an RDMA resource or label (node-2)' "$results/guest.log" ||
  { grep -E '^rdmasuite: (variants|nodes)' "$results/guest.log"; echo "the default run's header does not say it chose both variants and the two guests"; exit 1; }
expect_rc 1 "$rdmasuite" report "$guest_results/results.json" >"$results/guest-report.txt"
# The localisation names the end(s) whose port counters rose on the lossy
# rail (one partner per node here, so the finding is
# inconclusive, and the counters say where the errors were counted).
md=$("$rdmasuite" report "$guest_results/results.json" --format markdown 2>/dev/null || true)
grep -Eq 'inconclusive.*the port counters rose at (one end only|both ends): [^;]*rxe-node-[12] rxe0/1 \(with rxe-node-[12]\)' <<<"$md" ||
  { grep -i 'localis' -A4 <<<"$md"; echo "the localisation does not name the end whose counters rose on the lossy rail"; exit 1; }
# Before blame, the nodes of failed pairs are measured again against nodes
# that passed everything: the guests have none, and the run says so; and
# rxe-node-2, a culprit of its own (its probe read rail 1 DOWN), is no
# evidence against rxe-node-1.
grep -Eq 'confirmation \[shared-dev\]: [0-9]+ node\(s\) of failed pairs, none measured again: rxe-node-1 \(no partner that passed everything' "$guest_results/progress.log" ||
  { grep confirmation "$guest_results/progress.log"; echo "the guest run does not say why nothing was measured again before blame"; exit 1; }
grep -Eq 'rxe-node-2 is a culprit of its own \(rxe1/1 port not ACTIVE\): no evidence against rxe-node-1' <<<"$md" ||
  { grep -i 'inconclusive' <<<"$md"; echo "the localisation counts rxe-node-2's own fault against rxe-node-1"; exit 1; }
# The port the probe read DOWN is the verdict's culprit, whatever the one
# partner each guest has could tell.
grep -Eq '^\*\*NOT PASSED — culprits?: [^*]*port rxe1/1 on node rxe-node-2 \(bad port' <<<"$md" ||
  { grep -m1 'NOT PASSED' <<<"$md"; echo "the guest run's verdict does not name the port its probe read DOWN"; exit 1; }
cut -c1-220 "$results/guest-report.txt"
guest_s=$((SECONDS - t))

step "disruptive: MOFED driver restarts under a real NFS-over-RDMA mount (seed 000, both ways)"
t=$SECONDS
hack/disruptive-test.sh "$results/disruptive"
disruptive_s=$((SECONDS - t))

step "go test -timeout: the internal deadline cuts a real measurement and still cleans up"
# 75 s of go test timeout against 10-minute measurements on the guests: the
# suite's deadline (25 s kept for teardown) cancels the running pods, the
# results say why each check did not finish, and the namespace is gone
# before go test's timeout panic would skip every cleanup.
t=$SECONDS
if (cd suites && exec "$results/suites.test" -test.timeout=75s --kubeconfig="$BED_DIR/kubeconfig" --labels check=bandwidth \
  "${GUEST_SUITE_ARGS[@]}" --bw-iters 0 --bw-duration 10m --report-dir="$results/deadline" >"$results/deadline.log" 2>&1); then
  echo "a run cut by its deadline passed"; exit 1
fi
grep -q 'panic: test timed out' "$results/deadline.log" && { tail -20 "$results/deadline.log"; echo "go test's timeout panic hit before the internal deadline"; exit 1; }
grep -q 'context deadline exceeded' "$results/deadline/results.json" ||
  { tail -20 "$results/deadline.log"; echo "the results do not say the deadline stopped the checks"; exit 1; }
left=$(kc get ns,pods -A -l app.kubernetes.io/managed-by=rdmasuite -o name 2>/dev/null)
[[ -z $left ]] || { echo "left in the cluster after the deadline: $left"; exit 1; }
echo "deadline: real measurements cancelled, results written, nothing left, $((SECONDS - t)) s"
deadline_s=$((SECONDS - t))

step "GPU features (suite=gpu) with one fake-GPU guest node: no world, no pair, and no pod"
# The GPU features' bed test, its other half: the NCCL worlds and
# GPUDirect pairs of two GPU nodes ran in the main guest run above; here only rxe-node-1
# has a fake nvidia.com/gpu, and the rows must say why nothing could run
# (hack/gpu-expect-one.txt).
t=$SECONDS
hack/gpu-test.sh "$results/gpu"
# hack/gpu-device-check.sh (made for a GPU machine) on this GPU-less
# machine: its no-GPU path as the GPU machine would run it (bundle, no Go), and its CUDA path
# against the stand-in libcuda.
hack/gpu-device-check-test.sh
gpu_s=$((SECONDS - t))

step "exclusive RDMA netns mode (SR-IOV clusters' setting): hostdev isolated and measured, shared-dev told why it sees nothing"
# Same run in exclusive mode: each hostdev pod now sees only the Soft-RoCE
# device on its net1 (bandwidth/isolation passes where shared mode failed
# it), and the shared-dev pods see no device at all, which the suite must
# blame on the mode (hack/guest-expect-exclusive.txt).
t=$SECONDS
for g in rxe-node-1 rxe-node-2; do hack/guestnode/rdma-netns.sh "$g" exclusive; done
# Cross-node pairs only (--loopback=false): same-node pairs add nothing to
# what this stage proves (what each pod sees in exclusive mode) and cost a
# pod pair per node and variant.
# The run goes through the operator binary: rdmasuite run
# applies the in-cluster acceptance Job of suites/deploy (namespace, the
# runner's least-privilege RBAC, the runner image), streams its log, brings
# the results back from the ConfigMap and deletes what it created; its exit
# code is the suite's. The runner pod sits on host node node-1, where the
# bed loaded the runner image and the API server's address is reachable
# (as hack/incluster's overlays place it).
# The bandwidth features run the suite's default sweep here (64 KiB and
# 1 MiB, 4 QPs, write and read, 5 s per size; no --bw-* flag),
# so the first thing an operator runs is measured between the guests in
# every make test: the hostdev pairs measure it (exclusive mode hides the
# shared devices), and hack/guest-expect-exclusive.txt bounds each 1 MiB
# and 64 KiB figure and names the probe's sizes, QPs and duration.
# The doctor's at-rest read: its host probe reads every port's
# counters over a 15 s window here, and rail rxe1 of rxe-node-1 flaps once
# inside it (hack/guestnode/flap-at-rest.sh: Soft-RoCE counts the flap in
# link_downed); the doctor must name that port and counter on rxe-node-1
# (doctor/port-errors-at-rest in hack/guest-expect-exclusive.txt). It runs
# last in this run, on guests no longer measuring.
hack/guestnode/flap-at-rest.sh rxe-node-1 rxe1 >"$results/flap.log" 2>&1 &
flap_pid=$!
rc=0
"${runjob[@]}" --report-dir "$results/exclusive" -- --labels suite=rdma,suite=doctor "${GUEST_DEFAULT_SWEEP_ARGS[@]}" --loopback=false \
  --node-probe-window 15s >"$results/exclusive.log" 2>&1 || rc=$?
# A run refused before it applied anything (exit 2) never starts the host
# probe the flap waits for: say the refusal, not the flap's timeout.
if [[ $rc == 2 ]]; then
  kill "$flap_pid" 2>/dev/null || true
  tail -20 "$results/exclusive.log"; echo "rdmasuite run of the exclusive-mode suite exited 2 (refused or broken)"; exit 1
fi
frc=0
wait "$flap_pid" || frc=$?
cat "$results/flap.log"
((frc == 0)) || { echo "the flap of rxe-node-1's rail rxe1 failed (exit $frc)"; exit 1; }
[[ $rc == 1 ]] || { tail -60 "$results/exclusive.log"; echo "rdmasuite run of the exclusive-mode suite exited $rc: want the suite's 1 (shared-dev cannot work there)"; exit 1; }
[[ -f $results/exclusive/results.json ]] || { tail -40 "$results/exclusive.log"; echo "rdmasuite run brought no results back"; exit 1; }
hack/tool.sh expectresults -results "$results/exclusive/results.json" -expect hack/guest-expect-exclusive.txt ||
  { tail -40 "$results/exclusive.log"; exit 1; }
grep -q '^rdmasuite run: runner pod rdmasuite-run-[0-9a-f]*-[a-z0-9]* on node node-1' "$results/exclusive.log" &&
  grep -q '^rdmasuite: cluster https://10.250.0.1:6443 ' "$results/exclusive.log" &&
  grep -q '^rdmasuite run: deleted job/rdmasuite-run-[0-9a-f]*, namespace/rdmasuite, ' "$results/exclusive.log" ||
  { grep '^rdmasuite' "$results/exclusive.log" | head -20; echo "rdmasuite run did not stream the in-cluster suite's log or did not delete what it created"; exit 1; }
left=$(kc get ns,pods,jobs -A -l app.kubernetes.io/part-of=rdmasuite -o name 2>/dev/null; kc get clusterrole,clusterrolebinding rdmasuite-runner -o name 2>/dev/null || true)
[[ -z $left ]] || { echo "left in the cluster after rdmasuite run: $left"; exit 1; }
echo "rdmasuite run: the exclusive-mode rdma and doctor suites ran in-cluster, exit 1 as the suite's, results back and matching, nothing left"
# One report of both runs is refused: they measured the same checks.
expect_rc 2 "$rdmasuite" report "$guest_results/results.json" "$results/exclusive/results.json" >/dev/null 2>&1
# No switch back to shared mode: this is the last stage on the guests
# (the switch costs a Multus restart per guest, ≈ 45 s).
exclusive_s=$((SECONDS - t))

step "calibrated floors: a healthy run, rdmasuite thresholds calibrate, and a run judged by the overlay it wrote"
# The cycle an operator runs when a public floor does not fit the fleet:
# measure, calibrate the floors from the per-port figures, lay the overlay
# over the built-in thresholds, and the next run is judged by them, its
# header naming them. The hostdev pairs between the guests (exclusive
# mode, where they pass) are the fleet: two ports, and TCG's figures vary
# 2-3x from run to run (hack/README), so the rule is loosened (1 MAD, 50 %
# of the median) and the second run may miss a floor: what must hold is
# that its rows are judged by the calibrated floors.
t=$SECONDS
cal_args=(--kubeconfig="$BED_DIR/kubeconfig" --labels check=bandwidth --node-selector rdmasuite.io/guest-node=true --variants hostdev
  "${GUEST_BASE_ARGS[@]}" --loopback=false --bw-ops write --bw-iters 100 --allow-not-run bandwidth/ports)
(cd suites && exec "$results/suites.test" "${cal_args[@]}" --report-dir="$results/calibrate-healthy") >"$results/calibrate-healthy.log" 2>&1 ||
  { tail -40 "$results/calibrate-healthy.log"; echo "the healthy hostdev run for calibration did not pass"; exit 1; }
"$rdmasuite" thresholds calibrate "$results/calibrate-healthy/results.json" --out "$results/calibrated.yaml" --min-ports 2 --mads 1 --min-margin 0.5 ||
  { echo "rdmasuite thresholds calibrate refused the healthy run"; exit 1; }
rc=0
(cd suites && exec "$results/suites.test" "${cal_args[@]}" --thresholds-overlay "$results/calibrated.yaml" \
  --report-dir="$results/calibrated") >"$results/calibrated.log" 2>&1 || rc=$?
[[ $rc == 0 || $rc == 1 ]] || { tail -40 "$results/calibrated.log"; echo "the run with the calibrated overlay broke (exit $rc)"; exit 1; }
grep -E 'thresholds: calibrated floors of soft-roce-bed \([^)]*calibrated.yaml\): write 64KiB ≥ [0-9.e-]+ Gb/s, write 1MiB ≥ [0-9.e-]+ Gb/s' "$results/calibrated.log" ||
  { grep 'thresholds' "$results/calibrated.log"; echo "the run's header does not name the calibrated floors"; exit 1; }
judged=$(grep -c '"source": "soft-roce-bed (overlay [^"]*calibrated.yaml): write floor at [0-9A-Za-z]*: calibrated from 2 ports of runs ' "$results/calibrated/results.json" || true)
((judged >= 4)) || { echo "the run's write rows were not judged by the calibrated floors ($judged figures were)"; exit 1; }
echo "calibrated floors: healthy run, overlay, and a run ($([[ $rc == 0 ]] && echo passed || echo failed) on TCG's figures) whose $judged figures the calibrated floors judged"
calibrate_s=$((SECONDS - t))

# The HTML report test needs only result files and the host's Chromium:
# it draws beside the bed's teardown (off the critical path), its log
# printed after.
html_log=$results/html-report-test.log
timed_in_background "$html_log" HTML_SECONDS hack/html-report-test.sh "$results"
html_pid=$bg_pid

step "where a pod start went inside the guest nodes (containerd's CRI log, every pod since the guests booted)"
hack/tool.sh podstarts containerd "$BED_DIR"/guestnodes/*/containerd.log || true
hack/bed.sh down
hack/bed.sh leftovers
trap - EXIT
trap 'kill -TERM -- "-$html_pid" 2>/dev/null || true' EXIT

step "HTML acceptance report drawn by headless Chromium: a fixture with a port below its floor, and this run's bed results"
t=$SECONDS
await_background "$html_pid" "$html_log" HTML_SECONDS "the HTML report test"
html_s=$background_s
echo "html report test: ${html_s} s beside the bed's teardown; waited $((SECONDS - t)) s for it here"
trap - EXIT

cat <<SUMMARY

=== timings
kubernetes binaries : $build_note
verbs guest tests   : ${verbs_s} s (beside the host-node stages)
bed up (first)      : ${up1_s} s
guest nodes boot    : ${boot_s} s (beside the host-node stages)
guest nodes join    : ${up2_s} s
guest node suites   : ${guest_s} s
disruptive (NFS)    : ${disruptive_s} s
deadline (timeout)  : ${deadline_s} s
gpu (one GPU node)  : ${gpu_s} s
exclusive-mode run  : ${exclusive_s} s
calibrate cycle     : ${calibrate_s} s
html report (chrome): ${html_s} s (beside the bed teardown)
smoke suite         : ${e2e_s} s
rdma suite (bed)    : ${rdma_s} s
doctor seed stages  : ${doctor_s} s
in-cluster runs     : ${incluster_s} s
run detach, Ctrl-C  : ${runjob_s} s
make test total     : $((SECONDS - t_start)) s
SUMMARY
# The budget: cold under 45 minutes, warm under 30, on a 2-core
# machine; the day's average pod start beside it, so a fast day cannot
# hide what the stages cost (the suite's own pod-start phase, every guest
# run of this make test).
total_s=$((SECONDS - t_start))
limit_s=1800
[[ $run_kind == cold ]] && limit_s=2700
verdict=inside
((total_s < limit_s)) || verdict=OVER
starts=$(hack/tool.sh podstarts results "$guest_results/results.json" "$results/exclusive/results.json" 2>&1) || starts="pod starts unknown: $starts"
echo "make test budget: $run_kind $total_s s of $limit_s s: $verdict the budget; $starts"
