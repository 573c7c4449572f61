package verdict

import (
	"fmt"
	"slices"
	"strings"

	"github.com/rdmasuite/rdmasuite/reports"
	"github.com/rdmasuite/rdmasuite/thresholds"
	"github.com/rdmasuite/rdmasuite/workloads/bw"
	"github.com/rdmasuite/rdmasuite/workloads/lat"
	"github.com/rdmasuite/rdmasuite/workloads/probeout"
)

// judgeRail fills one (rail pair, op) check.
//
// others are further results the client printed for the same rail pair
// (a duplicate: each (node, rail, op, size) is measured exactly once).
//
// Everything the client printed is read and recorded first, and only then
// is one outcome chosen, in order of precedence: so a check keeps all its
// figures and notes whichever reason decides it.
func (in BWInput) judgeRail(c *reports.Check, op string, rr bw.RailResult, others []bw.RailResult, srvByRail map[string]bw.RailResult) {
	m := in.measures()
	port := rr.Local.Name()
	rate, rateNote := lineRateOf(rr.Local, rr.Peer, in.Client.Node == in.Server.Node)
	if rateNote != "" && !m.latencyStats {
		c.Evidence = append(c.Evidence, rateNote)
	}
	f := m.readFigures(op, c.Rail, opRuns(op, rr, others), rate)
	// A bandwidth floor must exist; a latency ceiling and a message-rate
	// floor are optional (the check then stays not-run with its values,
	// unless the rail failed).
	judged, noBound, err := in.judgedBounds(op)
	missing := in.recordSizes(c, op, port, judged, f)
	if err != nil {
		setOutcome(c, reports.Error, err.Error(), "")
		return
	}
	// Every judged size is judged; the first that missed its bound
	// speaks for the rail, and the others that missed are named with it.
	size, st := judged[0].size, reports.Pass
	var jm reports.Measurement
	var whys []string
	for i, jb := range judged {
		m1, st1, why1 := in.recordJudged(c, op, port, jb.size, f, jb.bound, noBound)
		if i == 0 || st1 != reports.Pass && st == reports.Pass {
			size, jm, st = jb.size, m1, st1
		}
		if st1 != reports.Pass && why1 != "" {
			whys = append(whys, why1)
		}
	}
	why := strings.Join(whys, "; ")
	srvErr := serverOwnError(rr, op, srvByRail)
	// The port's own counters must back the bytes each size claims.
	shorts, impossible, bytesNote := in.confirmBytes(op, f.run, rr)
	f.faults = append(f.faults, impossible...)
	if bytesNote != "" {
		c.Evidence = append(c.Evidence, bytesNote)
	}
	// This op's own error on the rail; another op's is only named.
	own, other := opError(rr, op)
	if other != nil {
		c.Evidence = append(c.Evidence, fmt.Sprintf("%s on this rail failed: %s (its own check says so; %s ran in its own session and is judged on what it measured)",
			strings.SplitN(other.Message, ":", 2)[0], other.Message, op))
	}
	switch {
	case own != nil:
		in.railFailed(c, port, own, srvErr, missing)
	case len(f.faults) > 0:
		setOutcome(c, reports.Error, "figures that cannot be true: "+strings.Join(f.faults, "; ")+
			" (a figure is judged only when the facts printed beside it agree with it)", FixImpossible)
	case len(shorts) > 0:
		setOutcome(c, reports.Error, "the port's own counters do not back the measurement: "+strings.Join(shorts, "; "), FixCountersShort)
	case srvErr != nil:
		in.serverFailedRail(c, rr, srvErr)
	case len(missing) > 0:
		setOutcome(c, reports.Fail, fmt.Sprintf("requested size(s) %s not measured on %s, and the probe reported no error for them", strings.Join(missing, ", "), c.Rail), "")
	case m.againstAlone != nil:
		m.againstAlone(in, c, op, rr, f.run)
	case noBound != nil:
		// A SKU without a latency ceiling or message-rate floor: measured,
		// not judged.
		setOutcome(c, reports.NotRun, noBound.Error(), "")
	case st == reports.Fail:
		in.missedBound(c, rr, size, f, jm, why)
	default:
		c.Status = st
	}
}

