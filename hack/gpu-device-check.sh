#!/usr/bin/env bash
# hack/gpu-device-check.sh — on a machine with a CUDA driver and an NCCL
# library but no RDMA device (the device tool's GPU machine), proves what of
# the probe's GPU path can be proved there, with the probe itself:
#   probe      the rdmaprobe binary runs (built here with Go, or the one
#              `make gpu-check-bundle` prepared with its libibverbs closure)
#   cuda-driver, gpuN/alloc, gpuN/dmabuf, gpuN/topology
#              `rdmaprobe gpu`: libcuda through the probe's loader, every
#              GPU listed, 64 MiB allocated, set and read back, exported as a
#              dma-buf (cuMemGetHandleForAddressRange) or the driver's exact
#              reason, every CUDA GPU found on the PCI bus by the topology
#              probe (workloads/gputopo) on the real sysfs
#   nccl-1rank a one-rank NCCL world through `rdmaprobe nccl` (the unique id
#              passed by value through purego), every collective of the
#              sweep, "#wrong" 0
#   nccl-2rank with two GPUs or more, two ranks (two processes) meeting on
#              127.0.0.1 (NCCLBOOT_RANK0_ADDR), the same sweep
#   nccl-log   the NCCL_DEBUG=INFO output of those runs read by the suite's
#              transport parser (workloads/nccl), naming the library's version
# One line per proof: PASS, FAIL, REFUSED (the driver declined with its
# reason: a fact about the machine) or NOT-RUN (with why). Exit 0 when no
# proof failed and the CUDA ones ran, 1 otherwise. Bounded to 8 minutes.
# Knobs: RDMAPROBE (a probe binary), RDMASUITE_LIBNCCL (libnccl.so.2's
# path; else the loader's, else found on disk), GPU_CHECK_DIR (output;
# default $OUT on the device machine, else a temporary directory).
set -uo pipefail
cd "$(dirname "$0")/.."
start=$SECONDS deadline=$((SECONDS + ${GPU_CHECK_BUDGET_S:-470}))
dir=${GPU_CHECK_DIR:-${OUT:-$(mktemp -d "${TMPDIR:-/tmp}/gpu-check.XXXXXX")}}
mkdir -p "$dir"
fails=0 ran_cuda=0
say() { # STATUS NAME DETAIL
  printf '%-8s %s: %s\n' "$1" "$2" "$3"
  [[ $1 == FAIL ]] && fails=$((fails + 1))
  return 0
}
left() { echo $((deadline - SECONDS)); }

echo "gpu-device-check: $(date -u +%FT%TZ) on $(uname -n), $(uname -r); output in $dir"
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=index,name,pci.bus_id,driver_version,memory.total --format=csv,noheader 2>&1 | sed 's/^/nvidia-smi: /'

# --- the probe ------------------------------------------------------------
probe=${RDMAPROBE:-}
if [[ -z $probe ]]; then
  if command -v go >/dev/null && [[ -e /usr/include/infiniband/verbs.h ]]; then
    if timeout "$(left)" make -s rdmaprobe BIN_DIR="$dir/bin" >"$dir/build.log" 2>&1; then
      probe=$dir/bin/rdmaprobe
    else
      say FAIL probe "make rdmaprobe failed: $(tail -3 "$dir/build.log" | tr '\n' ' ')"
    fi
  elif [[ -x hack/.gpu-check/bin/rdmaprobe ]]; then
    probe=hack/.gpu-check/bin/rdmaprobe
    # libibverbs and its closure, from the machine that built the probe:
    # the GPU machine has no rdma-core, and the probe links libibverbs.
    export LD_LIBRARY_PATH=$PWD/hack/.gpu-check/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  else
    say FAIL probe "no Go toolchain with libibverbs-dev here and no hack/.gpu-check/bin/rdmaprobe: run \`make gpu-check-bundle\` on the build machine and carry hack/.gpu-check"
  fi
fi
if [[ -n $probe ]]; then
  if v=$("$probe" version 2>&1); then
    say PASS probe "$probe runs: $(grep -o '"version":"[^"]*"' <<<"$v" | head -1), $(grep -o '"go":"[^"]*"' <<<"$v")"
  else
    say FAIL probe "$probe does not run: $(tr '\n' ' ' <<<"$v" | cut -c1-300)"
    probe=
  fi
fi
if [[ -z $probe ]]; then
  echo "gpu-device-check: $fails failure(s); nothing else can run without the probe"
  exit 1
fi

# --- CUDA: driver, memory, dma-buf, topology ---------------------------------
rc=0
timeout "$(left)" "$probe" gpu --size 64M >"$dir/gpu.json" 2>"$dir/gpu.err" || rc=$?
case $rc in
0 | 3)
  ran_cuda=1
  grep -E '^(pass|fail|refused) ' "$dir/gpu.err" | while read -r st rest; do
    printf '%-8s %s\n' "$(tr a-z A-Z <<<"$st")" "$rest"
  done
  fails=$((fails + $(grep -c '^fail ' "$dir/gpu.err")))
  ;;
