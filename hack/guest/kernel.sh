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
# mirror as the host's packages through a private apt configuration, so the
# host's sources are not touched.
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
  local work=$1 apt=$1/apt mirror p
  mirror=$(sed -n 's/^URIs: *\([^ ]*\/debian\)$/\1/p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -1)
  [[ -n $mirror ]] || mirror=$(sed -n 's/^deb \(\[[^]]*\] \)\{0,1\}\(http[^ ]*\/debian\) .*/\2/p' /etc/apt/sources.list 2>/dev/null | head -1)
  [[ -n $mirror ]] || die "cannot find the Debian mirror in /etc/apt/sources.list{,.d/debian.sources}"
  mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial"
  echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $mirror $GUEST_KERNEL_SUITE main" >"$apt/sources.list"
  cat >"$apt/apt.conf" <<CONF
Dir::Etc::sourcelist "$apt/sources.list";
Dir::Etc::sourceparts "-";
Dir::State::Lists "$apt/lists";
Dir::Cache "$apt/cache";
APT::Sandbox::User "root";
Acquire::Languages "none";
CONF
  APT_CONFIG=$apt/apt.conf timeout 600 apt-get -q update >&2 || die "apt-get update of $GUEST_KERNEL_SUITE from $mirror failed"
  for p in "${GUEST_KERNEL_PKGS[@]}"; do
    (cd "$work" && APT_CONFIG=$apt/apt.conf timeout 900 apt-get download -q "$p=$GUEST_KERNEL_VERSION" >&2) ||
      die "cannot download $p=$GUEST_KERNEL_VERSION from $GUEST_KERNEL_SUITE"
    dpkg -x "$work/${p}_"*.deb "$work/k"
    rm -f "$work/${p}_"*.deb
  done
  rm -rf "$apt"
  GUEST_KMOD=$work/k/usr/lib/modules/$GUEST_KVER
  GUEST_VMLINUZ=$GUEST_KMOD/vmlinuz
  [[ -f $GUEST_VMLINUZ ]] || die "no vmlinuz in $GUEST_KMOD"
  # The packages ship no modules.dep (the postinst runs depmod): make one.
  depmod -b "$work/k/usr" "$GUEST_KVER"
}
