#!/usr/bin/env bash
# hostdev-cluster.sh UPSTREAM_DIR [identity|network|all] — the cluster side
# of the guest nodes' hostdev variant, applied (idempotently) by up.sh
# before a guest boots (all), or in two parts when it boots held beside
# make test's host-node stages: identity at the boot (RBAC, the Multus
# ServiceAccount, the CNI certificate: nothing the suite's defaults look
# at), network at the join (the CRDs and the NAD: with the NAD CRD in the
# cluster the suite's --variants auto picks hostdev, which those stages'
# expectations must not see):
#   - the NetworkAttachmentDefinition CRD (Multus) and Whereabouts' IPPool /
#     OverlappingRangeIPReservation CRDs, from UPSTREAM_DIR/crds
#     (hack/guestnode/upstream.sh);
#   - a client certificate for the CNI plugins on the guests (user
#     rdmasuite-cni, from the bed CA), the ServiceAccount
#     kube-system/rdmasuite-bed-multus (the Multus daemon on each guest runs
#     with its in-cluster configuration: a token, as in its DaemonSet) and a
#     ClusterRole for both with what Multus (watch pods and NADs, write the
#     pod's network-status annotation) and Whereabouts (IP pools,
#     reservations, its leader-election lease) need;
#   - the NAD default/sriov-rdma (the suite's --hostdev-network default): a
#     conflist of host-device (moves the NIC Multus names by PCI address into
#     the pod as net1, Whereabouts gives it an address on 10.252.0.0/24, the
#     hostdev rail) and rxe-hostdev (binds Soft-RoCE to it in the pod), with
#     the k8s.v1.cni.cncf.io/resourceName annotation that makes Multus pass
#     the allocated NIC's PCI address as deviceID, as on SR-IOV clusters.
# Writes $GN_ROOT/cni.kubeconfig (the guests' CNI kubeconfig, certificate
# embedded) once.
set -euo pipefail
# shellcheck source=lib.sh
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"

up=${1:?usage: hostdev-cluster.sh UPSTREAM_DIR [identity|network|all]}
part=${2:-all}
[[ $part == identity || $part == network || $part == all ]] || die "hostdev-cluster.sh: part must be identity, network or all, got '$part'"
[[ -d $up/crds ]] || die "no CRDs in $up/crds (hack/guestnode/upstream.sh)"

# network: the CRDs and the NAD default/sriov-rdma.
network() {
for f in "$up"/crds/*.yaml; do
  kubectl apply -f "$f" >/dev/null || die "applying $f failed"
done
for crd in network-attachment-definitions.k8s.cni.cncf.io ippools.whereabouts.cni.cncf.io; do
  kubectl wait --for condition=established --timeout=25s "crd/$crd" >/dev/null || die "CRD $crd not established"
done
kubectl apply -f - >/dev/null <<YAML || die "applying the NAD default/sriov-rdma failed"
apiVersion: k8s.cni.cncf.io/v1
kind: NetworkAttachmentDefinition
metadata:
  name: sriov-rdma
  namespace: default
  annotations:
    k8s.v1.cni.cncf.io/resourceName: $HOSTDEV_RESOURCE
spec:
  config: |
    {
      "cniVersion": "1.0.0",
      "name": "sriov-rdma",
      "plugins": [
        {
          "type": "host-device",
          "ipam": {
            "type": "whereabouts",
            "range": "$HOSTDEV_SUBNET",
            "kubernetes": {"kubeconfig": "/etc/cni/net.d/whereabouts.d/whereabouts.kubeconfig"},
            "leader_lease_duration": 15000, "leader_renew_deadline": 10000, "leader_retry_period": 1000
          }
        },
        {"type": "rxe-hostdev"}
      ]
    }
YAML

}

# identity: who the plugins are and what they may do.
identity() {
kubectl apply -f - >/dev/null <<'YAML' || die "applying the CNI plugins' RBAC failed"
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: rdmasuite-bed-cni
  labels: {rdmasuite.io/bed: "true"}
rules:
# Multus (thick: its daemon's informers): the pod's network selection and
# the NADs it names; the network-status annotation it writes back.
- apiGroups: [""]
  resources: [pods]
  verbs: [get, list, watch]
- apiGroups: [""]
  resources: [pods/status]
  verbs: [get, update, patch]
- apiGroups: [k8s.cni.cncf.io]
  resources: [network-attachment-definitions]
  verbs: [get, list, watch]
# Whereabouts: its allocations, and the lease that serialises them.
- apiGroups: [whereabouts.cni.cncf.io]
  resources: [ippools, overlappingrangeipreservations]
  verbs: [get, list, watch, create, update, patch, delete]
- apiGroups: [coordination.k8s.io]
  resources: [leases]
  verbs: [get, list, watch, create, update, patch, delete]
- apiGroups: ["", events.k8s.io]
  resources: [events]
  verbs: [create, patch, update]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: rdmasuite-bed-cni
  labels: {rdmasuite.io/bed: "true"}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: rdmasuite-bed-cni}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: rdmasuite-cni}
- {kind: ServiceAccount, name: rdmasuite-bed-multus, namespace: kube-system}
---
apiVersion: v1
kind: ServiceAccount
metadata:
  name: rdmasuite-bed-multus
  namespace: kube-system
  labels: {rdmasuite.io/bed: "true"}
YAML
# CoreDNS in the guests (coredns.sh) reads Services and EndpointSlices with
# the same add-on certificate: what CoreDNS's own system:coredns role allows.
kubectl apply -f - >/dev/null <<'YAML' || die "applying CoreDNS's RBAC failed"
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: rdmasuite-bed-coredns
  labels: {rdmasuite.io/bed: "true"}
rules:
- apiGroups: [""]
  resources: [endpoints, services, pods, namespaces]
  verbs: [list, watch]
- apiGroups: [discovery.k8s.io]
  resources: [endpointslices]
  verbs: [list, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: rdmasuite-bed-coredns
  labels: {rdmasuite.io/bed: "true"}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: rdmasuite-bed-coredns}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: rdmasuite-cni}
YAML
kc=$GN_ROOT/cni.kubeconfig
[[ -s $kc ]] && return 0
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
openssl genrsa -out "$t/cni.key" 2048 2>/dev/null
openssl req -new -key "$t/cni.key" -subj "/CN=rdmasuite-cni" -out "$t/cni.csr" 2>/dev/null
printf 'basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=clientAuth\n' >"$t/ext"
openssl x509 -req -in "$t/cni.csr" -CA "$BED_DIR/pki/ca.crt" -CAkey "$BED_DIR/pki/ca.key" -CAcreateserial \
  -CAserial "$t/ca.srl" -days 30 -extfile "$t/ext" -out "$t/cni.crt" 2>/dev/null || die "signing the CNI certificate failed"
cat >"$kc.tmp" <<KC
apiVersion: v1
kind: Config
clusters:
- name: rdmasuite-bed
  cluster:
    server: https://10.0.2.2:$APISERVER_PORT
    certificate-authority-data: $(base64 -w0 <"$BED_DIR/pki/ca.crt")
users:
- name: rdmasuite-cni
  user:
    client-certificate-data: $(base64 -w0 <"$t/cni.crt")
    client-key-data: $(base64 -w0 <"$t/cni.key")
contexts:
- name: rdmasuite-bed
  context: {cluster: rdmasuite-bed, user: rdmasuite-cni, namespace: kube-system}
current-context: rdmasuite-bed
KC
chmod 600 "$kc.tmp"
mv "$kc.tmp" "$kc"
}

case $part in
identity) identity ;;
network) network ;;
all) identity && network ;;
esac
