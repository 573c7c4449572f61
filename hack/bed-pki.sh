#!/usr/bin/env bash
# bed-pki.sh DIR CONTROL_PLANE_IP NODE=IP...
# Makes the bed's CA and every identity the cluster needs, with openssl:
# apiserver serving cert, apiserver→kubelet client, admin, controller-manager,
# scheduler, one system:node:<name> per kubelet, and the service-account key.
set -euo pipefail
dir=$1 cp_ip=$2; shift 2
mkdir -p "$dir" && cd "$dir"
days=30

openssl genrsa -out ca.key 2048 2>/dev/null
openssl req -x509 -new -key ca.key -days $days -subj "/CN=rdmasuite-bed-ca" -out ca.crt 2>/dev/null

cert() { # name subject [san]
  local name=$1 subj=$2 san=${3:-}
  openssl genrsa -out "$name.key" 2048 2>/dev/null
  openssl req -new -key "$name.key" -subj "$subj" -out "$name.csr" 2>/dev/null
  {
    echo "basicConstraints=CA:FALSE"
    echo "keyUsage=critical,digitalSignature,keyEncipherment"
    if [[ -n $san ]]; then echo "extendedKeyUsage=serverAuth"; echo "subjectAltName=$san"
    else echo "extendedKeyUsage=clientAuth"; fi
  } >"$name.ext"
  openssl x509 -req -in "$name.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -days $days \
    -extfile "$name.ext" -out "$name.crt" 2>/dev/null
  rm -f "$name.csr" "$name.ext"
}

# 10.96.0.1 is the kubernetes Service's ClusterIP; 10.0.2.2 is how a qemu
# user-mode guest reaches this host (guest nodes join through it).
cert apiserver "/CN=kube-apiserver" \
  "DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:localhost,IP:127.0.0.1,IP:$cp_ip,IP:10.96.0.1,IP:10.0.2.2"
cert apiserver-kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client"
cert admin "/O=system:masters/CN=rdmasuite-admin"
cert controller-manager "/CN=system:kube-controller-manager"
cert scheduler "/CN=system:kube-scheduler"
for n in "$@"; do
  cert "node-${n%%=*}" "/O=system:nodes/CN=system:node:${n%%=*}"
done
openssl genrsa -out sa.key 2048 2>/dev/null
openssl rsa -in sa.key -pubout -out sa.pub 2>/dev/null
chmod 600 ./*.key
