package stall

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// mountinfoFixture is a pod's /proc/self/mountinfo: the NFS-over-RDMA
// volume at /data, a look-alike prefix /database, a tmpfs stacked inside
// /data, a mount point with an escaped space, a stacked remount at /srv
// (the later line wins), and a malformed line.
const mountinfoFixture = `1 0 253:1 / / rw,relatime shared:1 - ext4 /dev/vda1 rw,errors=remount-ro
22 1 0:21 / /proc rw,nosuid,nodev,noexec,relatime shared:12 - proc proc rw
650 1 0:55 / /data rw,relatime shared:300 master:7 - nfs4 192.168.1.10:/export/shared rw,vers=4.2,rsize=1048576,wsize=1048576,namlen=255,hard,proto=rdma,port=20049,timeo=600,retrans=2,sec=sys,clientaddr=192.168.1.21,local_lock=none,addr=192.168.1.10
651 1 8:16 / /database rw - ext4 /dev/sdb rw
700 650 0:58 / /data/scratch rw,nosuid - tmpfs tmpfs rw,size=65536k
710 1 0:60 /sub /mnt/with\040space rw - tmpfs tmpfs rw
720 1 0:61 / /srv rw - nfs 10.0.0.1:/old rw,vers=3,proto=tcp
721 1 0:62 / /srv rw - nfs 10.0.0.2:/new rw,vers=3,proto=rdma,port=20049
garbage line without separator
`

func TestParseMountinfoAndMountFor(t *testing.T) {
	entries := ParseMountinfo(mountinfoFixture)
	if len(entries) != 8 {
		t.Fatalf("%d entries: %+v", len(entries), entries)
	}
	for _, tc := range []struct {
		path, mountPoint, fsType, source string
		rdma                             bool
	}{
		{"/data", "/data", "nfs4", "192.168.1.10:/export/shared", true},
		{"/data/run-1/w", "/data", "nfs4", "192.168.1.10:/export/shared", true},
		{"/database/x", "/database", "ext4", "/dev/sdb", false},
		{"/data/scratch/x", "/data/scratch", "tmpfs", "tmpfs", false},
		{"/mnt/with space/a", "/mnt/with space", "tmpfs", "tmpfs", false},
		{"/srv/x", "/srv", "nfs", "10.0.0.2:/new", true},
		{"/tmp", "/", "ext4", "/dev/vda1", false},
		{"/data2/x", "/", "ext4", "/dev/vda1", false}, // /data is no prefix of /data2
	} {
		e, ok := MountFor(entries, tc.path)
		if !ok || e.MountPoint != tc.mountPoint || e.FSType != tc.fsType || e.Source != tc.source || HasRDMAProto(e.SuperOptions) != tc.rdma {
			t.Errorf("%s: %+v", tc.path, e)
		}
	}
	nfs, _ := MountFor(entries, "/data/x")
	if nfs.MountOptions != "rw,relatime" || !strings.Contains(nfs.SuperOptions, "port=20049") {
		t.Errorf("options %+v", nfs)
	}
	if _, ok := MountFor(ParseMountinfo("1 0 8:1 / /only rw - ext4 /dev/x rw\n"), "/elsewhere"); ok {
		t.Error("matched outside any mount point")
	}
}

func TestCollectFSInfo(t *testing.T) {
	dir := t.TempDir()
	// The real statfs, with a mount table that puts an NFS export at dir.
	table := filepath.Join(t.TempDir(), "mountinfo")
	line := "900 1 0:70 / " + strings.ReplaceAll(dir, " ", `\040`) + " rw,relatime - nfs4 nfs-server:/export rw,vers=4.1,proto=rdma,port=20049\n"
	if err := os.WriteFile(table, []byte(mountinfoFixture+line), 0o644); err != nil {
		t.Fatal(err)
	}
	info := collectFSInfo(filepath.Join(dir, "."), table)
	if info.Type != "nfs4" || info.Source != "nfs-server:/export" || info.MountPoint != dir || !info.RDMA || info.Error != "" {
		t.Fatalf("%+v", info)
	}
	if !strings.HasPrefix(info.Magic, "0x") || info.MagicName == "" {
		t.Fatalf("magic %+v", info)
	}
	// The real table: a temp dir is on some known filesystem, not NFS.
	real := CollectFSInfo(dir)
	if real.Error != "" || real.MountPoint == "" || !strings.HasPrefix(dir, strings.TrimSuffix(real.MountPoint, "/")) {
		t.Fatalf("%+v", real)
	}
	if MagicName(NFSMagic) != "nfs" || MagicName(0xEF53) != "ext4" || MagicName(0x01021994) != "tmpfs" || MagicName(0x794c7630) != "overlayfs" || MagicName(1) != "unknown" {
		t.Error("magic table")
	}
	if bad := CollectFSInfo("/nonexistent/dir"); !strings.Contains(bad.Error, "statfs") {
		t.Errorf("%+v", bad)
	}
}
