package rdmadev

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// fixture builds a sysfs/devfs tree shaped like a real node's: class entries
// are symlinks into /sys/devices, PCI devices have driver and net links.
//
//	rxe0    Soft-RoCE on eth0, port ACTIVE           -> uverbs0
//	mlx5_0  ConnectX (mlx5_core), RoCE on ens1f0     -> uverbs1
//	mlx5_1  ConnectX (mlx5_core), InfiniBand on ib0, port DOWN -> uverbs2, umad0, issm0
func fixture(t *testing.T, withRdmaCM bool) string {
	t.Helper()
	root := t.TempDir()
	file := func(p, s string) {
		t.Helper()
		p = filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	link := func(p, target string) {
		t.Helper()
		p = filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
	}
	port := func(dev, state, layer string, ndevs ...string) {
		file(dev+"/ports/1/state", state+"\n")
		file(dev+"/ports/1/link_layer", layer+"\n")
		for i, n := range ndevs {
			file(dev+"/ports/1/gid_attrs/ndevs/"+string(rune('0'+i)), n+"\n")
		}
		// an unused GID slot
		file(dev+"/ports/1/gid_attrs/ndevs/9", "")
	}

	rxe := "sys/devices/virtual/infiniband/rxe0"
	port(rxe, "4: ACTIVE", "Ethernet", "eth0", "eth0")
	file(rxe+"/parent", "eth0\n")
	file(rxe+"/node_type", "1: CA\n")
	link("sys/class/infiniband/rxe0", "../../devices/virtual/infiniband/rxe0")

	pci := "sys/devices/pci0000:00/0000:00:02.0"
	link("sys/bus/pci/drivers/mlx5_core/.keep", "/dev/null")
	for i, fn := range []string{"0000:03:00.0", "0000:03:00.1"} {
		dev := pci + "/" + fn
		link(dev+"/driver", "../../../../bus/pci/drivers/mlx5_core")
		name := "mlx5_" + string(rune('0'+i))
		ib := dev + "/infiniband/" + name
		link(ib+"/device", "../../../"+fn)
		file(ib+"/node_type", "1: CA\n")
		link("sys/class/infiniband/"+name, "../../devices/pci0000:00/0000:00:02.0/"+fn+"/infiniband/"+name)
	}
	port(pci+"/0000:03:00.0/infiniband/mlx5_0", "4: ACTIVE", "Ethernet", "ens1f0")
	file(pci+"/0000:03:00.0/net/ens1f0/ifindex", "3\n")
	port(pci+"/0000:03:00.1/infiniband/mlx5_1", "1: DOWN", "InfiniBand")
	file(pci+"/0000:03:00.1/net/ib0/ifindex", "4\n")

	chardev := func(class, name, ibdev string) {
		d := "sys/devices/virtual/" + class + "/" + name
		file(d+"/ibdev", ibdev+"\n")
		link("sys/class/"+class+"/"+name, "../../devices/virtual/"+class+"/"+name)
		file("dev/infiniband/"+name, "")
	}
	chardev("infiniband_verbs", "uverbs0", "rxe0")
	chardev("infiniband_verbs", "uverbs1", "mlx5_0")
	chardev("infiniband_verbs", "uverbs2", "mlx5_1")
	chardev("infiniband_mad", "umad0", "mlx5_1")
	chardev("infiniband_mad", "issm0", "mlx5_1")
	if withRdmaCM {
		file("dev/infiniband/rdma_cm", "")
	}
	return root
}

func scan(t *testing.T, root string) []Device {
	t.Helper()
	devs, err := Scanner{Root: root}.Scan()
	if err != nil {
		t.Fatal(err)
	}
	return devs
}

func TestScan(t *testing.T) {
	devs := scan(t, fixture(t, true))
	want := []Device{
		{Name: "mlx5_0", Driver: "mlx5_core", LinkTypes: []string{"Ethernet"}, Netdevs: []string{"ens1f0"},
			PortStates: map[string]string{"1": "ACTIVE"}, CharDevs: []string{"/dev/infiniband/uverbs1"}},
		{Name: "mlx5_1", Driver: "mlx5_core", LinkTypes: []string{"InfiniBand"}, Netdevs: []string{"ib0"},
			PortStates: map[string]string{"1": "DOWN"},
			CharDevs:   []string{"/dev/infiniband/issm0", "/dev/infiniband/umad0", "/dev/infiniband/uverbs2"}},
		{Name: "rxe0", Driver: "rdma_rxe", LinkTypes: []string{"Ethernet"}, Netdevs: []string{"eth0"},
			PortStates: map[string]string{"1": "ACTIVE"}, CharDevs: []string{"/dev/infiniband/uverbs0"}},
	}
	if !reflect.DeepEqual(devs, want) {
		t.Fatalf("Scan:\n got %+v\nwant %+v", devs, want)
	}
}

func TestScanNoRDMA(t *testing.T) {
	devs, err := Scanner{Root: t.TempDir()}.Scan()
	if err != nil || len(devs) != 0 {
		t.Fatalf("Scan of a node without /sys/class/infiniband = %v, %v; want none, nil", devs, err)
	}
}

func names(devs []Device) []string {
	out := []string{}
	for _, d := range devs {
		out = append(out, d.Name)
	}
	return out
}

func TestSelect(t *testing.T) {
	devs := scan(t, fixture(t, true))
	for _, tc := range []struct {
		name string
		sel  Selector
		want []string
	}{
		{"empty selects all", Selector{}, []string{"mlx5_0", "mlx5_1", "rxe0"}},
		{"driver rdma_rxe", Selector{Drivers: []string{"rdma_rxe"}}, []string{"rxe0"}},
		{"driver mlx5_core", Selector{Drivers: []string{"mlx5_core"}}, []string{"mlx5_0", "mlx5_1"}},
		{"ifName", Selector{IfNames: []string{"ens1f0", "eth0"}}, []string{"mlx5_0", "rxe0"}},
		{"link type IB", Selector{LinkTypes: []string{"infiniband"}}, []string{"mlx5_1"}},
		{"link type ether", Selector{LinkTypes: []string{"ether"}}, []string{"mlx5_0", "rxe0"}},
		{"fields AND", Selector{Drivers: []string{"mlx5_core"}, LinkTypes: []string{"Ethernet"}}, []string{"mlx5_0"}},
		{"device name", Selector{Devices: []string{"mlx5_1"}}, []string{"mlx5_1"}},
		{"no match", Selector{IfNames: []string{"eth9"}}, []string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := names(Select(devs, tc.sel)); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("Select(%+v) = %v, want %v", tc.sel, got, tc.want)
			}
		})
	}
}

