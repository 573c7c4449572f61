package doctor

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/rdmasuite/rdmasuite/workloads/node"
)

// host-config-differs compares the nodes of one SKU with each other: a
// node whose firmware, HCA types or port count differ from its SKU's
// majority, or a port whose rate, MTU, RoCE v2 GID index, ECN/PFC state,
// partition keys or PCIe link differ from the majority of the SKU's ports.
// The majority is a value more than half of the compared nodes (ports)
// hold, among at least minCompared of them: with fewer there is no
// majority to trust and nothing is said. Nodes whose SKU is unknown are
// compared with the nodes of the same HCA types only, never across
// hardware.

const HostConfigDiffers = "host-config-differs"

const minCompared = 3

var _ = register(Rule{ID: HostConfigDiffers, Severity: Warning, Seed: "field",
	Cause: "a node's host RDMA configuration differs from the majority of its SKU's nodes (or a port from the majority of the SKU's ports): another firmware, " +
		"HCA type, port count or rate, PCIe link, MTU, RoCE v2 GID indices or types, ECN/PFC state or partition keys; such a node behaves differently from its 255 peers " +
		"(Meta gcm's firmware manifest check, azurehpc-health-checks' expected topology)",
	Fix: "bring the node in line with its peers (firmware update with mlxfwmanager, the netdev MTU, mlnx_qos, the SM's partitions), or pin the intended values in the " +
		"SKU's host: block of the thresholds file so the majority is not the only reference",
	Raises: "host probe, per SKU of the run (thresholds match; nodes without a SKU grouped by HCA types): a node fact (firmware per HCA type, HCA types, ports in use) or a " +
		"port fact (rate and link layer, netdev/active MTU, the indices of its IPv4 addresses' RoCE v2 GIDs and those addresses' GID types, ECN and PFC priorities, partition keys, the PCIe link of its device) " +
		"that differs from a value held by more than half of at least 3 compared nodes or ports (a port compared only with the SKU's ports of the same HCA type and link layer). " +
		"The evidence names the node's value and the majority's with its count",
	Silent: []string{"fewer than 3 nodes (ports) with the fact, or no value held by more than half of them",
		"a fact that is unknown on the node (not reported, not exposed): it is not compared",
		"ports declared unused and ports that are not ACTIVE"},
	Eval: func(v *View) []Hit {
		groups := map[string][]*NodeView{}
		var keys []string
		for _, n := range v.Nodes {
			if n.Host == nil || len(n.Host.Devices) == 0 {
				continue
			}
			g := v.compareGroup(n)
			if groups[g] == nil {
				keys = append(keys, g)
			}
			groups[g] = append(groups[g], n)
		}
		sort.Strings(keys)
		var out []Hit
		for _, g := range keys {
			out = append(out, v.compareGroupFacts(g, groups[g])...)
		}
		return out
	}})

// compareGroup is who a node is compared with: its SKU, else its HCA types.
func (v *View) compareGroup(n *NodeView) string {
	if k, ok := v.SKUs[n.Name]; ok && k.Name != "" {
		return "SKU " + k.Name
	}
	var types []string
	for _, d := range n.Host.Devices {
		types = append(types, d.HCAType)
	}
	sort.Strings(types)
	return "nodes with HCA types " + strings.Join(dedupSorted(types), "+")
}

func dedupSorted(s []string) []string {
	out := s[:0]
	for i, x := range s {
		if i == 0 || x != s[i-1] {
			out = append(out, x)
		}
	}
	return out
}

// fact is one compared value at one place (a node, or a node's port).
// A port's facts are compared only with ports of the same class (HCA type
// and link layer): a node's InfiniBand compute rails and its Ethernet
// front-end or storage NIC are different ports, not outliers of each
// other.
type fact struct {
	node, where, class, name, value string
	// cap is what the value allows the port to carry (Gb/s; 0: it caps
	// nothing, e.g. a GID index).
	cap float64
}

