package node

import (
	"reflect"
	"strings"
	"testing"
)

func collectTree(t *testing.T, trees ...string) Report {
	t.Helper()
	r, err := Collect(Options{HostRoot: buildTree(t, trees...)})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func device(t *testing.T, r Report, name string) Device {
	t.Helper()
	for _, d := range r.RDMA.Devices {
		if d.Name == name {
			return d
		}
	}
	t.Fatalf("no device %s", name)
	return Device{}
}

func TestHostConfigPCIe(t *testing.T) {
	r := collectTree(t, "base.tree", "healthy.tree", "hostcfg.tree")
	d0 := device(t, r, "mlx5_0")
	if d0.BoardID != "MT_0000000222" || d0.PCIe == nil || d0.PCIe.Path == nil || d0.PCIe.NUMANode != 0 {
		t.Fatalf("mlx5_0: board %q pcie %+v", d0.BoardID, d0.PCIe)
	}
	if n, capped := d0.PCIe.Path.Capped(); capped || n.CurGbps() != 252.1 {
		t.Fatalf("mlx5_0 capped=%v at %v Gb/s, want uncapped Gen4 x16", capped, n.CurGbps())
	}
	d1 := device(t, r, "mlx5_1")
	n, capped := d1.PCIe.Path.Capped()
	if !capped || n.CurGbps() != 126 || n.Address != "0000:02:00.0" || d1.PCIe.NUMANode != 1 {
		t.Fatalf("mlx5_1 capped=%v by %v, numa %d; want capped at 126 Gb/s by its own link, NUMA 1", capped, n, d1.PCIe.NUMANode)
	}
	// The bond has its own PCI function but no link attributes in the
	// fixture: unknown, with the path.
	db := device(t, r, "mlx5_bond_0")
	if _, all := db.PCIe.Path.Narrowest(); all || !strings.Contains(db.PCIe.Path.Links[0].Unknown, "current_link_speed absent") {
		t.Fatalf("bond pcie %+v: want unknown naming the missing file", db.PCIe.Path)
	}
}

func TestHostConfigPorts(t *testing.T) {
	r := collectTree(t, "base.tree", "healthy.tree", "hostcfg.tree")
	c := port(t, r, "mlx5_0", 1).Config
	if c.LID != "0x1a" || c.SMLID != "0x1" || c.SMSL != "0" || !reflect.DeepEqual(c.PKeys, []string{"0xffff", "0x7fff"}) || c.NetdevMTU != 4092 || c.ActiveMTU != 0 {
		t.Fatalf("mlx5_0/1 config %+v", c)
	}
	if c := port(t, r, "mlx5_1", 1).Config; c.LID != "0x0" || c.SMLID != "0x0" {
		t.Fatalf("mlx5_1/1 config %+v", c)
	}
	c = port(t, r, "mlx5_bond_0", 1).Config
	if c.Source != "/sys/class/infiniband/mlx5_bond_0/ports/1 and /sys/class/net/bond0" {
		t.Fatalf("bond config source %q", c.Source)
	}
	if c.NetdevMTU != 1500 || c.ActiveMTU != 1024 {
		t.Fatalf("bond MTU %d active %d, want 1500 / 1024", c.NetdevMTU, c.ActiveMTU)
	}
	want := []GID{
		{Index: 0, GID: "fe80:0000:0000:0000:0e42:a1ff:fe2d:a9f0", Type: "IB/RoCE v1", Netdev: "bond0"},
		{Index: 1, GID: "fe80:0000:0000:0000:0e42:a1ff:fe2d:a9f0", Type: "RoCE v2", Netdev: "bond0"},
		{Index: 2, GID: "0000:0000:0000:0000:0000:ffff:ac1b:0a05", Type: "IB/RoCE v1", Netdev: "bond0", IP: "172.27.10.5"},
		{Index: 3, GID: "0000:0000:0000:0000:0000:ffff:ac1b:0a05", Type: "RoCE v2", Netdev: "bond0", IP: "172.27.10.5"},
	}
	if !reflect.DeepEqual(c.GIDs, want) {
		t.Fatalf("GIDs %+v\nwant %+v", c.GIDs, want)
	}
	if c.ECN == nil || !reflect.DeepEqual(c.ECN.NP, []int{3}) || len(c.ECN.RP) != 0 {
		t.Fatalf("ECN %+v", c.ECN)
	}
	if c.PFC == nil || !reflect.DeepEqual(c.PFC.Enabled, []int{3}) || c.PFC.Trust != "dscp" {
		t.Fatalf("PFC %+v", c.PFC)
	}
	// Without the hostcfg files: every fact unknown with its path, none
	// invented.
	r = collectTree(t, "base.tree", "healthy.tree")
	c = port(t, r, "mlx5_bond_0", 1).Config
	if c.ECN != nil || c.PFC != nil || len(c.Unknown) < 3 || !strings.Contains(strings.Join(c.Unknown, ";"), "bond0/ecn/roce_np/enable absent") {
		t.Fatalf("bare bond config %+v", c)
	}
	if c := port(t, r, "mlx5_0", 1).Config; c.LID != "" || !strings.Contains(strings.Join(c.Unknown, ";"), "ports/1/sm_lid absent") {
		t.Fatalf("bare IB config %+v", c)
	}
}

// The kernel's RoCE rule: netdev MTU less 96 header bytes, rounded down
// to an IB MTU.
func TestRoCEActiveMTU(t *testing.T) {
	for mtu, want := range map[int]int{9000: 4096, 4200: 4096, 4192: 4096, 4191: 2048, 1500: 1024, 1120: 1024, 1119: 512, 1000: 512, 352: 256, 300: 0} {
		if got := RoCEActiveMTU(mtu); got != want {
			t.Errorf("RoCEActiveMTU(%d) = %d, want %d", mtu, got, want)
		}
	}
}
