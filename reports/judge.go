package reports

import (
	"fmt"
	"math"
)

// Unlimited is the value of a "bytes" measurement with no limit (memlock
// "unlimited"); it meets any floor and is better than any finite value.
const Unlimited = -1

// meets reports whether v (in unit) satisfies t: NaN never does; -1 bytes
// (unlimited) meets a floor and fails a ceiling.
func meets(v float64, unit string, t Threshold) bool {
	if math.IsNaN(v) {
		return false
	}
	if unit == "bytes" && v < 0 {
		return t.Op != "<="
	}
	return t.Met(v)
}

// Judge compares one measurement (taken on node, port) with its threshold.
// A missing measurement (nil) fails, as does NaN: the suite never passes what
// it did not measure. Convert a thresholds.Bound with reports.Threshold(b).
func Judge(name, unit, node, port string, measured *float64, t Threshold) (Measurement, Status, string) {
	m := Measurement{Name: name, Node: node, Port: port, Unit: unit, Threshold: &t}
	if measured == nil {
		return m, Fail, fmt.Sprintf("missing measurement: %s was not measured (threshold %s %g %s)", name, t.Op, t.Value, unit)
	}
	if math.IsNaN(*measured) || math.IsInf(*measured, 0) {
		// Recorded like a missing value: a results file holds no NaN.
		return m, Fail, fmt.Sprintf("invalid measurement: %s = %v is not a number (threshold %s %g %s)", name, *measured, t.Op, t.Value, unit)
	}
	m.Value = *measured
	if !meets(*measured, unit, t) {
		return m, Fail, fmt.Sprintf("%s = %s, threshold %s %s (%s)", name, fmtVal(*measured, unit), t.Op, fmtVal(t.Value, unit), t.Source)
	}
	return m, Pass, ""
}
