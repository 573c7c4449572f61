// Package thresholds loads per-SKU thresholds (skus.yaml, embedded; or a
// file given with --thresholds), optionally with an overlay file laid over
// them (--thresholds-overlay: its SKUs replace those of the same name whole,
// or are added), validates them strictly with file:line errors, matches
// nodes to SKUs, and judges measurements. Judging fails closed: a required
// measurement that is missing is a failure.
package thresholds

import (
	"bytes"
	"cmp"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"path"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/rdmasuite/rdmasuite/workloads/portcounters"
	"github.com/rdmasuite/rdmasuite/workloads/units"
	"gopkg.in/yaml.v3"
)

//go:embed skus.yaml
var embedded []byte

// Schema of the thresholds file.
const Schema = "rdmasuite.io/thresholds/v1"

// GPUProductLabel is what GPU feature discovery sets on GPU nodes.
const GPUProductLabel = "nvidia.com/gpu.product"

// Set is a loaded thresholds file, or a file with an overlay laid over it
// (then File names both).
type Set struct {
	File   string
	Schema string `yaml:"schema"`
	SKUs   []SKU  `yaml:"skus"`
	// What an overlay did (Overlay): the SKUs it replaced and added, and
	// every layer's take-overs of SKUs of other names (TakeOvers).
	replaced, added, takeOvers []string
}

// SKU is one node type's thresholds.
type SKU struct {
	Name               string `yaml:"name"`
	Match              Match  `yaml:"match"`
	LinkRateGbps       Value  `yaml:"linkRateGbps,omitempty"`
	PortsPerNode       Value  `yaml:"portsPerNode,omitempty"`
	Write              Floor  `yaml:"write,omitempty"`
	Read               Floor  `yaml:"read,omitempty"`
	GPUDirectWrite     Floor  `yaml:"gpuDirectWrite,omitempty"`
	NCCLAllReduceBusBw Floor  `yaml:"ncclAllReduceBusBw,omitempty"`
	MaxNFSStallSec     Value  `yaml:"maxNFSStallSec,omitempty"`
	MinMemlockBytes    Value  `yaml:"minMemlockBytes,omitempty"`
	// Latency ceilings in µs (optional: without one the latency checks
	// are not-run, naming the missing field).
	WriteLatencyUs Value `yaml:"writeLatencyUs,omitempty"`
	ReadLatencyUs  Value `yaml:"readLatencyUs,omitempty"`
	SendLatencyUs  Value `yaml:"sendLatencyUs,omitempty"`
	// Message-rate floor in Mpps (optional, as the latency ceilings):
	// small writes over several QPs, perftest's MsgRate of one process.
	WriteMsgRateMpps Value `yaml:"writeMsgRateMpps,omitempty"`
	// LatencyUnderLoadFactor bounds latency under load (optional, a site
	// setting: no public reference bounds it for a fabric): a rail pair's
	// typical and p99 latency while the same pair carries a write stream
	// may be at most this many times the same figures measured alone.
	LatencyUnderLoadFactor Value `yaml:"latencyUnderLoadFactor,omitempty"`
	// PortCounters bounds how far a port counter may rise during one
	// measurement on one side (optional: without it the counter table's
	// defaults apply, 0 for every error counter; workloads/portcounters).
	PortCounters CounterBounds `yaml:"portCounters,omitempty"`
	// Host pins what every node of the SKU must show on its host
	// (optional: without it nodes are only compared with each other).
	Host    HostExpect `yaml:"host,omitempty"`
	line    int
	file    string   // the file that defined it
	overlay bool     // it came from an overlay (Set.Overlay)
	dropped []string // optional bounds the SKU it replaced had and the overlay left out
}

// Match is how a node is matched to a SKU: its nvidia.com/gpu.product
// label against shell-style patterns.
type Match struct {
	GPUProduct []string `yaml:"gpuProduct"`
}

// UnmarshalYAML rejects unknown keys under match: (a misspelt key would
// otherwise leave the SKU matching nothing, or less than meant).
func (m *Match) UnmarshalYAML(n *yaml.Node) error {
	type plain Match
	var p plain
	if err := strictDecode(n, &p); err != nil {
		return err
	}
	*m = Match(p)
	return nil
}

// HostExpect is the host configuration a SKU's nodes must have, checked
// by the doctor on the node probe's facts. Every field is optional; a set
// field is a finding on every node that differs.
type HostExpect struct {
	// Firmware is the fw_ver every RDMA device must run ("28.41.1000").
	Firmware string `yaml:"firmware,omitempty"`
	// ActiveMTU is the least active MTU of every RoCE port (256 … 4096).
	ActiveMTU int `yaml:"activeMTU,omitempty"`
	// Lossless says the RoCE fabric runs PFC and ECN: every RoCE port must
	// have PFC on some priority and ECN (notification and reaction point)
	// on some priority, and a port whose state is not exposed is unknown.
	Lossless bool `yaml:"lossless,omitempty"`
	// PKey is a partition key every InfiniBand port must hold ("0x8001").
	PKey   string `yaml:"pkey,omitempty"`
	Source string `yaml:"source,omitempty"`
	line   int
}

// Set says whether anything is pinned.
func (h HostExpect) Set() bool {
	return h.Firmware != "" || h.ActiveMTU != 0 || h.Lossless || h.PKey != ""
}

