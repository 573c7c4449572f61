package thresholds

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The run's header names, for every node, the SKU and the file
// that judged it; at fleet scale grouped per SKU, with the names cut and
// the count given, and every node without a SKU named with why.
func TestJudgesGroupsNodesBySKUAndFile(t *testing.T) {
	dir := t.TempDir()
	over := filepath.Join(dir, "site.yaml")
	if err := os.WriteFile(over, []byte(`schema: rdmasuite.io/thresholds/v1
skus:
- name: lab-h100
  match: {gpuProduct: ["NVIDIA-H100-80GB-HBM3-LAB"]}
  linkRateGbps: {value: 400, source: "lab"}
  portsPerNode: {value: 8, source: "lab"}
  write: {gbps: 300, source: "lab"}
  read: {gbps: 300, source: "lab"}
  gpuDirectWrite: {gbps: 300, source: "lab"}
  ncclAllReduceBusBw: {gbps: 300, source: "lab"}
  maxNFSStallSec: {value: 60, source: "lab"}
  minMemlockBytes: {value: 1048576, source: "lab"}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	set, err := LoadSuite("", false, over)
	if err != nil {
		t.Fatal(err)
	}
	labels := map[string]map[string]string{}
	for i := range 300 {
		labels[fmt.Sprintf("gpu-%03d", i)] = map[string]string{GPUProductLabel: "NVIDIA-H100-80GB-HBM3"}
	}
	labels["lab-1"] = map[string]string{GPUProductLabel: "NVIDIA-H100-80GB-HBM3-LAB"}
	labels["cpu-1"] = map[string]string{}
	groups, unjudged := set.Judges(labels, "")
	if len(groups) != 2 || len(unjudged) != 1 || !strings.Contains(unjudged["cpu-1"], GPUProductLabel) {
		t.Fatalf("groups %+v unjudged %v", groups, unjudged)
	}
	var lines []string
	for _, g := range groups {
		lines = append(lines, g.String())
	}
	text := strings.Join(lines, "\n")
	for _, want := range []string{"H100/NDR-400 from thresholds/skus.yaml (built in) judges 300 node(s): gpu-000, gpu-001",
		"(+295 more)", "lab-h100 from " + over + " judges 1 node(s): lab-1"} {
		if !strings.Contains(text, want) {
			t.Errorf("header lacks %q:\n%s", want, text)
		}
	}
	if len(text) > 400 {
		t.Errorf("300 nodes take %d characters of header: not one screen", len(text))
	}
	// --sku forces one SKU on every node, CPU nodes included.
	groups, unjudged = set.Judges(labels, "lab-h100")
	if len(groups) != 1 || groups[0].SKU != "lab-h100" || len(groups[0].Nodes) != 302 || len(unjudged) != 0 {
		t.Fatalf("forced: %+v %v", groups, unjudged)
	}
}
