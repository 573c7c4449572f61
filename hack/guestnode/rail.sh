#!/usr/bin/env bash
# rail.sh NODE [DEV down|up|status] — stages a down rail on a running guest
# node (hack/guestnode/up.sh NODE), or brings it back, and prints every
# rail's state. DEV is an RDMA device (rxe1) or the netdev under it (eth2).
#
#   down  sets DEV's netdev down inside the guest (ip link set ethN down) and
#         waits until its rxe port reports DOWN: that rail fails on this node
#         (RoCE to and from it goes nowhere), every other rail keeps working;
#   up    sets it up again and waits until the port is ACTIVE with its IPv4
#         RoCE v2 GID back;
#   status, or no DEV: only prints.
#
# Output: one line per rail, "rxeN ethM netdev=UP|DOWN port=ACTIVE|DOWN gid=...".
# The command runs over the guest's control channel (lib.sh guest_exec: a
# virtio serial port, no pod, no kubelet involved); each step is bounded by
# RAIL_TIMEOUT seconds (default 20). Exit status: 0 when the rail reached the
# asked state, 1 when not in time, 2 on usage or a node that is not running,
# 3 when the guest has no such device, 124 when the guest did not answer.
set -euo pipefail
# shellcheck source=lib.sh
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"

usage() { echo "usage: $0 NODE [DEV down|up|status]   (DEV: rxeN or ethN)" >&2; exit 2; }
name=${1:-}
[[ -n $name ]] || usage
check_name "$name"
dev=${2:-} want=${3:-status}
if [[ -n $dev ]]; then
  [[ $dev =~ ^[a-z][a-z0-9_]{0,14}$ ]] || usage
  [[ $want == down || $want == up || $want == status ]] || usage
else
  want=status
fi
secs=${RAIL_TIMEOUT:-20}
[[ $secs =~ ^[1-9][0-9]*$ ]] || die "RAIL_TIMEOUT must be whole seconds, got '$secs'"

# Runs in the guest (dash + busybox): $1 device or netdev (or ""), $2 action,
# $3 timeout in seconds.
read -r -d '' script <<'SH' || true
dev=$1 want=$2 t=$(($3 * 10)) ib= net=
rails() {
  for x in /sys/class/infiniband/*; do
    [ -e "$x" ] || continue
    n=$(cat "$x/parent" 2>/dev/null)
    case $n in eth*) ;; *) continue ;; esac # a rail, not a hostdev NIC's placeholder or pod device
    printf '%s %s netdev=%s port=%s gid=%s\n' "${x##*/}" "$n" \
      "$(cat "/sys/class/net/$n/operstate" 2>/dev/null | tr a-z A-Z)" \
      "$(cut -d' ' -f2 "$x/ports/1/state")" "$(cat "$x/ports/1/gids/1")"
  done
}
if [ -n "$dev" ]; then
  case $dev in
  rxe*) ib=$dev; net=$(cat "/sys/class/infiniband/$dev/parent" 2>/dev/null) ;;
  *)
    net=$dev
    for x in /sys/class/infiniband/*; do
      [ "$(cat "$x/parent" 2>/dev/null)" = "$net" ] && ib=${x##*/}
    done
    ;;
  esac
  if [ -z "$ib" ] || [ -z "$net" ] || [ ! -e "/sys/class/infiniband/$ib" ] || [ ! -e "/sys/class/net/$net" ]; then
    echo "no Soft-RoCE device on $dev here; the rails are:"
    rails
    exit 3
  fi
  st=/sys/class/infiniband/$ib/ports/1/state
  reached() {
    case $want in
    down) grep -q DOWN "$st" ;;
    up)
      grep -q ACTIVE "$st" || return 1
      case $(cat "/sys/class/infiniband/$ib/ports/1/gids/1") in 0000:0000:0000:0000:0000:ffff:*) ;; *) return 1 ;; esac
      ;;
    esac
  }
  case $want in
  down) ip link set "$net" down || exit 1 ;;
  up) ip link set "$net" up || exit 1 ;;
  status) rails; exit 0 ;;
  esac
  until reached; do
    t=$((t - 1))
    if [ "$t" -le 0 ]; then
      echo "$ib on $net: port did not reach $want; the rails are:"
      rails
      exit 1
    fi
    sleep 0.1
  done
fi
rails
SH

t0=$(($(date +%s%N) / 1000000))
rc=0
out=$(guest_script "$name" "$((secs + 10))" "$script" "$dev" "$want" "$secs") || rc=$?
ms=$(($(date +%s%N) / 1000000 - t0))
[[ -n $out ]] && printf '%s\n' "$out"
case $rc in
0) [[ $want == status ]] || log "$name: $dev $want in $ms ms" ;;
124) log "$name: no answer from the guest's control channel in $((secs + 10)) s"; exit 124 ;;
*) log "$name: $dev $want failed (exit $rc, $ms ms)" ;;
esac
exit "$rc"
