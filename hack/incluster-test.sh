#!/usr/bin/env bash
# hack/incluster-test.sh OUT_DIR: the in-cluster nightly path on the bed
# (the CronJob an operator installs), with the manifests a user applies (suites/deploy, through the
# bed overlays hack/incluster/nightly and …/marks) and the images `make images` built:
#   1. the CronJob fires (every minute here) and its Job runs the smoke
#      suite as the rdmasuite-runner ServiceAccount, in namespace rdmasuite:
#      the Job completes, the latest result comes back from the ConfigMap
#      with the documented command and renders with exit 0, and the run's
#      files are on the results volume;
#   2. the acceptance Job (overlays/acceptance, through hack/incluster/
#      acceptance) with a non-empty thresholds overlay in its ConfigMap: a
#      run that finds failures (suite=rdma on the bed's host nodes, which
#      advertise RDMA without a device) fails its Job, the ConfigMap says
#      exit 1, and node-2's memlock (8 MiB) fails against the overlay's
#      16 MiB floor, where the built-in 1 MiB passes it;
#   3. what the ServiceAccount may and must not do (kubectl auth can-i),
#      and 3b. a run whose namespace creation is forbidden: both while the
#      CronJob of step 1 waits for its minute;
#   4. the runner pod itself meets Pod Security "restricted";
#   5. with the opt-in node-marks component, a failing run annotates the
#      nodes and taints those whose own checks failed;
#   6. kubectl delete -k leaves nothing, and no node keeps a mark.
# Needs the bed up (host nodes; guests optional) with the runner image loaded.
set -euo pipefail
cd "$(dirname "$0")/.."
. hack/versions.sh
out=${1:?usage: hack/incluster-test.sh OUT_DIR}
mkdir -p "$out"
kc() { "$K8S_BIN_DIR/kubectl" --kubeconfig "$BED_DIR/kubeconfig" "$@"; }
ns=rdmasuite
sa=system:serviceaccount:$ns:rdmasuite-runner
resdir=$BED_DIR/incluster-results
make -s rdmasuite
rdmasuite=$PWD/bin/rdmasuite

teardown() {
  kc annotate nodes --all rdmasuite.io/last-result- rdmasuite.io/last-run- rdmasuite.io/last-checked- \
    rdmasuite.io/valid-until- rdmasuite.io/last-failures- >/dev/null 2>&1 || true
  kc taint nodes --all rdmasuite.io/failed- >/dev/null 2>&1 || true
  kc delete -k hack/incluster/marks --ignore-not-found --wait=true --timeout=180s >/dev/null 2>&1 || true
  kc delete pv rdmasuite-results-bed --ignore-not-found >/dev/null 2>&1 || true
  rm -rf "$resdir"
}
trap teardown EXIT
# hostPath ignores fsGroup: the directory belongs to the runner's uid.
mkdir -p "$resdir"
chown 65532:65532 "$resdir"

# The documented way to fetch the latest result (README "In-cluster runs").
latest() {
  kc -n "$ns" get configmap rdmasuite-latest -o 'jsonpath={.binaryData.results\.json\.gz}' | base64 -d | gunzip >"$1"
}
job_logs() { kc -n "$ns" logs "job/$1" --tail=40 2>&1 || true; }

echo "--- 1. the CronJob fires; its Job runs the smoke suite as the runner ServiceAccount"
t=$SECONDS
kc apply -k hack/incluster/nightly >"$out/apply.txt"
# Steps 3 and 3b need only the applied RBAC: they run while the CronJob
# waits for its minute (on average half of one). The API
# server's RBAC authorizer learns new bindings from its watch: the table
# waits until the first right it grants is seen (when the step ran after
# the Job, a minute had always passed).
echo "--- 3. what the runner ServiceAccount may do, and must not (while the CronJob waits for its minute)"
for _ in $(seq 1 60); do
  [[ $(kc auth can-i create pods -n "$ns" --as "$sa" 2>/dev/null) == yes ]] && break
  sleep 0.5
done
bad=0
# shellcheck source=can-i.sh
. hack/can-i.sh
can create pods "$ns" yes
can delete pods "$ns" yes
can get pods:log "$ns" yes
can create pods:exec "$ns" yes
can watch pods "$ns" yes
can create jobs.batch "$ns" yes
can create services "$ns" yes
can list nodes - yes
can watch nodes - yes
# (network-attachment-definitions is not asked: without Multus' CRD
# kubectl cannot resolve its group and asks about a core resource instead.)
can update configmaps/rdmasuite-latest "$ns" yes
can create pods default no
can create pods kube-system no
can create namespaces - no
can delete namespaces - no
can delete namespaces/rdmasuite - no
can get secrets "$ns" no
can list secrets - no
can create pods:attach "$ns" no
can create pods:exec default no
can create pods:portforward "$ns" no
can create pods:eviction "$ns" no
can update nodes - no
can patch nodes - no
can delete nodes - no
can create persistentvolumes - no
can delete persistentvolumes - no
can update configmaps/rdmasuite-thresholds "$ns" no
can create roles.rbac.authorization.k8s.io "$ns" no
can create clusterrolebindings.rbac.authorization.k8s.io - no
can create serviceaccounts:token "$ns" no
((bad == 0)) || { echo "$bad permission(s) differ from the least-privilege table"; exit 1; }

