// Package gputopo reads, from sysfs, where NVIDIA GPUs and RDMA NICs sit
// on the PCIe tree, and classifies a GPU–NIC pair the way
// `nvidia-smi topo -m` does, so the bandwidth core can put its buffer on
// the GPU nearest a rail and report the pair's relation.
//
// The relations are nvidia-smi's legend (printed under every
// `nvidia-smi topo -m` matrix, e.g. the ones quoted in NVIDIA/nccl#933 and
// #246) and NVML's nvmlGpuTopologyLevel_t, best first:
//
//	PIX  = Connection traversing at most a single PCIe bridge
//	       (NVML_TOPOLOGY_SINGLE: "all devices that only need traverse a single PCIe switch")
//	PXB  = Connection traversing multiple PCIe bridges (without traversing the PCIe Host Bridge)
//	       (NVML_TOPOLOGY_MULTIPLE: "all devices that need not traverse a host bridge")
//	PHB  = Connection traversing PCIe as well as a PCIe Host Bridge (typically the CPU)
//	       (NVML_TOPOLOGY_HOSTBRIDGE: "all devices that are connected to the same host bridge")
//	NODE = Connection traversing PCIe as well as the interconnect between PCIe Host Bridges within a NUMA node
//	       (NVML_TOPOLOGY_NODE: "same NUMA node but possibly multiple host bridges")
//	SYS  = Connection traversing PCIe as well as the SMP interconnect between NUMA nodes (e.g., QPI/UPI)
//	       (NVML_TOPOLOGY_SYSTEM)
//
// (NVML's enum as documented in https://docs.rs/nvml-wrapper/0.8.0/nvml_wrapper/enum_wrappers/device/enum.TopologyLevel.html.)
// In those terms a PCIe switch (its upstream port and downstream ports)
// is one "bridge". Classify works on the sysfs path of each device
// (/sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0/...): the first
// element is the host bridge (root bus), the PCI functions after it are
// the bridges down to the device. See Classify for the exact rule.
//
// Every read goes through a root directory ("/" on a host or in a pod that
// sees the host's sysfs; a fixture tree in tests); relative symlinks, as
// sysfs uses, resolve inside it.
package gputopo

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// NVIDIAVendor is NVIDIA's PCI vendor id.
const NVIDIAVendor = "0x10de"

// Level is a GPU–NIC relation as nvidia-smi names it.
type Level string

const (
	PIX  Level = "PIX"  // at most one PCIe switch between them
	PXB  Level = "PXB"  // several PCIe switches, below one host bridge
	PHB  Level = "PHB"  // through the PCIe host bridge (the CPU's root complex)
	NODE Level = "NODE" // different host bridges of one NUMA node
	SYS  Level = "SYS"  // across NUMA nodes / sockets (QPI/UPI, xGMI)
)

// Rank orders levels, best (0, PIX) first; an unknown level ranks last.
func (l Level) Rank() int {
	switch l {
	case PIX:
		return 0
	case PXB:
		return 1
	case PHB:
		return 2
	case NODE:
		return 3
	case SYS:
		return 4
	}
	return 5
}

// Sentinels; errors.Is finds them in this package's errors.
var (
	ErrNoPCIDevice = errors.New("no PCI device")
	ErrNoGPU       = errors.New("no NVIDIA GPU")
	ErrNotFound    = errors.New("not found in sysfs")
)

// PCIDevice is one PCI function as sysfs shows it.
type PCIDevice struct {
	Address  string `json:"address"`  // normalised, e.g. 0000:3b:00.0
	NUMANode int    `json:"numaNode"` // -1: unknown (the firmware gave none, or a non-NUMA kernel)
	// Path is where /sys/bus/pci/devices/<address> resolves, as a host
	// path: /sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0.
	Path string `json:"path"`
}

// HostBridge is the root bus the device hangs off ("pci0000:00"), "" if
// the path has none.
func (d PCIDevice) HostBridge() string {
	hb, _ := d.chain()
	return hb
}

