#!/bin/sh
# Runs inside the Soft-RoCE guest (see hack/verbs-test.sh). Every check
# prints PASS or FAIL with its evidence; the exit status is the number of
# failures.
fails=0
pass() { echo "PASS $1"; }
fail() { echo "FAIL $1: $2"; fails=$((fails + 1)); }
check() { # name command...
  name=$1; shift
  if out=$("$@" 2>&1); then pass "$name"; else fail "$name" "exit $?"; echo "$out" | tail -30; fi
  echo "$out" | grep -E -- '--- (PASS|FAIL)|_test\.go:[0-9]+:' | sed 's/^/    /' | head -40
}

check "verbs: discovery, port query, MR lifecycle (root)" ./verbs.test -test.v -test.run 'Discovery|PortQuery|MRLifecycle'
check "bw: loopback, across devices, read, multi-QP, bidirectional" ./bwverbs.test -test.v

# Seed 002: uid 1000, memlock 64 KiB, no IPC_LOCK -> 1 MiB registration fails
# with an error that names the call and errno, and the probe names the fix.
check "verbs: ibv_reg_mr(1 MiB) fails under 64 KiB memlock, error names call+errno" \
  env RDMASUITE_EXPECT_MR_FAIL=1 asuser 1000 64 ./verbs.test -test.v -test.run RegMRErrorNames
asuser 1000 64 ./rdmaprobe mr --device rxe0 --max 16M --required 1M >mr-low.json 2>mr-low.err
rc=$?
if [ $rc -eq 3 ] && grep -q '"status":"fail"' mr-low.json && grep -q '64 KiB and the process lacks CAP_IPC_LOCK' mr-low.json &&
  grep -q 'base_runtime_spec' mr-low.json && grep -q '"largestOkBytes":65536' mr-low.json; then
  pass "mr probe: 64 KiB limit fails at 1 MiB with diagnosis and fix"
else
  fail "mr probe: 64 KiB limit" "exit $rc, output: $(cat mr-low.json mr-low.err)"
fi
grep -o '"diagnosis":"[^}]*' mr-low.json | cut -c1-400 | sed 's/^/    /'
asuser 1000 8192 ./rdmaprobe mr --device rxe0 --max 4M --required 1M >mr-high.json 2>&1
rc=$?
if [ $rc -eq 0 ] && grep -q '"status":"pass"' mr-high.json && grep -q '"largestOkBytes":4194304' mr-high.json; then
  pass "mr probe: 8 MiB limit registers 1 MiB..4 MiB"
else
  fail "mr probe: 8 MiB limit" "exit $rc, output: $(cat mr-high.json)"
fi
# perftest beside us, same user and limit: the reference failure text. The
# client registers its buffer before it connects, as in seed 002's output.
ib_write_bw -d rxe0 -x 1 -s 1048576 -n 10 -F >pt-srv.txt 2>&1 &
ptsrv=$!
sleep 1
asuser 1000 64 ib_write_bw -d rxe1 -x 1 -s 1048576 -n 10 -F "$RXE0_IP" >pt-low.txt 2>&1
kill $ptsrv 2>/dev/null
wait $ptsrv 2>/dev/null
if grep -q "Couldn't allocate MR" pt-low.txt; then
  pass "perftest agrees: ib_write_bw -s 1M as uid 1000 under 64 KiB prints Couldn't allocate MR"
else
  fail "perftest reference under 64 KiB" "$(tail -5 pt-low.txt)"
fi

# The CLI end to end: rdmaprobe bw server/client across rxe0 <-> rxe1.
./rdmaprobe bw server --device rxe0 --port 18515 --timeout 60s >srv.json 2>srv.err &
srv=$!
./rdmaprobe bw client --device rxe1 --port 18515 --size 64K,1M --iters 200 --qps 2 --table "$RXE0_IP" >cli.json 2>cli.err
rc=$?
wait $srv
src=$?
if [ $rc -eq 0 ] && [ $src -eq 0 ] && grep -q '"bwAvgGbps"' cli.json && ! grep -q '"error"' cli.json; then
  pass "rdmaprobe bw client/server rxe1 -> rxe0, 64 KiB and 1 MiB, 2 QPs"
  cat cli.err
else
  fail "rdmaprobe bw CLI" "client $rc server $src: $(cat cli.json cli.err srv.err | tail -10)"
fi

echo "guest checks failed: $fails"
exit $fails
