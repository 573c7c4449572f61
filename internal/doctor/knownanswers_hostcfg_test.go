package doctor

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/rdmasuite/rdmasuite/thresholds"
	"github.com/rdmasuite/rdmasuite/workloads/gputopo"
	"github.com/rdmasuite/rdmasuite/workloads/node"
	"github.com/rdmasuite/rdmasuite/workloads/pcilink"
)

// Host configuration as the node probe reports it. The shapes are those of
// workloads/node/testdata/hostcfg.tree and workloads/pcilink's tests,
// which are built from public listings: a ConnectX-6 Dx at PCIe 16GT/s x16
// (NVIDIA/l2fwd-nv#6), the same card trained x8 ((downgraded), as
// tenstorrent/tt-smi#67's lspci prints it), a PEX 8725 switch port with
// ACSCtl ReqRedir+ CmpltRedir+ (HeyMeco/Rockchip-pcie-devices#6), ibstat's
// Base lid / SM lid, show_gids' v1/v2 pairs per address.

func link(addr string, cur, curW int, max, maxW int) pcilink.Link {
	return pcilink.Link{Address: addr, Source: "/sys/devices/pci0000:b0/" + addr, CurGTs: float64(cur), CurWidth: curW, MaxGTs: float64(max), MaxWidth: maxW}
}

// hdrIB is a ConnectX-6 HDR InfiniBand device at PCIe Gen4 x16 with a
// swept port (LID, SM LID, default partition).
func hdrIB(name, addr string) node.Device {
	return node.Device{Name: name, HCAType: "MT4123", FWVersion: "20.39.1002", BoardID: "MT_0000000222",
		PCIe: &node.DevicePCIe{Address: addr, NUMANode: 0, Path: &pcilink.Path{Device: addr,
			Links: []pcilink.Link{link("0000:b0:02.0", 16, 16, 16, 16), link(addr, 16, 16, 16, 16)}}},
		Ports: []node.Port{{Port: 1, State: "4: ACTIVE", Active: true, LinkUp: true, RateGbps: 200, LinkLayer: "InfiniBand",
			Netdevs: []node.Netdev{{Name: "ib0", OperState: "up"}},
			Config:  &node.PortConfig{LID: "0x1a", SMLID: "0x1", SMSL: "0", PKeys: []string{"0xffff"}, NetdevMTU: 4092}}}}
}

// roce is a ConnectX-6 Dx RoCE device on netdev nd at MTU 9000 with a v1
// and a v2 GID for ip.
func roce(name, addr, nd, ip string) node.Device {
	mapped := "0000:0000:0000:0000:0000:ffff:" + ipHex(ip)
	return node.Device{Name: name, HCAType: "MT4125", FWVersion: "22.39.1002",
		PCIe: &node.DevicePCIe{Address: addr, NUMANode: 0, Path: &pcilink.Path{Device: addr,
			Links: []pcilink.Link{link("0000:b0:02.0", 16, 16, 16, 16), link(addr, 16, 16, 16, 16)}}},
		Ports: []node.Port{{Port: 1, State: "4: ACTIVE", Active: true, LinkUp: true, RateGbps: 100, LinkLayer: "Ethernet",
			Netdevs: []node.Netdev{{Name: nd, OperState: "up"}},
			Config: &node.PortConfig{NetdevMTU: 9000, ActiveMTU: 4096, GIDs: []node.GID{
				{Index: 0, GID: "fe80:0000:0000:0000:0e42:a1ff:fe2d:a9f0", Type: "IB/RoCE v1", Netdev: nd},
				{Index: 1, GID: "fe80:0000:0000:0000:0e42:a1ff:fe2d:a9f0", Type: "RoCE v2", Netdev: nd},
				{Index: 2, GID: mapped, Type: "IB/RoCE v1", Netdev: nd, IP: ip},
				{Index: 3, GID: mapped, Type: "RoCE v2", Netdev: nd, IP: ip}},
				ECN: &node.ECN{NP: []int{3}, RP: []int{3}, Source: "/sys/class/net/" + nd + "/ecn"},
				PFC: &node.PFC{Enabled: []int{3}, Trust: "dscp", Source: "/sys/class/net/" + nd + "/qos"}}}}}
}