// Bridges are the PCI functions between the host bridge and the device
// (root port first), from its path.
func (d PCIDevice) Bridges() []string {
	_, chain := d.chain()
	if len(chain) == 0 {
		return nil
	}
	return chain[:len(chain)-1]
}

// chain splits the path into the host bridge and the PCI functions from
// the root port down to the device itself. Non-PCI elements (platform
// devices above the host bridge on some arm64 machines, nested domains
// such as Intel VMD's pci10000:00) are skipped.
func (d PCIDevice) chain() (hostBridge string, functions []string) {
	for _, el := range strings.Split(d.Path, "/") {
		switch {
		case hostBridge == "" && isHostBridge(el):
			hostBridge = el
		case hostBridge != "":
			if a, ok := sysfsFunction(el); ok {
				functions = append(functions, a)
			}
		}
	}
	return hostBridge, functions
}

// sysfsFunction reports whether a sysfs path element names a PCI function
// the way sysfs does (domain:bus:device.function), normalised.
func sysfsFunction(el string) (string, bool) {
	if strings.Count(el, ":") != 2 {
		return "", false
	}
	a, err := NormalizeAddress(el)
	return a, err == nil
}

func isHostBridge(el string) bool {
	rest, ok := strings.CutPrefix(el, "pci")
	if !ok {
		return false
	}
	dom, bus, ok := strings.Cut(rest, ":")
	if !ok {
		return false
	}
	_, err1 := strconv.ParseUint(dom, 16, 32)
	_, err2 := strconv.ParseUint(bus, 16, 8)
	return err1 == nil && err2 == nil
}

// GPU is an NVIDIA display or 3D controller (class 0x0300xx or 0x0302xx).
type GPU struct {
	PCIDevice
	Device string `json:"device"` // PCI device id, e.g. 0x2330 (H100 SXM)
	Class  string `json:"class"`  // 0x030200 (3D controller) or 0x030000 (VGA)
}

// NormalizeAddress turns a PCI address in any of the usual spellings
// (lspci's 3b:00.0, sysfs's 0000:3b:00.0, CUDA's 0000:3B:00.0, NVML's
// 00000000:3B:00.0) into sysfs's: four-digit domain, lower case.
func NormalizeAddress(s string) (string, error) {
	s = strings.TrimSpace(s)
	parts := strings.Split(s, ":")
	var dom, bus, devfn string
	switch len(parts) {
	case 2:
		dom, bus, devfn = "0", parts[0], parts[1]
	case 3:
		dom, bus, devfn = parts[0], parts[1], parts[2]
	default:
		return "", fmt.Errorf("PCI address %q: want [domain:]bus:device.function", s)
	}
	dev, fn, ok := strings.Cut(devfn, ".")
	if !ok {
		return "", fmt.Errorf("PCI address %q: want [domain:]bus:device.function", s)
	}
	var v [4]uint64
	for i, p := range []struct {
		s    string
		bits int
	}{{dom, 32}, {bus, 8}, {dev, 5}, {fn, 3}} {
		n, err := strconv.ParseUint(p.s, 16, p.bits)
		if err != nil || p.s == "" || len(p.s) > 8 {
			return "", fmt.Errorf("PCI address %q: bad field %q", s, p.s)
		}
		v[i] = n
	}
	return fmt.Sprintf("%04x:%02x:%02x.%x", v[0], v[1], v[2], v[3]), nil
}

// Sysfs reads the PCI and RDMA views of sysfs under a root.
type Sysfs struct {
	root string
}

// New reads sysfs under root ("" or "/": this machine's).
func New(root string) (*Sysfs, error) {
	if root == "" {
		root = "/"
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("sysfs root %q: %w", root, err)
	}
	if fi, err := os.Stat(abs); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("sysfs root %s is not a readable directory (%v)", abs, err)
	}
	return &Sysfs{root: abs}, nil
}

func (s *Sysfs) path(hostPath string) string { return filepath.Join(s.root, hostPath) }

