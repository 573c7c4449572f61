#!/usr/bin/env bash
# netdev.sh NODE ethN mtu MTU | addr add|del ADDR/LEN — changes a rail
# netdev inside a running guest node, for the doctor's host-configuration
# stages:
#
#   mtu   sets the netdev's MTU; Soft-RoCE follows it (NETDEV_CHANGEMTU: the
#         RoCE active MTU is the netdev MTU less 96 header bytes, rounded
#         down to an IB MTU), e.g. 1500 on a 9000 fabric: active 1024;
#   addr  adds or removes an address; the kernel adds or removes the RoCE
#         GID entries that follow it (roce_gid_mgmt), e.g. a second address
#         makes the port's GID table unlike its peers'.
#
# Exit status: 0 done, 1 the guest refused, 2 usage.
set -euo pipefail
# shellcheck source=lib.sh
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"
usage() { echo "usage: $0 NODE ethN mtu MTU | NODE ethN addr add|del ADDR/LEN" >&2; exit 2; }
name=${1:-} dev=${2:-} what=${3:-}
[[ -n $name && $dev =~ ^eth[0-9]+$ ]] || usage
check_name "$name"
case $what in
mtu)
  mtu=${4:-}
  [[ $mtu =~ ^[0-9]+$ ]] || usage
  guest_exec "$name" 20 "ip link set $dev mtu $mtu" >/dev/null || die "$name: could not set $dev to MTU $mtu"
  got=$(guest_exec "$name" 10 "cat /sys/class/net/$dev/mtu")
  [[ $got == "$mtu" ]] || die "$name: $dev reads MTU '$got', want $mtu"
  log "$name: $dev at MTU $mtu"
  ;;
addr)
  op=${4:-} addr=${5:-}
  [[ $op == add || $op == del ]] && [[ $addr =~ ^[0-9.]+/[0-9]+$ ]] || usage
  guest_exec "$name" 20 "ip addr $op $addr dev $dev" >/dev/null || die "$name: ip addr $op $addr dev $dev failed"
  log "$name: $dev address $op $addr"
  ;;
*) usage ;;
esac
