#!/bin/sh
# The OCI runtime the guests' containerd runs (BinaryName in up.sh's
# config.toml): Debian's crun, with one answer translated for containerd
# 1.6's runc shim.
#
# When a container's task delete outlives the CRI's 10 s event timeout
# (a writer on an NFS-over-RDMA mount exiting under TCG, run M of
# 2026-11-30), crun finishes the delete and removes the container's state
# after containerd gave up. Every retry then kills, then deletes, and crun
# 1.8.1 answers both for a container it no longer knows with its own words:
# kill "error opening file `…/status`: No such file or directory", delete
# "cannot open directory '…/ID': No such file or directory" (run N), where
# runc says the container "does not exist" — the words the shim
# (process.checkKillError, Init.delete) reads as "already gone". Without
# them the retries fail for good: the
# kubelet shows the exited container Running (the disruptive stage waited
# its 4 minutes on a writer that had printed its result), and a pause
# container's sandbox is never stopped (hack/guestnode/rdma-netns.sh, run Z).
#
# Only kill, delete and state are wrapped, and only their stderr: create,
# start and exec pass their stdio to the container and run crun as is.
case " $* " in
*" kill "* | *" delete "* | *" state "*) ;;
*) exec /usr/bin/crun "$@" ;;
esac
err=$(mktemp /tmp/crun-shim.XXXXXX) || exec /usr/bin/crun "$@"
/usr/bin/crun "$@" 2>"$err"
rc=$?
if [ "$rc" -ne 0 ] && grep -q -e 'status`: No such file or directory' -e "^cannot open directory '.*': No such file or directory" "$err"; then
	echo "container does not exist (crun: $(tr '\n' ' ' <"$err"))" >&2
else
	cat "$err" >&2
fi
rm -f "$err"
exit "$rc"
