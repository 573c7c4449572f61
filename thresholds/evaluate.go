package thresholds

import (
	"fmt"
	"slices"
	"strings"
)

// Bound is one sourced bar a measurement must meet: Op is ">=" (a floor) or
// "<=" (a ceiling). It has the same fields as reports.Threshold, so a caller
// that records it in a result converts it with reports.Threshold(b);
// thresholds itself never depends on the report model or its renderers.
type Bound struct {
	Op     string
	Value  float64
	Source string
}

// BandwidthFloor is the per-port floor in Gb/s for metric ("write", "read",
// "gpuDirectWrite"). Fractions apply to the SKU's expected link rate, not the
// rate the port negotiated: a 200 Gb/s port that trained at 100 must fail.
func (k *SKU) BandwidthFloor(metric string) (Bound, error) {
	f, err := k.floorOf(metric)
	if err != nil {
		return Bound{}, err
	}
	return k.perPort(metric, f, "")
}

// floorOf is the SKU's per-port bandwidth floor called metric.
func (k *SKU) floorOf(metric string) (Floor, error) {
	switch metric {
	case "write":
		return k.Write, nil
	case "read":
		return k.Read, nil
	case "gpuDirectWrite":
		return k.GPUDirectWrite, nil
	}
	return Floor{}, fmt.Errorf("no bandwidth floor called %q (write, read, gpuDirectWrite)", metric)
}

// perPort is floor f as a bound in Gb/s; at, when not "", names the
// message size whose own floor f is ("write at 64KiB").
func (k *SKU) perPort(metric string, f Floor, at string) (Bound, error) {
	head := k.label()
	if at != "" {
		head += fmt.Sprintf(": %s floor at %s", metric, at)
	}
	b := Bound{Op: ">=", Source: head + ": " + f.Source}
	switch {
	case f.Gbps != nil:
		b.Value = *f.Gbps
	case f.FractionOfLink != nil && k.LinkRateGbps.Value != nil:
		b.Value = *f.FractionOfLink * *k.LinkRateGbps.Value
		b.Source = fmt.Sprintf("%s: %g × %g Gb/s link — %s", head, *f.FractionOfLink, *k.LinkRateGbps.Value, f.Source)
	default:
		return b, fmt.Errorf("sku %s: %s floor is not per port", k.Name, metric)
	}
	return b, nil
}

// FloorSizes are the message sizes (bytes, ascending) for which the
// bandwidth floor metric gives a floor of its own (bySize).
func (k *SKU) FloorSizes(metric string) []int {
	f, err := k.floorOf(metric)
	if err != nil {
		return nil
	}
	var sizes []int
	for key := range f.BySize {
		if n, err := ParseSize(key); err == nil {
			sizes = append(sizes, n)
		}
	}
	slices.Sort(sizes)
	return sizes
}

// BandwidthFloorAt is the bandwidth floor metric's own floor for message
// size bytes (bySize); its source names the size. An error when the SKU
// gives none for that size (FloorSizes lists those it gives).
func (k *SKU) BandwidthFloorAt(metric string, size int) (Bound, error) {
	f, err := k.floorOf(metric)
	if err != nil {
		return Bound{}, err
	}
	for key, sub := range f.BySize {
		if n, err := ParseSize(key); err == nil && n == size {
			return k.perPort(metric, sub, SizeName(size))
		}
	}
	return Bound{}, fmt.Errorf("sku %s: %s has no floor of its own for %s", k.Name, metric, SizeName(size))
}

// CalibratedPrefix starts the source of every floor rdmasuite thresholds
// calibrate writes: a floor whose source starts with it is named as
// calibrated in the run header (CalibratedFloors).
const CalibratedPrefix = "calibrated from "

// CalibratedFloors names the SKU's bandwidth floors whose source says
// they were calibrated (CalibratedPrefix), as the run header shows them:
// "write 64KiB ≥ 181.2 Gb/s", "read ≥ 190 Gb/s" (a floor for every size).
func (k *SKU) CalibratedFloors() []string {
	var out []string
	for _, metric := range []string{"write", "read", "gpuDirectWrite"} {
		f, _ := k.floorOf(metric)
		if strings.HasPrefix(f.Source, CalibratedPrefix) {
			if b, err := k.BandwidthFloor(metric); err == nil {
				out = append(out, fmt.Sprintf("%s ≥ %.4g Gb/s", metric, b.Value))
			}
		}
		for _, size := range k.FloorSizes(metric) {
			b, err := k.BandwidthFloorAt(metric, size)
			if err == nil && strings.Contains(b.Source, CalibratedPrefix) {
				out = append(out, fmt.Sprintf("%s %s ≥ %.4g Gb/s", metric, SizeName(size), b.Value))
			}
		}
	}
	return out
}

