# Suite flags for the bed's guest node(s): only nodes with a real verbs
# device, the shared-device-plugin variant (the guest has no Multus/SR-IOV),
# the cross-node pairs (two guest nodes: each is client once) plus a
# same-node pair per node, sizes and iterations a TCG guest moves in seconds
# (64 KiB only: under minutes of 1 MiB traffic the guests' virtio-net eth1
# TX queue has stalled for good, "NETDEV WATCHDOG: eth1 … transmit queue 0
# timed out", twice in five runs),
# the resources a guest node advertises, and no Network Operator (the guest
# loads rdma_rxe itself: drivers managed outside Kubernetes). Sourced by
# hack/demo.sh and hack/test.sh.
# --qp-timeout 18 (≈ 1.07 s, perftest's -u): at the default 14 (≈ 67 ms) a
# TCG guest on a loaded 2-core host acknowledges late, so requesters resend
# work the responder still has queued (perftest itself, 3 busy loops on the
# host: 2-3 ACK timeouts and 18-262 duplicate requests per 10 s run at 14,
# none at 18; hack/README.md, "QP timeout on the bed"), and Soft-RoCE refuses
# such a resend with "remote invalid request" (perftest meets it too).
# --lat-iters 300 (perftest's default is 1000): a TCG round trip is
# milliseconds, so 1000 ping-pongs take seconds per rail and op, and
# latency under load runs them twice beside a stream 8 times as long as
# the first; 300 keep p99 a figure of its own (perftest drops the largest
# 2) at a third of the time.
# GUEST_RUN_ARGS leave nodes and variants to the suite's defaults (make
# test's main guest run proves they choose the two guests and both
# variants); GUEST_SUITE_ARGS name them, for beds whose host nodes also
# advertise the RDMA resource.
# GUEST_DEFAULT_SWEEP_ARGS keep the suite's own bandwidth sweep (sizes
# 64K,1M, 4 QPs, write and read, 5 s per size: what an operator's first run
# measures) with the bed's nodes, variants and QP timeout; make
# test's exclusive-mode stage runs it between the guests.
GUEST_BASE_ARGS=(--loopback --qp-timeout 18 --memlock-max 16M
  --preflight-resources rdma/rdma_shared_device_a,nvidia.com/hostdev --network-operator=false)
GUEST_RUN_ARGS=("${GUEST_BASE_ARGS[@]}" --bw-iters 100 --bw-sizes 64K --bw-qps 2 --lat-iters 300)
GUEST_SELECT_ARGS=(--node-selector rdmasuite.io/guest-node=true --variants shared-dev,hostdev)
GUEST_SUITE_ARGS=("${GUEST_SELECT_ARGS[@]}" "${GUEST_RUN_ARGS[@]}")
GUEST_DEFAULT_SWEEP_ARGS=("${GUEST_SELECT_ARGS[@]}" "${GUEST_BASE_ARGS[@]}")
# The GPU features' flags on the bed (fake nvidia.com/gpu, no CUDA: every
# world and pair stops at CUDA, so sizes and iterations only bound the
# plan): make test's main guest run and hack/gpu-test.sh. 3m for the ranks
# to join: a feature's pods still terminating can keep the next world's
# rank from scheduling for a while on a loaded machine (CI of a2105e2: the
# hostdev world's rank 0 stayed unscheduled until rank 1 gave up after
# 90 s); hack/fake-gpus.sh gives each guest two GPUs for the same reason.
GPU_RUN_ARGS=(--nccl-max-bytes 64K --nccl-iters 5 --nccl-warmup 1 --nccl-timeout 3m)
