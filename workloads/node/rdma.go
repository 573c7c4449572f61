package node

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

// RDMA is the host's view of /sys/class/infiniband: what ibstat and
// ibdev2netdev would print.
type RDMA struct {
	// ClassPresent: /sys/class/infiniband exists (ib_core is loaded).
	ClassPresent bool     `json:"classPresent"`
	Devices      []Device `json:"devices"`
}

// Device is one RDMA device (ibstat's "CA 'mlx5_0'").
type Device struct {
	Name string `json:"name"`
	// PCIAddress is the function the device sits on, e.g. "0000:01:00.0"
	// (the address seed 001's driver manager logs as "Mellanox device found").
	PCIAddress string `json:"pciAddress,omitempty"`
	// HCAType is ibstat's "CA type", e.g. "MT4123".
	HCAType   string `json:"hcaType,omitempty"`
	FWVersion string `json:"fwVersion,omitempty"`
	// BoardID is ibstat's "Board id" (the adapter's PSID, e.g.
	// MT_0000000222): firmware images are per board id.
	BoardID string `json:"boardId,omitempty"`
	Ports   []Port `json:"ports"`
	// PCIe is where the device's PCI function sits and what its links
	// allow; nil from probes older than this field.
	PCIe *DevicePCIe `json:"pcie,omitempty"`
}

// Port is one port of a device, from ports/<n>/{state,phys_state,rate,link_layer}.
type Port struct {
	Port int `json:"port"`
	// State is the raw sysfs text ("4: ACTIVE", "1: DOWN"); StateName its
	// name part. ibstat prints the same as "State: Active" / "State: Down".
	State     string `json:"state"`
	StateName string `json:"stateName"`
	// PhysState: "5: LinkUp", "2: Polling" (no peer: cable or switch port),
	// "3: Disabled" (port shut).
	PhysState     string `json:"physState"`
	PhysStateName string `json:"physStateName"`
	// Rate is the raw text ("200 Gb/sec (4X HDR)"); RateGbps its number,
	// the line rate bandwidth is compared with (seed 002: ≈100 Gb/s on the
	// V100 nodes, ≈200 Gb/s on the A100 nodes).
	Rate      string  `json:"rate"`
	RateGbps  float64 `json:"rateGbps"`
	LinkLayer string  `json:"linkLayer"`
	Active    bool    `json:"active"`
	LinkUp    bool    `json:"linkUp"`
	// Netdevs is the ibdev2netdev mapping for this port.
	Netdevs []Netdev `json:"netdevs"`
	// Config is the port's LID/SM, MTU, GID table and congestion
	// settings; nil from probes older than this field.
	Config *PortConfig `json:"config,omitempty"`
}

// Netdev is a network interface bound to an RDMA port.
type Netdev struct {
	Name string `json:"name"`
	// OperState from /sys/class/net/<name>/operstate ("up", "down"): what
	// ibdev2netdev prints in parentheses.
	OperState string `json:"operState,omitempty"`
}

// IB port state and physical state codes (the number before the colon in
// sysfs; IB spec values, as in the kernel's ib_port_state).
const (
	portStateActive = 4
	physStateLinkUp = 5
)

const classInfiniband = "/sys/class/infiniband"

// rdmamapMu serialises the redirection of rdmamap's package variables:
// rdmamap reads sysfs through exported globals, so two collections with
// different roots must not overlap. It only protects callers in this
// package; nothing else in the binary should use rdmamap concurrently.
var rdmamapMu sync.Mutex

// withRdmamapRoot points every path variable of rdmamap under root while fn
// runs and restores the previous values afterwards, even if fn panics.
func withRdmamapRoot(root string, fn func()) {
	rdmamapMu.Lock()
	defer rdmamapMu.Unlock()
	vars := []*string{
		&rdmamap.RdmaClassDir, &rdmamap.RdmaIbUcmDir, &rdmamap.RdmaUmadDir,
		&rdmamap.RdmaUverbsDir, &rdmamap.RdmaUcmDevice, &rdmamap.RdmaDeviceDir,
		&rdmamap.PciDevDir, &rdmamap.AuxDevDir,
	}
	saved := make([]string, len(vars))
	for i, v := range vars {
		saved[i] = *v
		*v = filepath.Join(root, *v)
	}
	defer func() {
		for i, v := range vars {
			*v = saved[i]
		}
	}()
	fn()
}

// listDevicesAndPorts asks rdmamap for devices and their port names.
// rdmamap lists only non-directory entries of class/infiniband: real sysfs
// class entries are symlinks, and so must fixture entries be.
func listDevicesAndPorts(h hostFS) map[string][]int {
	out := make(map[string][]int)
	withRdmamapRoot(h.root, func() {
		for _, dev := range rdmamap.GetRdmaDeviceList() {
			var ports []int
			for _, p := range rdmamap.GetPorts(dev) {
				if n, err := strconv.Atoi(p); err == nil {
					ports = append(ports, n)
				}
			}
			sort.Ints(ports)
			out[dev] = ports
		}
	})
	return out
}