// LatencyCeiling is the SKU's bound on the average latency of op (write,
// read or send) in µs, as perftest reports it (write and send half the
// round trip, read the whole READ); an error names the missing field.
func (k *SKU) LatencyCeiling(op string) (Bound, error) {
	switch op {
	case "write", "read", "send":
		return k.Optional(op + "LatencyUs")
	}
	return Bound{}, fmt.Errorf("no latency ceiling for op %q (write, read, send)", op)
}

// MsgRateFloor is the SKU's floor on op's message rate (write only) in
// Mpps, perftest's MsgRate of one process; an error names the missing
// field and why the built-in hardware SKUs have none.
func (k *SKU) MsgRateFloor(op string) (Bound, error) {
	if op != "write" {
		return Bound{}, fmt.Errorf("no message-rate floor for op %q (write)", op)
	}
	return k.Optional("writeMsgRateMpps")
}

// LoadLatencyFactor is how many times its unloaded typical and p99 a
// rail pair's latency may reach while the pair carries a write stream;
// an error names the missing field and why no built-in SKU has one.
func (k *SKU) LoadLatencyFactor() (Bound, error) { return k.Optional("latencyUnderLoadFactor") }

// MinMemlock is the smallest registration that must succeed in a pod.
func (k *SKU) MinMemlock() Bound {
	return Bound{Op: ">=", Value: *k.MinMemlockBytes.Value, Source: k.label() + ": " + k.MinMemlockBytes.Source}
}

// NCCLAllReduceFloor is the all_reduce bus-bandwidth floor in GB/s (1e9
// bytes/s, nccl-tests' unit) for a world whose ranks can each drive ports
// of the node's network ports. The SKU's fractionOfAggregate applies to
// the aggregate of those ports: fraction × ports × linkRateGbps / 8. A
// rank that drives one GPU cannot use the node's every rail (NCCL gives a
// GPU the NICs nearest it, one on rail-optimised nodes), so the runner
// passes the ports its ranks can reach; ports ≤ 0 or above portsPerNode
// means portsPerNode (every GPU of the node in the world). fractionOfLink
// is per port (× ports too); gbps is an absolute Gb/s figure, converted
// to GB/s (/ 8).
func (k *SKU) NCCLAllReduceFloor(ports int) (Bound, error) {
	f := k.NCCLAllReduceBusBw
	if k.PortsPerNode.Value == nil {
		return Bound{}, fmt.Errorf("sku %s has no portsPerNode: the NCCL floor is a fraction of the node's ports", k.Name)
	}
	all := int(*k.PortsPerNode.Value)
	if ports <= 0 || ports > all {
		ports = all
	}
	b := Bound{Op: ">=", Source: k.label() + ": " + f.Source}
	switch {
	case f.Gbps != nil:
		b.Value = *f.Gbps / 8
		b.Source = fmt.Sprintf("%s: %g Gb/s = %g GB/s — %s", k.label(), *f.Gbps, b.Value, f.Source)
	case k.LinkRateGbps.Value == nil && (f.FractionOfAggregat != nil || f.FractionOfLink != nil):
		return b, fmt.Errorf("sku %s has no linkRateGbps: the NCCL floor is a fraction of it", k.Name)
	case f.FractionOfAggregat != nil, f.FractionOfLink != nil:
		frac := f.FractionOfAggregat
		if frac == nil {
			frac = f.FractionOfLink
		}
		rate := *k.LinkRateGbps.Value
		b.Value = *frac * float64(ports) * rate / 8
		b.Source = fmt.Sprintf("%s: %g × %d of %d port(s) × %g Gb/s / 8 = %.4g GB/s — %s", k.label(), *frac, ports, all, rate, b.Value, f.Source)
	default:
		return b, fmt.Errorf("sku %s: ncclAllReduceBusBw has no bound (gbps, fractionOfLink or fractionOfAggregate)", k.Name)
	}
	return b, nil
}
