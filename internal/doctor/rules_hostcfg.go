package doctor

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/rdmasuite/rdmasuite/workloads/node"
	"github.com/rdmasuite/rdmasuite/workloads/pcilink"
)

// Rules about the host's RDMA configuration, read by the host probe from
// sysfs: what caps a port before any cable or switch is involved (a PCIe
// link trained narrow, a NIC across the socket from its GPUs, ACS sending
// GPUDirect traffic through the root complex, a small MTU), what keeps a
// port from talking (no RoCE v2 GID for its address, no subnet manager),
// and a lossless fabric's settings. Public reports of each are named in
// every rule's cause. Only ACTIVE ports in use are judged: a port that is
// down is rdma-port-down's.

const (
	PCIeLinkCapped     = "pcie-link-capped"
	NICGPUCrossSocket  = "nic-gpu-cross-socket"
	ACSRedirectsGPUNIC = "acs-redirects-gpu-nic"
	RoCEMTULow         = "roce-mtu-low"
	RoCEv2GIDMissing   = "rocev2-gid-missing"
	IBNoSubnetManager  = "ib-no-subnet-manager"
	LosslessOff        = "roce-lossless-off"
	HostPinMismatch    = "host-config-pinned-mismatch"
)

// minRoCEMTU is the least active MTU the doctor accepts without a SKU pin:
// below 1024 (a netdev MTU under 1120) every message is cut into packets
// of 512 bytes or less, which no RoCE deployment guide chooses.
const minRoCEMTU = 1024

// portID names a port as the other port rules do ("mlx5_0/1").
func portID(d node.Device, p node.Port) string { return fmt.Sprintf("%s/%d", d.Name, p.Port) }

// devicePorts calls fn for every port of every device on the node that is
// ACTIVE and not declared unused.
func (v *View) devicePorts(n *NodeView, fn func(d node.Device, p node.Port, id string)) {
	if n.Host == nil {
		return
	}
	for _, d := range n.Host.Devices {
		for _, p := range d.Ports {
			id := portID(d, p)
			if p.Active && !v.portUnused(n.Name, id) {
				fn(d, p, id)
			}
		}
	}
}

// usedDevices are the node's devices with at least one port in use.
func (v *View) usedDevices(n *NodeView) []node.Device {
	var out []node.Device
	seen := map[string]bool{}
	v.devicePorts(n, func(d node.Device, _ node.Port, _ string) {
		if !seen[d.Name] {
			seen[d.Name] = true
			out = append(out, d)
		}
	})
	return out
}

func portRates(d node.Device) string {
	var r []string
	for _, p := range d.Ports {
		if p.RateGbps > 0 {
			r = append(r, fmt.Sprintf("%s/%d %g Gb/s", d.Name, p.Port, p.RateGbps))
		}
	}
	return strings.Join(r, ", ")
}

func portSum(d node.Device) float64 {
	s := 0.0
	for _, p := range d.Ports {
		s += p.RateGbps
	}
	return s
}

var _ = register(Rule{ID: PCIeLinkCapped, Severity: Warning, Seed: "field",
	Cause: "a NIC's PCIe path trained below the NIC's own maximum (a reseated card, a riser, a slot or BIOS lane setting): the narrowest link caps what its ports can move " +
		"whatever the cable and switch do (scitix/sichek#122: a Gen5 NIC in a Gen4 slot, found by walking the PCIe tree)",
	Fix: "lspci -vv -s <address> shows LnkCap against LnkSta ((downgraded)); reseat the card, check the riser and the slot's BIOS bifurcation/speed setting, " +
		"move the card to a slot wired for its width; the node's low bandwidth rows are this cap, not the fabric",
	Raises: "host probe: on the path from the root port to an RDMA device's PCI function (an SR-IOV VF: its physical function), the narrowest trained link " +
		"(current_link_speed × current_link_width × line coding) allows less than the device's own max_link_speed × max_link_width. The evidence names the link, " +
		"the figure it allows and the ports' line rate",
	Silent: []string{"a path trained at the device's maximum (a wider slot than the card is no cap)",
		"a software device (rxe, siw): it has no PCI function of its own",
		"a link whose speed or width is not readable: the node check is not-run naming the path"},
	Eval: func(v *View) []Hit {
		var out []Hit
		for _, n := range v.Nodes {
			for _, d := range v.usedDevices(n) {
				if d.PCIe == nil || d.PCIe.Path == nil {
					continue
				}
				l, capped := d.PCIe.Path.Capped()
				if !capped {
					continue
				}
				dm, _ := d.PCIe.Path.DeviceMax()
				below := ""
				if sum := portSum(d); sum > 0 && l.CurGbps() < sum {
					below = fmt.Sprintf(": below the ports' line rate (%s), which the ports cannot reach", portRates(d))
				}
				h := hit(n.Name, fmt.Sprintf("host: %s (%s): narrowest PCIe link %s allows %.1f Gb/s (x%d × %g GT/s × %s); the device's own maximum allows %.1f Gb/s%s (read from %s)",
					d.Name, d.PCIe.Address, l, l.CurGbps(), l.CurWidth, l.CurGTs, pcilink.EncodingName(l.CurGTs), dm.MaxGbps(), below, l.Source))
				for _, p := range d.Ports {
					h.Caps = append(h.Caps, Cap{Port: portID(d, p), Gbps: l.CurGbps()})
				}
				out = append(out, h)
			}
		}
		return out
	}})

