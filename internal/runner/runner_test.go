package runner

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/rdmasuite/rdmasuite/reports"
	"github.com/rdmasuite/rdmasuite/thresholds"
	"github.com/rdmasuite/rdmasuite/workloads/bw"
)

const res = "rdma/rdma_shared_device_a"

func testNode(name string, count int64) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{thresholds.GPUProductLabel: "NVIDIA-A100-SXM4-80GB"}}}
	if count >= 0 {
		n.Status.Allocatable = corev1.ResourceList{res: *resource.NewQuantity(count, resource.DecimalSI)}
	}
	return n
}

// everyNode is an explicit --node-selector that matches every node: the
// feature tests are about what explicitly selected nodes get (a node that
// does not advertise gets a failing row); the default selection has its
// own tests (nodeselect_test.go).
const everyNode = "!rdmasuite.io/never-set"

func testConfig(t *testing.T) Config {
	set, err := thresholds.Load("")
	if err != nil {
		t.Fatal(err)
	}
	return Config{Image: "img", PodTimeout: time.Second, NodeSelector: everyNode, Concurrency: 2, Variants: []string{VariantSharedDev},
		RDMAResources: []string{res}, BWOps: []string{"write", "read"}, BWSizes: []int{65536}, Pairing: "ring",
		RailMode: bw.RailsSame, Thresholds: set, MemlockMax: "1G", LatOps: []string{"write", "read", "send"}, LatSizes: []int{2}, LatIters: 1000,
		MsgRateSizes: []int{2}, MsgRateQPs: 4, MsgRateIters: 5000}
}

// Defect: nodes that did not advertise the resource were dropped from
// bandwidth and memlock without a row. Every selected node must appear.
func TestNodesWithoutTheResourceGetFailingRows(t *testing.T) {
	kube := fake.NewClientset(testNode("gpu-a", 0), testNode("gpu-b", -1), testNode("gpu-c", 8))
	r := New(kube, testConfig(t), "t1")
	v := r.Cfg.VariantList()[0]
	for name, cs := range map[string][]reports.Check{
		"bandwidth": r.Paired(context.Background(), v, PairedBandwidth),
		"memlock":   r.Memlock(context.Background(), Variant{Name: v.Name, Resource: v.Resource}),
	} {
		perNode := map[string][]reports.Check{}
		for _, c := range cs {
			for _, n := range c.Nodes {
				perNode[n] = append(perNode[n], c)
			}
		}
		for _, n := range []string{"gpu-a", "gpu-b"} {
			if len(perNode[n]) == 0 {
				t.Fatalf("%s: node %s vanished: %+v", name, n, cs)
			}
			for _, c := range perNode[n] {
				if c.Status != reports.Fail || !strings.Contains(c.Diagnosis, res) {
					t.Errorf("%s: %s on %s must fail naming %s: %+v", name, c.ID, n, res, c)
				}
			}
		}
		if name == "bandwidth" {
			// gpu-c alone advertises: a pair needs two nodes, so it is
			// not-run with the reason, and that fails the run.
			for _, c := range perNode["gpu-c"] {
				if c.Status != reports.NotRun || len(r.Failing([]reports.Check{c})) != 1 {
					t.Errorf("lone node: %+v", c)
				}
			}
		}
	}
}

func TestAllowNotRunIsTheOperatorsChoice(t *testing.T) {
	cfg := testConfig(t)
	cfg.AllowNotRun = []string{"bandwidth/"}
	r := New(fake.NewClientset(), cfg, "t2")
	cs := []reports.Check{NotRun("bandwidth/write", "hostdev", "Multus is not installed"), NotRun("memlock/rlimit", "hostdev", "x")}
	if f := r.Failing(cs); len(f) != 1 || f[0].ID != "memlock/rlimit" {
		t.Fatalf("%+v", f)
	}
}

