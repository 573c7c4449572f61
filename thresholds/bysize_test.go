package thresholds

import (
	"reflect"
	"strings"
	"testing"
)

// Floors per message size are validated as strictly as the floor they
// belong to, each error naming the line and the fix.
func TestBySizeValidation(t *testing.T) {
	const w = "write: {fractionOfLink: 0.9, source: s}"
	by := func(s string) string { return "write: {fractionOfLink: 0.9, source: s, bySize: {" + s + "}}" }
	expectParseErrors(t, []parseCase{
		{"bad size name", w, by(`"64KB": {fractionOfLink: 0.8, source: s}`), `t.yaml:7: sku "X": write.bySize["64KB"]: "64KB" is not a message size: write it as 64KiB, 1MiB or in bytes (65536)`},
		{"size with a space", w, by(`"64 KiB": {fractionOfLink: 0.8, source: s}`), `"64 KiB" is not a message size`},
		{"zero size", w, by(`"0": {fractionOfLink: 0.8, source: s}`), `"0" is not a message size`},
		{"fraction above 1", w, by(`"64KiB": {fractionOfLink: 1.2, source: s}`), `sku "X": write.bySize["64KiB"] fraction 1.2 is outside 0..1`},
		{"zero fraction", w, by(`"64KiB": {fractionOfLink: 0, source: s}`), `write.bySize["64KiB"] floor 0 passes any measurement`},
		{"no source", w, by(`"64KiB": {fractionOfLink: 0.8}`), `sku "X": write.bySize["64KiB"] has no source`},
		{"unknown key", w, by(`"64KiB": {fractionOfLnk: 0.8, source: s}`), `unknown field "fractionOfLnk"`},
		{"unknown key beside bySize", w, "write: {fractionOfLink: 0.9, source: s, bySzie: {}}", `unknown field "bySzie" (allowed: bySize,`},
		{"two bounds", w, by(`"64KiB": {fractionOfLink: 0.8, gbps: 100, source: s}`), `write.bySize["64KiB"] needs exactly one of gbps, fractionOfLink, fractionOfAggregate (has 2)`},
		{"above link", w, by(`"1MiB": {gbps: 201, source: s}`), `write.bySize["1MiB"] floor 201 Gb/s is above linkRateGbps 200`},
		{"aggregate per size", w, by(`"1MiB": {fractionOfAggregate: 0.5, source: s}`), `write.bySize["1MiB"] is per port: use gbps or fractionOfLink`},
		{"same size twice", w, by(`"64KiB": {fractionOfLink: 0.8, source: s}, "65536": {fractionOfLink: 0.8, source: s}`), `write.bySize gives 64KiB twice ("64KiB" and "65536")`},
		{"nested", w, by(`"64KiB": {fractionOfLink: 0.8, source: s, bySize: {"1MiB": {gbps: 1, source: s}}}`), `write.bySize["64KiB"] has a bySize of its own`},
		{"empty", w, "write: {fractionOfLink: 0.9, source: s, bySize: {}}", `sku "X": write.bySize is empty`},
		{"on nccl", "ncclAllReduceBusBw: {fractionOfAggregate: 0.8, source: s}", `ncclAllReduceBusBw: {fractionOfAggregate: 0.8, source: s, bySize: {"1MiB": {gbps: 1, source: s}}}`,
			`ncclAllReduceBusBw has bySize, but floors per message size are for the per-port bandwidth floors`},
	})
	in := strings.Replace(good, "write: {fractionOfLink: 0.9, source: s}", `write: {fractionOfLink: 0.9, source: s, bySize: {"64KiB": {fractionOfLink: 0.85, source: small}, "1048576": {gbps: 185, source: big}}}`, 1)
	s, err := Parse("t.yaml", []byte(in))
	if err != nil {
		t.Fatal(err)
	}
	k, _ := s.Lookup("X")
	if got := k.FloorSizes("write"); !reflect.DeepEqual(got, []int{64 << 10, 1 << 20}) {
		t.Errorf("FloorSizes = %v", got)
	}
	b, err := k.BandwidthFloorAt("write", 64<<10)
	if err != nil || b.Value != 170 || b.Source != "X: write floor at 64KiB: 0.85 × 200 Gb/s link — small" {
		t.Errorf("64 KiB: %+v %v", b, err)
	}
	if b, err := k.BandwidthFloorAt("write", 1<<20); err != nil || b.Value != 185 || b.Source != "X: write floor at 1MiB: big" {
		t.Errorf("1 MiB: %+v %v", b, err)
	}
	if _, err := k.BandwidthFloorAt("write", 4096); err == nil || !strings.Contains(err.Error(), "no floor of its own for 4KiB") {
		t.Errorf("4 KiB: %v", err)
	}
	if g, _ := k.BandwidthFloor("write"); g.Value != 180 || g.Source != "X: 0.9 × 200 Gb/s link — s" {
		t.Errorf("general floor changed: %+v", g)
	}
	if len(k.FloorSizes("read")) != 0 || len(k.CalibratedFloors()) != 0 {
		t.Errorf("read has no sizes, nothing is calibrated")
	}
}

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int{"64KiB": 65536, "1MiB": 1 << 20, "65536": 65536, "4096B": 4096, "2GiB": 2 << 30} {
		if got, err := ParseSize(in); err != nil || got != want {
			t.Errorf("%q: %d %v", in, got, err)
		}
	}
	for _, in := range []string{"", "64K", "64KB", "1M", "-1", "0x10", "1.5MiB", "KiB", " 64KiB", "064KiB"} {
		if _, err := ParseSize(in); err == nil {
			t.Errorf("%q accepted", in)
		}
	}
}

// Marshal writes SKUs that read back as the same SKUs: every built-in,
// laid over the built-ins as an overlay, replaces its namesake with an
// equal one (nothing dropped, nothing added).
func TestMarshalRoundTrip(t *testing.T) {
	base, err := Load("")
	if err != nil {
		t.Fatal(err)
	}
	out, err := Marshal("a header\nof two lines", base.SKUs)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), "value: 1048576\n") || !strings.Contains(string(out), "fractionOfLink: 0.95\n") {
		t.Errorf("numbers as a person writes them:\n%.2000s", out)
	}
	if !strings.HasPrefix(string(out), "# a header\n# of two lines\nschema: "+Schema) {
		t.Errorf("header:\n%.200s", out)
	}
	over, err := ParseOverlay(base, "o.yaml", out)
	if err != nil {
		t.Fatal(err)
	}
	for i, k := range base.SKUs {
		got, _ := over.Lookup(k.Name)
		if len(got.Dropped()) > 0 {
			t.Errorf("%s dropped %v", k.Name, got.Dropped())
		}
		a, b := strip(k), strip(*got)
		if !reflect.DeepEqual(a, b) {
			t.Errorf("%s (#%d) changed:\n%+v\n%+v", k.Name, i, a, b)
		}
	}
}

// strip is k without where it was read (lines, file): what it says.
func strip(k SKU) string {
	out, _ := Marshal("", []SKU{k})
	return string(out)
}
