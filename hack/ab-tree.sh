#!/usr/bin/env bash
# ab-tree.sh PATCH DEST: copies this tree as it is (tracked and new files,
# not only the last commit) to DEST and applies PATCH there (`patch -p1`):
# the B side of an A/B (make bench-verbs, make bench-loop-shapes AB_PATCH).
set -euo pipefail
patch_file=$(realpath "$1")
mkdir -p "$2"
cd "$(dirname "$0")/.."
git ls-files -co --exclude-standard -z | tar --null -T - -cf - | tar -C "$2" -xf -
(cd "$2" && patch -s -p1 <"$patch_file")
