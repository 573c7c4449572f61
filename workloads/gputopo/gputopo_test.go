package gputopo

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Fixture trees (testdata/*.tree) use workloads/node's format: free text up
// to the first header, then
//
//	-- path --            a file; the lines up to the next header are its content
//	-- link -> target --  a symlink (sysfs bus and class entries are relative symlinks)
//
// with lines starting with # ignored. Module zips cannot carry symlinks or
// colons in file names, so the trees are text and materialised per test.
func buildTree(t *testing.T, name string) *Sysfs {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	var cur string
	var lines []string
	flush := func() {
		if cur == "" {
			return
		}
		if link, target, ok := strings.Cut(cur, " -> "); ok {
			p := filepath.Join(root, link)
			must(t, os.MkdirAll(filepath.Dir(p), 0o755))
			must(t, os.Symlink(target, p))
			return
		}
		for len(lines) > 0 && strings.TrimSpace(lines[len(lines)-1]) == "" {
			lines = lines[:len(lines)-1]
		}
		content := ""
		if len(lines) > 0 {
			content = strings.Join(lines, "\n") + "\n"
		}
		p := filepath.Join(root, cur)
		must(t, os.MkdirAll(filepath.Dir(p), 0o755))
		must(t, os.WriteFile(p, []byte(content), 0o644))
	}
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, "-- ") && strings.HasSuffix(line, " --") && len(line) > 6 {
			flush()
			cur, lines = strings.TrimSpace(line[3:len(line)-3]), nil
			continue
		}
		if cur != "" && !strings.HasPrefix(line, "#") {
			lines = append(lines, line)
		}
	}
	flush()
	s, err := New(root)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func addrs(gs []GPU) []string {
	var out []string
	for _, g := range gs {
		out = append(out, g.Address)
	}
	return out
}

func TestGPUsListsNVIDIADisplayAnd3DControllersOnly(t *testing.T) {
	s := buildTree(t, "one_switch.tree")
	gpus, err := s.GPUs()
	if err != nil {
		t.Fatal(err)
	}
	// Not the GPU's audio function, the NVSwitch, the BMC's VGA.
	want := []string{"0000:03:00.0", "0000:07:00.0", "0000:08:00.0", "0000:0c:00.0", "0000:41:00.0"}
	if !slices.Equal(addrs(gpus), want) {
		t.Fatalf("GPUs %v, want %v", addrs(gpus), want)
	}
	g := gpus[0]
	if g.NUMANode != 0 || g.Class != "0x030200" || g.Device != "0x2330" ||
		g.Path != "/sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:00.0/0000:03:00.0" {
		t.Fatalf("GPU 0: %+v", g)
	}
	if hb, br := g.HostBridge(), g.Bridges(); hb != "pci0000:00" || !slices.Equal(br, []string{"0000:00:01.0", "0000:01:00.0", "0000:02:00.0"}) {
		t.Fatalf("host bridge %q, bridges %v", hb, br)
	}
	if gpus[2].Class != "0x030000" {
		t.Fatalf("VGA-class GPU: %+v", gpus[2])
	}
}

// One NIC against a GPU at every relation nvidia-smi names.
func TestClassifyEveryRelation(t *testing.T) {
	s := buildTree(t, "one_switch.tree")
	nic, err := s.RDMADevice("mlx5_0")
	if err != nil {
		t.Fatal(err)
	}
	if nic.Address != "0000:04:00.0" || nic.NUMANode != 0 {
		t.Fatalf("mlx5_0: %+v", nic)
	}
	for _, c := range []struct {
		gpu  string
		want Level
	}{
		{"0000:03:00.0", PIX}, // same switch
		{"0000:0c:00.0", PIX},
		{"0000:07:00.0", PXB}, // behind a second switch under the first
		{"0000:08:00.0", PHB}, // another root port of the same host bridge
		{"0000:41:00.0", NODE},
	} {
		g, err := s.Device(c.gpu)
		if err != nil {
			t.Fatal(err)
		}
		rel := Classify(nic, g)
		if rel.Level != c.want || rel.CrossSocket || rel.NUMANIC != 0 || rel.NUMAGPU != 0 || rel.Why == "" {
			t.Errorf("%s: %+v, want %s", c.gpu, rel, c.want)
		}
	}
	g, _ := s.Device("0000:03:00.0")
	if rel := Classify(g, nic); rel.Level != PIX {
		t.Fatalf("not symmetric: %+v", rel)
	}
}

func TestNearestPicksTheSwitchMateAndBreaksTiesByAddress(t *testing.T) {
	s := buildTree(t, "one_switch.tree")
	gpus, err := s.GPUs()
	if err != nil {
		t.Fatal(err)
	}
	nic, err := s.RDMADevice("mlx5_0")
	if err != nil {
		t.Fatal(err)
	}
	// Two GPUs share the NIC's switch: the lower address wins, whatever
	// the order of the candidates.
	rev := slices.Clone(gpus)
	slices.Reverse(rev)
	for _, cands := range [][]GPU{gpus, rev} {
		g, rel, err := s.Nearest("04:00.0", cands) // lspci spelling
		if err != nil || g.Address != "0000:03:00.0" || rel.Level != PIX || rel.CrossSocket {
			t.Fatalf("nearest: %s %+v %v", g.Address, rel, err)
		}
	}
	// Only GPUs further away: the best of them.
	var far []GPU
	for _, g := range gpus {
		if g.Address != "0000:03:00.0" && g.Address != "0000:0c:00.0" {
			far = append(far, g)
		}
	}
	if g, rel, err := NearestTo(nic, far); err != nil || g.Address != "0000:07:00.0" || rel.Level != PXB {
		t.Fatalf("nearest of the far ones: %s %+v %v", g.Address, rel, err)
	}
	if _, _, err := s.Nearest("0000:04:00.0", nil); !errors.Is(err, ErrNoGPU) {
		t.Fatalf("no candidates: %v", err)
	}
	if _, _, err := s.Nearest("0000:ee:00.0", gpus); !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "0000:ee:00.0") {
		t.Fatalf("unknown NIC: %v", err)
	}
}

func TestTwoSocketsCrossSocketFlagged(t *testing.T) {
	s := buildTree(t, "two_sockets.tree")
	gpus, err := s.GPUs()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(addrs(gpus), []string{"0000:83:00.0", "0000:85:00.0"}) {
		t.Fatalf("GPUs %v", addrs(gpus))
	}
	nic0, err := s.RDMADevice("mlx5_0")
	if err != nil {
		t.Fatal(err)
	}
	g, rel, err := s.Nearest(nic0.Address, gpus)
	if err != nil || g.Address != "0000:83:00.0" || rel.Level != SYS || !rel.CrossSocket || rel.NUMANIC != 0 || rel.NUMAGPU != 1 ||
		!strings.Contains(rel.Why, "across NUMA nodes") {
		t.Fatalf("socket-0 NIC: %s %+v %v", g.Address, rel, err)
	}
	nic1, err := s.RDMADevice("mlx5_1")
	if err != nil {
		t.Fatal(err)
	}
	g, rel, err = NearestTo(nic1, gpus)
	if err != nil || g.Address != "0000:83:00.0" || rel.Level != PIX || rel.CrossSocket || rel.NUMANIC != 1 {
		t.Fatalf("socket-1 NIC: %s %+v %v", g.Address, rel, err)
	}
}

func TestNoGPU(t *testing.T) {
	s := buildTree(t, "no_gpu.tree")
	gpus, err := s.GPUs()
	if err != nil || gpus == nil || len(gpus) != 0 {
		t.Fatalf("GPUs %v (%v), want an empty list", addrs(gpus), err)
	}
	nic, err := s.RDMADevice("mlx5_0")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Nearest(nic.Address, gpus); !errors.Is(err, ErrNoGPU) {
		t.Fatalf("nearest without GPUs: %v", err)
	}
	// No PCI bus at all (sysfs not mounted) is an error, not "no GPU".
	empty, err := New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := empty.GPUs(); err == nil || !strings.Contains(err.Error(), "/sys/bus/pci/devices") {
		t.Fatalf("no sysfs: %v", err)
	}
}

func TestSoftRoCEHasNoPCIUnlessItsNetdevDoes(t *testing.T) {
	s := buildTree(t, "rxe.tree")
	for _, c := range []struct {
		dev, why string
	}{
		{"rxe0", "network interface dummy0, which has no PCI device"},
		{"rxe2", "net1, which is not visible here"},
		{"rxe3", "no parent network interface"},
	} {
		_, err := s.RDMADevice(c.dev)
		var npe *NoPCIError
		if !errors.Is(err, ErrNoPCIDevice) || !errors.As(err, &npe) || npe.Device != c.dev || !strings.Contains(err.Error(), c.why) ||
			!strings.Contains(err.Error(), "RDMA device "+c.dev+" has no PCI device") {
			t.Errorf("%s: %v (want no PCI device: …%s…)", c.dev, err, c.why)
		}
	}
	for _, dev := range []string{"rxe1", "rxe4"} { // parent eth0; GID netdev eth0
		d, err := s.RDMADevice(dev)
		if err != nil || d.Address != "0000:00:03.0" || d.NUMANode != -1 || d.Path != "/sys/devices/pci0000:00/0000:00:03.0" {
			t.Errorf("%s over a virtio NIC: %+v %v", dev, d, err)
		}
	}
	if _, err := s.RDMADevice("mlx5_9"); !errors.Is(err, ErrNotFound) || errors.Is(err, ErrNoPCIDevice) {
		t.Fatalf("unknown device: %v", err)
	}
}

// The rules themselves, on paths alone: bridge counting, NUMA handling
// across host bridges, and the unknown cases.
func TestClassifyRules(t *testing.T) {
	dev := func(path string, numa int) PCIDevice { return PCIDevice{Path: path, NUMANode: numa} }
	nic := "/sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0"
	gpu := "/sys/devices/pci0000:80/0000:80:01.0/0000:81:00.0"
	for _, c := range []struct {
		nicNUMA, gpuNUMA int
		want             Level
		cross            bool
	}{
		{0, 0, NODE, false},
		{0, 1, SYS, true},
		{-1, -1, NODE, false}, // a non-NUMA kernel: one node
		{0, -1, SYS, false},   // cannot tell: the worst case, but not claimed cross-socket
	} {
		rel := Classify(dev(nic, c.nicNUMA), dev(gpu, c.gpuNUMA))
		if rel.Level != c.want || rel.CrossSocket != c.cross {
			t.Errorf("NUMA %d/%d: %+v, want %s cross %v", c.nicNUMA, c.gpuNUMA, rel, c.want, c.cross)
		}
	}
	// The same host bridge wins over NUMA (one root complex is one socket).
	if rel := Classify(dev(nic, 0), dev("/sys/devices/pci0000:00/0000:00:02.0/0000:02:00.0", 1)); rel.Level != PHB {
		t.Fatalf("same host bridge: %+v", rel)
	}
	// A switch plus one more bridge on the GPU's side is already two
	// bridges: PXB, not PIX.
	sw := "/sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0"
	if rel := Classify(dev(sw+"/0000:02:08.0/0000:04:00.0", 0), dev(sw+"/0000:02:18.0/0000:0d:00.0/0000:0e:00.0", 0)); rel.Level != PXB {
		t.Fatalf("switch and a bridge: %+v", rel)
	}
	// Two functions of one device (a dual-port NIC, a GPU and its audio).
	if rel := Classify(dev(nic, 0), dev("/sys/devices/pci0000:00/0000:00:01.0/0000:01:00.1", 0)); rel.Level != PIX {
		t.Fatalf("sibling functions: %+v", rel)
	}
	// arm64 platform parents and VMD domains are not bridges.
	arm := "/sys/devices/platform/soc/a000000.pcie/pci0000:00/0000:00:00.0/0000:01:00.0/0000:02:00.0/0000:03:00.0"
	if d := dev(arm, 0); d.HostBridge() != "pci0000:00" || len(d.Bridges()) != 3 {
		t.Fatalf("arm path: %q %v", d.HostBridge(), d.Bridges())
	}
	if rel := Classify(dev("", 0), dev(gpu, 0)); rel.Level != SYS || !strings.Contains(rel.Why, "unknown") {
		t.Fatalf("unknown path: %+v", rel)
	}
}

func TestNormalizeAddress(t *testing.T) {
	for in, want := range map[string]string{
		"0000:3b:00.0":     "0000:3b:00.0",
		"0000:3B:00.0":     "0000:3b:00.0", // cuDeviceGetPCIBusId
		"00000000:3B:00.0": "0000:3b:00.0", // NVML
		"3b:00.0":          "0000:3b:00.0", // lspci
		"10000:e1:1f.7":    "10000:e1:1f.7",
	} {
		if got, err := NormalizeAddress(in); err != nil || got != want {
			t.Errorf("%q: %q %v, want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "3b", "3b:00", "zz:00.0", "0000:3b:20.0", "0000:3b:00.8", "virtio0", "pci0000:00"} {
		if got, err := NormalizeAddress(bad); err == nil {
			t.Errorf("%q accepted as %q", bad, got)
		}
	}
}