func (s *Sysfs) readTrim(hostPath string) (string, bool) {
	b, err := os.ReadFile(s.path(hostPath))
	if err != nil {
		return "", false
	}
	return strings.TrimSpace(string(b)), true
}

// resolve follows the symlinks of hostPath inside the root and returns
// the host path it lands on.
func (s *Sysfs) resolve(hostPath string) (string, error) {
	real, err := filepath.EvalSymlinks(s.path(hostPath))
	if err != nil {
		return "", err
	}
	rel, err := filepath.Rel(s.root, real)
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return "", fmt.Errorf("%s resolves outside %s", hostPath, s.root)
	}
	return "/" + filepath.ToSlash(rel), nil
}

// Device reads the PCI function at addr (any spelling NormalizeAddress
// takes) from /sys/bus/pci/devices.
func (s *Sysfs) Device(addr string) (PCIDevice, error) {
	a, err := NormalizeAddress(addr)
	if err != nil {
		return PCIDevice{}, err
	}
	link := "/sys/bus/pci/devices/" + a
	p, err := s.resolve(link)
	if err != nil {
		return PCIDevice{}, fmt.Errorf("PCI device %s: %w (%v)", a, ErrNotFound, err)
	}
	return PCIDevice{Address: a, NUMANode: s.numaNode(p), Path: p}, nil
}

func (s *Sysfs) numaNode(devPath string) int {
	v, ok := s.readTrim(devPath + "/numa_node")
	if !ok {
		return -1
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return -1
	}
	return n
}

// GPUs lists the NVIDIA GPUs on the PCI bus (vendor 0x10de, class
// 0x0300xx VGA or 0x0302xx 3D controller), sorted by address. None is an
// empty list, not an error; an unreadable bus is an error.
func (s *Sysfs) GPUs() ([]GPU, error) {
	entries, err := os.ReadDir(s.path("/sys/bus/pci/devices"))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("/sys/bus/pci/devices: %w (is sysfs mounted in this container?)", err)
		}
		return nil, err
	}
	out := []GPU{}
	for _, e := range entries {
		base := "/sys/bus/pci/devices/" + e.Name()
		vendor, _ := s.readTrim(base + "/vendor")
		class, _ := s.readTrim(base + "/class")
		if !strings.EqualFold(vendor, NVIDIAVendor) || !isGPUClass(class) {
			continue
		}
		d, err := s.Device(e.Name())
		if err != nil {
			return nil, err
		}
		dev, _ := s.readTrim(base + "/device")
		out = append(out, GPU{PCIDevice: d, Device: dev, Class: strings.ToLower(class)})
	}
	slices.SortFunc(out, func(a, b GPU) int { return strings.Compare(a.Address, b.Address) })
	return out, nil
}

func isGPUClass(class string) bool {
	c := strings.ToLower(class)
	return strings.HasPrefix(c, "0x0300") || strings.HasPrefix(c, "0x0302")
}

// NoPCIError says why an RDMA device has no PCI function behind it.
type NoPCIError struct {
	Device string // the RDMA device, e.g. rxe0
	Why    string
}

func (e *NoPCIError) Error() string {
	return fmt.Sprintf("RDMA device %s has no PCI device: %s", e.Device, e.Why)
}

// Is makes a NoPCIError match ErrNoPCIDevice.
func (e *NoPCIError) Is(target error) bool { return target == ErrNoPCIDevice }