var _ = register(Rule{ID: NICGPUCrossSocket, Severity: Warning, Seed: "field",
	Cause: "a rail's NIC has no NVIDIA GPU on its own NUMA node: GPUDirect RDMA on it crosses the CPU interconnect (nvidia-smi topo -m: SYS), " +
		"which typically halves its bandwidth (k8s-launch-kit#50 builds the GPU–NIC pairing from the same topology)",
	Fix: "check nvidia-smi topo -m on the node; pin each rail to the GPUs of its own socket (NCCL does this itself when the topology is right); " +
		"a NIC in the wrong slot for the platform's GPU–NIC pairing moves",
	Raises: "host probe: the NIC's nearest NVIDIA GPU (gputopo, nvidia-smi topo's levels) is related as SYS: across NUMA nodes, or with one NUMA node unknown",
	Silent: []string{"a node without NVIDIA GPUs", "a NIC with a GPU at PIX, PXB, PHB or NODE", "a software device (no PCI function)"},
	Eval: func(v *View) []Hit {
		var out []Hit
		v.nicGPUs(func(n *NodeView, d node.Device, g *node.NearestGPU) {
			if g.Level == "SYS" {
				out = append(out, hit(n.Name, fmt.Sprintf("host: %s (%s, NUMA node %d): nearest GPU %s (NUMA node %d) is SYS: %s", d.Name, d.PCIe.Address, d.PCIe.NUMANode, g.Address, g.NUMANode, g.Why)))
			}
		})
		return out
	}})

// nicGPUs calls fn for every device in use that has a nearest GPU.
func (v *View) nicGPUs(fn func(n *NodeView, d node.Device, g *node.NearestGPU)) {
	for _, n := range v.Nodes {
		for _, d := range v.usedDevices(n) {
			if d.PCIe != nil && d.PCIe.NearestGPU != nil {
				fn(n, d, d.PCIe.NearestGPU)
			}
		}
	}
}

var _ = register(Rule{ID: ACSRedirectsGPUNIC, Severity: Warning, Seed: "field",
	Cause: "a PCIe switch port between a NIC and its nearest GPU has ACS peer-to-peer redirect on: every GPUDirect RDMA transfer goes up to the root complex " +
		"and back instead of across the switch, losing most of its bandwidth (NVIDIA's GPUDirect RDMA and NCCL troubleshooting guides: disable ACS on the switch ports)",
	Fix: "disable ACS on the switch's downstream ports (BIOS setting, or setpci on the ports' ACS control register at boot; on bare metal without a VM needing isolation); " +
		"lspci -vvv shows ACSCtl ReqRedir+/CmpltRedir+",
	Raises: "host probe: a bridge below the deepest bridge the NIC and its nearest GPU share (PIX, PXB) has ACS Request or Completion Redirect enabled in its config space",
	Silent: []string{"ACS on bridges the pair does not cross (a NIC and GPU at PHB, NODE or SYS go through the root complex anyway)",
		"a bridge whose config space beyond 256 bytes is unreadable: the node check is not-run naming it"},
	Eval: func(v *View) []Hit {
		var out []Hit
		v.nicGPUs(func(n *NodeView, d node.Device, g *node.NearestGPU) {
			for _, a := range g.ACS {
				if a.Redirects() {
					out = append(out, hit(n.Name, fmt.Sprintf("host: %s ↔ GPU %s (%s): bridge %s (read from %s)", d.Name, g.Address, g.Level, a, a.Source)))
				}
			}
		})
		return out
	}})

