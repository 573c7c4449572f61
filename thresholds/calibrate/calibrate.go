// Package calibrate turns the bandwidth figures of runs that passed into
// a thresholds overlay: per SKU, per floor (write, read, gpuDirectWrite)
// and per message size, a floor computed from the per-port distribution
// the runs measured (rdmasuite thresholds calibrate).
//
// The statistic: each port's figure is the median of its measurements
// (a port measured in several rounds or runs weighs once); over the
// ports, floor = median − max(K·1.4826·MAD, MinMargin·median), rounded
// down to 4 significant digits and never above the SKU's link rate.
// Why: the median and the MAD (median absolute deviation) ignore a few
// bad ports, which a mean and a standard deviation would follow (a fleet
// with a slow cable must not lower its own bar); 1.4826·MAD estimates the
// standard deviation of normally spread figures, and 4 of them below the
// median is passed by all but about 3 in 100 000 healthy ports, so a
// fleet of thousands of ports gets no false failures from the spread
// alone. The spread across ports in one run does not see how a port
// varies from run to run (perftest runs of the same port differ by 1-2 %),
// so the margin is at least MinMargin (3 %) of the median.
package calibrate

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/montanaflynn/stats"
	"github.com/rdmasuite/rdmasuite/reports"
	"github.com/rdmasuite/rdmasuite/thresholds"
)

// The statistic (see the package comment).
const (
	// K is how many robust standard deviations (1.4826·MAD) the floor
	// lies below the median.
	K = 4.0
	// MADScale makes the MAD a standard deviation for normal figures.
	MADScale = 1.4826
	// MinMargin is the least margin below the median, as a fraction of it.
	MinMargin = 0.03
	// DefaultMinPorts is the fewest ports a floor is computed from.
	DefaultMinPorts = 8
)

// Input is one results file.
type Input struct {
	Name string // the file, as errors name it
	Run  reports.Run
}

// Options are the command's flags.
type Options struct {
	// MinPorts: the fewest distinct ports per (SKU, floor, size)
	// (--min-ports; 0 is DefaultMinPorts).
	MinPorts int
	// AcceptBelowFloor: a run whose only non-passing checks are bandwidth
	// figures that were measured and missed their floor is used
	// (--accept-below-floor).
	AcceptBelowFloor bool
	// Thresholds is the file whose SKUs are copied, laid over the
	// built-ins as the suite's --thresholds does ("" the built-ins).
	Thresholds string
	// MADs and MinMargin replace K and MinMargin (--mads, --min-margin;
	// 0: the defaults): a fleet whose ports vary more from run to run
	// than one run shows (a shared or emulated fabric) needs a wider
	// margin, one whose floors should sit tighter a smaller one. The
	// overlay's sources say which were used.
	MADs, MinMargin float64
}

// statistic is the floor's rule: K robust standard deviations, at least
// margin of the median, below the median.
type statistic struct{ k, margin float64 }

// Row is one calibrated floor.
type Row struct {
	SKU, Floor string // Floor: write, read, gpuDirectWrite
	Size       int
	Ports      int     // distinct ports
	Figures    int     // measurements
	Median     float64 // over the ports, Gb/s
	MAD        float64 // Gb/s
	Value      float64 // the new floor, Gb/s
	Capped     bool    // the link rate capped it
	// Was is the floor that judged this size before ("" when none did:
	// a size below the largest measured, without a floor of its own).
	Was string
	// Below names the ports whose figure is below the new floor.
	Below []string
	// Runs are the run ids the figures came from.
	Runs  []string
	dates []string // the runs' dates (UTC), sorted
	st    statistic
}

// Result is the overlay and what went into it.
type Result struct {
	Overlay []byte
	Rows    []Row
	Notes   []string // said, not refused: a file name that differs, accepted misses
}

// ops maps the check ids calibrated to the floor that judges them and
// the op in their measurements' names. gpudirect/read is judged against
// the write floor but measures another op, so it calibrates nothing; a
// loopback (same-node) figure is not what a node-to-node floor bounds.
var ops = map[string]struct{ floor, op string }{
	"bandwidth/write": {"write", "write"},
	"bandwidth/read":  {"read", "read"},
	"gpudirect/write": {"gpuDirectWrite", "write"},
}

