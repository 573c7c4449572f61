#!/usr/bin/env bash
# up.sh NAME — boots a Kubernetes worker node NAME inside a qemu TCG guest
# with two Soft-RoCE devices (rxe0 on eth1, rxe1 on eth2: two rails) and
# joins it to the running host bed (hack/bed.sh up). The guest runs
# containerd, the kubelet and rdma-device-plugin, which advertises
# rdma/rdma_shared_device_a; pods that request it get every rail's
# /dev/infiniband/uverbsN and rdma_cm.
#
# Returns once the node is Ready and the resource is allocatable; prints the
# timings. State, pids and logs: $BED_DIR/guestnodes/NAME (console.log,
# kubelet.log, containerd.log, plugin.log, relay.log; ctl.in/ctl.out: the
# control channel of lib.sh's guest_exec and rail.sh). Remove with down.sh NAME.
#
# NAME must have a line in the guest node table (BED_GUEST_NODES_CONF, default
# hack/bed-guest-nodes.conf): labels, the device plugin's shared count,
# taints (registered at join) and the containers' memlock limit come from it.
# All guest nodes share the rails: rail R is a host bridge rsglR with a tap
# per guest (ethR+1 in the guest, MTU 9000, own MAC, subnet 10.251.R.0/24)
# that carries rxeR; rail 0 also routes to each other's pod subnets. So pods
# on two guests talk RoCE v2 node to node on every rail, and a rail can be
# taken down on one node alone (hack/guestnode/rail.sh).
#
# Environment: GUESTNODE_SMP (vCPUs, default 2; bed.sh passes 1 when it boots
# two on a 2-core host), GUESTNODE_MEM_MB (2048), GUESTNODE_TIMEOUT (seconds
# for boot -> Ready, 300), GUESTNODE_RAILS (1..4, default 2),
# GUESTNODE_DOWN_RAILS ("NODE:DEV ...", e.g. rxe-node-2:rxe1: rails that
# rail.sh sets down once the node is Ready), KUBELET_V (kubelet log level, 1).
set -euo pipefail
# shellcheck source=lib.sh
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"

name=${1:-}
check_name "$name"
# shellcheck source=../nodes-conf.sh
. "$here/../nodes-conf.sh"
conf=${BED_GUEST_NODES_CONF:-$repo/hack/bed-guest-nodes.conf}
read_nodes "$conf"
row=
for i in "${!NODE_NAME[@]}"; do
  if [[ ${NODE_NAME[$i]} == "$name" ]]; then row=$i; fi
