#!/bin/sh
# Runs inside the Soft-RoCE guest (see hack/bench-verbs.sh): the same test,
# rxe1 -> rxe0, with perftest and with rdmaprobe, interleaved and repeated.
# Prints one "RESULT tool op bytes qps cqmod rep avg_MB/s" line per run (MB = 2^20
# bytes, perftest's unit; MB/s has more printed digits than Gb/s), a RETRIES
# line with its rxe retransmission events, and FAILED for a run with no figure
# (retried). hack/tools/benchtable pairs the runs of each repetition.
REPS=${REPS:-3}
ITERS_64K=${ITERS_64K:-2000}
ITERS_1M=${ITERS_1M:-200}
QPS_LIST=${QPS_LIST:-1}
# Both tools get the same CQ moderation explicitly: perftest 6.06 picks 1 on
# rxe by itself (it prints "CQ Moderation : 1"), not its documented 100.
CQMODS=${CQMODS:-"1 100"}
OPS=${OPS-"write read"}
SIZES=${SIZES-"65536 1048576"}
echo "perftest: $(ib_write_bw --version 2>&1 | head -1)"
# The clocks each tool converts cycles with: perftest takes the first "cpu
# MHz" of /proc/cpuinfo (the boot-time estimate), the kernel refines its TSC
# rate after boot (benchtable rescales perftest's figures to it).
kmhz=$(dmesg | sed -n 's/.*Refined TSC clocksource calibration: \([0-9.]*\) MHz.*/\1/p' | tail -1)
[ -n "$kmhz" ] || kmhz=$(dmesg | sed -n 's/.*tsc: Detected \([0-9.]*\) MHz.*/\1/p' | tail -1)
echo "CLOCK cpuinfo $(sed -n 's/^cpu MHz[[:space:]]*: *//p' /proc/cpuinfo | head -1) kernel ${kmhz:-NaN}"
# CLIENT_CPUS, SERVER_CPUS: pin every tool's client or server to these
# guest CPUs (taskset -c), the same for perftest and ours.
clip=${CLIENT_CPUS:+taskset -c $CLIENT_CPUS}
srvp=${SERVER_CPUS:+taskset -c $SERVER_CPUS}
# WQ_CPUMASK (hex): the CPUs every unbound workqueue's kworkers may run on,
# Soft-RoCE's rxe_wq among them (its responder and completer), so the
# kernel's share of each operation stays off a pinned client's CPU.
# NO_ASLR=1: every process gets the same address layout (randomize_va_space
# 0), so a figure that depends on where things land is the same in every run.
if [ -n "${NO_ASLR:-}" ]; then
  echo 0 >/proc/sys/kernel/randomize_va_space
  echo "address space layout randomization off"
fi
if [ -n "${WQ_CPUMASK:-}" ]; then
  echo "$WQ_CPUMASK" >/sys/devices/virtual/workqueue/cpumask
  echo "unbound workqueues on CPU mask $(cat /sys/devices/virtual/workqueue/cpumask)"
fi

# Retransmission-related rxe counters of both devices, summed: a run that hit
# rxe's retransmit timer (67 ms at timeout 14) loses that time, so a ratio
# is only fair between runs with the same count.
retries() {
  s=0
  for d in rxe0 rxe1; do
    for c in completer_retry_err rcvd_seq_err duplicate_request out_of_seq_request; do
      v=$(cat /sys/class/infiniband/$d/ports/1/hw_counters/$c 2>/dev/null || echo 0)
      s=$((s + v))
    done
  done
  echo "$s"
}

# perftest reference (RoCE v2 IPv4 GID is index 1 on this guest)
run_perftest() {
  r0=$(retries)
  $srvp ib_${op}_bw $PERFTEST_FLAGS -d rxe0 -x 1 -F -s "$size" -n "$iters" -q "$qps" -Q "$cqmod" >pt-srv.txt 2>&1 &
  srv=$!
  sleep 1
  rus pt-cli.rus $clip ib_${op}_bw $PERFTEST_FLAGS -d rxe1 -x 1 -F -s "$size" -n "$iters" -q "$qps" -Q "$cqmod" "$RXE0_IP" >pt-cli.txt 2>&1
  wait $srv
  rusline perftest client pt-cli.rus
  avg=$(awk -v s="$size" '$1 == s && NF >= 5 {print $4}' pt-cli.txt | tail -1)
  echo "RESULT perftest $op $size $qps $cqmod $rep ${avg:-NaN}"
  echo "RETRIES perftest $op $size $qps $cqmod $rep $(($(retries) - r0))"
  [ "$rep" = 1 ] && sed 's/^/PERFTEST-OUT /' pt-cli.txt
  [ -n "$avg" ] || tail -5 pt-cli.txt
}

