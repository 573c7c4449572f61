#!/usr/bin/env bash
# rdma-netns.sh NODE [shared|exclusive] — prints, or switches, the RDMA
# subsystem's network-namespace mode of a running guest node (`rdma system
# set netns MODE` inside the guest, over the control channel).
#
#   shared     every pod's namespace sees every RDMA device of the node: what
#              the RDMA shared device plugin (shared-dev variant) needs;
#   exclusive  an RDMA device is visible only in its own namespace: what
#              SR-IOV clusters with rdma-cni run (hostdev variant: the pod
#              sees only the device on its net1).
#
# The kernel takes the switch only while no network namespace but the
# initial one exists, so the node must have no pods: the script refuses when
# the API still lists any after that time, and retries for RDMA_NETNS_TIMEOUT seconds (30) while
# containerd removes the last sandboxes' namespaces (pods still terminating
# are waited for as long). Exit status: 0 when the
# mode is (now) MODE, 1 when the kernel kept refusing, 2 on usage or pods
# still on the node.
set -euo pipefail
# shellcheck source=lib.sh
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"

name=${1:-}
want=${2:-}
check_name "$name"
[[ -z $want || $want == shared || $want == exclusive ]] || { echo "usage: $0 NODE [shared|exclusive]" >&2; exit 2; }
mode() { guest_exec "$name" 10 "rdma system show" | sed -n 's/.*netns \([a-z]*\).*/\1/p'; }
have=$(mode)
[[ -n $have ]] || die "$name: could not read the RDMA netns mode (rdma system show)"
if [[ -z $want || $want == "$have" ]]; then
  echo "$name: RDMA netns mode $have"
  exit 0
fi
deadline=$((SECONDS + ${RDMA_NETNS_TIMEOUT:-30}))
while pods=$(kubectl get pods -A --field-selector "spec.nodeName=$name" -o name 2>/dev/null | head -5) && [[ -n $pods ]]; do
  if ((SECONDS >= deadline)); then
    log "$name still has pods after ${RDMA_NETNS_TIMEOUT:-30} s ($(echo $pods)); delete them before switching the RDMA netns mode"
    exit 2
  fi
  sleep 1
done
# The kernel refuses the switch (EBUSY) while any network namespace but
# the node's own is alive, and the Multus daemon keeps dead pods' ones
# alive: v4.3.0 opens a pod's netns in validateIfName (multus.go) on every
# ADD and never closes it, which the thin plugin's exit used to release and
# a long-lived daemon releases only when Go's GC finalizes the handle (run
# U: 30 s of EBUSY with no netns left in /var/run/netns). So the daemon is
# restarted (init's loop starts it again in 2 s) when the first try fails.
# A sandbox containerd cannot stop keeps its namespace too (run Z: the
# pause container's crun state file was gone, and StopPodSandbox failed
# every 2 s for 10 minutes, "error opening file …/status"). With no pod of
# the node left in the API, such a namespace belongs to no pod: 10 s
# after the daemon restart, the processes still in each leftover netns
# entry (/var/run/netns, containerd's; /run/netns, ip netns') are killed
# (found by their /proc/PID/ns/net inode) and the entry unmounted and
# removed, each named in the log.
restarted=0 swept=0 since=$SECONDS
until out=$(guest_exec "$name" 10 "rdma system set netns $want 2>&1"); do
  if ((!restarted)); then
    guest_exec "$name" 10 'for p in /proc/[0-9]*; do [ "$(cat $p/comm 2>/dev/null)" = multus-daemon ] && kill ${p#/proc/}; done; true' >/dev/null || true
    restarted=1 since=$SECONDS
    log "$name: 'rdma system set netns $want' refused ($out); restarted the Multus daemon to release the pod network namespaces it held"
  elif ((!swept && SECONDS - since >= 10)); then
    swept=1
    left=$(guest_exec "$name" 20 'for f in /var/run/netns/* /run/netns/*; do [ -e "$f" ] || continue; i=$(stat -L -c %i "$f"); ps=""; for p in /proc/[0-9]*; do [ "$(readlink $p/ns/net 2>/dev/null)" = "net:[$i]" ] && ps="$ps ${p#/proc/}"; done; echo "$f (pids:${ps:- none})"; [ -n "$ps" ] && kill -9 $ps; umount "$f" 2>/dev/null; rm -f "$f"; done; true' | tr '\n' ' ' || true)
    log "$name: still refused 10 s after the Multus restart; deleted the network namespaces no pod of the API owns: ${left:-none}"
  fi
  if ((SECONDS >= deadline)); then
    log "$name: the kernel refused 'rdma system set netns $want' for ${RDMA_NETNS_TIMEOUT:-30} s: $out (network namespaces in the guest: $(guest_exec "$name" 10 'ls /var/run/netns 2>/dev/null | wc -l'))"
    exit 1
  fi
  sleep 1
done
have=$(mode)
[[ $have == "$want" ]] || die "$name: mode is $have after switching to $want"
echo "$name: RDMA netns mode $want (was the other)"
