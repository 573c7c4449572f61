package node

import (
	"fmt"
	"net"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/rdmasuite/rdmasuite/workloads/gputopo"
	"github.com/rdmasuite/rdmasuite/workloads/pcilink"
)

// The host's RDMA configuration beside each device and port: what
// `lspci -vv` (LnkSta, ACSCtl, NUMA node), `ibstat` (Base lid, SM lid,
// board id), `ibv_devinfo -v` (active_mtu, the GID table) and
// `mlnx_qos` / the ECN sysfs say, read from sysfs so nothing needs those
// tools on the node. A fact the host does not expose is left unknown with
// the path that was missing: the doctor never takes it for a pass.

// DevicePCIe is where a device's PCI function sits and what its links
// allow.
type DevicePCIe struct {
	// Software is set for a device with no PCI function of its own
	// (Soft-RoCE on a netdev, siw): its bandwidth is the netdev's, and
	// no PCIe fact applies to it. The other fields are then empty.
	Software string `json:"software,omitempty"`
	Address  string `json:"address,omitempty"`
	// NUMANode is the function's numa_node; -1 when the firmware gave
	// none (or a single-node machine).
	NUMANode int           `json:"numaNode"`
	Path     *pcilink.Path `json:"path,omitempty"`
	// Unknown says why the path could not be read at all.
	Unknown string `json:"unknown,omitempty"`
	// NearestGPU is the NVIDIA GPU closest to the NIC, as nvidia-smi topo
	// would relate them; nil on a node without GPUs.
	NearestGPU *NearestGPU `json:"nearestGPU,omitempty"`
}

// NearestGPU is the GPU a rail's GPUDirect traffic goes to, and the ACS
// control of the bridges between them when they share a PCIe switch
// (PIX, PXB): a bridge that redirects sends every peer-to-peer transfer up
// to the root complex.
type NearestGPU struct {
	Address     string        `json:"address"`
	Level       gputopo.Level `json:"level"`
	CrossSocket bool          `json:"crossSocket"`
	NUMANode    int           `json:"numaNode"`
	Why         string        `json:"why"`
	ACS         []pcilink.ACS `json:"acs,omitempty"`
}

// PortConfig is one port's addressing and transport settings.
type PortConfig struct {
	// InfiniBand: the port's LID, the subnet manager's LID and SL (ibstat's
	// "Base lid", "SM lid"), and the partition keys in its table (the
	// non-zero entries of ports/<n>/pkeys). Empty strings: not readable.
	LID   string   `json:"lid,omitempty"`
	SMLID string   `json:"smLid,omitempty"`
	SMSL  string   `json:"smSl,omitempty"`
	PKeys []string `json:"pkeys,omitempty"`
	// NetdevMTU is the MTU of the port's netdev (RoCE: the first one with
	// a GID); ActiveMTU the RoCE port's active MTU that follows from it
	// (the kernel's rule: the largest IB MTU of 256…4096 that fits the
	// netdev MTU less the RoCE v2 headers), 0 when not derivable (an
	// InfiniBand port's active MTU is set by the SM and only verbs
	// report it).
	NetdevMTU int `json:"netdevMtu,omitempty"`
	ActiveMTU int `json:"activeMtu,omitempty"`
	// GIDs are the populated entries of the GID table; GIDTableLen its
	// size (every entry is read: mlx5 and rxe tables have 255 to 1024).
	GIDs        []GID `json:"gids,omitempty"`
	GIDTableLen int   `json:"gidTableLen,omitempty"`
	// ECN is RoCE congestion control on the netdev (mlx5's
	// ecn/roce_np and ecn/roce_rp, per priority); PFC the priority flow
	// control and trust state (MOFED's qos/ sysfs). Nil: not exposed
	// (Unknown says which paths were missing).
	ECN *ECN `json:"ecn,omitempty"`
	PFC *PFC `json:"pfc,omitempty"`
	// Unknown lists the facts that could not be read, with their paths.
	Unknown []string `json:"unknown,omitempty"`
	// Source names where the facts were read: the port's sysfs directory
	// and its netdev's.
	Source string `json:"source"`
}