// UnmarshalYAML rejects unknown keys under host:.
func (h *HostExpect) UnmarshalYAML(n *yaml.Node) error {
	type plain HostExpect
	var p plain
	if err := strictDecode(n, &p); err != nil {
		return err
	}
	*h = HostExpect(p)
	h.line = n.Line
	return nil
}

func checkHostExpect(add adder, sku string, h HostExpect, skuLine int) {
	line := h.line
	if line == 0 {
		line = skuLine
	}
	if !h.Set() {
		if h.line != 0 {
			add(line, "sku %q: host: is empty (set firmware, activeMTU, lossless or pkey, or remove it)", sku)
		}
		return
	}
	if strings.TrimSpace(h.Source) == "" {
		add(line, "sku %q: host: needs a source saying where the pinned values come from (the fleet's firmware manifest, the fabric design)", sku)
	}
	switch h.ActiveMTU {
	case 0, 256, 512, 1024, 2048, 4096:
	default:
		add(line, "sku %q: host.activeMTU %d: want an IB MTU (256, 512, 1024, 2048 or 4096)", sku, h.ActiveMTU)
	}
	if h.PKey != "" {
		if v, err := strconv.ParseUint(strings.TrimPrefix(strings.ToLower(h.PKey), "0x"), 16, 16); err != nil || v&0x7fff == 0 {
			add(line, "sku %q: host.pkey %q: want a partition key in hex, e.g. 0x8001 (0x0000 and 0x8000 are invalid)", sku, h.PKey)
		}
	}
	if h.Firmware != "" && strings.ContainsAny(h.Firmware, " \t") {
		add(line, "sku %q: host.firmware %q: want fw_ver as sysfs prints it, e.g. 28.41.1000", sku, h.Firmware)
	}
}

// Value is a number with its source.
type Value struct {
	Value  *float64 `yaml:"value,omitempty"`
	Source string   `yaml:"source,omitempty"`
	line   int
}

// Floor is a lower bound: absolute, or a fraction of the link rate (per
// port) or of the aggregate NIC bandwidth (NCCL). A per-port bandwidth
// floor (write, read, gpuDirectWrite) may give floors of its own for
// message sizes (BySize, keyed "64KiB", "1MiB" or bytes "65536"): a
// requested size with one is judged against it, the largest requested
// size without one against the floor itself, and the other sizes are
// recorded, not judged.
type Floor struct {
	Gbps               *float64         `yaml:"gbps,omitempty"`
	FractionOfLink     *float64         `yaml:"fractionOfLink,omitempty"`
	FractionOfAggregat *float64         `yaml:"fractionOfAggregate,omitempty"`
	Source             string           `yaml:"source,omitempty"`
	BySize             map[string]Floor `yaml:"bySize,omitempty"`
	line               int
}

// CounterBounds are a SKU's allowances for port counters: a key is a
// counter's name ("duplicate_request") or group/name
// ("hw_counters/duplicate_request"); naming a recorded counter (np_cnp_sent,
// port_xmit_wait) makes it judged. Source says where the numbers come from.
type CounterBounds struct {
	Allow  map[string]uint64 `yaml:"allow,omitempty"`
	Source string            `yaml:"source,omitempty"`
	line   int
}

// UnmarshalYAML: see Value.
func (b *CounterBounds) UnmarshalYAML(n *yaml.Node) error {
	type plain CounterBounds
	var p plain
	if err := strictDecode(n, &p); err != nil {
		return err
	}
	*b = CounterBounds(p)
	b.line = n.Line
	return nil
}

// CounterAllowances returns the SKU's port-counter allowances and their
// source; nil (the table's defaults) when the SKU sets none.
func (k *SKU) CounterAllowances() (portcounters.Allowances, string) {
	if k == nil || len(k.PortCounters.Allow) == 0 {
		return nil, ""
	}
	return portcounters.Allowances(maps.Clone(k.PortCounters.Allow)), k.PortCounters.Source
}

// checkCounterBounds refuses allowances for counters no device has (a
// misspelt name would leave the counter judged at its default).
func checkCounterBounds(add adder, sku string, b CounterBounds, skuLine int) {
	if b.line == 0 {
		return
	}
	if len(b.Allow) == 0 {
		add(b.line, "sku %q: portCounters has no allow: map: name the counters and how far each may rise per measurement, or remove portCounters", sku)
		return
	}
	if strings.TrimSpace(b.Source) == "" {
		add(b.line, "sku %q: portCounters has no source: name where the allowances come from", sku)
	}
	known := map[string]bool{}
	for _, e := range portcounters.Table() {
		known[e.Name], known[string(e.Group)+"/"+e.Name] = true, true
	}
	for _, name := range slices.Sorted(maps.Keys(b.Allow)) {
		if !known[name] {
			add(b.line, "sku %q: portCounters.allow names %q, which is no counter rdmasuite knows (workloads/portcounters/COUNTERS.md lists them)", sku, name)
		}
	}
}

// UnmarshalYAML keeps the line of each value for validation messages and
// rejects unknown keys.
func (v *Value) UnmarshalYAML(n *yaml.Node) error {
	type plain Value
	var p plain
	if err := strictDecode(n, &p); err != nil {
		return err
	}
	*v = Value(p)
	v.line = n.Line
	return nil
}

// UnmarshalYAML: see Value.
func (f *Floor) UnmarshalYAML(n *yaml.Node) error {
	type plain Floor
	var p plain
	if err := strictDecode(n, &p); err != nil {
		return err
	}
	*f = Floor(p)
	f.line = n.Line
	return nil
}

