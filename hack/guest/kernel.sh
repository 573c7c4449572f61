# Pinned guest kernel, shared by hack/guest/build.sh and hack/guestnode/build.sh
# (both hash this file into their cache stamp). Sourced; the caller defines die().
#
# Debian 12's 6.1 rdma_rxe keeps its UDP sockets in the initial network
# namespace, so an rxe device on a NIC moved into a pod cannot carry traffic.
# Soft-RoCE got per-namespace sockets in Linux 7.1 (commits 13f2a53c2a71
# "RDMA/rxe: Add net namespace support for IPv4/IPv6 sockets" and
# f1327abd6abe "Support RDMA link creation and destruction per net
# namespace"). trixie-backports carries 7.3.4, whose rdma_rxe.ko has the
# per-netns code (rxe_ns_* symbols); it is fetched from the same Debian
# mirror as the host's packages (hack/debian-fetch.sh), the host's sources
# untouched.
GUEST_KERNEL_SUITE=trixie-backports
GUEST_KERNEL_VERSION=7.3.4-1~bpo13+1
GUEST_KVER=7.3.4+deb13-amd64
# Since Debian's split kernel packaging, vmlinuz, the modules and
# modules.builtin (for depmod) are three packages (linux-image-* is a
# metapackage over them).
GUEST_KERNEL_PKGS=(linux-binary-$GUEST_KVER linux-modules-$GUEST_KVER linux-base-$GUEST_KVER)

# fetch_guest_kernel WORK: unpacks the pinned kernel into WORK/k and sets
# GUEST_KMOD (modules dir with a fresh modules.dep) and GUEST_VMLINUZ.
fetch_guest_kernel() {
  local work=$1 p
  # shellcheck source=../debian-fetch.sh
  . "$(dirname "${BASH_SOURCE[0]}")/../debian-fetch.sh"
  debian_fetch "$work" "$GUEST_KERNEL_SUITE" "${GUEST_KERNEL_PKGS[@]/%/=$GUEST_KERNEL_VERSION}"
  for p in "${GUEST_KERNEL_PKGS[@]}"; do
    dpkg -x "$work/${p}_"*.deb "$work/k"
    rm -f "$work/${p}_"*.deb
  done
  GUEST_KMOD=$work/k/usr/lib/modules/$GUEST_KVER
  GUEST_VMLINUZ=$GUEST_KMOD/vmlinuz
  [[ -f $GUEST_VMLINUZ ]] || die "no vmlinuz in $GUEST_KMOD"
  # The packages ship no modules.dep (the postinst runs depmod): make one.
  depmod -b "$work/k/usr" "$GUEST_KVER"
}
