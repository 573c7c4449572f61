package stall

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/rdmasuite/rdmasuite/workloads/node"
)

// FSInfo is the filesystem under the probe's directory: statfs(2)'s magic
// (what the kernel says it is) and the mount table's line (what it is
// mounted from, with which options). The suite refuses a result whose
// volume is not NFS; proto=rdma in Options says the transport.
type FSInfo struct {
	// Type is the mount table's fstype (nfs, nfs4, ext4, …), or the
	// magic's name when no mount line matched.
	Type string `json:"type"`
	// Magic is statfs' f_type in hex, e.g. 0x6969 for NFS (v3 and v4).
	Magic     string `json:"magic"`
	MagicName string `json:"magicName"`
	// Source is the mounted device, e.g. server:/export.
	Source string `json:"source,omitempty"`
	// Options are the superblock options (for NFS: vers, proto, port, …).
	Options      string `json:"options,omitempty"`
	MountOptions string `json:"mountOptions,omitempty"`
	MountPoint   string `json:"mountPoint,omitempty"`
	// RDMA: the options carry proto=rdma or proto=rdma6.
	RDMA  bool   `json:"rdma"`
	Error string `json:"error,omitempty"`
}

// NFSMagic is statfs' f_type for every NFS version.
const NFSMagic = 0x6969

// fsMagics names statfs f_type values (linux/magic.h).
var fsMagics = map[int64]string{
	NFSMagic:   "nfs",
	0xEF53:     "ext4", // ext2, ext3 and ext4 share it
	0x01021994: "tmpfs",
	0x794c7630: "overlayfs",
	0x58465342: "xfs",
	0x9123683E: "btrfs",
	0x2FC12FC1: "zfs",
	0x00C36400: "ceph",
	0xFF534D42: "cifs",
	0xFE534D42: "smb2",
	0x65735546: "fuse",
	0x0BD00BD0: "lustre",
	0x47504653: "gpfs",
	0x19830326: "beegfs",
	0x858458F6: "ramfs",
	0x73717368: "squashfs",
	0x9FA0:     "proc",
	0x62656572: "sysfs",
	0x6E667364: "nfsd",
}

// MagicName names a statfs magic ("unknown" when not in the table).
func MagicName(magic int64) string {
	if n, ok := fsMagics[magic]; ok {
		return n
	}
	return "unknown"
}

// MountEntry is one /proc/self/mountinfo line.
type MountEntry struct {
	MountPoint   string
	MountOptions string
	FSType       string
	Source       string
	SuperOptions string
}

// ParseMountinfo parses mountinfo(5) lines: "ID PARENT MAJ:MIN ROOT
// MOUNTPOINT OPTIONS [OPTIONAL…] - FSTYPE SOURCE SUPEROPTIONS", undoing
// the kernel's octal escapes (\040 for a space). Malformed lines are
// skipped.
func ParseMountinfo(data string) []MountEntry {
	var out []MountEntry
	for _, line := range strings.Split(data, "\n") {
		f := strings.Fields(line)
		sep := -1
		for i := 6; i < len(f); i++ {
			if f[i] == "-" {
				sep = i
				break
			}
		}
		if sep < 0 || len(f) < sep+3 {
			continue
		}
		e := MountEntry{MountPoint: node.UnescapeMount(f[4]), MountOptions: f[5], FSType: f[sep+1], Source: node.UnescapeMount(f[sep+2])}
		if len(f) > sep+3 {
			e.SuperOptions = f[sep+3]
		}
		out = append(out, e)
	}
	return out
}

// MountFor returns the entry whose mount point is the longest prefix of
// path (on a path-component boundary). Of equal mount points the last
// wins: a later mount covers an earlier one.
func MountFor(entries []MountEntry, path string) (MountEntry, bool) {
	best, found := MountEntry{}, false
	for _, e := range entries {
		if !underMount(path, e.MountPoint) {
			continue
		}
		if !found || len(e.MountPoint) >= len(best.MountPoint) {
			best, found = e, true
		}
	}
	return best, found
}

func underMount(path, mp string) bool {
	if mp == "/" || path == mp {
		return true
	}
	return strings.HasPrefix(path, strings.TrimSuffix(mp, "/")+"/")
}

// HasRDMAProto reports whether mount options select the RDMA transport.
func HasRDMAProto(options string) bool {
	for _, o := range strings.Split(options, ",") {
		if p, ok := strings.CutPrefix(o, "proto="); ok && strings.HasPrefix(p, "rdma") {
			return true
		}
	}
	return false
}

// CollectFSInfo describes the filesystem dir is on.
func CollectFSInfo(dir string) FSInfo {
	return collectFSInfo(dir, "/proc/self/mountinfo")
}

func collectFSInfo(dir, mountinfo string) FSInfo {
	var info FSInfo
	path, err := filepath.Abs(dir)
	if err == nil {
		if resolved, rerr := filepath.EvalSymlinks(path); rerr == nil {
			path = resolved
		}
	}
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		info.Error = fmt.Sprintf("statfs %s: %v", path, err)
	} else {
		magic := int64(st.Type) & 0xFFFFFFFF
		info.Magic = "0x" + strconv.FormatInt(magic, 16)
		info.MagicName = MagicName(magic)
		info.Type = info.MagicName
	}
	data, err := os.ReadFile(mountinfo)
	if err != nil {
		if info.Error == "" {
			info.Error = fmt.Sprintf("read %s: %v", mountinfo, err)
		}
		return info
	}
	if e, ok := MountFor(ParseMountinfo(string(data)), path); ok {
		info.Type, info.Source, info.MountPoint = e.FSType, e.Source, e.MountPoint
		info.Options, info.MountOptions = e.SuperOptions, e.MountOptions
		info.RDMA = HasRDMAProto(e.SuperOptions) || HasRDMAProto(e.MountOptions)
	}
	return info
}
