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
RECIPE_REV=4
# Kernel modules in load order's roots (dependencies come from modules.dep).
# rdma_ucm brings rdma_cm/iw_cm/ib_cm/configfs (/dev/infiniband/rdma_cm).
# virtio_pci, virtio_console and crc32 are built into the pinned kernel.
MODULES=(virtio_net overlay bridge veth dummy
  udp_tunnel ip6_udp_tunnel ib_core ib_uverbs rdma_rxe rdma_ucm)
# Loaded on demand (kmod's modprobe as the kernel's helper), never at boot:
# the NFS server (nfsd) and client (nfsv4), and rpcrdma, which the first
# NFS-over-RDMA mount or nfsd's rdma listener pulls in (seed 000's race).
ONDEMAND_MODULES=(nfsd nfsv4 nfs rpcrdma)
# Host programs copied (with their ldd closure) to the same path in the image.
# kmod is the kernel's modprobe helper (/sbin/modprobe -> kmod); util-linux
# mount runs the mount.nfs helper the kubelet's NFS volumes need.
# ib_write_bw/ib_read_bw: Debian's perftest, the reference our probe is held
# to between the guests (hack/guestnode/perftest-pair.sh).
PROGRAMS=(dash ip rdma ibv_devinfo ib_write_bw ib_read_bw containerd containerd-shim-runc-v2 ctr runc crun kmod mount umount)
# NFS user space: Debian's packages fetched with `apt-get download` and
# unpacked (nothing is installed on the host; their libraries are the host's,
# see hack/install-deps.sh). Server: rpc.nfsd, rpc.mountd, exportfs; client:
# mount.nfs (and its nfs4/umount names).
NFS_PKGS=(nfs-kernel-server nfs-common)
NFS_PROGRAMS=(usr/sbin/rpc.nfsd usr/sbin/rpc.mountd usr/sbin/exportfs sbin/mount.nfs)
CNI_PLUGINS=(bridge host-local loopback)
MA=x86_64-linux-gnu
PROVIDER=/usr/lib/$MA/libibverbs/librxe-rdmav34.so
HOST_PKGS=(busybox-static dash libc6 libseccomp2 iproute2 libibverbs1 ibverbs-providers ibverbs-utils perftest
  containerd runc crun containernetworking-plugins kmod mount libtirpc3 libtirpc-common libwrap0 netbase)
KUBELET=$K8S_BIN_DIR/kubelet

log() { echo "guestnode-build: $*" >&2; }
die() { log "ERROR: $*"; exit 1; }

[[ -x $KUBELET ]] || die "no kubelet at $KUBELET (run hack/build-k8s.sh)"
kver=$GUEST_KVER
# The candidate versions of the NFS packages (the ones apt-get download
# fetches) are part of the stamp.
nfs_versions() { apt-cache policy "${NFS_PKGS[@]}" 2>/dev/null | awk '/^[^ ]/{p=$1} /Candidate:/{print p $2}'; }
nfs_v=$(nfs_versions)
if [[ $nfs_v != *nfs-kernel-server:[0-9]* ]]; then
  log "apt lists lack ${NFS_PKGS[*]}: apt-get update"
  apt-get update -qq >&2 || die "apt-get update failed"
  nfs_v=$(nfs_versions)
  [[ $nfs_v == *nfs-kernel-server:[0-9]* ]] || die "apt knows no nfs-kernel-server candidate"
fi
dir=$RDMASUITE_CACHE/guestnode-$kver-k8s-$K8S_VERSION-r$RECIPE_REV
stamp="rev=$RECIPE_REV kernel=$GUEST_KVER=$GUEST_KERNEL_VERSION
$(dpkg-query -W -f='${Package}=${Version}\n' "${HOST_PKGS[@]}")
kubelet=$(stat -c '%s %Y' "$KUBELET")
$nfs_v
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
install_ktree "$kmod" "$root" "$kver" "${ONDEMAND_MODULES[@]}"
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
(cd "$work" && timeout 600 apt-get download -q -o APT::Sandbox::User=root "${NFS_PKGS[@]}" >&2) || die "apt-get download ${NFS_PKGS[*]} failed"
for d in "$work"/*.deb; do dpkg -x "$d" "$work/nfs"; done
rm -f "$work"/*.deb
for p in "${NFS_PROGRAMS[@]}"; do
  [[ -x $work/nfs/$p ]] || die "no /$p in ${NFS_PKGS[*]}"
  put "$work/nfs/$p" "/$p"
  files+=("$work/nfs/$p")
done
for a in mount.nfs4 umount.nfs umount.nfs4; do ln -s mount.nfs "$root/usr/sbin/$a"; done
ln -s ../bin/kmod "$root/usr/sbin/modprobe"
mkdir -p "$root/var/lib/nfs" "$root/etc/exports.d"
for f in "${files[@]}"; do
  case $f in /usr/lib/cni/* | "$work"/nfs/*) ;; *) put "$f" ;; esac
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
# libtirpc (mount.nfs, rpc.mountd) resolves transports and ports through
# these: without them mount.nfs says "Failed to find 'tcp' protocol".
cp /etc/netconfig /etc/protocols /etc/services "$root/etc/"
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