// GID is one entry of a port's GID table.
type GID struct {
	Index int    `json:"index"`
	GID   string `json:"gid"`
	// Type is the kernel's gid_attrs/types text: "IB/RoCE v1" or "RoCE v2".
	Type   string `json:"type"`
	Netdev string `json:"netdev,omitempty"`
	// IP is the address the GID encodes (RoCE: IPv4-mapped or the IPv6
	// address itself); "" for a link-local-only or IB GID.
	IP string `json:"ip,omitempty"`
}

// IsV2 says whether the entry is a RoCE v2 (routable, UDP) GID.
func (g GID) IsV2() bool { return g.Type == "RoCE v2" }

// ECN is which priorities have the notification point (receiver: sends
// CNPs) and reaction point (sender: slows down) enabled.
type ECN struct {
	NP     []int  `json:"np"`
	RP     []int  `json:"rp"`
	Source string `json:"source"`
}

// PFC is the priority flow control state.
type PFC struct {
	Enabled []int  `json:"enabled"`
	Trust   string `json:"trust,omitempty"` // pcp or dscp
	Source  string `json:"source"`
}

// readDevicePCIe finds the device's own PCI function (a HCA or a VF: its
// device link) and reads the links above it, its NUMA node and its
// nearest GPU.
func readDevicePCIe(h hostFS, dev string, gpus []gputopo.GPU, topo *gputopo.Sysfs) *DevicePCIe {
	link := classInfiniband + "/" + dev + "/device"
	if _, err := os.Lstat(h.path(link)); err != nil {
		parent, _ := h.readTrim(classInfiniband + "/" + dev + "/parent")
		why := "a software device without a PCI function of its own"
		if parent != "" {
			why += " (on netdev " + parent + ")"
		}
		return &DevicePCIe{Software: why, NUMANode: -1}
	}
	out := &DevicePCIe{NUMANode: -1}
	if topo == nil {
		out.Unknown = "sysfs not readable under the host root"
		return out
	}
	d, err := topo.RDMADevice(dev)
	if err != nil {
		out.Unknown = err.Error()
		return out
	}
	out.Address, out.NUMANode = d.Address, d.NUMANode
	p, err := pcilink.Read(h.root, d.Path)
	if err != nil {
		out.Unknown = err.Error()
		return out
	}
	out.Path = &p
	if len(gpus) > 0 {
		g, rel, err := gputopo.NearestTo(d, gpus)
		if err == nil {
			n := &NearestGPU{Address: g.Address, Level: rel.Level, CrossSocket: rel.CrossSocket, NUMANode: g.NUMANode, Why: rel.Why}
			if rel.Level == gputopo.PIX || rel.Level == gputopo.PXB {
				for _, dir := range bridgesBetween(d.Path, g.Path) {
					n.ACS = append(n.ACS, pcilink.ReadACS(h.root, dir))
				}
			}
			out.NearestGPU = n
		}
	}
	return out
}

// bridgesBetween are the bridge directories below the deepest bridge two
// devices share, on both sides: the switch ports a peer-to-peer transfer
// between them passes and where ACS may redirect it.
func bridgesBetween(a, b string) []string {
	ea, eb := strings.Split(a, "/"), strings.Split(b, "/")
	c := 0
	for c < len(ea)-1 && c < len(eb)-1 && ea[c] == eb[c] {
		c++
	}
	var out []string
	for _, els := range [][]string{ea, eb} {
		for i := c; i < len(els)-1; i++ {
			out = append(out, strings.Join(els[:i+1], "/"))
		}
	}
	return out
}

