package node

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/Mellanox/rdmamap"
)

// t0 is the fake clock's start: 81 s after seed 001's MOFED "Setting driver
// ready state" (11:58:39 EST).
var t0 = time.Date(2025, 11, 21, 17, 0, 0, 0, time.UTC)

// fakeClock stands in for time.Now and time.Sleep: Sleep advances the clock
// and applies the "after" trees, so a sampling window costs no real time and
// the second sample sees the counters the fixture says.
type fakeClock struct {
	t     *testing.T
	now   time.Time
	root  string
	after []string
	slept time.Duration
}

func (c *fakeClock) Now() time.Time { return c.now }

func (c *fakeClock) Sleep(d time.Duration) {
	c.slept += d
	c.now = c.now.Add(d)
	writeTree(c.t, c.root, c.after...)
}

func collectTrees(t *testing.T, window time.Duration, trees, after []string) Report {
	t.Helper()
	root := buildTree(t, trees...)
	clock := &fakeClock{t: t, now: t0, root: root, after: after}
	r, err := Collect(Options{HostRoot: root, SampleWindow: window, Now: clock.Now, Sleep: clock.Sleep})
	if err != nil {
		t.Fatal(err)
	}
	if clock.slept != window {
		t.Errorf("slept %v, want the window %v", clock.slept, window)
	}
	return r
}

func port(t *testing.T, r Report, dev string, n int) Port {
	t.Helper()
	for _, d := range r.RDMA.Devices {
		if d.Name != dev {
			continue
		}
		for _, p := range d.Ports {
			if p.Port == n {
				return p
			}
		}
	}
	t.Fatalf("no %s port %d in %+v", dev, n, r.RDMA.Devices)
	return Port{}
}

func mod(t *testing.T, r Report, name string) Module {
	t.Helper()
	m, ok := r.Module(name)
	if !ok {
		t.Fatalf("module %s not reported", name)
	}
	return m
}

func near(got, want float64) bool { return math.Abs(got-want) < 1e-9 }