var _ = register(Rule{ID: RoCEMTULow, Severity: Warning, Seed: "field",
	Cause: "a RoCE port's active MTU is below what the fabric runs (the SKU's host.activeMTU) or below 1024: its netdev MTU (e.g. left at 1500 on a 9000 fabric) " +
		"caps every RDMA packet, so bandwidth and message rate drop and mixed MTUs between peers fall back to the smaller one",
	Fix: "set the netdev MTU for the fabric's RDMA MTU: 4200 or 9000 for an active MTU of 4096 (ip link set <netdev> mtu 9000; with the Network Operator the " +
		"NicClusterPolicy / SR-IOV network's mtu field); the switch ports must allow it too",
	Raises: "host probe: an ACTIVE RoCE port whose netdev MTU gives an active MTU (netdev MTU less 96 header bytes, rounded down to an IB MTU, the kernel's rule) " +
		"below the SKU's host.activeMTU, or below 1024 without one",
	Silent: []string{"an InfiniBand port (its MTU is the subnet manager's)", "a RoCE port at the pinned MTU or above",
		"a netdev MTU that cannot be read: the node check is not-run naming the path"},
	Eval: func(v *View) []Hit {
		var out []Hit
		for _, n := range v.Nodes {
			want, why := minRoCEMTU, "below 1024"
			if k, ok := v.SKUs[n.Name]; ok && k.Host.ActiveMTU > 0 {
				want, why = k.Host.ActiveMTU, fmt.Sprintf("below SKU %s's host.activeMTU %d (%s)", k.Name, k.Host.ActiveMTU, k.Host.Source)
			}
			v.devicePorts(n, func(d node.Device, p node.Port, id string) {
				c := p.Config
				if p.LinkLayer != "Ethernet" || c == nil || c.NetdevMTU == 0 || c.ActiveMTU >= want || len(p.Netdevs) == 0 {
					return
				}
				allowed := mtuCap(p.RateGbps, c.ActiveMTU)
				h := hit(n.Name, fmt.Sprintf("host: port %s: netdev %s MTU %d gives RoCE active MTU %d, %s; at %g Gb/s it carries at most %.1f Gb/s of payload (%.1f %%)",
					id, p.Netdevs[0].Name, c.NetdevMTU, c.ActiveMTU, why, p.RateGbps, allowed, 100*node.RoCEPayloadShare(c.ActiveMTU)))
				h.Caps = []Cap{{Port: id, Gbps: allowed}}
				out = append(out, h)
			})
		}
		return out
	}})

var _ = register(Rule{ID: RoCEv2GIDMissing, Severity: Warning, Seed: "field",
	Cause: "a RoCE port has no RoCE v2 GID for an address of its netdev (or no GID at all): RDMA CM and NCCL resolve peers by IP address through the v2 GID, " +
		"so the port cannot connect, or falls back to RoCE v1, which routed fabrics drop (NVIDIA/nccl#718, #890, #1573: the GID index differs from pod to pod)",
	Fix: "show_gids (or /sys/class/infiniband/<dev>/ports/<n>/gid_attrs/types) on the node; the netdev needs its IPv4/IPv6 address (GIDs follow addresses), " +
		"the RoCE mode must include v2 (cma_roce_mode, rdma_cm's default_roce_mode); with NCCL set NCCL_IB_GID_INDEX only when every pod's index agrees",
	Raises: "host probe: an ACTIVE RoCE port whose GID table holds an address GID of type IB/RoCE v1 with no RoCE v2 entry for the same address, or no populated GID",
	Silent: []string{"an InfiniBand port", "a port whose only GIDs are link-local (fe80::, from the MAC) of type RoCE v2: it has no address to miss",
		"a port with v1 and v2 entries for each address (the usual mlx5 table)"},
	Eval: func(v *View) []Hit {
		var out []Hit
		for _, n := range v.Nodes {
			v.devicePorts(n, func(d node.Device, p node.Port, id string) {
				if p.LinkLayer != "Ethernet" || p.Config == nil {
					return
				}
				if len(p.Config.GIDs) == 0 {
					out = append(out, hit(n.Name, "host: port "+id+": the GID table has no populated entry"))
					return
				}
				v1, v2 := map[string]bool{}, map[string]bool{}
				for _, g := range p.Config.GIDs {
					if g.IP == "" {
						continue
					}
					if g.IsV2() {
						v2[g.IP] = true
					} else {
						v1[g.IP] = true
					}
				}
				for ip := range v1 {
					if !v2[ip] {
						out = append(out, hit(n.Name, fmt.Sprintf("host: port %s: address %s has a RoCE v1 GID and no RoCE v2 GID (%s)", id, ip, gidList(p.Config.GIDs))))
					}
				}
			})
		}
		return out
	}})