// readPortConfig reads a port's addressing, MTU and congestion settings
// (the GID table is read once, by readPort). netdev is the port's first
// netdev ("" if none).
func readPortConfig(h hostFS, base, linkLayer, netdev string) *PortConfig {
	c := &PortConfig{Source: base}
	if netdev != "" {
		c.Source += " and /sys/class/net/" + netdev
	}
	miss := func(p string) { c.Unknown = append(c.Unknown, p+" absent") }
	if linkLayer == "InfiniBand" {
		for _, f := range []struct {
			name string
			dst  *string
		}{{"lid", &c.LID}, {"sm_lid", &c.SMLID}, {"sm_sl", &c.SMSL}} {
			if v, ok := h.readTrim(base + "/" + f.name); ok {
				*f.dst = v
			} else {
				miss(base + "/" + f.name)
			}
		}
		idx, err := h.readDirNames(base + "/pkeys")
		if err != nil {
			miss(base + "/pkeys")
		}
		for _, i := range sortedNumeric(idx) {
			if v, ok := h.readTrim(base + "/pkeys/" + i); ok && !zeroHex(v) {
				c.PKeys = append(c.PKeys, v)
			}
		}
	}
	if netdev == "" {
		return c
	}
	nd := "/sys/class/net/" + netdev
	if v, ok := h.readTrim(nd + "/mtu"); ok {
		c.NetdevMTU, _ = strconv.Atoi(v)
	} else {
		miss(nd + "/mtu")
	}
	if linkLayer != "Ethernet" {
		return c
	}
	c.ActiveMTU = RoCEActiveMTU(c.NetdevMTU)
	c.ECN = readECN(h, nd)
	if c.ECN == nil {
		miss(nd + "/ecn/roce_np/enable")
	}
	c.PFC = readPFC(h, nd)
	if c.PFC == nil {
		miss(nd + "/qos/pfc (MOFED's sysfs; inbox drivers expose PFC over DCB netlink only)")
	}
	return c
}

// RoCEActiveMTU is the active MTU a RoCE port gets from its netdev's MTU:
// the kernel (iboe_get_mtu) takes the netdev MTU less the largest RoCE
// headers (GRH 40, UDP 8, BTH 12, XRC 4, AtomicETH 28, ICRC 4: 96 bytes)
// and rounds down to an IB MTU. 1500 gives 1024, 4200 and 9000 give 4096.
func RoCEActiveMTU(netdevMTU int) int {
	m := netdevMTU - 96
	for _, ib := range []int{4096, 2048, 1024, 512, 256} {
		if m >= ib {
			return ib
		}
	}
	return 0
}

// RoCEPayloadShare is the share of a RoCE v2 port's line rate that
// carries RDMA payload at an active MTU: each packet of MTU payload bytes
// also puts 82 bytes on the wire (preamble and start delimiter 8,
// Ethernet header 14, FCS 4, inter-frame gap 12 — IEEE 802.3; IPv4 20,
// UDP 8, BTH 12, ICRC 4 — the RoCE v2 annex of the IBTA specification).
// 1024 gives 0.926, 4096 gives 0.980.
func RoCEPayloadShare(activeMTU int) float64 {
	if activeMTU <= 0 {
		return 0
	}
	return float64(activeMTU) / float64(activeMTU+82)
}

// readGIDs reads the populated entries and the table's size: an
// unpopulated entry reads as all zeros and its type and netdev fail to
// read (EINVAL on real sysfs). This also finds bond devices' netdevs
// (seed 002's "mlx5_bond_0 port 1 ==> bond0"), which have no PCI device of
// their own.
func readGIDs(h hostFS, base string) ([]GID, int) {
	idx, _ := h.readDirNames(base + "/gids")
	var out []GID
	idx = sortedNumeric(idx)
	for _, i := range idx {
		g, ok := h.readTrim(base + "/gids/" + i)
		if !ok || zeroGID(g) {
			continue
		}
		typ, ok := h.readTrim(base + "/gid_attrs/types/" + i)
		if !ok {
			continue
		}
		n, _ := strconv.Atoi(i)
		nd, _ := h.readTrim(base + "/gid_attrs/ndevs/" + i)
		out = append(out, GID{Index: n, GID: g, Type: typ, Netdev: nd, IP: gidIP(g)})
	}
	return out, len(idx)
}