func ipHex(ip string) string {
	var a, b, c, d int
	fmt.Sscanf(ip, "%d.%d.%d.%d", &a, &b, &c, &d)
	return fmt.Sprintf("%02x%02x:%02x%02x", a, b, c, d)
}

// fleet is n healthy nodes of one SKU, each with devs(i) as its devices.
func fleet(n int, sku string, pin thresholds.HostExpect, devs func(i int) []node.Device) State {
	s := healthy()
	s.Nodes, s.Pods, s.Hosts, s.SKUs = nil, nil, map[string]HostFacts{}, map[string]NodeSKU{}
	for i := 1; i <= n; i++ {
		name := fmt.Sprintf("gpu-%03d", i)
		s.Nodes = append(s.Nodes, rdmaNode(name))
		s.Pods = append(s.Pods, mofedPod(name), driverPod(name))
		h := healthyHost()
		h.Devices = devs(i)
		h.RDMADevices = nil
		for _, d := range h.Devices {
			h.RDMADevices = append(h.RDMADevices, d.Name)
		}
		s.Hosts[name] = h
		if sku != "" {
			s.SKUs[name] = NodeSKU{Name: sku, Host: pin}
		}
	}
	return s
}

func ibFleet(n int, edit func(i int, d []node.Device)) State {
	return fleet(n, "a100-hdr", thresholds.HostExpect{}, func(i int) []node.Device {
		d := []node.Device{hdrIB("mlx5_0", "0000:b3:00.0"), hdrIB("mlx5_1", "0000:c3:00.0")}
		if edit != nil {
			edit(i, d)
		}
		return d
	})
}

func roceFleet(n int, pin thresholds.HostExpect, edit func(i int, d []node.Device)) State {
	return fleet(n, "h100-roce", pin, func(i int) []node.Device {
		d := []node.Device{roce("mlx5_0", "0000:b3:00.0", "ens1f0", fmt.Sprintf("172.27.10.%d", i)), roce("mlx5_1", "0000:c3:00.0", "ens2f0", fmt.Sprintf("172.27.11.%d", i))}
		if edit != nil {
			edit(i, d)
		}
		return d
	})
}

var _ = answer(knownAnswer{rule: HostConfigDiffers, name: "16 healthy InfiniBand and RoCE nodes, all alike", source: "staged (hostcfg.tree shapes)", clean: true,
	state: func(*testing.T) State { return ibFleet(16, nil) }})

var _ = answer(knownAnswer{rule: RoCEMTULow, name: "RoCE fleet at MTU 9000, ECN and PFC on, lossless SKU pinned", source: "staged", clean: true,
	state: func(*testing.T) State {
		return roceFleet(8, thresholds.HostExpect{ActiveMTU: 4096, Lossless: true, Firmware: "22.39.1002", Source: "fabric design"}, nil)
	}})

var _ = answer(knownAnswer{rule: PCIeLinkCapped, name: "ConnectX-6 trained x8 of x16 (lspci: Width x8 (downgraded))", source: "tenstorrent/tt-smi#67 shape; workloads/pcilink tests",
	raises: true, node: "gpu-003", evidence: `mlx5_1 \(0000:c3:00.0\): narrowest PCIe link 0000:c3:00.0: 16GT/s x8 \(max 16GT/s x16\) allows 126\.0 Gb/s \(x8 × 16 GT/s × 128b/130b\); the device's own maximum allows 252\.1 Gb/s: below the ports' line rate \(mlx5_1/1 200 Gb/s\)`,
	state: func(*testing.T) State {
		return ibFleet(4, func(i int, d []node.Device) {
			if i == 3 {
				d[1].PCIe.Path.Links[1].CurWidth = 8
			}
		})
	}})

var _ = answer(knownAnswer{rule: PCIeLinkCapped, name: "a x8 card in a x16 slot, trained at its own maximum", source: "staged", raises: false,
	state: func(*testing.T) State {
		return ibFleet(2, func(i int, d []node.Device) {
			d[0].PCIe.Path.Links[1] = link("0000:b3:00.0", 16, 8, 16, 8)
		})
	}})

