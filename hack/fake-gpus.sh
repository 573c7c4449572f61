# hack/fake-gpus.sh, sourced: a fake nvidia.com/gpu capacity on a bed node
# (the node's status, as a device plugin would advertise it; the guests
# have no GPU and no CUDA driver, so every GPU check stops at CUDA).
# Needs kc (kubectl against the bed).
#   fake_gpus NODE N|-   set the capacity to N, or remove it
#   wait_gpus NODE N|""  until the node's allocatable says so (60 s)
fake_gpus() {
  local op='[{"op":"add","path":"/status/capacity/nvidia.com~1gpu","value":"'"$2"'"}]'
  if [[ $2 == - ]]; then
    kc get node "$1" -o 'jsonpath={.status.capacity.nvidia\.com/gpu}' | grep -q . || return 0
    op='[{"op":"remove","path":"/status/capacity/nvidia.com~1gpu"}]'
  fi
  kc patch node "$1" --subresource=status --type=json -p "$op" >/dev/null
}
wait_gpus() {
  for _ in $(seq 1 60); do
    [[ $(kc get node "$1" -o 'jsonpath={.status.allocatable.nvidia\.com/gpu}') == "$2" ]] && return 0
    sleep 1
  done
  echo "$1: allocatable nvidia.com/gpu did not become '$2'"
  return 1
}
