package main

import (
	"fmt"
	"log"
	"os"
	"path/filepath"
	"reflect"
	"strings"

	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"github.com/rdmasuite/rdmasuite/hack/tools/hostdevres"
)

// hostdevNIC is one advertised NIC of a hostdev resource.
type hostdevNIC struct {
	res hostdevres.Reservation
	why string // "" when healthy
}

// refreshHostdev re-reads the reservations: a NIC is healthy while its PCI
// device is there and its reserved uverbs node belongs to its placeholder
// or to its pod's device (otherwise a pod would get another device's node).
func (p *plugin) refreshHostdev() (bool, error) {
	dir := p.cfg.HostdevReservations
	if p.scanner.Root != "/" && p.scanner.Root != "" {
		dir = filepath.Join(p.scanner.Root, dir)
	}
	all, err := hostdevres.All(dir)
	if err != nil {
		return false, err
	}
	nics := make([]hostdevNIC, 0, len(all))
	for _, r := range all {
		n := hostdevNIC{res: r}
		if _, err := os.Stat(filepath.Join(p.scanner.Root, "sys/bus/pci/devices", r.PCI)); err != nil {
			n.why = fmt.Sprintf("PCI device %s is gone", r.PCI)
		} else if err := hostdevres.Check(p.scanner.Root, r); err != nil {
			n.why = err.Error()
		}
		nics = append(nics, n)
	}
	ok, why := len(nics) > 0, ""
	if !ok {
		why = "no hostdev NIC reserved in " + dir
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	changed := ok != p.healthy || why != p.why || !reflect.DeepEqual(nics, p.nics)
	p.nics, p.healthy, p.why = nics, ok, why
	if changed {
		p.wakeWatchers()
		for _, n := range nics {
			if n.why != "" {
				log.Printf("%s: %s Unhealthy: %s", p.name(), n.res.PCI, n.why)
			}
		}
	}
	return changed, nil
}

func (p *plugin) describeHostdev() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var s []string
	for _, n := range p.nics {
		d := fmt.Sprintf("%s(%s,%s)", n.res.PCI, n.res.Uverbs, n.res.RDMADevice)
		if n.why != "" {
			d += " UNHEALTHY: " + n.why
		}
		s = append(s, d)
	}
	if len(s) == 0 {
		return fmt.Sprintf("%s: hostdev, no NIC: %s", p.name(), p.why)
	}
	return fmt.Sprintf("%s: hostdev NICs %s", p.name(), strings.Join(s, ", "))
}

func (p *plugin) hostdevDevices() []*pluginapi.Device {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]*pluginapi.Device, 0, len(p.nics))
	for _, n := range p.nics {
		h := pluginapi.Healthy
		if n.why != "" {
			h = pluginapi.Unhealthy
		}
		out = append(out, &pluginapi.Device{ID: n.res.PCI, Health: h})
	}
	return out
}

// pciEnv is the variable the SR-IOV network device plugin sets for a
// resource: PCIDEVICE_ + the resource name, upper case, non-alphanumerics
// as underscores (nvidia.com/hostdev -> PCIDEVICE_NVIDIA_COM_HOSTDEV).
func pciEnv(resource string) string {
	return "PCIDEVICE_" + strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z':
			return r - 'a' + 'A'
		case r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
			return r
		}
		return '_'
	}, resource)
}

func (p *plugin) allocateHostdev(req *pluginapi.AllocateRequest) (*pluginapi.AllocateResponse, error) {
	p.mu.Lock()
	byPCI := map[string]hostdevNIC{}
	for _, n := range p.nics {
		byPCI[n.res.PCI] = n
	}
	p.mu.Unlock()
	withCM := p.scanner.HasRdmaCM()
	resp := &pluginapi.AllocateResponse{}
	for _, cr := range req.ContainerRequests {
		car := &pluginapi.ContainerAllocateResponse{}
		for _, id := range cr.DevicesIds {
			n, ok := byPCI[id]
			if !ok {
				return nil, fmt.Errorf("%s: no hostdev NIC %s on this node", p.name(), id)
			}
			if n.why != "" {
				return nil, fmt.Errorf("%s: NIC %s is unhealthy: %s", p.name(), id, n.why)
			}
			node := "/dev/infiniband/" + n.res.Uverbs
			car.Devices = append(car.Devices, &pluginapi.DeviceSpec{HostPath: node, ContainerPath: node, Permissions: "rw"})
		}
		if withCM {
			car.Devices = append(car.Devices, &pluginapi.DeviceSpec{HostPath: "/dev/infiniband/rdma_cm", ContainerPath: "/dev/infiniband/rdma_cm", Permissions: "rw"})
		}
		car.Envs = map[string]string{pciEnv(p.name()): strings.Join(cr.DevicesIds, ",")}
		resp.ContainerResponses = append(resp.ContainerResponses, car)
		log.Printf("%s: allocated %v", p.name(), cr.DevicesIds)
	}
	return resp, nil
}
