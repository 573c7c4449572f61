#!/usr/bin/env bash
# Builds kube-apiserver, kube-controller-manager, kube-scheduler, kubelet, kubectl
# from the k8s.io/kubernetes module, and fetches etcd (Debian's etcd-server),
# into a cache keyed by version. Skips any step whose cached binaries are complete.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/versions.sh"

die() { echo "build-k8s: ERROR: $*" >&2; exit 1; }

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
  # single-threaded link). -dwarf=false: the binaries are stripped (-s -w),
  # so the compiler's DWARF is thrown away at the link; not making it takes
  # 11 % off the compile (client-go + apimachinery, cold: 126 -> 112 CPU-s).
  # The binaries are the same either way, so K8S_BUILD_REV stays.
  echo "build-k8s: building ${k8s_bins[*]} $K8S_VERSION"
  (cd "$mod" && CGO_ENABLED=0 GOFLAGS=-mod=mod go build -trimpath -gcflags=all=-dwarf=false -ldflags="-s -w $(version_ldflags)" \
    -o "$K8S_BIN_DIR.tmp/" "${k8s_bins[@]/#/k8s.io/kubernetes/cmd/}")
  for b in "${k8s_bins[@]}"; do
    [[ -x $K8S_BIN_DIR.tmp/$b ]] || die "go build wrote no $b"
  done
  rm -rf "$K8S_BIN_DIR" && mv "$K8S_BIN_DIR.tmp" "$K8S_BIN_DIR"
}

# etcd: Debian's etcd-server package, unpacked (nothing is installed). The
# cache is keyed by suite and series; ETCD_BIN_DIR/version says which
# package version the bed runs.
fetch_etcd() {
  if [[ -x $ETCD_BIN_DIR/etcd && -s $ETCD_BIN_DIR/version ]]; then echo "build-k8s: cached $ETCD_BIN_DIR ($(cat "$ETCD_BIN_DIR/version"))"; return; fi
  # shellcheck source=debian-fetch.sh
  . "$here/debian-fetch.sh"
  local work=$RDMASUITE_CACHE/src/etcd-debian-$ETCD_DEBIAN_SUITE deb got
  rm -rf "$work" "$ETCD_BIN_DIR.tmp" && mkdir -p "$work" "$ETCD_BIN_DIR.tmp"
  echo "build-k8s: fetching etcd-server from Debian $ETCD_DEBIAN_SUITE"
  debian_fetch "$work" "$ETCD_DEBIAN_SUITE" etcd-server
  deb=$(echo "$work"/etcd-server_*.deb)
  [[ -f $deb ]] || die "no etcd-server .deb from Debian $ETCD_DEBIAN_SUITE in $work"
  dpkg -x "$deb" "$work/x"
  cp "$work/x/usr/bin/etcd" "$ETCD_BIN_DIR.tmp/etcd"
  got=$("$ETCD_BIN_DIR.tmp/etcd" --version | sed -n 's/^etcd Version: //p')
  [[ $got == "$ETCD_SERIES".* ]] ||
    die "Debian $ETCD_DEBIAN_SUITE's etcd-server is etcd '$got', not the $ETCD_SERIES series hack/versions.sh asks for (ETCD_DEBIAN_SUITE, ETCD_SERIES)"
  echo "etcd $got, Debian etcd-server $(dpkg-deb -f "$deb" Version) from $ETCD_DEBIAN_SUITE" >"$ETCD_BIN_DIR.tmp/version"
  rm -rf "$work" "$ETCD_BIN_DIR" && mv "$ETCD_BIN_DIR.tmp" "$ETCD_BIN_DIR"
  echo "build-k8s: $(cat "$ETCD_BIN_DIR/version")"
}

start=$(date +%s)
fetch_etcd
build_k8s
echo "build-k8s: done in $(( $(date +%s) - start )) s"