// belowFloorIDs are the checks --accept-below-floor may find failed.
var belowFloorIDs = []string{"bandwidth/write", "bandwidth/read", "gpudirect/write", "gpudirect/read"}

var figureName = regexp.MustCompile(`^(write|read)_([0-9]+(?:[KMG]iB|B))_avg$`)

type key struct {
	sku, floor string
	size       int
}

type sample struct {
	values []float64
	runs   map[string]bool
}

// Calibrate computes the overlay from inputs, or refuses with every
// problem found, each naming the fix.
func Calibrate(inputs []Input, opt Options) (*Result, error) {
	if len(inputs) == 0 {
		return nil, errors.New("no results file: give one or more RESULTS.json of runs that passed")
	}
	minPorts := cmp.Or(opt.MinPorts, DefaultMinPorts)
	st := statistic{k: cmp.Or(opt.MADs, K), margin: cmp.Or(opt.MinMargin, MinMargin)}
	if st.k < 0 || st.margin < 0 || st.margin >= 1 || math.IsNaN(st.k) || math.IsNaN(st.margin) {
		return nil, fmt.Errorf("--mads %g / --min-margin %g: want MADs >= 0 and a margin in [0, 1) of the median (e.g. 4 and 0.03)", st.k, st.margin)
	}
	if minPorts < 1 {
		return nil, fmt.Errorf("--min-ports %d: want at least 1", opt.MinPorts)
	}
	res := &Result{}
	var problems []string
	data := map[key]map[string]*sample{} // key → port → figures
	skuFile := map[string][2]string{}    // SKU → thresholds file, the run that named it first
	runIDs := map[string]string{}        // run id → file
	dates := map[string]string{}         // run id → date
	for _, in := range inputs {
		id := cmp.Or(in.Run.RunID, in.Name)
		if prev, dup := runIDs[id]; dup {
			problems = append(problems, fmt.Sprintf("run %s is given twice (%s and %s): its figures would count twice; give each run once", id, prev, in.Name))
			continue
		}
		runIDs[id] = in.Name
		dates[id] = in.Run.Started.UTC().Format("2006-01-02")
		p, notes := passed(in, id, opt.AcceptBelowFloor)
		if p != "" {
			problems = append(problems, p)
			continue
		}
		res.Notes = append(res.Notes, notes...)
		nodes := map[string]reports.Node{}
		for _, n := range in.Run.Nodes {
			nodes[n.Name] = n
		}
		for _, c := range in.Run.Checks {
			o, ok := ops[c.ID]
			if !ok {
				continue
			}
			for _, m := range c.Measured {
				g := figureName.FindStringSubmatch(m.Name)
				if g == nil || g[1] != o.op {
					continue
				}
				where := fmt.Sprintf("%s: run %s, check %s on %s port %s: %s", in.Name, id, c.Key(), m.Node, m.Port, m.Name)
				size, err := thresholds.ParseSize(g[2])
				switch {
				case err != nil:
					problems = append(problems, fmt.Sprintf("%s: %v", where, err))
					continue
				case m.Unit != "Gb/s":
					problems = append(problems, fmt.Sprintf("%s is in %q, not Gb/s: a figure calibrate cannot use (is the file from this suite?)", where, m.Unit))
					continue
				case math.IsNaN(m.Value) || math.IsInf(m.Value, 0) || m.Value <= 0:
					problems = append(problems, fmt.Sprintf("%s = %v: a figure calibrate cannot use (not a measured bandwidth)", where, m.Value))
					continue
				case m.Node == "" || m.Port == "":
					problems = append(problems, fmt.Sprintf("%s names no node or port: per-port figures are what calibrate reads", where))
					continue
				}
				n := nodes[m.Node]
				if n.SKU == "" {
					problems = append(problems, fmt.Sprintf("%s: run %s names no SKU for node %s: which SKU's floor its figures calibrate is unknown; "+
						"run again with the node matched to a SKU (its %s label, or --sku)", in.Name, id, m.Node, thresholds.GPUProductLabel))
					continue
				}
				if prev, ok := skuFile[n.SKU]; !ok {
					skuFile[n.SKU] = [2]string{n.ThresholdsFile, id}
				} else if prev[0] != n.ThresholdsFile {
					problems = append(problems, fmt.Sprintf("SKU %s came from %q in run %s and from %q in run %s: runs judged by different thresholds files "+
						"may not mean the same SKU; calibrate runs of one thresholds setup together", n.SKU, prev[0], prev[1], n.ThresholdsFile, id))
					continue
				}
				k := key{n.SKU, o.floor, size}
				if data[k] == nil {
					data[k] = map[string]*sample{}
				}
				port := m.Node + " " + m.Port
				s := data[k][port]
				if s == nil {
					s = &sample{runs: map[string]bool{}}
					data[k][port] = s
				}
				s.values = append(s.values, m.Value)
				s.runs[id] = true
			}
		}
	}
	problems = dedupe(problems)
	if len(problems) > 0 {
		return nil, errors.New(strings.Join(problems, "\n"))
	}
	if len(data) == 0 {
		return nil, errors.New("no bandwidth figure to calibrate from (checks bandwidth/write, bandwidth/read or gpudirect/write with per-port Gb/s figures): " +
			"calibrate results of runs with the bandwidth feature (--labels suite=rdma)")
	}
	base, err := thresholds.LoadSuite(opt.Thresholds, false, "")
	if err != nil {
		return nil, err
	}
	skus := map[string]*thresholds.SKU{}
	for _, name := range slices.Sorted(maps.Keys(skuFile)) {
		k, err := base.Lookup(name)
		if err != nil {
			problems = append(problems, fmt.Sprintf("the runs name SKU %s, which %s does not define: give the thresholds file the runs used with --thresholds FILE "+
				"(an overlay replaces a SKU whole, so its other fields are copied from there)", name, base.File))
			continue
		}
		from := skuFile[name][0]
		switch {
		case from == k.File():
		case opt.Thresholds == "":
			problems = append(problems, fmt.Sprintf("the runs judged SKU %s with %q, not %s: give that file with --thresholds FILE "+
				"(an overlay replaces a SKU whole, so the SKU's other fields are copied from it)", name, from, k.File()))
			continue
		default:
			res.Notes = append(res.Notes, fmt.Sprintf("the runs judged SKU %s with %q; its other fields are copied from %s (--thresholds)", name, from, k.File()))
		}
		c := *k
		skus[name] = &c
	}
	if len(problems) > 0 {
		return nil, errors.New(strings.Join(problems, "\n"))
	}
	keys := slices.SortedFunc(maps.Keys(data), func(a, b key) int {
		return cmp.Or(cmp.Compare(a.sku, b.sku), cmp.Compare(floorOrder(a.floor), floorOrder(b.floor)), cmp.Compare(a.size, b.size))
	})
	for _, k := range keys {
		if len(data[k]) < minPorts {
			problems = append(problems, fmt.Sprintf("SKU %s %s %s: %d port(s) measured, fewer than %d: a floor from so few ports is a guess about the rest; "+
				"measure more ports, or lower the bar with --min-ports %d", k.sku, k.floor, thresholds.SizeName(k.size), len(data[k]), minPorts, len(data[k])))
			continue
		}
		largest := !slices.ContainsFunc(keys, func(o key) bool { return o.sku == k.sku && o.floor == k.floor && o.size > k.size })
		row, err := compute(k, data[k], skus[k.sku], dates, largest, st)
		if err != nil {
			problems = append(problems, err.Error())
			continue
		}
		res.Rows = append(res.Rows, row)
	}
	if len(problems) > 0 {
		return nil, errors.New(strings.Join(problems, "\n"))
	}
	for _, r := range res.Rows {
		setFloor(skus[r.SKU], r)
	}
	var out []thresholds.SKU
	for _, k := range base.SKUs { // the base set's order: matching order
		if c := skus[k.Name]; c != nil {
			out = append(out, *c)
		}
	}
	res.Overlay, err = thresholds.Marshal(header(inputs, st), out)
	if err != nil {
		return nil, err
	}
	// What is written must load as the overlay it is meant to be.
	if _, err := thresholds.ParseOverlay(base, "the calibrated overlay", res.Overlay); err != nil {
		return nil, fmt.Errorf("calibrate wrote an overlay that does not load (a bug): %w", err)
	}
	return res, nil
}

