#!/usr/bin/env bash
# Builds, or reuses from the cache, the guest-node image: Debian's kernel and a
# base initramfs holding busybox, iproute2/rdma, the Soft-RoCE and container
# kernel modules, containerd + runc + CNI plugins (copied from the host's
# installed Debian packages with their ldd closure) and the kubelet from the
# bed's k8s cache. Nothing is installed on the host: the kernel package is
# fetched with `apt-get download` and unpacked with `dpkg -x`.
#
# Prints the cache directory (vmlinuz, base.cpio, stamp) on stdout; progress
# goes to stderr. The per-node parts (init, certificates, configs, images,
# device plugin) are packed by up.sh on every boot.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
GUEST_KMODULES=$here/../guest/kmodules.sh
# shellcheck source=../guest/kmodules.sh
. "$GUEST_KMODULES"
# shellcheck source=../versions.sh
. "$here/../versions.sh"
# shellcheck source=../guest/kernel.sh
. "$here/../guest/kernel.sh"

# Bump when the image layout changes in a way the stamp cannot see.
RECIPE_REV=3
# Kernel modules in load order's roots (dependencies come from modules.dep).
# rdma_ucm brings rdma_cm/iw_cm/ib_cm/configfs (/dev/infiniband/rdma_cm).
# virtio_pci, virtio_console and crc32 are built into the pinned kernel.
MODULES=(virtio_net overlay bridge veth dummy
  udp_tunnel ip6_udp_tunnel ib_core ib_uverbs rdma_rxe rdma_ucm)
# Host programs copied (with their ldd closure) to the same path in the image.
PROGRAMS=(dash ip rdma ibv_devinfo containerd containerd-shim-runc-v2 ctr runc)
CNI_PLUGINS=(bridge host-local loopback)
MA=x86_64-linux-gnu
PROVIDER=/usr/lib/$MA/libibverbs/librxe-rdmav34.so
HOST_PKGS=(busybox-static dash libc6 libseccomp2 iproute2 libibverbs1 ibverbs-providers ibverbs-utils
  containerd runc containernetworking-plugins)
KUBELET=$K8S_BIN_DIR/kubelet

log() { echo "guestnode-build: $*" >&2; }
die() { log "ERROR: $*"; exit 1; }

[[ -x $KUBELET ]] || die "no kubelet at $KUBELET (run hack/build-k8s.sh)"
kver=$GUEST_KVER
dir=$RDMASUITE_CACHE/guestnode-$kver-k8s-$K8S_VERSION-r$RECIPE_REV
stamp="rev=$RECIPE_REV kernel=$GUEST_KVER=$GUEST_KERNEL_VERSION
$(dpkg-query -W -f='${Package}=${Version}\n' "${HOST_PKGS[@]}")
kubelet=$(stat -c '%s %Y' "$KUBELET")
build.sh=$(cat "$here/build.sh" "$GUEST_KMODULES" "$here/../guest/kernel.sh" | sha256sum | cut -c1-16)"

mkdir -p "$RDMASUITE_CACHE"
exec 9>"$RDMASUITE_CACHE/.guestnode-build.lock"
flock -w 900 9 || die "another build holds $RDMASUITE_CACHE/.guestnode-build.lock"
if [[ -f $dir/stamp && $(cat "$dir/stamp") == "$stamp" ]]; then
  echo "$dir"
  exit 0
fi

work=$(mktemp -d "$RDMASUITE_CACHE/.guestnode-build.XXXXXX")
trap 'rm -rf "$work"' EXIT
log "building $dir (kernel $GUEST_KVER $GUEST_KERNEL_VERSION from $GUEST_KERNEL_SUITE)"

# --- kernel --------------------------------------------------------------------
fetch_guest_kernel "$work"
kmod=$GUEST_KMOD

root=$work/root
mkdir -p "$root"/{bin,dev,proc,sys,tmp,run,etc,root,var/lib,var/log,opt/cni/bin,usr/bin,usr/sbin,usr/lib/modules,usr/lib64}
ln -s usr/lib "$root/lib"
ln -s usr/lib64 "$root/lib64"
ln -s usr/sbin "$root/sbin"

install_kmodules "$kmod" "$root" "$kver" "${MODULES[@]}"
cp "$GUEST_VMLINUZ" "$work/vmlinuz"
rm -rf "$work/k"
log "modules: $(tr '\n' ' ' <"$root/etc/guest-modules")"

# --- user space ----------------------------------------------------------------
# busybox applets in /bin; real tools in /usr/{s,}bin come first in PATH.
cp /bin/busybox "$root/bin/busybox"
for a in $(busybox --list); do [[ -e $root/bin/$a ]] || ln -s busybox "$root/bin/$a"; done
rm -f "$root/bin/sh"
ln -s /usr/bin/dash "$root/bin/sh"

put() { # host file -> same path in the image, /lib* /bin /sbin folded under /usr
  local dst=${2:-$1}
  case $dst in /usr/* | /opt/*) ;; /*) dst=/usr$dst ;; esac
  mkdir -p "$root${dst%/*}"
  cp -L "$1" "$root$dst"
}
files=("$PROVIDER")
for p in "${PROGRAMS[@]}"; do
  f=$(command -v "$p") || die "$p not found on the host (apt-get install it; see hack/install-deps.sh)"
  files+=("$f")
done
for c in "${CNI_PLUGINS[@]}"; do
  [[ -x /usr/lib/cni/$c ]] || die "no CNI plugin /usr/lib/cni/$c (apt-get install containernetworking-plugins)"
  put "/usr/lib/cni/$c" "/opt/cni/bin/$c"
  files+=("/usr/lib/cni/$c")
done
for f in "${files[@]}"; do
  case $f in /usr/lib/cni/*) ;; *) put "$f" ;; esac
  if ldd "$f" >/dev/null 2>&1; then
    ldd "$f" | awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// {print $1}'
  fi
done | sort -u >"$work/libs"
while read -r l; do put "$l"; done <"$work/libs"
put "$KUBELET" /usr/bin/kubelet
mkdir -p "$root/etc/libibverbs.d"
cp /etc/libibverbs.d/rxe.driver "$root/etc/libibverbs.d/"
printf '/usr/lib/%s\n' "$MA" >"$root/etc/ld.so.conf"
ldconfig -r "$root"

cat >"$root/etc/passwd" <<'PW'
root:x:0:0:root:/root:/bin/sh
nobody:x:65534:65534:nobody:/nonexistent:/bin/false
PW
cat >"$root/etc/group" <<'GR'
root:x:0:
nogroup:x:65534:
GR
printf '127.0.0.1 localhost\n' >"$root/etc/hosts"
: >"$root/etc/resolv.conf"
printf 'hosts: files dns\n' >"$root/etc/nsswitch.conf"
# The node's OS image in `kubectl get nodes -o wide`.
cp -L /etc/os-release "$root/etc/os-release"

(cd "$root" && find . -mindepth 1 | LC_ALL=C sort | cpio -o -H newc -R 0:0 --quiet) >"$work/base.cpio"
printf '%s\n' "$stamp" >"$work/stamp"
mkdir -p "$work/out"
mv "$work/vmlinuz" "$work/base.cpio" "$work/stamp" "$work/out/"
rm -rf "$dir"
mv "$work/out" "$dir"
log "done: $(du -sh "$dir" | cut -f1) in $dir"
echo "$dir"
