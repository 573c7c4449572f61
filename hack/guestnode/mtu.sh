#!/usr/bin/env bash
# mtu.sh NODE NETDEV MTU — sets a rail netdev's MTU inside a running guest
# node and waits until the Soft-RoCE port on it reports the active MTU that
# follows (rxe follows NETDEV_CHANGEMTU: the netdev MTU less 96 header bytes,
# rounded down to an IB MTU). The bed stages a RoCE port below the fabric's
# MTU with it (1500 on a 9000 fabric: active 1024), and restores 9000 after.
# Exit status: 0 done, 1 the port did not follow in 20 s, 2 usage.
set -euo pipefail
# shellcheck source=lib.sh
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"
name=${1:-} dev=${2:-} mtu=${3:-}
[[ -n $name && $dev =~ ^eth[0-9]+$ && $mtu =~ ^[0-9]+$ ]] || { echo "usage: $0 NODE ethN MTU" >&2; exit 2; }
check_name "$name"
guest_exec "$name" 20 "ip link set $dev mtu $mtu && cat /sys/class/net/$dev/mtu" >/dev/null ||
  die "$name: could not set $dev to MTU $mtu"
got=$(guest_exec "$name" 10 "cat /sys/class/net/$dev/mtu")
[[ $got == "$mtu" ]] || die "$name: $dev reads MTU '$got', want $mtu"
log "$name: $dev at MTU $mtu"