// RDMADevice finds the PCI function behind an RDMA device: its
// /sys/class/infiniband/<dev>/device link (a HCA, an SR-IOV VF); for a
// software device without one (Soft-RoCE rxe, siw) the PCI function of
// the network interface it runs on (its "parent" attribute, else the
// netdev of its first GID), if that interface has one. Otherwise the
// error is a *NoPCIError (errors.Is ErrNoPCIDevice) saying why.
func (s *Sysfs) RDMADevice(ibdev string) (PCIDevice, error) {
	class := "/sys/class/infiniband/" + ibdev
	if _, err := os.Lstat(s.path(class)); err != nil {
		return PCIDevice{}, fmt.Errorf("RDMA device %s: %w (%s: %v)", ibdev, ErrNotFound, class, err)
	}
	if d, err := s.pciBehind(class + "/device"); err == nil {
		return d, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return PCIDevice{}, &NoPCIError{Device: ibdev, Why: err.Error()}
	}
	netdev, ok := s.readTrim(class + "/parent")
	if !ok || netdev == "" {
		netdev = s.firstGIDNetdev(class)
	}
	if netdev == "" {
		return PCIDevice{}, &NoPCIError{Device: ibdev, Why: "no device link, and no parent network interface (a software device?)"}
	}
	netClass := "/sys/class/net/" + netdev
	if _, err := os.Lstat(s.path(netClass)); err != nil {
		return PCIDevice{}, &NoPCIError{Device: ibdev, Why: fmt.Sprintf("a software device on network interface %s, which is not visible here (%s: another network namespace?)", netdev, netClass)}
	}
	d, err := s.pciBehind(netClass + "/device")
	if err != nil {
		why := fmt.Sprintf("a software device on network interface %s, which has no PCI device (virtual: dummy, veth, bridge, bond…)", netdev)
		if !errors.Is(err, fs.ErrNotExist) {
			why = fmt.Sprintf("a software device on network interface %s: %v", netdev, err)
		}
		return PCIDevice{}, &NoPCIError{Device: ibdev, Why: why}
	}
	return d, nil
}

// pciBehind resolves a "device" link and reads the PCI function it points
// at, or the nearest PCI function above it (a virtio NIC's device is
// virtioN, a child of its PCI function); fs.ErrNotExist when there is no
// link.
func (s *Sysfs) pciBehind(link string) (PCIDevice, error) {
	p, err := s.resolve(link)
	if err != nil {
		return PCIDevice{}, err
	}
	for dir := p; dir != "/" && dir != "."; dir = filepath.Dir(dir) {
		base := filepath.Base(dir)
		if isHostBridge(base) {
			break
		}
		if a, ok := sysfsFunction(base); ok {
			return PCIDevice{Address: a, NUMANode: s.numaNode(dir), Path: dir}, nil
		}
	}
	return PCIDevice{}, fmt.Errorf("%s points at %s, which is on no PCI function", link, p)
}

// firstGIDNetdev reads the netdev of the lowest GID index that has one on
// any port (RoCE).
func (s *Sysfs) firstGIDNetdev(class string) string {
	ports, _ := os.ReadDir(s.path(class + "/ports"))
	for _, p := range ports {
		dir := class + "/ports/" + p.Name() + "/gid_attrs/ndevs"
		entries, _ := os.ReadDir(s.path(dir))
		idx := []int{}
		for _, e := range entries {
			if n, err := strconv.Atoi(e.Name()); err == nil {
				idx = append(idx, n)
			}
		}
		slices.Sort(idx)
		for _, i := range idx {
			if n, ok := s.readTrim(dir + "/" + strconv.Itoa(i)); ok && n != "" {
				return n
			}
		}
	}
	return ""
}

// Relation is how a NIC and a GPU reach each other.
type Relation struct {
	Level Level `json:"level"`
	// CrossSocket: the pair sits on different NUMA nodes (SYS with both
	// nodes known): every byte crosses the CPU interconnect, and
	// GPUDirect RDMA bandwidth usually drops well below line rate.
	CrossSocket bool   `json:"crossSocket"`
	NUMANIC     int    `json:"numaNIC"`
	NUMAGPU     int    `json:"numaGPU"`
	Why         string `json:"why"` // the path, in words
}