func TestPortsCheckAgainstSKU(t *testing.T) {
	r := New(fake.NewClientset(), testConfig(t), "t3")
	v := r.Cfg.VariantList()[0]
	n := *testNode("gpu-a", 8)
	sku, err := r.Cfg.Thresholds.ForNode(n.Name, n.Labels, "")
	if err != nil || sku.PortsPerNode.Value == nil {
		t.Fatalf("fixture SKU: %v", err)
	}
	want := int(*sku.PortsPerNode.Value)
	var rails []bw.Rail
	for i := 0; i < want; i++ {
		rails = append(rails, bw.Rail{Index: i, Device: "mlx5_" + string(rune('0'+i)), Port: 1, State: "ACTIVE"})
	}
	one := func(rs []bw.Rail) [][]bw.Rail { return [][]bw.Rail{rs} }
	if c := r.portsCheck(v, n, one(rails), true); c.Status != reports.Pass {
		t.Fatalf("all %d ports: %+v", want, c)
	}
	// Ports are distinct ports, not list entries.
	dup := append(append([]bw.Rail(nil), rails[:want-1]...), rails[0])
	if c := r.portsCheck(v, n, one(dup), true); c.Status != reports.Fail || c.Measured[0].Value != float64(want-1) {
		t.Fatalf("%d entries, %d distinct ports: %+v", want, want-1, c)
	}
	// A node whose pods saw different ports is a failing row naming both.
	c2 := r.portsCheck(v, n, [][]bw.Rail{rails, rails[1:]}, true)
	if c2.Status != reports.Fail || !strings.Contains(c2.Diagnosis, "pods on gpu-a saw different RDMA ports") ||
		!strings.Contains(c2.Diagnosis, "mlx5_0/1 in one pod and not in another") {
		t.Fatalf("rail sets differ: %+v", c2)
	}
	c := r.portsCheck(v, n, one(rails[:1]), true)
	if want > 1 && (c.Status != reports.Fail || !strings.Contains(c.Diagnosis, "missing") || !strings.Contains(c.Diagnosis, "mlx5_0/1")) {
		t.Fatalf("1 of %d ports: %+v", want, c)
	}
	if c := r.portsCheck(v, n, nil, false); c.Status != reports.NotRun || c.Reason == "" {
		t.Fatalf("unknown rails: %+v", c)
	}
}

func TestDeadlineLeavesTimeForTeardown(t *testing.T) {
	start := time.Unix(0, 0)
	if _, _, ok := Deadline(start, 0); ok {
		t.Fatal("no -timeout, no deadline")
	}
	for _, tc := range []struct{ timeout, reserve time.Duration }{
		{10 * time.Minute, time.Minute}, {30 * time.Minute, 3 * time.Minute}, {2 * time.Hour, 5 * time.Minute}, {90 * time.Second, 30 * time.Second},
	} {
		d, reserve, ok := Deadline(start, tc.timeout)
		if !ok || reserve != tc.reserve || d != start.Add(tc.timeout-tc.reserve) {
			t.Errorf("timeout %s: deadline +%s reserve %s", tc.timeout, d.Sub(start), reserve)
		}
	}
}