func TestSpecs(t *testing.T) {
	devs := scan(t, fixture(t, true))
	rxe := Select(devs, Selector{Drivers: []string{"rdma_rxe"}})
	got := Specs(rxe, true)
	want := []Spec{
		{"/dev/infiniband/uverbs0", "/dev/infiniband/uverbs0", "rw"},
		{"/dev/infiniband/rdma_cm", "/dev/infiniband/rdma_cm", "rw"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Specs(rxe0) = %v, want %v", got, want)
	}
	all := Specs(devs, true)
	if len(all) != 6 || all[len(all)-1].HostPath != "/dev/infiniband/rdma_cm" {
		t.Fatalf("Specs(all) = %v; want 5 device nodes + rdma_cm once, last", all)
	}
	if s := Specs(nil, true); len(s) != 0 {
		t.Fatalf("Specs(nothing selected) = %v; want none (not even rdma_cm)", s)
	}
	if s := Specs(rxe, false); len(s) != 1 {
		t.Fatalf("Specs without rdma_cm = %v", s)
	}
	// HasRdmaCM looks under the root.
	if !(Scanner{Root: fixture(t, true)}).HasRdmaCM() || (Scanner{Root: fixture(t, false)}).HasRdmaCM() {
		t.Fatal("HasRdmaCM does not follow the fixture")
	}
}

func TestHealthy(t *testing.T) {
	devs := scan(t, fixture(t, true))
	if ok, why := Healthy(nil, false); ok || why == "" {
		t.Fatalf("Healthy(none) = %v %q", ok, why)
	}
	ib := Select(devs, Selector{Devices: []string{"mlx5_1"}})
	if ok, _ := Healthy(ib, false); !ok {
		t.Fatal("a DOWN port must not matter without requireActive")
	}
	if ok, why := Healthy(ib, true); ok || why == "" {
		t.Fatalf("Healthy(DOWN port, requireActive) = %v %q", ok, why)
	}
	if ok, _ := Healthy(devs, true); !ok {
		t.Fatal("one ACTIVE device is enough")
	}
	noVerbs := []Device{{Name: "x", PortStates: map[string]string{"1": "ACTIVE"}}}
	if ok, why := Healthy(noVerbs, false); ok || why == "" {
		t.Fatalf("Healthy(no uverbs) = %v %q", ok, why)
	}
}

func TestNormalizeLinkType(t *testing.T) {
	for in, want := range map[string]string{"ether": "Ethernet", "IB": "InfiniBand", "Ethernet": "Ethernet", "x": "x"} {
		if got := NormalizeLinkType(in); got != want {
			t.Errorf("NormalizeLinkType(%q) = %q, want %q", in, got, want)
		}
	}
}

// A device with neither a parent netdev nor a net/ directory: its netdevs
// come from the first GID slots' attributes (slot 0 and 3 used, 2 empty).
func TestScanGIDNetdevFallback(t *testing.T) {
	root := t.TempDir()
	for p, s := range map[string]string{
		"sys/devices/virtual/infiniband/vdev0/ports/1/state":             "4: ACTIVE\n",
		"sys/devices/virtual/infiniband/vdev0/ports/1/link_layer":        "Ethernet\n",
		"sys/devices/virtual/infiniband/vdev0/ports/1/gid_attrs/ndevs/0": "eth5\n",
		"sys/devices/virtual/infiniband/vdev0/ports/1/gid_attrs/ndevs/2": "",
		"sys/devices/virtual/infiniband/vdev0/ports/1/gid_attrs/ndevs/3": "eth5.100\n",
	} {
		p = filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(root, "sys/class/infiniband"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../../devices/virtual/infiniband/vdev0", filepath.Join(root, "sys/class/infiniband/vdev0")); err != nil {
		t.Fatal(err)
	}
	devs := scan(t, root)
	if len(devs) != 1 || !reflect.DeepEqual(devs[0].Netdevs, []string{"eth5", "eth5.100"}) {
		t.Fatalf("Scan = %+v; want vdev0 on eth5 and eth5.100", devs)
	}
}