// opRuns is every run of op the client printed for the pair, in the order
// printed: more than one is a duplicate, which must be seen, not silently
// resolved by taking one.
func opRuns(op string, rr bw.RailResult, others []bw.RailResult) []*bw.Report {
	var runs []*bw.Report
	for _, x := range append([]bw.RailResult{rr}, others...) {
		for i := range x.Runs {
			if string(x.Runs[i].Params.Op) == op {
				runs = append(runs, &x.Runs[i])
			}
		}
	}
	return runs
}

// railFigures is what the client's run of one op on one rail pair says,
// read once so that every later step of the verdict sees the same figures.
type railFigures struct {
	run *bw.Report // the first run printed; nil when there is none
	// faults say why figures cannot be taken as measured: a duplicate
	// run or size, or a figure its own facts contradict.
	faults []string
	// The metric of each size the run completed (average bandwidth,
	// perftest's average latency or its MsgRate); a size without it is
	// missing. A latency run's summary is kept for its typical/p99/max.
	measured map[int]float64
	first    map[int]bw.Figures // each size's first figures
	lats     map[int]*lat.Summary
}

// readFigures reads runs (opRuns) of op on rail. Every size's figures are
// checked against the facts beside them (rate: the line rate, 0 when
// unknown), so that an impossible figure is never judged.
func (m *metric) readFigures(op, rail string, runs []*bw.Report, rate float64) railFigures {
	f := railFigures{measured: map[int]float64{}, first: map[int]bw.Figures{}, lats: map[int]*lat.Summary{}}
	if len(runs) > 1 {
		var vals []string
		for _, r := range runs {
			for _, sr := range r.Results {
				vals = append(vals, SizeName(sr.Local.Bytes)+" "+m.valueText(sr.Local))
			}
		}
		f.faults = append(f.faults, fmt.Sprintf("%s on %s measured twice in the client's output (%s): which one is the measurement is unknown",
			op, rail, strings.Join(vals, "; ")))
	}
	if len(runs) == 0 {
		return f
	}
	f.run = runs[0]
	for _, r := range f.run.Results {
		if prev, dup := f.first[r.Local.Bytes]; dup {
			f.faults = append(f.faults, fmt.Sprintf("%s %s on %s measured twice in one run (%s, then %s)",
				op, SizeName(r.Local.Bytes), rail, m.valueText(prev), m.valueText(r.Local)))
			continue
		}
		f.first[r.Local.Bytes] = r.Local
		for _, fault := range figureFaults(r.Local, m, rate) {
			f.faults = append(f.faults, SizeName(r.Local.Bytes)+": "+fault)
		}
		if v, ok := m.read(r.Local); ok {
			f.measured[r.Local.Bytes] = v
		}
		if m.latencyStats && r.Local.Latency != nil {
			f.lats[r.Local.Bytes] = r.Local.Latency
		}
	}
	return f
}

// valueText is a size's figure as a fault message quotes it: a duplicate
// is shown with both values so that a reader can tell them apart.
func (m *metric) valueText(f bw.Figures) string {
	if v, ok := m.read(f); ok {
		return fmt.Sprintf("%g %s", v, m.unit)
	}
	return "no value"
}

// measurementName names a size's figure in the check's measurements.
func (m *metric) measurementName(op string, size int) string {
	return fmt.Sprintf("%s_%s_%s", op, SizeName(size), m.suffix)
}

// judgedSize is the requested size held to the SKU's general bound: the
// largest, or for a metric judged at its smallest size (message rate) the
// smallest.
func (in BWInput) judgedSize() int {
	if in.measures().smallest {
		return slices.Min(in.Sizes)
	}
	return slices.Max(in.Sizes)
}

// sizedBound is one requested size and the bound it is judged against.
type sizedBound struct {
	size  int
	bound thresholds.Bound
}

