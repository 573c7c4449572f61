// Package pcilink reads, from sysfs, the PCIe links on the path from a
// root port down to a device (a ConnectX NIC, a GPU): each link's trained
// and maximum speed and width, the narrowest one (the one that caps what
// the device can move), the bandwidth that link allows, and the ACS
// control of the bridges on the way. This is what `lspci -vv` prints as
// LnkCap / LnkSta / ACSCtl, read without lspci on the node.
//
// sysfs spells speeds "16.0 GT/s PCIe" (kernels since 5.3), "16 GT/s" or
// "8 GT/s" before that, "Unknown" (or "Unknown speed") when the function
// does not say; widths are lane counts ("16"). A function that is not
// PCIe (a conventional PCI device, a root-complex integrated endpoint)
// has no such files: its link is unknown, never assumed good.
package pcilink

import (
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Link is one PCI function's link as sysfs reports it: the link on its
// upstream side for an endpoint or a switch's upstream port, the link
// below it for a root port or a switch's downstream port. Both ends of one
// link report the same trained values, so the narrowest link on a path is
// the narrowest function on it.
type Link struct {
	Address string `json:"address"` // 0000:b3:00.0
	// Source is the host directory the four attributes were read from.
	Source   string  `json:"source"`
	CurGTs   float64 `json:"curGTs"` // per-lane transfer rate trained now
	CurWidth int     `json:"curWidth"`
	MaxGTs   float64 `json:"maxGTs"` // what the function can do
	MaxWidth int     `json:"maxWidth"`
	// Unknown names what could not be read ("current_link_speed: Unknown").
	Unknown string `json:"unknown,omitempty"`
}

// Known says whether all four values were read.
func (l Link) Known() bool { return l.Unknown == "" }

// CurGbps is what the trained link allows: lanes × rate × encoding.
func (l Link) CurGbps() float64 { return Gbps(l.CurGTs, l.CurWidth) }

// MaxGbps is what the function's own maximum allows.
func (l Link) MaxGbps() float64 { return Gbps(l.MaxGTs, l.MaxWidth) }

// String is lspci's way of saying it: "16GT/s x8 (max 16GT/s x16)".
func (l Link) String() string {
	if !l.Known() {
		return l.Address + ": unknown (" + l.Unknown + ")"
	}
	return fmt.Sprintf("%s: %sGT/s x%d (max %sGT/s x%d)", l.Address, fmtGTs(l.CurGTs), l.CurWidth, fmtGTs(l.MaxGTs), l.MaxWidth)
}

// Degraded says whether the link trained below its own maximum speed or
// width (lspci's "(downgraded)").
func (l Link) Degraded() bool {
	return l.Known() && (l.CurGTs < l.MaxGTs || l.CurWidth < l.MaxWidth)
}

func fmtGTs(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// Encoding is the share of the raw transfer rate that carries data after
// line coding: 8b/10b for 2.5 and 5 GT/s (PCIe 1.x, 2.x), 128b/130b for 8,
// 16 and 32 GT/s (3.0 to 5.0), and for 64 GT/s (6.0, PAM4 with FLIT mode)
// 242/256 (the FLIT's FEC and CRC bytes). PCI-SIG's specifications give
// these; TLP and DLLP headers take a further 5–15 % depending on the
// payload size, which is why a x16 Gen4 slot (252 Gb/s here) moves about
// 220–230 Gb/s of RDMA payload.
func Encoding(gts float64) float64 {
	switch {
	case gts <= 0:
		return 0
	case gts <= 5:
		return 8.0 / 10
	case gts <= 32:
		return 128.0 / 130
	default:
		return 242.0 / 256
	}
}

// EncodingName names the line coding at a rate.
func EncodingName(gts float64) string {
	switch {
	case gts <= 5:
		return "8b/10b"
	case gts <= 32:
		return "128b/130b"
	default:
		return "242/256 FLIT"
	}
}

// Gbps is lanes × per-lane rate × encoding, rounded to 0.1 Gb/s.
func Gbps(gts float64, width int) float64 {
	return math.Round(gts*float64(width)*Encoding(gts)*10) / 10
}

// Path is the chain of links from the root port down to one device.
type Path struct {
	Device string `json:"device"` // the device's address
	// Links are root port first, the device itself last.
	Links []Link `json:"links"`
	// PhysFn is set when the device is an SR-IOV virtual function: a VF
	// has no link of its own, its physical function's is the one read.
	PhysFn string `json:"physFn,omitempty"`
}

// Narrowest is the known link that allows the least, and whether every
// link on the path was known (a path with an unknown link cannot be said
// to be uncapped).
func (p Path) Narrowest() (Link, bool) {
	var best Link
	all := len(p.Links) > 0
	found := false
	for _, l := range p.Links {
		if !l.Known() {
			all = false
			continue
		}
		if !found || l.CurGbps() < best.CurGbps() {
			best, found = l, true
		}
	}
	return best, all && found
}

// DeviceMax is what the device's own maximum link allows: the figure the
// narrowest link is held against.
func (p Path) DeviceMax() (Link, bool) {
	if len(p.Links) == 0 {
		return Link{}, false
	}
	d := p.Links[len(p.Links)-1]
	return d, d.Known()
}

// Capped says whether the path allows less than the device's own maximum,
// and by which link.
func (p Path) Capped() (Link, bool) {
	n, ok := p.Narrowest()
	d, dok := p.DeviceMax()
	if !ok || !dok {
		return Link{}, false
	}
	return n, n.CurGbps() < d.MaxGbps()
}

// Read reads the path of the PCI function whose sysfs directory is devPath
// (a host path such as /sys/devices/pci0000:b0/0000:b0:02.0/0000:b3:00.0)
// under root. A VF is read through its physfn link.
func Read(root, devPath string) (Path, error) {
	p := Path{Device: filepath.Base(devPath)}
	if target, err := filepath.EvalSymlinks(filepath.Join(root, devPath, "physfn")); err == nil {
		rel, rerr := filepath.Rel(root, target)
		if rerr != nil || strings.HasPrefix(rel, "..") {
			return p, fmt.Errorf("%s/physfn resolves outside %s", devPath, root)
		}
		devPath = "/" + filepath.ToSlash(rel)
		p.PhysFn = filepath.Base(devPath)
	}
	els := strings.Split(strings.Trim(devPath, "/"), "/")
	var dirs []string
	hostBridge := false
	for i, el := range els {
		switch {
		case !hostBridge:
			hostBridge = strings.HasPrefix(el, "pci") && strings.Count(el, ":") == 1
		case strings.Count(el, ":") == 2 && strings.Contains(el, "."):
			dirs = append(dirs, "/"+strings.Join(els[:i+1], "/"))
		}
	}
	if !hostBridge || len(dirs) == 0 {
		return p, fmt.Errorf("%s is not a PCI function under a PCI host bridge", devPath)
	}
	for _, d := range dirs {
		p.Links = append(p.Links, readLink(root, d))
	}
	return p, nil
}

func readLink(root, dir string) Link {
	l := Link{Address: filepath.Base(dir), Source: dir}
	var missing []string
	speed := func(name string) float64 {
		b, err := os.ReadFile(filepath.Join(root, dir, name))
		if err != nil {
			missing = append(missing, dir+"/"+name+" absent")
			return 0
		}
		v, ok := ParseSpeed(string(b))
		if !ok {
			missing = append(missing, name+": "+strings.TrimSpace(string(b)))
		}
		return v
	}
	width := func(name string) int {
		b, err := os.ReadFile(filepath.Join(root, dir, name))
		if err != nil {
			missing = append(missing, dir+"/"+name+" absent")
			return 0
		}
		n, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil || n <= 0 {
			missing = append(missing, name+": "+strings.TrimSpace(string(b)))
			return 0
		}
		return n
	}
	l.CurGTs, l.CurWidth = speed("current_link_speed"), width("current_link_width")
	l.MaxGTs, l.MaxWidth = speed("max_link_speed"), width("max_link_width")
	l.Unknown = strings.Join(missing, "; ")
	return l
}

// ParseSpeed reads "16.0 GT/s PCIe", "8 GT/s" or "2.5 GT/s"; false for
// "Unknown", "Unknown speed" and anything else.
func ParseSpeed(s string) (float64, bool) {
	f := strings.Fields(strings.TrimSpace(s))
	if len(f) < 2 || f[1] != "GT/s" {
		return 0, false
	}
	v, err := strconv.ParseFloat(f[0], 64)
	if err != nil || v <= 0 {
		return 0, false
	}
	return v, true
}

// ACS is a bridge's Access Control Services control register: whether
// peer-to-peer requests and completions between its downstream ports are
// redirected up to the root complex (which makes GPUDirect traffic between
// a GPU and a NIC under one switch cross the CPU).
type ACS struct {
	Address string `json:"address"`
	Source  string `json:"source"`
	// Present: the function has an ACS capability. Control is its control
	// register when read.
	Present bool   `json:"present"`
	Control uint16 `json:"control"`
	// Unknown says why it could not be read (config space beyond 256 bytes
	// is readable by root only).
	Unknown string `json:"unknown,omitempty"`
}

// ACS control bits (PCIe base specification, ACS Extended Capability).
const (
	ACSSourceValidation = 1 << 0
	ACSTranslationBlock = 1 << 1
	ACSRequestRedirect  = 1 << 2
	ACSCompletionRedir  = 1 << 3
	ACSUpstreamForward  = 1 << 4
	ACSEgressControl    = 1 << 5
	ACSDirectTranslated = 1 << 6
)

// Redirects says whether peer-to-peer requests or completions are sent up
// to the root complex.
func (a ACS) Redirects() bool {
	return a.Present && a.Unknown == "" && a.Control&(ACSRequestRedirect|ACSCompletionRedir) != 0
}

// String is lspci's ACSCtl line for the bits that matter here.
func (a ACS) String() string {
	switch {
	case a.Unknown != "":
		return a.Address + ": ACS unknown (" + a.Unknown + ")"
	case !a.Present:
		return a.Address + ": no ACS capability"
	}
	b := func(bit uint16) string {
		if a.Control&bit != 0 {
			return "+"
		}
		return "-"
	}
	return fmt.Sprintf("%s: ACSCtl SrcValid%s ReqRedir%s CmpltRedir%s UpstreamFwd%s", a.Address,
		b(ACSSourceValidation), b(ACSRequestRedirect), b(ACSCompletionRedir), b(ACSUpstreamForward))
}

const (
	extCapStart = 0x100
	acsCapID    = 0x000d
)

// ReadACS walks the extended capabilities in the function's config file
// for the ACS capability and reads its control register (offset 6).
func ReadACS(root, dir string) ACS {
	a := ACS{Address: filepath.Base(dir), Source: dir + "/config"}
	b, err := os.ReadFile(filepath.Join(root, dir, "config"))
	switch {
	case err != nil:
		a.Unknown = err.Error()
		return a
	case len(b) <= extCapStart:
		a.Unknown = fmt.Sprintf("only %d bytes of config space readable (the extended capabilities need root, or CAP_SYS_ADMIN in the pod)", len(b))
		return a
	}
	for off, hops := extCapStart, 0; off >= extCapStart && off+8 <= len(b) && hops < 512; hops++ {
		hdr := binary.LittleEndian.Uint32(b[off:])
		if hdr == 0 || hdr == 0xffffffff {
			break
		}
		if uint16(hdr&0xffff) == acsCapID {
			a.Present = true
			a.Control = binary.LittleEndian.Uint16(b[off+6:])
			return a
		}
		off = int(hdr >> 20)
	}
	return a
}
