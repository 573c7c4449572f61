# shellcheck shell=bash disable=SC2034
# read_nodes FILE — parses a bed node table (hack/bed-nodes.conf for host
# nodes, hack/bed-guest-nodes.conf for guest nodes; the same 8 columns) into
# the arrays NODE_NAME, NODE_GPU, NODE_RDMA, NODE_HOSTDEV, NODE_NGPU,
# NODE_MOFEDWAIT, NODE_TAINTS, NODE_MEMLOCK (bytes, or - for the default).
# Errors name FILE:LINE and the expected form. Needs die() from the caller.
read_nodes() {
  local conf=$1
  NODE_NAME=() NODE_GPU=() NODE_RDMA=() NODE_HOSTDEV=() NODE_NGPU=() NODE_MOFEDWAIT=() NODE_TAINTS=() NODE_MEMLOCK=()
  [[ -r $conf ]] || die "node table $conf is missing or unreadable"
  local n=0 line name gpu rdma hostdev ngpu wait taints memlock extra t
  while IFS= read -r line || [[ -n $line ]]; do
    n=$((n + 1))
    line=${line%%#*}
    [[ -z ${line//[[:space:]]/} ]] && continue
    read -r name gpu rdma hostdev ngpu wait taints memlock extra <<<"$line"
    [[ -n $memlock && -z $extra ]] || die "$conf:$n: want 8 columns (name gpu.product rdma_shared_a hostdev gpu mofed.wait taints memlock), got: $line"
    case $memlock in
    -) ;;
    *K) memlock=$((${memlock%K} * 1024)) ;;
    *M) memlock=$((${memlock%M} * 1024 * 1024)) ;;
    *[!0-9]*) die "$conf:$n: memlock '$memlock' must be bytes, NK, NM or - (the runtime's default)" ;;
    esac
    [[ $name =~ ^[a-z0-9]([-a-z0-9]*[a-z0-9])?$ ]] || die "$conf:$n: node name '$name' is not a DNS label"
    for v in "$rdma" "$hostdev" "$ngpu"; do
      [[ $v =~ ^[0-9]+$ ]] || die "$conf:$n: resource count '$v' is not a number (use 0 for none)"
    done
    [[ $wait == true || $wait == false ]] || die "$conf:$n: mofed.wait must be true or false, got '$wait'"
    if [[ $taints != - ]]; then
      for t in ${taints//,/ }; do
        [[ $t =~ ^[A-Za-z0-9./_-]+(=[A-Za-z0-9._-]*)?:(NoSchedule|PreferNoSchedule|NoExecute)$ ]] ||
          die "$conf:$n: taint '$t' must be key[=value]:NoSchedule|PreferNoSchedule|NoExecute (comma-separated, or -)"
      done
    fi
    NODE_NAME+=("$name") NODE_GPU+=("$gpu") NODE_RDMA+=("$rdma") NODE_HOSTDEV+=("$hostdev")
    NODE_NGPU+=("$ngpu") NODE_MOFEDWAIT+=("$wait") NODE_TAINTS+=("$taints") NODE_MEMLOCK+=("$memlock")
  done <"$conf"
  ((${#NODE_NAME[@]} > 0)) || die "$conf lists no nodes"
  ((${#NODE_NAME[@]} <= 8)) || die "$conf lists ${#NODE_NAME[@]} nodes; the bed supports at most 8"
}
