package bwverbs

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"

	"github.com/rdmasuite/rdmasuite/workloads/bw"
	"github.com/rdmasuite/rdmasuite/workloads/probeout"
	"github.com/rdmasuite/rdmasuite/workloads/verbs"
)

// fakeDevice is an open device whose ports are ACTIVE Ethernet ports.
type fakeDevice struct {
	ports    int
	queryErr error
}

func (f fakeDevice) QueryDevice() (verbs.DeviceAttr, error) {
	return verbs.DeviceAttr{PhysPorts: f.ports}, f.queryErr
}
func (f fakeDevice) QueryPort(int) (verbs.PortAttr, error) {
	return verbs.PortAttr{State: "ACTIVE", LinkLayer: "Ethernet", RateGbps: 100}, nil
}
func (f fakeDevice) Close() error { return nil }

// fakeVerbs makes listDevices return names and openDevice fail with the
// errno in denied for those devices; it also points SysClassInfiniband at
// a fixture tree where dev's port 1 is on netdevs[dev].
func fakeVerbs(t *testing.T, names []string, denied map[string]syscall.Errno, netdevs map[string]string) {
	t.Helper()
	oldList, oldOpen, oldSys, oldMode := listDevices, openDevice, SysClassInfiniband, rdmaNetnsMode
	t.Cleanup(func() { listDevices, openDevice, SysClassInfiniband, rdmaNetnsMode = oldList, oldOpen, oldSys, oldMode })
	listDevices = func() ([]string, error) {
		if len(names) == 0 {
			return nil, verbs.ErrNoDevice
		}
		return append([]string(nil), names...), nil
	}
	openDevice = func(name string) (verbsDevice, error) {
		if e, ok := denied[name]; ok {
			return nil, &verbs.Error{Call: fmt.Sprintf("ibv_open_device(%s)", name), Errno: e}
		}
		return fakeDevice{ports: 1}, nil
	}
	SysClassInfiniband = t.TempDir()
	for _, n := range names {
		nd := filepath.Join(SysClassInfiniband, n, "ports", "1", "gid_attrs", "ndevs")
		if err := os.MkdirAll(nd, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(nd, "0"), []byte(netdevs[n]+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	rdmaNetnsMode = func() (string, error) { return bw.NetnsShared, nil }
}

// What a hostdev pod sees in shared RDMA netns mode: every device of the
// node, only its own (rxehd0 on net1) openable.
func sharedModeHostdevPod(t *testing.T) {
	fakeVerbs(t, []string{"rxe1", "rxehd0", "rxe0"},
		map[string]syscall.Errno{"rxe0": syscall.ENOENT, "rxe1": syscall.EPERM},
		map[string]string{"rxe0": "eth1", "rxe1": "eth2", "rxehd0": "net1"})
}

// Restricted to one device (--netdev, --device), devices the pod was not
// given are visible but not openable, and discovery goes on.
func TestDiscoverRestrictedSkipsDevicesNotGiven(t *testing.T) {
	for _, cfg := range []Config{{Netdev: "net1"}, {Device: "rxehd0"}} {
		sharedModeHostdevPod(t)
		d, err := Discover(cfg)
		if err != nil {
			t.Fatalf("%+v: %v", cfg, err)
		}
		if len(d.Rails) != 1 || d.Rails[0].Device != "rxehd0" || d.Rails[0].Netdev != "net1" || d.Rails[0].Index != 0 {
			t.Fatalf("%+v: rails %+v", cfg, d.Rails)
		}
		rails, err := d.Select(cfg)
		if err != nil || len(rails) != 1 || rails[0].Device != "rxehd0" {
			t.Fatalf("%+v: selected %+v %v", cfg, rails, err)
		}
		v := View(d)
		want := []bw.VisibleDevice{
			{Name: "rxe0", Netdev: "eth1", OpenError: "ibv_open_device(rxe0): No such file or directory"},
			{Name: "rxe1", Netdev: "eth2", OpenError: "ibv_open_device(rxe1): Operation not permitted"},
			{Name: "rxehd0", Netdev: "net1", Openable: true},
		}
		if !reflect.DeepEqual(v.Devices, want) || v.NetnsMode != bw.NetnsShared || v.DevicesError != "" {
			t.Fatalf("%+v: view %+v", cfg, v)
		}
	}
}

// Without a restriction every device the pod is given must open: a
// shared-dev pod that cannot open one is a real failure.
func TestDiscoverUnrestrictedFailsOnAnyDevice(t *testing.T) {
	sharedModeHostdevPod(t)
	d, err := Discover(Config{})
	if err == nil || !errors.Is(err, syscall.ENOENT) || !strings.Contains(err.Error(), "rxe0") {
		t.Fatalf("want rxe0's open error, got %v", err)
	}
	if len(d.OpenErrs) != 2 {
		t.Fatalf("every device is tried and recorded: %v", d.OpenErrs)
	}
	if v := View(d); len(v.Devices) != 3 || v.Devices[2].Name != "rxehd0" || !v.Devices[2].Openable || v.Devices[0].Openable {
		t.Fatalf("view %+v", v.Devices)
	}
}

// The selected device must still open: not given to the pod is no-device,
// any other failure is returned as it is.
func TestDiscoverRestrictedSelectedDeviceMustOpen(t *testing.T) {
	for _, cfg := range []Config{{Netdev: "net1"}, {Device: "rxehd0"}} {
		fakeVerbs(t, []string{"rxe0", "rxehd0"}, map[string]syscall.Errno{"rxe0": syscall.ENOENT, "rxehd0": syscall.EACCES},
			map[string]string{"rxe0": "eth1", "rxehd0": "net1"})
		d, err := Discover(cfg)
		if err != nil {
			t.Fatalf("%+v: discovery itself: %v", cfg, err)
		}
		_, err = d.Select(cfg)
		if err == nil || bw.Classify(err).Kind != probeout.KindNoDevice || !strings.Contains(err.Error(), "rxehd0") || !errors.Is(err, syscall.EACCES) {
			t.Fatalf("%+v: %v", cfg, err)
		}
	}
	// Another errno on any device is not "not given": it fails discovery.
	fakeVerbs(t, []string{"rxe0", "rxehd0"}, map[string]syscall.Errno{"rxe0": syscall.EIO}, map[string]string{"rxehd0": "net1"})
	if _, err := Discover(Config{Netdev: "net1"}); !errors.Is(err, syscall.EIO) {
		t.Fatalf("EIO on a foreign device: %v", err)
	}
	// A restriction to a device that is not there at all is still no-device.
	fakeVerbs(t, []string{"rxe0"}, map[string]syscall.Errno{"rxe0": syscall.ENOENT}, nil)
	d, err := Discover(Config{Device: "mlx5_9"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Select(Config{Device: "mlx5_9"}); !errors.Is(err, bw.ErrNoDevice) {
		t.Fatalf("missing device: %v", err)
	}
}

// No device at all is no-device, restricted or not, and the view says the
// pod sees none (a known zero: no sysfs directory).
func TestDiscoverNoDevice(t *testing.T) {
	for _, cfg := range []Config{{}, {Netdev: "net1"}} {
		fakeVerbs(t, nil, nil, nil)
		SysClassInfiniband = filepath.Join(t.TempDir(), "absent")
		rdmaNetnsMode = func() (string, error) { return bw.NetnsExclusive, nil }
		d, err := Discover(cfg)
		if !errors.Is(err, bw.ErrNoDevice) {
			t.Fatalf("%+v: %v", cfg, err)
		}
		if v := View(d); v.Devices == nil || len(v.Devices) != 0 || v.DevicesError != "" || v.NetnsMode != bw.NetnsExclusive {
			t.Fatalf("%+v: view %+v", cfg, v)
		}
	}
}

// A device visible in sysfs that libibverbs does not list is visible but
// not openable; an unreadable netns mode is "" with the reason.
func TestViewUnlistedDeviceAndUnreadableMode(t *testing.T) {
	fakeVerbs(t, []string{"rxehd0"}, nil, map[string]string{"rxehd0": "net1"})
	if err := os.MkdirAll(filepath.Join(SysClassInfiniband, "mlx5_0"), 0o755); err != nil {
		t.Fatal(err)
	}
	rdmaNetnsMode = func() (string, error) { return "", syscall.EPROTONOSUPPORT }
	d, err := Discover(Config{Netdev: "net1"})
	if err != nil {
		t.Fatal(err)
	}
	v := View(d)
	if v.NetnsMode != "" || !strings.Contains(v.NetnsModeError, "protocol not supported") {
		t.Fatalf("mode %q / %q", v.NetnsMode, v.NetnsModeError)
	}
	if len(v.Devices) != 2 || v.Devices[0].Name != "mlx5_0" || v.Devices[0].Openable || !strings.Contains(v.Devices[0].OpenError, "does not list") {
		t.Fatalf("devices %+v", v.Devices)
	}
	rdmaNetnsMode = func() (string, error) { return "weird", nil }
	if m, why := NetnsMode(); m != "" || !strings.Contains(why, "weird") {
		t.Fatalf("unknown mode: %q %q", m, why)
	}
}

// In shared RDMA netns mode a hostdev pod sees every VF's sysfs entry, and
// every hostdev pod on the node names its VF net1: the netdev names the
// pod's own device only among the devices it can open. rdmamap's scan of
// sysfs takes the first device whose GID names net1, which may be another
// pod's VF (make test's guest run met it: "RDMA device rxehd1 not found;
// this process sees [rxehd0]").
func TestResolveDevicePicksTheNetdevThisPodWasGiven(t *testing.T) {
	for _, given := range []string{"rxehd0", "rxehd1"} {
		other := map[string]string{"rxehd0": "rxehd1", "rxehd1": "rxehd0"}[given]
		fakeVerbs(t, []string{"rxehd0", "rxehd1"}, map[string]syscall.Errno{other: syscall.ENOENT},
			map[string]string{"rxehd0": "net1", "rxehd1": "net1"})
		dev, err := ResolveDevice(Config{Netdev: "net1"})
		if err != nil || dev != given {
			t.Fatalf("pod given %s: resolved %q, %v", given, dev, err)
		}
	}
	// --device is taken as it is; no netdev, no device: the first.
	if dev, err := ResolveDevice(Config{Device: "mlx5_3"}); dev != "mlx5_3" || err != nil {
		t.Fatalf("--device: %q %v", dev, err)
	}
	// The pod's netdev has no device among those it was given, and none
	// that it sees names it: no-netdev, with what the pod does see.
	fakeVerbs(t, []string{"rxehd0"}, nil, map[string]string{"rxehd0": "net1"})
	if _, err := ResolveDevice(Config{Netdev: "net7"}); !errors.Is(err, bw.ErrNoNetdev) || !strings.Contains(err.Error(), "net1") {
		t.Fatalf("absent netdev: %v", err)
	}
	// The pod's own VF denied: no-device, naming it.
	fakeVerbs(t, []string{"rxehd0", "rxehd1"}, map[string]syscall.Errno{"rxehd0": syscall.ENOENT, "rxehd1": syscall.ENOENT},
		map[string]string{"rxehd0": "eth9", "rxehd1": "net1"})
	if _, err := ResolveDevice(Config{Netdev: "net1"}); !errors.Is(err, bw.ErrNoDevice) || !strings.Contains(err.Error(), "rxehd1") {
		t.Fatalf("own VF not given: %v", err)
	}
	// No device at all: no-device, not no-netdev.
	fakeVerbs(t, nil, nil, nil)
	if _, err := ResolveDevice(Config{Netdev: "net1"}); !errors.Is(err, bw.ErrNoDevice) {
		t.Fatalf("no device: %v", err)
	}
}
