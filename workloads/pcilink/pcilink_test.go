package pcilink

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fn writes one PCI function's link attributes under root, the way sysfs
// shows them; an empty speed leaves the attributes out (not PCIe).
func fn(t *testing.T, root, dir, cur, curW, max, maxW string) {
	t.Helper()
	d := filepath.Join(root, dir)
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
	if cur == "" {
		return
	}
	for name, v := range map[string]string{"current_link_speed": cur, "current_link_width": curW, "max_link_speed": max, "max_link_width": maxW} {
		if err := os.WriteFile(filepath.Join(d, name), []byte(v+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// A ConnectX-3 EN (CX311A) in a Raspberry Pi CM4's Gen2 x1 slot, from
// geerlingguy/raspberry-pi-pcie-devices#143's lspci -vv: LnkCap Speed
// 8GT/s, Width x4; LnkSta Speed 5GT/s, Width x1. sysfs spells those
// "8.0 GT/s PCIe" / "5.0 GT/s PCIe" on the 5.x kernels of that report.
func TestDowntrainedConnectX3IsCappedAtTheNarrowestLink(t *testing.T) {
	root := t.TempDir()
	fn(t, root, "sys/devices/platform/scb/fd500000.pcie/pci0000:00/0000:00:00.0", "5.0 GT/s PCIe", "1", "5.0 GT/s PCIe", "1")
	fn(t, root, "sys/devices/platform/scb/fd500000.pcie/pci0000:00/0000:00:00.0/0000:01:00.0", "5.0 GT/s PCIe", "1", "8.0 GT/s PCIe", "4")
	p, err := Read(root, "/sys/devices/platform/scb/fd500000.pcie/pci0000:00/0000:00:00.0/0000:01:00.0")
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Links) != 2 || p.Links[0].Address != "0000:00:00.0" || p.Links[1].Address != "0000:01:00.0" {
		t.Fatalf("links %+v, want the root port then the NIC", p.Links)
	}
	n, capped := p.Capped()
	if !capped || n.CurGbps() != 4 {
		t.Fatalf("capped=%v by %v (%v Gb/s), want capped at 4 Gb/s (x1 × 5 GT/s × 8b/10b)", capped, n, n.CurGbps())
	}
	d, _ := p.DeviceMax()
	if d.MaxGbps() != 31.5 {
		t.Fatalf("device max %v Gb/s, want 31.5 (x4 × 8 GT/s × 128b/130b)", d.MaxGbps())
	}
	if !p.Links[1].Degraded() || p.Links[0].Degraded() {
		t.Fatalf("degraded NIC=%v root=%v, want only the NIC's link below its own maximum", p.Links[1].Degraded(), p.Links[0].Degraded())
	}
}

// A ConnectX-6 Dx at b3:00.0 (NVIDIA/l2fwd-nv#6's lspci: LnkCap Speed
// 16GT/s, Width x16, NUMA node 0), trained at its maximum, behind a Gen4
// x16 root port: 252 Gb/s allowed, nothing capped.
func TestFullWidthConnectX6DxIsNotCapped(t *testing.T) {
	root := t.TempDir()
	fn(t, root, "sys/devices/pci0000:b0/0000:b0:02.0", "16.0 GT/s PCIe", "16", "16.0 GT/s PCIe", "16")
	fn(t, root, "sys/devices/pci0000:b0/0000:b0:02.0/0000:b3:00.0", "16.0 GT/s PCIe", "16", "16.0 GT/s PCIe", "16")
	p, err := Read(root, "/sys/devices/pci0000:b0/0000:b0:02.0/0000:b3:00.0")
	if err != nil {
		t.Fatal(err)
	}
	n, capped := p.Capped()
	if capped || n.CurGbps() != 252.1 {
		t.Fatalf("capped=%v at %v Gb/s, want not capped, 252.1 Gb/s", capped, n.CurGbps())
	}
}

// pciutils/pciutils#128: a ConnectX-5 Socket Direct whose speed lspci
// (and sysfs, "Unknown") cannot name. Unknown is never "not capped" by
// silence: Narrowest says the path is not fully known.
func TestUnknownSpeedIsUnknownNotUncapped(t *testing.T) {
	root := t.TempDir()
	fn(t, root, "sys/devices/pci0000:16/0000:16:02.0", "16.0 GT/s PCIe", "16", "16.0 GT/s PCIe", "16")
	fn(t, root, "sys/devices/pci0000:16/0000:16:02.0/0000:17:00.0", "Unknown", "8", "Unknown", "8")
	p, err := Read(root, "/sys/devices/pci0000:16/0000:16:02.0/0000:17:00.0")
	if err != nil {
		t.Fatal(err)
	}
	if _, all := p.Narrowest(); all {
		t.Fatal("a path with an unknown speed was reported fully known")
	}
	if _, capped := p.Capped(); capped {
		t.Fatal("an unknown link was called capped")
	}
	if !strings.Contains(p.Links[1].Unknown, "current_link_speed: Unknown") {
		t.Fatalf("unknown = %q, want the attribute and its text", p.Links[1].Unknown)
	}
	// A function without the attributes at all (not PCIe) names the path.
	root2 := t.TempDir()
	fn(t, root2, "sys/devices/pci0000:00/0000:00:03.0", "", "", "", "")
	p, _ = Read(root2, "/sys/devices/pci0000:00/0000:00:03.0")
	if !strings.Contains(p.Links[0].Unknown, "/sys/devices/pci0000:00/0000:00:03.0/current_link_speed absent") {
		t.Fatalf("unknown = %q, want the missing path", p.Links[0].Unknown)
	}
}

// Kernels before 5.3 print "8 GT/s" without "PCIe"; both spellings parse,
// and nothing else does.
func TestParseSpeed(t *testing.T) {
	for in, want := range map[string]float64{"8 GT/s": 8, "2.5 GT/s": 2.5, "16.0 GT/s PCIe": 16, "32.0 GT/s PCIe\n": 32, "64.0 GT/s PCIe": 64} {
		if v, ok := ParseSpeed(in); !ok || v != want {
			t.Errorf("ParseSpeed(%q) = %v, %v; want %v", in, v, ok, want)
		}
	}
	for _, in := range []string{"Unknown", "Unknown speed", "", "0 GT/s", "fast"} {
		if _, ok := ParseSpeed(in); ok {
			t.Errorf("ParseSpeed(%q) accepted", in)
		}
	}
	if Gbps(32, 16) != 504.1 || Gbps(2.5, 1) != 2 || Gbps(64, 16) != 968 {
		t.Fatalf("Gbps: Gen5 x16 %v, Gen1 x1 %v, Gen6 x16 %v", Gbps(32, 16), Gbps(2.5, 1), Gbps(64, 16))
	}
}

// An SR-IOV VF (the hostdev variant's device) has no link of its own: the
// physical function's path is read.
func TestVirtualFunctionReadsItsPhysicalFunction(t *testing.T) {
	root := t.TempDir()
	fn(t, root, "sys/devices/pci0000:00/0000:00:01.0", "16.0 GT/s PCIe", "16", "16.0 GT/s PCIe", "16")
	fn(t, root, "sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0", "16.0 GT/s PCIe", "8", "16.0 GT/s PCIe", "16")
	fn(t, root, "sys/devices/pci0000:00/0000:00:01.0/0000:01:00.2", "", "", "", "")
	if err := os.Symlink("../0000:01:00.0", filepath.Join(root, "sys/devices/pci0000:00/0000:00:01.0/0000:01:00.2/physfn")); err != nil {
		t.Fatal(err)
	}
	p, err := Read(root, "/sys/devices/pci0000:00/0000:00:01.0/0000:01:00.2")
	if err != nil {
		t.Fatal(err)
	}
	if p.PhysFn != "0000:01:00.0" || p.Device != "0000:01:00.2" {
		t.Fatalf("physfn %q device %q", p.PhysFn, p.Device)
	}
	if n, capped := p.Capped(); !capped || n.Address != "0000:01:00.0" || n.CurGbps() != 126 {
		t.Fatalf("capped=%v by %v, want the PF's x8 link (126 Gb/s)", capped, n)
	}
	if _, err := Read(root, "/sys/devices/virtual/net/lo"); err == nil {
		t.Fatal("a path under no host bridge was read")
	}
}

// config writes a function's config space with one ACS capability at
// 0x148 (after an AER capability at 0x100), or only the 256 bytes a
// non-root reader gets.
func config(t *testing.T, root, dir string, acsCtl uint16, full bool) {
	t.Helper()
	b := make([]byte, 256)
	if full {
		b = make([]byte, 4096)
		binary.LittleEndian.PutUint32(b[0x100:], 0x0001|1<<16|0x148<<20) // AER v1, next 0x148
		binary.LittleEndian.PutUint32(b[0x148:], 0x000d|1<<16|0x000<<20) // ACS v1, last
		binary.LittleEndian.PutUint16(b[0x14c:], 0x7f)                   // ACSCap: all
		binary.LittleEndian.PutUint16(b[0x14e:], acsCtl)
	}
	if err := os.MkdirAll(filepath.Join(root, dir), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, dir, "config"), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// A PLX PEX 8725 downstream port as HeyMeco/Rockchip-pcie-devices#6's
// lspci -vvv shows it: "ACSCtl: SrcValid+ TransBlk- ReqRedir+ CmpltRedir+
// UpstreamFwd+ EgressCtrl- DirectTrans-" (0x1d) redirects peer-to-peer;
// the same port with ACS cleared does not; 256 bytes say why not known.
func TestACSControl(t *testing.T) {
	root := t.TempDir()
	config(t, root, "sys/devices/pci0000:00/0000:02:08.0", 0x1d, true)
	a := ReadACS(root, "/sys/devices/pci0000:00/0000:02:08.0")
	if !a.Present || !a.Redirects() || a.Control != 0x1d {
		t.Fatalf("%+v: want ACS present, control 0x1d, redirecting", a)
	}
	if s := a.String(); !strings.Contains(s, "ReqRedir+ CmpltRedir+") {
		t.Fatalf("String() = %q", s)
	}
	config(t, root, "sys/devices/pci0000:00/0000:02:10.0", 0, true)
	if a := ReadACS(root, "/sys/devices/pci0000:00/0000:02:10.0"); !a.Present || a.Redirects() {
		t.Fatalf("%+v: want present, not redirecting", a)
	}
	config(t, root, "sys/devices/pci0000:00/0000:02:18.0", 0x1d, false)
	if a := ReadACS(root, "/sys/devices/pci0000:00/0000:02:18.0"); a.Unknown == "" || a.Redirects() || !strings.Contains(a.Unknown, "256 bytes") {
		t.Fatalf("%+v: want unknown (256 bytes readable), never redirecting", a)
	}
}
