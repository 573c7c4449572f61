package verbs

import (
	"testing"
	"time"
)

// Two bracketed pairs calibrate the counter: their clock and counter both
// move forward, the bracket is a few reads wide (not a preemption), and the
// rate they give agrees with one measured over a window four times longer
// (any bias in how a pair is taken would differ between the two windows).
func TestClockPairCalibrates(t *testing.T) {
	rate := func(window time.Duration) float64 {
		c0, t0, b0 := ClockPair()
		time.Sleep(window)
		c1, t1, b1 := ClockPair()
		if c1 <= c0 || t1 <= t0 || b0 == 0 || b1 == 0 {
			t.Fatalf("pairs do not move forward: (%d, %v, bracket %d) then (%d, %v, bracket %d)", c0, t0, b0, c1, t1, b1)
		}
		if t1-t0 < window {
			t.Fatalf("the clock moved %v over a %v sleep", t1-t0, window)
		}
		return float64(c1-c0) / float64(t1-t0)
	}
	short, long := rate(25*time.Millisecond), rate(100*time.Millisecond)
	if d := short/long - 1; d > 0.01 || d < -0.01 {
		t.Fatalf("counter rate over 25 ms %.4f cycles/ns, over 100 ms %.4f: %.2f %% apart", short, long, 100*d)
	}
}