// gidIP is the address a RoCE GID encodes: ::ffff:a.b.c.d for IPv4, the
// IPv6 address itself unless link-local (fe80::/10, derived from the MAC).
func gidIP(g string) string {
	ip := net.ParseIP(g)
	if ip == nil || ip.IsLinkLocalUnicast() {
		return ""
	}
	if v4 := ip.To4(); v4 != nil {
		return v4.String()
	}
	return ip.String()
}

func zeroGID(g string) bool { return strings.Trim(g, "0:") == "" }

func zeroHex(v string) bool {
	n, err := strconv.ParseUint(strings.TrimPrefix(v, "0x"), 16, 32)
	return err != nil || n == 0
}

// sortedNumeric keeps the numeric names, in numeric order.
func sortedNumeric(names []string) []string {
	var out []string
	for _, s := range names {
		if _, err := strconv.Atoi(s); err == nil {
			out = append(out, s)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		a, _ := strconv.Atoi(out[i])
		b, _ := strconv.Atoi(out[j])
		return a < b
	})
	return out
}

// readECN reads mlx5's per-priority enable files
// (ecn/roce_np/enable/<0-7>, ecn/roce_rp/enable/<0-7>, "1" or "0").
func readECN(h hostFS, nd string) *ECN {
	dir := nd + "/ecn"
	if !isDir(h, dir+"/roce_np/enable") && !isDir(h, dir+"/roce_rp/enable") {
		return nil
	}
	e := &ECN{NP: []int{}, RP: []int{}, Source: dir}
	for _, side := range []struct {
		name string
		dst  *[]int
	}{{"roce_np", &e.NP}, {"roce_rp", &e.RP}} {
		for p := 0; p < 8; p++ {
			if v, ok := h.readTrim(fmt.Sprintf("%s/%s/enable/%d", dir, side.name, p)); ok && v == "1" {
				*side.dst = append(*side.dst, p)
			}
		}
	}
	return e
}

// readPFC reads MOFED's qos/pfc ("enabled:" row of 0/1 per priority) and
// qos/trust ("Priority trust state: dscp").
func readPFC(h hostFS, nd string) *PFC {
	b, err := h.readFile(nd + "/qos/pfc")
	if err != nil {
		return nil
	}
	p := &PFC{Enabled: []int{}, Source: nd + "/qos"}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || strings.TrimSpace(k) != "enabled" {
			continue
		}
		for i, f := range strings.Fields(v) {
			if f == "1" {
				p.Enabled = append(p.Enabled, i)
			}
		}
	}
	if t, ok := h.readTrim(nd + "/qos/trust"); ok {
		_, v, _ := strings.Cut(t, ":")
		p.Trust = strings.TrimSpace(v)
		if p.Trust == "" {
			p.Trust = t
		}
	}
	return p
}

// readGPUs lists the host's NVIDIA GPUs for the NIC–GPU relation; none (or
// no PCI bus visible) is an empty list.
func readGPUs(h hostFS) (*gputopo.Sysfs, []gputopo.GPU) {
	topo, err := gputopo.New(h.root)
	if err != nil {
		return nil, nil
	}
	if !isDir(h, "/sys/bus/pci/devices") {
		return topo, nil
	}
	gpus, _ := topo.GPUs()
	return topo, gpus
}

// gidEntries counts the GID table entries read on every port.
func (r RDMA) gidEntries() int {
	n := 0
	for _, d := range r.Devices {
		for _, p := range d.Ports {
			if p.Config != nil {
				n += p.Config.GIDTableLen
			}
		}
	}
	return n
}