func TestConfigValidateNamesTheFlag(t *testing.T) {
	for flagName, edit := range map[string]func(*Config){
		"--bw-ops":        func(c *Config) { c.BWOps = []string{"send"} },
		"--bw-sizes":      func(c *Config) { c.BWSizes = nil },
		"--lat-ops":       func(c *Config) { c.LatOps = []string{"write", "atomic"} },
		"--lat-ops ":      func(c *Config) { c.LatOps = []string{"send", "send"} },
		"--lat-ops  ":     func(c *Config) { c.LatOps = nil },
		"--msgrate-sizes": func(c *Config) { c.MsgRateSizes = nil },
		"--msgrate-qps":   func(c *Config) { c.MsgRateQPs = 0 },
		"--msgrate-iters": func(c *Config) { c.MsgRateIters = 0 },
		"--rails":         func(c *Config) { c.RailMode = "diagonal" },
		"--qp-timeout":    func(c *Config) { c.QPTimeout = 32 },
		"--pairing":       func(c *Config) { c.Pairing = "star" },
		"--variants":      func(c *Config) { c.Variants = []string{"sriov"} },
		"--allow-not-run": func(c *Config) { c.AllowNotRun = []string{"everything"} },
		"--image":         func(c *Config) { c.Image = "" },
		"--image ":        func(c *Config) { c.Image = "registry/rdmaprobe: v1" },
		"--variants ":     func(c *Config) { c.Variants = []string{"auto", "shared-dev"} },
	} {
		c := testConfig(t)
		edit(&c)
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), strings.TrimSpace(flagName)) {
			t.Errorf("%s: %v", flagName, err)
		}
	}
	if err := testConfig(t).Validate(); err != nil {
		t.Fatal(err)
	}
	if s, err := ParseSizes("64K, 1M,4096"); err != nil || len(s) != 3 || s[1] != 1<<20 {
		t.Fatalf("%v %v", s, err)
	}
	for _, bad := range []string{"64Q", "0", "64K,64K", "-1M"} {
		if _, err := ParseSizes(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// go test's exit code and the results agree: the results never read PASSED
// when go test failed, failed checks never exit 0, nothing measured is 2.
func TestReconcileExitCodeAndResults(t *testing.T) {
	pass := reports.Check{ID: "memlock/rlimit", Nodes: []string{"n"}, Status: reports.Pass}
	fail := reports.Check{ID: "bandwidth/write", Nodes: []string{"n"}, Status: reports.Fail, Diagnosis: "x"}
	for _, tc := range []struct {
		name     string
		checks   []reports.Check
		code     int
		wantCode int
		wantRow  string // reason text of an added run/incomplete row, "" for none
	}{
		{"all passed", []reports.Check{pass}, 0, 0, ""},
		{"go test failed outside the checks", []reports.Check{pass}, 1, 1, "outside the recorded checks"},
		{"interrupted", []reports.Check{pass}, 130, 130, "interrupted"},
		{"a check failed, go test said 0", []reports.Check{pass, fail}, 0, reports.ExitChecksFailed, ""},
		{"unallowed not-run, go test said 0", []reports.Check{pass, NotRun("bandwidth/read", "hostdev", "no Multus")}, 0, reports.ExitChecksFailed, ""},
		{"nothing recorded", nil, 0, reports.ExitBroken, ""},
		{"nothing recorded, interrupted", nil, 130, 130, ""},
	} {
		res, code := Reconcile(reports.Run{Checks: append([]reports.Check(nil), tc.checks...)}, tc.code)
		if code != tc.wantCode {
			t.Errorf("%s: exit %d, want %d", tc.name, code, tc.wantCode)
		}
		var row *reports.Check
		for i := range res.Checks {
			if res.Checks[i].ID == "run/incomplete" {
				row = &res.Checks[i]
			}
		}
		switch {
		case tc.wantRow == "" && row != nil:
			t.Errorf("%s: unexpected row %+v", tc.name, row)
		case tc.wantRow != "" && (row == nil || row.Status != reports.Error || !strings.Contains(row.Reason, tc.wantRow)):
			t.Errorf("%s: want a run/incomplete error row with %q, got %+v", tc.name, tc.wantRow, row)
		}
		if code != 0 && res.Passed() {
			t.Errorf("%s: exit %d but the results read PASSED", tc.name, code)
		}
	}
}

// A feature cut short by a forced stop is an error row naming it and why,
// never silently missing; a feature that ended leaves nothing behind.
func TestRecordUnfinished(t *testing.T) {
	r := New(nil, Config{}, "t-unf")
	done := r.Begin("memlock", "shared-dev")
	r.Begin("bandwidth", "hostdev")
	done()
	if n := r.RecordUnfinished("internal deadline passed (context deadline exceeded)"); n != 1 {
		t.Fatalf("%d unfinished, want 1", n)
	}
	cs := r.Checks()
	if len(cs) != 1 || cs[0].ID != "bandwidth" || cs[0].Variant != "hostdev" || cs[0].Status != reports.Error ||
		!strings.Contains(cs[0].Reason, "context deadline exceeded") || !strings.Contains(cs[0].Reason, "never judged") {
		t.Fatalf("%+v", cs)
	}
}

// The header names which SKU of which file judges the nodes,
// and each node without one with why; the results file carries every
// node's SKU and file.
func TestThresholdsHeaderAndNodeFacts(t *testing.T) {
	cpu := testNode("cpu-1", -1)
	cpu.Labels = map[string]string{}
	r := New(fake.NewClientset(testNode("a", 8), testNode("b", 8), cpu), testConfig(t), "t-hdr")
	got := strings.Join(r.ThresholdsHeader(context.Background()), "\n")
	for _, want := range []string{"thresholds: SKU A100/HDR-200 from thresholds/skus.yaml (built in) judges 2 node(s): a, b",
		"thresholds: no SKU for cpu-1: node cpu-1 has no " + thresholds.GPUProductLabel} {
		if !strings.Contains(got, want) {
			t.Errorf("header lacks %q:\n%s", want, got)
		}
	}
	res := r.Results(time.Now(), "s", "v")
	for _, n := range res.Nodes {
		if n.Name == "a" && (n.SKU != "A100/HDR-200" || n.ThresholdsFile != "thresholds/skus.yaml (built in)") {
			t.Errorf("node a: %+v", n)
		}
	}
}

// An overlay of calibrated floors (rdmasuite thresholds calibrate) is
// named in the header with its values: a bar from the fleet's own
// figures is never read as a public one.
func TestThresholdsHeaderNamesCalibratedFloors(t *testing.T) {
	base, err := thresholds.Load("")
	if err != nil {
		t.Fatal(err)
	}
	k, err := base.Lookup("A100/HDR-200")
	if err != nil {
		t.Fatal(err)
	}
	cal := *k
	v := 190.1
	cal.Write.BySize = map[string]thresholds.Floor{"1MiB": {Gbps: &v, Source: thresholds.CalibratedPrefix + "16 ports of runs run-a (2026-12-06)"}}
	data, err := thresholds.Marshal("calibrated", []thresholds.SKU{cal})
	if err != nil {
		t.Fatal(err)
	}
	overlay := filepath.Join(t.TempDir(), "calibrated.yaml")
	if err := os.WriteFile(overlay, data, 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(t)
	if cfg.Thresholds, err = thresholds.LoadWithOverlay("", overlay); err != nil {
		t.Fatal(err)
	}
	r := New(fake.NewClientset(testNode("a", 8), testNode("b", 8)), cfg, "t-cal")
	got := strings.Join(r.ThresholdsHeader(context.Background()), "\n")
	if want := "thresholds: calibrated floors of A100/HDR-200 (" + overlay + "): write 1MiB ≥ 190.1 Gb/s"; !strings.Contains(got, want) {
		t.Fatalf("header lacks %q:\n%s", want, got)
	}
}