func gidList(gs []node.GID) string {
	var s []string
	for _, g := range gs {
		a := g.IP
		if a == "" {
			a = g.GID
		}
		s = append(s, fmt.Sprintf("%d %s %s", g.Index, a, g.Type))
	}
	return strings.Join(s, ", ")
}

var _ = register(Rule{ID: IBNoSubnetManager, Severity: Critical, Seed: "field",
	Cause: "an InfiniBand port has LID 0 or no subnet manager LID: no subnet manager has swept it, so it has no address and no path to any peer " +
		"(Meta gcm's check-ib checks the SM the same way)",
	Fix: "sminfo and ibstat on the node; check that a subnet manager (opensm, UFM) runs and sees the port (ibnetdiscover), the port's cable and switch port; " +
		"a port that stays INIT after a sweep is also rdma-port-down's",
	Raises: "host probe: an InfiniBand port whose lid or sm_lid reads 0x0",
	Silent: []string{"a RoCE port (LID 0 is normal there)", "a port declared in --unused-ports",
		"a LID that cannot be read: the node check is not-run naming the path"},
	Eval: func(v *View) []Hit {
		var out []Hit
		for _, n := range v.Nodes {
			if n.Host == nil {
				continue
			}
			for _, d := range n.Host.Devices {
				for _, p := range d.Ports {
					id := portID(d, p)
					c := p.Config
					if p.LinkLayer != "InfiniBand" || c == nil || v.portUnused(n.Name, id) || c.LID == "" || c.SMLID == "" {
						continue
					}
					if zeroLID(c.LID) || zeroLID(c.SMLID) {
						out = append(out, hit(n.Name, fmt.Sprintf("host: port %s: LID %s, SM LID %s, state %s", id, c.LID, c.SMLID, p.State)))
					}
				}
			}
		}
		return out
	}})

// mtuCap is the RDMA payload a RoCE port at rate carries at an active MTU.
func mtuCap(rate float64, activeMTU int) float64 {
	return math.Round(rate*node.RoCEPayloadShare(activeMTU)*10) / 10
}

func zeroLID(s string) bool {
	return strings.Trim(strings.TrimPrefix(strings.ToLower(s), "0x"), "0") == ""
}

var _ = register(Rule{ID: LosslessOff, Severity: Warning, Seed: "field",
	Cause: "the SKU says its RoCE fabric is lossless, yet a port has PFC off on every priority or ECN off (notification or reaction point): under load that node " +
		"is the one that drops and retransmits, or floods pause frames (OCI GPU Scanner checks RTTCC and discards for the same reason)",
	Fix: "mlnx_qos -i <netdev> --pfc and --trust as the fabric's design says; ECN: echo 1 > /sys/class/net/<netdev>/ecn/roce_np/enable/<prio> and roce_rp; " +
		"with the Network Operator keep the NicClusterPolicy / NIC configuration in step on every node",
	Raises: "host probe, only on a SKU with host.lossless: true: an ACTIVE RoCE port whose qos/pfc enables no priority, or whose ecn/roce_np or ecn/roce_rp enables no priority",
	Silent: []string{"a SKU without host.lossless (many RoCE fabrics run lossy with ECN alone): the states are only compared across the SKU's nodes",
		"an InfiniBand port", "a driver that does not expose the state: the node check is not-run naming the path"},
	Eval: func(v *View) []Hit {
		var out []Hit
		for _, n := range v.Nodes {
			if k, ok := v.SKUs[n.Name]; !ok || !k.Host.Lossless {
				continue
			}
			v.devicePorts(n, func(d node.Device, p node.Port, id string) {
				c := p.Config
				if p.LinkLayer != "Ethernet" || c == nil {
					return
				}
				if c.PFC != nil && len(c.PFC.Enabled) == 0 {
					out = append(out, hit(n.Name, fmt.Sprintf("host: port %s: PFC enabled on no priority (trust %s; read from %s)", id, c.PFC.Trust, c.PFC.Source)))
				}
				if c.ECN != nil && (len(c.ECN.NP) == 0 || len(c.ECN.RP) == 0) {
					out = append(out, hit(n.Name, fmt.Sprintf("host: port %s: ECN notification point on priorities %v, reaction point on %v (read from %s)", id, c.ECN.NP, c.ECN.RP, c.ECN.Source)))
				}
			})
		}
		return out
	}})

