package thresholds

import (
	"strings"
	"testing"
)

// Floors and values that would let any measurement pass (zero, NaN), or none
// (Inf, a floor above the link), are rejected with the line and the fix.
func TestRejectsFloorsThatCannotJudge(t *testing.T) {
	cases := []struct{ name, from, to, want string }{
		{"NaN value", "linkRateGbps: {value: 200", "linkRateGbps: {value: .nan", `t.yaml:5: sku "X": linkRateGbps = NaN is not a number`},
		{"Inf value", "maxNFSStallSec: {value: 60", "maxNFSStallSec: {value: .inf", `t.yaml:11: sku "X": maxNFSStallSec = +Inf is not a finite number`},
		{"NaN fraction", "write: {fractionOfLink: 0.9", "write: {fractionOfLink: .nan", `t.yaml:7: sku "X": write fraction NaN is not a number`},
		{"zero fraction", "write: {fractionOfLink: 0.9", "write: {fractionOfLink: 0", `t.yaml:7: sku "X": write floor 0 passes any measurement`},
		{"zero gbps", "read: {gbps: 150", "read: {gbps: 0", `t.yaml:8: sku "X": read floor 0 passes any measurement`},
		{"Inf gbps", "read: {gbps: 150", "read: {gbps: .inf", `t.yaml:8: sku "X": read gbps +Inf is not a finite number`},
		{"gbps above link", "read: {gbps: 150", "read: {gbps: 250", `t.yaml:8: sku "X": read floor 250 Gb/s is above linkRateGbps 200`},
		{"gbps above link gpudirect", "gpuDirectWrite: {fractionOfLink: 0.8", "gpuDirectWrite: {gbps: 201", `sku "X": gpuDirectWrite floor 201 Gb/s is above linkRateGbps 200`},
		{"zero aggregate", "fractionOfAggregate: 0.8", "fractionOfAggregate: 0", `sku "X": ncclAllReduceBusBw floor 0 passes any measurement`},
	}
	for _, c := range cases {
		in := strings.Replace(good, c.from, c.to, 1)
		if in == good {
			t.Fatalf("%s: %q not in the test file", c.name, c.from)
		}
		_, err := Parse("t.yaml", []byte(in))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want it to contain %q", c.name, err, c.want)
		}
	}
}

// A SKU whose every pattern an earlier SKU's pattern already matches can
// never be chosen for a node (ForNode takes the first match): an error, not
// a silent dead entry. Patterns that only overlap are fine.
func TestRejectsShadowedSKU(t *testing.T) {
	second := strings.NewReplacer(`name: X`, `name: Y`, `["X-*"]`, `%s`).Replace(strings.SplitN(good, "skus:\n", 2)[1])
	cases := []struct {
		first, later, want string
	}{
		{`["X-*"]`, `["X-PCIe-*"]`, `sku "Y": every match pattern is already matched by an earlier SKU (X's "X-*" matches "X-PCIe-*")`},
		{`["X-*"]`, `["X-*"]`, `sku "Y": every match pattern is already matched`},
		{`["X*"]`, `["X-NVL", "X-PCIe*"]`, `sku "Y": every match pattern is already matched`},
		{`["X-SXM*"]`, `["X-*"]`, ""},         // broader after narrower: both reachable
		{`["X-*"]`, `["X-PCIe*", "Z-*"]`, ""}, // Z-* is its own
		{`["X-?-*"]`, `["X-*"]`, ""},          // overlap only
		{`["X-[AB]*"]`, `["X-A*"]`, ""},       // not judged: classes are not prefixes
	}
	for _, c := range cases {
		in := strings.Replace(good, `["X-*"]`, c.first, 1) + strings.Replace(second, "%s", c.later, 1)
		_, err := Parse("t.yaml", []byte(in))
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s then %s: %v", c.first, c.later, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s then %s: err = %v, want %q", c.first, c.later, err, c.want)
		}
	}
}