// UnmarshalYAML: see Value.
func (s *SKU) UnmarshalYAML(n *yaml.Node) error {
	type plain SKU
	var p plain
	if err := strictDecode(n, &p); err != nil {
		return err
	}
	*s = SKU(p)
	s.line = n.Line
	return nil
}

// strictDecode decodes a node rejecting unknown fields (node.Decode has no
// KnownFields switch, so re-encode and decode strictly).
func strictDecode(n *yaml.Node, out any) error {
	if allowed := yamlKeys(out); n.Kind == yaml.MappingNode && allowed != nil {
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			if !allowed[k.Value] {
				return fmt.Errorf("line %d: unknown field %q (allowed: %s)", k.Line, k.Value, sortedKeys(allowed))
			}
		}
	}
	return n.Decode(out)
}

// Load reads and validates a thresholds file; "" loads the embedded default.
func Load(file string) (*Set, error) {
	data, name := embedded, "thresholds/skus.yaml (built in)"
	if file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("thresholds: %w", err)
		}
		data, name = b, file
	}
	return Parse(name, data)
}

// Parse validates data; errors read "FILE:LINE: problem (fix)".
func Parse(name string, data []byte) (*Set, error) { return parse(name, data, nil) }

// parse is Parse; with base, data is an overlay of base and a SKU that
// replaces one of base's but lacks fields is told that replacement is whole.
func parse(name string, data []byte, base *Set) (*Set, error) {
	var root yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	err := dec.Decode(&root)
	empty := errors.Is(err, io.EOF) || (err == nil && len(root.Content) == 0)
	if empty && base != nil {
		// An overlay with nothing in it (comments at most) changes nothing:
		// a thresholds ConfigMap can ship empty.
		return &Set{File: name, Schema: Schema}, nil
	}
	if empty {
		return nil, fmt.Errorf("%s: empty thresholds file (want schema: %s and skus:)", name, Schema)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %s", name, strings.TrimPrefix(err.Error(), "yaml: "))
	}
	s := &Set{File: name}
	if err := strictDecode(root.Content[0], s); err != nil {
		return nil, fmt.Errorf("%s:%s", name, strings.TrimPrefix(strings.TrimPrefix(err.Error(), "yaml: "), "line "))
	}
	var errs []string
	add := func(line int, format string, a ...any) {
		errs = append(errs, fmt.Sprintf("%s:%d: %s", name, line, fmt.Sprintf(format, a...)))
	}
	// One document only: a second one (after ---) was read by nobody.
	var next yaml.Node
	if err := dec.Decode(&next); err == nil {
		add(next.Line, "a second YAML document: a thresholds file is one document (schema, skus); put every SKU in the first one's skus list, or lay a second file over it with --thresholds-overlay")
	} else if !errors.Is(err, io.EOF) {
		add(root.Line, "after the first YAML document: %s", strings.TrimPrefix(err.Error(), "yaml: "))
	}
	if s.Schema != Schema {
		add(1, "schema %q: want %q", s.Schema, Schema)
	}
	if len(s.SKUs) == 0 && base == nil {
		add(1, "no skus defined")
	}
	seen := map[string]int{}
	for i := range s.SKUs {
		s.SKUs[i].file = name
	}
	for i, k := range s.SKUs {
		if k.Name == "" {
			add(k.line, "sku without a name")
		}
		if prev, dup := seen[k.Name]; dup {
			add(k.line, "sku %q defined twice (first at line %d)", k.Name, prev)
		}
		seen[k.Name] = k.line
		if len(k.Match.GPUProduct) == 0 {
			add(k.line, "sku %q: match.gpuProduct is empty: nodes can never match it (force it with --sku, or add patterns)", k.Name)
		}
		for _, p := range k.Match.GPUProduct {
			if strings.TrimSpace(p) == "" {
				add(k.line, "sku %q: an empty gpuProduct pattern matches no GPU node (GPU feature discovery always writes a product name): "+
					"remove it or write the product, e.g. \"NVIDIA-H100-80GB-HBM3\" or \"NVIDIA-H100-*\"", k.Name)
				continue
			}
			if _, err := path.Match(p, ""); err != nil {
				add(k.line, "sku %q: bad pattern %q: %v", k.Name, p, err)
			} else if c, ok := outsideLabelValue(p); ok {
				add(k.line, "sku %q: pattern %q has %q, which nvidia.com/gpu.product never holds: GPU feature discovery writes the NVML name as a label value "+
					"(letters, digits, '-', '_', '.'; spaces become \"-\", e.g. \"NVIDIA-A100-SXM4-80GB\"), so no node can match it: write %q", k.Name, p, c, labelValueOf(p))
			}
		}
		checkValue(add, k.Name, "linkRateGbps", k.LinkRateGbps, k.line, 0.001, 10000)
		checkValue(add, k.Name, "portsPerNode", k.PortsPerNode, k.line, 1, 64)
		checkWhole(add, k.Name, "portsPerNode", "ports", k.PortsPerNode)
		if k.MaxNFSStallSec.line != 0 { // a SKU may leave it out (skippable)
			checkValue(add, k.Name, "maxNFSStallSec", k.MaxNFSStallSec, k.line, 1, 3600)
		}
		checkValue(add, k.Name, "minMemlockBytes", k.MinMemlockBytes, k.line, 4096, 1<<50)
		checkWhole(add, k.Name, "minMemlockBytes", "bytes", k.MinMemlockBytes)
		for _, opt := range k.optionalBounds() {
			if opt.v.line != 0 { // optional, checked when given
				checkValue(add, k.Name, opt.field, opt.v, k.line, opt.lo, opt.hi)
			}
		}
		checkCounterBounds(add, k.Name, k.PortCounters, k.line)
		checkHostExpect(add, k.Name, k.Host, k.line)
		link := k.LinkRateGbps.Value
		if link != nil && notFinite(*link) != "" {
			link = nil
		}
		checkFloor(add, k.Name, "write", k.Write, k.line, false, link)
		checkFloor(add, k.Name, "read", k.Read, k.line, false, link)
		if k.GPUDirectWrite.line != 0 {
			checkFloor(add, k.Name, "gpuDirectWrite", k.GPUDirectWrite, k.line, false, link)
		}
		if k.NCCLAllReduceBusBw.line != 0 {
			checkFloor(add, k.Name, "ncclAllReduceBusBw", k.NCCLAllReduceBusBw, k.line, true, nil)
		}
		if by, p, q, ok := shadowedBy(s.SKUs, k); ok {
			add(k.line, "sku %q: every match pattern is already matched by an earlier SKU (%s's %q matches %q): nodes take the first SKU that matches, "+
				"so none can get this one; move it above %s or narrow %s's patterns", k.Name, by, q, p, by, by)
		}
		if base != nil {
			if b, err := base.Lookup(k.Name); err == nil {
				if k.incomplete() {
					add(k.line, "sku %q replaces the SKU of that name in %s whole (an overlay is not merged field by field): "+
						"give every field, copying the ones you keep from there (rdmasuite thresholds list shows them)", k.Name, base.File)
				} else {
					// Optional bounds the overlay left out are not an error
					// (their checks become not-run), but every place that
					// reports them says the overlay dropped them.
					s.SKUs[i].dropped = k.droppedOptional(b)
				}
			}
		}
	}
	if len(errs) > 0 {
		return nil, errors.New(strings.Join(errs, "\n"))
	}
	return s, nil
}

