#!/usr/bin/env bash
# The local Kubernetes test bed: etcd, kube-apiserver, kube-controller-manager,
# kube-scheduler and, per node, its own containerd + kubelet, all on this
# machine. `bed.sh up|guests-boot|guests|down|status|apiserver-restart`. Bring-up is an ordered list of small
# steps; every step's log is under $BED_DIR/logs. `down` removes everything
# `up` made (processes, mounts, cgroups, netns, bridges, iptables chains), also
# after a failed `up`.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
. "$here/versions.sh"

NODES_CONF=${BED_NODES_CONF:-$here/bed-nodes.conf}
IMAGE_TAG=${IMAGE_TAG:-dev}
CP_IP=10.250.0.1          # control plane address on the bed link
BED_LINK=rsbed0
SERVICE_CIDR=10.96.0.0/16
APISERVER_PORT=6443
ETCD_PORT=12379
CGROUP_PARENT=rdmasuite-bed
UP_TIMEOUT=${BED_UP_TIMEOUT:-180}

log() { printf '%s bed: %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

# --- node table (hack/nodes-conf.sh: read_nodes FILE) ---------------------------
. "$here/nodes-conf.sh"
node_ip() { echo "10.250.0.$((11 + $1))"; }
node_dir() { echo "$BED_DIR/nodes/${NODE_NAME[$1]}"; }
node_bridge() { echo "rsbr$(($1 + 1))"; }
node_podcidr() { echo "10.244.$(($1 + 1)).0/24"; }
kubectl() { "$K8S_BIN_DIR/kubectl" --kubeconfig "$BED_DIR/kubeconfig" "$@"; }

# --- process bookkeeping ----------------------------------------------------
start_daemon() { # name cmd...
  local name=$1; shift
  mkdir -p "$BED_DIR/logs" "$BED_DIR/pids"
  # setsid: the daemon must not die with this shell, and must not get our
  # terminal's SIGINT; bed-down stops it by pid.
  setsid "$@" >>"$BED_DIR/logs/$name.log" 2>&1 </dev/null 9>&- &
  echo $! >"$BED_DIR/pids/$name.pid"
}
running_daemons() {
  local f pid
  for f in "$BED_DIR"/pids/*.pid; do
    [[ -e $f ]] || continue
    pid=$(cat "$f")
    kill -0 "$pid" 2>/dev/null && echo "$(basename "$f" .pid):$pid"
  done
  return 0
}
stop_daemon() { # name [timeout]
  local f="$BED_DIR/pids/$1.pid" pid i
  [[ -e $f ]] || return 0
  pid=$(cat "$f")
  if kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid" 2>/dev/null || true
    for ((i = 0; i < ${2:-20} * 10; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
  fi
  rm -f "$f"
}
wait_for() { # seconds description command...
  local secs=$1 what=$2; shift 2
  local deadline=$((SECONDS + secs))
  until "$@" >/dev/null 2>&1; do
    ((SECONDS < deadline)) || die "timed out after ${secs}s waiting for $what (logs: $BED_DIR/logs)"
    sleep 0.5
  done
}

# --- steps of `up` ----------------------------------------------------------
step_refuse_if_running() {
  local live
  live=$(running_daemons 2>/dev/null || true)
  if [[ -n $live ]]; then
    die "a bed is already running ($(echo $live | tr '\n' ' ')); use it (KUBECONFIG=$BED_DIR/kubeconfig) or run 'make bed-down' first"
  fi
  if [[ -e $BED_DIR/state ]]; then
    log "leftovers of an earlier bed found; cleaning them first"
    do_down
  fi
}

step_deps() {
  "$here/install-deps.sh" >&2
  "$here/build-k8s.sh" >&2
}

step_images() {
  local img=$BED_DIR/images bin=$BED_DIR/bin
  mkdir -p "$img" "$bin"
  (cd "$repo/hack" && CGO_ENABLED=0 go build -o "$bin/pause" ./tools/pause &&
    go build -o "$bin/mkimage" ./tools/mkimage &&
    go build -o "$bin/basespec" ./tools/basespec &&
    CGO_ENABLED=0 go build -o "$bin/mofed-standin" ./tools/mofed-standin)
  "$bin/mkimage" -tag "rdmasuite/pause:$IMAGE_TAG" -o "$img/pause.tar" -entrypoint /pause "$bin/pause=/pause"
  # The MOFED driver container's stand-in for the guest nodes (hack/tools/
  # mofed-standin, deployed by hack/guestnode/nfs-cluster.sh).
  "$bin/mkimage" -tag "rdmasuite/mofed-standin:$IMAGE_TAG" -o "$img/mofed-standin.tar" \
    -entrypoint /usr/local/bin/mofed-standin "$bin/mofed-standin=/usr/local/bin/mofed-standin"
  # The probe and the runner: what `make images` builds for users (the same
  # target, tags docker.io/rdmasuite/{rdmaprobe,rdmasuite-runner}:$IMAGE_TAG),
  # written straight into $img, so every host node (import_images) and every
  # guest node (hack/guestnode/up.sh copies $img/*.tar) imports both.
  rm -f "$img/rdmaprobe.tar" "$img/rdmasuite-runner.tar"
  make -s --no-print-directory -C "$repo" images BIN_DIR="$bin" IMAGES_DIR="$img" \
    IMAGE_REPO=docker.io/rdmasuite IMAGE_TAG="$IMAGE_TAG" VERSION="$IMAGE_TAG" >&2
  [[ -s $img/rdmaprobe.tar && -s $img/rdmasuite-runner.tar ]] ||
    die "make images wrote no $img/rdmaprobe.tar or $img/rdmasuite-runner.tar"
}

# boot_guest_node NAME: up.sh NAME, once more when the guest kernel panicked
# during bring-up, or its clock raced (up.sh clock_check). CI saw the Debian
# kernel Oops in early boot under TCG with several vCPUs, and a boot on a
# busy host miscalibrates the TSC; no node had joined and no test had run, so
# a second boot loses nothing. The console is kept in $BED_DIR/logs and the
# cause printed, so the retry is never silent.
boot_guest_node() {
  local g=$1 attempt c
  for attempt in 1 2; do
    "$here/guestnode/up.sh" "$g" && return 0
    c=$BED_DIR/guestnodes/$g.failed/console.log
    ((attempt < 2)) && [[ -f $c ]] || return 1
    mkdir -p "$BED_DIR/logs"
    if grep -qa 'Kernel panic' "$c"; then
      cp "$c" "$BED_DIR/logs/$g-panic-console.log"
      log "$g: the guest kernel panicked during bring-up (boot $attempt of 2, no test ran; console kept in $BED_DIR/logs/$g-panic-console.log): booting it again"
      grep -a -m1 -B2 -A12 'BUG:\|Oops\|Kernel panic' "$c" | tr -d '\r' >&2 || true
    elif [[ -f $BED_DIR/guestnodes/$g.failed/clock-race.log ]]; then
      # up.sh's clock_check: a TSC miscalibrated at boot, not our fault
      # nor the test's; the next boot calibrates again.
      cp "$c" "$BED_DIR/logs/$g-clock-race-console.log"
      log "$g: the guest's clock raced ($(cat "$BED_DIR/guestnodes/$g.failed/clock-race.log"); boot $attempt of 2, no test ran; console kept in $BED_DIR/logs/$g-clock-race-console.log): booting it again"
    else
      return 1
    fi
    "$here/guestnode/down.sh" "$g" >&2 || true
  done
  return 1
}

step_network() {
  sysctl -qw net.ipv4.ip_forward=1
  # A port-less bridge: this kernel has no dummy links. Its addresses are
  # local, so the control plane and kubelets reach each other through lo.
  ip link show "$BED_LINK" >/dev/null 2>&1 || ip link add "$BED_LINK" type bridge
  ip addr replace "$CP_IP/24" dev "$BED_LINK"
  local i
  for i in "${!NODE_NAME[@]}"; do ip addr replace "$(node_ip "$i")/24" dev "$BED_LINK"; done
  ip link set "$BED_LINK" up
}

pki() { "$here/bed-pki.sh" "$@"; }
step_pki() {
  local i names=()
  for i in "${!NODE_NAME[@]}"; do names+=("${NODE_NAME[$i]}=$(node_ip "$i")"); done
  pki "$BED_DIR/pki" "$CP_IP" "${names[@]}"
  mkkubeconfig "$BED_DIR/kubeconfig" admin
  mkkubeconfig "$BED_DIR/kubeconfig-controller-manager" controller-manager
  mkkubeconfig "$BED_DIR/kubeconfig-scheduler" scheduler
  for i in "${!NODE_NAME[@]}"; do
    mkdir -p "$(node_dir "$i")"
    mkkubeconfig "$(node_dir "$i")/kubeconfig" "node-${NODE_NAME[$i]}"
  done
}
mkkubeconfig() { # file identity
  cat >"$1" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: rdmasuite-bed
  cluster:
    server: https://$CP_IP:$APISERVER_PORT
    certificate-authority: $BED_DIR/pki/ca.crt
users:
- name: $2
  user:
    client-certificate: $BED_DIR/pki/$2.crt
    client-key: $BED_DIR/pki/$2.key
contexts:
- name: rdmasuite-bed
  context: {cluster: rdmasuite-bed, user: $2}
current-context: rdmasuite-bed
EOF
}

start_apiserver() {
  local p=$BED_DIR/pki
  start_daemon kube-apiserver "$K8S_BIN_DIR/kube-apiserver" \
    --etcd-servers "http://127.0.0.1:$ETCD_PORT" \
    --bind-address 0.0.0.0 --secure-port "$APISERVER_PORT" --advertise-address "$CP_IP" \
    --tls-cert-file "$p/apiserver.crt" --tls-private-key-file "$p/apiserver.key" \
    --client-ca-file "$p/ca.crt" \
    --service-account-issuer https://kubernetes.default.svc \
    --service-account-key-file "$p/sa.pub" --service-account-signing-key-file "$p/sa.key" \
    --service-cluster-ip-range "$SERVICE_CIDR" \
    --authorization-mode Node,RBAC --enable-admission-plugins NodeRestriction \
    --kubelet-client-certificate "$p/apiserver-kubelet-client.crt" --kubelet-client-key "$p/apiserver-kubelet-client.key" \
    --kubelet-preferred-address-types InternalIP,Hostname \
    --allow-privileged=true --v=1
  wait_for 90 "kube-apiserver" kubectl get --raw /readyz
}

# apiserver-restart SECONDS: the API server stopped for SECONDS and
# started again with the same flags (an upgrade's restart, as
# hack/fault-test.sh injects it in the middle of a run).
do_apiserver_restart() {
  [[ $(cat "$BED_DIR/state" 2>/dev/null) == up ]] || die "no bed is up"
  stop_daemon kube-apiserver 15
  log "kube-apiserver stopped for ${1:-15}s"
  sleep "${1:-15}"
  start_apiserver
  log "kube-apiserver ready again"
}

step_control_plane() {
  local p=$BED_DIR/pki
  start_daemon etcd "$ETCD_BIN_DIR/etcd" --name bed --data-dir "$BED_DIR/etcd" \
    --listen-client-urls "http://127.0.0.1:$ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
    --listen-peer-urls "http://127.0.0.1:$((ETCD_PORT + 1))" --initial-advertise-peer-urls "http://127.0.0.1:$((ETCD_PORT + 1))" \
    --initial-cluster "bed=http://127.0.0.1:$((ETCD_PORT + 1))" --log-level warn
  wait_for 30 "etcd" curl -fsS "http://127.0.0.1:$ETCD_PORT/health"
  start_apiserver
  start_daemon kube-controller-manager "$K8S_BIN_DIR/kube-controller-manager" \
    --kubeconfig "$BED_DIR/kubeconfig-controller-manager" \
    --authentication-kubeconfig "$BED_DIR/kubeconfig-controller-manager" \
    --authorization-kubeconfig "$BED_DIR/kubeconfig-controller-manager" \
    --service-account-private-key-file "$p/sa.key" --root-ca-file "$p/ca.crt" \
    --use-service-account-credentials --leader-elect=false --bind-address 127.0.0.1 \
    --controllers '*,-nodeipam,-service-lb-controller,-cloud-node-lifecycle' --v=1
  start_daemon kube-scheduler "$K8S_BIN_DIR/kube-scheduler" \
    --kubeconfig "$BED_DIR/kubeconfig-scheduler" \
    --authentication-kubeconfig "$BED_DIR/kubeconfig-scheduler" \
    --authorization-kubeconfig "$BED_DIR/kubeconfig-scheduler" \
    --leader-elect=false --bind-address 127.0.0.1 --v=1
}

step_nodes() {
  local i
  for i in "${!NODE_NAME[@]}"; do start_node "$i"; done
  for i in "${!NODE_NAME[@]}"; do
    wait_for 60 "containerd of ${NODE_NAME[$i]}" test -S "$(node_dir "$i")/containerd.sock"
    import_images "$i"
    start_kubelet "$i"
  done
  for i in "${!NODE_NAME[@]}"; do
    wait_for "$UP_TIMEOUT" "node ${NODE_NAME[$i]} Ready" node_ready "${NODE_NAME[$i]}"
  done
}
node_ready() {
  [[ $(kubectl get node "$1" -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}') == True ]]
}

start_node() {
  local i=$1 d name=${NODE_NAME[$1]}
  d=$(node_dir "$i")
  mkdir -p "$d/containerd" "$d/cni" "$d/kubelet" "$d/pod-logs" "$d/runc"
  # One cgroup parent per node in every v1 hierarchy; kubelet wants it to exist.
  local h
  for h in /sys/fs/cgroup/*/; do
    [[ -d $h && ! -L ${h%/} ]] && mkdir -p "$h$CGROUP_PARENT/$name" 2>/dev/null || true
  done
  cat >"$d/cni/10-bed.conflist" <<EOF
{
  "cniVersion": "1.0.0",
  "name": "rdmasuite-bed",
  "plugins": [
    {
      "type": "bridge", "bridge": "$(node_bridge "$i")", "isGateway": true, "isDefaultGateway": true,
      "ipMasq": false, "hairpinMode": true,
      "ipam": {
        "type": "host-local", "ranges": [[{"subnet": "$(node_podcidr "$i")"}]],
        "routes": [{"dst": "$SERVICE_CIDR"}],
        "dataDir": "$d/cni/ipam"
      }
    },
    {"type": "loopback"}
  ]
}
EOF
  cat >"$d/containerd.toml" <<EOF
version = 2
root = "$d/containerd/root"
state = "$d/containerd/state"
[grpc]
  address = "$d/containerd.sock"
[ttrpc]
  address = "$d/containerd.sock.ttrpc"
[plugins."io.containerd.internal.v1.opt"]
  path = "$d/containerd/opt"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "docker.io/rdmasuite/pause:$IMAGE_TAG"
  # Root here lacks CAP_SYS_RESOURCE: without this every sandbox fails with
  # "can't get final child's PID from pipe".
  restrict_oom_score_adj = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = "$d/runc"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$d/cni"
EOF
  if [[ ${NODE_MEMLOCK[$i]} != - ]]; then
    # Seed 002's fix, used here to set the limit either way: containerd
    # replaces (does not merge) its default spec with base_runtime_spec.
    ctr oci spec | "$BED_DIR/bin/basespec" -memlock "${NODE_MEMLOCK[$i]}" >"$d/base-spec.json"
    sed -i "s|^      runtime_type = \"io.containerd.runc.v2\"|&\n      base_runtime_spec = \"$d/base-spec.json\"|" "$d/containerd.toml"
  fi
  start_daemon "containerd-$name" containerd --config "$d/containerd.toml"
}

import_images() {
  local i=$1 t
  for t in "$BED_DIR"/images/*.tar; do
    ctr --address "$(node_dir "$i")/containerd.sock" -n k8s.io images import --no-unpack=false "$t" >/dev/null
  done
}

start_kubelet() {
  local i=$1 d name=${NODE_NAME[$1]} ip port
  d=$(node_dir "$i")
  ip=$(node_ip "$i")
  port=$((11250 + 10 * i))
  cat >"$d/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: $ip
port: $port
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: $((port + 1))
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: $BED_DIR/pki/ca.crt}
authorization: {mode: Webhook}
cgroupDriver: cgroupfs
cgroupRoot: /$CGROUP_PARENT/$name
failCgroupV1: false
failSwapOn: false
containerRuntimeEndpoint: unix://$d/containerd.sock
podLogsDir: $d/pod-logs
podCIDR: $(node_podcidr "$i")
resolvConf: ""
makeIPTablesUtilChains: false
serializeImagePulls: false
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {"memory.available": "100Mi", "nodefs.available": "1%", "imagefs.available": "1%"}
localStorageCapacityIsolation: false
registerWithTaints: []
EOF
  start_daemon "kubelet-$name" "$K8S_BIN_DIR/kubelet" --config "$d/kubelet.yaml" \
    --kubeconfig "$d/kubeconfig" --root-dir "$d/kubelet" --cert-dir "$d/kubelet/pki" \
    --hostname-override "$name" --node-ip "$ip" --v=1
}

step_node_profiles() {
  local i name
  for i in "${!NODE_NAME[@]}"; do
    name=${NODE_NAME[$i]}
    kubectl label node "$name" --overwrite \
      "nvidia.com/gpu.product=${NODE_GPU[$i]}" "nvidia.com/gpu.present=true" \
      "feature.node.kubernetes.io/pci-15b3.present=true" \
      "network.nvidia.com/operator.mofed.wait=${NODE_MOFEDWAIT[$i]}" \
      "rdmasuite.io/bed=true" >/dev/null
    if [[ ${NODE_TAINTS[$i]} != - ]]; then
      # shellcheck disable=SC2046
      kubectl taint node "$name" --overwrite $(tr ',' ' ' <<<"${NODE_TAINTS[$i]}") >/dev/null
    fi
    # Extended resources that device plugins would advertise. PATCHing node
    # status is the documented way to advertise them by hand; the scheduler
    # honours them and the kubelet keeps them.
    kubectl patch node "$name" --subresource=status --type=merge -p "{\"status\":{\"capacity\":{
      \"rdma/rdma_shared_device_a\":\"${NODE_RDMA[$i]}\",\"nvidia.com/hostdev\":\"${NODE_HOSTDEV[$i]}\",
      \"nvidia.com/gpu\":\"${NODE_NGPU[$i]}\"}}}" >/dev/null
  done
  for i in "${!NODE_NAME[@]}"; do
    wait_for 30 "allocatable on ${NODE_NAME[$i]}" allocatable_is "${NODE_NAME[$i]}" rdma/rdma_shared_device_a "${NODE_RDMA[$i]}"
  done
}
allocatable_is() {
  local key=${2//./\\.}
  [[ $(kubectl get node "$1" -o "jsonpath={.status.allocatable.${key//\//\\/}}") == "$3" ]]
}

do_up() {
  local t0=$SECONDS
  mkdir -p "$BED_DIR"
  exec 9>"$BED_DIR/.lock"
  flock -n 9 || die "another 'bed up' or 'bed down' is in progress (lock $BED_DIR/.lock)"
  read_nodes "$NODES_CONF"
  step_refuse_if_running
  step_deps
  local t1=$SECONDS
  echo "starting" >"$BED_DIR/state"
  # A failed bring-up must not leave half a cluster behind.
  trap 'rc=$?; if ((rc)); then log "bring-up failed (rc=$rc); tearing down"; do_down; fi' EXIT
  trap 'exit 130' INT TERM
  log "images";        step_images
  log "network";       step_network
  log "certificates";  step_pki
  log "control plane"; step_control_plane
  log "nodes";         step_nodes
  log "node profiles"; step_node_profiles
  local guests
  read -ra guests <<<"${BED_GUEST_NODES:-}"
  step_guests
  echo "up" >"$BED_DIR/state"
  trap - EXIT INT TERM
  log "up: ${#NODE_NAME[@]} host + ${#guests[@]} guest nodes Ready in $((SECONDS - t1)) s after binaries (total $((SECONDS - t0)) s)"
  echo "BED_UP_SECONDS=$((SECONDS - t1))" >"$BED_DIR/timings"
  echo "export KUBECONFIG=$BED_DIR/kubeconfig"
}

# step_guests: the guest nodes of BED_GUEST_NODES, a kubelet inside a qemu
# Soft-RoCE guest each, whose pods get a real verbs device through
# hack/tools/rdma-device-plugin. Names and their labels/taints/memlock:
# hack/bed-guest-nodes.conf (BED_GUEST_NODES_CONF). Two boot side by side
# with one vCPU each (two cores here); up.sh serialises what they share
# (index, builds).
step_guests() {
  local g guests pids=() rc=0
  read -ra guests <<<"${BED_GUEST_NODES:-}"
  if ((${#guests[@]} > 1)); then export GUESTNODE_SMP=${GUESTNODE_SMP:-1}; fi
  for g in "${guests[@]}"; do
    log "guest node $g${GUESTNODE_PHASE:+ ($GUESTNODE_PHASE)}"
    if [[ ${GUESTNODE_PHASE:-} == join ]]; then
      "$here/guestnode/up.sh" "$g" &
    else
      boot_guest_node "$g" &
    fi
    pids+=($!)
  done
  for g in "${pids[@]}"; do wait "$g" || rc=1; done
  ((rc == 0)) || die "guest node bring-up failed (logs: $BED_DIR/guestnodes/*.failed)"
}

# do_guests (`bed.sh guests`): the guest nodes of BED_GUEST_NODES join the
# bed that is up, its control plane, host nodes and images as they are. make
# test's guest stages start this way after its host-node stages: a second
# bring-up of the control plane and the host nodes would add a minute and
# prove nothing new. Guests that `bed.sh guests-boot` booted
# held only start their kubelets here; others boot now.
# do_guests boot (`bed.sh guests-boot`): boot them up to their kubelets
# (images imported, rails, NFS server) and return: make test does this
# beside its host-node stages, whose expectations must not see the guests
# as nodes yet.
do_guests() {
  local t0=$SECONDS guests g held=0 boot=${1:-}
  read -ra guests <<<"${BED_GUEST_NODES:-}"
  ((${#guests[@]})) || die "BED_GUEST_NODES names no guest node (e.g. BED_GUEST_NODES=\"rxe-node-1 rxe-node-2\" $0 guests)"
  mkdir -p "$BED_DIR"
  exec 9>"$BED_DIR/.lock"
  flock -n 9 || die "another 'bed up' or 'bed down' is in progress (lock $BED_DIR/.lock)"
  [[ $(cat "$BED_DIR/state" 2>/dev/null) == up && -n $(running_daemons 2>/dev/null || true) ]] ||
    die "no bed is up to join: run '$0 up' first (or 'BED_GUEST_NODES=\"${guests[*]}\" $0 up' for both at once)"
  for g in "${guests[@]}"; do
    if [[ -f $BED_DIR/guestnodes/$g/held && -z $boot ]]; then
      held=$((held + 1))
      continue
    fi
    [[ ! -d $BED_DIR/guestnodes/$g ]] || die "guest node $g is already up${boot:+ (or booting)}"
  done
  ((held == 0 || held == ${#guests[@]})) ||
    die "only $held of ${guests[*]} were booted held ('$0 guests-boot'): join all of them or none"
  read_nodes "$NODES_CONF"
  if [[ -n $boot ]]; then
    GUESTNODE_PHASE=boot step_guests
    log "guests: ${#guests[@]} guest nodes booted held in $((SECONDS - t0)) s ('$0 guests' starts their kubelets)"
    echo "BED_GUESTS_BOOT_SECONDS=$((SECONDS - t0))" >>"$BED_DIR/timings"
    return
  fi
  if ((held)); then
    GUESTNODE_PHASE=join step_guests
  else
    step_guests
  fi
  log "guests: ${#guests[@]} guest nodes joined the bed, Ready in $((SECONDS - t0)) s"
  echo "BED_GUESTS_SECONDS=$((SECONDS - t0))" >>"$BED_DIR/timings"
}

# --- down ---------------------------------------------------------------------
do_down() {
  [[ -d $BED_DIR ]] || { log "no bed at $BED_DIR"; return 0; }
  local f name d g
  # A lossy rail staged on the host bridges (hack/guestnode/lossy.sh).
  ! command -v nft >/dev/null || nft delete table bridge rdmasuite_lossy 2>/dev/null || true
  # Guest nodes first, while the apiserver still answers.
  for g in "$BED_DIR"/guestnodes/*/; do
    [[ -d $g ]] || continue
    g=$(basename "$g")
    "$here/guestnode/down.sh" "${g%.failed}" || true
  done
  # Pods first, while the kubelets still run, so their containers stop cleanly.
  if [[ -n $(running_daemons | grep kube-apiserver || true) && -x $K8S_BIN_DIR/kubectl ]]; then
    timeout 20 "$K8S_BIN_DIR/kubectl" --kubeconfig "$BED_DIR/kubeconfig" delete pods --all-namespaces --all \
      --force --grace-period=0 --wait=false >/dev/null 2>&1 || true
  fi
  for f in "$BED_DIR"/pids/kubelet-*.pid; do [[ -e $f ]] && stop_daemon "$(basename "$f" .pid)" 15; done
  for d in "$BED_DIR"/nodes/*/; do
    [[ -S $d/containerd.sock ]] || continue
    local c=(ctr --address "$d/containerd.sock" -n k8s.io)
    local ids
    ids=$(timeout 10 "${c[@]}" tasks ls -q 2>/dev/null || true)
    for id in $ids; do timeout 10 "${c[@]}" tasks kill -s SIGKILL "$id" >/dev/null 2>&1 || true; done
    for id in $ids; do timeout 10 "${c[@]}" tasks rm -f "$id" >/dev/null 2>&1 || true; done
    ids=$(timeout 10 "${c[@]}" containers ls -q 2>/dev/null || true)
    for id in $ids; do timeout 10 "${c[@]}" containers rm "$id" >/dev/null 2>&1 || true; done
  done
  for f in "$BED_DIR"/pids/containerd-*.pid; do [[ -e $f ]] && stop_daemon "$(basename "$f" .pid)" 15; done
  for name in kube-scheduler kube-controller-manager kube-apiserver etcd; do stop_daemon "$name" 15; done
  kill_strays
  unmount_under "$BED_DIR"
  # Network namespaces the CNI made for our pods, then bridges and the link.
  for f in /var/run/netns/cni-*; do
    [[ -e $f ]] || continue
    if ip netns exec "$(basename "$f")" ip -o addr 2>/dev/null | grep -q ' 10\.244\.'; then
      ip netns delete "$(basename "$f")" 2>/dev/null || { umount "$f" 2>/dev/null; rm -f "$f"; }
    fi
  done
  # rsbr*: host node bridges; rsgl*: the guest nodes' rail bridges, rsgt*: their taps.
  for f in /sys/class/net/rsbr* /sys/class/net/rsgt* /sys/class/net/rsgl*; do [[ -e $f ]] && ip link delete "$(basename "$f")" 2>/dev/null; done
  ip link delete "$BED_LINK" 2>/dev/null || true
  remove_iptables_chains
  remove_cgroups
  rm -rf "$BED_DIR/nodes" "$BED_DIR/etcd" "$BED_DIR/pids" "$BED_DIR/state" "$BED_DIR/pki" "$BED_DIR/guestnodes" \
    "$BED_DIR"/kubeconfig*
  log "down: nothing of the bed is left running"
}

# Shims and containers outlive containerd; anything whose command line still
# points into the bed's directory is ours.
kill_strays() {
  local pids
  pids=$(pgrep -f "$BED_DIR/" || true)
  [[ -n $pids ]] && kill -KILL $pids 2>/dev/null || true
  pids=$(pgrep -f "containerd-shim-runc-v2 .*-address $BED_DIR/" || true)
  [[ -n $pids ]] && kill -KILL $pids 2>/dev/null || true
  sleep 0.5
}

unmount_under() {
  local m
  # Deepest first.
  for m in $(awk -v p="$1" 'index($2, p) == 1 {print $2}' /proc/mounts | sort -r); do
    umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true
  done
}

remove_iptables_chains() {
  local ipt t chain
  for ipt in iptables ip6tables; do
    command -v $ipt >/dev/null || continue
    for t in filter nat mangle; do
      for chain in $($ipt -t $t -S 2>/dev/null | awk '/^-N (CNI-|KUBE-)/ {print $2}'); do
        $ipt -t $t -S 2>/dev/null | grep -E -- "-j $chain( |\$)" | sed 's/^-A/-D/' |
          while read -r rule; do eval "$ipt -t $t $rule" 2>/dev/null || true; done
      done
      for chain in $($ipt -t $t -S 2>/dev/null | awk '/^-N (CNI-|KUBE-)/ {print $2}'); do
        $ipt -t $t -F "$chain" 2>/dev/null || true
      done
      for chain in $($ipt -t $t -S 2>/dev/null | awk '/^-N (CNI-|KUBE-)/ {print $2}'); do
        $ipt -t $t -X "$chain" 2>/dev/null || true
      done
    done
  done
}

remove_cgroups() {
  local h
  for h in /sys/fs/cgroup/*/$CGROUP_PARENT /sys/fs/cgroup/$CGROUP_PARENT; do
    [[ -d $h ]] || continue
    find "$h" -depth -type d -exec rmdir {} + 2>/dev/null || true
  done
}

# --- status -------------------------------------------------------------------
do_status() {
  local live
  live=$(running_daemons)
  if [[ -z $live ]]; then echo "bed: down"; return 1; fi
  echo "bed: $(cat "$BED_DIR/state" 2>/dev/null || echo unknown) ($BED_DIR)"
  echo "processes: $(echo $live | tr '\n' ' ')"
  echo "KUBECONFIG=$BED_DIR/kubeconfig"
  kubectl get nodes -o wide 2>&1 || true
  kubectl get nodes -o 'custom-columns=NAME:.metadata.name,RDMA:.status.allocatable.rdma/rdma_shared_device_a,HOSTDEV:.status.allocatable.nvidia\.com/hostdev,GPU:.status.allocatable.nvidia\.com/gpu,MOFEDWAIT:.metadata.labels.network\.nvidia\.com/operator\.mofed\.wait,TAINTS:.spec.taints[*].key' 2>&1 || true
  # Guest nodes: each rail's state (hack/guestnode/rail.sh stages one down).
  local g
  for g in "$BED_DIR"/guestnodes/*/; do
    [[ -f $g/qemu.pid ]] || continue
    g=$(basename "$g")
    echo "$g rails:"
    RAIL_TIMEOUT=5 "$here/guestnode/rail.sh" "$g" 2>&1 | sed 's/^/  /' || true
  done
}

# Leftovers check used by tests and `make test`: prints what is left and fails.
do_leftovers() {
  local left=""
  [[ -n $(running_daemons 2>/dev/null) ]] && left+="daemons: $(running_daemons | tr '\n' ' ')\n"
  [[ -n $(pgrep -f "$BED_DIR/" || true) ]] && left+="processes: $(pgrep -af "$BED_DIR/" | head -5)\n"
  awk -v p="$BED_DIR" 'index($2, p) == 1' /proc/mounts | grep -q . && left+="mounts under $BED_DIR\n"
  ip link show "$BED_LINK" >/dev/null 2>&1 && left+="link $BED_LINK\n"
  ls /sys/class/net | grep -qE '^rs(br|gl|gt)' && left+="bridges/taps: $(ls /sys/class/net | grep -E '^rs(br|gl|gt)' | tr '\n' ' ')\n"
  ls -d /sys/fs/cgroup/*/$CGROUP_PARENT >/dev/null 2>&1 && left+="cgroups: $(ls -d /sys/fs/cgroup/*/$CGROUP_PARENT | head -3 | tr '\n' ' ')\n"
  iptables -S 2>/dev/null | grep -qE '^-N (CNI-|KUBE-)' && left+="iptables chains\n"
  command -v nft >/dev/null && nft list table bridge rdmasuite_lossy >/dev/null 2>&1 && left+="nftables table bridge rdmasuite_lossy\n"
  pgrep -f 'rdmasuite-guestnode-' >/dev/null && left+="guest nodes: $(pgrep -af rdmasuite-guestnode- | head -3)\n"
  [[ -d $BED_DIR/guestnodes ]] && left+="$BED_DIR/guestnodes\n"
  iptables -t nat -S 2>/dev/null | grep -qE '^-N (CNI-|KUBE-)' && left+="iptables nat chains\n"
  local ns
  for ns in $(ls /var/run/netns 2>/dev/null | grep '^cni-' || true); do
    ip netns exec "$ns" ip -o addr 2>/dev/null | grep -q ' 10\.244\.' && left+="netns $ns\n"
  done
  if [[ -n $left ]]; then printf 'bed leftovers:\n%b' "$left"; return 1; fi
  echo "bed: nothing left behind"
}

case ${1:-} in
up) do_up ;;
guests) do_guests ;;
guests-boot) do_guests boot ;;
apiserver-restart) do_apiserver_restart "${2:-15}" ;;
down)
  mkdir -p "$BED_DIR"
  exec 9>"$BED_DIR/.lock"
  flock -w 60 9 || die "a bed operation holds $BED_DIR/.lock"
  do_down
  ;;
status) do_status ;;
leftovers) do_leftovers ;;
*) echo "usage: $0 up|guests-boot|guests|down|status|leftovers|apiserver-restart [SECONDS]" >&2; exit 2 ;;
esac
