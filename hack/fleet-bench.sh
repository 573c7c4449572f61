#!/usr/bin/env bash
# Fleet-scale benchmark (does the runner keep up at 1024 nodes?): the pairing schedule and the bandwidth
# runner against simulated nodes. Starts its OWN private control plane
# (etcd + kube-apiserver on loopback, state in a temp dir; never the shared
# bed of hack/bed.sh), adds FLEET_NODES simulated nodes with kwok, runs
# hack/tools/fleetbench, prints its tables, and removes everything on exit.
#
# Simulated: nodes (kwok, no kubelet), pod lifecycle (kwok Stages: Running
# with a pod IP at once, Succeeded after PROBE_CLIENT_MS / PROBE_SERVER_MS),
# probe output (kwok ClusterLogs: one canned bandwidth result, served
# through the apiserver's log proxy). Real: apiserver + etcd, the runner's
# code and client, pod create/poll/log/delete, the verdicts.
#
# The suite's default path (FLEET_PATH=default): one probe pod per node
# that holds, and every round's server and client run exec'd in it over
# pods/exec. kwok runs an exec'd command on its own host (its ClusterExec,
# "local"), and the runner exec's /usr/local/bin/rdmaprobe: kwok runs in a
# private mount namespace where hack/tools/probestandin is bind-mounted
# there (over a tmpfs when the host has no such file; nothing is written
# to the host's disk). The stand-in sleeps PROBE_CLIENT_MS / PROBE_SERVER_MS
# and prints a healthy probe's output for the ops, sizes and rails asked,
# port counters included. FLEET_PATH=pod-pairs runs the runner without an
# executor (a pod pair per pair and round, the stages above).
#
# Env: FLEET_NODES (256), FLEET_SIZES (16,64,256), FLEET_PAIRINGS (ring,all),
# FLEET_DOCTOR_SIZES (FLEET_NODES; empty: no doctor run), NODE_PROBE_MS (2000: the host probe window),
# FLEET_CONFIRM_SIZE (256; empty: none): a ring of that size with one failing node (FLEET_CONFIRM_BAD,
# fleet-0003), run with the suite's default --confirm: the confirmation round's pairs, time and rows.
# FLEET_CONCURRENCY (0, the suite's default: a round's pairs all at once), FLEET_MAX_PAIRS (300: larger
# schedules are reported from the schedule only), FLEET_PORT_BASE (16443:
# apiserver; +1 kwok's kubelet server; etcd on 22379/22380), FLEET_PATH (default | pod-pairs),
# FLEET_FAULT_DELETE_PCT / FLEET_FAULT_NOTREADY (default path: after each scenario, the same run
# again with that share of the node pods deleted / that many nodes NotReady half a pair time into
# round 1, and what the runner reported for those nodes), FLEET_EXEC_PROTOCOL (auto: the suite's
# exec, WebSocket first; spdy: an experiment, SPDY only), FLEET_CPUPROFILE (a file: the runner's CPU profile).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=versions.sh
source hack/versions.sh

KWOK_VERSION=v0.8.0
KWOK_BIN_DIR=$RDMASUITE_CACHE/kwok-$KWOK_VERSION
NODES=${FLEET_NODES:-256}
SIZES=${FLEET_SIZES:-16,64,256}
PAIRINGS=${FLEET_PAIRINGS:-ring,all}
CONC=${FLEET_CONCURRENCY:-0}
MAX_PAIRS=${FLEET_MAX_PAIRS:-300}
API_PORT=${FLEET_PORT_BASE:-16443}
KWOK_PORT=$((API_PORT + 1))
ETCD_PORT=${FLEET_ETCD_PORT:-22379}
PROBE_CLIENT_MS=${PROBE_CLIENT_MS:-1000}
PROBE_SERVER_MS=${PROBE_SERVER_MS:-1500}
NODE_PROBE_MS=${NODE_PROBE_MS:-2000}
DOCTOR_SIZES=${FLEET_DOCTOR_SIZES-$NODES}
RUN_PATH=${FLEET_PATH:-default}
FAULT_DELETE_PCT=${FLEET_FAULT_DELETE_PCT:-0}
FAULT_NOTREADY=${FLEET_FAULT_NOTREADY:-0}
EXEC_PROTOCOL=${FLEET_EXEC_PROTOCOL:-auto}
PROBE_BIN=/usr/local/bin/rdmaprobe # what the runner exec's (internal/runner's probeBinary)
NICE=(nice -n 19)