// outsideLabelValue returns the first character of pattern p, outside
// its wildcards and bracket classes, that a Kubernetes label value cannot
// hold ([A-Za-z0-9._-]): such a pattern matches no node's label.
func outsideLabelValue(p string) (rune, bool) {
	inClass := false
	for i, c := range p {
		switch {
		case inClass:
			inClass = c != ']'
		case c == '[':
			inClass = true
		case c == '*' || c == '?':
		case c == '\\' && i+1 < len(p):
			// An escaped character is itself a literal: judged next.
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-', c == '_', c == '.':
		default:
			return c, true
		}
	}
	return 0, false
}

// labelValueOf is p as GPU feature discovery would write it: spaces as "-".
func labelValueOf(p string) string { return strings.ReplaceAll(p, " ", "-") }

// checkWhole refuses a fraction where the field counts things.
func checkWhole(add adder, sku, field, counts string, v Value) {
	if v.Value == nil || notFinite(*v.Value) != "" || *v.Value == math.Trunc(*v.Value) {
		return
	}
	add(v.line, "sku %q: %s = %g is not a whole number: it counts %s", sku, field, *v.Value, counts)
}

// shadowedBy reports whether every gpuProduct pattern of k is covered by a
// pattern of a SKU listed before it in skus: then ForNode, which takes the
// first match, can never pick k. It names the earlier SKU and one pattern
// pair. Covered is judged only where that is certain: the same pattern, or
// an earlier pattern LITERAL* whose literal is a prefix of the fixed front
// of k's pattern (every string k's pattern matches starts with that front).
func shadowedBy(skus []SKU, k SKU) (by, pattern, earlier string, ok bool) {
	if len(k.Match.GPUProduct) == 0 {
		return "", "", "", false
	}
	for _, p := range k.Match.GPUProduct {
		found := false
		for _, e := range skus {
			if e.line == k.line && e.Name == k.Name {
				break
			}
			for _, q := range e.Match.GPUProduct {
				if covers(q, p) {
					by, pattern, earlier, found = e.Name, p, q, true
					break
				}
			}
			if found {
				break
			}
		}
		if !found {
			return "", "", "", false
		}
	}
	return by, pattern, earlier, true
}

