#!/usr/bin/env bash
# Proves Bed 2 through run.sh: both rxe devices are ACTIVE; perftest moves data
# between rxe0 and rxe1 (write and read); the memlock limit is enforced for an
# unprivileged user like on real hardware; the command's exit code and the
# timeout come back. Prints PASS/FAIL per check; exits 1 on any failure.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
run=$here/run.sh

tmp=$(mktemp -d "${TMPDIR:-/tmp}/rdmasuite-selftest.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fails=0
pass() { echo "PASS $*"; }
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
now_ms() { echo $((${EPOCHREALTIME/./} / 1000)); }

# The guest half: runs each probe and prints "@@ KEY VALUE..." result lines
# between the tools' own output (kept as evidence).
cat >"$tmp/probe.sh" <<'EOF'
#!/bin/sh
# pair AS TOOL ARGS...: TOOL server on rxe0, client on rxe1, both run through
# AS ("asuser UID KB" or "env"). Prints the client's output, then its BW
# average (0 if none) and both exit codes.
pair() {
  as=$1; shift
  timeout 60 $as "$@" -d rxe0 >/tmp/server.log 2>&1 &
  spid=$!
  i=0
  until netstat -ltn | grep -q ':18515 ' || [ $i -ge 100 ]; do sleep 0.1; i=$((i + 1)); done
  timeout 60 $as "$@" -d rxe1 "$RXE0_IP" >/tmp/client.log 2>&1
  crc=$?
  wait $spid
  src=$?
  cat /tmp/client.log
  sed 's/^/server| /' /tmp/server.log
  bw=$(awk 'f {print $4; exit} /#bytes/ {f = 1}' /tmp/client.log)
  grep -q "Couldn't allocate MR" /tmp/client.log /tmp/server.log && mr=nomr || mr=mr
  echo "@@ $KEY ${bw:-0} $crc $src $mr"
}
ibv_devinfo
for d in rxe0 rxe1; do echo "@@ active_$d $(ibv_devinfo -d $d | grep -c PORT_ACTIVE)"; done
echo "@@ asuser $(asuser 1000 64 sh -c 'echo $(id -u) $(id -g) $(ulimit -Sl) $(ulimit -Hl)')"
KEY=write_bw pair env ib_write_bw -F -s 65536 -n 300
KEY=read_bw pair env ib_read_bw -F -s 65536 -n 300
KEY=memlock_64 pair "asuser 1000 64" ib_write_bw -F -s 1048576 -n 20
KEY=memlock_8192 pair "asuser 1000 8192" ib_write_bw -F -s 1048576 -n 20
KEY=root_1m pair env ib_write_bw -F -s 1048576 -n 20
EOF
chmod 755 "$tmp/probe.sh"

echo "selftest: run 1: probes in one guest (log: kept on failure)"
t0=$(now_ms)
rc=0
"$run" -v -t 240 -f "$tmp/probe.sh" -- /opt/test/probe.sh >"$tmp/out" 2>"$tmp/err" || rc=$?
t1=$(now_ms)
res() { awk -v k="$1" '$1 == "@@" && $2 == k {$1 = $2 = ""; sub(/^ +/, ""); print; exit}' "$tmp/out"; }
# check NAME DETAIL-ON-FAILURE COMMAND...
check() {
  local name=$1 detail=$2
  shift 2
  if "$@"; then pass "$name"; else fail "$name: $detail"; fi
}
check "probe run exits 0" "got $rc" test "$rc" = 0
for d in rxe0 rxe1; do
  check "ibv_devinfo: $d PORT_ACTIVE" "PORT_ACTIVE count '$(res "active_$d")'" test "$(res "active_$d")" = 1
done
check "asuser 1000 64: uid/gid 1000, memlock soft=hard=64" "got '$(res asuser)'" \
  test "$(res asuser)" = "1000 1000 64 64"
bwcheck() { # KEY WHAT: BW > 0 and both sides exit 0
  read -r bw crc src _ <<<"$(res "$1")"
  if [[ -n $bw ]] && awk -v b="$bw" 'BEGIN {exit !(b > 0)}' && [[ $crc == 0 && $src == 0 ]]; then
    pass "$2: ${bw} MB/s"
  else
    fail "$2: bw=${bw:-none} client rc=${crc:-?} server rc=${src:-?}"
  fi
}
bwcheck write_bw "ib_write_bw 64 KiB rxe1 -> rxe0"
bwcheck read_bw "ib_read_bw 64 KiB rxe1 <- rxe0"
read -r bw crc src mr <<<"$(res memlock_64)"
check "uid 1000, memlock 64 KiB: 1 MiB MR refused (Couldn't allocate MR)" "got bw=$bw rc=$crc/$src $mr" \
  test "$mr,$((crc != 0))" = nomr,1
bwcheck memlock_8192 "uid 1000, memlock 8192 KiB: ib_write_bw 1 MiB"
bwcheck root_1m "root: ib_write_bw 1 MiB"
ready=$(sed -n 's/.*guest ready after \([0-9.]*\)s.*/\1/p' "$tmp/err")
if ((fails)); then
  echo "--- run 1 stdout"; cat "$tmp/out"; echo "--- run 1 stderr"; cat "$tmp/err"
fi

echo "selftest: run 2: exit code"
t2=$(now_ms)
rc=0
"$run" -t 120 -- exit 7 || rc=$?
t3=$(now_ms)
check "'-- exit 7' makes run.sh exit 7" "got $rc" test "$rc" = 7

echo "selftest: run 3: timeout"
mkdir "$tmp/t"
rc=0
TMPDIR=$tmp/t "$run" -t 15 -- sleep 600 2>"$tmp/err3" || rc=$?
check "-t 15 with 'sleep 600' exits 124" "got $rc: $(cat "$tmp/err3")" test "$rc" = 124
# run.sh's qemu and temp dir live under its TMPDIR: both must be gone.
if [[ -z $(ls -A "$tmp/t") ]] && ! pgrep -f "$tmp/t/" >/dev/null; then
  pass "no qemu process or temp file left after the timeout"
else
  fail "leftovers after the timeout: $(ls -A "$tmp/t") $(pgrep -f "$tmp/t/" || true)"
fi

echo "selftest: boot to rxe ready ${ready:-?}s (guest uptime); probe run $(((t1 - t0) / 1000))s;" \
  "'exit 7' run (boot -> command -> poweroff) $(((t3 - t2) / 1000)).$(printf %03d $(((t3 - t2) % 1000)))s"
if ((fails)); then
  echo "selftest: $fails check(s) FAILED"
  exit 1
fi
echo "selftest: all checks passed"
