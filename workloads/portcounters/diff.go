package portcounters

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"
)

// Status says whether a counter's delta is known, and if not, why.
type Status string

const (
	// OK: Delta is after minus before.
	OK Status = "ok"
	// Unreadable: the file could not be read or parsed on one side.
	Unreadable Status = "unreadable"
	// OnlyBefore / OnlyAfter: the counter exists on one side only (driver
	// reload, firmware capability change, a different device).
	OnlyBefore Status = "only-before"
	OnlyAfter  Status = "only-after"
	// Backwards: after < before. The counter was reset (perfquery -R, a
	// driver reload) or wrapped; the delta is unknown.
	Backwards Status = "backwards"
	// Saturated: an IBTA PortCounters counter sat at its maximum on a
	// side. Those counters stop at all ones instead of wrapping, so the
	// delta is unknown; AtLeast keeps the rise seen before it stuck.
	Saturated Status = "saturated"
	// GroupAbsent, GroupUnreadable and Incomparable are used by findings
	// about a whole group or a whole pair of snapshots.
	GroupAbsent     Status = "group-absent"
	GroupUnreadable Status = "group-unreadable"
	Incomparable    Status = "incomparable"
	// Reset: a finding about a side whose counters fell during the
	// measurement (Deltas.Resets); Contradicted: one whose deltas their own
	// readings contradict (Deltas.Contradictions).
	Reset        Status = "reset"
	Contradicted Status = "contradicted"
)

// Delta is one counter's change between two snapshots.
type Delta struct {
	Group  Group  `json:"group"`
	Name   string `json:"name"`
	Before uint64 `json:"before"`
	After  uint64 `json:"after"`
	// Delta is After-Before, set only when Status is OK.
	Delta uint64 `json:"delta"`
	// AtLeast is, for Saturated, how far the counter rose before it
	// stuck (0 when it was stuck before the measurement began).
	AtLeast uint64 `json:"at_least,omitempty"`
	// Bits is the IBTA width the counter saturates at (counters/ only);
	// 0 means no width is part of its contract.
	Bits   int    `json:"bits,omitempty"`
	Status Status `json:"status"`
	Detail string `json:"detail,omitempty"`
}

// Key is "group/name".
func (x Delta) Key() string { return key(x.Group, x.Name) }

// Deltas is the change of one port's counters over one measurement, on one
// side of a pair.
type Deltas struct {
	Device string `json:"device"`
	Port   int    `json:"port"`
	// Driver is the guess of Snapshot.Driver, used to pick table entries.
	Driver string    `json:"driver,omitempty"`
	Before time.Time `json:"before"`
	After  time.Time `json:"after"`
	// Items is sorted by group, then name.
	Items []Delta `json:"items"`
	// Absent lists groups absent on either side.
	Absent []Group `json:"absent,omitempty"`
	// GroupErrs lists groups that could not be listed, per side.
	GroupErrs []GroupErr `json:"group_errs,omitempty"`
	// Problem is set when the snapshots cannot be compared at all (other
	// port, after taken before before); then no delta is trustworthy.
	Problem string `json:"problem,omitempty"`
	// Unchanged counts the counters Compact dropped because they were
	// read on both sides and did not move; UnchangedJudged those of them
	// the counter table judges (so a reader knows the link was watched).
	Unchanged       int `json:"unchanged,omitempty"`
	UnchangedJudged int `json:"unchangedJudged,omitempty"`
	// Root is the sysfs root both reads were made under (Snapshot.Root).
	Root string `json:"root,omitempty"`
}

// JudgedWatched counts the counters of d that the table judges for its
// driver and whose delta is known: 0 means nothing on the port that could
// fail the link was watched, so a clean result would say nothing.
func (d Deltas) JudgedWatched() int {
	n := d.UnchangedJudged
	for _, x := range d.Items {
		if e, ok := Lookup(x.Group, x.Name, d.Driver); ok && e.Policy == Judged && x.Status == OK {
			n++
		}
	}
	return n
}

