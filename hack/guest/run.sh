#!/usr/bin/env bash
# run.sh [-t TIMEOUT_S] [-m MEM_MB] [-f HOSTFILE]... [-v] -- CMD [ARGS...]
#
# Boots the Bed 2 guest (qemu TCG, Debian kernel, busybox initramfs) with two
# Soft-RoCE devices, rxe0 on veth0 ($RXE0_IP=192.168.77.1) and rxe1 on veth1
# ($RXE1_IP=192.168.77.2), which talk RoCEv2 to each other. Then runs
# `sh -c "CMD ARGS..."` (words joined with spaces, as ssh does) as root in
# /opt/test, where each -f file is copied (mode kept). /bin/asuser
# UID MEMLOCK_KB CMD... runs a command unprivileged with a memlock limit.
# GUEST_SMP sets the guest's vCPUs (default 2); GUEST_PIN_VCPUS=1 pins vCPU
# n's qemu thread to host CPU n (mod the host's CPUs), so the host's
# scheduler cannot stack two busy vCPUs on one core (benchmarks).
#
# The command's stdout and stderr stream to this script's stdout; the kernel
# console goes to a log that is shown on failure (and always with -v).
# Exit status: the command's; 124 when TIMEOUT_S (default 300) passes; 125
# when the guest does not boot or the rxe devices never come up.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)

usage() { sed -n '2,2s/^# //p' "$0" >&2; exit 2; }
timeout_s=300 mem_mb=2048 verbose=0 files=()
while getopts t:m:f:v o; do
  case $o in
  t) timeout_s=$OPTARG ;;
  m) mem_mb=$OPTARG ;;
  f) files+=("$OPTARG") ;;
  v) verbose=1 ;;
  *) usage ;;
  esac
