#!/usr/bin/env bash
# nfs-cluster.sh up|unload true|unset|ready|down — the cluster side of the guest
# bed's NFS-over-RDMA storage and its MOFED driver stand-in (seed 000):
#
#   up     the namespace nvidia-network-operator with a DaemonSet on the guest
#          nodes shaped like the Network Operator's driver DaemonSet (pods
#          labelled nvidia.com/ofed-driver, container mofed-container,
#          updateStrategy OnDelete, UNLOAD_STORAGE_MODULES=true) whose
#          container is hack/tools/mofed-standin: Soft-RoCE is the driver, so
#          deleting the pod takes the rails' rxe devices down and the new pod
#          brings them back, under a live NFS/RDMA mount; and the PV
#          rdmasuite-nfs (NFSv4.2 over RDMA, port 20049, from the guest that
#          serves /srv/nfs, up.sh GUESTNODE_NFS_SERVER) with the PVC
#          default/rdmasuite-nfs bound to it (the suite's --stall-pvc default).
#          Waits for a Ready driver pod on every guest node.
#   unload true|unset
#          sets or removes UNLOAD_STORAGE_MODULES in the DaemonSet; running
#          pods keep theirs until deleted (OnDelete), as with NicClusterPolicy.
#   ready  waits (120 s) until a driver pod is Ready on every guest node.
#   down   deletes all of it; the stopping driver pods take the rxe devices
#          down, so every guest's rails are brought back afterwards (and any
#          crash-looping pod's node too).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib.sh
. "$here/lib.sh"

NS=nvidia-network-operator
DS=mofed-debian12-ds
server=${GUESTNODE_NFS_SERVER-rxe-node-1}

guests() { kubectl get nodes -l rdmasuite.io/guest-node=true -o 'jsonpath={.items[*].metadata.name}'; }

# restore_rails NODE: the rails' rxe devices as the guest's init made them.
restore_rails() {
  guest_script "$1" 60 '
for nd in /sys/class/net/eth[1-9]; do
  n=${nd##*/eth}; r=$((n - 1))
  [ -e /sys/class/infiniband/rxe$r ] || rdma link add rxe$r type rxe netdev eth$n || exit 1
done
chmod 666 /dev/infiniband/* 2>/dev/null
echo $(ls /sys/class/infiniband)'
}

ready_everywhere() {
  local n want have
  want=$(guests | wc -w)
  have=$(kubectl get pods -n "$NS" -l nvidia.com/ofed-driver -o 'jsonpath={range .items[*]}{.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}' | grep -c True || true)
  ((have == want))
}

wait_ready() {
  local deadline=$((SECONDS + 120))
  until ready_everywhere; do
    ((SECONDS < deadline)) || {
      kubectl get pods -n "$NS" -o wide >&2
      die "the MOFED stand-in is not Ready on every guest node after 120 s"
    }
    sleep 2
  done
}

case ${1:-} in
ready) wait_ready ;;
up)
  idx=$(cat "$GN_ROOT/$server/index" 2>/dev/null) || die "the NFS server guest $server is not running (GUESTNODE_NFS_SERVER)"
  nfs_ip=$(link_ip 0 "$idx")
  kubectl apply -f - >/dev/null <<YAML || die "applying the MOFED stand-in and the NFS volume failed"
apiVersion: v1
kind: Namespace
metadata:
  name: $NS
  labels: {rdmasuite.io/bed: "true", pod-security.kubernetes.io/enforce: privileged}
---
apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: $DS
  namespace: $NS
  labels: {app: mofed-debian12, nvidia.com/ofed-driver: "", rdmasuite.io/bed: "true"}
spec:
  selector: {matchLabels: {app: mofed-debian12}}
  updateStrategy: {type: OnDelete}
  template:
    metadata:
      labels: {app: mofed-debian12, nvidia.com/ofed-driver: ""}
    spec:
      nodeSelector: {rdmasuite.io/guest-node: "true"}
      hostNetwork: true
      terminationGracePeriodSeconds: 120
      tolerations: [{operator: Exists}]
      containers:
      - name: mofed-container
        image: docker.io/rdmasuite/mofed-standin:$IMAGE_TAG
        imagePullPolicy: Never
        env: [{name: UNLOAD_STORAGE_MODULES, value: "true"}]
        securityContext: {privileged: true}
        readinessProbe:
          exec: {command: [/usr/local/bin/mofed-standin, ready]}
          periodSeconds: 2
        volumeMounts:
        - {name: drivers, mountPath: /run/mellanox/drivers}
      volumes:
      - {name: drivers, hostPath: {path: /run/mellanox/drivers, type: DirectoryOrCreate}}
---
apiVersion: v1
kind: PersistentVolume
metadata:
  name: rdmasuite-nfs
  labels: {rdmasuite.io/bed: "true"}
spec:
  capacity: {storage: 200Mi}
  accessModes: [ReadWriteMany]
  persistentVolumeReclaimPolicy: Retain
  storageClassName: ""
  mountOptions: [nfsvers=4.2, proto=rdma, port=20049, hard, timeo=600, retrans=2]
  nfs: {server: "$nfs_ip", path: /}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: rdmasuite-nfs
  namespace: default
  labels: {rdmasuite.io/bed: "true"}
spec:
  accessModes: [ReadWriteMany]
  storageClassName: ""
  volumeName: rdmasuite-nfs
  resources: {requests: {storage: 200Mi}}
YAML
  wait_ready
  kubectl wait -n default --for=jsonpath='{.status.phase}'=Bound pvc/rdmasuite-nfs --timeout=60s >/dev/null ||
    die "PVC default/rdmasuite-nfs not Bound to PV rdmasuite-nfs after 60 s"
  log "MOFED stand-in Ready on $(guests); PV rdmasuite-nfs = $nfs_ip:/ over RDMA (port 20049), PVC default/rdmasuite-nfs"
  ;;
unload)
  case ${2:-} in
  true) kubectl set env -n "$NS" "ds/$DS" -c mofed-container UNLOAD_STORAGE_MODULES=true >/dev/null ;;
  unset) kubectl set env -n "$NS" "ds/$DS" -c mofed-container UNLOAD_STORAGE_MODULES- >/dev/null ;;
  *) die "usage: nfs-cluster.sh unload true|unset" ;;
  esac
  log "DaemonSet $NS/$DS: UNLOAD_STORAGE_MODULES ${2} (running pods keep theirs until deleted)"
  ;;
down)
  kubectl delete pvc -n default rdmasuite-nfs --ignore-not-found --wait=false >/dev/null || true
  kubectl delete pv rdmasuite-nfs --ignore-not-found --wait=false >/dev/null || true
  # The driver pods delete the rxe devices when they stop: wait until they
  # are gone (lib.sh's kubectl is capped at 30 s per call, hence the loop),
  # or a late SIGTERM would undo the restore below.
  kubectl delete ns "$NS" --ignore-not-found --wait=false >/dev/null || true
  deadline=$((SECONDS + 150))
  while [[ -n $(kubectl get pods -n "$NS" -o name 2>/dev/null) ]]; do
    ((SECONDS < deadline)) || die "the driver pods in $NS are not gone after 150 s: $(kubectl get pods -n "$NS" -o wide 2>&1 | tr '\n' ' ')"
    sleep 2
  done
  for g in $(guests); do
    out=$(restore_rails "$g") || die "restoring the rails of $g failed: $out"
    log "$g: RDMA devices $out"
  done
  ;;
*) die "usage: nfs-cluster.sh up|unload true|unset|ready|down" ;;
esac