func TestCollectScenarios(t *testing.T) {
	cases := []struct {
		name   string
		trees  []string
		after  []string // applied during the sampling window
		window time.Duration
		check  func(t *testing.T, r Report)
	}{
		{
			name:   "healthy node",
			trees:  []string{"base.tree", "healthy.tree"},
			after:  []string{"healthy_after.tree"},
			window: 10 * time.Second,
			check: func(t *testing.T, r Report) {
				for _, n := range RDMAModules {
					if !mod(t, r, n).Loaded {
						t.Errorf("%s not loaded", n)
					}
				}
				if v := mod(t, r, "mlx5_core").Version; v != "25.07-0.9.7" {
					t.Errorf("mlx5_core version %q", v)
				}
				if ib := mod(t, r, "ib_core"); ib.RefCount != 8 || len(ib.UsedBy) != 7 || ib.State != "Live" {
					t.Errorf("ib_core = %+v", ib)
				}
				if len(r.StorageModulesLoaded) != 0 {
					t.Errorf("storage modules %v", r.StorageModulesLoaded)
				}
				if !r.Markers.DriverReady.Present || r.Ordering.DriverReadyAbsent || r.Ordering.PeermemWithoutDriverReady {
					t.Errorf("markers %+v ordering %+v", r.Markers.DriverReady, r.Ordering)
				}
				if len(r.Ordering.ValidationsMissing) != 0 || len(r.Markers.Validations) != 3 {
					t.Errorf("validations %+v missing %v", r.Markers.Validations, r.Ordering.ValidationsMissing)
				}
				if !reflect.DeepEqual(r.Markers.MemoryPeers.Clients, []string{"nv_mem"}) {
					t.Errorf("memory peers %+v", r.Markers.MemoryPeers)
				}
				if len(r.RDMA.Devices) != 3 || !r.RDMA.ClassPresent {
					t.Fatalf("devices %+v", r.RDMA.Devices)
				}
				p := port(t, r, "mlx5_0", 1)
				want := Port{Port: 1, State: "4: ACTIVE", StateName: "ACTIVE", PhysState: "5: LinkUp", PhysStateName: "LinkUp",
					Rate: "200 Gb/sec (4X HDR)", RateGbps: 200, LinkLayer: "InfiniBand", Active: true, LinkUp: true,
					Netdevs: []Netdev{{Name: "ib0", OperState: "up"}}}
				p.Config = nil // judged in hostcfg_test.go
				if !reflect.DeepEqual(p, want) {
					t.Errorf("mlx5_0 port 1 = %+v\nwant %+v", p, want)
				}
				d := r.RDMA.Devices[0]
				if d.Name != "mlx5_0" || d.PCIAddress != "0000:01:00.0" || d.HCAType != "MT4123" {
					t.Errorf("device %+v", d)
				}
				if p := port(t, r, "mlx5_1", 1); len(p.Netdevs) != 1 || p.Netdevs[0].Name != "ib1" {
					t.Errorf("mlx5_1 netdevs %+v", p.Netdevs)
				}
				// RoCE: the GID table names the bond, not its slaves.
				if p := port(t, r, "mlx5_bond_0", 1); p.LinkLayer != "Ethernet" || !reflect.DeepEqual(p.Netdevs, []Netdev{{Name: "bond0", OperState: "up"}}) {
					t.Errorf("mlx5_bond_0 port 1 = %+v", p)
				}
				pr := r.Pressure
				if pr.WindowSeconds != 10 || !pr.IO.Available || pr.IO.Some.Avg10 != 0 {
					t.Errorf("pressure %+v", pr)
				}
				if pr.IO.SomeStallFraction == nil || !near(*pr.IO.SomeStallFraction, 0.0001) {
					t.Errorf("io some stall fraction %v, want 0.0001", pr.IO.SomeStallFraction)
				}
				if pr.CPU.IOWaitPercent == nil || !near(*pr.CPU.IOWaitPercent, 0.25) {
					t.Errorf("iowait %v, want 0.25 %%", pr.CPU.IOWaitPercent)
				}
				if got := r.PortsDown(); len(got) != 0 {
					t.Errorf("ports down %q", got)
				}
				if len(r.Mounts.NFS) != 0 || r.Mounts.Source != "/proc/1/mounts" {
					t.Errorf("mounts %+v", r.Mounts)
				}
				if r.Kernel != "5.15.0-170-generic" {
					t.Errorf("kernel %q", r.Kernel)
				}
			},
		},
		{
			name:  "seed 000: NFS-over-RDMA loaded storage modules before MOFED",
			trees: []string{"base.tree", "seed000_storage_modules.tree"},
			check: func(t *testing.T, r Report) {
				if !reflect.DeepEqual(r.StorageModulesLoaded, []string{"rpcrdma", "xprtrdma"}) {
					t.Errorf("storage modules loaded %v", r.StorageModulesLoaded)
				}
				if v := mod(t, r, "sunrpc").Version; v != "4.0.35-vastdata" {
					t.Errorf("sunrpc version %q", v)
				}
				if m := mod(t, r, "rpcrdma"); m.RefCount != 1 || !reflect.DeepEqual(m.UsedBy, []string{"xprtrdma"}) {
					t.Errorf("rpcrdma %+v", m)
				}
				if m := mod(t, r, "mlx5_core"); !m.Loaded || m.Version != "" {
					t.Errorf("in-tree mlx5_core %+v", m)
				}
				if !r.Ordering.DriverReadyAbsent || r.Ordering.PeermemWithoutDriverReady || !r.Markers.MellanoxDriversDir {
					t.Errorf("ordering %+v", r.Ordering)
				}
				want := []Mount{
					{Device: "vast-nfs:/shared-volume", MountPoint: "/mnt/shared volume", FSType: "nfs4", RDMA: true,
						Options: "rw,relatime,vers=4.1,rsize=1048576,wsize=1048576,namlen=255,hard,proto=rdma,port=20049,timeo=600,retrans=2,sec=sys,clientaddr=10.0.0.2,local_lock=none,addr=10.0.0.10"},
					{Device: "10.0.0.20:/home", MountPoint: "/home", FSType: "nfs", RDMA: false,
						Options: "rw,relatime,vers=3,hard,proto=tcp,timeo=600,retrans=2,sec=sys,mountaddr=10.0.0.20,mountvers=3,mountproto=tcp,local_lock=none,addr=10.0.0.20"},
				}
				if !reflect.DeepEqual(r.Mounts.NFS, want) {
					t.Errorf("nfs mounts %+v\nwant %+v", r.Mounts.NFS, want)
				}
			},
		},
		{
			name:  "seed 001/003: nvidia_peermem loaded before MOFED's .driver-ready",
			trees: []string{"base.tree", "seed001_peermem_before_mofed.tree"},
			check: func(t *testing.T, r Report) {
				o := r.Ordering
				if !o.PeermemWithoutDriverReady || !o.DriverReadyAbsent {
					t.Errorf("ordering %+v", o)
				}
				if !reflect.DeepEqual(o.ValidationsMissing, []string{".driver-ctr-ready", "toolkit-ready"}) {
					t.Errorf("validations missing %v", o.ValidationsMissing)
				}
				if !r.Markers.ValidationsDir || len(r.Markers.Validations) != 0 {
					t.Errorf("validations %+v", r.Markers)
				}
				if r.Kernel != "5.14.0-427.96.1.el9_4.aarch64+64k" {
					t.Errorf("kernel %q", r.Kernel)
				}
			},
		},
		{
			name:  "seed 001: GPU stack stuck after MOFED became ready",
			trees: []string{"base.tree", "seed001_stuck.tree"},
			check: func(t *testing.T, r Report) {
				if r.Ordering.PeermemWithoutDriverReady || r.Ordering.DriverReadyAbsent || mod(t, r, "nvidia_peermem").Loaded {
					t.Errorf("ordering %+v", r.Ordering)
				}
				if len(r.Ordering.ValidationsMissing) != 2 {
					t.Errorf("validations missing %v", r.Ordering.ValidationsMissing)
				}
			},
		},
		{
			name:  "seed 002: uncabled HCA, port Down / Disabled",
			trees: []string{"base.tree", "healthy.tree", "seed002_port_disabled.tree"},
			check: func(t *testing.T, r Report) {
				p := port(t, r, "mlx5_0", 1)
				if p.Active || p.LinkUp || p.StateName != "DOWN" || p.PhysStateName != "Disabled" || p.RateGbps != 10 {
					t.Errorf("mlx5_0 port 1 = %+v", p)
				}
				if p.Netdevs[0].OperState != "down" {
					t.Errorf("ib0 %+v", p.Netdevs)
				}
				if q := port(t, r, "mlx5_1", 1); !q.Active || q.RateGbps != 200 {
					t.Errorf("mlx5_1 port 1 = %+v", q)
				}
				if got := r.PortsDown(); !reflect.DeepEqual(got, []string{"mlx5_0/1: 1: DOWN (3: Disabled)"}) {
					t.Errorf("ports down %q", got)
				}
			},
		},
		{
			name:  "seed 002: port Down / Polling",
			trees: []string{"base.tree", "healthy.tree", "seed002_port_polling.tree"},
			check: func(t *testing.T, r Report) {
				p := port(t, r, "mlx5_1", 1)
				if p.Active || p.State != "1: DOWN" || p.PhysState != "2: Polling" {
					t.Errorf("mlx5_1 port 1 = %+v", p)
				}
				if got := r.PortsDown(); !reflect.DeepEqual(got, []string{"mlx5_1/1: 1: DOWN (2: Polling)"}) {
					t.Errorf("ports down %q", got)
				}
			},
		},
		{
			name:   "seed 004: high io PSI and iowait over the window",
			trees:  []string{"base.tree", "healthy.tree", "seed004_high_io.tree"},
			after:  []string{"seed004_high_io_after.tree"},
			window: 10 * time.Second,
			check: func(t *testing.T, r Report) {
				io := r.Pressure.IO
				if !io.Available || io.Some.Avg10 != 44.80 || io.Full == nil {
					t.Fatalf("io PSI %+v", io)
				}
				if io.SomeStallFraction == nil || !near(*io.SomeStallFraction, 0.45) {
					t.Errorf("io some stall %v, want 0.45", io.SomeStallFraction)
				}
				if io.FullStallFraction == nil || !near(*io.FullStallFraction, 0.30) {
					t.Errorf("io full stall %v, want 0.30", io.FullStallFraction)
				}
				if m := r.Pressure.Memory; m.SomeStallFraction == nil || !near(*m.SomeStallFraction, 0.10) {
					t.Errorf("memory PSI %+v", m)
				}
				if r.Pressure.CPU.IOWaitPercent == nil || !near(*r.Pressure.CPU.IOWaitPercent, 40) {
					t.Errorf("iowait %v, want 40 %%", r.Pressure.CPU.IOWaitPercent)
				}
			},
		},
		{
			name:  "seed 004: single read without a window has no rates",
			trees: []string{"base.tree", "healthy.tree", "seed004_high_io.tree"},
			check: func(t *testing.T, r Report) {
				p := r.Pressure
				if p.WindowSeconds != 0 || p.IO.SomeStallFraction != nil || p.CPU.IOWaitPercent != nil {
					t.Errorf("rates without a window: %+v", p)
				}
				if p.IO.Some.Avg10 != 45 || p.IO.Some.TotalUs != 983214500 || p.Memory.Full.Avg10 != 9.80 {
					t.Errorf("io PSI %+v memory %+v", p.IO.Some, p.Memory.Full)
				}
				if !near(p.CPU.IOWaitPercentSinceBoot, 100*19400.0/16659550) {
					t.Errorf("iowait since boot %v", p.CPU.IOWaitPercentSinceBoot)
				}
			},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.check(t, collectTrees(t, c.window, c.trees, c.after))
		})
	}
}

