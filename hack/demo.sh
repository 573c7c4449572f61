#!/usr/bin/env bash
# The main job on the local bed (`make demo`): bed up, the suite, bed down.
set -euo pipefail
cd "$(dirname "$0")/.."
. hack/versions.sh
export BED_DIR
trap 'hack/bed.sh down' EXIT
trap 'exit 130' INT TERM
hack/bed.sh up
make -s e2e
