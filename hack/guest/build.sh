#!/usr/bin/env bash
# Builds, or reuses from the cache, the Bed 2 guest: Debian's kernel plus a base
# initramfs (busybox, the Soft-RoCE modules, rdma-core/iproute2/perftest user
# space with its glibc closure). Nothing is installed on the host: the kernel
# package is fetched with `apt-get download` and unpacked with `dpkg -x`; user
# space is copied from the host's installed packages.
#
# Prints the cache directory (holding vmlinuz and base.cpio) on stdout; progress
# goes to stderr. /init and /bin/asuser are not in the base: run.sh adds them
# per run from hack/guest/, so editing them needs no rebuild.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
GUEST_KMODULES=$here/kmodules.sh
# shellcheck source=kmodules.sh
. "$GUEST_KMODULES"
# shellcheck source=kernel.sh
. "$here/kernel.sh"
# shellcheck source=../versions.sh
. "$here/../versions.sh"

# Bump when the image layout changes in a way the stamp below cannot see.
GUEST_RECIPE_REV=3
# Kernel modules the guest loads (dependencies are added from modules.dep).
# virtio_pci, virtio_console and crc32 are built into the pinned kernel.
MODULES=(veth udp_tunnel ip6_udp_tunnel ib_core ib_uverbs rdma_rxe rdma_ucm)
# Host programs copied with their ldd closure.
PROGRAMS=(dash ibv_devinfo ibv_devices rdma ip ib_write_bw ib_read_bw ib_send_bw ib_write_lat ib_read_lat ib_send_lat setpriv)
# The rxe provider is dlopen()ed by libibverbs (ldd cannot see it).
MA=x86_64-linux-gnu
PROVIDER=/usr/lib/$MA/libibverbs/librxe-rdmav34.so
# Host packages whose files end up in the image: a version change rebuilds it.
HOST_PKGS=(busybox-static dash libc6 libibverbs1 ibverbs-providers ibverbs-utils perftest iproute2 util-linux)

log() { echo "guest-build: $*" >&2; }
die() { log "ERROR: $*"; exit 1; }

kver=$GUEST_KVER
dir=$RDMASUITE_CACHE/guest-$kver-r$GUEST_RECIPE_REV
stamp="rev=$GUEST_RECIPE_REV kernel=$GUEST_KVER=$GUEST_KERNEL_VERSION
$(dpkg-query -W -f='${Package}=${Version}\n' "${HOST_PKGS[@]}")
build.sh=$(cat "$here/build.sh" "$GUEST_KMODULES" "$here/kernel.sh" | sha256sum | cut -c1-16)"

# One builder at a time; the others wait and then reuse its result.
mkdir -p "$RDMASUITE_CACHE"
exec 9>"$RDMASUITE_CACHE/.guest-build.lock"
flock 9
if [[ -f $dir/stamp && $(cat "$dir/stamp") == "$stamp" ]]; then
  echo "$dir"
  exit 0
fi

work=$(mktemp -d "$RDMASUITE_CACHE/.guest-build.XXXXXX")
trap 'rm -rf "$work"' EXIT
log "building $dir (kernel $GUEST_KVER $GUEST_KERNEL_VERSION from $GUEST_KERNEL_SUITE)"

# --- kernel --------------------------------------------------------------------
fetch_guest_kernel "$work"
kmod=$GUEST_KMOD

root=$work/root
mkdir -p "$root"/{bin,dev,proc,sys,tmp,etc,root,home/rdma,opt/test,usr/bin,usr/sbin,usr/lib/modules,usr/lib64}
# Debian is usr-merged: ldd reports /lib/... and /lib64/... paths.
ln -s usr/lib "$root/lib"
ln -s usr/lib64 "$root/lib64"

install_kmodules "$kmod" "$root" "$kver" "${MODULES[@]}"
cp "$GUEST_VMLINUZ" "$work/vmlinuz"
log "modules: $(tr '\n' ' ' <"$root/etc/guest-modules")"

# --- user space ----------------------------------------------------------------
# busybox provides the basic tools in /bin; the real tools live in /usr/{s,}bin
# and come first in PATH. /bin/sh is dash: Debian's busybox shell runs its own
# applets before PATH (so `ip` would be busybox's, not iproute2's).
cp /bin/busybox "$root/bin/busybox"
ln -s /usr/bin/dash "$root/bin/sh"
for a in $(busybox --list); do [[ -e $root/bin/$a ]] || ln -s busybox "$root/bin/$a"; done

# Copies a host file (dereferenced) to the same path in the image, /lib* and
# /bin, /sbin folded under /usr as Debian does.
put() {
  local dst=$1
  case $dst in /usr/*) ;; /*) dst=/usr$dst ;; esac
  mkdir -p "$root${dst%/*}"
  cp -L "$1" "$root$dst"
}
files=("$PROVIDER")
for p in "${PROGRAMS[@]}"; do
  f=$(command -v "$p") || die "$p not found on the host (run hack/install-deps.sh)"
  files+=("$f")
done
for f in "${files[@]}"; do
  put "$f"
  # "name => /path (addr)" or "/lib64/ld-linux-x86-64.so.2 (addr)".
  ldd "$f" | awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// {print $1}'
done | sort -u >"$work/libs"
while read -r l; do put "$l"; done <"$work/libs"
mkdir -p "$root/etc/libibverbs.d"
cp /etc/libibverbs.d/rxe.driver "$root/etc/libibverbs.d/"
# ld.so finds the multiarch directories through its cache.
printf '/usr/lib/%s\n' "$MA" >"$root/etc/ld.so.conf"
ldconfig -r "$root"

cat >"$root/etc/passwd" <<'EOF'
root:x:0:0:root:/root:/bin/sh
rdma:x:1000:1000:rdma:/home/rdma:/bin/sh
EOF
cat >"$root/etc/group" <<'EOF'
root:x:0:
rdma:x:1000:
EOF

# Uncompressed: the kernel unpacks it faster under TCG than it inflates gzip,
# and run.sh appends a small per-run archive to it.
(cd "$root" && find . -mindepth 1 | LC_ALL=C sort | cpio -o -H newc -R 0:0 --quiet) >"$work/base.cpio"
printf '%s\n' "$stamp" >"$work/stamp"
mkdir -p "$work/out"
mv "$work/vmlinuz" "$work/base.cpio" "$work/stamp" "$work/out/"
rm -rf "$dir"
mv "$work/out" "$dir"
log "done: $(du -sh "$dir" | cut -f1) in $dir"
echo "$dir"