echo "--- 3b. a run whose namespace creation is forbidden is a result, not a log line"
# As the runner ServiceAccount (a short-lived token), without --namespace:
# the suite must record setup/namespace as an error with the API's refusal
# and the RBAC fix, exit 1 as its results say (README "Exit codes": an
# error row), render it in JUnit, the page and the report, and leave
# nothing behind.
t3b=$SECONDS
fb=$out/forbidden
mkdir -p "$fb"
token=$(kc -n "$ns" create token rdmasuite-runner --duration=10m)
server=$(kc config view --minify -o 'jsonpath={.clusters[0].cluster.server}')
ca=$(kc config view --raw --minify --flatten -o 'jsonpath={.clusters[0].cluster.certificate-authority-data}')
cat >"$fb/kubeconfig" <<KC
apiVersion: v1
kind: Config
clusters: [{name: bed, cluster: {server: "$server", certificate-authority-data: "$ca"}}]
users: [{name: runner, user: {token: "$token"}}]
contexts: [{name: runner, context: {cluster: bed, user: runner}}]
current-context: runner
KC
suite_bin=${SUITE_BIN:-}
if [[ -z $suite_bin ]]; then suite_bin=$fb/suites.test; go test -c -o "$suite_bin" ./suites; fi
before=$(kc get ns -o name | sort)
rc=0
(cd suites && exec "$suite_bin" --kubeconfig="$fb/kubeconfig" --labels suite=smoke --report-dir="$fb/results") >"$fb/run.log" 2>&1 || rc=$?
[[ $rc == 1 ]] || { tail -20 "$fb/run.log"; echo "the forbidden run exited $rc, want 1 (an error row)"; exit 1; }
hack/tool.sh expectresults -results "$fb/results/results.json" -expect hack/incluster/forbidden-expect.txt
grep -q 'RBAC' "$fb/results/results.json" || { echo "the setup row carries no RBAC fix"; exit 1; }
rc=0
"$rdmasuite" report "$fb/results/results.json" --format junit -o "$fb/junit.xml" || rc=$?
[[ $rc == 1 ]] && grep -q 'setup/namespace' "$fb/junit.xml" && grep -q '<error message=.*RBAC' "$fb/junit.xml" ||
  { cat "$fb/junit.xml"; echo "JUnit (exit $rc) has no failing setup/namespace case"; exit 1; }
compgen -G "$fb/results/*.html" >/dev/null && grep -lq 'setup/namespace' "$fb/results/"*.html ||
  { ls "$fb/results"; echo "the acceptance page does not name setup/namespace"; exit 1; }
rc=0
"$rdmasuite" report "$fb/results/results.json" >"$fb/report.txt" || rc=$?
[[ $rc == 1 ]] && grep -q RBAC "$fb/report.txt" || { cat "$fb/report.txt"; echo "rdmasuite report on the forbidden run exits $rc (want 1) or lacks the fix"; exit 1; }
[[ $(kc get ns -o name | sort) == "$before" ]] || { echo "the forbidden run changed the namespaces"; exit 1; }
echo "forbidden namespace: exit 1, setup/namespace error with the API's refusal and the RBAC fix in results, JUnit, page and report, $((SECONDS - t3b)) s"
echo "--- 1. (continued) the CronJob fires"
job=
for _ in $(seq 1 150); do
  job=$(kc -n "$ns" get jobs -o 'jsonpath={range .items[?(@.metadata.ownerReferences[0].kind=="CronJob")]}{.metadata.name}{"\n"}{end}' | head -1)
  [[ -n $job ]] && break
  sleep 2
done
[[ -n $job ]] || { kc -n "$ns" get cronjob,jobs,pods -o wide; echo "the CronJob did not fire within 5 minutes"; exit 1; }
# One run is enough: no second one starts while this is judged.
kc -n "$ns" patch cronjob rdmasuite-nightly --type=merge -p '{"spec":{"suspend":true}}' >/dev/null
echo "CronJob fired: job $job after $((SECONDS - t)) s"
if ! kc -n "$ns" wait --for=condition=Complete "job/$job" --timeout=300s >/dev/null; then
  job_logs "$job"; kc -n "$ns" get pods -o wide; echo "the smoke run's Job did not complete"; exit 1
