package node

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func TestParseProcModules(t *testing.T) {
	data := "rpcrdma 290816 1 xprtrdma, Live 0x0000000000000000 (OE)\n" +
		"nvidia_peermem 16384 0 - Live 0x0000000000000000 (POE)\n" +
		"ib_core 450560 - - Unloading 0x0000000000000000\n\n"
	got, err := parseProcModules(data)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]procModule{
		"rpcrdma":        {size: 290816, refCount: 1, usedBy: []string{"xprtrdma"}, state: "Live"},
		"nvidia_peermem": {size: 16384, refCount: 0, state: "Live"},
		"ib_core":        {size: 450560, refCount: -1, state: "Unloading"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
	if _, err := parseProcModules("rpcrdma 290816\n"); err == nil {
		t.Error("short line accepted")
	}
}

func TestModuleNameAndBuiltin(t *testing.T) {
	if got := moduleName("nvidia-peermem"); got != "nvidia_peermem" {
		t.Errorf("moduleName = %q", got)
	}
	root := t.TempDir()
	// ib_core built in: /sys/module/ib_core exists (it has parameters) but
	// has no initstate, and /proc/modules does not list it.
	if err := os.MkdirAll(filepath.Join(root, "sys/module/ib_core/parameters"), 0o755); err != nil {
		t.Fatal(err)
	}
	m := moduleStatus(hostFS{root: root}, map[string]procModule{}, "ib_core", RoleRDMA)
	if m.Loaded || !m.Builtin || !m.present() {
		t.Errorf("built-in ib_core = %+v", m)
	}
	if m := moduleStatus(hostFS{root: root}, map[string]procModule{}, "rpcrdma", RoleStorage); m.present() {
		t.Errorf("absent rpcrdma = %+v", m)
	}
}

func TestParsePSI(t *testing.T) {
	some, full, err := parsePSI("some avg10=45.00 avg60=41.37 avg300=30.12 total=983214500\nfull avg10=31.20 avg60=28.80 avg300=20.05 total=671530100\n")
	if err != nil {
		t.Fatal(err)
	}
	if *some != (PSILine{Avg10: 45, Avg60: 41.37, Avg300: 30.12, TotalUs: 983214500}) || full.TotalUs != 671530100 {
		t.Errorf("some %+v full %+v", some, full)
	}
	// Old kernels' cpu file has only a "some" line.
	if _, full, err := parsePSI("some avg10=0.00 avg60=0.00 avg300=0.00 total=0\n"); err != nil || full != nil {
		t.Errorf("some-only: full %v err %v", full, err)
	}
	for _, bad := range []string{"", "full avg10=1.00 avg60=0 avg300=0 total=0", "some avg10=x avg60=0 avg300=0 total=0", "some avg10"} {
		if _, _, err := parsePSI(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestParseCPUStat(t *testing.T) {
	got, err := parseCPUStat("cpu  470500 150 112000 16051800 19400 0 5700 0 900 0\ncpu0 1 2 3 4 5 6 7 8 9 10\n")
	if err != nil {
		t.Fatal(err)
	}
	// guest (900) is already inside user and must not be counted twice.
	if want := (cpuTicks{iowait: 19400, total: 16659550}); got != want {
		t.Errorf("got %+v, want %+v", got, want)
	}
	for _, bad := range []string{"cpu0 1 2 3 4 5\n", "cpu 1 2 3\n", "cpu 1 2 x 4 5 6 7 8\n"} {
		if _, err := parseCPUStat(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestParseMounts(t *testing.T) {
	got := parseMounts("srv:/a /mnt/a\\040b nfs4 rw,proto=rdma6,port=20049 0 0\n" +
		"srv:/c /mnt/c nfs rw,proto=tcp,mountproto=rdma 0 0\n" +
		"short line\n")
	want := []Mount{
		{Device: "srv:/a", MountPoint: "/mnt/a b", FSType: "nfs4", Options: "rw,proto=rdma6,port=20049", RDMA: true},
		// Only the data transport counts, not mountproto.
		{Device: "srv:/c", MountPoint: "/mnt/c", FSType: "nfs", Options: "rw,proto=tcp,mountproto=rdma", RDMA: false},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
	if got := UnescapeMount(`a\`); got != `a\` {
		t.Errorf("trailing backslash: %q", got)
	}
}

func TestPortTextParsing(t *testing.T) {
	for _, c := range []struct {
		in   string
		code int
		name string
	}{
		{"4: ACTIVE", 4, "ACTIVE"},
		{"1: DOWN", 1, "DOWN"},
		{"2: Polling", 2, "Polling"},
		{"7: Phy Test", 7, "Phy Test"},
		{"", 0, ""},
	} {
		if code, name := splitCode(c.in); code != c.code || name != c.name {
			t.Errorf("splitCode(%q) = %d, %q", c.in, code, name)
		}
	}
	for in, want := range map[string]float64{
		"200 Gb/sec (4X HDR)": 200,
		"100 Gb/sec (4X EDR)": 100,
		"2.5 Gb/sec (1X SDR)": 2.5,
		"":                    0,
		"unknown":             0,
	} {
		if got := parseRateGbps(in); got != want {
			t.Errorf("parseRateGbps(%q) = %v, want %v", in, got, want)
		}
	}
}