// fell says the counter's two readings show it fell, whatever status a
// probe gave it: its delta is unknown, never 0 and never the unsigned wrap
// of after − before.
func (x Delta) fell() bool {
	return (x.Status == OK || x.Status == Saturated || x.Status == Backwards) && x.After < x.Before
}

// Resets names, with both readings, the counters of d that fell during the
// measurement (or that a probe said went backwards). A fall is a reset (a
// driver reload, perfquery -R), and a reset clears the error counters too:
// one that rose and was then cleared reads the same before and after, so no
// counter of the port can be judged clean over that window.
func (d Deltas) Resets() []string {
	var out []string
	for _, x := range d.Items {
		switch {
		case x.fell():
			out = append(out, fmt.Sprintf("%s read %d before and %d after", x.Key(), x.Before, x.After))
		case x.Status == Backwards:
			out = append(out, fmt.Sprintf("%s went backwards (%s)", x.Key(), x.Detail))
		}
	}
	return out
}

// Contradictions names the counters of d whose delta its own readings
// contradict: a known delta (or a saturated counter's rise) other than
// after − before. Diff never writes one; a probe that did printed figures
// that cannot be true, and none of its deltas may be used.
func (d Deltas) Contradictions() []string {
	var out []string
	for _, x := range d.Items {
		if x.fell() {
			continue // a reset (Resets), whatever its delta says
		}
		rise := x.After - x.Before
		switch {
		case x.Status == OK && x.Delta != rise:
			out = append(out, fmt.Sprintf("%s: delta %d, but it read %d before and %d after (a rise of %d)", x.Key(), x.Delta, x.Before, x.After, rise))
		case x.Status == Saturated && x.AtLeast != rise:
			out = append(out, fmt.Sprintf("%s: rose by at least %d, but it read %d before and %d after (a rise of %d)", x.Key(), x.AtLeast, x.Before, x.After, rise))
		}
	}
	return out
}

// GroupErr is a counter directory that exists but could not be listed on
// one side: its counters are unknown, not absent.
type GroupErr struct {
	Side  string `json:"side"` // "before" or "after"
	Group Group  `json:"group"`
	Err   string `json:"err"`
}

// Get returns the delta of group/name.
func (d Deltas) Get(g Group, name string) (Delta, bool) {
	for _, x := range d.Items {
		if x.Group == g && x.Name == name {
			return x, true
		}
	}
	return Delta{}, false
}

// Interval is the time between the two reads.
func (d Deltas) Interval() time.Duration { return d.After.Sub(d.Before) }

// DataBytes converts a port_xmit_data/port_rcv_data value (or delta) to
// bytes: those counters count octets divided by 4
// (Documentation/ABI/stable/sysfs-class-infiniband; mlx5 mad.c shifts its
// octet counts right by 2). Saturates instead of overflowing.
func DataBytes(words uint64) uint64 {
	if words > math.MaxUint64/4 {
		return math.MaxUint64
	}
	return words * 4
}

// Diff computes every counter's delta from before to after.
func Diff(before, after Snapshot) Deltas {
	d := Deltas{Device: after.Device, Port: after.Port, Driver: after.Driver(), Before: before.Time, After: after.Time}
	if d.Driver == "" {
		d.Driver = before.Driver()
	}
	switch {
	case before.Device != after.Device || before.Port != after.Port:
		d.Problem = fmt.Sprintf("snapshots of different ports: %s port %d before, %s port %d after",
			before.Device, before.Port, after.Device, after.Port)
	case after.Time.Before(before.Time):
		d.Problem = "the after snapshot was read before the before snapshot"
	case before.Root != after.Root:
		d.Problem = fmt.Sprintf("snapshots read under different sysfs roots: %q before, %q after", before.Root, after.Root)
	}
	d.Root = after.Root
	ext := extended(before) || extended(after)

	b := index(before)
	a := index(after)
	for k, cb := range b {
		ca, ok := a[k]
		if !ok {
			d.Items = append(d.Items, Delta{Group: cb.Group, Name: cb.Name, Before: cb.Value, Status: OnlyBefore,
				Detail: "present before the measurement, missing after"})
			continue
		}
		d.Items = append(d.Items, diffOne(cb, ca, ext))
	}
	for k, ca := range a {
		if _, ok := b[k]; !ok {
			d.Items = append(d.Items, Delta{Group: ca.Group, Name: ca.Name, After: ca.Value, Status: OnlyAfter,
				Detail: "missing before the measurement, present after"})
		}
	}
	sort.Slice(d.Items, func(i, j int) bool {
		x, y := d.Items[i], d.Items[j]
		return x.Group < y.Group || (x.Group == y.Group && x.Name < y.Name)
	})

	for _, g := range groups {
		if hasGroup(before.Absent, g) || hasGroup(after.Absent, g) {
			d.Absent = append(d.Absent, g)
		}
		if e, ok := before.GroupErrs[g]; ok {
			d.GroupErrs = append(d.GroupErrs, GroupErr{Side: "before", Group: g, Err: e})
		}
		if e, ok := after.GroupErrs[g]; ok {
			d.GroupErrs = append(d.GroupErrs, GroupErr{Side: "after", Group: g, Err: e})
		}
	}
	return d
}

