# shellcheck shell=bash disable=SC2034
# Shared by up.sh, down.sh and status.sh (sourced). A guest node NAME keeps
# everything under $BED_DIR/guestnodes/NAME: index, pids, logs, certificates,
# the per-node initramfs, timings.
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
# shellcheck source=../versions.sh
. "$here/../versions.sh"

BED_LINK=rsbed0           # the host bed's bridge (hack/bed.sh)
APISERVER_PORT=6443
KUBELET_PORT=10250        # inside the guest, and on the node IP on the host
IMAGE_TAG=${IMAGE_TAG:-dev}
RESOURCE=rdma/rdma_shared_device_a
GN_ROOT=$BED_DIR/guestnodes

log() { printf '%s guestnode: %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }
kubectl() { timeout 30 "$K8S_BIN_DIR/kubectl" --kubeconfig "$BED_DIR/kubeconfig" "$@"; }

check_name() {
  [[ ${1:-} =~ ^[a-z0-9]([-a-z0-9]*[a-z0-9])?$ ]] || die "node name '${1:-}' is not a DNS label"
}
# Per-index addresses: node IP on the bed link, qemu's hostfwd port for the
# kubelet on 127.0.0.1, the pod subnet inside the guest.
node_ip() { echo "10.250.0.$((20 + $1))"; }
hostfwd_port() { echo "$((20250 + $1))"; }
pod_cidr() { echo "10.244.$((20 + $1)).0/24"; }
# The guest-to-guest link: a host bridge with one tap per guest (eth1 in the
# guest; its address is rxe0's RoCE v2 GID). A tap, not a qemu socket
# netdev: the UDP one dropped RoCE bursts in its socket buffer and the TCP
# one stalled for good under load.
LINK_BRIDGE=rsgl0
link_ip() { echo "10.251.0.$((20 + $1))"; }
link_tap() { echo "rsgt$1"; }
link_mac() { printf '52:54:00:25:01:%02x\n' "$1"; }

pid_alive() { [[ -f $1 ]] && kill -0 "$(cat "$1")" 2>/dev/null; }
stop_pid() { # pidfile [timeout_s]
  local f=$1 pid i
  [[ -f $f ]] || return 0
  pid=$(cat "$f")
  if kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid" 2>/dev/null || true
    for ((i = 0; i < ${2:-10} * 10; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
    for ((i = 0; i < 50; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  fi
  rm -f "$f"
}
