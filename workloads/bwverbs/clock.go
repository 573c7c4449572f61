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
// 100 ms. perftest reads "cpu MHz" from /proc/cpuinfo instead, which is wrong
// whenever the core's frequency is not the TSC's; measuring is not.
func calibrate() float64 {
	calibration.once.Do(func() {
		t0, c0 := time.Now(), verbs.Cycles()
		time.Sleep(100 * time.Millisecond)
		c1, t1 := verbs.Cycles(), time.Now()
		if c1 > c0 {
			calibration.nsPerCycle = float64(t1.Sub(t0).Nanoseconds()) / float64(c1-c0)
		}
	})
	return calibration.nsPerCycle
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
