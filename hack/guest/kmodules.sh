# install_kmodules KMOD ROOT KVER MODULE...: copies the named kernel modules
# and everything they depend on (depth-first over KMOD/modules.dep,
# dependencies first) into ROOT/usr/lib/modules and lists them in load order
# in ROOT/etc/guest-modules, for the guest init's insmod loop. Sourced by
# hack/guest/build.sh and hack/guestnode/build.sh (both hash this file into
# their cache stamp); the caller defines die().
install_kmodules() {
  local kmod=$1 root=$2 kver=$3 n m d
  shift 3
  local -A deps=() path=() seen=()
  local order=()
  while IFS=: read -r m d; do
    deps[$m]=$d
    n=${m##*/}
    path[${n%.ko*}]=$m
  done <"$kmod/modules.dep"
  _kmod_visit() {
    local m=$1 d
    [[ -n ${seen[$m]:-} ]] && return
    seen[$m]=1
    for d in ${deps[$m]}; do _kmod_visit "$d"; done
    order+=("$m")
  }
  for n in "$@"; do
    [[ -n ${path[$n]:-} ]] || die "kernel $kver has no module $n"
    _kmod_visit "${path[$n]}"
  done
  # busybox insmod wants plain .ko: compressed modules are unpacked (the
  # appended signature stays; the kernel does not force signatures).
  for m in "${order[@]}"; do
    n=${m##*/}
    case $m in
    *.ko) cp "$kmod/$m" "$root/usr/lib/modules/" ;;
    *.ko.xz) n=${n%.xz}; xz -dc "$kmod/$m" >"$root/usr/lib/modules/$n" ;;
    *.ko.zst) n=${n%.zst}; zstd -qdc "$kmod/$m" >"$root/usr/lib/modules/$n" ;;
    *) die "$m: unknown module compression" ;;
    esac
    echo "$n" >>"$root/etc/guest-modules"
  done
}

# install_ktree KMOD ROOT KVER MODULE...: copies the named modules and their
# dependencies, compressed and at their kernel paths, into
# ROOT/usr/lib/modules/KVER with a modules.dep of their own, for modules that
# must NOT load at boot but on demand through the kernel's modprobe helper
# (kmod's modprobe, /sbin/modprobe in the image): the NFS client and server
# stack, whose rpcrdma an NFS-over-RDMA mount pulls in by itself, as on a
# real node (seed 000's race). Modules already loaded by the boot list share
# names with their copies here, so modprobe skips them.
install_ktree() {
  local kmod=$1 root=$2 kver=$3 n m d
  shift 3
  local -A deps=() path=() seen=()
  while IFS=: read -r m d; do
    deps[$m]=$d
    n=${m##*/}
    path[${n%.ko*}]=$m
  done <"$kmod/modules.dep"
  _ktree_visit() {
    local m=$1 d
    [[ -n ${seen[$m]:-} ]] && return
    seen[$m]=1
    for d in ${deps[$m]}; do _ktree_visit "$d"; done
    mkdir -p "$root/usr/lib/modules/$kver/${m%/*}"
    cp "$kmod/$m" "$root/usr/lib/modules/$kver/$m"
  }
  for n in "$@"; do
    [[ -n ${path[$n]:-} ]] || die "kernel $kver has no module $n"
    _ktree_visit "${path[$n]}"
  done
  # modprobe must know the built-in modules (crc32, …) to skip them.
  cp "$kmod/modules.builtin" "$kmod/modules.builtin.modinfo" "$root/usr/lib/modules/$kver/"
  depmod -b "$root/usr" "$kver" || die "depmod of the on-demand module tree failed"
}
