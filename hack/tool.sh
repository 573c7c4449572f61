#!/usr/bin/env bash
# Builds and runs one of the bed-only tools in hack/tools by name, from any
# directory: they live in their own Go module (hack/go.mod) so the product's
# go.mod holds only what the product uses.
#   hack/tool.sh expectresults -results R.json -expect hack/guest-expect.txt
set -euo pipefail
name=$1; shift
hack=$(cd "$(dirname "$0")" && pwd)
bin=${HACK_TOOLS_BIN:-$hack/bin}
mkdir -p "$bin"
(cd "$hack" && go build -o "$bin/$name" "./tools/$name")
exec "$bin/$name" "$@"
