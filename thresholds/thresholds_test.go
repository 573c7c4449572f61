package thresholds

import (
	"errors"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

func TestEmbeddedLoads(t *testing.T) {
	s, err := Load("")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"V100/EDR-100", "A100/HDR-200", "A800/HDR-200", "H100/NDR-400", "H100-PCIe/NDR-400", "H800/NDR-400",
		"H200/NDR-400", "H200-NVL/NDR-400", "GH200/NDR-400", "B200/NDR-400", "B300/XDR-800", "GB200/NDR-400", "GB300/XDR-800"} {
		if _, err := s.Lookup(want); err != nil {
			t.Error(err)
		}
	}
}

// Real GPU Feature Discovery labels (NVML names; -SHARED under
// time-slicing) reach the SKU of their form factor: PCIe and NVL cards
// have fewer NICs than the SXM systems whose pattern also matches them.
func TestForNodeRealLabels(t *testing.T) {
	s, _ := Load("")
	for label, want := range map[string]string{
		"NVIDIA-H100-80GB-HBM3": "H100/NDR-400", "NVIDIA-H100-PCIe": "H100-PCIe/NDR-400", "NVIDIA-H100-NVL": "H100-PCIe/NDR-400",
		"NVIDIA-H100-NVL-SHARED": "H100-PCIe/NDR-400", "NVIDIA-H200": "H200/NDR-400", "NVIDIA-H200-NVL": "H200-NVL/NDR-400",
		"NVIDIA-GH200-480GB": "GH200/NDR-400", "NVIDIA-B300-SXM6-AC": "B300/XDR-800", "NVIDIA-GB300": "GB300/XDR-800",
		"NVIDIA-H800-80GB-HBM3": "H800/NDR-400", "NVIDIA-A800-SXM4-80GB": "A800/HDR-200", "NVIDIA-A100-SXM4-80GB": "A100/HDR-200",
		"NVIDIA-B200": "B200/NDR-400", "NVIDIA-GB200": "GB200/NDR-400",
	} {
		k, err := s.ForNode("n", map[string]string{GPUProductLabel: label}, "")
		if err != nil || k.Name != want {
			t.Errorf("%s: got %v (%v), want %s", label, k, err, want)
		}
	}
}

func TestForNode(t *testing.T) {
	s, _ := Load("")
	k, err := s.ForNode("n1", map[string]string{GPUProductLabel: "NVIDIA-A100-SXM4-80GB"}, "")
	if err != nil || k.Name != "A100/HDR-200" {
		t.Fatalf("%v %v", k, err)
	}
	if _, err := s.ForNode("n1", map[string]string{GPUProductLabel: "NVIDIA-L4"}, ""); err == nil ||
		!strings.Contains(err.Error(), "matches no SKU") || !strings.Contains(err.Error(), "--sku") {
		t.Fatalf("unknown product: %v", err)
	}
	if _, err := s.ForNode("n1", nil, ""); err == nil || !strings.Contains(err.Error(), "no nvidia.com/gpu.product label") {
		t.Fatalf("no label: %v", err)
	}
	if _, err := s.ForNode("n1", nil, "Z100"); err == nil || !strings.Contains(err.Error(), `unknown SKU "Z100"`) {
		t.Fatalf("forced unknown: %v", err)
	}
	if k, err := s.ForNode("n1", nil, "H100/NDR-400"); err != nil || k.Name != "H100/NDR-400" {
		t.Fatalf("forced: %v", err)
	}
}

const good = `schema: rdmasuite.io/thresholds/v1
skus:
  - name: X
    match: {gpuProduct: ["X-*"]}
    linkRateGbps: {value: 200, source: s}
    portsPerNode: {value: 8, source: s}
    write: {fractionOfLink: 0.9, source: s}
    read: {gbps: 150, source: s}
    gpuDirectWrite: {fractionOfLink: 0.8, source: s}
    ncclAllReduceBusBw: {fractionOfAggregate: 0.8, source: s}
    maxNFSStallSec: {value: 60, source: s}
    minMemlockBytes: {value: 1048576, source: s}
`

func TestParseErrorsCarryFileLine(t *testing.T) {
	if _, err := Parse("t.yaml", []byte(good)); err != nil {
		t.Fatal(err)
	}
	cases := []struct{ name, from, to, want string }{
		{"unknown field", "    read: {gbps: 150, source: s}", "    read: {gbps: 150, source: s}\n    reed: {gbps: 1, source: s}", `t.yaml:9: unknown field "reed"`},
		{"fraction out of range", "fractionOfLink: 0.9", "fractionOfLink: 90", "t.yaml:7: sku \"X\": write fraction 90 is outside 0..1"},
		{"missing value", "    minMemlockBytes: {value: 1048576, source: s}\n", "", "t.yaml:3: sku \"X\": minMemlockBytes is missing"},
		{"no source", "portsPerNode: {value: 8, source: s}", "portsPerNode: {value: 8}", "t.yaml:6: sku \"X\": portsPerNode has no source"},
		{"two bounds", "read: {gbps: 150, source: s}", "read: {gbps: 150, fractionOfLink: 0.9, source: s}", "t.yaml:8: sku \"X\": read needs exactly one"},
		{"bad yaml", "  - name: X", "  - name: [X", "t.yaml:"},
		{"schema", "rdmasuite.io/thresholds/v1", "v0", `schema "v0"`},
	}
	for _, c := range cases {
		_, err := Parse("t.yaml", []byte(strings.Replace(good, c.from, c.to, 1)))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want it to contain %q", c.name, err, c.want)
		}
	}
}