func TestMarkerAge(t *testing.T) {
	root := buildTree(t, "base.tree", "healthy.tree")
	ready := t0.Add(-81 * time.Second) // 11:58:39 EST, seed 001's "Setting driver ready state"
	if err := os.Chtimes(filepath.Join(root, DriverReadyPath), ready, ready); err != nil {
		t.Fatal(err)
	}
	r, err := Collect(Options{HostRoot: root, Now: func() time.Time { return t0 }})
	if err != nil {
		t.Fatal(err)
	}
	m := r.Markers.DriverReady
	if !m.Present || m.ModTime == nil || !m.ModTime.Equal(ready) || m.AgeSeconds != 81 {
		t.Errorf("driver-ready %+v", m)
	}
}

func TestCollectErrors(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "host")
	_, err := Collect(Options{HostRoot: missing})
	if err == nil || !strings.Contains(err.Error(), missing) || !strings.Contains(err.Error(), "mount the host root read-only at /host") {
		t.Errorf("missing host root: %v", err)
	}

	// A root without procfs: the pod mounted something, but not the host.
	empty := t.TempDir()
	_, err = Collect(Options{HostRoot: empty})
	if err == nil || !strings.Contains(err.Error(), filepath.Join(empty, "proc/modules")) || !strings.Contains(err.Error(), "/host") {
		t.Errorf("no /proc/modules: %v", err)
	}

	bad := buildTree(t, "base.tree")
	if err := os.WriteFile(filepath.Join(bad, "proc/modules"), []byte("garbage\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Collect(Options{HostRoot: bad}); err == nil || !strings.Contains(err.Error(), "proc/modules") {
		t.Errorf("garbled /proc/modules: %v", err)
	}
}