// judgedBounds are the requested sizes judged on every rail of op, in
// ascending order, each with its bound: every size for which the SKU's
// floor gives a floor of its own (bySize), and judgedSize against the
// SKU's general bound unless it has its own. The other requested sizes
// are recorded, not judged. Never empty: on an error (the SKU lacks a
// bound it must have) it still names judgedSize, so that its figure is
// not recorded as an unjudged one.
func (in BWInput) judgedBounds(op string) (judged []sizedBound, noBound, err error) {
	m := in.measures()
	largest := in.judgedSize()
	bound, noBound, err := m.bound(in.SKU, op)
	if err != nil || noBound != nil || m.floor == nil || in.SKU == nil {
		return []sizedBound{{largest, bound}}, noBound, err
	}
	key := m.floor(op)
	own := in.SKU.FloorSizes(key)
	sizes := slices.Clone(in.Sizes)
	slices.Sort(sizes)
	for _, size := range slices.Compact(sizes) {
		if !slices.Contains(own, size) {
			if size == largest {
				b := bound
				if len(own) > 0 {
					b.Source = fmt.Sprintf("the %s floor for sizes without a floor of their own (bySize has none for %s): %s", key, SizeName(size), b.Source)
				}
				judged = append(judged, sizedBound{size, b})
			}
			continue
		}
		b, err := in.SKU.BandwidthFloorAt(key, size)
		if err != nil {
			return []sizedBound{{largest, bound}}, nil, err
		}
		if key != op && op != "write" { // GPUDirect: the gpuDirectWrite floor judges reads too
			b.Source = fmt.Sprintf("the %s floor (the SKU has no GPUDirect %s floor): %s", key, op, b.Source)
		}
		judged = append(judged, sizedBound{size, b})
	}
	return judged, nil, nil
}

// recordSizes records every requested size that was measured and is not
// judged, so the report keeps the whole sweep, and returns the sizes not
// measured, which keep the check from passing.
func (in BWInput) recordSizes(c *reports.Check, op, port string, judged []sizedBound, f railFigures) (missing []string) {
	m := in.measures()
	for _, size := range in.Sizes {
		v, ok := f.measured[size]
		if !ok {
			missing = append(missing, SizeName(size))
			continue
		}
		if !slices.ContainsFunc(judged, func(j sizedBound) bool { return j.size == size }) {
			c.Measured = append(c.Measured, reports.Measurement{Name: m.measurementName(op, size), Node: in.Client.Node, Port: port, Value: v, Unit: m.unit})
		}
	}
	return missing
}

// recordJudged judges the judged size against bound and records its
// figure, with a latency run's spread and any disturbance beside it. The
// judgement is returned, not applied: an error found later on the rail
// outranks it.
func (in BWInput) recordJudged(c *reports.Check, op, port string, size int, f railFigures, bound thresholds.Bound,
	noBound error) (reports.Measurement, reports.Status, string) {
	m := in.measures()
	var judged *float64
	if v, ok := f.measured[size]; ok {
		judged = &v
	}
	jm, st, why := reports.Judge(m.measurementName(op, size), m.unit, in.Client.Node, port, judged,
		reports.Threshold{Op: bound.Op, Value: bound.Value, Source: bound.Source})
	// Nothing measured is said in the diagnosis, never as a 0 value.
	if judged == nil {
		return jm, st, why
	}
	if noBound != nil {
		jm.Threshold = nil
	}
	c.Measured = append(c.Measured, jm)
	if l := f.lats[size]; l != nil {
		for _, x := range []struct {
			what string
			v    float64
		}{{"typical", l.Typical}, {"p99", l.P99}, {"max", l.Max}} {
			c.Measured = append(c.Measured, reports.Measurement{Name: fmt.Sprintf("%s_%s_lat_%s", op, SizeName(size), x.what),
				Node: in.Client.Node, Port: port, Value: x.v, Unit: m.unit})
		}
	}
	if fs := f.first[size]; m.latencyStats && fs.Disturbance != nil {
		c.Evidence = append(c.Evidence, DisturbanceNote(fmt.Sprintf("%s %s on %s", op, SizeName(size), c.Rail), fs.Disturbance))
	}
	return jm, st, why
}

// serverOwnError is the server's own error for this very pair and op, if
// it recorded one: a "peer" error there only echoes the client and is not
// its own.
func serverOwnError(rr bw.RailResult, op string, srvByRail map[string]bw.RailResult) *probeout.Error {
	if rr.Peer == nil {
		return nil
	}
	if e, _ := opError(srvByRail[pairKey(*rr.Peer, &rr.Local)], op); e != nil && e.Kind != probeout.KindPeer {
		return e
	}
	return nil
}