var _ = register(Rule{ID: HostPinMismatch, Severity: Warning, Seed: "field",
	Cause: "a node differs from what its SKU pins in the thresholds file (host: firmware, pkey): a firmware other than the fleet's manifest behaves differently, " +
		"a port without the fleet's partition key cannot reach its peers (Meta gcm's check-ib compares firmware with a manifest)",
	Fix: "mlxfwmanager / flint -d <dev> q to see and update the firmware (with the Network Operator: its firmware management); the partition key is the subnet manager's " +
		"partition configuration for the port's GUID; or correct the SKU's host: block if the fleet moved on",
	Raises: "host probe: an RDMA device in use whose fw_ver differs from the SKU's host.firmware, or an InfiniBand port whose pkeys lack host.pkey (the full-member bit ignored)",
	Silent: []string{"a SKU without a host: block (nodes are then compared with each other: host-config-differs)", "a software device (rxe) when no firmware is pinned"},
	Eval: func(v *View) []Hit {
		var out []Hit
		for _, n := range v.Nodes {
			k, ok := v.SKUs[n.Name]
			if !ok || !k.Host.Set() {
				continue
			}
			for _, d := range v.usedDevices(n) {
				if k.Host.Firmware != "" && d.FWVersion != k.Host.Firmware {
					out = append(out, hit(n.Name, fmt.Sprintf("host: %s firmware %q; SKU %s pins %s (%s)", d.Name, d.FWVersion, k.Name, k.Host.Firmware, k.Host.Source)))
				}
			}
			if k.Host.PKey == "" {
				continue
			}
			v.devicePorts(n, func(d node.Device, p node.Port, id string) {
				if p.LinkLayer != "InfiniBand" || p.Config == nil || hasPKey(p.Config.PKeys, k.Host.PKey) {
					return
				}
				out = append(out, hit(n.Name, fmt.Sprintf("host: port %s partition keys %v lack %s, which SKU %s pins (%s)", id, p.Config.PKeys, k.Host.PKey, k.Name, k.Host.Source)))
			})
		}
		return out
	}})

// hasPKey compares partition keys without the membership bit (0x8000).
func hasPKey(keys []string, want string) bool {
	w := pkeyBase(want)
	return slices.ContainsFunc(keys, func(k string) bool { return pkeyBase(k) == w })
}

func pkeyBase(s string) string {
	var v uint64
	fmt.Sscanf(strings.TrimPrefix(strings.ToLower(s), "0x"), "%x", &v)
	return fmt.Sprintf("0x%04x", v&0x7fff)
}

// hostConfigUnjudged lists what the host-configuration rules could not
// judge on the node: unknown is never a pass.
func (v *View) hostConfigUnjudged(n *NodeView) []string {
	var out []string
	if n.Host == nil || !n.Host.RDMARead {
		return nil
	}
	k, hasSKU := v.SKUs[n.Name]
	for _, d := range v.usedDevices(n) {
		switch {
		case d.PCIe == nil:
			out = append(out, "host configuration of "+d.Name+" not reported (an rdmaprobe image older than this suite: run the image of this version)")
			continue
		case d.PCIe.Software != "":
		case d.PCIe.Unknown != "":
			out = append(out, "PCIe path of "+d.Name+" unknown: "+d.PCIe.Unknown)
		case d.PCIe.Path != nil:
			if _, all := d.PCIe.Path.Narrowest(); !all {
				for _, l := range d.PCIe.Path.Links {
					if !l.Known() {
						out = append(out, fmt.Sprintf("PCIe link of %s at %s unknown: %s", d.Name, l.Address, l.Unknown))
					}
				}
			}
		}
		if g := d.PCIe.NearestGPU; g != nil {
			for _, a := range g.ACS {
				if a.Unknown != "" {
					out = append(out, fmt.Sprintf("ACS of bridge %s between %s and GPU %s unknown: %s", a.Address, d.Name, g.Address, a.Unknown))
				}
			}
		}
	}
	v.devicePorts(n, func(d node.Device, p node.Port, id string) {
		c := p.Config
		if c == nil {
			return
		}
		switch p.LinkLayer {
		case "InfiniBand":
			if c.LID == "" || c.SMLID == "" {
				out = append(out, "LID / SM LID of port "+id+" unknown: "+strings.Join(c.Unknown, "; "))
			}
		case "Ethernet":
			if len(p.Netdevs) > 0 && c.NetdevMTU == 0 {
				out = append(out, "netdev MTU of port "+id+" unknown: "+strings.Join(c.Unknown, "; "))
			}
			if hasSKU && k.Host.Lossless && (c.PFC == nil || c.ECN == nil) {
				out = append(out, fmt.Sprintf("PFC/ECN state of port %s unknown although SKU %s is lossless: %s", id, k.Name, strings.Join(c.Unknown, "; ")))
			}
		}
	})
	return out
}