// A node with only /proc/modules — no RDMA class, no PSI (CONFIG_PSI off),
// no markers, no mount table — is a valid, if empty, report.
func TestOptionalFilesAbsent(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "proc"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "proc/modules"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	clock := &fakeClock{t: t, now: t0, root: root}
	r, err := Collect(Options{HostRoot: root, SampleWindow: time.Second, Now: clock.Now, Sleep: clock.Sleep})
	if err != nil {
		t.Fatal(err)
	}
	if r.Pressure.IO.Available || !strings.Contains(r.Pressure.IO.Reason, "CONFIG_PSI") || r.Pressure.Memory.Available {
		t.Errorf("PSI %+v", r.Pressure)
	}
	if r.Pressure.CPU.IOWaitPercent != nil || r.RDMA.ClassPresent || len(r.RDMA.Devices) != 0 {
		t.Errorf("report %+v", r)
	}
	if r.Markers.DriverReady.Present || r.Markers.MemoryPeers.Present || r.Mounts.Source != "" {
		t.Errorf("markers %+v mounts %+v", r.Markers, r.Mounts)
	}
	if r.Markers.MellanoxDriversDir || r.Markers.ValidationsDir || r.Ordering.PeermemWithoutDriverReady {
		t.Errorf("operators seen on an empty node: %+v %+v", r.Markers, r.Ordering)
	}
	// Slices encode as [] rather than null, so readers need no nil checks.
	b, _ := json.Marshal(r)
	for _, key := range []string{`"storageModulesLoaded":[]`, `"devices":[]`, `"validations":[]`, `"nfs":[]`} {
		if !strings.Contains(string(b), key) {
			t.Errorf("JSON lacks %s: %s", key, b)
		}
	}
}

// An empty memory_peers directory is left behind when no client is
// registered; it must not count as nvidia_peermem being active.
func TestEmptyMemoryPeersIsNoClient(t *testing.T) {
	root := buildTree(t, "base.tree", "seed000_storage_modules.tree")
	if err := os.MkdirAll(filepath.Join(root, MemoryPeersDir), 0o755); err != nil {
		t.Fatal(err)
	}
	r, err := Collect(Options{HostRoot: root})
	if err != nil {
		t.Fatal(err)
	}
	if !r.Markers.MemoryPeers.Present || len(r.Markers.MemoryPeers.Clients) != 0 || r.Ordering.PeermemWithoutDriverReady {
		t.Errorf("memory peers %+v ordering %+v", r.Markers.MemoryPeers, r.Ordering)
	}
}