fi
job_logs "$job" >"$out/smoke-job.log"
latest "$out/smoke.json"
[[ $(kc -n "$ns" get configmap rdmasuite-latest -o 'jsonpath={.data.exit-code}') == 0 ]] ||
  { kc -n "$ns" get configmap rdmasuite-latest -o yaml | head -40; echo "the latest-result ConfigMap does not say exit 0"; exit 1; }
"$rdmasuite" report "$out/smoke.json" | tail -3
compgen -G "$resdir/results-*.json" >/dev/null || { ls -la "$resdir"; echo "no results file on the results volume"; exit 1; }
echo "smoke run passed in-cluster: Job complete, results from the ConfigMap render with exit 0, $(ls "$resdir" | wc -l) file(s) on the volume, $((SECONDS - t)) s"

echo "--- 2. the acceptance Job (overlays/acceptance) with a thresholds overlay: a run that finds failures fails its Job"
t=$SECONDS
kc apply -k hack/incluster/acceptance >/dev/null
if ! kc -n "$ns" wait --for=condition=Failed job/rdmasuite-acceptance --timeout=300s >/dev/null; then
  job_logs rdmasuite-acceptance; kc -n "$ns" get jobs,pods -o wide; echo "the rdma run on RDMA-less nodes did not fail its Job"; exit 1
fi
job_logs rdmasuite-acceptance >"$out/failing-job.log"
[[ $(kc -n "$ns" get configmap rdmasuite-latest -o 'jsonpath={.data.exit-code}') == 1 ]] ||
  { echo "the latest-result ConfigMap does not say exit 1 after the failing run"; exit 1; }
latest "$out/failing.json"
rc=0
"$rdmasuite" report "$out/failing.json" >"$out/failing-report.txt" || rc=$?
[[ $rc == 1 ]] || { cat "$out/failing-report.txt"; echo "rdmasuite report on the failing run exits $rc, want 1"; exit 1; }
# The ConfigMap's overlay replaced the built-in A100 SKU: the Job said so,
# and node-2's memlock check failed against the overlay's 16 MiB floor.
kc -n "$ns" logs job/rdmasuite-acceptance >"$out/failing-job-full.log" 2>&1 || true
grep -q 'the overlay replaces A100/HDR-200' "$out/failing-job-full.log" ||
  { head -20 "$out/failing-job-full.log"; echo "the Job did not report reading the thresholds overlay"; exit 1; }
# The overlay's site SKU shadows built-ins: the header says which, and
# names the SKU and file that judge the bed's nodes.
grep -q 'site-h100-pcie ("NVIDIA-H100-PCIe\*") takes over H100-PCIe/NDR-400 (part of' "$out/failing-job-full.log" &&
  grep -q 'takes over H100/NDR-400 (part of' "$out/failing-job-full.log" ||
  { grep 'thresholds' "$out/failing-job-full.log"; echo "the Job's header does not name the built-ins the overlay takes over"; exit 1; }
grep -Eq 'thresholds: SKU A100/HDR-200 from [^ ]+skus.yaml judges [0-9]+ node\(s\): .*node-1' "$out/failing-job-full.log" ||
  { grep 'thresholds' "$out/failing-job-full.log"; echo "the Job's header does not name the SKU and file judging node-1"; exit 1; }
# The shipped Job runs unedited (no --image, --variants or --node-selector):
# the runner's own version picks the probe image, auto skips hostdev on a
# cluster without Multus and says why, and the default selection takes the
# nodes that advertise the RDMA resource.
grep -q 'variants: shared-dev (auto: what the cluster can run; skipped hostdev (Multus is not installed' "$out/failing-job-full.log" &&
  grep -Eq 'nodes: 2 selected \(no --node-selector' "$out/failing-job-full.log" ||
  { grep -E 'variants|nodes:' "$out/failing-job-full.log"; echo "the Job's header does not say which variants and nodes its defaults chose"; exit 1; }
hack/tool.sh expectresults -results "$out/failing.json" -expect hack/incluster/acceptance-expect.txt
grep -q 'hack/incluster/acceptance/skus.yaml' "$out/failing.json" ||
  { echo "no check in the results was judged against the overlay's threshold"; exit 1; }
echo "acceptance Job: Failed, ConfigMap exit-code 1, report exit 1, node-2's memlock failed against the overlay's 16 MiB floor, $((SECONDS - t)) s"

