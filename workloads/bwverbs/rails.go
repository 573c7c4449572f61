package bwverbs

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/Mellanox/rdmamap"

	"github.com/rdmasuite/rdmasuite/workloads/bw"
	"github.com/rdmasuite/rdmasuite/workloads/verbs"
)

// SysClassInfiniband is where ports' netdevs are read from (tests point it
// at a fixture tree).
var SysClassInfiniband = "/sys/class/infiniband"

// Discover lists every rail this process sees: every device × every port,
// sorted by device name, then port, with the port's state (as ibstat names
// it), link layer, rate and netdev. No device at all matches bw.ErrNoDevice.
func Discover() ([]bw.Rail, error) {
	names, err := verbs.DeviceNames()
	if err != nil {
		return nil, tagVerbs(err)
	}
	slices.Sort(names)
	var rails []bw.Rail
	for _, name := range names {
		ctx, err := verbs.Open(name)
		if err != nil {
			return rails, tagVerbs(err)
		}
		attr, err := ctx.QueryDevice()
		if err != nil {
			ctx.Close()
			return rails, err
		}
		for port := 1; port <= attr.PhysPorts; port++ {
			pa, err := ctx.QueryPort(port)
			if err != nil {
				ctx.Close()
				return rails, err
			}
			rails = append(rails, bw.Rail{Index: len(rails), Device: name, Port: port, State: pa.State,
				LinkLayer: pa.LinkLayer, RateGbps: pa.RateGbps, Netdev: PortNetdev(name, port)})
		}
		ctx.Close()
	}
	if len(rails) == 0 {
		return nil, bw.Tag(bw.ErrNoDevice, verbs.ErrNoDevice)
	}
	return rails, nil
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
