#!/usr/bin/env bash
# flap-at-rest.sh NODE DEV [AFTER_S] — stages issue 29.5's at-rest fault on
# guest node NODE: waits until the doctor's host probe (`rdmaprobe node
# --host-root …`, in its pod) runs in the guest, then, AFTER_S seconds later
# (default 7), takes rail DEV's netdev down and up once (hack/guestnode/rail.sh).
# Soft-RoCE counts the flap in hw_counters/link_downed (rxe_port_down,
# drivers/infiniband/sw/rxe/rxe_net.c), the one counter an idle rxe port can
# raise; the probe must read it rise over its sampling window.
#
# Why it waits for the process inside the guest, and why AFTER_S: the API's
# Running comes seconds late under TCG, and the probe reads the port states,
# then the counters, then waits out its window; on an idle guest its first
# counter read came 2.2 s after it started, on a loaded one (beside the
# disruptive stage's refused run) too late for a flap 10 s in. A flap before
# the first read, or during the port-state read, proves nothing (or shows
# the port down), so the caller gives the probe a window that leaves room on
# both sides (make test: 15 s, the flap 7 s in, each rail.sh step 0.4-5 s).
# Gives up after FLAP_WAIT_S (600) seconds without a probe (exit 1).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib.sh
. "$here/lib.sh"
name=${1:-} dev=${2:-} after=${3:-7}
check_name "$name"
[[ $dev =~ ^rxe[0-9]+$ ]] || die "DEV must be a rail's rxe device (rxe0, rxe1, ...), got '$dev'"
[[ $after =~ ^[0-9]+$ ]] || die "AFTER_S must be whole seconds, got '$after'"
until=$((SECONDS + ${FLAP_WAIT_S:-600}))
# One look a second: busybox ps in the guest, cheap beside its pods.
until guest_exec "$name" 10 'ps | grep -q "[r]dmaprobe node --host-root"' >/dev/null 2>&1; do
  ((SECONDS < until)) || die "no host probe ran on $name within ${FLAP_WAIT_S:-600} s"
  sleep 1
done
log "$name: the doctor's host probe runs; $dev flaps in $after s"
sleep "$after"
"$here/rail.sh" "$name" "$dev" down
"$here/rail.sh" "$name" "$dev" up