func collectRDMA(h hostFS) RDMA {
	r := RDMA{ClassPresent: isDir(h, classInfiniband), Devices: []Device{}}
	devPorts := listDevicesAndPorts(h)
	names := make([]string, 0, len(devPorts))
	for n := range devPorts {
		names = append(names, n)
	}
	sort.Strings(names)
	netdevs := netdevsByDevice(h)
	topo, gpus := readGPUs(h)
	for _, name := range names {
		base := classInfiniband + "/" + name
		d := Device{Name: name, Ports: []Port{}}
		d.HCAType, _ = h.readTrim(base + "/hca_type")
		d.FWVersion, _ = h.readTrim(base + "/fw_ver")
		d.BoardID, _ = h.readTrim(base + "/board_id")
		d.PCIe = readDevicePCIe(h, name, gpus, topo)
		if target, err := os.Readlink(h.path(base + "/device")); err == nil {
			d.PCIAddress = filepath.Base(target)
		}
		for _, n := range devPorts[name] {
			d.Ports = append(d.Ports, readPort(h, name, n, netdevs[name][n]))
		}
		r.Devices = append(r.Devices, d)
	}
	return r
}

func readPort(h hostFS, dev string, n int, devNetdevs []string) Port {
	base := classInfiniband + "/" + dev + "/ports/" + strconv.Itoa(n)
	p := Port{Port: n}
	var code int
	p.State, _ = h.readTrim(base + "/state")
	code, p.StateName = splitCode(p.State)
	p.Active = code == portStateActive
	p.PhysState, _ = h.readTrim(base + "/phys_state")
	code, p.PhysStateName = splitCode(p.PhysState)
	p.LinkUp = code == physStateLinkUp
	p.Rate, _ = h.readTrim(base + "/rate")
	p.RateGbps = parseRateGbps(p.Rate)
	p.LinkLayer, _ = h.readTrim(base + "/link_layer")

	// RoCE ports name their netdevs in the GID table (bond0 for a bonded
	// pair, not its slaves); IB ports have none there, so IPoIB interfaces
	// are found from the netdev side. The table is read once, entry by
	// entry (up to 1024 per port: the largest read of the probe).
	gids, tableLen := readGIDs(h, base)
	var names []string
	for _, g := range gids {
		if g.Netdev != "" {
			names = append(names, g.Netdev)
		}
	}
	if len(names) == 0 {
		names = append(names, devNetdevs...)
	}
	sort.Strings(names)
	p.Netdevs = []Netdev{}
	for i, name := range names {
		if i > 0 && names[i-1] == name {
			continue
		}
		state, _ := h.readTrim("/sys/class/net/" + name + "/operstate")
		p.Netdevs = append(p.Netdevs, Netdev{Name: name, OperState: state})
	}
	first := ""
	if len(p.Netdevs) > 0 {
		first = p.Netdevs[0].Name
	}
	p.Config = readPortConfig(h, base, p.LinkLayer, first)
	p.Config.GIDs, p.Config.GIDTableLen = gids, tableLen
	return p
}

// splitCode splits "4: ACTIVE" into 4 and "ACTIVE"; code is 0 when absent.
func splitCode(s string) (int, string) {
	num, name, ok := strings.Cut(s, ":")
	if !ok {
		return 0, strings.TrimSpace(s)
	}
	code, _ := strconv.Atoi(strings.TrimSpace(num))
	return code, strings.TrimSpace(name)
}

// parseRateGbps reads the number in "200 Gb/sec (4X HDR)" or
// "2.5 Gb/sec (1X SDR)"; 0 when unparsable.
func parseRateGbps(s string) float64 {
	f := strings.Fields(s)
	if len(f) == 0 {
		return 0
	}
	v, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return 0
	}
	return v
}

// netdevsByDevice maps IPoIB (and RoCE PF) interfaces to device and port the
// way ibdev2netdev does: an interface belongs to device D when
// /sys/class/net/<if>/device/infiniband/D exists, and to port dev_port+1
// (dev_id on kernels without dev_port). There is no such helper in rdmamap.
func netdevsByDevice(h hostFS) map[string]map[int][]string {
	out := make(map[string]map[int][]string)
	ifaces, _ := h.readDirNames("/sys/class/net")
	for _, ifc := range ifaces {
		base := "/sys/class/net/" + ifc
		devs, err := h.readDirNames(base + "/device/infiniband")
		if err != nil {
			continue
		}
		port := netdevPort(h, base)
		for _, d := range devs {
			if out[d] == nil {
				out[d] = make(map[int][]string)
			}
			out[d][port] = append(out[d][port], ifc)
		}
	}
	return out
}

func netdevPort(h hostFS, base string) int {
	if s, ok := h.readTrim(base + "/dev_port"); ok {
		if n, err := strconv.Atoi(s); err == nil {
			return n + 1
		}
	}
	if s, ok := h.readTrim(base + "/dev_id"); ok {
		if n, err := strconv.ParseInt(s, 0, 32); err == nil {
			return int(n) + 1
		}
	}
	return 1
}

// PortsDown lists every port whose state was read and is not ACTIVE as
// "mlx5_1/1: 1: DOWN (2: Polling)", ibstat's State and Physical state in one
// line (seed 002). A port whose state file could not be read is not down:
// it is unknown, and PortsUnknown lists it.
func (r Report) PortsDown() []string {
	out := []string{}
	for _, d := range r.RDMA.Devices {
		for _, p := range d.Ports {
			if !p.Active && p.State != "" {
				out = append(out, fmt.Sprintf("%s/%d: %s (%s)", d.Name, p.Port, p.State, p.PhysState))
			}
		}
	}
	return out
}

// PortsUnknown lists the ports whose state could not be read ("mlx5_1/1").
func (r Report) PortsUnknown() []string {
	out := []string{}
	for _, d := range r.RDMA.Devices {
		for _, p := range d.Ports {
			if p.State == "" {
				out = append(out, fmt.Sprintf("%s/%d", d.Name, p.Port))
			}
		}
	}
	return out
}