var _ = answer(knownAnswer{rule: NICGPUCrossSocket, name: "rail NIC on NUMA node 1, nearest GPU on node 0 (SYS)", source: "staged (gputopo's Classify)",
	raises: true, node: "gpu-002", evidence: `mlx5_1 \(0000:c3:00.0, NUMA node 1\): nearest GPU 0000:18:00.0 \(NUMA node 0\) is SYS`,
	state: func(*testing.T) State {
		return ibFleet(3, func(i int, d []node.Device) {
			if i == 2 {
				d[1].PCIe.NUMANode = 1
				d[1].PCIe.NearestGPU = &node.NearestGPU{Address: "0000:18:00.0", Level: gputopo.SYS, CrossSocket: true, NUMANode: 0, Why: "across NUMA nodes"}
			}
		})
	}})

var _ = answer(knownAnswer{rule: NICGPUCrossSocket, name: "GPU behind the same switch (PIX), ACS off", source: "staged", raises: false,
	state: func(*testing.T) State {
		return ibFleet(2, func(i int, d []node.Device) {
			d[0].PCIe.NearestGPU = &node.NearestGPU{Address: "0000:b4:00.0", Level: gputopo.PIX,
				ACS: []pcilink.ACS{{Address: "0000:b2:08.0", Present: true, Control: 0x01}}}
		})
	}})

var _ = answer(knownAnswer{rule: ACSRedirectsGPUNIC, name: "PEX 8725 port: ACSCtl SrcValid+ ReqRedir+ CmpltRedir+ UpstreamFwd+", source: "HeyMeco/Rockchip-pcie-devices#6",
	raises: true, node: "gpu-001", evidence: `mlx5_0 ↔ GPU 0000:b4:00.0 \(PIX\): bridge 0000:b2:08.0: ACSCtl SrcValid\+ ReqRedir\+ CmpltRedir\+ UpstreamFwd\+`,
	state: func(*testing.T) State {
		return ibFleet(2, func(i int, d []node.Device) {
			if i == 1 {
				d[0].PCIe.NearestGPU = &node.NearestGPU{Address: "0000:b4:00.0", Level: gputopo.PIX,
					ACS: []pcilink.ACS{{Address: "0000:b2:08.0", Source: "/sys/devices/pci0000:b0/0000:b0:02.0/0000:b1:00.0/0000:b2:08.0/config", Present: true, Control: 0x1d}}}
			}
		})
	}})

var _ = answer(knownAnswer{rule: ACSRedirectsGPUNIC, name: "ACS redirect on a bridge the GPU–NIC pair does not share (PHB: not read)", source: "staged", raises: false,
	state: func(*testing.T) State {
		return ibFleet(2, func(i int, d []node.Device) {
			d[0].PCIe.NearestGPU = &node.NearestGPU{Address: "0000:18:00.0", Level: gputopo.PHB}
		})
	}})

var _ = answer(knownAnswer{rule: RoCEMTULow, name: "one rail's netdev left at 1500 on a 9000 fabric (active 1024, SKU pins 4096)", source: "staged (RoCEActiveMTU, the kernel's rule)",
	raises: true, node: "gpu-004", evidence: `port mlx5_1/1: netdev ens2f0 MTU 1500 gives RoCE active MTU 1024, below SKU h100-roce's host.activeMTU 4096`,
	state: func(*testing.T) State {
		return roceFleet(5, thresholds.HostExpect{ActiveMTU: 4096, Source: "fabric design"}, func(i int, d []node.Device) {
			if i == 4 {
				d[1].Ports[0].Config.NetdevMTU, d[1].Ports[0].Config.ActiveMTU = 1500, 1024
			}
		})
	}})