done
shift $((OPTIND - 1))
if (($# == 0)) || [[ ! $timeout_s =~ ^[0-9]+$ || ! $mem_mb =~ ^[0-9]+$ ]]; then usage; fi

say() { echo "run.sh: $*" >&2; }
# GUEST_DIR boots another cached guest (a directory with vmlinuz and
# base.cpio, e.g. an older kernel's, to compare rxe behaviour across kernels)
# instead of building or reusing the pinned one.
dir=${GUEST_DIR:-$(bash "$here/build.sh")}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/rdmasuite-guest.XXXXXX")
pid=
# shellcheck disable=SC2317 # called from the EXIT trap
cleanup() {
  if [[ -n $pid ]]; then
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# The per-run archive: /init, /bin/asuser, the command and the -f files. The
# kernel unpacks concatenated cpio archives in order, so it lands on top of the
# cached base image.
x=$tmp/extra
mkdir -p "$x/bin" "$x/etc/rdmasuite" "$x/opt/test"
cp "$here/init" "$x/init"
cp "$here/asuser" "$x/bin/asuser"
chmod 755 "$x/init" "$x/bin/asuser"
printf '%s\n' "$*" >"$x/etc/rdmasuite/cmd"
for f in ${files[@]+"${files[@]}"}; do
  [[ -f $f ]] || { say "no such file: $f"; exit 2; }
  [[ ! -e $x/opt/test/${f##*/} ]] || { say "two -f files named ${f##*/}"; exit 2; }
  cp -p "$f" "$x/opt/test/"
done
# Directory entries overwrite the base's modes: keep them world-readable.
find "$x" -type d -exec chmod 755 {} +
(cd "$x" && find . -mindepth 1 | cpio -o -H newc -R 0:0 --quiet) >"$tmp/extra.cpio"
cat "$dir/base.cpio" "$tmp/extra.cpio" >"$tmp/initrd"

# qemu's stdin: a FIFO opened read-write, so it is never a terminal (qemu
# would switch it to raw mode) and never reaches EOF (qemu would then report
# the out port's host side closed and the guest's writes would block).
mkfifo "$tmp/in"
# boot: one qemu run; sets rc and total (ms).
# tsc=reliable: under TCG the clocksource watchdog sees the TSC skew against
# the HPET whenever the host is busy and marks it unstable; flipping
# sched_clock's static key then patches kernel text, and MTTCG has oopsed
# there (int3 in sched_clock_cpu, a panic in a cold make test's verbs stage).
# qemu's TCG TSC is one virtual clock for every vCPU, so nothing is lost.
# pin_vcpus TIMEOUT_PID: once qemu (timeout's child) has named its vCPU
# threads ("CPU n/TCG"), pins each to host CPU n mod nproc.
pin_vcpus() {
  local q="" t n comm cpus
  cpus=$(nproc)
  for _ in $(seq 100); do
    q=$(pgrep -P "$1" qemu-system || true)
    [[ -n $q ]] && compgen -G "/proc/$q/task/*" >/dev/null && grep -qs '^CPU ' /proc/"$q"/task/*/comm && break
    sleep 0.1
  done
  [[ -n $q ]] || return 0
  sleep 0.5 # every vCPU thread started
  for t in /proc/"$q"/task/*; do
    comm=$(cat "$t/comm" 2>/dev/null) || continue
    [[ $comm =~ ^CPU\ ([0-9]+)/TCG$ ]] || continue
    n=${BASH_REMATCH[1]}
    taskset -p -c $((n % cpus)) "${t##*/}" >/dev/null && say "vCPU $n pinned to host CPU $((n % cpus))"
  done
}
boot() {
  rm -f "$tmp/ctl" "$tmp/console.log"
  local start=${EPOCHREALTIME/./}
  timeout -k 5 "$timeout_s" qemu-system-x86_64 \
    -nodefaults -no-user-config -nographic -no-reboot \
    -accel tcg -cpu max -smp "${GUEST_SMP:-2}" -m "$mem_mb" \
    -kernel "$dir/vmlinuz" -initrd "$tmp/initrd" \
    -append "console=ttyS0 quiet panic=-1 tsc=reliable" \
    -serial "file:$tmp/console.log" \
    -device virtio-serial-pci,id=vs \
    -chardev stdio,id=out,signal=off \
    -device virtserialport,bus=vs.0,chardev=out,name=rdmasuite.out \
    -chardev "file,id=ctl,path=$tmp/ctl" \
    -device virtserialport,bus=vs.0,chardev=ctl,name=rdmasuite.ctl \
    ${GUEST_PIN_VCPUS:+-name rdmasuite-guest,debug-threads=on} <>"$tmp/in" &
  pid=$!
  [[ -n ${GUEST_PIN_VCPUS:-} ]] && pin_vcpus "$pid" &
  rc=0
  wait "$pid" || rc=$?
  pid=
  total=$(((${EPOCHREALTIME/./} - start) / 1000))
}
# A kernel panic before /init reported READY is the emulator, not a test
# result: CI once saw the Debian kernel die in early boot under TCG with two
# vCPUs (Oops in sched_clock_cpu while static keys were being patched, 1.4 s
# after start). No command has run yet, so booting again loses nothing; the
# failed console is shown so the retry is never silent. After READY, a panic
# is the test's business and is reported as such.
for attempt in 1 2 3; do
  boot
  touch "$tmp/ctl" "$tmp/console.log"
  if ((attempt < 3)) && ! grep -q '^READY ' "$tmp/ctl" && grep -qa 'Kernel panic' "$tmp/console.log"; then
    say "guest kernel panicked before the guest was ready (boot $attempt of 3; no command ran): booting again"
    sed 's/\x1b\[[0-9;?]*[a-zA-Z]//g; s/\x1bc//g' "$tmp/console.log" | grep -a -m1 -B2 -A12 'BUG:\|Oops\|Kernel panic' >&2 || true
    continue
  fi
  break
done

touch "$tmp/ctl" "$tmp/console.log"
ready=$(awk '$1 == "READY" {print $2}' "$tmp/ctl")
exit_rec=$(awk '$1 == "EXIT" {print $2}' "$tmp/ctl")
error=$(sed -n 's/^ERROR //p' "$tmp/ctl")
# The console log without the firmware's terminal escape sequences.
console() {
  say "guest console (last 40 lines):"
  sed 's/\x1b\[[0-9;?]*[a-zA-Z]//g; s/\x1bc//g' "$tmp/console.log" | tail -n 40 >&2
}

# timeout(1): 124 after TERM, 137 when qemu needed the KILL 5 s later.
if ((rc == 124 || rc == 137)); then
  if [[ -n $ready ]]; then
    say "timed out after ${timeout_s}s: the command was still running (guest ready at ${ready}s)"
  else
    say "timed out after ${timeout_s}s before the guest was ready"
  fi
  ((verbose)) && console
  exit 124
fi
if [[ -z $exit_rec ]]; then
  if [[ -n $error ]]; then
    say "guest bed failed: $error"
  else
    say "guest did not boot or stopped without a result (qemu exit $rc)"
  fi
  console
  exit 125
fi
if ((verbose)); then
  console
  say "guest ready after ${ready}s of guest uptime; boot -> command -> poweroff $((total / 1000)).$(printf %03d $((total % 1000)))s; command exit $exit_rec"
fi
exit "$exit_rec"