func TestBandwidthFloor(t *testing.T) {
	s, _ := Load("")
	k, _ := s.Lookup("A100/HDR-200")
	b, err := k.BandwidthFloor("write")
	if err != nil || b.Value != 190 || b.Op != ">=" || !strings.Contains(b.Source, "0.95 × 200 Gb/s") || !strings.Contains(b.Source, "azurehpc-health-checks") {
		t.Fatalf("%+v %v", b, err)
	}
	if _, err := k.BandwidthFloor("atomic"); err == nil {
		t.Fatal("unknown metric accepted")
	}
	if m := k.MinMemlock(); m.Op != ">=" || m.Value < 4096 || !strings.HasPrefix(m.Source, "A100/HDR-200: ") {
		t.Fatalf("memlock bound %+v", m)
	}
	var _ Bound = b // the floor is thresholds' own type, not the report model's
}

// TestNoReportsImport keeps the loader free of the renderer: thresholds must
// not depend on reports (or, through it, on tablewriter).
func TestNoReportsImport(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	out, err := exec.Command(goBin, "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		if dep == "github.com/rdmasuite/rdmasuite/reports" || strings.HasPrefix(dep, "github.com/olekukonko/tablewriter") {
			t.Errorf("thresholds depends on %s: keep the report model and renderers out of it", dep)
		}
	}
}

// Latency ceilings are optional per SKU (a SKU without one leaves the
// latency checks not-run, naming why); where given they are "<=" bounds
// with their source, validated like every value.
func TestLatencyCeiling(t *testing.T) {
	s, _ := Load("")
	k, _ := s.Lookup("H100/NDR-400")
	for op, want := range map[string]float64{"write": 2.5, "read": 4.5, "send": 2.5} {
		b, err := k.LatencyCeiling(op)
		if err != nil || b.Op != "<=" || b.Value != want || !strings.Contains(b.Source, "ngc_multinode_perf") {
			t.Errorf("%s: %+v %v", op, b, err)
		}
	}
	if _, err := k.LatencyCeiling("atomic"); err == nil {
		t.Error("unknown op accepted")
	}
	var bare SKU
	bare.Name = "Y"
	if _, err := bare.LatencyCeiling("write"); err == nil || !strings.Contains(err.Error(), "writeLatencyUs") {
		t.Errorf("a SKU without a ceiling: %v", err)
	}
	if _, err := bare.LatencyCeiling("send"); err == nil || !strings.Contains(err.Error(), "sendLatencyUs") {
		t.Errorf("a SKU without a send ceiling: %v", err)
	}
	if _, err := k.MsgRateFloor("write"); err == nil || !strings.Contains(err.Error(), "writeMsgRateMpps") || !strings.Contains(err.Error(), "no public per-process") {
		t.Errorf("a hardware SKU has no message-rate floor and must say why: %v", err)
	}
	inM := strings.Replace(good, "minMemlockBytes:", "writeMsgRateMpps: {value: 0.05, source: \"x\"}\n    minMemlockBytes:", 1)
	if ms, err := Parse("t.yaml", []byte(inM)); err != nil {
		t.Errorf("a message-rate floor: %v", err)
	} else if b, err := ms.SKUs[0].MsgRateFloor("write"); err != nil || b.Op != ">=" || b.Value != 0.05 {
		t.Errorf("message-rate floor %+v %v", b, err)
	} else if _, err := ms.SKUs[0].MsgRateFloor("read"); err == nil {
		t.Error("a read message-rate floor does not exist")
	}
	in0 := strings.Replace(good, "minMemlockBytes:", "sendLatencyUs: {value: -1, source: \"x\"}\n    minMemlockBytes:", 1)
	if _, err := Parse("t.yaml", []byte(in0)); err == nil || !strings.Contains(err.Error(), "sendLatencyUs = -1 is out of range") {
		t.Errorf("a negative send ceiling must be rejected: %v", err)
	}
	in := strings.Replace(good, "minMemlockBytes:", "writeLatencyUs: {value: 0, source: \"x\"}\n    minMemlockBytes:", 1)
	if _, err := Parse("t.yaml", []byte(in)); err == nil || !strings.Contains(err.Error(), "writeLatencyUs = 0 is out of range") {
		t.Errorf("a zero ceiling passes nothing and must be rejected: %v", err)
	}
}

// A SKU may leave out the floors of what its site does not judge
// (GPUDirect, NCCL, the NFS stall): it parses, and each such key answers
// ErrNotSet with its name and how to set it; the floors every run judges
// stay required.
func TestSkippableFloors(t *testing.T) {
	in := good
	for _, l := range []string{"    gpuDirectWrite:", "    ncclAllReduceBusBw:", "    maxNFSStallSec:"} {
		i := strings.Index(in, l)
		if i < 0 {
			t.Fatalf("%q not in the test file", l)
		}
		j := strings.Index(in[i:], "\n")
		in = in[:i] + in[i+j+1:]
	}
	set, err := Parse("t.yaml", []byte(in))
	if err != nil {
		t.Fatalf("a SKU without GPUDirect, NCCL and NFS floors: %v", err)
	}
	k := &set.SKUs[0]
	for _, key := range SkippableKeys() {
		err := k.Given(key)
		if !errors.Is(err, ErrNotSet) || !strings.Contains(err.Error(), "has no "+key+": give it") {
			t.Errorf("%s: %v", key, err)
		}
	}
	if err := k.Given("write"); err == nil || errors.Is(err, ErrNotSet) {
		t.Errorf("write is no optional key: %v", err)
	}
	if _, err := k.Optional("writeLatencyUs"); err != nil && !errors.Is(err, ErrNotSet) {
		t.Errorf("a missing optional bound is ErrNotSet: %v", err)
	}
}
