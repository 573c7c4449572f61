package bwverbs

import (
	"sync"
	"time"

	"github.com/rdmasuite/rdmasuite/workloads/bw"
	"github.com/rdmasuite/rdmasuite/workloads/verbs"
)

var calibration struct {
	once       sync.Once
	nsPerCycle float64
}

// calibrate measures the cycle counter against the monotonic clock over
// 100 ms, from two bracketed reads (verbs.ClockPair). perftest reads "cpu
// MHz" from /proc/cpuinfo instead (its own 2 % check aside), which is the
// boot-time estimate, or the core's current frequency where that is not
// the TSC's; measuring is neither. Reading time.Now() and the counter in
// two separate calls made the first calibration of a process 0.16 % slow
// in a Soft-RoCE guest (2096.56 against the kernel's refined 2100.00 MHz),
// and a preemption between the two reads could make it anything.
func calibrate() float64 {
	calibration.once.Do(func() {
		c0, t0, _ := verbs.ClockPair()
		time.Sleep(100 * time.Millisecond)
		c1, t1, _ := verbs.ClockPair()
		if c1 > c0 && t1 > t0 {
			calibration.nsPerCycle = float64(t1-t0) / float64(c1-c0)
		}
	})
	return calibration.nsPerCycle
}

// counterMHz is the calibrated counter's rate, 0 when it is not calibrated.
func counterMHz() float64 {
	if s := calibrate(); s > 0 {
		return 1000 / s
	}
	return 0
}

// Clock is the bandwidth test's clock: cycle counter scaled to nanoseconds,
// one unprivileged instruction per timestamp like perftest's get_cycles.
// Falls back to the monotonic clock when the counter does not advance.
func Clock() bw.Clock {
	scale := calibrate()
	if scale <= 0 {
		return bw.RealClock()
	}
	origin := verbs.Cycles()
	return func() time.Duration { return time.Duration(float64(verbs.Cycles()-origin) * scale) }
}
