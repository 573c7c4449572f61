#!/usr/bin/env bash
# lossy.sh NODE RAIL PERCENT | NODE RAIL off | off — stages a lossy link on a
# running guest node's rail, on the host bridge that carries it (for the
# port-counter link checks).
#
# The rule drops PERCENT % of the full-size RoCE v2 frames (UDP 4791, more
# than 1000 bytes: data packets at the rails' 1024-byte RoCE MTU) that the
# node sends on the rail, as a dirty cable or transceiver would corrupt
# them: the receiver sees a sequence gap and NAKs, the sender resends, and
# both ends' Soft-RoCE counters rise (out_of_seq_request, rcvd_seq_err). Small
# frames (ACKs, 2-byte latency and message-rate traffic) pass, so the
# resends stay cheap: a lost last packet of a burst costs one ACK timeout.
# netem would do this inside the guest or on the tap, but the host kernel
# has no sch_netem; nftables' bridge family with numgen does it on the
# bridge (nftables, hack/install-deps.sh).
#
# The rules live in one table, bridge rdmasuite_lossy: "off" for a rail
# removes its rule, a bare "off" the table; hack/bed.sh down removes it too.
set -euo pipefail
# shellcheck source=lib.sh
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"

table=rdmasuite_lossy
usage() { echo "usage: $0 NODE RAIL PERCENT|off  |  $0 off" >&2; exit 2; }
command -v nft >/dev/null || die "nft not found: hack/install-deps.sh installs nftables"
if [[ ${1:-} == off && $# == 1 ]]; then
  nft delete table bridge "$table" 2>/dev/null || true
  log "lossy links: none"
  exit 0
fi
[[ $# == 3 ]] || usage
name=$1 rail=$2 pct=$3
check_name "$name"
[[ $rail =~ ^[0-9]$ ]] && ((rail < LINK_RAILS)) || die "rail must be 0..$((LINK_RAILS - 1)), got '$rail'"
idx=$(cat "$GN_ROOT/$name/index" 2>/dev/null) || die "$name is not running (no $GN_ROOT/$name/index)"
tap=$(link_tap "$rail" "$idx")
[[ -e /sys/class/net/$tap ]] || die "$name's rail $rail has no tap $tap on the host"
nft add table bridge "$table"
nft add chain bridge "$table" forward '{ type filter hook forward priority 0; policy accept; }'
# One rule per tap, found again by its comment.
handle=$(nft -a list chain bridge "$table" forward | sed -n "s/.*comment \"$tap\" # handle \([0-9]*\)/\1/p")
[[ -z $handle ]] || nft delete rule bridge "$table" forward handle "$handle"
if [[ $pct == off ]]; then
  log "$name rail $rail ($tap): clean"
  exit 0
fi
[[ $pct =~ ^[1-9][0-9]?$ ]] || die "PERCENT must be 1..99, got '$pct'"
nft add rule bridge "$table" forward iifname "$tap" meta l4proto udp udp dport 4791 meta length gt 1000 \
  numgen random mod 100 lt "$pct" counter drop comment "\"$tap\""
log "$name rail $rail ($tap): $pct % of its full-size RoCE frames dropped on $(link_bridge "$rail")"