var _ = answer(knownAnswer{rule: RoCEMTULow, name: "MTU 1500 everywhere without a pin (active 1024: a lossy default, not below 1024)", source: "staged", raises: false,
	state: func(*testing.T) State {
		return roceFleet(3, thresholds.HostExpect{}, func(i int, d []node.Device) {
			for j := range d {
				d[j].Ports[0].Config.NetdevMTU, d[j].Ports[0].Config.ActiveMTU = 1500, 1024
			}
		})
	}})

var _ = answer(knownAnswer{rule: RoCEv2GIDMissing, name: "address with a v1 GID only (RoCE mode v1)", source: "NVIDIA/nccl#718 shape (show_gids: v1 rows only)",
	raises: true, node: "gpu-002", evidence: `port mlx5_0/1: address 172\.27\.10\.2 has a RoCE v1 GID and no RoCE v2 GID`,
	state: func(*testing.T) State {
		return roceFleet(3, thresholds.HostExpect{}, func(i int, d []node.Device) {
			if i == 2 {
				g := d[0].Ports[0].Config.GIDs
				d[0].Ports[0].Config.GIDs = g[:3]
			}
		})
	}})

var _ = answer(knownAnswer{rule: RoCEv2GIDMissing, name: "Soft-RoCE: v2-only table, link-local and IPv4", source: "rxe (RoCE v2 only), the bed's guests", raises: false,
	state: func(*testing.T) State {
		return roceFleet(2, thresholds.HostExpect{}, func(i int, d []node.Device) {
			for j := range d {
				g := d[j].Ports[0].Config.GIDs
				d[j].Ports[0].Config.GIDs = []node.GID{g[1], g[3]}
			}
		})
	}})

var _ = answer(knownAnswer{rule: IBNoSubnetManager, name: "IB port with LID 0x0 and SM LID 0x0 (never swept)", source: "ibstat: Base lid: 0, SM lid: 0",
	raises: true, node: "gpu-001", evidence: `port mlx5_1/1: LID 0x0, SM LID 0x0`,
	state: func(*testing.T) State {
		return ibFleet(2, func(i int, d []node.Device) {
			if i == 1 {
				d[1].Ports[0].Config.LID, d[1].Ports[0].Config.SMLID = "0x0", "0x0"
			}
		})
	}})

var _ = answer(knownAnswer{rule: IBNoSubnetManager, name: "RoCE port with LID 0 (normal)", source: "staged", raises: false,
	state: func(*testing.T) State {
		return roceFleet(2, thresholds.HostExpect{}, func(i int, d []node.Device) { d[0].Ports[0].Config.LID = "0x0" })
	}})

var _ = answer(knownAnswer{rule: LosslessOff, name: "lossless SKU, one port with PFC on no priority", source: "staged (MOFED qos/pfc)",
	raises: true, node: "gpu-003", evidence: `port mlx5_0/1: PFC enabled on no priority`,
	state: func(*testing.T) State {
		return roceFleet(3, thresholds.HostExpect{Lossless: true, Source: "fabric design"}, func(i int, d []node.Device) {
			if i == 3 {
				d[0].Ports[0].Config.PFC.Enabled = []int{}
			}
		})
	}})

var _ = answer(knownAnswer{rule: LosslessOff, name: "PFC off everywhere on a SKU not declared lossless", source: "staged", raises: false,
	state: func(*testing.T) State {
		return roceFleet(2, thresholds.HostExpect{}, func(i int, d []node.Device) {
			for j := range d {
				d[j].Ports[0].Config.PFC.Enabled = []int{}
			}
		})
	}})

var _ = answer(knownAnswer{rule: HostPinMismatch, name: "firmware other than the SKU's manifest", source: "Meta gcm check-ib's firmware manifest idea; staged values",
	raises: true, node: "gpu-002", evidence: `mlx5_0 firmware "20\.38\.1002"; SKU a100-hdr pins 20\.39\.1002`,
	state: func(*testing.T) State {
		s := ibFleet(2, func(i int, d []node.Device) {
			if i == 2 {
				d[0].FWVersion = "20.38.1002"
			}
		})
		for n := range s.SKUs {
			s.SKUs[n] = NodeSKU{Name: "a100-hdr", Host: thresholds.HostExpect{Firmware: "20.39.1002", Source: "manifest"}}
		}
		return s
	}})

