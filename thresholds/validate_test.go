package thresholds

import (
	"strings"
	"testing"
)

// Floors and values that would let any measurement pass (zero, NaN), or none
// (Inf, a floor above the link), are rejected with the line and the fix.
func TestRejectsFloorsThatCannotJudge(t *testing.T) {
	cases := []parseCase{
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
	expectParseErrors(t, cases)
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

// What a thresholds file cannot mean is refused, naming the
// line and the fix. Each of these parsed clean before: an unknown key
// under match:, a second YAML document, a pattern GPU feature discovery
// can never write (a space: its labels are label values, spaces as "-"),
// a fractional count.
func TestRejectsWhatCannotBeMeant(t *testing.T) {
	cases := []parseCase{
		{"unknown key under match", `match: {gpuProduct: ["X-*"]}`, `match: {gpuProduct: ["X-*"], gpuProdct: ["Y-*"]}`,
			`t.yaml:4: unknown field "gpuProdct" (allowed: gpuProduct)`},
		{"a second document", "minMemlockBytes: {value: 1048576, source: s}\n", "minMemlockBytes: {value: 1048576, source: s}\n---\nschema: rdmasuite.io/thresholds/v1\nskus: []\n",
			`t.yaml:13: a second YAML document`},
		{"a space in a pattern", `["X-*"]`, `["NVIDIA A100*"]`, `t.yaml:3: sku "X": pattern "NVIDIA A100*" has ' ', which nvidia.com/gpu.product never holds`},
		{"a character labels cannot hold", `["X-*"]`, `["X/A100-*"]`, `pattern "X/A100-*" has '/'`},
		{"fractional ports", "portsPerNode: {value: 8,", "portsPerNode: {value: 2.5,", `t.yaml:6: sku "X": portsPerNode = 2.5 is not a whole number: it counts ports`},
		{"fractional bytes", "minMemlockBytes: {value: 1048576,", "minMemlockBytes: {value: 1048576.5,", `sku "X": minMemlockBytes = 1.0485765e+06 is not a whole number: it counts bytes`},
	}
	expectParseErrors(t, cases)
	// What GPU feature discovery does write stays valid: classes, ?, the
	// label value alphabet.
	for _, p := range []string{`["NVIDIA-A100-SXM4-80GB"]`, `["NVIDIA-H100-80GB-HBM3-MIG-1g.10gb"]`, `["Tesla-V100-SXM2-[13]?GB"]`, `["NVIDIA_GH200*"]`} {
		if _, err := Parse("t.yaml", []byte(strings.Replace(good, `["X-*"]`, p, 1))); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
}

// An overlay (or a file laid over the built-ins) whose SKU matches every
// product a built-in SKU matches takes that SKU over silently before: an
// "NVIDIA-*" overlay gave H100 nodes its floor. It is allowed (an overlay
// exists to take over) but named: which built-ins, by which patterns.
func TestOverlayTakeOverIsNamed(t *testing.T) {
	base, err := Parse("base.yaml", []byte(good+strings.NewReplacer("name: X", "name: Y", `["X-*"]`, `["Y-SXM-*", "Y-PCIe"]`).Replace(strings.SplitN(good, "skus:\n", 2)[1])))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		patterns string
		want     []string
	}{
		{`["*"]`, []string{`W ("*") takes over X (all of "X-*")`, `W ("*") takes over Y (all of "Y-SXM-*", "Y-PCIe")`}},
		{`["Y-*"]`, []string{`W ("Y-*") takes over Y (all of "Y-SXM-*", "Y-PCIe")`}},
		{`["Y-SXM-80GB"]`, []string{`W ("Y-SXM-80GB") takes over Y (part of "Y-SXM-*")`}},
		{`["Y-P*"]`, []string{`W ("Y-P*") takes over Y (part of "Y-PCIe")`}},
		{`["Z-*"]`, nil},
	} {
		o := strings.NewReplacer("name: X", "name: W", `["X-*"]`, c.patterns).Replace(good)
		set, err := ParseOverlay(base, "o.yaml", []byte(o))
		if err != nil {
			t.Fatal(err)
		}
		got := set.TakeOvers()
		if strings.Join(got, "|") != strings.Join(c.want, "|") {
			t.Errorf("%s: take-overs\n got %q\nwant %q", c.patterns, got, c.want)
		}
	}
}

// parseCase edits the good file (from → to) and names the error Parse
// must give.
type parseCase struct{ name, from, to, want string }

func expectParseErrors(t *testing.T, cases []parseCase) {
	t.Helper()
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

// Port-counter allowances: a misspelt counter, a missing
// source or an empty map is refused with the line; a good one is returned
// with its source, and a SKU without one leaves the table's defaults.
func TestPortCounterAllowances(t *testing.T) {
	const at = "    minMemlockBytes: {value: 1048576, source: s}\n"
	expectParseErrors(t, []parseCase{
		{"unknown counter", at, at + "    portCounters: {allow: {duplicate_requests: 5}, source: s}\n", `t.yaml:13: sku "X": portCounters.allow names "duplicate_requests", which is no counter`},
		{"no source", at, at + "    portCounters: {allow: {duplicate_request: 5}}\n", `t.yaml:13: sku "X": portCounters has no source`},
		{"empty", at, at + "    portCounters: {source: s}\n", `t.yaml:13: sku "X": portCounters has no allow: map`},
		{"unknown key", at, at + "    portCounters: {allows: {duplicate_request: 5}, source: s}\n", `unknown field "allows"`},
	})
	in := strings.Replace(good, at, at+"    portCounters: {allow: {hw_counters/duplicate_request: 5, np_cnp_sent: 100}, source: lab runs}\n", 1)
	set, err := Parse("t.yaml", []byte(in))
	if err != nil {
		t.Fatal(err)
	}
	sku, _ := set.Lookup("X")
	allow, src := sku.CounterAllowances()
	if allow["hw_counters/duplicate_request"] != 5 || allow["np_cnp_sent"] != 100 || src != "lab runs" {
		t.Errorf("allowances %v from %q", allow, src)
	}
	plain, _ := Parse("t.yaml", []byte(good))
	sku, _ = plain.Lookup("X")
	if allow, _ := sku.CounterAllowances(); allow != nil {
		t.Errorf("a SKU without portCounters has allowances %v", allow)
	}
}

// An empty gpuProduct pattern matches no node: refused with the fix. A
// match-everything pattern is right for a one-type fleet: accepted and
// named (MatchAll), never silently.
func TestMatchPatternsThatMatchNothingOrEverything(t *testing.T) {
	expectParseErrors(t, []parseCase{
		{"empty pattern", `["X-*"]`, `[""]`, `an empty gpuProduct pattern matches no GPU node`},
		{"blank pattern", `["X-*"]`, `["X-*", " "]`, `an empty gpuProduct pattern matches no GPU node`},
	})
	set, err := Parse("t.yaml", []byte(strings.Replace(good, `["X-*"]`, `["*"]`, 1)))
	if err != nil {
		t.Fatal(err)
	}
	if got := set.MatchAll(); len(got) != 1 || !strings.Contains(got[0], `sku X matches every GPU node (pattern "*")`) {
		t.Errorf("MatchAll: %q", got)
	}
	if set, _ := Parse("t.yaml", []byte(good)); len(set.MatchAll()) != 0 {
		t.Errorf("MatchAll of X-*: %q", set.MatchAll())
	}
}