func floorOrder(f string) int { return slices.Index([]string{"write", "read", "gpuDirectWrite"}, f) }

// passed says why the run may not be calibrated from ("" when it may),
// and notes what --accept-below-floor let through.
func passed(in Input, id string, accept bool) (problem string, notes []string) {
	var bad, missed []string
	for _, c := range in.Run.Checks {
		switch {
		case c.Status.Passing(), in.Run.Allowed(c):
		case accept && missedFloorOnly(c):
			missed = append(missed, c.Key())
		default:
			bad = append(bad, fmt.Sprintf("%s %s", c.Key(), c.Status))
		}
	}
	if len(bad) > 0 {
		shown := bad
		if len(shown) > 5 {
			shown = append(shown[:5:5], fmt.Sprintf("and %d more", len(bad)-5))
		}
		fix := "calibrate from runs that passed: fix what failed first (rdmasuite report " + in.Name + " says what and how)"
		if accept {
			fix += "; --accept-below-floor lets through only bandwidth checks that measured and missed their floor, not errors, not-run, link or port checks"
		} else {
			fix += ", or, when the only failures are bandwidth figures below their floor (the floor is what you calibrate), pass --accept-below-floor"
		}
		return fmt.Sprintf("%s: run %s did not pass: %d check(s) did not: %s; %s", in.Name, id, len(bad), strings.Join(shown, "; "), fix), nil
	}
	if !in.Run.Passed() && len(missed) == 0 {
		return fmt.Sprintf("%s: run %s measured nothing (no check passed): nothing to calibrate from", in.Name, id), nil
	}
	if len(missed) > 0 {
		notes = append(notes, fmt.Sprintf("%s: run %s: %d bandwidth check(s) below their floor used (--accept-below-floor)", in.Name, id, len(missed)))
	}
	return "", notes
}

