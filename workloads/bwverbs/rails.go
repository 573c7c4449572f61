package bwverbs

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/Mellanox/rdmamap"

	"github.com/rdmasuite/rdmasuite/workloads/bw"
	"github.com/rdmasuite/rdmasuite/workloads/verbs"
)

// SysClassInfiniband is where ports' netdevs are read from (tests point it
// at a fixture tree).
var SysClassInfiniband = "/sys/class/infiniband"

// verbsDevice is the part of an open verbs device discovery uses.
type verbsDevice interface {
	QueryDevice() (verbs.DeviceAttr, error)
	QueryPort(port int) (verbs.PortAttr, error)
	Close() error
}

// The verbs calls discovery goes through: tests replace them with fakes
// (there is no verbs device where unit tests run).
var (
	listDevices = verbs.DeviceNames
	openDevice  = func(name string) (verbsDevice, error) {
		ctx, err := verbs.Open(name)
		if err != nil {
			return nil, err
		}
		return ctx, nil
	}
)

// Discovery is what discovery saw: the rails of the devices that opened,
// every device libibverbs listed, and why any of them did not open.
type Discovery struct {
	Rails    []bw.Rail        // every port of every device that opened, sorted by device, then port
	Listed   []string         // every device libibverbs listed, sorted
	ListErr  error            // why libibverbs listed none
	OpenErrs map[string]error // listed devices that did not open, and why
}

// Discover lists every rail this process sees: every device × every port,
// sorted by device name, then port, with the port's state (as ibstat names
// it), link layer, rate and netdev. No device at all matches
// bw.ErrNoDevice.
//
// Every device must open, unless cfg restricts the run to one device
// (cfg.Device or cfg.Netdev): then a device this pod was not given (its
// /dev/infiniband node absent, or denied by the device cgroup: a hostdev
// pod in shared RDMA netns mode sees every device of the node) is kept in
// OpenErrs and skipped; the selected device must still open (Select says
// why it did not). Any other failure is returned, after every device was
// tried, with what was found.
func Discover(cfg Config) (Discovery, error) {
	d := Discovery{OpenErrs: map[string]error{}}
	names, err := listDevices()
	if err != nil {
		d.ListErr = err
		return d, tagVerbs(err)
	}
	slices.Sort(names)
	d.Listed = names
	restricted := cfg.Device != "" || cfg.Netdev != ""
	var first error
	keep := func(err error) {
		if first == nil {
			first = err
		}
	}
	for _, name := range names {
		dev, err := openDevice(name)
		if err != nil {
			d.OpenErrs[name] = err
			if !restricted || !notGiven(err) {
				keep(tagVerbs(err))
			}
			continue
		}
		attr, err := dev.QueryDevice()
		if err != nil {
			dev.Close()
			keep(err)
			continue
		}
		for port := 1; port <= attr.PhysPorts; port++ {
			pa, err := dev.QueryPort(port)
			if err != nil {
				keep(err)
				continue
			}
			d.Rails = append(d.Rails, bw.Rail{Index: len(d.Rails), Device: name, Port: port, State: pa.State,
				LinkLayer: pa.LinkLayer, RateGbps: pa.RateGbps, Netdev: PortNetdev(name, port)})
		}
		dev.Close()
	}
	if first != nil {
		return d, first
	}
	if len(d.Rails) == 0 && len(d.OpenErrs) == 0 {
		return d, bw.Tag(bw.ErrNoDevice, verbs.ErrNoDevice)
	}
	return d, nil
}

// notGiven says whether opening a device failed because this pod was not
// given its char device: absent from /dev/infiniband, or denied (device
// cgroup, permissions).
func notGiven(err error) bool {
	return errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EACCES)
}