// rdmamap lists only non-directory class entries, as real sysfs has
// symlinks there; a fixture that makes them directories sees no device.
func TestClassEntriesMustBeSymlinks(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, "base.tree")
	classDir := filepath.Join(root, "sys/class/infiniband")
	if err := os.RemoveAll(classDir); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(classDir, "mlx5_0/ports/1"), 0o755); err != nil {
		t.Fatal(err)
	}
	if got := collectRDMA(hostFS{root: root}); len(got.Devices) != 0 {
		t.Errorf("directory class entry listed: %+v", got.Devices)
	}
}

// The redirection of rdmamap's globals is undone after every collection and
// serialised between concurrent ones (run with -race).
func TestRdmamapRedirectionRestored(t *testing.T) {
	before := []string{rdmamap.RdmaClassDir, rdmamap.PciDevDir, rdmamap.RdmaDeviceDir}
	roots := []string{buildTree(t, "base.tree", "healthy.tree"), buildTree(t, "base.tree", "healthy.tree", "seed002_port_disabled.tree")}
	done := make(chan Report)
	for i := 0; i < 8; i++ {
		go func(root string) {
			r, err := Collect(Options{HostRoot: root})
			if err != nil {
				t.Error(err)
			}
			done <- r
		}(roots[i%2])
	}
	for i := 0; i < 8; i++ {
		if r := <-done; len(r.RDMA.Devices) != 3 {
			t.Errorf("%s: %d devices", r.HostRoot, len(r.RDMA.Devices))
		}
	}
	after := []string{rdmamap.RdmaClassDir, rdmamap.PciDevDir, rdmamap.RdmaDeviceDir}
	if !reflect.DeepEqual(before, after) || after[0] != "/sys/class/infiniband" {
		t.Errorf("rdmamap paths %v after collection, were %v", after, before)
	}
}

// The mount table is the host's: PID 1's, falling back to /proc/mounts.
func TestMountTableFallback(t *testing.T) {
	root := buildTree(t, "base.tree", "seed000_storage_modules.tree")
	p := filepath.Join(root, "proc/1/mounts")
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "proc/mounts"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	m := collectMounts(hostFS{root: root})
	if m.Source != "/proc/mounts" || len(m.NFS) != 2 || !m.NFS[0].RDMA {
		t.Errorf("mounts %+v", m)
	}
}

func TestReportJSONKeys(t *testing.T) {
	r := collectTrees(t, 0, []string{"base.tree", "seed001_peermem_before_mofed.tree"}, nil)
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{`"peermemWithoutDriverReady":true`, `"driverReadyAbsent":true`, `"validationsMissing":[".driver-ctr-ready","toolkit-ready"]`,
		`"storageModulesLoaded":[]`, `"rateGbps":200`, `"linkLayer":"InfiniBand"`, `"physState":"5: LinkUp"`, `"pciAddress":"0000:01:00.0"`} {
		if !strings.Contains(string(b), key) {
			t.Errorf("JSON lacks %s", key)
		}
	}
	var back Report
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back.Ordering, r.Ordering) || !reflect.DeepEqual(back.RDMA, r.RDMA) {
		t.Errorf("round trip changed the report")
	}
}

// A port whose state file cannot be read is unknown, never DOWN: reporting
// it down would send an operator to check a cable that may be fine.
func TestUnreadablePortStateIsUnknownNotDown(t *testing.T) {
	root := buildTree(t, "base.tree", "healthy.tree")
	if err := os.Remove(filepath.Join(root, "sys/devices/pci0000:00/0000:01:00.0/infiniband/mlx5_0/ports/1/state")); err != nil {
		t.Fatal(err)
	}
	r, err := Collect(Options{HostRoot: root, Now: func() time.Time { return t0 }})
	if err != nil {
		t.Fatal(err)
	}
	if got := r.PortsDown(); len(got) != 0 {
		t.Errorf("ports down %q, want none (the state is unknown)", got)
	}
	if got := r.PortsUnknown(); !reflect.DeepEqual(got, []string{"mlx5_0/1"}) {
		t.Errorf("ports unknown %q", got)
	}
}