// missedFloorOnly says c is a bandwidth check that failed only because a
// figure it measured missed its floor: its diagnosis opens with that
// figure's judgement, and nothing else of it failed.
func missedFloorOnly(c reports.Check) bool {
	id, _ := strings.CutSuffix(c.ID, "/loopback")
	// A port that trained below the SKU's link rate is a link fault,
	// not a figure to calibrate from (the verdict says so in the diagnosis).
	if c.Status != reports.Fail || !slices.Contains(belowFloorIDs, id) || len(c.HostFaults) > 0 || len(c.HostCauses) > 0 ||
		strings.Contains(c.Diagnosis, "link trained down") {
		return false
	}
	for _, m := range c.Measured {
		if m.Threshold != nil && !m.Threshold.Met(m.Value) && strings.HasPrefix(c.Diagnosis, m.Name+" = ") {
			return true
		}
	}
	return false
}

// compute is one floor from its ports' figures.
// largest: no larger size of the floor was measured, so without a floor
// of its own the size was judged against the general floor.
func compute(k key, ports map[string]*sample, sku *thresholds.SKU, dates map[string]string, largest bool, st statistic) (Row, error) {
	row := Row{SKU: k.sku, Floor: k.floor, Size: k.size, Ports: len(ports), st: st}
	names := slices.Sorted(maps.Keys(ports))
	perPort := make([]float64, len(names))
	runs := map[string]bool{}
	for i, name := range names {
		s := ports[name]
		perPort[i], _ = stats.Median(s.values)
		row.Figures += len(s.values)
		for r := range s.runs {
			runs[r] = true
		}
	}
	row.Median, _ = stats.Median(perPort)
	row.MAD, _ = stats.MedianAbsoluteDeviation(perPort)
	floor := row.Median - max(st.k*MADScale*row.MAD, st.margin*row.Median)
	if link := sku.LinkRateGbps.Value; link != nil && floor > *link {
		floor, row.Capped = *link, true
	}
	floor = roundDown(floor)
	if floor <= 0 || math.IsNaN(floor) {
		return row, fmt.Errorf("SKU %s %s %s: the ports' figures spread too widely for a floor (median %.4g Gb/s, MAD %.3g over %d ports): "+
			"the floor would be %.4g; find why the ports differ (rdmasuite report names the slow ones) before calibrating",
			k.sku, k.floor, thresholds.SizeName(k.size), row.Median, row.MAD, row.Ports, floor)
	}
	row.Value = floor
	for i, name := range names {
		if perPort[i] < floor {
			row.Below = append(row.Below, name)
		}
	}
	row.Runs = slices.Sorted(maps.Keys(runs))
	if b, err := sku.BandwidthFloorAt(k.floor, k.size); err == nil {
		row.Was = fmt.Sprintf("%.4g", b.Value)
	} else if b, err := sku.BandwidthFloor(k.floor); err == nil && largest {
		row.Was = fmt.Sprintf("%.4g (general)", b.Value)
	}
	var ds []string
	for _, r := range row.Runs {
		ds = append(ds, dates[r])
	}
	row.dates = slices.Compact(slices.Sorted(slices.Values(ds)))
	return row, nil
}

