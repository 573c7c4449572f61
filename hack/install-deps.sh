#!/usr/bin/env bash
# Installs the Debian packages the local test beds need. Idempotent: apt-get is
# skipped when every package is already installed.
set -euo pipefail
pkgs=(
  # Bed 1: container runtime and networking for the host nodes.
  containerd runc containernetworking-plugins iptables iproute2 util-linux
  procps psmisc kmod ca-certificates curl openssl
  # hack/fault-test.sh reads the results JSON with jq.
  jq
  # Bed 2/3: Soft-RoCE in a qemu guest; the guest gets its kernel, busybox and
  # rdma-core user space unpacked from these packages (dpkg -x, nothing runs on the host).
  qemu-system-x86 busybox-static cpio
  # A lossy guest rail: drops on the host bridge (hack/guestnode/lossy.sh;
  # the host kernel may have no netem).
  nftables
  # The guest nodes' OCI runtime (hack/guestnode/up.sh says why not runc).
  crun
  libibverbs-dev ibverbs-providers rdma-core ibverbs-utils perftest
  # The guest nodes' NFS user space (hack/guestnode/build.sh unpacks
  # nfs-kernel-server and nfs-common with dpkg -x) links these libraries.
  libtirpc3 libwrap0
  # The HTML report's test draws it in a real browser (hack/html-report-test.sh).
  chromium
)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "install-deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
echo "install-deps: all ${#pkgs[@]} packages present"
