package thresholds

import (
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// skuYAML is one complete SKU of a thresholds file.
func skuYAML(name, pattern string, link, writeGbps float64) string {
	return strings.NewReplacer("NAME", name, "PATTERN", pattern, "LINK", fmtF(link), "WRITE", fmtF(writeGbps)).Replace(`
  - name: NAME
    match: {gpuProduct: ["PATTERN"]}
    linkRateGbps: {value: LINK, source: overlay link}
    portsPerNode: {value: 2, source: overlay ports}
    write: {gbps: WRITE, source: overlay write}
    read: {fractionOfLink: 0.5, source: overlay read}
    gpuDirectWrite: {fractionOfLink: 0.5, source: overlay gdr}
    ncclAllReduceBusBw: {fractionOfAggregate: 0.5, source: overlay nccl}
    maxNFSStallSec: {value: 30, source: overlay stall}
    minMemlockBytes: {value: 2097152, source: overlay memlock}
`)
}

func fmtF(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

func overlayFile(t *testing.T, skus ...string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "skus.yaml")
	if err := os.WriteFile(p, []byte("schema: rdmasuite.io/thresholds/v1\nskus:"+strings.Join(skus, "")), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func product(p string) map[string]string { return map[string]string{GPUProductLabel: p} }

// An overlay SKU replaces the built-in SKU of its name whole: its match
// patterns and every threshold are the overlay's, nothing is merged.
func TestOverlayReplacesWholeSKU(t *testing.T) {
	builtin, _ := Load("")
	p := overlayFile(t, skuYAML("H100/NDR-400", "NVIDIA-H100-80GB-HBM3", 200, 150))
	s, err := LoadWithOverlay("", p)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.SKUs) != len(builtin.SKUs) {
		t.Fatalf("%d SKUs, want %d (a replacement adds none): %v", len(s.SKUs), len(builtin.SKUs), s.Names())
	}
	k, err := s.ForNode("n1", product("NVIDIA-H100-80GB-HBM3"), "")
	if err != nil || k.Name != "H100/NDR-400" || !k.FromOverlay() || k.File() != p {
		t.Fatalf("%+v %v", k, err)
	}
	if *k.LinkRateGbps.Value != 200 || *k.PortsPerNode.Value != 2 || *k.MaxNFSStallSec.Value != 30 || k.Read.FractionOfLink == nil || *k.Read.FractionOfLink != 0.5 {
		t.Errorf("the overlay's thresholds were not all taken: %+v", k)
	}
	w, err := k.BandwidthFloor("write")
	if err != nil || w.Value != 150 || !strings.Contains(w.Source, "overlay "+p) || !strings.Contains(w.Source, "overlay write") {
		t.Errorf("write floor %+v %v: want 150 Gb/s sourced from the overlay file", w, err)
	}
	r, _ := k.BandwidthFloor("read")
	if r.Value != 100 { // 0.5 × the overlay's 200, not the built-in's 400
		t.Errorf("read floor %g, want 100", r.Value)
	}
	// The built-in pattern NVIDIA-H100-* went with the built-in SKU.
	if k, err := s.ForNode("n2", product("NVIDIA-H100-SXM5-94GB"), ""); err == nil {
		t.Errorf("NVIDIA-H100-SXM5-94GB matched %s: the built-in patterns must be replaced, not merged", k.Name)
	} else if !strings.Contains(err.Error(), "(overlay)") || !strings.Contains(err.Error(), p) {
		t.Errorf("no-match error does not name both files: %v", err)
	}
	// Every other SKU is the built-in one.
	a, err := s.ForNode("n3", product("NVIDIA-A100-SXM4-80GB"), "")
	if err != nil || a.Name != "A100/HDR-200" || a.FromOverlay() || *a.LinkRateGbps.Value != 200 {
		t.Fatalf("%+v %v", a, err)
	}
	if aw, _ := a.BandwidthFloor("write"); strings.Contains(aw.Source, "overlay") {
		t.Errorf("a built-in SKU's source names the overlay: %s", aw.Source)
	}
	if rep, add := s.OverlayChanges(); !reflect.DeepEqual(rep, []string{"H100/NDR-400"}) || len(add) != 0 {
		t.Errorf("changes: replaced %v added %v", rep, add)
	}
	// The built-in set is untouched.
	h, _ := builtin.Lookup("H100/NDR-400")
	if *h.LinkRateGbps.Value != 400 || h.FromOverlay() || !reflect.DeepEqual(h.Match.GPUProduct, []string{"NVIDIA-H100-*"}) {
		t.Errorf("the base set changed: %+v", h)
	}
}

// A new SKU is added; the overlay's SKUs are matched first, so a specific
// pattern there wins over a broader built-in one, and the rest still match
// the built-ins.
func TestOverlayAddsSKUAndMatchesAcrossBoth(t *testing.T) {
	p := overlayFile(t, skuYAML("L40S/RoCE-200", "NVIDIA-L40S*", 200, 100), skuYAML("H100-PCIe/NDR-200", "NVIDIA-H100-PCIe*", 200, 180))
	s, err := LoadWithOverlay("", p)
	if err != nil {
		t.Fatal(err)
	}
	builtin, _ := Load("")
	if len(s.SKUs) != len(builtin.SKUs)+2 {
		t.Fatalf("%v", s.Names())
	}
	for product, want := range map[string]string{
		"NVIDIA-L40S":             "L40S/RoCE-200",
		"NVIDIA-H100-PCIe":        "H100-PCIe/NDR-200", // overlay first, though NVIDIA-H100-* matches too
		"NVIDIA-H100-80GB-HBM3":   "H100/NDR-400",      // built-in
		"NVIDIA-A100-SXM4-80GB":   "A100/HDR-200",
		"rdmasuite-soft-roce-bed": "soft-roce-bed",
	} {
		k, err := s.ForNode("n", map[string]string{GPUProductLabel: product}, "")
		if err != nil || k.Name != want {
			t.Errorf("%s: %v %v, want %s", product, k, err, want)
		}
	}
	if k, err := s.ForNode("n", nil, "L40S/RoCE-200"); err != nil || !k.FromOverlay() {
		t.Errorf("forcing an added SKU: %v %v", k, err)
	}
	if rep, add := s.OverlayChanges(); len(rep) != 0 || !reflect.DeepEqual(add, []string{"L40S/RoCE-200", "H100-PCIe/NDR-200"}) {
		t.Errorf("changes: replaced %v added %v", rep, add)
	}
}

// The overlay also lays over a --thresholds file, not only the built-ins.
func TestOverlayOverThresholdsFile(t *testing.T) {
	dir := t.TempDir()
	base := filepath.Join(dir, "base.yaml")
	if err := os.WriteFile(base, []byte(good), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := LoadWithOverlay(base, overlayFile(t, skuYAML("Y", "Y-*", 100, 90)))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(s.Names(), []string{"Y", "X"}) {
		t.Fatalf("%v", s.Names())
	}
	if x, _ := s.Lookup("X"); x.File() != base || x.FromOverlay() {
		t.Errorf("X from %s", x.File())
	}
}

// A malformed overlay is an error naming the overlay's file, line and fix;
// nothing of it is used and the base is not changed.
func TestOverlayErrors(t *testing.T) {
	full := skuYAML("H100/NDR-400", "NVIDIA-H100-*", 400, 300)
	partial := "\n  - name: H100/NDR-400\n    match: {gpuProduct: [\"NVIDIA-H100-*\"]}\n    write: {gbps: 300, source: ours}\n"
	cases := []struct {
		name, body string
		want       []string
	}{
		{"partial SKU: replacement is whole", "schema: rdmasuite.io/thresholds/v1\nskus:" + partial,
			[]string{"skus.yaml:3: sku \"H100/NDR-400\": linkRateGbps is missing", "replaces the SKU of that name in thresholds/skus.yaml (built in) whole",
				"not merged field by field", "give every field"}},
		{"unknown field", "schema: rdmasuite.io/thresholds/v1\nskus:" + strings.Replace(full, "    read:", "    reed: {gbps: 1, source: s}\n    read:", 1),
			[]string{"skus.yaml:8: unknown field \"reed\""}},
		{"out of range", "schema: rdmasuite.io/thresholds/v1\nskus:" + strings.Replace(full, "fractionOfLink: 0.5, source: overlay read", "fractionOfLink: 50, source: overlay read", 1),
			[]string{"skus.yaml:8: sku \"H100/NDR-400\": read fraction 50 is outside 0..1 (write 0.9 for 90%)"}},
		{"twice", "schema: rdmasuite.io/thresholds/v1\nskus:" + full + full, []string{"defined twice"}},
		{"schema", "skus:" + full, []string{"skus.yaml:1: schema \"\": want \"rdmasuite.io/thresholds/v1\""}},
		{"not yaml", "schema: [", []string{"skus.yaml:"}},
		{"skus without schema", "skus: []\n", []string{"skus.yaml:1: schema \"\""}},
		{"a list", "- name: X\n", []string{"skus.yaml:"}},
	}
	for _, c := range cases {
		builtin, _ := Load("")
		before := builtin.Names()
		p := filepath.Join(t.TempDir(), "skus.yaml")
		if err := os.WriteFile(p, []byte(c.body), 0o644); err != nil {
			t.Fatal(err)
		}
		s, err := LoadWithOverlay("", p)
		if err == nil || s != nil {
			t.Errorf("%s: accepted (%v)", c.name, s)
			continue
		}
		for _, w := range append(c.want, p) {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error lacks %q:\n%v", c.name, w, err)
			}
		}
		if _, err := ParseOverlay(builtin, p, []byte(c.body)); err == nil {
			t.Errorf("%s: ParseOverlay accepted it", c.name)
		}
		h, _ := builtin.Lookup("H100/NDR-400")
		if !reflect.DeepEqual(builtin.Names(), before) || *h.LinkRateGbps.Value != 400 || h.FromOverlay() {
			t.Errorf("%s: the base changed", c.name)
		}
	}
	if _, err := LoadWithOverlay("", filepath.Join(t.TempDir(), "missing.yaml")); err == nil || !strings.Contains(err.Error(), "thresholds overlay:") ||
		!strings.Contains(err.Error(), "missing.yaml") {
		t.Errorf("missing overlay: %v", err)
	}
	// A bad base is reported as the base's error, before the overlay is read.
	if _, err := LoadWithOverlay(filepath.Join(t.TempDir(), "nobase.yaml"), overlayFile(t, full)); err == nil || !strings.Contains(err.Error(), "nobase.yaml") {
		t.Errorf("missing base: %v", err)
	}
	// A partial new SKU is just incomplete: no replacement hint.
	_, err := ParseOverlay(mustLoad(t), "o.yaml", []byte("schema: rdmasuite.io/thresholds/v1\nskus:"+strings.Replace(partial, "H100/NDR-400", "Z", 1)))
	if err == nil || strings.Contains(err.Error(), "replaces") || !strings.Contains(err.Error(), "o.yaml:3: sku \"Z\": linkRateGbps is missing") {
		t.Errorf("partial new SKU: %v", err)
	}
}

func TestNoOverlay(t *testing.T) {
	s, err := LoadWithOverlay("", "")
	if err != nil {
		t.Fatal(err)
	}
	if rep, add := s.OverlayChanges(); len(rep)+len(add) != 0 || s.File != "thresholds/skus.yaml (built in)" {
		t.Errorf("%s %v %v", s.File, rep, add)
	}
	k, _ := s.Lookup("A100/HDR-200")
	if k.FromOverlay() || k.File() != s.File {
		t.Errorf("%+v", k)
	}
}

func mustLoad(t *testing.T) *Set {
	t.Helper()
	s, err := Load("")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// An empty overlay (a thresholds ConfigMap shipped with comments only) or
// one with no SKUs changes nothing; a base file must still define some.
func TestEmptyOverlayChangesNothing(t *testing.T) {
	builtin := mustLoad(t)
	for _, body := range []string{"", "# nothing to change yet\n", "schema: rdmasuite.io/thresholds/v1\nskus: []\n", "schema: rdmasuite.io/thresholds/v1\n"} {
		p := filepath.Join(t.TempDir(), "skus.yaml")
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		s, err := LoadWithOverlay("", p)
		if err != nil {
			t.Errorf("%q: %v", body, err)
			continue
		}
		if !reflect.DeepEqual(s.Names(), builtin.Names()) {
			t.Errorf("%q: %v", body, s.Names())
		}
		if rep, add := s.OverlayChanges(); len(rep)+len(add) != 0 {
			t.Errorf("%q: changes %v %v", body, rep, add)
		}
		if _, err := Load(p); err == nil || !(strings.Contains(err.Error(), "empty thresholds file") || strings.Contains(err.Error(), "no skus defined")) {
			t.Errorf("%q as a thresholds file (not an overlay): %v", body, err)
		}
	}
}

// --thresholds FILE is laid over the built-ins: a file with one new SKU
// adds it and keeps the seven, so nobody copies the built-in set to add
// one; --thresholds-replace makes FILE the whole set, as before.
func TestLoadSuiteLaysTheFileOverTheBuiltIns(t *testing.T) {
	dir := t.TempDir()
	one := filepath.Join(dir, "one.yaml")
	if err := os.WriteFile(one, []byte(strings.Replace(good, "name: X", "name: L40S/NDR-400", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	builtIn, _ := Load("")
	set, err := LoadSuite(one, false, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(set.SKUs) != len(builtIn.SKUs)+1 {
		t.Fatalf("--thresholds one.yaml: %d SKUs (%v), want the %d built-ins and L40S", len(set.SKUs), set.Names(), len(builtIn.SKUs))
	}
	if _, err := set.Lookup("H100/NDR-400"); err != nil {
		t.Fatal("a built-in SKU went missing:", err)
	}
	if replaced, added := set.OverlayChanges(); len(replaced) != 0 || strings.Join(added, ",") != "L40S/NDR-400" {
		t.Fatalf("changes: replaced %v added %v", replaced, added)
	}
	only, err := LoadSuite(one, true, "")
	if err != nil || len(only.SKUs) != 1 {
		t.Fatalf("--thresholds-replace: %v %v", only, err)
	}
	// The ConfigMap overlay still goes on top of both.
	top := filepath.Join(dir, "top.yaml")
	if err := os.WriteFile(top, []byte(strings.Replace(good, "name: X", "name: Z", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	both, err := LoadSuite(one, false, top)
	if err != nil || len(both.SKUs) != len(builtIn.SKUs)+2 {
		t.Fatalf("file + overlay: %v %v", both, err)
	}
	if _, err := LoadSuite(filepath.Join(dir, "missing.yaml"), false, ""); err == nil || !strings.Contains(err.Error(), "missing.yaml") {
		t.Fatalf("missing file: %v", err)
	}
}

// An overlay SKU that leaves out optional bounds the SKU it replaces had
// (here the built-in H100's latency ceilings) loads, but the missing
// ceiling's error says the overlay dropped it and how to keep it; a
// bound the replaced SKU never had keeps the plain message.
func TestOverlayDroppingOptionalBoundsSaysSo(t *testing.T) {
	p := overlayFile(t, skuYAML("H100/NDR-400", "NVIDIA-H100-80GB-HBM3", 400, 380))
	s, err := LoadWithOverlay("", p)
	if err != nil {
		t.Fatal(err)
	}
	k, _ := s.Lookup("H100/NDR-400")
	if d := k.Dropped(); strings.Join(d, ",") != "writeLatencyUs,readLatencyUs,sendLatencyUs" {
		t.Fatalf("dropped %v", d)
	}
	if _, err := k.LatencyCeiling("send"); err == nil || !strings.Contains(err.Error(), "the overlay "+p+" replaced the SKU whole") {
		t.Errorf("send ceiling: %v", err)
	}
	if _, err := k.MsgRateFloor("write"); err == nil || strings.Contains(err.Error(), "replaced the SKU whole") || !strings.Contains(err.Error(), "no public per-process") {
		t.Errorf("msgrate floor (never in the built-in): %v", err)
	}
	builtin, _ := Load("")
	if b, _ := builtin.Lookup("H100/NDR-400"); len(b.Dropped()) != 0 {
		t.Errorf("a built-in SKU drops nothing: %v", b.Dropped())
	}
}
