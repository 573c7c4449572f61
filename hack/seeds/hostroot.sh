#!/usr/bin/env bash
# hostroot.sh DIR healthy|storage-modules|host-mofed|host-config — writes a minimal host
# root for the doctor's host probe (rdmaprobe node --host-root), so the bed
# can show a node "whose mounted host root shows rpcrdma loaded before
# .driver-ready" (seed 000) next to a healthy one, and a node whose MOFED is
# installed on the host and serves an NFS-over-RDMA mount (rpcrdma loaded on
# purpose, no Network Operator driver container: must not be a finding), and
# a node whose host configuration caps it (host-config: the HCA's PCIe link
# trained x8 of x16, a RoCE port whose address has only a RoCE v1 GID).
# Module lines follow /proc/modules' format.
set -euo pipefail
dir=$1 kind=$2
rm -rf "$dir"
mkdir -p "$dir/proc/pressure" "$dir/proc/1" "$dir/sys/module" "$dir/run"
cat >"$dir/proc/stat" <<'S'
cpu  4705 356 584 3699 23 0 12 0 0 0
S
for r in io memory cpu; do
  printf 'some avg10=0.00 avg60=0.00 avg300=0.00 total=1000\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=500\n' >"$dir/proc/pressure/$r"
done
modules="mlx5_ib 479232 0 - Live 0x0000000000000000
mlx5_core 2199552 1 mlx5_ib, Live 0x0000000000000000
ib_uverbs 184320 1 mlx5_ib, Live 0x0000000000000000
rdma_cm 139264 0 - Live 0x0000000000000000
ib_core 454656 4 mlx5_ib,ib_uverbs,rdma_cm,rpcrdma, Live 0x0000000000000000"
mounts="overlay / overlay rw,relatime 0 0"
# An NFS-over-RDMA mount and the in-tree storage modules it loads (seed 000
# and its host-MOFED look-alike both have them).
nfs_rdma_modules="
rpcrdma 286720 1 - Live 0x0000000000000000
xprtrdma 16384 0 - Live 0x0000000000000000
sunrpc 684032 12 rpcrdma,nfsv4,nfs, Live 0x0000000000000000"
nfs_rdma_mount="
172.27.0.10:/shared /mnt/shared nfs4 rw,relatime,vers=4.1,proto=rdma,port=20049 0 0"
case $kind in
healthy)
  mkdir -p "$dir/run/mellanox/drivers"
  : >"$dir/run/mellanox/drivers/.driver-ready"
  ;;
storage-modules)
  # Seed 000: an NFS-over-RDMA mount loaded the in-tree storage modules
  # before MOFED; the MOFED container (its hostPath is /run/mellanox/drivers,
  # so the directory exists) crash-loops and never creates .driver-ready.
  mkdir -p "$dir/run/mellanox/drivers"
  modules+=$nfs_rdma_modules
  mounts+=$nfs_rdma_mount
  ;;
host-mofed)
  # MOFED installed on the host (DKMS, --network-operator=false): its
  # modules carry MOFED's version, rpcrdma/xprtrdma serve an NFS-over-RDMA
  # mount, and no driver container ever ran (no /run/mellanox at all).
  for m in mlx5_core mlx5_ib ib_core; do
    mkdir -p "$dir/sys/module/$m"
    echo live >"$dir/sys/module/$m/initstate"
    echo 24.10-0.7.0 >"$dir/sys/module/$m/version"
  done
  modules+=$nfs_rdma_modules
  mounts+=$nfs_rdma_mount
  ;;
host-config)
  mkdir -p "$dir/run/mellanox/drivers"
  : >"$dir/run/mellanox/drivers/.driver-ready"
  ;;
