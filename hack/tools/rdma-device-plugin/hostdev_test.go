package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
)

// hostdevFixture: two reserved NICs; 0000:00:05.0's uverbs2 is held by its
// placeholder, 0000:00:06.0's uverbs3 by a device that is neither its
// placeholder nor its pod's (a broken swap).
func hostdevFixture(t *testing.T) (root, dir string) {
	t.Helper()
	root = rxeFixture(t)
	dir = "/run/rdmasuite-hostdev"
	files := map[string]string{
		dir + "/0000:00:05.0.json":                 `{"pci":"0000:00:05.0","uverbs":"uverbs2","placeholder":"hdhold0","placeholderNetdev":"hdh0","rdmaDevice":"rxehd0"}`,
		dir + "/0000:00:06.0.json":                 `{"pci":"0000:00:06.0","uverbs":"uverbs3","placeholder":"hdhold1","placeholderNetdev":"hdh1","rdmaDevice":"rxehd1"}`,
		"sys/class/infiniband_verbs/uverbs2/ibdev": "hdhold0\n",
		"sys/class/infiniband_verbs/uverbs3/ibdev": "rxe7\n",
		"sys/bus/pci/devices/0000:00:05.0/vendor":  "0x1af4\n",
		"sys/bus/pci/devices/0000:00:06.0/vendor":  "0x1af4\n",
	}
	for p, s := range files {
		p = filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root, dir
}

func TestHostdevResource(t *testing.T) {
	root, dir := hostdevFixture(t)
	cfg := resourceConfig{ResourceName: "nvidia.com/hostdev", HostdevReservations: dir}
	if err := cfg.validate(); err != nil {
		t.Fatal(err)
	}
	p := newPlugin(cfg, root, t.TempDir(), time.Hour)
	if _, err := p.refresh(); err != nil {
		t.Fatal(err)
	}
	devs := p.pluginDevices(true)
	if len(devs) != 2 || devs[0].ID != "0000:00:05.0" || devs[0].Health != pluginapi.Healthy ||
		devs[1].ID != "0000:00:06.0" || devs[1].Health != pluginapi.Unhealthy {
		t.Fatalf("devices = %v", devs)
	}
	resp, err := p.Allocate(context.Background(), &pluginapi.AllocateRequest{ContainerRequests: []*pluginapi.ContainerAllocateRequest{{DevicesIds: []string{"0000:00:05.0"}}}})
	if err != nil {
		t.Fatal(err)
	}
	car := resp.ContainerResponses[0]
	var paths []string
	for _, d := range car.Devices {
		paths = append(paths, d.HostPath+"="+d.ContainerPath)
	}
	if got := strings.Join(paths, " "); got != "/dev/infiniband/uverbs2=/dev/infiniband/uverbs2 /dev/infiniband/rdma_cm=/dev/infiniband/rdma_cm" {
		t.Errorf("device specs = %s", got)
	}
	if car.Envs["PCIDEVICE_NVIDIA_COM_HOSTDEV"] != "0000:00:05.0" {
		t.Errorf("envs = %v", car.Envs)
	}
	// The NIC whose reserved node another device holds is never handed out.
	_, err = p.Allocate(context.Background(), &pluginapi.AllocateRequest{ContainerRequests: []*pluginapi.ContainerAllocateRequest{{DevicesIds: []string{"0000:00:06.0"}}}})
	if err == nil || !strings.Contains(err.Error(), "belongs to rxe7") {
		t.Errorf("allocating the broken NIC: %v", err)
	}
	if _, err := p.Allocate(context.Background(), &pluginapi.AllocateRequest{ContainerRequests: []*pluginapi.ContainerAllocateRequest{{DevicesIds: []string{"0000:00:09.0"}}}}); err == nil {
		t.Error("allocated a NIC that is not reserved")
	}
}

func TestHostdevConfigRejectsSharedFields(t *testing.T) {
	c := resourceConfig{ResourceName: "nvidia.com/hostdev", HostdevReservations: "/x", RdmaHcaMax: 3}
	if err := c.validate(); err == nil {
		t.Error("a hostdev resource with rdmaHcaMax was accepted")
	}
}
