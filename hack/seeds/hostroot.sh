#!/usr/bin/env bash
# hostroot.sh DIR healthy|storage-modules|host-mofed — writes a minimal host
# root for the doctor's host probe (rdmaprobe node --host-root), so the bed
# can show a node "whose mounted host root shows rpcrdma loaded before
# .driver-ready" (seed 000) next to a healthy one, and a node whose MOFED is
# installed on the host and serves an NFS-over-RDMA mount (rpcrdma loaded on
# purpose, no Network Operator driver container: must not be a finding).
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
*) echo "usage: $0 DIR healthy|storage-modules|host-mofed" >&2; exit 2 ;;
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
printf '%s\n' "$modules" >"$dir/proc/modules"
printf '%s\n' "$mounts" >"$dir/proc/1/mounts"
