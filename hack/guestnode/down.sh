#!/usr/bin/env bash
# down.sh NAME — removes guest node NAME: its pods and node object (when the
# bed's apiserver still answers), qemu, the relay, the node IP on the bed
# link, its tap on the guest link (and the link bridge with the last node)
# and $BED_DIR/guestnodes/NAME. Safe to run twice or after a failed up.sh.
set -euo pipefail
# shellcheck source=lib.sh
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"

name=${1:-}
check_name "$name"
d=$GN_ROOT/$name
mkdir -p "$GN_ROOT"
exec 9>"$GN_ROOT/.lock"
flock -w 60 9 || die "another guest-node operation holds $GN_ROOT/.lock"

if [[ -f $BED_DIR/kubeconfig && -x $K8S_BIN_DIR/kubectl ]] && kubectl get --raw /readyz >/dev/null 2>&1; then
  # Pods first (while the kubelet can still stop them), then the node.
  kubectl delete pods --all-namespaces --field-selector "spec.nodeName=$name" \
    --force --grace-period=0 --wait=false >/dev/null 2>&1 || true
  kubectl delete node "$name" --wait=false >/dev/null 2>&1 || true
fi
stop_pid "$d/relay.pid" 5
stop_pid "$d/qemu.pid" 10
# qemu writes its own pidfile too; also catch a qemu whose pid file got lost.
for p in $(pgrep -f "qemu-system-x86_64 -name rdmasuite-guestnode-$name( |$)" || true); do
  kill -KILL "$p" 2>/dev/null || true
done
if [[ -f $d/hostaddr ]]; then
  read -r addr link <"$d/hostaddr"
  ip addr del "$addr" dev "$link" 2>/dev/null || true
fi
# Its taps, one per rail (taps: one a line; tap: an older layout's one).
for f in "$d/taps" "$d/tap"; do
  [[ -f $f ]] || continue
  while read -r t; do [[ -n $t ]] && ip link del "$t" 2>/dev/null || true; done <"$f"
done
if [[ -f $d/index ]]; then
  # shellcheck disable=SC2046 # the pattern is meant to glob
  for f in /sys/class/net/$(link_tap '*' "$(cat "$d/index")"); do
    [[ -e $f ]] && ip link del "${f##*/}" 2>/dev/null || true
  done
fi
rm -rf "$d" "$d.failed"
# The last guest node takes the directory (and its lock) and the rail
# bridges with it.
if ! compgen -G "$GN_ROOT/*/" >/dev/null; then
  for f in /sys/class/net/rsgl* /sys/class/net/rsgh*; do [[ -e $f ]] && ip link del "${f##*/}" 2>/dev/null || true; done
  rm -f "$GN_ROOT/.lock" "$GN_ROOT/cni.kubeconfig"
  rmdir "$GN_ROOT" 2>/dev/null || true
fi
log "$name: down"