echo "--- 4. the runner pod meets Pod Security \"restricted\" (only the probes need more)"
# A server-side dry run of enforce=restricted lists the pods that would
# violate it. The control, a probe-like pod adding CAP_IPC_LOCK (never
# started), must be listed: the check can tell; the runner must not be.
pod=$(kc -n "$ns" get pods -l job-name="$job" -o 'jsonpath={.items[0].metadata.name}')
kc -n "$ns" run psa-control --image=docker.io/rdmasuite/pause:dev --restart=Never \
  --overrides='{"spec":{"nodeName":"no-such-node","containers":[{"name":"psa-control","image":"docker.io/rdmasuite/pause:dev","securityContext":{"capabilities":{"add":["IPC_LOCK"]}}}]}}' >/dev/null
warn=$(kc label --dry-run=server --overwrite ns "$ns" pod-security.kubernetes.io/enforce=restricted 2>&1 >/dev/null || true)
# Force: the pod is bound to a node that does not exist, so no kubelet
# would ever confirm a graceful delete, and the namespace teardown below
# would wait for the pod GC to reap it (about 40 s).
kc -n "$ns" delete pod psa-control --grace-period=0 --force --wait=false >/dev/null 2>&1
grep -q 'psa-control' <<<"$warn" || { echo "$warn"; echo "the dry run did not list the IPC_LOCK control pod: this check cannot tell"; exit 1; }
if grep -q "$pod" <<<"$warn"; then
  echo "$warn"; echo "the runner pod $pod would violate restricted"; exit 1
fi
echo "runner pod $pod: no restricted violation (the IPC_LOCK control pod: $(grep -o 'psa-control[^,]*' <<<"$warn" | head -1 | cut -c1-120))"

echo "--- 5. opt-in node marks (components/node-marks): every node annotated, the taint where the failure is the node's"
t=$SECONDS
kc apply -k hack/incluster/marks >/dev/null
bad=0
can patch nodes - yes
can update nodes - no
can delete nodes - no
((bad == 0)) || { echo "the node-marks component grants other than get/patch on nodes"; exit 1; }
# The rdma run on RDMA-less nodes again, now annotating, and tainting
# (PreferNoSchedule: the bed's later stages still schedule) the nodes
# whose own checks failed (memlock/rlimit on node-1, bandwidth/ports on
# both: single-node checks).
kc -n "$ns" create job rdmasuite-marks --from=cronjob/rdmasuite-nightly --dry-run=client -o yaml |
  sed -E 's/--labels=suite=smoke/--labels=suite=rdma/; s/^( *)- --node-annotations$/\1- --node-annotations\n\1- --taint-failed-nodes\n\1- --taint-effect=PreferNoSchedule/' >"$out/marks-job.yaml"
grep -q -- '--taint-failed-nodes' "$out/marks-job.yaml" || { cat "$out/marks-job.yaml"; echo "could not make the node-marks Job"; exit 1; }
kc apply -f "$out/marks-job.yaml" >/dev/null
if ! kc -n "$ns" wait --for=condition=Failed job/rdmasuite-marks --timeout=300s >/dev/null; then
  job_logs rdmasuite-marks; echo "the node-marks rdma run did not fail its Job"; exit 1
fi
job_logs rdmasuite-marks >"$out/marks-job.log"
for n in node-1 node-2; do
  res=$(kc get node "$n" -o 'jsonpath={.metadata.annotations.rdmasuite\.io/last-result}')
  until_=$(kc get node "$n" -o 'jsonpath={.metadata.annotations.rdmasuite\.io/valid-until}')
  fails=$(kc get node "$n" -o 'jsonpath={.metadata.annotations.rdmasuite\.io/last-failures}')
  taint=$(kc get node "$n" -o 'jsonpath={range .spec.taints[?(@.key=="rdmasuite.io/failed")]}{.effect}{end}')
  echo "  $n: last-result=$res valid-until=$until_ taint=${taint:-none} failures: ${fails:0:120}"
  [[ $res == fail && -n $until_ && $fails == *bandwidth/ports* && $taint == PreferNoSchedule ]] ||
    { tail -20 "$out/marks-job.log"; echo "$n is not marked failed and tainted as its own failed checks say"; exit 1; }
done
echo "node marks: both nodes annotated fail with valid-until and tainted PreferNoSchedule, $((SECONDS - t)) s"

echo "--- 6. delete -k leaves nothing, and no node keeps a mark"
trap - EXIT
teardown
left=$(kc get "ns/$ns" clusterrole/rdmasuite-runner clusterrolebinding/rdmasuite-runner pv/rdmasuite-results-bed -o name 2>/dev/null || true)
[[ -z $left ]] || { echo "left after delete -k: $left"; exit 1; }
marks=$(kc get nodes -o 'jsonpath={range .items[*]}{.metadata.annotations.rdmasuite\.io/last-result}{.spec.taints[?(@.key=="rdmasuite.io/failed")].key}{end}')
[[ -z $marks ]] || { echo "a node keeps a mark after teardown: $marks"; exit 1; }
echo "in-cluster: nothing left"
