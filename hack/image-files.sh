#!/usr/bin/env bash
# image-files.sh BINARY: prints the SRC=DST file mappings an image needs to run
# BINARY: the binary, the shared libraries ldd finds, and, when it links
# libibverbs, the verbs providers and their .driver files, which libibverbs
# dlopens at run time (ldd cannot see them).
set -euo pipefail
bin=$1
echo "$bin=/usr/local/bin/$(basename "$bin")"
if ! ldd "$bin" >/dev/null 2>&1; then exit 0; fi   # static
libs=$(ldd "$bin" | awk '/=> \// {print $3} /^\t\// {print $1}')
if grep -q libibverbs <<<"$libs"; then
  for p in /usr/lib/x86_64-linux-gnu/libibverbs/*.so; do
    libs+=$'\n'"$p"
    libs+=$'\n'$(ldd "$p" | awk '/=> \// {print $3}')
  done
  for d in /etc/libibverbs.d/*.driver; do echo "$d=$d"; done
fi
for l in $(sort -u <<<"$libs"); do
  echo "$(readlink -f "$l")=$l"
done