// roundDown rounds a positive x down to 4 significant digits, so the
// file says 181.2, not 181.23456789 (never up: a floor only loosens).
func roundDown(x float64) float64 {
	if x <= 0 || math.IsNaN(x) || math.IsInf(x, 0) {
		return x
	}
	p := math.Pow(10, math.Floor(math.Log10(x))-3)
	v, _ := strconv.ParseFloat(strconv.FormatFloat(math.Floor(x/p+1e-9)*p, 'g', 4, 64), 64)
	return v
}

// Source is the source string of row's floor: the ports, the runs, the
// statistic and its figures, so that the file says where its number
// came from.
func (r Row) Source() string {
	dates := strings.Join(r.dates, ", ")
	if len(r.dates) > 2 {
		dates = r.dates[0] + " … " + r.dates[len(r.dates)-1]
	}
	capped := ""
	if r.Capped {
		capped = ", capped at the link rate"
	}
	return fmt.Sprintf("%s%d ports of runs %s (%s): median %.4g Gb/s, MAD %.3g, floor = median − max(%g·%g·MAD, %g %%)%s (rdmasuite thresholds calibrate)",
		thresholds.CalibratedPrefix, r.Ports, strings.Join(r.Runs, ", "), dates, r.Median, r.MAD, r.st.k, MADScale, r.st.margin*100, capped)
}

// setFloor gives k's floor r.Floor a floor of its own for r.Size: the
// calibrated one, replacing one for the same size however it was spelt.
func setFloor(k *thresholds.SKU, r Row) {
	var f *thresholds.Floor
	switch r.Floor {
	case "write":
		f = &k.Write
	case "read":
		f = &k.Read
	default:
		f = &k.GPUDirectWrite
	}
	by := map[string]thresholds.Floor{}
	for name, sub := range f.BySize {
		if n, err := thresholds.ParseSize(name); err != nil || n != r.Size {
			by[name] = sub
		}
	}
	v := r.Value
	by[thresholds.SizeName(r.Size)] = thresholds.Floor{Gbps: &v, Source: r.Source()}
	f.BySize = by
}

// header is the overlay's opening comment.
func header(inputs []Input, st statistic) string {
	var files []string
	for _, in := range inputs {
		files = append(files, in.Name)
	}
	return fmt.Sprintf(`Calibrated bandwidth floors (rdmasuite thresholds calibrate) from %s.
Lay it over the thresholds the runs used: the suite's --thresholds-overlay FILE
(rdmasuite thresholds check --overlay FILE shows what it replaces). Each SKU here
replaces the SKU of its name whole: its other fields are copies of that SKU's.
Each calibrated floor is a floor per message size (bySize), its source says from
what: per port the median of its figures; over the ports
floor = median - max(%g x %g x MAD, %g %% of the median), rounded down to 4 digits,
never above the link rate (robust to a few bad ports; 4 robust standard
deviations by default, at least the run-to-run variation of one port).`, strings.Join(files, ", "), st.k, MADScale, st.margin*100)
}

func dedupe(xs []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, x := range xs {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}
