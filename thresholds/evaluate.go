package thresholds

import (
	"fmt"

	"github.com/rdmasuite/rdmasuite/reports"
)

// BandwidthFloor is the per-port floor in Gb/s for metric ("write", "read",
// "gpuDirectWrite"). Fractions apply to the SKU's expected link rate, not the
// rate the port negotiated: a 200 Gb/s port that trained at 100 must fail.
func (k *SKU) BandwidthFloor(metric string) (reports.Threshold, error) {
	var f Floor
	switch metric {
	case "write":
		f = k.Write
	case "read":
		f = k.Read
	case "gpuDirectWrite":
		f = k.GPUDirectWrite
	default:
		return reports.Threshold{}, fmt.Errorf("no bandwidth floor called %q (write, read, gpuDirectWrite)", metric)
	}
	t := reports.Threshold{Op: ">=", Source: k.Name + ": " + f.Source}
	switch {
	case f.Gbps != nil:
		t.Value = *f.Gbps
	case f.FractionOfLink != nil && k.LinkRateGbps.Value != nil:
		t.Value = *f.FractionOfLink * *k.LinkRateGbps.Value
		t.Source = fmt.Sprintf("%s: %g × %g Gb/s link — %s", k.Name, *f.FractionOfLink, *k.LinkRateGbps.Value, f.Source)
	default:
		return t, fmt.Errorf("sku %s: %s floor is not per port", k.Name, metric)
	}
	return t, nil
}

// MinMemlock is the smallest registration that must succeed in a pod.
func (k *SKU) MinMemlock() reports.Threshold {
	return reports.Threshold{Op: ">=", Value: *k.MinMemlockBytes.Value, Source: k.Name + ": " + k.MinMemlockBytes.Source}
}

// Judge compares one measurement with its threshold. A missing measurement
// (nil) fails: the suite never passes what it did not measure.
func Judge(name, unit, port string, measured *float64, t reports.Threshold) (reports.Measurement, reports.Status, string) {
	m := reports.Measurement{Name: name, Port: port, Unit: unit, Threshold: &t}
	if measured == nil {
		return m, reports.Fail, fmt.Sprintf("missing measurement: %s was not measured (threshold %s %g %s)", name, t.Op, t.Value, unit)
	}
	m.Value = *measured
	if !t.Met(*measured) {
		return m, reports.Fail, fmt.Sprintf("%s = %.4g %s, threshold %s %.4g %s (%s)", name, *measured, unit, t.Op, t.Value, unit, t.Source)
	}
	return m, reports.Pass, ""
}
