# Pinned versions for the local test beds. Sourced by the hack/ scripts.
# Kubernetes minor matches client-go in go.mod (v0.35.x): keep them together.
K8S_VERSION=v1.35.4
# etcd is Debian's etcd-server from ETCD_DEBIAN_SUITE, not built from source
# (building it took a seventh of a cold run's Kubernetes step on
# two cores). Debian stable keeps one etcd series for its life: trixie's is
# 3.5, which Kubernetes 1.35 supports (its own pin is 3.6). hack/build-k8s.sh
# refuses any other series and records the package version it got.
ETCD_DEBIAN_SUITE=trixie
ETCD_SERIES=3.5
# Where built binaries and images are cached, keyed by version, outside the repo.
RDMASUITE_CACHE=${RDMASUITE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/rdmasuite}
# BUILD_REV changes when the way the binaries are built changes (flags), so a
# cache from an older recipe is not reused.
K8S_BUILD_REV=2
K8S_BIN_DIR=$RDMASUITE_CACHE/k8s-$K8S_VERSION-r$K8S_BUILD_REV
ETCD_BIN_DIR=$RDMASUITE_CACHE/etcd-debian-$ETCD_DEBIAN_SUITE-$ETCD_SERIES
# State of a running bed (certificates, node dirs, logs, pids). Not cached.
BED_DIR=${BED_DIR:-/var/lib/rdmasuite-bed}