// Classify relates a NIC and a GPU from their sysfs paths:
//
//   - different host bridges: NODE when both NUMA nodes are known and
//     equal, or both unknown (a kernel without NUMA: one node); SYS when
//     they differ (CrossSocket) or only one is known (worst case);
//   - same host bridge, no common bridge (the paths part at the root
//     complex): PHB;
//   - a common bridge, and at most one bridge below it on either side
//     (downstream port – upstream port – downstream port: one switch):
//     PIX;
//   - a common bridge with more below it (nested switches): PXB.
func Classify(nic, gpu PCIDevice) Relation {
	r := Relation{NUMANIC: nic.NUMANode, NUMAGPU: gpu.NUMANode}
	hbN, chN := nic.chain()
	hbG, chG := gpu.chain()
	if hbN == "" || hbG == "" || len(chN) == 0 || len(chG) == 0 {
		r.Level = SYS
		r.Why = fmt.Sprintf("PCIe path unknown (NIC %q, GPU %q): counted as SYS, the worst case", nic.Path, gpu.Path)
		return r
	}
	if hbN != hbG {
		switch {
		case nic.NUMANode >= 0 && nic.NUMANode == gpu.NUMANode:
			r.Level = NODE
			r.Why = fmt.Sprintf("different host bridges (%s, %s) on NUMA node %d", hbN, hbG, nic.NUMANode)
		case nic.NUMANode < 0 && gpu.NUMANode < 0:
			r.Level = NODE
			r.Why = fmt.Sprintf("different host bridges (%s, %s); no NUMA node known for either (a single-node system)", hbN, hbG)
		case nic.NUMANode >= 0 && gpu.NUMANode >= 0:
			r.Level, r.CrossSocket = SYS, true
			r.Why = fmt.Sprintf("across NUMA nodes: NIC on node %d (%s), GPU on node %d (%s): traffic crosses the CPU interconnect", nic.NUMANode, hbN, gpu.NUMANode, hbG)
		default:
			r.Level = SYS
			r.Why = fmt.Sprintf("different host bridges (%s, %s) and the NUMA node of one side is unknown (NIC %d, GPU %d): counted as SYS, the worst case", hbN, hbG, nic.NUMANode, gpu.NUMANode)
		}
		return r
	}
	ancN, ancG := chN[:len(chN)-1], chG[:len(chG)-1]
	c := 0
	for c < len(ancN) && c < len(ancG) && ancN[c] == ancG[c] {
		c++
	}
	if c == 0 {
		r.Level = PHB
		r.Why = fmt.Sprintf("through host bridge %s (different root ports)", hbN)
		return r
	}
	below := max(len(ancN), len(ancG)) - c
	if below <= 1 {
		r.Level = PIX
		r.Why = fmt.Sprintf("one PCIe switch: both below bridge %s", ancN[c-1])
		return r
	}
	r.Level = PXB
	r.Why = fmt.Sprintf("several PCIe switches: common bridge %s, up to %d bridges below it, host bridge %s not crossed", ancN[c-1], below, hbN)
	return r
}

// Nearest picks the GPU closest to the NIC at nicPCI: the best level,
// ties to the lowest PCI address. The relation says whether the pair is
// cross-socket.
func (s *Sysfs) Nearest(nicPCI string, gpus []GPU) (GPU, Relation, error) {
	nic, err := s.Device(nicPCI)
	if err != nil {
		return GPU{}, Relation{}, err
	}
	return NearestTo(nic, gpus)
}

// NearestTo is Nearest for a NIC already read.
func NearestTo(nic PCIDevice, gpus []GPU) (GPU, Relation, error) {
	if len(gpus) == 0 {
		return GPU{}, Relation{}, fmt.Errorf("nearest GPU to NIC %s: %w among the candidates", nic.Address, ErrNoGPU)
	}
	best, bestRel := -1, Relation{}
	for i, g := range gpus {
		rel := Classify(nic, g.PCIDevice)
		if best < 0 || rel.Level.Rank() < bestRel.Level.Rank() ||
			rel.Level.Rank() == bestRel.Level.Rank() && g.Address < gpus[best].Address {
			best, bestRel = i, rel
		}
	}
	return gpus[best], bestRel, nil
}