// Select picks the rails from what discovery found (see the function
// Select); a selected device that was listed but did not open fails with
// why it did not open.
func (d Discovery) Select(cfg Config) ([]bw.Rail, error) {
	rails, err := Select(d.Rails, cfg)
	if err == nil || len(d.OpenErrs) == 0 {
		return rails, err
	}
	dev := cfg.Device
	if dev == "" && cfg.Netdev != "" {
		for _, name := range d.Listed {
			if _, unopened := d.OpenErrs[name]; unopened && slices.Contains(deviceNetdevs(name), cfg.Netdev) {
				dev = name
				break
			}
		}
		if dev == "" {
			dev, _ = rdmamap.GetRdmaDeviceForNetdevice(cfg.Netdev)
		}
	}
	if oerr, ok := d.OpenErrs[dev]; ok {
		what := "RDMA device " + dev
		if cfg.Netdev != "" {
			what += " (behind netdev " + cfg.Netdev + ")"
		}
		err := fmt.Errorf("%s could not be opened: %w", what, oerr)
		if notGiven(oerr) {
			// The device it must measure was not handed to the pod.
			return nil, bw.Tag(bw.ErrNoDevice, fmt.Errorf("%w: is its /dev/infiniband/uverbs node given to the pod (device plugin)?", err))
		}
		return nil, tagVerbs(err)
	}
	return rails, err
}

// deviceNetdevs are the netdevs behind every port of dev, read from sysfs
// (for a device that did not open, whose ports were not queried).
func deviceNetdevs(dev string) []string {
	entries, _ := os.ReadDir(filepath.Join(SysClassInfiniband, dev, "ports"))
	var out []string
	for _, e := range entries {
		if port, err := strconv.Atoi(e.Name()); err == nil {
			if n := PortNetdev(dev, port); n != "" {
				out = append(out, n)
			}
		}
	}
	return out
}

// PortNetdev names the network interface behind a port: the netdev of its
// first GID that has one (RoCE), else the device's only interface under
// device/net (IPoIB); "" if none.
func PortNetdev(dev string, port int) string {
	dir := filepath.Join(SysClassInfiniband, dev, "ports", strconv.Itoa(port), "gid_attrs", "ndevs")
	entries, _ := os.ReadDir(dir)
	idx := make([]int, 0, len(entries))
	for _, e := range entries {
		if n, err := strconv.Atoi(e.Name()); err == nil {
			idx = append(idx, n)
		}
	}
	slices.Sort(idx)
	for _, i := range idx {
		b, err := os.ReadFile(filepath.Join(dir, strconv.Itoa(i)))
		if n := strings.TrimSpace(string(b)); err == nil && n != "" {
			return n
		}
	}
	if nets, _ := os.ReadDir(filepath.Join(SysClassInfiniband, dev, "device", "net")); len(nets) == 1 {
		return nets[0].Name()
	}
	return ""
}

// Select picks the rails a side measures from what it found: the one port
// of cfg.Device (cfg.Port, default 1), the port behind cfg.Netdev, or
// every rail. A device that is not there matches bw.ErrNoDevice; a netdev
// without an RDMA device matches bw.ErrNoNetdev.
func Select(found []bw.Rail, cfg Config) ([]bw.Rail, error) {
	port := cfg.Port
	if port == 0 {
		port = 1
	}
	byDevice := func(dev string) ([]bw.Rail, error) {
		var ports []string
		for _, r := range found {
			if r.Device != dev {
				continue
			}
			if r.Port == port {
				return []bw.Rail{r}, nil
			}
			ports = append(ports, strconv.Itoa(r.Port))
		}
		if ports == nil {
			return nil, bw.Tag(bw.ErrNoDevice, fmt.Errorf("RDMA device %q not found; this pod sees %v", dev, deviceNames(found)))
		}
		return nil, bw.Tag(bw.ErrNoDevice, fmt.Errorf("RDMA device %s has no port %d (ports: %s)", dev, port, strings.Join(ports, ", ")))
	}
	switch {
	case cfg.Device != "":
		return byDevice(cfg.Device)
	case cfg.Netdev != "":
		for _, r := range found {
			if r.Netdev == cfg.Netdev {
				return []bw.Rail{r}, nil
			}
		}
		dev, err := rdmamap.GetRdmaDeviceForNetdevice(cfg.Netdev)
		if err != nil || dev == "" {
			return nil, bw.Tag(bw.ErrNoNetdev, fmt.Errorf("no RDMA device behind netdev %s (rdmamap: %v; ports' netdevs: %v): is it an RDMA-capable interface (VF / RoCE NIC) in this pod's network namespace?",
				cfg.Netdev, err, netdevs(found)))
		}
		return byDevice(dev)
	}
	return found, nil
}

func deviceNames(rs []bw.Rail) []string {
	var out []string
	for _, r := range rs {
		if !slices.Contains(out, r.Device) {
			out = append(out, r.Device)
		}
	}
	return out
}

func netdevs(rs []bw.Rail) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.Name()+"="+r.Netdev)
	}
	return out
}