// covers says every string that pattern p matches, q matches too (see
// shadowedBy for the cases it can be sure of).
func covers(q, p string) bool {
	if q == p {
		return true
	}
	lit, ok := strings.CutSuffix(q, "*")
	if !ok || strings.ContainsAny(lit, `*?[\`) {
		return false
	}
	front := p
	if i := strings.IndexAny(p, `*?[\`); i >= 0 {
		front = p[:i]
	}
	return strings.HasPrefix(front, lit)
}

// optionalBound is one of a SKU's optional thresholds (its checks are
// not-run without it): its key, its value, the range a given value must
// lie in, the bound's direction, how thresholds list shows it, and why a
// SKU may lack it (the not-run reason's fix).
type optionalBound struct {
	field  string
	v      Value
	lo, hi float64
	op     string // ">=" floor, "<=" ceiling
	show   string // a format for its value, e.g. "write latency ≤ %g µs"
	why    string
}

// Why a latency ceiling may be missing: the built-in hardware SKUs have
// all three.
const latencyWhy = "add one to the thresholds (rdmasuite thresholds list shows the built-ins) to judge "

// optionalBounds lists k's optional thresholds, in the file's order: the
// one list that validation, overlay comparison, the accessors (Optional)
// and thresholds list read.
func (k *SKU) optionalBounds() []optionalBound {
	return []optionalBound{
		{"writeLatencyUs", k.WriteLatencyUs, 0.01, 1e6, "<=", "write latency ≤ %g µs", latencyWhy + "write latency"},
		{"readLatencyUs", k.ReadLatencyUs, 0.01, 1e6, "<=", "read latency ≤ %g µs", latencyWhy + "read latency"},
		{"sendLatencyUs", k.SendLatencyUs, 0.01, 1e6, "<=", "send latency ≤ %g µs", latencyWhy + "send latency"},
		// From an emulated (Soft-RoCE) node's thousands of messages per second to
		// well past any adapter's headline rate.
		{"writeMsgRateMpps", k.WriteMsgRateMpps, 1e-6, 1e4, ">=", "write msgrate ≥ %g Mpps",
			"no public per-process message-rate reference exists for it (vendor figures are whole-adapter, many cores); " +
				"set one from a known-good run of the same command in a thresholds overlay to judge write message rate"},
		// At least 1 (a load cannot make latency better); far above any
		// emulated node's contention.
		{"latencyUnderLoadFactor", k.LatencyUnderLoadFactor, 1, 1e6, "<=", "latency under load ≤ %g × alone",
			"it is a site setting, not a hardware figure: how much a congested fabric may slow a flow depends on its congestion " +
				"control (ECN/DCQCN, PFC, adaptive routing) and buffers, and no public reference bounds it; set it from your fabric's " +
				"target or a known-good run in a thresholds overlay to judge latency under load"},
	}
}

// Keys are every key a SKU of the thresholds file may have (SKU's yaml
// tags), in the file's order.
func Keys() []string {
	var keys []string
	t := reflect.TypeFor[SKU]()
	for i := range t.NumField() {
		if tag, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ","); tag != "" && tag != "-" {
			keys = append(keys, tag)
		}
	}
	return keys
}

// OptionalKeys are the thresholds file's optional SKU keys, in the file's
// order: a check judged against one is not-run on a SKU without it.
func OptionalKeys() []string {
	var keys []string
	for _, o := range (&SKU{}).optionalBounds() {
		keys = append(keys, o.field)
	}
	return keys
}

// Optional is the SKU's optional bound key (one of OptionalKeys); an error
// names a missing one and how to set it.
func (k *SKU) Optional(key string) (Bound, error) {
	for _, o := range k.optionalBounds() {
		if o.field != key {
			continue
		}
		if o.v.Value == nil {
			return Bound{}, k.missingOptional(o.field, o.why)
		}
		return Bound{Op: o.op, Value: *o.v.Value, Source: k.label() + ": " + o.v.Source}, nil
	}
	return Bound{}, fmt.Errorf("no optional threshold %q (have %s)", key, strings.Join(OptionalKeys(), ", "))
}

// OptionalSummary shows the optional bounds the SKU has, as thresholds
// list prints them ("" when none).
func (k *SKU) OptionalSummary() string {
	var parts []string
	for _, o := range k.optionalBounds() {
		if o.v.Value != nil {
			parts = append(parts, fmt.Sprintf(o.show, *o.v.Value))
		}
	}
	return strings.Join(parts, "  ")
}

// droppedOptional names the optional thresholds base has and k lacks.
func (k *SKU) droppedOptional(base *SKU) []string {
	var lost []string
	want := base.optionalBounds()
	for i, have := range k.optionalBounds() {
		if want[i].v.Value != nil && have.v.Value == nil {
			lost = append(lost, have.field)
		}
	}
	wantFloors := base.skippableFloors()
	for i, have := range k.skippableFloors() {
		if wantFloors[i].given && !have.given {
			lost = append(lost, have.field)
		}
	}
	return lost
}

// Dropped names the optional bounds (writeLatencyUs, …) that the SKU this
// overlay SKU replaced had and the overlay left out.
func (k *SKU) Dropped() []string { return k.dropped }

// missingOptional is the error for an optional bound k lacks: when an
// overlay dropped it, it says so and how to keep it.
func (k *SKU) missingOptional(field, why string) error {
	if slices.Contains(k.dropped, field) {
		return notSetError{fmt.Sprintf("sku %s has no %s: the overlay %s replaced the SKU whole and left out the %s the one it replaced had; "+
			"copy it into the overlay (rdmasuite thresholds list, without the overlay, shows the built-ins)", k.Name, field, k.file, field)}
	}
	return notSetError{fmt.Sprintf("sku %s has no %s: %s", k.Name, field, why)}
}

// skippableFloor is a floor a SKU may leave out when its site does not
// judge what it bounds: GPUDirect, NCCL, or NFS over RDMA under a driver
// restart. Its checks are then not-run naming the key; given, it is
// validated as strictly as any.
type skippableFloor struct {
	field string
	given bool
	why   string
}

func (k *SKU) skippableFloors() []skippableFloor {
	return []skippableFloor{
		{"gpuDirectWrite", k.GPUDirectWrite.line != 0, "give it (e.g. fractionOfLink: 0.9) to judge GPUDirect RDMA bandwidth"},
		{"ncclAllReduceBusBw", k.NCCLAllReduceBusBw.line != 0, "give it (e.g. fractionOfAggregate: 0.85) to judge NCCL all_reduce bus bandwidth"},
		{"maxNFSStallSec", k.MaxNFSStallSec.line != 0, "give it (e.g. value: 60) to judge the NFS I/O stall of a MOFED driver restart"},
	}
}

// SkippableKeys are the floors a SKU may leave out (skippableFloor).
func SkippableKeys() []string {
	var keys []string
	for _, f := range (&SKU{}).skippableFloors() {
		keys = append(keys, f.field)
	}
	return keys
}

// Given says whether the SKU has key, an optional bound (OptionalKeys) or
// a skippable floor (SkippableKeys): nil when it does, else an error
// (errors.Is ErrNotSet) naming the key and how to set it.
func (k *SKU) Given(key string) error {
	for _, f := range k.skippableFloors() {
		if f.field == key {
			if f.given {
				return nil
			}
			return k.missingOptional(f.field, f.why)
		}
	}
	_, err := k.Optional(key)
	return err
}

// ErrNotSet is what a SKU without an optional key or a skippable floor
// answers (errors.Is): the checks that need it are not-run, not errors.
var ErrNotSet = errors.New("threshold not set")

// notSetError is a missing key's message, which is ErrNotSet.
type notSetError struct{ msg string }

func (e notSetError) Error() string        { return e.msg }
func (e notSetError) Is(target error) bool { return target == ErrNotSet }

// incomplete says a threshold every SKU must give is missing.
func (k *SKU) incomplete() bool {
	for _, line := range []int{k.LinkRateGbps.line, k.PortsPerNode.line, k.MinMemlockBytes.line,
		k.Write.line, k.Read.line} {
		if line == 0 {
			return true
		}
	}
	return false
}

// LoadWithOverlay loads the thresholds file (Load: "" is the built-in one)
// and, when overlay is not "", lays that file over it (Set.Overlay). The
// overlay is a thresholds file of its own (schema, skus), validated as
// strictly as any, its errors naming it: a bad overlay is an error, never
// silently dropped, and the result is all of it or nothing. An overlay
// that is empty (or comments only), or has schema and no skus, changes
// nothing.
func LoadWithOverlay(file, overlay string) (*Set, error) {
	base, err := Load(file)
	if err != nil || overlay == "" {
		return base, err
	}
	return layFile(base, overlay)
}

// layFile reads the thresholds file at path and lays it over base
// (ParseOverlay).
func layFile(base *Set, path string) (*Set, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("thresholds overlay: %w", err)
	}
	return ParseOverlay(base, path, data)
}

// LoadSuite is the thresholds a suite run uses: the built-ins with file
// laid over them (--thresholds: adding a SKU needs only that SKU), or
// file alone when replace (--thresholds-replace); then overlay on top
// (--thresholds-overlay, e.g. a mounted ConfigMap). OverlayChanges tells
// what the last layer replaced and added.
func LoadSuite(file string, replace bool, overlay string) (*Set, error) {
	if file == "" && replace {
		return nil, errors.New("--thresholds-replace needs --thresholds FILE: the file that replaces the built-in thresholds")
	}
	base, layers := "", []string{file, overlay}
	if replace {
		base, layers = file, layers[1:]
	}
	set, err := Load(base)
	for _, l := range layers {
		if err != nil || l == "" {
			continue
		}
		set, err = layFile(set, l)
	}
	if err != nil {
		return nil, err
	}
	return set, nil
}

// ParseOverlay validates data (named name) as an overlay of base and lays
// it over base. base is never changed.
func ParseOverlay(base *Set, name string, data []byte) (*Set, error) {
	o, err := parse(name, data, base)
	if err != nil {
		return nil, err
	}
	return base.Overlay(o), nil
}

// Overlay returns s with o laid over it, whole SKU by whole SKU: a SKU of
// o replaces the SKU of s with the same name entirely (match patterns and
// every threshold; nothing is merged field by field), and a SKU of o that
// s lacks is added. Node matching (ForNode) tries o's SKUs first, in o's
// order, then s's remaining ones, so a more specific pattern in the overlay
// wins over a broader built-in one. Neither s nor o is changed.
func (s *Set) Overlay(o *Set) *Set {
	out := &Set{File: s.File + " + " + o.File + " (overlay)", Schema: s.Schema, takeOvers: append([]string(nil), s.takeOvers...)}
	over := map[string]bool{}
	for _, k := range o.SKUs {
		over[k.Name] = true
	}
	for _, k := range o.SKUs {
		for _, b := range s.SKUs {
			if !over[b.Name] {
				if t := takeOver(k, b); t != "" {
					out.takeOvers = append(out.takeOvers, t)
				}
			}
		}
	}
	for _, k := range o.SKUs {
		k.overlay = true
		out.SKUs = append(out.SKUs, k)
		over[k.Name] = true
		if _, err := s.Lookup(k.Name); err == nil {
			out.replaced = append(out.replaced, k.Name)
		} else {
			out.added = append(out.added, k.Name)
		}
	}
	for _, k := range s.SKUs {
		if !over[k.Name] {
			out.SKUs = append(out.SKUs, k)
		}
	}
	return out
}

// TakeOvers names, for every layer laid over another, each SKU of the
// layer that is matched before a SKU of another name below it and
// matches all or part of what that SKU matches: an overlay's "*" takes
// over every built-in SKU. Allowed (an overlay exists to take over), but
// never silent.
func (s *Set) TakeOvers() []string { return append([]string(nil), s.takeOvers...) }

// MatchAll names the SKUs with a pattern that matches every GPU node
// ("*"): right for a fleet of one node type, a mistake anywhere else
// (its floors would judge every node, whatever its GPU and NIC), so
// thresholds check says so.
func (s *Set) MatchAll() []string {
	var out []string
	for _, k := range s.SKUs {
		for _, p := range k.Match.GPUProduct {
			if strings.Trim(p, "*") == "" {
				out = append(out, fmt.Sprintf("sku %s matches every GPU node (pattern %q): its floors judge every node whatever its GPU and NIC, "+
					"and the SKUs after it are never matched; right for a fleet of one node type only", k.Name, p))
				break
			}
		}
	}
	return out
}

// takeOver says what of b's products k, matched first, takes: all of them
// when k's patterns cover every one of b's, part when they cover some of
// b's patterns or lie inside one; "" when neither is certain (covers).
func takeOver(k, b SKU) string {
	all := true
	for _, p := range b.Match.GPUProduct {
		if !slices.ContainsFunc(k.Match.GPUProduct, func(q string) bool { return covers(q, p) }) {
			all = false
			break
		}
	}
	if all && len(b.Match.GPUProduct) > 0 {
		return fmt.Sprintf("%s (%s) takes over %s (all of %s)", k.Name, quoted(k.Match.GPUProduct), b.Name, quoted(b.Match.GPUProduct))
	}
	// Part: b's patterns that one of k's covers, or that cover one of k's.
	var part []string
	for _, q := range b.Match.GPUProduct {
		if slices.ContainsFunc(k.Match.GPUProduct, func(p string) bool { return covers(p, q) || covers(q, p) }) {
			part = append(part, q)
		}
	}
	if len(part) > 0 {
		return fmt.Sprintf("%s (%s) takes over %s (part of %s)", k.Name, quoted(k.Match.GPUProduct), b.Name, quoted(part))
	}
	return ""
}

func quoted(ps []string) string {
	q := make([]string, len(ps))
	for i, p := range ps {
		q[i] = strconv.Quote(p)
	}
	return strings.Join(q, ", ")
}

// OverlayChanges names the SKUs an overlay replaced and added (both empty
// for a set without one).
func (s *Set) OverlayChanges() (replaced, added []string) {
	return append([]string(nil), s.replaced...), append([]string(nil), s.added...)
}

// File is the thresholds file that defined k (the overlay's for a SKU an
// overlay replaced or added).
func (k *SKU) File() string { return k.file }

// FromOverlay says k came from an overlay.
func (k *SKU) FromOverlay() bool { return k.overlay }

// label names k in a bound's source: its name, and the overlay file when
// an overlay defined it, so a report tells which file a number came from.
func (k *SKU) label() string {
	if k.overlay {
		return k.Name + " (overlay " + k.file + ")"
	}
	return k.Name
}

type adder func(line int, format string, a ...any)

func checkValue(add adder, sku, field string, v Value, skuLine int, lo, hi float64) {
	line := v.line
	if line == 0 {
		add(skuLine, "sku %q: %s is missing (every threshold needs a value and a source)", sku, field)
		return
	}
	if v.Value == nil {
		add(line, "sku %q: %s has no value", sku, field)
	} else if why := notFinite(*v.Value); why != "" {
		add(line, "sku %q: %s = %g %s", sku, field, *v.Value, why)
	} else if *v.Value < lo || *v.Value > hi {
		add(line, "sku %q: %s = %g is out of range [%g, %g]", sku, field, *v.Value, lo, hi)
	}
	if strings.TrimSpace(v.Source) == "" {
		add(line, "sku %q: %s has no source: name where the number comes from", sku, field)
	}
}

// notFinite says why x is not a usable threshold ("" when it is): YAML's
// .nan and .inf parse as floats, and every comparison with NaN is false,
// so a NaN floor would pass anything.
func notFinite(x float64) string {
	switch {
	case math.IsNaN(x):
		return "is not a number"
	case math.IsInf(x, 0):
		return "is not a finite number"
	}
	return ""
}

// checkFloor validates one floor; link is the SKU's link rate (nil when
// missing or unusable), which an absolute per-port floor may not exceed.
func checkFloor(add adder, sku, field string, f Floor, skuLine int, aggregate bool, link *float64) {
	line := f.line
	if line == 0 {
		add(skuLine, "sku %q: %s is missing", sku, field)
		return
	}
	set := 0
	for _, p := range []*float64{f.Gbps, f.FractionOfLink, f.FractionOfAggregat} {
		if p != nil {
			set++
		}
	}
	if set != 1 {
		add(line, "sku %q: %s needs exactly one of gbps, fractionOfLink, fractionOfAggregate (has %d)", sku, field, set)
	}
	for _, fr := range []*float64{f.FractionOfLink, f.FractionOfAggregat} {
		switch {
		case fr == nil:
		case notFinite(*fr) != "":
			add(line, "sku %q: %s fraction %g %s", sku, field, *fr, notFinite(*fr))
		case *fr == 0:
			add(line, "sku %q: %s floor 0 passes any measurement, a broken link included: give the fraction of the link it must reach (0.9 for 90%%)", sku, field)
		case *fr < 0 || *fr > 1:
			add(line, "sku %q: %s fraction %g is outside 0..1 (write 0.9 for 90%%)", sku, field, *fr)
		}
	}
	if f.FractionOfAggregat != nil && !aggregate {
		add(line, "sku %q: %s is per port: use gbps or fractionOfLink", sku, field)
	}
	switch {
	case f.Gbps == nil:
	case notFinite(*f.Gbps) != "":
		add(line, "sku %q: %s gbps %g %s", sku, field, *f.Gbps, notFinite(*f.Gbps))
	case *f.Gbps == 0:
		add(line, "sku %q: %s floor 0 passes any measurement, a broken link included: give the Gb/s it must reach", sku, field)
	case *f.Gbps < 0:
		add(line, "sku %q: %s gbps %g is negative", sku, field, *f.Gbps)
	case !aggregate && link != nil && *f.Gbps > *link:
		add(line, "sku %q: %s floor %g Gb/s is above linkRateGbps %g: no port can meet it; give a floor at or below the link rate (or fractionOfLink)",
			sku, field, *f.Gbps, *link)
	}
	if strings.TrimSpace(f.Source) == "" {
		add(line, "sku %q: %s has no source", sku, field)
	}
	checkBySize(add, sku, field, f, aggregate, link)
}

// checkBySize validates a floor's floors per message size: each key a
// size, each floor as strict as the floor itself, none nested.
func checkBySize(add adder, sku, field string, f Floor, aggregate bool, link *float64) {
	if f.BySize == nil {
		return
	}
	if aggregate {
		add(f.line, "sku %q: %s has bySize, but floors per message size are for the per-port bandwidth floors (write, read, gpuDirectWrite): remove it", sku, field)
		return
	}
	if len(f.BySize) == 0 {
		add(f.line, "sku %q: %s.bySize is empty: give floors per message size (\"64KiB\": {fractionOfLink: 0.9, source: ...}) or remove it", sku, field)
		return
	}
	seen := map[int]string{}
	for _, key := range slices.Sorted(maps.Keys(f.BySize)) {
		sub := f.BySize[key]
		line := cmp.Or(sub.line, f.line)
		name := fmt.Sprintf("%s.bySize[%q]", field, key)
		size, err := ParseSize(key)
		if err != nil {
			add(line, "sku %q: %s: %v", sku, name, err)
			continue
		}
		if prev, dup := seen[size]; dup {
			add(line, "sku %q: %s.bySize gives %s twice (%q and %q): keep one", sku, field, SizeName(size), prev, key)
			continue
		}
		seen[size] = key
		if sub.BySize != nil {
			add(line, "sku %q: %s has a bySize of its own: floors per size do not nest; give each size once, directly under %s.bySize", sku, name, field)
		}
		checkFloor(add, sku, name, sub, line, false, link)
	}
}

// ParseSize reads a message size as a thresholds file names it: "64KiB",
// "1MiB", "1GiB" (binary units, as reports name sizes) or bytes ("65536").
func ParseSize(s string) (int, error) {
	num, mult := s, 1
	for _, u := range []struct {
		suffix string
		mult   int
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"B", 1}} {
		if n, ok := strings.CutSuffix(s, u.suffix); ok {
			num, mult = n, u.mult
			break
		}
	}
	n, err := strconv.Atoi(num)
	if err != nil || n <= 0 || num != strconv.Itoa(n) || n > (1<<40)/mult {
		return 0, fmt.Errorf("%q is not a message size: write it as 64KiB, 1MiB or in bytes (65536); KB, MB, K and spaces are not accepted", s)
	}
	return n * mult, nil
}

// SizeName is a size as reports name it (64KiB, 1MiB, 1000B): the key a
// floor per size is written under, and the size in a measurement's name.
func SizeName(b int) string { return strings.ReplaceAll(units.Bytes(int64(b)), " ", "") }

// Names lists the SKU names.
func (s *Set) Names() []string {
	var out []string
	for _, k := range s.SKUs {
		out = append(out, k.Name)
	}
	return out
}

// Lookup returns the SKU called name.
func (s *Set) Lookup(name string) (*SKU, error) {
	for i := range s.SKUs {
		if s.SKUs[i].Name == name {
			return &s.SKUs[i], nil
		}
	}
	return nil, fmt.Errorf("unknown SKU %q: %s defines %s (add it there, or pick one with --sku)", name, s.File, strings.Join(s.Names(), ", "))
}

// ForNode picks a node's SKU: forced (--sku) when given, else the first SKU
// whose gpuProduct pattern matches the node's nvidia.com/gpu.product label.
func (s *Set) ForNode(node string, labels map[string]string, forced string) (*SKU, error) {
	if forced != "" {
		return s.Lookup(forced)
	}
	product, ok := labels[GPUProductLabel]
	if !ok || product == "" {
		return nil, fmt.Errorf("node %s has no %s label (GPU feature discovery not running?): force the SKU with --sku", node, GPUProductLabel)
	}
	for i := range s.SKUs {
		for _, p := range s.SKUs[i].Match.GPUProduct {
			if ok, _ := path.Match(p, product); ok {
				return &s.SKUs[i], nil
			}
		}
	}
	return nil, fmt.Errorf("node %s: %s=%q matches no SKU in %s (known: %s): add a match pattern or force one with --sku",
		node, GPUProductLabel, product, s.File, strings.Join(s.Names(), ", "))
}

// yamlKeys lists the yaml keys of the struct v points to.
func yamlKeys(v any) map[string]bool {
	t := reflect.TypeOf(v)
	if t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct {
		return nil
	}
	keys := map[string]bool{}
	for i := 0; i < t.Elem().NumField(); i++ {
		name, _, _ := strings.Cut(t.Elem().Field(i).Tag.Get("yaml"), ",")
		if name != "" && name != "-" {
			keys[name] = true
		}
	}
	return keys
}

func sortedKeys(m map[string]bool) string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}