done
[[ -n $row ]] || die "guest node $name is not in $conf (it has: ${NODE_NAME[*]}); add a line for it there"
HOSTDEV_NICS=${NODE_HOSTDEV[$row]}
((HOSTDEV_NICS <= 4)) || die "$conf: $name has hostdev $HOSTDEV_NICS; a guest node takes 0..4 hostdev NICs"
RDMA_NETNS=${GUESTNODE_RDMA_NETNS:-shared}
# The guest that serves /srv/nfs over NFS/RDMA (init: NFS_SERVER=1).
NFS_SERVER_NODE=${GUESTNODE_NFS_SERVER-rxe-node-1}
[[ $RDMA_NETNS == shared || $RDMA_NETNS == exclusive ]] || die "GUESTNODE_RDMA_NETNS must be shared or exclusive, got '$RDMA_NETNS'"
RESOURCE_COUNT=${NODE_RDMA[$row]}
((RESOURCE_COUNT > 0)) || die "$conf: $name advertises rdma_shared_a 0; a guest node exists to give pods its rxe devices (use e.g. 63)"
memlock_kb=
[[ ${NODE_MEMLOCK[$row]} != - ]] && memlock_kb=$((NODE_MEMLOCK[row] / 1024))
taints_yaml=
if [[ ${NODE_TAINTS[$row]} != - ]]; then
  for t in ${NODE_TAINTS[$row]//,/ }; do
    kv=${t%:*} effect=${t##*:}
    key=${kv%%=*} value=
    [[ $kv == *=* ]] && value=${kv#*=}
    taints_yaml+="
- {key: \"$key\", value: \"$value\", effect: $effect}"
  done
fi
smp=${GUESTNODE_SMP:-2}
mem=${GUESTNODE_MEM_MB:-2048}
timeout_s=${GUESTNODE_TIMEOUT:-300}
[[ $smp =~ ^[1-9]$ && $mem =~ ^[0-9]+$ && $timeout_s =~ ^[0-9]+$ ]] || die "bad GUESTNODE_SMP/MEM_MB/TIMEOUT"
phase=${GUESTNODE_PHASE:-all}
[[ $phase == all || $phase == boot || $phase == join ]] || die "GUESTNODE_PHASE must be all, boot or join, got '$phase'"

# A failed bring-up leaves nothing behind.
# Its logs are kept in $d.failed (down.sh NAME removes them).
failed() {
  local keep
  keep=$(mktemp -d)
  cp -a "$d"/*.log "$keep/" 2>/dev/null || true
  flock -u 9 2>/dev/null || true
  "$here/down.sh" "$name" >&2 || true
  mkdir -p "$d.failed"
  mv "$keep"/* "$d.failed/" 2>/dev/null || true
  rm -rf "$keep"
  log "bring-up of $name failed; its logs: $d.failed"
}
ms() { echo $(($(date +%s%N) / 1000000 - start_ms)); }
secs() { printf '%d.%01d' $(($1 / 1000)) $((($1 % 1000) / 100)); }
# clock_check: the guest's uptime (guestnode's own console stamps) against
# the real time since qemu started, while this script boots it. Once in some
# ten make tests the guest kernel, booting on a loaded host under TCG, took
# a TSC frequency far too low, and its clock ran ~22x real time from the
# first line (2026-11-30, run J: "stage 1" at uptime 314 s, the end at
# 1 370 s, after 61 s of real time); every in-guest timeout then expired at
# once (ctr's dial of containerd) and the boot failed far from the cause.
# tsc=reliable (below) keeps the watchdog from noticing. The mark file lets
# bed.sh boot it once more: the calibration is made again at each boot.
clock_check() {
  [[ -n ${qemu_start_ms:-} ]] || return 0
  local up real
  up=$(grep -ao 'guestnode: \[[0-9]*' "$d/console.log" 2>/dev/null | tail -n 1 | tr -dc 0-9) || true
  [[ -n $up ]] || return 0
  real=$((($(date +%s%N) / 1000000 - qemu_start_ms) / 1000))
  if ((up > 4 * real + 30)); then
    echo "guest uptime $up s after $real s of real time" >"$d/clock-race.log"
    die "$name: the guest's clock runs $((up / (real > 0 ? real : 1)))x real time (uptime $up s after $real s since qemu started): its kernel miscalibrated the TSC at boot on a busy host, so every timeout in the guest expires early; a second boot calibrates again"
  fi
}
guest_check() {
  pid_alive "$d/qemu.pid" || die "$name: qemu exited; console: $(tail -n 20 "$d/console.log" | tr -d '\r')"
  clock_check
  if grep -q 'GUESTNODE-ERROR' "$d/console.log"; then
    die "$name: $(grep -a 'GUESTNODE-ERROR' "$d/console.log" | head -1 | tr -d '\r')"
  fi
}
wait_until() { # seconds what command...
  local secs=$1 what=$2
  shift 2
  local deadline=$((SECONDS + secs))
  until "$@" >/dev/null 2>&1; do
    guest_check
    ((SECONDS < deadline)) || die "$name: timed out after ${secs}s waiting for $what (logs in $d)"
    sleep 0.5
  done
}
# nfs_server_check: on the NFS server's guest, the console says it started.
nfs_server_check() {
  [[ $name == "$NFS_SERVER_NODE" ]] || return 0
  ! grep -q 'NFS-ERROR' "$d/console.log" || die "$name: the NFS/RDMA server did not start: $(grep -B3 'NFS-ERROR' "$d/console.log" | tr '\n' ' ')"
  grep -q 'NFS-READY' "$d/console.log" || die "$name: no NFS-READY on the console"
}
node_ready() { [[ $(kubectl get node "$name" -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}') == True ]]; }
allocatable() {
  [[ $(kubectl get node "$name" -o "jsonpath={.status.allocatable.rdma/rdma_shared_device_a}") == "$RESOURCE_COUNT" ]] || return 1
  ((HOSTDEV_NICS == 0)) || [[ $(kubectl get node "$name" -o "jsonpath={.status.allocatable.nvidia\.com/hostdev}") == "$HOSTDEV_NICS" ]]
}

# join_node: from the kubelet's start to a usable node (registered,
# labelled, Ready, its resources allocatable, images in, rails staged);
# the timings are from the boot (full bring-up) or the release (join).
join_node() {
  wait_until "$timeout_s" "rxe0..rxe$((LINK_RAILS - 1)) in the guest" grep -q 'RXE-READY' "$d/console.log"
  t_rxe=$(ms)
  wait_until "$timeout_s" "the node object" kubectl get node "$name"
  t_reg=$(ms)
  labels=("nvidia.com/gpu.product=${NODE_GPU[$row]}" "network.nvidia.com/operator.mofed.wait=${NODE_MOFEDWAIT[$row]}"
    feature.node.kubernetes.io/pci-15b3.present=true rdmasuite.io/bed=true rdmasuite.io/guest-node=true)
  ((NODE_NGPU[row] > 0)) && labels+=(nvidia.com/gpu.present=true)
  kubectl label node "$name" --overwrite "${labels[@]}" >/dev/null
  if ((NODE_NGPU[row] > 0)); then
    kubectl patch node "$name" --subresource=status --type=merge \
      -p "{\"status\":{\"capacity\":{\"nvidia.com/gpu\":\"${NODE_NGPU[$row]}\"}}}" >/dev/null
  fi
  wait_until "$((timeout_s - (SECONDS - t0)))" "node $name Ready" node_ready
  t_ready=$(ms)
  wait_until 120 "$RESOURCE=$RESOURCE_COUNT and $HOSTDEV_RESOURCE=$HOSTDEV_NICS in $name's allocatable" allocatable
  t_res=$(ms)
  wait_until 120 "the images imported in the guest" grep -q 'IMAGES-READY' "$d/console.log"
  nfs_server_check
  # Rails staged down from the start (GUESTNODE_DOWN_RAILS="NODE:DEV ...").
  for s in ${GUESTNODE_DOWN_RAILS:-}; do
    [[ ${s%%:*} == "$name" ]] || continue
    "$here/rail.sh" "$name" "${s#*:}" down >&2 || die "$name: staging rail ${s#*:} down failed"
  done
  ok=1
  trap - EXIT INT TERM
  cat >"$d/timings" <<TM
GUESTNODE_RXE_READY_MS=$t_rxe
GUESTNODE_REGISTERED_MS=$t_reg
GUESTNODE_READY_MS=$t_ready
GUESTNODE_RESOURCE_MS=$t_res
TM
  log "$name: $from -> rxe0..rxe$((LINK_RAILS - 1)) ACTIVE $(secs "$t_rxe") s, -> node registered $(secs "$t_reg") s, -> Ready $(secs "$t_ready") s, -> $RESOURCE=$RESOURCE_COUNT allocatable $(secs "$t_res") s"
  echo "$name Ready: node IP $ip, logs $d"
}

# --- join phase: a node booted held (GUESTNODE_PHASE=boot) starts its kubelet
# GUESTNODE_PHASE=boot boots the node up to its kubelet (images imported,
# rails and NFS server up) and returns; GUESTNODE_PHASE=join then starts the
# kubelet through the control channel and waits as a full bring-up does.
# make test boots its guests beside the host-node stages this way, so they
# join in seconds when those stages are done.
if [[ $phase == join ]]; then
  d=$GN_ROOT/$name
  [[ -f $d/held ]] || die "guest node $name was not booted held: GUESTNODE_PHASE=boot $0 $name first"
  guest_check
  idx=$(cat "$d/index")
  ok=0
  trap 'if ((ok == 0)); then failed; fi' EXIT
  trap 'exit 130' INT TERM
  t0=$SECONDS
  start_ms=$(($(date +%s%N) / 1000000))
  ip=$(node_ip "$idx") from=join
  # The network side of the hostdev variant (hostdev-cluster.sh network),
  # once for every guest joining at the same time (the lock).
  exec 9>"$GN_ROOT/.lock"
  flock -w 300 9 || die "another guest-node operation held $GN_ROOT/.lock for 5 minutes"
  "$here/hostdev-cluster.sh" "$("$here/upstream.sh")" network
  flock -u 9
  guest_exec "$name" 60 "touch /run/guestnode-join" >/dev/null || die "$name: could not release its kubelet through the control channel"
  rm -f "$d/held"
  join_node
  exit 0
fi

# --- the host bed must be up ----------------------------------------------------
[[ -f $BED_DIR/pki/ca.crt && -f $BED_DIR/pki/ca.key && -f $BED_DIR/kubeconfig ]] ||
  die "no host bed at $BED_DIR (run hack/bed.sh up first)"
kubectl get --raw /readyz >/dev/null 2>&1 || die "the bed's apiserver does not answer (hack/bed.sh status)"
ip link show "$BED_LINK" >/dev/null 2>&1 || die "no bed link $BED_LINK (hack/bed.sh up makes it)"
compgen -G "$BED_DIR/images/*.tar" >/dev/null || die "no images in $BED_DIR/images (hack/bed.sh up builds them)"

mkdir -p "$GN_ROOT"
exec 9>"$GN_ROOT/.lock"
# Up to 20 minutes: a guest node coming up beside another waits here while
# that one builds the shared image, CNIs and CoreDNS, minutes on a cold
# cache (a 60 s wait failed the second guest of a cold make test).
if ! flock -n 9; then
  log "$name: waiting for another guest-node operation (holds $GN_ROOT/.lock; on a cold cache it is building the shared image)"
  flock -w 1200 9 || die "another guest-node operation held $GN_ROOT/.lock for 20 minutes"
fi
d=$GN_ROOT/$name
if pid_alive "$d/qemu.pid"; then
  die "guest node $name is already running (qemu pid $(cat "$d/qemu.pid")); hack/guestnode/down.sh $name first"
fi
if [[ -d $d ]]; then
  log "leftovers of an earlier $name found; cleaning them first"
  flock -u 9
  "$here/down.sh" "$name"
  flock -w 60 9 || die "lock"
fi
# The smallest free index 1..8 names the node IP, hostfwd port, pod subnet
# and the guest-to-guest link.
idx=
for i in 1 2 3 4 5 6 7 8; do
  grep -qx "$i" "$GN_ROOT"/*/index 2>/dev/null && continue
  idx=$i
  break
done
[[ -n $idx ]] || die "8 guest nodes already exist"
mkdir -p "$d"
echo "$idx" >"$d/index"
ip=$(node_ip "$idx") port=$(hostfwd_port "$idx") cidr=$(pod_cidr "$idx")
ok=0
trap 'if ((ok == 0)); then failed; fi' EXIT
trap 'exit 130' INT TERM
if ss -Htln "sport = :$port" | grep -q .; then die "port 127.0.0.1:$port (hostfwd for $name) is in use"; fi
if ss -Htln "src $ip" | grep -q .; then die "$ip:$KUBELET_PORT is already in use"; fi
for ((rail = 0; rail < LINK_RAILS; rail++)); do
  tap=$(link_tap "$rail" "$idx")
  [[ -e /sys/class/net/$tap ]] && die "tap $tap (rail $rail of $name) already exists"
done

# --- binaries and image -----------------------------------------------------------
t_build=$SECONDS
base=$("$here/build.sh")
mkdir -p "$BED_DIR/bin"
(cd "$repo/hack/tools/rdma-device-plugin" && CGO_ENABLED=0 go build -trimpath -ldflags=-s -o "$BED_DIR/bin/rdma-device-plugin" .)
(cd "$repo/hack" && CGO_ENABLED=0 go build -trimpath -ldflags=-s -o "$BED_DIR/bin/tcprelay" ./tools/tcprelay)
(cd "$repo/hack" && CGO_ENABLED=0 go build -trimpath -ldflags=-s -o "$BED_DIR/bin/rxe-hostdev-cni" ./tools/rxe-hostdev-cni)
upstream=$("$here/upstream.sh")
coredns=$("$here/coredns.sh")
# A guest booted held gets the cluster's network side (the CRDs, the NAD)
# at its join: the host-node stages beside its boot must not see Multus.
"$here/hostdev-cluster.sh" "$upstream" "$([[ $phase == boot ]] && echo identity || echo all)"
log "image and binaries ready in $((SECONDS - t_build)) s ($base)"
# Index, directory and the shared builds are settled: another guest node can
# come up beside this one from here on.
flock -u 9

# --- per-node files -----------------------------------------------------------------
x=$d/root
rm -rf "$x"
mkdir -p "$x/etc/guestnode/images" "$x/etc/kubernetes/pki" "$x/etc/containerd" "$x/etc/cni/net.d" "$x/usr/bin"
cp "$here/init" "$x/init"
chmod 755 "$x/init"
cp "$BED_DIR/bin/rdma-device-plugin" "$x/usr/bin/"
install -m 755 "$here/crun-shim.sh" "$x/usr/bin/crun-shim"
# The hostdev variant's CNI side (Multus and Whereabouts come as an image
# layer from upstream.sh): host-device from Debian, our rxe step, the
# plugins' kubeconfig, and Multus thick as the node's CNI: its shim is the
# node's CNI config and hands every ADD/DEL to multus-daemon (init starts it
# before the kubelet), which delegates the pod network to the bridge conf
# and adds the NADs a pod asks for. The daemon's client is the in-cluster
# one (a ServiceAccount token, the API server as KUBERNETES_SERVICE_*), as
# in Multus' thick DaemonSet.
mkdir -p "$x/opt/cni/bin" "$x/etc/cni/net.d/multus.d" "$x/etc/cni/net.d/whereabouts.d" "$x/etc/guestnode/multus-sa"
[[ -x /usr/lib/cni/host-device ]] || die "no /usr/lib/cni/host-device (apt-get install containernetworking-plugins)"
cp /usr/lib/cni/host-device "$x/opt/cni/bin/"
cp "$BED_DIR/bin/rxe-hostdev-cni" "$x/opt/cni/bin/rxe-hostdev"
cp "$GN_ROOT/cni.kubeconfig" "$x/etc/cni/net.d/whereabouts.d/whereabouts.kubeconfig"
# Whereabouts v0.8.0 insists on its flat configuration file even when the
# NAD's ipam section says everything.
echo '{"kubernetes": {"kubeconfig": "/etc/cni/net.d/whereabouts.d/whereabouts.kubeconfig"}}' \
  >"$x/etc/cni/net.d/whereabouts.d/whereabouts.conf"
# The daemon's config ("auto": it writes the shim's config, 00-multus.conf,
# with the bridge conf as the cluster network, and keeps it current; in
# v4.3.0 a daemon given a fixed multusConfigFile exits right after its
# start, main having nothing to wait for). Its keys also override every
# request's config. 00-multus.conf is there from the start too, so the
# kubelet never takes the bridge conf for the node's network.
cat >"$x/etc/cni/net.d/multus.d/daemon-config.json" <<MD
{
  "cniVersion": "1.0.0",
  "logLevel": "verbose",
  "logFile": "/var/log/multus.log",
  "socketDir": "/run/multus",
  "daemonSocketDir": "/run/multus",
  "multusConfigFile": "auto",
  "multusAutoconfigDir": "/etc/cni/net.d",
  "multusMasterCNI": "10-guestnode.conf",
  "cniConfigDir": "/etc/cni/net.d",
  "clusterNetwork": "/etc/cni/net.d/10-guestnode.conf",
  "confDir": "/etc/cni/net.d",
  "cniDir": "/var/lib/cni/multus",
  "binDir": "/opt/cni/bin"
}
MD
cat >"$x/etc/cni/net.d/00-multus.conf" <<MC
{
  "cniVersion": "1.0.0",
  "name": "multus-cni-network",
  "type": "multus-shim",
  "daemonSocketDir": "/run/multus",
  "logFile": "/var/log/multus-shim.log",
  "logLevel": "verbose"
}
MC
cp "$BED_DIR/pki/ca.crt" "$x/etc/guestnode/multus-sa/ca.crt"
kubectl -n kube-system create token rdmasuite-bed-multus --duration=48h >"$x/etc/guestnode/multus-sa/token" ||
  die "$name: no token for the Multus daemon's ServiceAccount kube-system/rdmasuite-bed-multus"
echo kube-system >"$x/etc/guestnode/multus-sa/namespace"
# Every bed image but the runner's: no stage runs the runner on a guest
# node (the in-cluster Job runs on the host nodes), and its 33 MB were the
# guest's longest import under TCG, on the one vCPU the kubelet starts on.
for t in "$BED_DIR"/images/*.tar; do
  [[ $(basename "$t") == rdmasuite-runner.tar ]] || cp "$t" "$x/etc/guestnode/images/"
done

# The node's client certificate (system:node:NAME in system:nodes), from the bed CA.
pki=$x/etc/kubernetes/pki
cp "$BED_DIR/pki/ca.crt" "$pki/ca.crt"
openssl genrsa -out "$pki/node.key" 2048 2>/dev/null
openssl req -new -key "$pki/node.key" -subj "/O=system:nodes/CN=system:node:$name" -out "$d/node.csr" 2>/dev/null
printf 'basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=clientAuth\n' >"$d/node.ext"
openssl x509 -req -in "$d/node.csr" -CA "$BED_DIR/pki/ca.crt" -CAkey "$BED_DIR/pki/ca.key" -CAcreateserial \
  -CAserial "$d/ca.srl" -days 30 -extfile "$d/node.ext" -out "$pki/node.crt" 2>/dev/null
rm -f "$d/node.csr" "$d/node.ext" "$d/ca.srl"
chmod 600 "$pki/node.key"

cat >"$x/etc/kubernetes/kubeconfig" <<KC
apiVersion: v1
kind: Config
clusters:
- name: rdmasuite-bed
  cluster:
    server: https://10.0.2.2:$APISERVER_PORT
    certificate-authority: /etc/kubernetes/pki/ca.crt
users:
- name: $name
  user:
    client-certificate: /etc/kubernetes/pki/node.crt
    client-key: /etc/kubernetes/pki/node.key
contexts:
- name: rdmasuite-bed
  context: {cluster: rdmasuite-bed, user: $name}
current-context: rdmasuite-bed
KC
cat >"$x/etc/kubernetes/kubelet.yaml" <<KY
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: 0.0.0.0
port: $KUBELET_PORT
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 10248
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: /etc/kubernetes/pki/ca.crt}
authorization: {mode: Webhook}
cgroupDriver: cgroupfs
failSwapOn: false
containerRuntimeEndpoint: unix:///run/containerd/containerd.sock
podCIDR: $cidr
resolvConf: ""
makeIPTablesUtilChains: false
serializeImagePulls: false
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {"memory.available": "50Mi", "nodefs.available": "1%", "imagefs.available": "1%"}
localStorageCapacityIsolation: false
registerWithTaints:${taints_yaml:- []}
# Device-plugin capacity reaches the API on the next status sync: keep it short.
nodeStatusUpdateFrequency: 3s
# Cluster DNS: the node's own CoreDNS (init starts it on the node IP).
clusterDNS: [$ip]
clusterDomain: cluster.local
KY
# CoreDNS: the cluster.local zone from the API, with the add-on certificate.
mkdir -p "$x/etc/coredns"
cp "$GN_ROOT/cni.kubeconfig" "$x/etc/coredns/kubeconfig"
cat >"$x/etc/coredns/Corefile" <<CF
cluster.local:53 {
    bind $ip
    errors
    log
    cache 5
    kubernetes cluster.local {
        kubeconfig /etc/coredns/kubeconfig rdmasuite-bed
    }
}
CF
cat >"$x/etc/containerd/config.toml" <<CT
version = 2
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "docker.io/rdmasuite/pause:$IMAGE_TAG"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        # crun, not runc, under the same shim: under TCG every start of a Go
        # program costs seconds, and runc is one started three times per
        # container (create, its init, start): StartContainer took 6-9 s of
        # a 19 s pod start with runc (hack/README.md, "Where a pod start goes").
        # crun-shim.sh: crun, with its "no such container" in runc's words.
        BinaryName = "/usr/bin/crun-shim"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/opt/cni/bin"
    conf_dir = "/etc/cni/net.d"
CT
# The pod network: one bridge plugin, not a conflist (containerd brings up
# lo itself). Multus v4.3.0 cannot delete a conflist delegate: its DEL
# re-marshals a cached conflist from its typed form (multus.go CmdDel, when
# the list's cniVersion reads empty), which drops every plugin field it has
# no struct for — the bridge's ipam ranges — so host-local fails "no IP
# ranges specified" and the kubelet never tears the sandbox down.
cat >"$x/etc/cni/net.d/10-guestnode.conf" <<CN
{
  "cniVersion": "1.0.0",
  "name": "rdmasuite-guestnode",
  "type": "bridge", "bridge": "cni0", "isGateway": true, "isDefaultGateway": true,
  "ipMasq": false, "hairpinMode": true,
  "ipam": {"type": "host-local", "ranges": [[{"subnet": "$cidr"}]], "routes": [{"dst": "10.96.0.0/16"}]}
}
CN
# The plugin selects by driver: every rail's rxe device, so a pod with the
# resource gets all their uverbs nodes (+ rdma_cm), a down rail's too.
cat >"$x/etc/guestnode/env" <<EV
NODE_NAME=$name
NODE_IP=$ip
API_HOST=10.0.2.2:$APISERVER_PORT
KUBELET_V=${KUBELET_V:-1}
MEMLOCK_KB=$memlock_kb
HOLD_KUBELET=$([[ $phase == boot ]] && echo 1 || echo 0)
LINK_IPS="$(for ((r = 0; r < LINK_RAILS; r++)); do printf '%s ' "$(link_ip "$r" "$idx")"; done)"
LINK_MACS="$(for ((r = 0; r < LINK_RAILS; r++)); do printf '%s ' "$(link_mac "$r" "$idx")"; done)"
LINK_ROUTES="$(for j in 1 2 3 4 5 6 7 8; do ((j == idx)) || printf '%s@%s ' "$(pod_cidr "$j")" "$(link_ip 0 "$j")"; done)"
HOSTDEV_MACS="$(for ((n = 0; n < HOSTDEV_NICS; n++)); do printf '%s ' "$(hostdev_mac "$n" "$idx")"; done)"
RDMA_NETNS=$RDMA_NETNS
NFS_SERVER=$([[ $name == "$NFS_SERVER_NODE" ]] && echo 1 || echo 0)
DEVICE_PLUGIN_ARGS="--resource-name $RESOURCE --shared-count $RESOURCE_COUNT --drivers rdma_rxe --ifnames $(for ((r = 0; r < LINK_RAILS; r++)); do printf '%s%s' "$( ((r)) && echo ,)" "$(link_netdev "$r")"; done)$( ((HOSTDEV_NICS)) && echo " --hostdev-resource $HOSTDEV_RESOURCE")"
EV
find "$x" -type d -exec chmod 755 {} +
(cd "$x" && find . -mindepth 1 | LC_ALL=C sort | cpio -o -H newc -R 0:0 --quiet) >"$d/node.cpio"
cat "$base/base.cpio" "$upstream/cni.cpio" "$coredns/coredns.cpio" "$d/node.cpio" >"$d/initrd"
rm -rf "$x" "$d/node.cpio"

# --- host side: node IP, qemu, relay -------------------------------------------------
# The rails: this node's tap on each rail's shared host bridge (made by the
# first guest node, removed with the last: down.sh).
rail_nics=() rails_desc=
: >"$d/taps"
for ((rail = 0; rail < LINK_RAILS; rail++)); do
  br=$(link_bridge "$rail") tap=$(link_tap "$rail" "$idx")
  if [[ ! -e /sys/class/net/$br ]]; then
    ip link add "$br" type bridge 2>/dev/null || [[ -e /sys/class/net/$br ]] ||
      die "cannot create the rail $rail bridge $br"
  fi
  ip link set "$br" up
  ip tuntap add dev "$tap" mode tap || die "cannot create tap $tap (is /dev/net/tun available?)"
  echo "$tap" >>"$d/taps"
  ip link set "$tap" mtu 9000 master "$br" up
  rail_nics+=(-netdev "tap,id=r$rail,ifname=$tap,script=no,downscript=no"
    -device "virtio-net-pci,netdev=r$rail,host_mtu=9000,mac=$(link_mac "$rail" "$idx")")
  rails_desc+=", rxe$rail on $(link_ip "$rail" "$idx") ($(link_netdev "$rail") = $tap on $br)"
done
if ((HOSTDEV_NICS)); then
  if [[ ! -e /sys/class/net/$HOSTDEV_BRIDGE ]]; then
    ip link add "$HOSTDEV_BRIDGE" type bridge 2>/dev/null || [[ -e /sys/class/net/$HOSTDEV_BRIDGE ]] ||
      die "cannot create the hostdev bridge $HOSTDEV_BRIDGE"
  fi
  ip link set "$HOSTDEV_BRIDGE" up
fi
for ((n = 0; n < HOSTDEV_NICS; n++)); do
  tap=$(hostdev_tap "$n" "$idx")
  ip tuntap add dev "$tap" mode tap || die "cannot create tap $tap"
  echo "$tap" >>"$d/taps"
  ip link set "$tap" mtu 9000 master "$HOSTDEV_BRIDGE" up
  rail_nics+=(-netdev "tap,id=h$n,ifname=$tap,script=no,downscript=no"
    -device "virtio-net-pci,netdev=h$n,host_mtu=9000,mac=$(hostdev_mac "$n" "$idx")")
done
((HOSTDEV_NICS)) && rails_desc+=", $HOSTDEV_NICS hostdev NIC(s) on $HOSTDEV_BRIDGE, RDMA netns mode $RDMA_NETNS"
# The control channel (lib.sh guest_exec): qemu's pipe chardev on two FIFOs.
mkfifo -m 600 "$d/ctl.in" "$d/ctl.out"
ip addr replace "$ip/24" dev "$BED_LINK"
echo "$ip/24 $BED_LINK" >"$d/hostaddr"
: >"$d/console.log"
t0=$SECONDS
start_ms=$(($(date +%s%N) / 1000000))
qemu_start_ms=$start_ms
# tsc=reliable: under TCG the clocksource watchdog sees the TSC skew against
# the HPET whenever the host is busy and marks it unstable; flipping
# sched_clock's static key then patches kernel text, and MTTCG has oopsed
# there (int3 in sched_clock_cpu, a panic in a cold make test's verbs stage).
# qemu's TCG TSC is one virtual clock for every vCPU, so nothing is lost.
# mitigations=off: a bed guest runs only our own pods; the retpolines and
# barriers cost every emulated indirect call and syscall (a slower boot and
# pod starts).
setsid qemu-system-x86_64 \
  -name "rdmasuite-guestnode-$name" \
  -nodefaults -no-user-config -display none -no-reboot \
  -accel tcg -cpu max -smp "$smp" -m "$mem" \
  -kernel "$base/vmlinuz" -initrd "$d/initrd" \
  -append "console=ttyS0 quiet panic=-1 apparmor=0 tsc=reliable mitigations=off" \
  -serial "file:$d/console.log" \
  -netdev "user,id=n0,net=10.0.2.0/24,host=10.0.2.2,hostfwd=tcp:127.0.0.1:$port-:$KUBELET_PORT" \
  -device virtio-net-pci,netdev=n0 \
  "${rail_nics[@]}" \
  -device virtio-serial-pci,id=vs \
  -chardev "file,id=kubelet,path=$d/kubelet.log" -device virtserialport,bus=vs.0,chardev=kubelet,name=guestnode.kubelet \
  -chardev "file,id=containerd,path=$d/containerd.log" -device virtserialport,bus=vs.0,chardev=containerd,name=guestnode.containerd \
  -chardev "file,id=plugin,path=$d/plugin.log" -device virtserialport,bus=vs.0,chardev=plugin,name=guestnode.plugin \
  -chardev "pipe,id=ctl,path=$d/ctl" -device virtserialport,bus=vs.0,chardev=ctl,name=guestnode.ctl \
  </dev/null >>"$d/qemu.log" 2>&1 9>&- &
qpid=$!
echo "$qpid" >"$d/qemu.pid"
setsid "$BED_DIR/bin/tcprelay" -listen "$ip:$KUBELET_PORT" -to "127.0.0.1:$port" </dev/null >>"$d/relay.log" 2>&1 9>&- &
echo $! >"$d/relay.pid"
log "$name: qemu pid $qpid (-smp $smp -m $mem), node IP $ip, kubelet via 127.0.0.1:$port, pods $cidr$rails_desc"

from=boot
if [[ $phase == boot ]]; then
  wait_until "$timeout_s" "rxe0..rxe$((LINK_RAILS - 1)) in the guest" grep -q 'RXE-READY' "$d/console.log"
  wait_until "$timeout_s" "the images imported and the kubelet held" grep -q 'KUBELET-HELD' "$d/console.log"
  nfs_server_check
  : >"$d/held"
  ok=1
  trap - EXIT INT TERM
  log "$name: booted held in $(secs "$(ms)") s (rails, images, NFS server ready; no kubelet): GUESTNODE_PHASE=join $0 $name starts it"
  exit 0
fi
join_node
