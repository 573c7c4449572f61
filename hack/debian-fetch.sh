# debian_fetch DIR SUITE PKG[=VERSION]...: downloads the named .debs from
# Debian SUITE (e.g. trixie-backports) into DIR, from the same mirror the
# host's apt uses, through a private apt configuration (DIR/.apt), so the
# host's sources and package state are not touched. Sourced; the caller
# defines die().
debian_fetch() {
  local dir=$1 suite=$2 apt=$1/.apt mirror p
  shift 2
  mirror=$(sed -n 's/^URIs: *\([^ ]*\/debian\)$/\1/p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -1)
  [[ -n $mirror ]] || mirror=$(sed -n 's/^deb \(\[[^]]*\] \)\{0,1\}\(http[^ ]*\/debian\) .*/\2/p' /etc/apt/sources.list 2>/dev/null | head -1)
  [[ -n $mirror ]] || die "cannot find the Debian mirror in /etc/apt/sources.list{,.d/debian.sources}"
  mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial"
  echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $mirror $suite main" >"$apt/sources.list"
  cat >"$apt/apt.conf" <<CONF
Dir::Etc::sourcelist "$apt/sources.list";
Dir::Etc::sourceparts "-";
Dir::State::Lists "$apt/lists";
Dir::Cache "$apt/cache";
APT::Sandbox::User "root";
Acquire::Languages "none";
CONF
  APT_CONFIG=$apt/apt.conf timeout 600 apt-get -q update >&2 || die "apt-get update of $suite from $mirror failed"
  for p in "$@"; do
    (cd "$dir" && APT_CONFIG=$apt/apt.conf timeout 900 apt-get download -q "$p" >&2) ||
      die "cannot download $p from Debian $suite ($mirror)"
  done
  rm -rf "$apt"
}