var _ = answer(knownAnswer{rule: HostPinMismatch, name: "partition key held as a limited member (0x7fff for pinned 0xffff)", source: "staged", raises: false,
	state: func(*testing.T) State {
		s := ibFleet(2, func(i int, d []node.Device) { d[0].Ports[0].Config.PKeys = []string{"0x7fff"} })
		for n := range s.SKUs {
			s.SKUs[n] = NodeSKU{Name: "a100-hdr", Host: thresholds.HostExpect{PKey: "0xffff", Source: "sm partitions.conf"}}
		}
		return s
	}})

var _ = answer(knownAnswer{rule: HostConfigDiffers, name: "one node of 256 on older firmware", source: "the issue's gpu-017 example; staged",
	raises: true, node: "gpu-017", evidence: `host: firmware MT4123 20\.38\.1002; 255 other nodes of SKU a100-hdr: MT4123 20\.39\.1002`,
	state: func(*testing.T) State {
		return ibFleet(256, func(i int, d []node.Device) {
			if i == 17 {
				d[0].FWVersion, d[1].FWVersion = "20.38.1002", "20.38.1002"
			}
		})
	}})

var _ = answer(knownAnswer{rule: HostConfigDiffers, name: "one RoCE port's MTU and GID index differ from the SKU's other ports", source: "staged (the bed's guest rail shape)",
	raises: true, node: "gpu-002", evidence: `host: port mlx5_1/1 MTU netdev 1500 \(active 1024\); 5 other MT4125 Ethernet ports of SKU h100-roce: netdev 9000 \(active 4096\)`,
	state: func(*testing.T) State {
		return roceFleet(3, thresholds.HostExpect{}, func(i int, d []node.Device) {
			if i == 2 {
				d[1].Ports[0].Config.NetdevMTU, d[1].Ports[0].Config.ActiveMTU = 1500, 1024
			}
		})
	}})

var _ = answer(knownAnswer{rule: HostConfigDiffers, name: "a second address on one port: its IPv4 v2 GIDs at 3 and 5, its peers' at 3", source: "NVIDIA/nccl#1573 shape (GID index differs from pod to pod)",
	raises: true, node: "gpu-003", evidence: `host: port mlx5_0/1 RoCE v2 GID indices of its IPv4 addresses 3 5; 7 other MT4125 Ethernet ports of SKU h100-roce: 3`,
	state: func(*testing.T) State {
		return roceFleet(4, thresholds.HostExpect{}, func(i int, d []node.Device) {
			if i == 3 {
				c := d[0].Ports[0].Config
				c.GIDs = append(c.GIDs, node.GID{Index: 4, GID: "0000:0000:0000:0000:0000:ffff:c000:0202", Type: "IB/RoCE v1", Netdev: "ens1f0", IP: "192.0.2.2"},
					node.GID{Index: 5, GID: "0000:0000:0000:0000:0000:ffff:c000:0202", Type: "RoCE v2", Netdev: "ens1f0", IP: "192.0.2.2"})
			}
		})
	}})

var _ = answer(knownAnswer{rule: HostConfigDiffers, name: "InfiniBand rails and an Ethernet front-end NIC on every node: ports compared within their class", source: "staged (a DGX-like node: compute rails plus a storage NIC)", clean: true,
	state: func(*testing.T) State {
		return ibFleet(4, func(i int, d []node.Device) {
			r := roce("mlx5_2", "0000:d3:00.0", "ens3f0", fmt.Sprintf("172.27.12.%d", i))
			d[1] = r
		})
	}})

var _ = answer(knownAnswer{rule: HostConfigDiffers, name: "two nodes that differ: no majority to trust", source: "staged", raises: false,
	state: func(*testing.T) State {
		return ibFleet(2, func(i int, d []node.Device) {
			if i == 2 {
				d[0].FWVersion = "20.38.1002"
			}
		})
	}})