1) say NOT-RUN cuda "rdmaprobe gpu found no GPU path to prove: $(grep -o '"message":"[^"]*"' "$dir/gpu.json" | head -1)" ;;
*) say FAIL cuda "rdmaprobe gpu exited $rc: $(tail -3 "$dir/gpu.err" | tr '\n' ' ')" ;;
esac
gpus=$(grep -o '"ordinal":[0-9]*' "$dir/gpu.json" | wc -l)

# --- NCCL -----------------------------------------------------------------
# nccl_world NAME RANKS: one process per rank, rank 0 listening on 127.0.0.1.
nccl_world() {
  local name=$1 ranks=$2 r pids=() rc=0 port=$((29400 + RANDOM % 500))
  for ((r = ranks - 1; r >= 0; r--)); do
    JOB_COMPLETION_INDEX=$r NCCLBOOT_JOB=gpucheck NCCLBOOT_SERVICE=local NCCLBOOT_PORT=$port \
      NCCLBOOT_RANK0_ADDR=127.0.0.1:$port NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET,ENV \
      timeout "$(left)" "$probe" nccl --world "$ranks" --gpu "$r" --token "gpucheck-$name" \
      --max-bytes 16M --warmup 2 --iters 5 --timeout 3m >"$dir/$name-r$r.json" 2>"$dir/$name-r$r.log" &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || rc=$?; done
  local table=$dir/$name-r0.log oob ok stray
  oob=$(grep -c 'Out of bounds values' "$table")
  ok=$(grep -cE 'Out of bounds values *: 0 OK' "$table")
  # stdout is the envelope alone: NCCL prints its debug lines through C's
  # stdout, which the probe must keep off it (workloads/cstdout; the first
  # GPU run found the envelope glued behind a cut NCCL line).
  stray=$(grep -cv '^{"schema":' "$dir/$name-r0.json")
  if ((stray > 0)); then
    say FAIL "$name" "stdout holds $stray line(s) besides the envelope, e.g. $(grep -v '^{"schema":' "$dir/$name-r0.json" | head -1 | cut -c1-120)"
  elif ((rc == 0 && oob > 0 && ok == oob)); then
    # nccl-tests' bus bandwidth factors are 0 at one rank (2(n-1)/n, (n-1)/n).
    say PASS "$name" "$ranks rank(s), $oob collective(s) swept up to 16 MiB, #wrong 0 in every one; $(grep -m1 -o 'Avg bus bandwidth *: [0-9.e+-]*' "$table" || true)$( ((ranks == 1)) && echo ' (0 by definition at one rank)')"
  else
    say FAIL "$name" "exit $rc, $ok of $oob collective(s) with 0 out-of-bounds values: $(grep -o '"message":"[^"]*"' "$dir/$name-r0.json" | head -1) $(grep -E 'WARN|error' "$table" | head -3 | tr '\n' ' ')"
  fi
}
# nccl_found: RDMASUITE_LIBNCCL is set or the loader knows libnccl.so.2.
nccl_found() { [[ -n ${RDMASUITE_LIBNCCL:-} ]] || ldconfig -p 2>/dev/null | grep -q 'libnccl\.so\.2 '; }
if ((ran_cuda == 1)) && ! nccl_found; then
  # PyTorch's wheels carry their own (site-packages/nvidia/nccl/lib).
  lib=$(timeout 60 find / -xdev \( -path /proc -o -path /sys \) -prune -o -name 'libnccl.so.2*' -print 2>/dev/null | sort | head -1)
  [[ -n $lib ]] && export RDMASUITE_LIBNCCL=$lib && echo "gpu-device-check: NCCL from $lib"
fi
if ((ran_cuda == 0)); then
  say NOT-RUN nccl "no GPU for NCCL (see cuda above)"
elif ! nccl_found; then
  say FAIL nccl "no libnccl.so.2 on the loader path or on disk (set RDMASUITE_LIBNCCL)"
else
  nccl_world nccl-1rank 1
  if ((gpus >= 2)); then nccl_world nccl-2rank 2; else say NOT-RUN nccl-2rank "one GPU here: a two-rank world needs two"; fi
  ver=$(grep -o '"nccl":"[^"]*"' "$dir/nccl-1rank-r0.json" | head -1 | cut -d'"' -f4)
  cat "$dir"/nccl-*-r*.log >"$dir/nccl-debug.log" 2>/dev/null
  "$probe" gpu --nccl-log "$dir/nccl-debug.log" --nccl-version "$ver" >/dev/null 2>"$dir/nccl-log.err"
  grep -E '^(pass|fail) +nccl-log' "$dir/nccl-log.err" | while read -r st rest; do
    printf '%-8s %s\n' "$(tr a-z A-Z <<<"$st")" "$rest"
  done
  fails=$((fails + $(grep -cE '^fail +nccl-log' "$dir/nccl-log.err")))
fi

echo "gpu-device-check: $((SECONDS - start)) s, $fails failure(s)$( ((ran_cuda)) || echo ', the CUDA proofs did not run (no GPU)')"
((fails == 0 && ran_cuda == 1))
