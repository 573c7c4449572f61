#!/usr/bin/env bash
# flap-at-rest.sh NODE DEV — stages a port fault at rest (for the doctor's
# at-rest counter read) on guest node
# NODE: once the doctor's host probe (`rdmaprobe node --host-root …`, in its
# pod) has begun its sampling window in the guest, takes rail DEV's netdev
# down and up once (hack/guestnode/rail.sh). Soft-RoCE counts the flap in
# hw_counters/link_downed (rxe_port_down, drivers/infiniband/sw/rxe/rxe_net.c),
# the one counter an idle rxe port can raise; the probe must see it rise
# between its two reads of the port counters.
#
# When the window begins: the probe reads the host's facts (the port states
# among them), then every port's counters, then sleeps out its window, then
# reads them again. The reads before the window took 2.2 s on an idle guest
# and 11 s on another (rxe's 1024-entry GID tables, read entry by entry,
# under TCG), so a fixed delay misses (make test's first two tries did). The
# probe's CPU time (utime+stime in /proc/PID/stat) stands still once it
# sleeps: the flap comes after one second without it moving. The caller
# gives the probe a window long enough for that second and the flap (each
# rail.sh step takes 0.4-5 s here): make test uses 15 s.
# Gives up after FLAP_WAIT_S (600) seconds without a probe (exit 1).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib.sh
. "$here/lib.sh"
name=${1:-} dev=${2:-}
check_name "$name"
[[ $dev =~ ^rxe[0-9]+$ ]] || die "DEV must be a rail's rxe device (rxe0, rxe1, ...), got '$dev'"
until=$((SECONDS + ${FLAP_WAIT_S:-600}))
# One look a second: busybox ps in the guest, cheap beside its pods.
pid=
while [[ -z $pid ]]; do
  ((SECONDS < until)) || die "no host probe ran on $name within ${FLAP_WAIT_S:-600} s"
  pid=$(guest_exec "$name" 10 'ps | grep "[r]dmaprobe node --host-root" | awk "{print \$1}" | head -1' 2>/dev/null || true)
  [[ $pid =~ ^[0-9]+$ ]] || { pid=; sleep 1; }
done
log "$name: the doctor's host probe runs (pid $pid); waiting for its window"
prev=
while :; do
  ((SECONDS < until)) || die "the host probe on $name never went idle"
  cpu=$(guest_exec "$name" 10 "awk '{print \$14+\$15}' /proc/$pid/stat" 2>/dev/null || true)
  [[ $cpu =~ ^[0-9]+$ ]] || die "the host probe (pid $pid) on $name ended before its window could be used"
  [[ $cpu == "$prev" ]] && break
  prev=$cpu
  sleep 1
done
log "$name: the host probe is in its window (its CPU time stood at $cpu ticks for 1 s); $dev flaps"
"$here/rail.sh" "$name" "$dev" down
"$here/rail.sh" "$name" "$dev" up