var _ = answer(knownAnswer{rule: HostConfigDiffers, name: "mixed hardware without SKUs: compared only within HCA types", source: "staged", raises: false,
	state: func(*testing.T) State {
		s := ibFleet(3, nil)
		r := roceFleet(3, thresholds.HostExpect{}, nil)
		for i, n := range r.Nodes {
			n.Name = fmt.Sprintf("roce-%d", i)
			s.Nodes = append(s.Nodes, n)
			s.Pods = append(s.Pods, mofedPod(n.Name), driverPod(n.Name))
			s.Hosts[n.Name] = r.Hosts[r.Nodes[i].Name]
		}
		s.SKUs = nil
		return s
	}})

// Unknown is never a pass: a node whose PCIe link, LID or (on a lossless
// SKU) PFC state is unknown has no finding and a not-run node check
// naming the path.
func TestHostConfigUnknownIsNotRun(t *testing.T) {
	s := roceFleet(2, thresholds.HostExpect{Lossless: true, Source: "fabric design"}, func(i int, d []node.Device) {
		if i == 1 {
			d[0].PCIe.Path.Links[1].Unknown = "current_link_speed: Unknown"
			d[1].Ports[0].Config.PFC = nil
			d[1].Ports[0].Config.Unknown = []string{"/sys/class/net/ens2f0/qos/pfc absent"}
		}
		if i == 2 {
			d[0].PCIe = nil
		}
	})
	checks := Checks(s, Diagnose(s), 0)
	want := map[string][]string{
		"gpu-001": {"PCIe link of mlx5_0 at 0000:b3:00.0 unknown: current_link_speed: Unknown", "PFC/ECN state of port mlx5_1/1 unknown although SKU h100-roce is lossless: /sys/class/net/ens2f0/qos/pfc absent"},
		"gpu-002": {"host configuration of mlx5_0 not reported (an rdmaprobe image older than this suite"},
	}
	for _, c := range checks {
		w, ok := want[c.Nodes[0]]
		if !ok {
			continue
		}
		if c.ID != "doctor/node" || c.Status != "not-run" {
			t.Fatalf("%s: %s %s, want doctor/node not-run", c.Nodes[0], c.ID, c.Status)
		}
		for _, s := range w {
			if !strings.Contains(c.Reason, s) {
				t.Errorf("%s: reason %q lacks %q", c.Nodes[0], c.Reason, s)
			}
		}
		delete(want, c.Nodes[0])
	}
	if len(want) > 0 {
		t.Fatalf("no node check for %v", want)
	}
	_ = corev1.Node{}
}

// The findings that cap a port carry the figure it allows, per port, as
// the check's host_cap measurement: a PCIe x8 Gen4 link 126 Gb/s, a
// 100 Gb/s RoCE port at active MTU 1024 1024/(1024+82) of its rate.
func TestHostCapsReachTheChecks(t *testing.T) {
	s := ibFleet(4, func(i int, d []node.Device) {
		if i == 3 {
			d[1].PCIe.Path.Links[1].CurWidth = 8
		}
	})
	r := roceFleet(4, thresholds.HostExpect{ActiveMTU: 4096, Source: "design"}, func(i int, d []node.Device) {
		if i == 2 {
			d[1].Ports[0].Config.NetdevMTU, d[1].Ports[0].Config.ActiveMTU = 1500, 1024
		}
	})
	want := map[string]float64{"doctor/pcie-link-capped gpu-003 mlx5_1/1": 126, "doctor/roce-mtu-low gpu-002 mlx5_1/1": 92.6,
		"doctor/host-config-differs gpu-002 mlx5_1/1": 92.6, "doctor/host-config-differs gpu-003 mlx5_1/1": 126}
	got := map[string]float64{}
	for _, st := range []State{s, r} {
		for _, c := range Checks(st, Diagnose(st), 0) {
			for _, m := range c.Measured {
				if m.Name == "host_cap" && m.Unit == "Gb/s" {
					got[c.ID+" "+c.Nodes[0]+" "+m.Port] = m.Value
				}
			}
		}
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: host_cap %v, want %v (all: %v)", k, got[k], v, got)
		}
	}
	if len(got) != len(want) {
		t.Errorf("host caps %v, want only %v", got, want)
	}
}