# ours, same devices, sizes, iterations, QPs; the server gets the same 1 s
# head start perftest's server gets. $bin and $tool name the build (an A/B
# run's second build is ./rdmaprobe-b, reported as tool rdmaprobe-b).
bin=./rdmaprobe tool=rdmaprobe
run_ours() {
  r0=$(retries)
  $srvp $bin bw server --device rxe0 --port 18516 --timeout 60s >rp-srv.json 2>&1 &
  srv=$!
  sleep 1
  rus rp-cli.rus $clip $bin bw client $OURS_FLAGS --device rxe1 --port 18516 --op "$op" --size "$size" --iters "$iters" --qps "$qps" \
    --cq-mod "$cqmod" "$RXE0_IP" >rp-cli.json 2>rp-cli.err
  wait $srv
  rusline $tool client rp-cli.rus
  echo "DISTURB $tool $op $size $rep $(sed -n 's/.*"disturbance":{\([^}]*\)}.*/\1/p' rp-cli.json | tail -1)"
  echo "SERVER-PROCESS $tool $op $size $rep $(grep -o 'server process while the client measured: [^"]*' rp-srv.json | tail -1)"
  echo "CLOCKMHZ $tool $op $size $rep $(grep -o '"clockMHz":[0-9.]*' rp-cli.json | head -1)"
  avg=$(sed -n 's/.*"total":{[^}]*"bwAvgMBps":\([0-9.e+-]*\).*/\1/p' rp-cli.json | tail -1)
  echo "RESULT $tool $op $size $qps $cqmod $rep ${avg:-NaN}"
  echo "RETRIES $tool $op $size $qps $cqmod $rep $(($(retries) - r0))"
  [ -n "$avg" ] || tail -5 rp-cli.json rp-cli.err
}
# Message rate (perftest's MsgRate column: small messages, several QPs):
# the same RESULT lines, MB/s converts to Mpps at the size.
MR_SIZES=${MR_SIZES-"2 4096"}
MR_QPS=${MR_QPS:-4}
MR_ITERS=${MR_ITERS:-5000}
# Latency (ib_write_lat / ib_read_lat / ib_send_lat against rdmaprobe bw --latency):
# one "LAT tool op bytes rep typical p99 max" line per run, in µs.
LAT_OPS=${LAT_OPS-"write read send"}
LAT_SIZES=${LAT_SIZES:-2}
LAT_ITERS=${LAT_ITERS:-1000}

# rus FILE CMD...: runs CMD and writes its resource use to FILE (busybox
# time, from wait4's rusage, every thread of the process summed): wall s,
# user s, system s, voluntary and involuntary context switches. One
# "RUSAGE tool op bytes rep side wall user sys vcsw ivcsw" line per process
# (what competes with the polling thread on a busy host).
rus() {
  f=$1
  shift
  busybox time -o "$f" -f '%e %U %S %w %c' "$@"
}
rusline() { # TOOL SIDE FILE
  echo "RUSAGE $1 $op $size $rep $2 $(tail -1 "$3" 2>/dev/null)"
}

run_perftest_lat() {
  rus pl-srv.rus $srvp ib_${op}_lat $PERFTEST_FLAGS -d rxe0 -x 1 -F -s "$size" -n "$LAT_ITERS" >pl-srv.txt 2>&1 &
  srv=$!
  sleep 1
  rus pl-cli.rus $clip ib_${op}_lat $PERFTEST_FLAGS -d rxe1 -x 1 -F -s "$size" -n "$LAT_ITERS" "$RXE0_IP" >pl-cli.txt 2>&1
  wait $srv
  rusline perftest server pl-srv.rus
  rusline perftest client pl-cli.rus
  # #bytes #iterations t_min t_max t_typical t_avg t_stdev 99% 99.9%
  avg=$(awk -v s="$size" '$1 == s && NF >= 9 {print $5, $8, $4}' pl-cli.txt | tail -1)
  echo "LAT perftest $op $size $rep ${avg:-NaN NaN NaN}"
  [ "$rep" = 1 ] && sed 's/^/PERFTEST-OUT /' pl-cli.txt
  [ -n "$avg" ] || tail -5 pl-cli.txt
  avg=${avg%% *}
}

