#!/usr/bin/env bash
# The README's test command (`make test`), also what CI runs: installs what the
# beds need, checks formatting and vet, runs the unit tests, brings the local
# Kubernetes bed up, runs the suite against it, and tears the bed down, also
# when anything fails. Prints the bed timings it measured.
set -euo pipefail
cd "$(dirname "$0")/.."
. hack/versions.sh
export BED_DIR
t_start=$SECONDS
step() { printf '\n=== %s\n' "$*"; }

step "dependencies"
hack/install-deps.sh

step "lint (gofmt, go vet)"
make -s lint

step "unit tests"
make -s unit

step "Kubernetes binaries ($K8S_VERSION, etcd $ETCD_VERSION)"
t=$SECONDS
out=$(hack/build-k8s.sh 2>&1) || { echo "$out"; exit 1; }
build_s=$((SECONDS - t))
if grep -q 'building' <<<"$out"; then build_note="built in ${build_s} s (cold)"; else build_note="cached in $RDMASUITE_CACHE"; fi
echo "binaries: $build_note"

cleanup() {
  rc=$?
  hack/bed.sh down || true
  exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

step "bed up"
t=$SECONDS
hack/bed.sh up
up1_s=$((SECONDS - t))

step "a second bed-up while one runs is refused"
if msg=$(hack/bed.sh up 2>&1); then echo "second bed-up succeeded: $msg"; exit 1; fi
grep -q 'already running' <<<"$msg" || { echo "unexpected refusal message: $msg"; exit 1; }
echo "refused: $(tail -1 <<<"$msg")"

step "suite against the bed"
t=$SECONDS
make -s e2e
e2e_s=$((SECONDS - t))

step "bed down leaves nothing behind"
hack/bed.sh down
hack/bed.sh leftovers

step "warm bed up (binaries and images cached) and down"
t=$SECONDS
hack/bed.sh up >/dev/null
up2_s=$((SECONDS - t))
hack/bed.sh down
hack/bed.sh leftovers
trap - EXIT

cat <<SUMMARY

=== timings
kubernetes binaries : $build_note
bed up (first)      : ${up1_s} s
bed up (warm)       : ${up2_s} s
suite on the bed    : ${e2e_s} s
make test total     : $((SECONDS - t_start)) s
SUMMARY
