#!/usr/bin/env bash
# Builds, or reuses from the cache, CoreDNS for the guest nodes: the cluster
# DNS that real clusters run, so that names of headless Services resolve in
# the bed's pods exactly as they do there (the nccl feature's ranks find
# rank 0 as <job>-0.<service>; nothing else in the bed needs DNS).
#
# Built from its Go module at a pinned version with only the plugins the bed
# uses (plugin.cfg trimmed, `go generate`'s directives step re-run), which
# keeps the binary small enough for the guests' initramfs.
#
# Prints the cache directory on stdout: bin/coredns (static) and
# coredns.cpio (/usr/bin/coredns, an initramfs layer).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../versions.sh
. "$here/../versions.sh"

COREDNS_MODULE=github.com/coredns/coredns
COREDNS_VERSION=v1.12.4
# bind: listen on the node IP only; kubernetes: the cluster.local zone from
# Services and EndpointSlices; errors/log: what a person debugging reads;
# cache; health/ready: the usual liveness endpoints.
COREDNS_PLUGINS="bind ready health errors log cache kubernetes"
RECIPE_REV=1
dir=$RDMASUITE_CACHE/coredns-$COREDNS_VERSION-r$RECIPE_REV

log() { echo "coredns: $*" >&2; }
die() { log "ERROR: $*"; exit 1; }

mkdir -p "$RDMASUITE_CACHE"
exec 9>"$RDMASUITE_CACHE/.coredns-build.lock"
flock -w 900 9 || die "another build holds $RDMASUITE_CACHE/.coredns-build.lock"
if [[ -f $dir/stamp ]]; then
  echo "$dir"
  exit 0
fi
work=$(mktemp -d "$RDMASUITE_CACHE/.coredns-build.XXXXXX")
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT
t=$SECONDS
src=$(GOFLAGS=-buildvcs=false go mod download -json "$COREDNS_MODULE@$COREDNS_VERSION" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
[[ -n $src && -d $src ]] || die "go mod download $COREDNS_MODULE@$COREDNS_VERSION gave no module directory (is the Go module proxy reachable?)"
cp -r "$src" "$work/src"
chmod -R u+w "$work/src"
cd "$work/src"
# Keep plugin.cfg's order (it is the plugin chain's order) for the chosen plugins.
pattern=$(echo "$COREDNS_PLUGINS" | tr ' ' '|')
grep -E "^($pattern):" plugin.cfg >plugin.cfg.bed || die "plugin.cfg has none of: $COREDNS_PLUGINS"
[[ $(wc -l <plugin.cfg.bed) -eq $(echo "$COREDNS_PLUGINS" | wc -w) ]] || die "plugin.cfg lacks some of: $COREDNS_PLUGINS ($(tr '\n' ' ' <plugin.cfg.bed))"
mv plugin.cfg.bed plugin.cfg
GOFLAGS=-buildvcs=false go run directives_generate.go || die "regenerating CoreDNS's plugin list failed"
mkdir -p "$work/out/bin" "$work/layer/usr/bin"
CGO_ENABLED=0 GOFLAGS=-buildvcs=false go build -trimpath -gcflags=all=-dwarf=false -ldflags='-s -w' -o "$work/out/bin/coredns" . ||
  die "building coredns $COREDNS_VERSION failed"
"$work/out/bin/coredns" -plugins | grep -q kubernetes || die "the built coredns has no kubernetes plugin"
cp "$work/out/bin/coredns" "$work/layer/usr/bin/"
find "$work/layer" -type d -exec chmod 755 {} +
(cd "$work/layer" && find . -mindepth 1 | LC_ALL=C sort | cpio -o -H newc -R 0:0 --quiet) >"$work/out/coredns.cpio"
printf 'coredns=%s@%s\nplugins=%s\nrev=%s\n' "$COREDNS_MODULE" "$COREDNS_VERSION" "$COREDNS_PLUGINS" "$RECIPE_REV" >"$work/out/stamp"
cd /
rm -rf "$dir"
mv "$work/out" "$dir"
log "coredns $COREDNS_VERSION built in $((SECONDS - t)) s: $(du -sh "$dir/bin/coredns" | cut -f1)"
echo "$dir"
