package thresholds

import (
	"fmt"
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
	var f Floor
	switch metric {
	case "write":
		f = k.Write
	case "read":
		f = k.Read
	case "gpuDirectWrite":
		f = k.GPUDirectWrite
	default:
		return Bound{}, fmt.Errorf("no bandwidth floor called %q (write, read, gpuDirectWrite)", metric)
	}
	b := Bound{Op: ">=", Source: k.Name + ": " + f.Source}
	switch {
	case f.Gbps != nil:
		b.Value = *f.Gbps
	case f.FractionOfLink != nil && k.LinkRateGbps.Value != nil:
		b.Value = *f.FractionOfLink * *k.LinkRateGbps.Value
		b.Source = fmt.Sprintf("%s: %g × %g Gb/s link — %s", k.Name, *f.FractionOfLink, *k.LinkRateGbps.Value, f.Source)
	default:
		return b, fmt.Errorf("sku %s: %s floor is not per port", k.Name, metric)
	}
	return b, nil
}

// MinMemlock is the smallest registration that must succeed in a pod.
func (k *SKU) MinMemlock() Bound {
	return Bound{Op: ">=", Value: *k.MinMemlockBytes.Value, Source: k.Name + ": " + k.MinMemlockBytes.Source}
}