*) echo "usage: $0 DIR healthy|storage-modules|host-mofed|host-config" >&2; exit 2 ;;
esac
# One ConnectX port, as sysfs shows it (class entries are symlinks): every
# staged state has its HCA driver loaded, so the doctor's
# rdma-device-missing must stay silent on these nodes.
hca=sys/devices/pci0000:00/0000:01:00.0/infiniband/mlx5_0
mkdir -p "$dir/$hca/ports/1" "$dir/sys/class/infiniband"
ln -s ../../devices/pci0000:00/0000:01:00.0/infiniband/mlx5_0 "$dir/sys/class/infiniband/mlx5_0"
echo MT4123 >"$dir/$hca/hca_type"
echo '4: ACTIVE' >"$dir/$hca/ports/1/state"
echo '5: LinkUp' >"$dir/$hca/ports/1/phys_state"
echo '200 Gb/sec (4X HDR)' >"$dir/$hca/ports/1/rate"
echo InfiniBand >"$dir/$hca/ports/1/link_layer"
# The port swept by a subnet manager (ibstat: Base lid 0x1a, SM lid 0x1),
# the default partition.
echo 0x1a >"$dir/$hca/ports/1/lid"
echo 0x1 >"$dir/$hca/ports/1/sm_lid"
echo 0 >"$dir/$hca/ports/1/sm_sl"
mkdir -p "$dir/$hca/ports/1/pkeys"
echo 0xffff >"$dir/$hca/ports/1/pkeys/0"
# The HCA's PCI function and its link, as sysfs shows a ConnectX-6 (LnkCap
# Speed 16GT/s, Width x16: NVIDIA/l2fwd-nv#6's lspci -vv); host-config's
# trained x8 ("Width x8 (downgraded)", the shape tenstorrent/tt-smi#67's
# lspci shows): 126 Gb/s for a 200 Gb/s port.
pci=sys/devices/pci0000:00/0000:01:00.0
ln -s ../../../0000:01:00.0 "$dir/$hca/device"
width=16
[[ $kind == host-config ]] && width=8
printf '16.0 GT/s PCIe\n' >"$dir/$pci/current_link_speed"
printf '16.0 GT/s PCIe\n' >"$dir/$pci/max_link_speed"
echo "$width" >"$dir/$pci/current_link_width"
echo 16 >"$dir/$pci/max_link_width"
echo 0 >"$dir/$pci/numa_node"
if [[ $kind == host-config ]]; then
  # A RoCE function whose netdev's IPv4 address has only a RoCE v1 GID
  # (the RoCE mode left at v1: show_gids lists v1 rows only).
  roce=sys/devices/pci0000:00/0000:02:00.0
  mkdir -p "$dir/$roce/infiniband/mlx5_1/ports/1/gids" "$dir/$roce/infiniband/mlx5_1/ports/1/gid_attrs/types" \
    "$dir/$roce/infiniband/mlx5_1/ports/1/gid_attrs/ndevs" "$dir/$roce/net/ens2f0"
  ln -s ../../devices/pci0000:00/0000:02:00.0/infiniband/mlx5_1 "$dir/sys/class/infiniband/mlx5_1"
  ln -s ../../../0000:02:00.0 "$dir/$roce/infiniband/mlx5_1/device"
  mkdir -p "$dir/sys/class/net"
  ln -s ../../devices/pci0000:00/0000:02:00.0/net/ens2f0 "$dir/sys/class/net/ens2f0"
  p=$dir/$roce/infiniband/mlx5_1/ports/1
  echo MT4125 >"$dir/$roce/infiniband/mlx5_1/hca_type"
  echo '4: ACTIVE' >"$p/state"
  echo '5: LinkUp' >"$p/phys_state"
  echo '100 Gb/sec (2X HDR)' >"$p/rate"
  echo Ethernet >"$p/link_layer"
  echo fe80:0000:0000:0000:0e42:a1ff:fe2d:a9f0 >"$p/gids/0"
  echo 0000:0000:0000:0000:0000:ffff:ac1b:0a05 >"$p/gids/1"
  echo 'IB/RoCE v1' >"$p/gid_attrs/types/0"
  echo 'IB/RoCE v1' >"$p/gid_attrs/types/1"
  echo ens2f0 >"$p/gid_attrs/ndevs/0"
  echo ens2f0 >"$p/gid_attrs/ndevs/1"
  echo 9000 >"$dir/$roce/net/ens2f0/mtu"
  echo up >"$dir/$roce/net/ens2f0/operstate"
  for f in current_link_speed max_link_speed; do printf '16.0 GT/s PCIe\n' >"$dir/$roce/$f"; done
  for f in current_link_width max_link_width; do echo 16 >"$dir/$roce/$f"; done
fi
printf '%s\n' "$modules" >"$dir/proc/modules"
printf '%s\n' "$mounts" >"$dir/proc/1/mounts"
