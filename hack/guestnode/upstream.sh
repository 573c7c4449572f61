#!/usr/bin/env bash
# Builds, or reuses from the cache, the upstream components the guest nodes'
# hostdev variant runs, the way SR-IOV clusters run it:
#   Multus CNI (thick plugin: multus-daemon + multus-shim) —
#                               gopkg.in/k8snetworkplumbingwg/multus-cni.v4
#   Whereabouts IPAM          — github.com/k8snetworkplumbingwg/whereabouts
# from their Go modules at pinned versions (the Go module proxy is all this
# machine reaches; `go install M@V` fails for both: Multus' deprecation check
# reads the proxy's @v/list, which it refuses, and Whereabouts ships an empty
# vendor directory), plus their CRDs (NetworkAttachmentDefinition; IPPool,
# OverlappingRangeIPReservation) from the same module trees.
#
# Prints the cache directory on stdout: bin/{multus-daemon,multus-shim,
# whereabouts} (static), cni.cpio (an initramfs layer: the shim and
# Whereabouts under /opt/cni/bin, the daemon under /usr/bin), crds/*.yaml.
# Thick, not thin: the thin plugin is a new process per pod that must read
# the pod from the API server within 250 ms (multus.go: shortPollDuration,
# the per-request timeout without an informer), a fresh TLS handshake
# through qemu's user network that a TCG guest under load often misses;
# the sandbox then fails and the kubelet retries it 30-45 s later (1 to 25
# times a make test). The daemon reads pods from its informer, as the
# thick deployment of the NVIDIA Network Operator and Multus' own docs do.
# host-device comes from Debian's containernetworking-plugins (the guest's
# other CNI plugins do too).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../versions.sh
. "$here/../versions.sh"

MULTUS_MODULE=gopkg.in/k8snetworkplumbingwg/multus-cni.v4
MULTUS_VERSION=v4.3.0
# v0.8.0: the newest release whose go.mod the checksum database serves
# (v0.9.0 and v0.9.2: sumdb 404; v0.9.1: the proxy refuses it).
WHEREABOUTS_MODULE=github.com/k8snetworkplumbingwg/whereabouts
WHEREABOUTS_VERSION=v0.8.0
RECIPE_REV=2
dir=$RDMASUITE_CACHE/cni-multus-$MULTUS_VERSION-whereabouts-$WHEREABOUTS_VERSION-r$RECIPE_REV

log() { echo "upstream-cni: $*" >&2; }
die() { log "ERROR: $*"; exit 1; }

mkdir -p "$RDMASUITE_CACHE"
exec 9>"$RDMASUITE_CACHE/.cni-build.lock"
flock -w 900 9 || die "another build holds $RDMASUITE_CACHE/.cni-build.lock"
if [[ -f $dir/stamp ]]; then
  echo "$dir"
  exit 0
fi
work=$(mktemp -d "$RDMASUITE_CACHE/.cni-build.XXXXXX")
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT

# src MODULE@VERSION -> a writable copy of the module tree (the module cache
# is read-only and `go build` there would write nothing, but the builds below
# resolve dependencies in the module's own go.mod/go.sum).
src() {
  local d
  d=$(GOFLAGS=-buildvcs=false go mod download -json "$1" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
  [[ -n $d && -d $d ]] || die "go mod download $1 gave no module directory (is the Go module proxy reachable?)"
  local to=$work/src/${1//[\/@]/_}
  mkdir -p "$work/src"
  cp -r "$d" "$to"
  chmod -R u+w "$to"
  echo "$to"
}
mkdir -p "$work/out/bin" "$work/out/crds" "$work/layer/opt/cni/bin"
t=$SECONDS
m=$(src "$MULTUS_MODULE@$MULTUS_VERSION")
for c in multus-daemon multus-shim; do
  (cd "$m" && CGO_ENABLED=0 GOFLAGS=-buildvcs=false go build -trimpath -gcflags=all=-dwarf=false -ldflags='-s -w' -o "$work/out/bin/$c" "./cmd/$c") ||
    die "building $c $MULTUS_VERSION failed"
done
# The NetworkAttachmentDefinition CRD is the manifest's one CustomResourceDefinition document.
awk '/^---/ {if (crd) exit; doc = ""; next} {doc = doc $0 "\n"} /^kind: CustomResourceDefinition/ {crd = 1} crd && doc {printf "%s", doc; doc = ""}' "$m/deployments/multus-daemonset.yml" >"$work/out/crds/network-attachment-definitions.yaml"
grep -q 'network-attachment-definitions.k8s.cni.cncf.io' "$work/out/crds/network-attachment-definitions.yaml" ||
  die "no NetworkAttachmentDefinition CRD at the top of $MULTUS_MODULE's deployments/multus-daemonset.yml"
log "multus $MULTUS_VERSION built in $((SECONDS - t)) s"
t=$SECONDS
w=$(src "$WHEREABOUTS_MODULE@$WHEREABOUTS_VERSION")
(cd "$w" && CGO_ENABLED=0 GOFLAGS="-buildvcs=false -mod=mod" go build -trimpath -gcflags=all=-dwarf=false -ldflags='-s -w' -o "$work/out/bin/whereabouts" ./cmd/) ||
  die "building whereabouts $WHEREABOUTS_VERSION failed"
cp "$w"/doc/crds/whereabouts.cni.cncf.io_*.yaml "$work/out/crds/"
log "whereabouts $WHEREABOUTS_VERSION built in $((SECONDS - t)) s"
mkdir -p "$work/layer/usr/bin"
cp "$work/out/bin/multus-shim" "$work/out/bin/whereabouts" "$work/layer/opt/cni/bin/"
cp "$work/out/bin/multus-daemon" "$work/layer/usr/bin/"
find "$work/layer" -type d -exec chmod 755 {} +
(cd "$work/layer" && find . -mindepth 1 | LC_ALL=C sort | cpio -o -H newc -R 0:0 --quiet) >"$work/out/cni.cpio"
printf 'multus=%s@%s\nwhereabouts=%s@%s\nrev=%s\n' "$MULTUS_MODULE" "$MULTUS_VERSION" "$WHEREABOUTS_MODULE" "$WHEREABOUTS_VERSION" "$RECIPE_REV" >"$work/out/stamp"
rm -rf "$dir"
mv "$work/out" "$dir"
log "done: $(du -sh "$dir" | cut -f1) in $dir"
echo "$dir"
