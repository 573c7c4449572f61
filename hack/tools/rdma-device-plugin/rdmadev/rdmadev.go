// Package rdmadev finds RDMA devices in sysfs, filters them with selectors and
// turns the selection into the device nodes a container needs. It is the
// testable part of rdma-device-plugin: every path is taken under a root
// directory, so tests point it at a fixture tree shaped like real sysfs (class
// entries are symlinks into /sys/devices).
package rdmadev

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/Mellanox/rdmamap"
)

// Device is one RDMA device (an entry of /sys/class/infiniband).
type Device struct {
	Name string `json:"name"` // rxe0, mlx5_0
	// Driver is the kernel driver behind the device: the driver bound to its
	// parent (PCI or auxiliary) device, e.g. mlx5_core; for software devices,
	// which have no parent device, rdma_rxe (RoCE, node type CA) or siw (iWARP).
	Driver string `json:"driver"`
	// LinkTypes are the distinct link layers of its ports: Ethernet, InfiniBand.
	LinkTypes []string `json:"linkTypes"`
	// Netdevs are the network interfaces the device sits on: a software
	// device's parent, the parent device's net/ directory, or else the
	// netdevs of its first GID slots' attributes.
	Netdevs []string `json:"netdevs"`
	// PortStates maps port number to its state ("ACTIVE", "DOWN", ...).
	PortStates map[string]string `json:"portStates"`
	// CharDevs are its device nodes under /dev/infiniband (uverbsN, umadN,
	// issmN, ucmN), as paths on the node (not under the root).
	CharDevs []string `json:"charDevs"`
}

// Selector picks devices. Within a field any value may match; all non-empty
// fields must match (the Mellanox shared device plugin's semantics).
type Selector struct {
	Devices   []string `json:"rdmaDevices,omitempty"` // RDMA device names
	IfNames   []string `json:"ifNames,omitempty"`     // netdev names
	Drivers   []string `json:"drivers,omitempty"`     // rdma_rxe, mlx5_core
	LinkTypes []string `json:"linkTypes,omitempty"`   // Ethernet, InfiniBand (case-insensitive; "ether"/"ib" accepted)
}

// Empty reports whether the selector has no criteria (it then selects all).
func (s Selector) Empty() bool {
	return len(s.Devices) == 0 && len(s.IfNames) == 0 && len(s.Drivers) == 0 && len(s.LinkTypes) == 0
}

// Matches reports whether d satisfies the selector.
func (s Selector) Matches(d Device) bool {
	if len(s.Devices) > 0 && !anyEqual(s.Devices, []string{d.Name}, false) {
		return false
	}
	if len(s.IfNames) > 0 && !anyEqual(s.IfNames, d.Netdevs, false) {
		return false
	}
	if len(s.Drivers) > 0 && !anyEqual(s.Drivers, []string{d.Driver}, false) {
		return false
	}
	if len(s.LinkTypes) > 0 {
		want := make([]string, len(s.LinkTypes))
		for i, l := range s.LinkTypes {
			want[i] = NormalizeLinkType(l)
		}
		if !anyEqual(want, d.LinkTypes, true) {
			return false
		}
	}
	return true
}

// NormalizeLinkType maps the spellings people use to sysfs's link_layer values.
func NormalizeLinkType(s string) string {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "ether", "ethernet", "eth", "roce":
		return "Ethernet"
	case "infiniband", "ib":
		return "InfiniBand"
	}
	return s
}

func anyEqual(want, have []string, fold bool) bool {
	for _, w := range want {
		for _, h := range have {
			if w == h || (fold && strings.EqualFold(w, h)) {
				return true
			}
		}
	}
	return false
}

// gidSlotsRead is how many GID slots per port Scan reads netdev names from
// when a device names no netdev otherwise.
const gidSlotsRead = 16

// Scanner reads RDMA devices under Root ("/" on a node).
type Scanner struct {
	Root string
}

// rdmamap reads sysfs through package variables; a scan redirects them to
// the scanner's root and restores them, one scan at a time.
var rdmamapMu sync.Mutex

func (s Scanner) path(p string) string { return filepath.Join(s.Root, p) }

// Scan lists every RDMA device, sorted by name. A node without RDMA (no
// /sys/class/infiniband) has none; that is not an error.
func (s Scanner) Scan() ([]Device, error) {
	rdmamapMu.Lock()
	defer rdmamapMu.Unlock()
	saved := [...]*string{&rdmamap.RdmaClassDir, &rdmamap.RdmaIbUcmDir, &rdmamap.RdmaUmadDir,
		&rdmamap.RdmaUverbsDir, &rdmamap.RdmaUcmDevice, &rdmamap.RdmaDeviceDir}
	old := make([]string, len(saved))
	for i, p := range saved {
		old[i] = *p
		*p = s.path(*p)
	}
	defer func() {
		for i, p := range saved {
			*p = old[i]
		}
	}()

	if _, err := os.Stat(rdmamap.RdmaClassDir); os.IsNotExist(err) {
		return nil, nil
	}
	names := rdmamap.GetRdmaDeviceList()
	sort.Strings(names)
	devs := make([]Device, 0, len(names))
	for _, n := range names {
		d, err := s.device(n)
		if err != nil {
			return nil, err
		}
		devs = append(devs, d)
	}
	return devs, nil
}

