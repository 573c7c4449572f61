// Package lat turns a latency test's post timestamps into the figures
// perftest's ib_write_lat, ib_read_lat and ib_send_lat print, computed the
// way perftest computes them (print_report_lat in perftest's
// src/perftest_parameters.c, read from linux-rdma/perftest at 00b55b6):
//
//   - a sample is the gap between two consecutive posts: one whole
//     iteration (a ping-pong round trip, or one READ's round trip);
//   - the samples are sorted and the 2 largest dropped;
//   - t_min is the smallest, t_max the largest kept (the second-largest
//     sample), t_typical the median of the kept ones (the mean of the two
//     middle ones for an even count), t_avg their mean, 99 % and 99.9 %
//     the kept sample at index ceil(n·0.99) and ceil(n·0.999) (0-based,
//     which can be the first dropped one, as in perftest);
//   - write and send latency are half the round trip, read latency is the
//     whole READ.
//
// t_stdev is the true standard deviation of the kept samples: perftest
// truncates each deviation to whole microseconds (int temporaries), which
// reads 0 for sub-microsecond spread.
package lat

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"time"
)

// Tail is how many of the largest samples perftest drops (LAT_MEASURE_TAIL).
const Tail = 2

// Summary is one latency test in microseconds.
type Summary struct {
	Samples int     `json:"samples"` // kept samples
	Min     float64 `json:"tMinUs"`
	Max     float64 `json:"tMaxUs"`
	Typical float64 `json:"tTypicalUs"`
	Avg     float64 `json:"tAvgUs"`
	Stdev   float64 `json:"tStdevUs"`
	P99     float64 `json:"p99Us"`
	P999    float64 `json:"p999Us"`
	Halved  bool    `json:"halved"` // the round trip was halved (write, send)
}

// FromPosts computes the summary from the cycle counter at each post
// (mhz: counter ticks per microsecond); halve for write and send.
func FromPosts(posts []uint64, mhz float64, halve bool) (Summary, error) {
	if mhz <= 0 || math.IsNaN(mhz) || math.IsInf(mhz, 0) {
		return Summary{}, fmt.Errorf("lat: clock rate %g MHz: want a positive rate", mhz)
	}
	if len(posts) < Tail+2 {
		return Summary{}, fmt.Errorf("lat: %d posts give %d samples, fewer than the %d perftest drops plus one", len(posts), max(len(posts)-1, 0), Tail)
	}
	factor := mhz
	if halve {
		factor *= 2
	}
	delta := make([]float64, len(posts)-1)
	for i := range delta {
		if posts[i+1] < posts[i] {
			return Summary{}, errors.New("lat: the post timestamps go backwards: the cycle counter is not monotonic on this CPU")
		}
		delta[i] = float64(posts[i+1]-posts[i]) / factor
	}
	return summarize(delta, halve), nil
}

// FromDurations is FromPosts for post times already converted to
// durations since the first post (the bandwidth core's record).
func FromDurations(posts []time.Duration, halve bool) (Summary, error) {
	cycles := make([]uint64, len(posts))
	for i, d := range posts {
		if d < 0 {
			return Summary{}, errors.New("lat: a post time before the first post")
		}
		cycles[i] = uint64(d) // nanoseconds: 1000 per microsecond
	}
	return FromPosts(cycles, 1000, halve)
}

// summarize is print_report_lat's arithmetic on the gaps in µs.
func summarize(delta []float64, halve bool) Summary {
	slices.Sort(delta)
	n := len(delta) - Tail
	kept := delta[:n]
	s := Summary{Samples: n, Min: delta[0], Max: delta[n], Halved: halve}
	if n%2 == 0 {
		s.Typical = (kept[n/2] + kept[n/2-1]) / 2
	} else {
		s.Typical = kept[n/2]
	}
	var sum float64
	for _, v := range kept {
		sum += v
	}
	s.Avg = sum / float64(n)
	var sq float64
	for _, v := range kept {
		sq += (v - s.Avg) * (v - s.Avg)
	}
	s.Stdev = math.Sqrt(sq / float64(n))
	at := func(q float64) float64 { return delta[min(len(delta)-1, int(math.Ceil(float64(n)*q)))] }
	s.P99, s.P999 = at(0.99), at(0.999)
	return s
}
