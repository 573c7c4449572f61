#!/usr/bin/env bash
# Builds kube-apiserver, kube-controller-manager, kube-scheduler, kubelet, kubectl
# from the k8s.io/kubernetes module, and etcd from its module, into a cache keyed
# by version. Skips any build whose cached binaries are complete.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/versions.sh"

k8s_bins=(kube-apiserver kube-controller-manager kube-scheduler kubelet kubectl)

# What `make` in the kubernetes tree stamps in, so nodes report their real
# kubelet version instead of v0.0.0-master.
version_ldflags() {
  local minor=${K8S_VERSION#v1.} p
  minor=${minor%%.*}
  for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    printf -- '-X %s.gitVersion=%s -X %s.gitMajor=1 -X %s.gitMinor=%s -X %s.gitTreeState=clean ' \
      "$p" "$K8S_VERSION" "$p" "$p" "$minor" "$p"
  done
}

build_k8s() {
  local ok=1 b
  for b in "${k8s_bins[@]}"; do [[ -x $K8S_BIN_DIR/$b ]] || ok=0; done
  if ((ok)); then echo "build-k8s: cached $K8S_BIN_DIR"; return; fi
  local mod=$RDMASUITE_CACHE/src/k8s-$K8S_VERSION
  mkdir -p "$mod" "$K8S_BIN_DIR.tmp"
  local minor=${K8S_VERSION#v1.}   # 35.4
  # k8s.io/kubernetes replaces every staging module with a relative path; a
  # scratch module must map each to its published v0.<minor>.<patch> instead.
  curl -fsS "${GOPROXY_URL:-https://proxy.golang.org}/k8s.io/kubernetes/@v/$K8S_VERSION.mod" -o "$mod/kubernetes.mod"
  {
    echo "module rdmasuite.local/k8sbuild"
    echo "go 1.25"
    echo "require k8s.io/kubernetes $K8S_VERSION"
    echo "replace ("
    grep -E '^\s*k8s.io/[a-z0-9-]+ => ./staging/' "$mod/kubernetes.mod" |
      awk -v v="v0.$minor" '{print "\t" $1 " => " $1 " " v}'
    echo ")"
  } > "$mod/go.mod"
  cat > "$mod/tools.go" <<'GO'
//go:build tools

package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubelet"
	_ "k8s.io/kubernetes/cmd/kubectl"
)
GO
  (cd "$mod" && GOFLAGS=-mod=mod go mod tidy -e >/dev/null 2>&1 || true)
  (cd "$mod" && GOFLAGS=-mod=mod go mod download)
  # One go build for all five: with -o DIR/ it writes each main package
  # there under its own name, and it links one binary while compiling or
  # linking another (five sequential builds left a core idle during each
  # single-threaded link).
  echo "build-k8s: building ${k8s_bins[*]} $K8S_VERSION"
  (cd "$mod" && CGO_ENABLED=0 GOFLAGS=-mod=mod go build -trimpath -ldflags="-s -w $(version_ldflags)" \
    -o "$K8S_BIN_DIR.tmp/" "${k8s_bins[@]/#/k8s.io/kubernetes/cmd/}")
  for b in "${k8s_bins[@]}"; do
    [[ -x $K8S_BIN_DIR.tmp/$b ]] || { echo "build-k8s: go build wrote no $b" >&2; exit 1; }
  done
  rm -rf "$K8S_BIN_DIR" && mv "$K8S_BIN_DIR.tmp" "$K8S_BIN_DIR"
}

build_etcd() {
  if [[ -x $ETCD_BIN_DIR/etcd ]]; then echo "build-k8s: cached $ETCD_BIN_DIR"; return; fi
  local mod=$RDMASUITE_CACHE/src/etcd-$ETCD_VERSION
  mkdir -p "$mod" "$ETCD_BIN_DIR.tmp"
  printf 'module rdmasuite.local/etcdbuild\ngo 1.25\n' > "$mod/go.mod"
  echo "build-k8s: building etcd $ETCD_VERSION"
  (cd "$mod" && GOFLAGS=-mod=mod go get "go.etcd.io/etcd/server/v3@$ETCD_VERSION" >/dev/null &&
    CGO_ENABLED=0 GOFLAGS=-mod=mod go build -trimpath -ldflags='-s -w' -o "$ETCD_BIN_DIR.tmp/etcd" go.etcd.io/etcd/server/v3)
  rm -rf "$ETCD_BIN_DIR" && mv "$ETCD_BIN_DIR.tmp" "$ETCD_BIN_DIR"
}

start=$(date +%s)
build_etcd
build_k8s
echo "build-k8s: done in $(( $(date +%s) - start )) s"