func diffOne(b, a Counter, ext bool) Delta {
	x := Delta{Group: a.Group, Name: a.Name, Before: b.Value, After: a.Value, Bits: width(a.Group, a.Name, ext)}
	if b.Err != "" || a.Err != "" {
		var why []string
		if b.Err != "" {
			why = append(why, "before: "+b.Err)
		}
		if a.Err != "" {
			why = append(why, "after: "+a.Err)
		}
		x.Status, x.Detail = Unreadable, strings.Join(why, "; ")
		return x
	}
	// Backwards first: a counter at its maximum that then drops was reset.
	if a.Value < b.Value {
		x.Status = Backwards
		x.Detail = fmt.Sprintf("fell from %d to %d: the counter was reset or wrapped", b.Value, a.Value)
		return x
	}
	if top := maxOf(x.Bits); x.Bits > 0 && (b.Value == top || a.Value == top) {
		x.Status, x.AtLeast = Saturated, a.Value-b.Value
		if b.Value == top {
			x.Detail = fmt.Sprintf("stuck at its %d-bit maximum %d before the measurement", x.Bits, top)
		} else {
			x.Detail = fmt.Sprintf("rose by at least %d, then stuck at its %d-bit maximum %d", x.AtLeast, x.Bits, top)
		}
		return x
	}
	x.Status, x.Delta = OK, a.Value-b.Value
	return x
}

// extended reports whether counters/ comes from PortCountersExtended
// (64-bit data and packet counters). sysfs.c picks the table once per port
// from the PMA's ClassPortInfo: pma_attrs_ext adds unicast_*/multicast_*;
// pma_attrs_noietf has 64-bit data counters without them, which only a value
// above 32 bits reveals. A noietf counter sitting exactly at 2^32-1 is then
// read as saturated: unknown, never a wrong number.
func extended(s Snapshot) bool {
	for _, c := range s.Counters {
		if c.Group != Counters || c.Err != "" {
			continue
		}
		if strings.HasPrefix(c.Name, "unicast_") || strings.HasPrefix(c.Name, "multicast_") {
			return true
		}
		if e, ok := Lookup(Counters, c.Name, ""); ok && e.ExtBits == 64 && c.Value > math.MaxUint32 {
			return true
		}
	}
	return false
}

// width is the IBTA width of a counters/ counter; 0 for hw_counters and
// names the table does not know.
func width(g Group, name string, ext bool) int {
	e, ok := Lookup(g, name, "")
	if !ok || g != Counters {
		return 0
	}
	if ext && e.ExtBits != 0 {
		return e.ExtBits
	}
	return e.Bits
}

func maxOf(bits int) uint64 {
	if bits >= 64 {
		return math.MaxUint64
	}
	return 1<<uint(bits) - 1
}

func index(s Snapshot) map[string]Counter {
	m := make(map[string]Counter, len(s.Counters))
	for _, c := range s.Counters {
		m[c.Key()] = c
	}
	return m
}

func hasGroup(gs []Group, g Group) bool {
	for _, x := range gs {
		if x == g {
			return true
		}
	}
	return false
}
