#!/usr/bin/env bash
# perftest-pair.sh SERVER CLIENT [DEV] [-- PERFTEST-FLAGS...] — Debian's
# perftest between two running guest nodes (hack/guestnode/up.sh), outside
# any pod: ib_write_bw (or PERFTEST_TOOL) server on SERVER's DEV (rxe0), the
# client on CLIENT's DEV towards SERVER's address on that rail. Both run in
# the guests' root namespaces over the control channel (lib.sh guest_exec),
# with the RoCE v2 IPv4 GID of each side (looked up in sysfs, not assumed).
# The reference beside our probe for the same devices, sizes and QPs, e.g.
#   hack/guestnode/perftest-pair.sh rxe-node-1 rxe-node-2 rxe0 -- -q 4 -s 1048576 -D 5
# Prints the client's output, the server's, both sides' rxe error counters
# before and after, and exits with the client's status.
set -euo pipefail
# shellcheck source=lib.sh
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"

srv=${1:-} cli=${2:-}
check_name "$srv"
check_name "$cli"
shift 2
dev=rxe0
if [[ ${1:-} != -- && -n ${1:-} ]]; then dev=$1; shift; fi
[[ ${1:-} == -- ]] && shift
[[ $dev =~ ^rxe[0-9]+$ ]] || die "DEV must be a rail's rxe device (rxe0, rxe1, ...), got '$dev'"
tool=${PERFTEST_TOOL:-ib_write_bw}
[[ $tool =~ ^ib_(write|read|send)_(bw|lat)$ ]] || die "PERFTEST_TOOL must be a perftest program, got '$tool'"
for f in "$@"; do [[ $f =~ ^[-A-Za-z0-9_.=,]+$ ]] || die "perftest flag '$f' has characters the control channel does not carry"; done
secs=${PERFTEST_TIMEOUT:-120}
port=18600

# In the guest: the RoCE v2 GID index with an IPv4 address on DEV's port 1,
# and that address ("IDX A.B.C.D").
read -r -d '' gid_script <<'SH' || true
d=/sys/class/infiniband/$1/ports/1
for g in "$d"/gids/*; do
  i=${g##*/}
  v=$(cat "$g" 2>/dev/null) || continue
  t=$(cat "$d/gid_attrs/types/$i" 2>/dev/null) || continue
  case $v in 0000:0000:0000:0000:0000:ffff:*) ;; *) continue ;; esac
  case $t in *v2*) ;; *) continue ;; esac
  h=${v#0000:0000:0000:0000:0000:ffff:}
  a=$(printf '%d.%d.%d.%d' 0x$(echo ${h%%:*} | cut -c1-2) 0x$(echo ${h%%:*} | cut -c3-4) 0x$(echo ${h##*:} | cut -c1-2) 0x$(echo ${h##*:} | cut -c3-4))
  echo "$i $a"
  exit 0
done
exit 1
SH
read -r -d '' counters_script <<'SH' || true
c=/sys/class/infiniband/$1/ports/1/hw_counters
for n in completer_retry_err rcvd_seq_err duplicate_request out_of_seq_request send_rnr_err rcvd_rnr_err retry_exceeded_err link_downed; do
  [ -r "$c/$n" ] && printf '%s=%s ' "$n" "$(cat "$c/$n")"
done
echo
SH

sgid=$(guest_script "$srv" 20 "$gid_script" "$dev") || die "$srv: no RoCE v2 IPv4 GID on $dev"
cgid=$(guest_script "$cli" 20 "$gid_script" "$dev") || die "$cli: no RoCE v2 IPv4 GID on $dev"
read -r sidx saddr <<<"$sgid"
read -r cidx _ <<<"$cgid"
flags="$*"
log "$tool $flags: server $srv $dev (GID $sidx, $saddr), client $cli $dev (GID $cidx)"
sc0=$(guest_script "$srv" 20 "$counters_script" "$dev")
cc0=$(guest_script "$cli" 20 "$counters_script" "$dev")
guest_exec "$srv" 20 "rm -f /tmp/pt-srv.txt; timeout $((secs + 10)) $tool -d $dev -x $sidx -F -p $port $flags >/tmp/pt-srv.txt 2>&1 &" >/dev/null ||
  die "$srv: could not start the perftest server"
sleep 2
rc=0
out=$(guest_exec "$cli" $((secs + 20)) "timeout $secs $tool -d $dev -x $cidx -F -p $port $flags $saddr 2>&1") || rc=$?
sleep 1
sout=$(guest_exec "$srv" 20 "cat /tmp/pt-srv.txt" || true)
echo "--- client $cli ($tool $flags $saddr), exit $rc"
printf '%s\n' "$out"
echo "--- server $srv"
printf '%s\n' "$sout" | tail -8
echo "--- rxe counters on $dev (before -> after)"
echo "$srv: $sc0-> $(guest_script "$srv" 20 "$counters_script" "$dev")"
echo "$cli: $cc0-> $(guest_script "$cli" 20 "$counters_script" "$dev")"
exit "$rc"