func (s Scanner) device(name string) (Device, error) {
	dir := filepath.Join(rdmamap.RdmaClassDir, name)
	d := Device{Name: name, PortStates: map[string]string{}}
	netdevs := map[string]bool{}
	links := map[string]bool{}
	ports := rdmamap.GetPorts(name)
	sort.Strings(ports)
	for _, p := range ports {
		pdir := filepath.Join(dir, "ports", p)
		if l := readTrim(filepath.Join(pdir, "link_layer")); l != "" {
			links[l] = true
		}
		// "4: ACTIVE"
		st := readTrim(filepath.Join(pdir, "state"))
		if i := strings.Index(st, ": "); i >= 0 {
			st = st[i+2:]
		}
		d.PortStates[p] = st
	}
	// Hardware: the parent device's net/ directory and bound driver.
	if ents, err := os.ReadDir(filepath.Join(dir, "device", "net")); err == nil {
		for _, e := range ents {
			netdevs[e.Name()] = true
		}
	}
	if t, err := os.Readlink(filepath.Join(dir, "device", "driver")); err == nil {
		d.Driver = filepath.Base(t)
	} else {
		// Software devices (rxe, siw) have no parent device but name their
		// netdev in "parent".
		if p := readTrim(filepath.Join(dir, "parent")); p != "" {
			netdevs[p] = true
			switch nt := readTrim(filepath.Join(dir, "node_type")); {
			case strings.Contains(nt, "RNIC"):
				d.Driver = "siw"
			case strings.Contains(nt, "CA"):
				d.Driver = "rdma_rxe"
			}
		}
	}
	// Neither a parent netdev nor a net/ directory: the netdevs named by the
	// first GID slots' attributes. Only the first few: a port has up to 1024
	// slots (rxe: 1024, all with files), and reading every one on each rescan
	// cost a software device's node a third of its CPU under TCG.
	if len(netdevs) == 0 {
		for _, p := range ports {
			for i := 0; i < gidSlotsRead; i++ {
				// Unused GID slots read as EINVAL or empty.
				if n := readTrim(filepath.Join(dir, "ports", p, "gid_attrs", "ndevs", strconv.Itoa(i))); n != "" {
					netdevs[n] = true
				}
			}
		}
	}
	for n := range netdevs {
		d.Netdevs = append(d.Netdevs, n)
	}
	sort.Strings(d.Netdevs)
	for l := range links {
		d.LinkTypes = append(d.LinkTypes, l)
	}
	sort.Strings(d.LinkTypes)
	for _, c := range rdmamap.GetRdmaCharDevices(name) {
		if c == rdmamap.RdmaUcmDevice {
			continue // shared by all devices; see Specs
		}
		d.CharDevs = append(d.CharDevs, s.unroot(c))
	}
	sort.Strings(d.CharDevs)
	return d, nil
}

// unroot turns a path under the root back into the node's path.
func (s Scanner) unroot(p string) string {
	r := filepath.Clean(s.Root)
	if r == "/" || r == "." {
		return p
	}
	if rel, err := filepath.Rel(r, p); err == nil && !strings.HasPrefix(rel, "..") {
		return "/" + rel
	}
	return p
}

// HasRdmaCM reports whether /dev/infiniband/rdma_cm exists under the root.
func (s Scanner) HasRdmaCM() bool {
	_, err := os.Stat(s.path("/dev/infiniband/rdma_cm"))
	return err == nil
}

func readTrim(p string) string {
	b, err := os.ReadFile(p)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// Select returns the devices the selector matches, in order.
func Select(devs []Device, s Selector) []Device {
	var out []Device
	for _, d := range devs {
		if s.Matches(d) {
			out = append(out, d)
		}
	}
	return out
}

// Spec is one device node to give a container (the DeviceSpec of the kubelet
// device-plugin API, without the dependency).
type Spec struct {
	HostPath      string
	ContainerPath string
	Permissions   string // "rw": read and write, no mknod
}

// Specs lists the device nodes a container needs to use the selected
// devices: their verbs devices (uverbsN; plus umad/issm/ucm when present, as
// the shared device plugin passes them) and, once, /dev/infiniband/rdma_cm
// when the node has it. The container sees the same paths as the host.
func Specs(devs []Device, withRdmaCM bool) []Spec {
	seen := map[string]bool{}
	var out []Spec
	add := func(p string) {
		if seen[p] {
			return
		}
		seen[p] = true
		out = append(out, Spec{HostPath: p, ContainerPath: p, Permissions: "rw"})
	}
	for _, d := range devs {
		for _, c := range d.CharDevs {
			add(c)
		}
	}
	if withRdmaCM && len(out) > 0 {
		add("/dev/infiniband/rdma_cm")
	}
	return out
}

// Healthy reports whether the selection can serve pods: at least one device
// with a verbs device node and, when requireActive, an ACTIVE port. When it
// cannot, the reason names what is missing.
func Healthy(devs []Device, requireActive bool) (bool, string) {
	if len(devs) == 0 {
		return false, "no RDMA device matches the selectors"
	}
	var why []string
	for _, d := range devs {
		hasVerbs := false
		for _, c := range d.CharDevs {
			if strings.HasPrefix(filepath.Base(c), "uverbs") {
				hasVerbs = true
			}
		}
		active := false
		for _, st := range d.PortStates {
			if st == "ACTIVE" {
				active = true
			}
		}
		switch {
		case !hasVerbs:
			why = append(why, fmt.Sprintf("%s has no uverbs device (ib_uverbs not loaded?)", d.Name))
		case requireActive && !active:
			why = append(why, fmt.Sprintf("%s has no ACTIVE port (ports %v)", d.Name, d.PortStates))
		default:
			return true, ""
		}
	}
	return false, strings.Join(why, "; ")
}
