package stall

import (
	"time"

	"github.com/montanaflynn/stats"
)

// Op is one measured operation: for the writer one durability op (a
// record's pwrite and fsync; N pwrites ending in one fsync with
// fsync-every=N; one O_DIRECT pwrite), for the reader the read of one newly
// visible record. Start and End come from time.Now, so End.Sub(Start) is
// monotonic while the wall clock in them lines up with other nodes' logs.
type Op struct {
	Seq     uint64 // first record of the op
	Records int
	Start   time.Time
	End     time.Time
}

// InFlight is an op that had not returned when the run stopped.
type InFlight struct {
	Seq   uint64
	Start time.Time
}

// Gap is an interval without a completed op.
type Gap struct {
	Ms    float64   `json:"ms"`
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
	// InFlightSeq is the record whose op ended the gap (or, ongoing, the
	// one still in flight at the stop).
	InFlightSeq uint64 `json:"inFlightSeq"`
	// Ongoing: the gap ran to the stop with I/O still hung.
	Ongoing bool `json:"ongoing"`
}

// LatencyMs is op latency outside the listed stalls, in milliseconds.
type LatencyMs struct {
	P50 float64 `json:"p50"`
	P99 float64 `json:"p99"`
	Max float64 `json:"max"`
	Ops int     `json:"ops"`
}

// Throughput is acknowledged records over the run, stalls included.
type Throughput struct {
	RecordsPerSec float64 `json:"recordsPerSec"`
	BytesPerSec   float64 `json:"bytesPerSec"`
}

// Timeline is what Analyze finds in an op list.
type Timeline struct {
	Ops          int
	Records      int64
	Latency      LatencyMs
	LongestGap   *Gap
	Stalls       []Gap // in time order, the first MaxListed
	StallCount   int
	StallOngoing bool
	Throughput   Throughput
}

// MaxListed caps the stall and I/O-error lists in a result (the counts are
// complete): a soft mount failing every retry for minutes would otherwise
// make the envelope megabytes long.
const MaxListed = 100

type interval struct{ start, end time.Time }

// Analyze finds the gaps between consecutive op completions (the first op's
// gap counts from its own start), plus, when an op was in flight at the
// stop, the gap from the last completion to stoppedAt (ongoing). Gaps
// longer than threshold are stalls; latency percentiles are over the ops
// that overlap no stall, so a 27 s stall does not hide in (or inflate) the
// steady-state numbers.
func Analyze(ops []Op, inFlight *InFlight, startedAt, stoppedAt time.Time, threshold time.Duration, recordBytes int) Timeline {
	tl := Timeline{Ops: len(ops), Stalls: []Gap{}}
	var longest *Gap
	var stallSpans []interval
	consider := func(start, end time.Time, seq uint64, ongoing bool) {
		d := end.Sub(start)
		g := Gap{Ms: ms(d), Start: start, End: end, InFlightSeq: seq, Ongoing: ongoing}
		if longest == nil || d > longest.End.Sub(longest.Start) {
			longest = &g
		}
		if d > threshold {
			stallSpans = append(stallSpans, interval{start, end})
			tl.StallCount++
			if len(tl.Stalls) < MaxListed {
				tl.Stalls = append(tl.Stalls, exported(g))
			}
			if ongoing {
				tl.StallOngoing = true
			}
		}
	}
	for i, op := range ops {
		tl.Records += int64(op.Records)
		prev := op.Start
		if i > 0 {
			prev = ops[i-1].End
		}
		consider(prev, op.End, op.Seq, false)
	}
	if inFlight != nil {
		prev := inFlight.Start
		if len(ops) > 0 {
			prev = ops[len(ops)-1].End
		}
		consider(prev, stoppedAt, inFlight.Seq, true)
	}
	if longest != nil {
		g := exported(*longest)
		tl.LongestGap = &g
	}

	var lat stats.Float64Data
	for _, op := range ops {
		overlaps := false
		for _, s := range stallSpans {
			if op.Start.Before(s.end) && op.End.After(s.start) {
				overlaps = true
				break
			}
		}
		if !overlaps {
			lat = append(lat, ms(op.End.Sub(op.Start)))
		}
	}
	tl.Latency.Ops = len(lat)
	if len(lat) > 0 {
		tl.Latency.P50, _ = stats.PercentileNearestRank(lat, 50)
		tl.Latency.P99, _ = stats.PercentileNearestRank(lat, 99)
		tl.Latency.Max, _ = stats.Max(lat)
	}
	if secs := stoppedAt.Sub(startedAt).Seconds(); secs > 0 {
		tl.Throughput.RecordsPerSec = float64(tl.Records) / secs
		tl.Throughput.BytesPerSec = float64(tl.Records) * float64(recordBytes) / secs
	}
	return tl
}

// exported drops the monotonic reading and shows UTC wall clock.
func exported(g Gap) Gap {
	g.Start, g.End = g.Start.UTC(), g.End.UTC()
	return g
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