for b in etcd:$ETCD_BIN_DIR kube-apiserver:$K8S_BIN_DIR kubectl:$K8S_BIN_DIR; do
  if [ ! -x "${b#*:}/${b%%:*}" ]; then
    echo "fleet-bench: ${b%%:*} is not in the cache (${b#*:}); build it with hack/build-k8s.sh first" >&2
    exit 1
  fi
done
for p in "$API_PORT" "$KWOK_PORT" "$ETCD_PORT" "$((ETCD_PORT + 1))"; do
  if ss -ltnH "sport = :$p" | grep -q .; then
    echo "fleet-bench: port $p is in use: set FLEET_PORT_BASE / FLEET_ETCD_PORT" >&2
    exit 1
  fi
done

# kwok: built once per version into the cache, like hack/build-k8s.sh.
if [ ! -x "$KWOK_BIN_DIR/kwok" ]; then
  echo "fleet-bench: building kwok $KWOK_VERSION into $KWOK_BIN_DIR"
  mkdir -p "$KWOK_BIN_DIR"
  (cd /tmp && GOFLAGS= GOBIN="$KWOK_BIN_DIR" "${NICE[@]}" go install "sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION")
fi

DIR=$(mktemp -d /tmp/rdmasuite-fleet-bench.XXXXXX)
PIDS=()
cleanup() {
  # Reverse start order (kwok, apiserver, etcd), each gone before the next
  # stops: an apiserver whose etcd went first hangs in its shutdown.
  local pid
  for ((i = ${#PIDS[@]} - 1; i >= 0; i--)); do
    pid=${PIDS[i]}
    kill "$pid" 2>/dev/null || continue
    for ((t = 0; t < 40; t++)); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.25
    done
    kill -9 "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  rm -rf "$DIR"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

echo "fleet-bench: building hack/tools/fleetbench and hack/tools/probestandin"
(cd hack && "${NICE[@]}" go build -o "$DIR/fleetbench" ./tools/fleetbench && "${NICE[@]}" go build -o "$DIR/rdmaprobe-standin" ./tools/probestandin)

# PKI: one self-signed serving cert (apiserver and kwok's kubelet server),
# the service-account key, a token for the benchmark's client.
openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=fleet-bench \
  -addext "subjectAltName=IP:127.0.0.1,DNS:localhost" \
  -keyout "$DIR/serving.key" -out "$DIR/serving.crt" 2>/dev/null
openssl genrsa -out "$DIR/sa.key" 2048 2>/dev/null
openssl rsa -in "$DIR/sa.key" -pubout -out "$DIR/sa.pub" 2>/dev/null
TOKEN=$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')
echo "$TOKEN,fleet-bench,fleet-bench,system:masters" >"$DIR/tokens.csv"
KUBECONFIG_FILE=$DIR/kubeconfig
cat >"$KUBECONFIG_FILE" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: fleet
  cluster: {server: "https://127.0.0.1:$API_PORT", certificate-authority: "$DIR/serving.crt"}
users:
- name: fleet
  user: {token: "$TOKEN"}
contexts:
- name: fleet
  context: {cluster: fleet, user: fleet}
current-context: fleet
EOF

start() { # name cmd...: runs niced in the background, log in $DIR
  local name=$1
  shift
  "${NICE[@]}" "$@" >"$DIR/$name.log" 2>&1 &
  PIDS+=($!)
}
wait_for() { # seconds what cmd...
  local t=$1 what=$2
  shift 2
  for ((i = 0; i < t * 2; i++)); do
    if "$@" >/dev/null 2>&1; then return 0; fi
    sleep 0.5
  done
  echo "fleet-bench: $what not ready after ${t}s; its log:" >&2
  tail -20 "$DIR/$what.log" >&2 || true
  exit 1
}
kc() { "$K8S_BIN_DIR/kubectl" --kubeconfig "$KUBECONFIG_FILE" "$@"; }

start etcd "$ETCD_BIN_DIR/etcd" --name fleet --data-dir "$DIR/etcd" \
  --listen-client-urls "http://127.0.0.1:$ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
  --listen-peer-urls "http://127.0.0.1:$((ETCD_PORT + 1))" --initial-advertise-peer-urls "http://127.0.0.1:$((ETCD_PORT + 1))" \
  --initial-cluster "fleet=http://127.0.0.1:$((ETCD_PORT + 1))" --log-level warn
# No controller-manager or scheduler: pods are pinned (spec.nodeName) and
# deleted with grace 0; privileged pods are allowed (the doctor's host probe
# is one); ServiceAccount admission is off (no token
# controller; the probe pods mount no token).
start kube-apiserver "$K8S_BIN_DIR/kube-apiserver" \
  --etcd-servers "http://127.0.0.1:$ETCD_PORT" \
  --bind-address 127.0.0.1 --secure-port "$API_PORT" --advertise-address 127.0.0.1 \
  --tls-cert-file "$DIR/serving.crt" --tls-private-key-file "$DIR/serving.key" \
  --token-auth-file "$DIR/tokens.csv" --authorization-mode AlwaysAllow \
  --service-account-issuer https://kubernetes.default.svc \
  --service-account-key-file "$DIR/sa.pub" --service-account-signing-key-file "$DIR/sa.key" \
  --service-cluster-ip-range 10.252.0.0/24 --disable-admission-plugins ServiceAccount \
  --kubelet-preferred-address-types InternalIP --allow-privileged=true --v=0
wait_for 90 kube-apiserver kc get --raw /readyz

# kwok's stages and canned logs; the stand-in's rails and link rate.
"${NICE[@]}" "$DIR/fleetbench" logs -thresholds thresholds/skus.yaml -sku A100/HDR-200 >"$DIR/probe.log"
read -r SKU_PORTS SKU_RATE < <("$DIR/fleetbench" sku -thresholds thresholds/skus.yaml -sku A100/HDR-200)
cat >"$DIR/kwok.yaml" <<EOF
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata: {name: node-initialize}
spec:
  resourceRef: {apiGroup: v1, kind: Node}
  selector:
    matchExpressions:
    - {key: '.status.conditions.[] | select( .type == "Ready" ) | .status', operator: NotIn, values: ['True']}
    # A node the bench turned NotReady (-fault-notready) stays so.
    - {key: '.metadata.labels["fleetbench.rdmasuite.io/notready"]', operator: DoesNotExist}
  next:
    statusTemplate: |
      {{ \$now := Now }}
      conditions:
      {{ range NodeConditions }}
      - lastHeartbeatTime: {{ \$now | Quote }}
        lastTransitionTime: {{ \$now | Quote }}
        message: {{ .message | Quote }}
        reason: {{ .reason | Quote }}
        status: {{ .status | Quote }}
        type: {{ .type | Quote }}
      {{ end }}
      addresses:
      - {address: {{ NodeIP | Quote }}, type: InternalIP}
      - {address: {{ .metadata.name | Quote }}, type: Hostname}
      daemonEndpoints:
        kubeletEndpoint:
          Port: {{ NodePort }}
      allocatable:
      {{ YAML .status.allocatable 1 }}
      capacity:
      {{ YAML .status.capacity 1 }}
      nodeInfo:
        architecture: amd64
        kubeletVersion: kwok-$KWOK_VERSION
        operatingSystem: linux
      phase: Running
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata: {name: pod-ready}
spec:
  resourceRef: {apiGroup: v1, kind: Pod}
  selector:
    matchExpressions:
    - {key: .metadata.deletionTimestamp, operator: DoesNotExist}
    - {key: .status.phase, operator: In, values: [Pending]}
  next:
    statusTemplate: |
      {{ \$now := Now }}
      conditions:
      - {lastTransitionTime: {{ \$now | Quote }}, status: "True", type: Ready}
      containerStatuses:
      {{ range .spec.containers }}
      - image: {{ .image | Quote }}
        name: {{ .name | Quote }}
        ready: true
        restartCount: 0
        state: {running: {startedAt: {{ \$now | Quote }}}}
      {{ end }}
      {{ \$podIPs := PodIPsWith .spec.nodeName false .metadata.uid .metadata.name .metadata.namespace }}
      hostIP: {{ NodeIP | Quote }}
      podIP: {{ index \$podIPs 0 | Quote }}
      phase: Running
      startTime: {{ \$now | Quote }}
EOF
# A probe pod ends (Succeeded) DELAY ms after Running, picked by one of its
# container's arguments: the bandwidth server and client by their role
# (args[1]), the doctor's host probe by its subcommand (args[0], "node").
# A sixth argument adds a selector expression; a seventh is the exit code.
completion_stage() { # name arg-index value delay-ms [expression [exit-code]]
  cat >>"$DIR/kwok.yaml" <<EOF
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata: {name: $1}
spec:
  resourceRef: {apiGroup: v1, kind: Pod}
  selector:
    matchExpressions:
    - {key: .metadata.deletionTimestamp, operator: DoesNotExist}
    - {key: .status.phase, operator: In, values: [Running]}
    - {key: '.spec.containers.[0].args.[$2]', operator: In, values: [$3]}
${5:+    - $5}
  delay: {durationMilliseconds: $4}
  next:
    statusTemplate: |
      {{ \$now := Now }}
      containerStatuses:
      {{ range .spec.containers }}
      - image: {{ .image | Quote }}
        name: {{ .name | Quote }}
        ready: false
        restartCount: 0
        state: {terminated: {exitCode: ${6:-0}, reason: ${6:+Error}${6:-Completed}, startedAt: {{ \$now | Quote }}, finishedAt: {{ \$now | Quote }}}}
      {{ end }}
      phase: ${6:+Failed}${6:-Succeeded}
EOF
}
# The confirmation scenario's bad node: in its run's namespace
# (CONFIRM_NS), every probe run on CONFIRM_BAD fails (exit 1), as client
# and as server, in the rounds and again when measured against a clean
# partner; everywhere else that node is healthy.
CONFIRM_BAD=${FLEET_CONFIRM_BAD:-fleet-0003}
CONFIRM_SIZE=${FLEET_CONFIRM_SIZE-256}
CONFIRM_NS=rdmasuite-fbconfirm
for role in client server; do
  ms=$PROBE_CLIENT_MS
  [ "$role" = server ] && ms=$PROBE_SERVER_MS
  completion_stage "probe-$role-complete" 1 "$role" "$ms" "{key: .spec.nodeName, operator: NotIn, values: [$CONFIRM_BAD]}"
  completion_stage "probe-$role-complete-bad-elsewhere" 1 "$role" "$ms" "{key: .spec.nodeName, operator: In, values: [$CONFIRM_BAD]}
    - {key: .metadata.namespace, operator: NotIn, values: [$CONFIRM_NS]}"
  completion_stage "probe-$role-fail-bad" 1 "$role" "$ms" "{key: .spec.nodeName, operator: In, values: [$CONFIRM_BAD]}
    - {key: .metadata.namespace, operator: In, values: [$CONFIRM_NS]}" 1
done
completion_stage probe-node-complete 0 node "$NODE_PROBE_MS"
cat >>"$DIR/kwok.yaml" <<EOF
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata: {name: pod-delete}
spec:
  resourceRef: {apiGroup: v1, kind: Pod}
  selector:
    matchExpressions:
    - {key: .metadata.deletionTimestamp, operator: Exists}
  next: {delete: true}
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: ClusterLogs
metadata: {name: canned-probe-output}
spec:
  logs:
  - containers: [probe]
    logsFile: $DIR/probe.log
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: ClusterExec
metadata: {name: probe-standin}
spec:
  execs:
  - containers: [probe]
    local:
      envs:
      - {name: PROBE_CLIENT_MS, value: '$PROBE_CLIENT_MS'}
      - {name: PROBE_SERVER_MS, value: '$PROBE_SERVER_MS'}
      - {name: PROBE_PORTS, value: '$SKU_PORTS'}
      - {name: PROBE_RATE_GBPS, value: '$SKU_RATE'}
EOF

"${NICE[@]}" "$DIR/fleetbench" nodes -kubeconfig "$KUBECONFIG_FILE" -count "$NODES" -subsets "$SIZES${DOCTOR_SIZES:+,$DOCTOR_SIZES}${CONFIRM_SIZE:+,$CONFIRM_SIZE}"
# kwok in a mount namespace of its own, the stand-in at $PROBE_BIN there
# only: over the host's file when it has one, else over an empty file in a
# tmpfs mounted on its directory (the stand-in is all kwok exec's); both
# mounts go with kwok, nothing is written to the host's disk.
STANDIN_MOUNT="set -e
if [ ! -e $PROBE_BIN ]; then mount -t tmpfs -o size=1m,mode=0755 fleet-bench ${PROBE_BIN%/*}; : >$PROBE_BIN; fi
mount --bind $DIR/rdmaprobe-standin $PROBE_BIN
exec \"\$@\""
start kwok unshare -m --propagation private sh -c "$STANDIN_MOUNT" kwok "$KWOK_BIN_DIR/kwok" --config "$DIR/kwok.yaml" --kubeconfig "$KUBECONFIG_FILE" \
  --manage-all-nodes --node-ip 127.0.0.1 --node-port "$KWOK_PORT" \
  --server-address "127.0.0.1:$KWOK_PORT" --tls-cert-file "$DIR/serving.crt" --tls-private-key-file "$DIR/serving.key" \
  --cidr 10.250.0.0/16
ready_nodes() { [ "$(kc get nodes --no-headers 2>/dev/null | grep -c ' Ready ')" -ge "$NODES" ]; }
wait_for 120 kwok ready_nodes
echo "fleet-bench: $NODES simulated nodes Ready (kwok $KWOK_VERSION); simulated probe: client ${PROBE_CLIENT_MS} ms, server ${PROBE_SERVER_MS} ms after Running"

"${NICE[@]}" "$DIR/fleetbench" run -kubeconfig "$KUBECONFIG_FILE" -sizes "$SIZES" -pairings "$PAIRINGS" \
  -concurrency "$CONC" -max-pairs "$MAX_PAIRS" -thresholds thresholds/skus.yaml -probe-sec "$(echo "$PROBE_SERVER_MS" | awk '{print $1/1000}')" \
  -confirm-size "${CONFIRM_SIZE:-0}" -confirm-bad "$CONFIRM_BAD" -path "$RUN_PATH" -exec-protocol "$EXEC_PROTOCOL" \
  -fault-delete-pct "$FAULT_DELETE_PCT" -fault-notready "$FAULT_NOTREADY" -procs "etcd=${PIDS[0]},kube-apiserver=${PIDS[1]},kwok=${PIDS[2]}" ${FLEET_CPUPROFILE:+-cpuprofile "$FLEET_CPUPROFILE"}

if [ -n "$DOCTOR_SIZES" ]; then
  # The doctor as the preflight feature runs it: API gather, one host probe
  # pod per node (completed after NODE_PROBE_MS with the canned report), the
  # rules with the host-configuration and fleet-consistency ones.
  "${NICE[@]}" "$DIR/fleetbench" doctor -kubeconfig "$KUBECONFIG_FILE" -sizes "$DOCTOR_SIZES" -thresholds thresholds/skus.yaml \
    -window "$(echo "$NODE_PROBE_MS" | awk '{print $1/1000}')s"
fi