run_ours_lat() {
  rus rl-srv.rus $srvp $bin bw server --device rxe0 --port 18516 --timeout 60s >rl-srv.json 2>&1 &
  srv=$!
  sleep 1
  rus rl-cli.rus $clip $bin bw client $OURS_FLAGS --latency --device rxe1 --port 18516 --op "$op" --size "$size" --iters "$LAT_ITERS" \
    "$RXE0_IP" >rl-cli.json 2>rl-cli.err
  wait $srv
  rusline $tool server rl-srv.rus
  rusline $tool client rl-cli.rus
  l=$(sed -n 's/.*"latency":{\([^}]*\)}.*/\1/p' rl-cli.json | tail -1)
  typ=$(echo "$l" | sed -n 's/.*"tTypicalUs":\([0-9.e+-]*\).*/\1/p')
  p99=$(echo "$l" | sed -n 's/.*"p99Us":\([0-9.e+-]*\).*/\1/p')
  mx=$(echo "$l" | sed -n 's/.*"tMaxUs":\([0-9.e+-]*\).*/\1/p')
  echo "LAT $tool $op $size $rep ${typ:-NaN} ${p99:-NaN} ${mx:-NaN}"
  # What competed with the client's measuring thread over the timed loop
  # (bw.Disturbance: wall ms, its CPU share, preemptions, blocks, the other
  # threads' CPU ms).
  echo "DISTURB $tool $op $size $rep $(sed -n 's/.*"disturbance":{\([^}]*\)}.*/\1/p' rl-cli.json | tail -1)"
  echo "DISTURB-SERVER $tool $op $size $rep $(grep -o 'answering thread: .*' rl-srv.json | tail -1)"
  echo "SERVER-PROCESS $tool $op $size $rep $(grep -o 'server process while the client measured: [^"]*' rl-srv.json | tail -1)"
  echo "CLOCKMHZ $tool $op $size $rep $(grep -o '"clockMHz":[0-9.]*' rl-cli.json | head -1)"
  [ -n "$typ" ] || tail -5 rl-cli.json rl-cli.err
  avg=$typ
}

# retrying TOOL FN: runs FN (run_perftest or run_ours); a run that printed
# no figure (or perftest's 0.00) is recorded as FAILED and run again, up to
# ATTEMPTS in all: one bad run never stops the table (benchtable counts it).
ATTEMPTS=${ATTEMPTS:-3}
retrying() {
  a=1
  while :; do
    "$2"
    if awk -v v="${avg:-0}" 'BEGIN { exit !(v + 0 > 0) }'; then return 0; fi
    echo "FAILED $1 $op $size $qps $cqmod $rep attempt $a of $ATTEMPTS"
    [ "$a" -ge "$ATTEMPTS" ] && return 0
    a=$((a + 1))
  done
}
# The B build of an A/B run: the same runs with ./rdmaprobe-b.
b_ours() { bin=./rdmaprobe-b tool=rdmaprobe-b; "$1"; bin=./rdmaprobe tool=rdmaprobe; }
run_ours_b() { b_ours run_ours; }
run_ours_lat_b() { b_ours run_ours_lat; }
# alternated PERFTEST_FN OURS_FN: odd repetitions run perftest first, even
# ones ours first, so order effects cancel out of the paired ratios. With a
# B build the three rotate (perftest A B, A B perftest, B perftest A), so
# each comes first, second and third equally often.
alternated() {
  if [ -x ./rdmaprobe-b ]; then
    set -- "perftest $1" "rdmaprobe $2" "rdmaprobe-b ${2}_b"
    case $((rep % 3)) in
    1) ;;
    2) set -- "$2" "$3" "$1" ;;
    0) set -- "$3" "$1" "$2" ;;
    esac
    for t in "$1" "$2" "$3"; do retrying $t; done
    return
  fi
  if [ $((rep % 2)) = 1 ]; then
    retrying perftest "$1"; retrying rdmaprobe "$2"
  else
    retrying rdmaprobe "$2"; retrying perftest "$1"
  fi
}
for rep in $(seq 1 "$REPS"); do
  cqmod=100 qps=$MR_QPS iters=$MR_ITERS op=write
  for size in $MR_SIZES; do
    alternated run_perftest run_ours
  done
  for op in $LAT_OPS; do
    for size in $LAT_SIZES; do
      alternated run_perftest_lat run_ours_lat
    done
  done
  for op in $OPS; do
    for size in $SIZES; do
      iters=$ITERS_64K
      [ "$size" = 1048576 ] && iters=$ITERS_1M
      for qps in $QPS_LIST; do for cqmod in $CQMODS; do
        alternated run_perftest run_ours
      done; done
    done
  done
done
