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
HOSTDEV_RESOURCE=nvidia.com/hostdev
HOSTDEV_SUBNET=10.252.0.0/24 # the hostdev rail (bridge rsgh0); Whereabouts hands out its addresses
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
# The guest-to-guest links ("rails"): rail R is a host bridge rsglR with one
# tap per guest (eth<R+1> in the guest, carrying Soft-RoCE rxeR; the link's
# address is rxeR's RoCE v2 GID). Each rail has its own subnet and each tap
# its own MAC (rxe treats a destination with its own MAC as loopback). Rail 0
# also routes the other guests' pod subnets. A tap, not a qemu socket netdev:
# the UDP one dropped RoCE bursts in its socket buffer and the TCP one stalled
# for good under load.
LINK_RAILS=${GUESTNODE_RAILS:-2}
[[ $LINK_RAILS =~ ^[1-4]$ ]] || { echo "GUESTNODE_RAILS must be 1..4, got '$LINK_RAILS'" >&2; exit 2; }
link_bridge() { echo "rsgl$1"; }                           # rail
link_ip() { echo "10.251.$1.$((20 + $2))"; }               # rail index
link_tap() { echo "rsgt$2r$1"; }                           # rail index
link_mac() { printf '52:54:00:25:%02x:%02x\n' "$(($1 + 1))" "$2"; } # rail index
link_netdev() { echo "eth$(($1 + 1))"; }                   # rail (inside the guest)
# The hostdev NICs: NODE_HOSTDEV per guest (the node table's hostdev column),
# virtio NICs on one more host bridge, rsgh0, that no rxe of the node uses:
# each is set aside for one hostdev pod at a time (device plugin resource
# nvidia.com/hostdev, device ID = its PCI address), which gets it as net1.
HOSTDEV_BRIDGE=rsgh0
hostdev_tap() { echo "rsgt$2h$1"; }                              # nic index
hostdev_mac() { printf '52:54:00:26:%02x:%02x\n' "$(($1 + 1))" "$2"; } # nic index

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

# guest_exec NAME TIMEOUT_S COMMAND — runs the one-line shell COMMAND as root
# inside the running guest node NAME and prints its output (stdout and stderr
# together); returns its exit status, or 124 when it did not finish within
# TIMEOUT_S. The channel is a virtio serial port (guestnode.ctl) backed by
# two FIFOs in the node's directory (qemu's pipe chardev: ctl.in, ctl.out);
# the guest's init reads one line at a time, runs it with sh -c and frames
# its output with "GUESTNODE-CTL-BEGIN ID" and "GUESTNODE-CTL-END ID RC".
# The IDs keep an earlier, timed-out command's output out of this one's; a
# lock keeps two callers apart.
guest_exec() {
  local name=$1 secs=$2 cmd=$3 d=$GN_ROOT/$1 id line rc=124 deadline lk in out left mine=0
  [[ $cmd != *$'\n'* ]] || { log "guest_exec: one line only"; return 2; }
  pid_alive "$d/qemu.pid" || { log "guest node $name is not running (no qemu for $d)"; return 2; }
  [[ -p $d/ctl.in && -p $d/ctl.out ]] || { log "guest node $name has no control channel ($d/ctl.in, ctl.out)"; return 2; }
  exec {lk}>"$d/ctl.lock"
  if ! flock -w "$secs" "$lk"; then
    exec {lk}>&-
    log "guest_exec: another command holds $d/ctl.lock"
    return 124
  fi
  deadline=$((SECONDS + secs))
  id=$$-$RANDOM-$SECONDS
  # Opened read-write: never blocks (qemu holds both FIFOs open as well).
  exec {out}<>"$d/ctl.out" {in}<>"$d/ctl.in"
  printf '%s %s\n' "$id" "$cmd" >&"$in"
  exec {in}>&-
  while left=$((deadline - SECONDS)) && ((left > 0)) && IFS= read -r -t "$left" line <&"$out"; do
    case $line in
    "GUESTNODE-CTL-BEGIN $id") mine=1 ;;
    "GUESTNODE-CTL-END $id "*) rc=${line##* }; break ;;
    GUESTNODE-CTL-*) mine=0 ;; # an earlier command's frame
    *) ((mine)) && printf '%s\n' "$line" ;;
    esac
  done
  exec {out}<&- {lk}>&-
  return "$rc"
}

# guest_script NAME TIMEOUT_S SCRIPT [ARG...] — runs the (multi-line) sh
# SCRIPT with ARGs inside guest node NAME through guest_exec (as one line:
# base64, decoded by the guest's busybox). ARGs must not contain quotes.
guest_script() {
  local name=$1 secs=$2 script=$3 a args=
  shift 3
  for a in "$@"; do
    [[ $a != *[\'\"\\]* ]] || { log "guest_script: argument $a has quotes"; return 2; }
    args+=" '$a'"
  done
  guest_exec "$name" "$secs" "echo $(printf '%s\n' "$script" | base64 -w0) | base64 -d | sh -s --$args"
}