// railFailed sets the outcome of a rail whose op reported its own error.
// "The peer failed" says nothing of why: the server's own result for its
// rail does, so it is the one explained.
func (in BWInput) railFailed(c *reports.Check, port string, own, srvErr *probeout.Error, missing []string) {
	side, perr := in.Client, own
	if perr.Kind == probeout.KindPeer && srvErr != nil {
		side, perr = in.Server, srvErr
	}
	st, msg, fix := in.explain(side, port, perr)
	if len(missing) > 0 {
		msg += fmt.Sprintf(" (not measured: %s)", strings.Join(missing, ", "))
	}
	setOutcome(c, st, msg, fix)
	addHostFault(c, side, port, perr)
}

// serverFailedRail sets the outcome of a rail the client measured while
// the server recorded an error of its own for this very pair: not a pass
// until someone looks, and an error rather than a failure, as with the
// other server-side trouble on a clean client measurement (serverTrouble).
func (in BWInput) serverFailedRail(c *reports.Check, rr bw.RailResult, srvErr *probeout.Error) {
	st, msg, fix := in.explain(in.Server, rr.Peer.Name(), srvErr)
	if st == reports.Fail {
		st = reports.Error
	}
	setOutcome(c, st, "the client measured this rail but the server reported: "+msg, fix)
	addHostFault(c, in.Server, rr.Peer.Name(), srvErr)
}

// addHostFault records on c what a side's probe saw on its own host that
// blames the host whatever the pairing: a port it read as not ACTIVE, or
// no RDMA device in a pod of a node that advertises one.
func addHostFault(c *reports.Check, s Side, port string, e *probeout.Error) {
	if e == nil || s.Node == "" {
		return
	}
	var f reports.HostFault
	switch {
	case e.Kind == probeout.KindLinkDown && port != "":
		f = reports.HostFault{Node: s.Node, Port: port, What: "port not ACTIVE (" + e.Message + ")"}
	case e.Kind == probeout.KindNoDevice && port == "":
		f = reports.HostFault{Node: s.Node, What: "no RDMA device visible in pod " + s.Pod + " (" + e.Message + ")"}
	default:
		return
	}
	if !slices.Contains(c.HostFaults, f) {
		c.HostFaults = append(c.HostFaults, f)
	}
}

// missedBound fails a rail whose judged size missed the SKU's bound (why:
// the judgement's diagnosis), adding what usually explains the miss: a
// port trained below the SKU's link rate, or a latency run disturbed by
// other traffic, which has its own fix.
func (in BWInput) missedBound(c *reports.Check, rr bw.RailResult, size int, f railFigures, jm reports.Measurement, why string) {
	m := in.measures()
	msg := why
	if m.linkRateNote && rr.Local.RateGbps > 0 && in.SKU.LinkRateGbps.Value != nil && rr.Local.RateGbps < *in.SKU.LinkRateGbps.Value {
		msg += fmt.Sprintf("; port %s runs at %g Gb/s, the SKU expects %g Gb/s (link trained down: cable or switch port)",
			rr.Local.Name(), rr.Local.RateGbps, *in.SKU.LinkRateGbps.Value)
	}
	fix := m.fix
	if m.latencyStats {
		if note, contended := contendedLatency(f.first[size], f.lats[size], jm, in.Client.Node); note != "" {
			msg += note
			if contended {
				fix = FixContendedLatency
			}
		}
	}
	setOutcome(c, reports.Fail, msg, fix)
}

// opError is op's own error on a rail: the run's own error when the probe
// attributes errors per op (a run carries one), else the rail's (an older
// probe, or a failure of the whole rail such as a down port: then every
// op fails with it). other is the rail's error when it is another op's
// only: named in the evidence, never this op's result.
func opError(rr bw.RailResult, op string) (own, other *probeout.Error) {
	perOp := false
	for _, r := range rr.Runs {
		if r.Error == nil {
			continue
		}
		perOp = true
		if string(r.Params.Op) == op && own == nil {
			own = &probeout.Error{Kind: r.Error.Kind, Message: op + ": " + r.Error.Message}
		}
	}
	switch {
	case !perOp:
		return rr.Error, nil
	case own != nil:
		return own, nil
	}
	return nil, rr.Error
}
