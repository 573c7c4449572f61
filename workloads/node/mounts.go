package node

import (
	"strconv"
	"strings"
)

// Mounts are the host's NFS mounts. An NFS mount with proto=rdma loads
// sunrpc, rpcrdma and the RDMA core on its own; made before MOFED is
// installed, it is what leaves seed 000's storage modules loaded.
type Mounts struct {
	// Source is the host path the table was read from ("" when none was
	// readable).
	Source string  `json:"source"`
	NFS    []Mount `json:"nfs"`
}

// Mount is one /proc/mounts entry.
type Mount struct {
	Device     string `json:"device"`
	MountPoint string `json:"mountPoint"`
	FSType     string `json:"fsType"`
	Options    string `json:"options"`
	// RDMA: the mount's transport is RDMA (proto=rdma or proto=rdma6).
	RDMA bool `json:"rdma"`
}

// mountTables are tried in order. Under a host root, /proc/mounts is a
// symlink to self/mounts, and "self" is the reading process — in a pod that
// is the pod's mount namespace, not the host's. PID 1's table is the host's.
var mountTables = []string{"/proc/1/mounts", "/proc/mounts"}

func collectMounts(h hostFS) Mounts {
	m := Mounts{NFS: []Mount{}}
	for _, src := range mountTables {
		data, err := h.readFile(src)
		if err != nil {
			continue
		}
		m.Source = src
		for _, mt := range parseMounts(string(data)) {
			if mt.FSType == "nfs" || mt.FSType == "nfs4" {
				m.NFS = append(m.NFS, mt)
			}
		}
		break
	}
	return m
}

// parseMounts parses fstab-format lines ("device mountpoint fstype options
// dump pass"), undoing the kernel's octal escapes (\040 for a space).
func parseMounts(data string) []Mount {
	var out []Mount
	for _, line := range strings.Split(data, "\n") {
		f := strings.Fields(line)
		if len(f) < 4 {
			continue
		}
		mt := Mount{Device: UnescapeMount(f[0]), MountPoint: UnescapeMount(f[1]), FSType: f[2], Options: f[3]}
		for _, opt := range strings.Split(mt.Options, ",") {
			if proto, ok := strings.CutPrefix(opt, "proto="); ok && strings.HasPrefix(proto, "rdma") {
				mt.RDMA = true
			}
		}
		out = append(out, mt)
	}
	return out
}

// UnescapeMount undoes the octal escapes (\040 for a space, …) the kernel
// writes into /proc/mounts and mountinfo fields.
func UnescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
