package portcounters

import (
	"fmt"
	"sort"
	"strings"
)

// Severity orders findings: a fail beats an unknown beats a record.
type Severity string

const (
	// Fail: a judged counter rose above its allowance.
	Fail Severity = "fail"
	// Unknown: a judged counter (or the whole read) could not be judged.
	// Never a pass: the contract treats unreadable output as not clean.
	Unknown Severity = "unknown"
	// Record: shown as evidence, not judged (congestion signals, an
	// unreadable traffic counter, an absent group).
	Record Severity = "record"
)

var rank = map[Severity]int{Fail: 3, Unknown: 2, Record: 1}

// Finding is one statement about one counter (or group) of one side.
type Finding struct {
	Severity Severity `json:"severity"`
	// Counter is "group/name", or a group name for group findings.
	Counter string `json:"counter"`
	Class   Class  `json:"class,omitempty"`
	Status  Status `json:"status"`
	// Delta is the rise (the lower bound for a saturated counter).
	Delta uint64 `json:"delta"`
	// Judged says whether an allowance applied, and Allowance its value.
	Judged    bool   `json:"judged"`
	Allowance uint64 `json:"allowance"`
	Message   string `json:"message"`
}

// Allowances are the per-SKU bounds on what a counter may rise by during
// one measurement on one side. A key is "group/name" or a bare name (then
// it applies in both groups). Naming a recorded counter makes it judged.
type Allowances map[string]uint64

func (a Allowances) lookup(g Group, name string) (uint64, bool) {
	if v, ok := a[key(g, name)]; ok {
		return v, true
	}
	v, ok := a[name]
	return v, ok
}

// Judge classifies the deltas of one side of one measurement. It returns
// fails first, then unknowns, then records; a clean port yields nothing.
func Judge(d Deltas, allow Allowances) []Finding {
	if d.Problem != "" {
		// No delta of an incomparable pair means anything.
		return []Finding{{Severity: Unknown, Counter: fmt.Sprintf("%s/%d", d.Device, d.Port),
			Status: Incomparable, Message: d.Problem}}
	}
	side := fmt.Sprintf("%s/%d", d.Device, d.Port)
	if bad := d.Contradictions(); len(bad) > 0 {
		// A probe whose deltas contradict their own readings: none of
		// them means anything.
		return []Finding{{Severity: Unknown, Counter: side, Status: Contradicted,
			Message: "figures that cannot be true: " + strings.Join(bad, "; ")}}
	}
	var out []Finding
	if r := d.Resets(); len(r) > 0 {
		out = append(out, Finding{Severity: Unknown, Counter: side, Status: Reset,
			Message: "the counters were reset during the measurement (a driver reload or perfquery -R): " + strings.Join(r, "; ") +
				": the rail's errors in that window are unknown"})
	}
	for _, e := range d.GroupErrs {
		out = append(out, Finding{Severity: Unknown, Counter: string(e.Group), Status: GroupUnreadable,
			Message: fmt.Sprintf("%s/ could not be listed %s the measurement (%s): its counters are unknown", e.Group, e.Side, e.Err)})
	}
	for _, g := range d.Absent {
		msg := "hw_counters/ is absent on this device: no driver counters were watched"
		if g == Counters {
			msg = "counters/ is absent on this device (no PMA, e.g. rxe): the IBTA link counters " +
				"(symbol_error, link_downed, …) were not watched"
		}
		out = append(out, Finding{Severity: Record, Counter: string(g), Status: GroupAbsent, Message: msg})
	}
	for _, x := range d.Items {
		if x.fell() && x.Status != Backwards {
			// Never 0, never the wrap of after − before.
			x.Status, x.Delta, x.AtLeast = Backwards, 0, 0
			x.Detail = fmt.Sprintf("fell from %d to %d: the counter was reset", x.Before, x.After)
		}
		if f, ok := judgeOne(x, d.Driver, allow); ok {
			out = append(out, f)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if rank[out[i].Severity] != rank[out[j].Severity] {
			return rank[out[i].Severity] > rank[out[j].Severity]
		}
		return out[i].Counter < out[j].Counter
	})
	return out
}

func judgeOne(x Delta, driver string, allow Allowances) (Finding, bool) {
	e, known := Lookup(x.Group, x.Name, driver)
	f := Finding{Counter: x.Key(), Class: e.Class, Status: x.Status}
	f.Allowance, f.Judged = allow.lookup(x.Group, x.Name)
	if !f.Judged && known && e.Policy == Judged {
		f.Allowance, f.Judged = e.DefaultAllowance, true
	}
	about := ""
	if known {
		about = ": " + string(e.Class) + ". " + e.Meaning
	}

	switch x.Status {
	case OK:
		f.Delta = x.Delta
		switch {
		case f.Judged && x.Delta > f.Allowance:
			f.Severity = Fail
			f.Message = fmt.Sprintf("%s rose by %d (allowed %d)%s", f.Counter, x.Delta, f.Allowance, about)
		case !f.Judged && known && e.Policy == Recorded && x.Delta > 0:
			f.Severity = Record
			f.Message = fmt.Sprintf("%s rose by %d (recorded, no bound)%s", f.Counter, x.Delta, about)
		default:
			return Finding{}, false
		}
	case Saturated:
		f.Delta = x.AtLeast
		switch {
		case f.Judged && x.AtLeast > f.Allowance:
			f.Severity = Fail
			f.Message = fmt.Sprintf("%s rose by at least %d (allowed %d) before sticking at its %d-bit maximum%s",
				f.Counter, x.AtLeast, f.Allowance, x.Bits, about)
		case f.Judged:
			f.Severity = Unknown
			f.Message = fmt.Sprintf("%s is %s, so its delta is unknown; reset the port counters "+
				"(e.g. perfquery -R) to watch it again%s", f.Counter, x.Detail, about)
		default:
			f.Severity = Record
			f.Message = fmt.Sprintf("%s is %s; its delta is unknown%s", f.Counter, x.Detail, about)
		}
	default: // Unreadable, Backwards, OnlyBefore, OnlyAfter
		f.Severity = Record
		if f.Judged {
			f.Severity = Unknown
		}
		f.Message = fmt.Sprintf("%s: %s (%s); its delta is unknown%s", f.Counter, x.Status, x.Detail, about)
	}
	return f, true
}

// Worst is the highest severity among findings, "" when there are none.
func Worst(fs []Finding) Severity {
	var w Severity
	for _, f := range fs {
		if rank[f.Severity] > rank[w] {
			w = f.Severity
		}
	}
	return w
}
