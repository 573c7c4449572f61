package bwverbs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"

	"github.com/vishvananda/netlink"

	"github.com/rdmasuite/rdmasuite/workloads/bw"
)

// rdmaNetnsMode reads the RDMA subsystem's netns mode over RDMA netlink
// (`rdma system show netns`); tests replace it.
var rdmaNetnsMode = netlink.RdmaSystemGetNetnsMode

// NetnsMode is the kernel's RDMA netns mode as this process sees it:
// bw.NetnsShared or bw.NetnsExclusive, or "" and why it could not be read.
func NetnsMode() (mode, why string) {
	m, err := rdmaNetnsMode()
	switch {
	case err != nil:
		return "", fmt.Sprintf("RDMA netlink (rdma system show netns): %v", err)
	case m != bw.NetnsShared && m != bw.NetnsExclusive:
		return "", fmt.Sprintf("RDMA netlink answered an unknown netns mode %q", m)
	}
	return m, ""
}

// VisibleDevices lists the RDMA devices under SysClassInfiniband, sorted.
// No such directory is no device (a kernel or namespace without RDMA).
func VisibleDevices() ([]string, error) {
	entries, err := os.ReadDir(SysClassInfiniband)
	if errors.Is(err, fs.ErrNotExist) {
		return []string{}, nil
	}
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		names = append(names, e.Name())
	}
	slices.Sort(names)
	return names, nil
}

// View is what this pod sees: the RDMA netns mode, and every RDMA device
// visible in sysfs (plus any other libibverbs listed), each with its port
// 1 netdev and whether discovery d opened it.
func View(d Discovery) *bw.PodView {
	v := &bw.PodView{Devices: []bw.VisibleDevice{}}
	v.NetnsMode, v.NetnsModeError = NetnsMode()
	names, err := VisibleDevices()
	if err != nil {
		v.DevicesError = fmt.Sprintf("%s: %v", SysClassInfiniband, err)
	}
	for _, n := range d.Listed {
		if !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	for _, n := range names {
		vd := bw.VisibleDevice{Name: n, Netdev: PortNetdev(n, 1)}
		switch oerr, unopened := d.OpenErrs[n]; {
		case unopened:
			vd.OpenError = oerr.Error()
		case slices.Contains(d.Listed, n):
			vd.Openable = true
		case d.ListErr != nil:
			vd.OpenError = "libibverbs lists no device: " + d.ListErr.Error()
		default:
			vd.OpenError = "libibverbs does not list it (no /dev/infiniband/uverbs node for it in this pod, or no user-space driver)"
		}
		v.Devices = append(v.Devices, vd)
	}
	return v
}