// nodeFacts and portFacts are what is compared; a value "" is unknown and
// left out.
func (v *View) hostFacts(n *NodeView) []fact {
	var fs []fact
	class := ""
	add := func(where, name, value string) {
		if value != "" {
			fs = append(fs, fact{node: n.Name, where: where, class: class, name: name, value: value})
		}
	}
	capLast := func(c float64) {
		if len(fs) > 0 {
			fs[len(fs)-1].cap = c
		}
	}
	var fw, types []string
	for _, d := range v.usedDevices(n) {
		if d.FWVersion != "" {
			fw = append(fw, d.HCAType+" "+d.FWVersion)
		}
		types = append(types, d.HCAType)
	}
	sort.Strings(fw)
	sort.Strings(types)
	add("", "firmware", strings.Join(dedupSorted(fw), ", "))
	add("", "HCA types", strings.Join(types, ", "))
	ports := 0
	v.devicePorts(n, func(d node.Device, p node.Port, id string) {
		ports++
		class = strings.TrimSpace(d.HCAType + " " + p.LinkLayer)
		add(id, "rate", fmt.Sprintf("%g Gb/s %s", p.RateGbps, p.LinkLayer))
		if l, gbps := pcieOf(d); l != "" {
			add(id, "PCIe link", l)
			capLast(gbps)
		}
		c := p.Config
		if c == nil {
			return
		}
		if p.LinkLayer == "Ethernet" && c.NetdevMTU > 0 {
			add(id, "MTU", fmt.Sprintf("netdev %d (active %d)", c.NetdevMTU, c.ActiveMTU))
			capLast(mtuCap(p.RateGbps, c.ActiveMTU))
		}
		if p.LinkLayer == "Ethernet" {
			idx, types := ipv4GIDs(c.GIDs)
			add(id, "RoCE v2 GID indices of its IPv4 addresses", idx)
			add(id, "GID types of its IPv4 addresses", types)
		}
		if c.ECN != nil {
			add(id, "ECN", fmt.Sprintf("np %v rp %v", c.ECN.NP, c.ECN.RP))
		}
		if c.PFC != nil {
			add(id, "PFC", fmt.Sprintf("priorities %v trust %s", c.PFC.Enabled, c.PFC.Trust))
		}
		if p.LinkLayer == "InfiniBand" && len(c.PKeys) > 0 {
			add(id, "partition keys", strings.Join(c.PKeys, " "))
		}
	})
	class = ""
	if ports > 0 {
		add("", "ports in use", fmt.Sprint(ports))
	}
	return fs
}

func pcieOf(d node.Device) (string, float64) {
	if d.PCIe == nil || d.PCIe.Path == nil {
		return "", 0
	}
	l, all := d.PCIe.Path.Narrowest()
	if !all {
		return "", 0
	}
	return fmt.Sprintf("%gGT/s x%d", l.CurGTs, l.CurWidth), l.CurGbps()
}

// ipv4GIDs are the indices of the RoCE v2 GIDs of the port's IPv4
// addresses ("3", "3 5" with a second address: NCCL_IB_GID_INDEX and
// peers that pick by index then disagree) and the GID types those
// addresses have ("IB/RoCE v1, RoCE v2" on mlx5, "RoCE v2" on rxe); both
// "" (not compared) for a port without an IPv4 GID.
func ipv4GIDs(gs []node.GID) (indices, types string) {
	var idx, ts []string
	for _, g := range gs {
		if g.IP == "" || strings.Contains(g.IP, ":") {
			continue
		}
		if g.IsV2() {
			idx = append(idx, fmt.Sprint(g.Index))
		}
		if !slices.Contains(ts, g.Type) {
			ts = append(ts, g.Type)
		}
	}
	sort.Strings(ts)
	return strings.Join(idx, " "), strings.Join(ts, ", ")
}

// compareGroupFacts finds, per fact name, the majority value among the
// group's nodes (node facts) or ports (port facts) and names every place
// that differs.
func (v *View) compareGroupFacts(group string, nodes []*NodeView) []Hit {
	byName := map[string][]fact{}
	var names []string
	for _, n := range nodes {
		for _, f := range v.hostFacts(n) {
			k := f.name
			if f.where != "" {
				k = "port " + k + "\x00" + f.class
			}
			if byName[k] == nil {
				names = append(names, k)
			}
			byName[k] = append(byName[k], f)
		}
	}
	sort.Strings(names)
	evidence := map[string][]string{}
	caps := map[string][]Cap{}
	for _, name := range names {
		fs := byName[name]
		if len(fs) < minCompared {
			continue
		}
		count := map[string]int{}
		for _, f := range fs {
			count[f.value]++
		}
		major, m := "", 0
		for val, c := range count {
			if c > m || c == m && val < major {
				major, m = val, c
			}
		}
		if 2*m <= len(fs) {
			continue
		}
		what := "nodes"
		if strings.HasPrefix(name, "port ") {
			what = strings.TrimSpace(fs[0].class + " ports")
		}
		for _, f := range fs {
			if f.value == major {
				continue
			}
			place := ""
			if f.where != "" {
				place = " port " + f.where
			}
			evidence[f.node] = append(evidence[f.node], fmt.Sprintf("host:%s %s %s; %d other %s of %s: %s",
				place, f.name, f.value, m, what, group, major))
			if f.cap > 0 && f.where != "" {
				caps[f.node] = append(caps[f.node], Cap{Port: f.where, Gbps: f.cap})
			}
		}
	}
	var out []Hit
	for _, n := range nodes {
		if ev := evidence[n.Name]; len(ev) > 0 {
			h := hit(n.Name, ev...)
			h.Caps = caps[n.Name]
			out = append(out, h)
		}
	}
	return out
}
