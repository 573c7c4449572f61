// Package bw is the RDMA bandwidth test, written against an Endpoint
// interface so the logic (size sweep, tx depth, CQ moderation, multi-QP,
// out-of-band exchange, perftest-compatible arithmetic) is plain Go and
// unit-testable; cmd/rdmaprobe plugs in the verbs implementation.
package bw

import (
	"github.com/rdmasuite/rdmasuite/workloads/lat"
	"math"
	"time"
)

// Units, as perftest uses them (linux-rdma/perftest, perftest_resources.c
// print_report_bw): MB = 2^20 bytes; Gb = 10^9 bits; MsgRate in 10^6 msg/s.
const (
	mebibyte = 1 << 20
	gigabit  = 1e9
)

// Figures are one direction's numbers for one message size.
type Figures struct {
	Bytes       int     `json:"bytes"`
	Iterations  int     `json:"iterations"` // iters × QPs, perftest's #iterations
	PeakGbps    float64 `json:"bwPeakGbps"`
	AvgGbps     float64 `json:"bwAvgGbps"`
	PeakMBps    float64 `json:"bwPeakMBps"`
	AvgMBps     float64 `json:"bwAvgMBps"`
	MsgRateMpps float64 `json:"msgRateMpps"`
	ElapsedSec  float64 `json:"elapsedSec"`
	// Latency: a READ run of one QP at tx depth 1 is ib_read_lat's loop,
	// and this is its report (workloads/lat); nil for any other shape.
	Latency *lat.Summary `json:"latency,omitempty"`
	// Disturbance is what competed with the measuring thread during the
	// timed loop (nil where the endpoint cannot tell).
	Disturbance *Disturbance `json:"disturbance,omitempty"`
}

// Compute applies perftest's formulas: over elapsed time T (last completion
// minus first post), N operations of size bytes give
// BW = size·N/T and MsgRate = N/T/10^6.
func Compute(size, n int, elapsed time.Duration, peak time.Duration) Figures {
	f := Figures{Bytes: size, Iterations: n, ElapsedSec: elapsed.Seconds()}
	if elapsed <= 0 || n == 0 {
		return f
	}
	bytesPerSec := float64(size) * float64(n) / elapsed.Seconds()
	f.AvgMBps = bytesPerSec / mebibyte
	f.AvgGbps = bytesPerSec * 8 / gigabit
	f.MsgRateMpps = float64(n) / elapsed.Seconds() / 1e6
	if peak > 0 {
		pb := float64(size) / peak.Seconds()
		f.PeakMBps = pb / mebibyte
		f.PeakGbps = pb * 8 / gigabit
	}
	return f
}

// peakSampleLimit bounds the O(n²) peak search. Above it the search runs
// over every k-th post/completion, which can only make the window coarser
// (peak a little lower), never higher than what was measured.
const peakSampleLimit = 4000

// PeakPerOp is perftest's peak: the shortest average time per operation
// over any window of consecutive operations, min over i ≤ j of
// (completed[j] − posted[i]) / (j − i + 1). Times are offsets from the
// first post. Returns 0 when there is nothing to measure.
func PeakPerOp(posted, completed []time.Duration) time.Duration {
	n := min(len(posted), len(completed))
	if n == 0 {
		return 0
	}
	stride := 1
	if n > peakSampleLimit {
		stride = (n + peakSampleLimit - 1) / peakSampleLimit
	}
	best := time.Duration(math.MaxInt64)
	for i := 0; i < n; i += stride {
		for j := i; j < n; j += stride {
			d := completed[j] - posted[i]
			if d <= 0 {
				continue
			}
			if t := d / time.Duration(j-i+1); t < best {
				best = t
			}
		}
	}
	if best == time.Duration(math.MaxInt64) {
		return 0
	}
	return best
}

// Add sums two directions, as perftest prints bidirectional results (local +
// remote).
func (f Figures) Add(o Figures) Figures {
	return Figures{Bytes: f.Bytes, Iterations: f.Iterations + o.Iterations,
		PeakGbps: f.PeakGbps + o.PeakGbps, AvgGbps: f.AvgGbps + o.AvgGbps,
		PeakMBps: f.PeakMBps + o.PeakMBps, AvgMBps: f.AvgMBps + o.AvgMBps,
		MsgRateMpps: f.MsgRateMpps + o.MsgRateMpps, ElapsedSec: max(f.ElapsedSec, o.ElapsedSec)}
}
