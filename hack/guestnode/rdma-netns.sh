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
# removed, each named in the log. The kernel frees a namespace
# asynchronously (its pernet exits run on a workqueue, slow under TCG), so
# the switch keeps being tried for RDMA_NETNS_TIMEOUT seconds after the
# sweep too (CI run A of 2026-11-28 gave up 1 s after it). The time waited
# for pods above does not count against the switch's.
# sweep: each leftover netns entry with the processes in it or holding it
# open (an fd on the entry's path or on the namespace), killed unless it is
# containerd or the kubelet (named, not killed: the namespace then stays
# and the failure below names it); then the entry unmounted (lazily: an
# open fd pins the mount) and removed.
read -r -d '' sweep <<'SH' || true
for f in /var/run/netns/* /run/netns/*; do
  [ -e "$f" ] || continue
  i=$(stat -L -c %i "$f")
  ps="" kept=""
  for p in /proc/[0-9]*; do
    hit=""
    [ "$(readlink "$p"/ns/net 2>/dev/null)" = "net:[$i]" ] && hit=1
    for l in "$p"/fd/*; do
      case $(readlink "$l" 2>/dev/null) in "net:[$i]" | "$f" | /var"$f" | "${f#/var}") hit=1 ;; esac
    done
    [ -n "$hit" ] || continue
    case $(cat "$p"/comm 2>/dev/null) in containerd | kubelet) kept="$kept ${p#/proc/}" ;; *) ps="$ps ${p#/proc/}" ;; esac
  done
  echo "$f (pids:${ps:- none}${kept:+; not killed:$kept})"
  [ -n "$ps" ] && kill -9 $ps
  umount -l "$f" 2>/dev/null
  rm -f "$f"
done
true
SH
# holders: every network namespace other than init's that a process is in
# or holds open (an fd), with its holders: what keeps the kernel refusing.
read -r -d '' holders <<'SH' || true
init=$(readlink /proc/1/ns/net)
for p in /proc/[0-9]*; do
  for l in "$p"/ns/net "$p"/fd/*; do
    n=$(readlink "$l" 2>/dev/null) || continue
    case $n in net:*) [ "$n" = "$init" ] || echo "$n ${p#/proc/}:$(cat "$p"/comm 2>/dev/null)" ;; */netns/*) echo "$n ${p#/proc/}:$(cat "$p"/comm 2>/dev/null)" ;; esac
  done
done | sort -u | awk '{h[$1]=h[$1]" "$2} END {for (n in h) printf "%s held by%s; ", n, h[n]}' | head -c 2000
echo
SH
deadline=$((SECONDS + ${RDMA_NETNS_TIMEOUT:-30}))
restarted=0 swept=0 since=$SECONDS
until out=$(guest_exec "$name" 10 "rdma system set netns $want 2>&1"); do
  if ((!restarted)); then
    guest_exec "$name" 10 'for p in /proc/[0-9]*; do [ "$(cat $p/comm 2>/dev/null)" = multus-daemon ] && kill ${p#/proc/}; done; true' >/dev/null || true
    restarted=1 since=$SECONDS
    log "$name: 'rdma system set netns $want' refused ($out); restarted the Multus daemon to release the pod network namespaces it held"
  elif ((!swept && SECONDS - since >= 10)); then
    swept=1
    left=$(guest_script "$name" 20 "$sweep" | tr '\n' ' ' || true)
    log "$name: still refused 10 s after the Multus restart; deleted the network namespaces no pod of the API owns: ${left:-none}"
    deadline=$((SECONDS + ${RDMA_NETNS_TIMEOUT:-30}))
  fi
  if ((SECONDS >= deadline)); then
    log "$name: the kernel refused 'rdma system set netns $want' for ${RDMA_NETNS_TIMEOUT:-30} s$( ((swept)) && echo " after the sweep"): $out (entries in /var/run/netns: $(guest_exec "$name" 10 'ls /var/run/netns 2>/dev/null | wc -l'); namespaces processes are in or hold: $(guest_script "$name" 20 "$holders" || echo unreadable))"
    exit 1
  fi
  sleep 1
done
have=$(mode)
[[ $have == "$want" ]] || die "$name: mode is $have after switching to $want"
echo "$name: RDMA netns mode $want (was the other)"
