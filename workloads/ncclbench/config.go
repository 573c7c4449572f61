package ncclbench

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/rdmasuite/rdmasuite/workloads/nccl"
)

// Config is one sweep, in the terms of the nccl-tests command line.
type Config struct {
	// Collectives to run, in order (see Supported). An unsupported or
	// unknown one is an error before anything runs.
	Collectives []nccl.Collective
	// MinBytes, MaxBytes (-b, -e) and StepFactor (-f) or StepBytes (-i):
	// the sweep is MinBytes, then ×StepFactor when StepFactor > 1, else
	// +StepBytes, while ≤ MaxBytes. A size is the requested buffer size;
	// ShapeOf says what it becomes per collective (the size and count
	// columns). MinBytes must be ≥ 1 (nccl-tests' -b 0 never leaves its
	// warm-up loop).
	MinBytes, MaxBytes int64
	StepFactor         int
	StepBytes          int64
	// Warmup (-w) iterations per warm-up size, Iters (-n ≥ 1) timed
	// iterations per size and variant.
	Warmup, Iters int
	// Check (-c 1): check the data of every size and variant; #wrong
	// is N/A without it.
	Check bool
	// InPlace, OutOfPlace select the variants; both false means both,
	// which is what nccl-tests always runs.
	InPlace, OutOfPlace bool
	// Now is the clock (time.Now when nil). Run reads it exactly twice
	// per size and variant: before the first timed call and after the
	// Sync that ends the timed iterations.
	Now func() time.Time
}

// DefaultConfig is the sweep the nccl-tests README runs ("-b 8 -e 128M
// -f 2") with nccl-tests' default -w 1 -n 20 -c 1, over every supported
// collective.
func DefaultConfig() Config {
	return Config{
		Collectives: append([]nccl.Collective(nil), Supported...),
		MinBytes:    8,
		MaxBytes:    128 << 20,
		StepFactor:  2,
		Warmup:      1,
		Iters:       20,
		Check:       true,
		InPlace:     true,
		OutOfPlace:  true,
	}
}

func (c Config) normalized() (Config, error) {
	if c.Now == nil {
		c.Now = time.Now
	}
	if !c.InPlace && !c.OutOfPlace {
		c.InPlace, c.OutOfPlace = true, true
	}
	var errs []error
	if len(c.Collectives) == 0 {
		errs = append(errs, errors.New("no collectives"))
	}
	for _, coll := range c.Collectives {
		if !supported(coll) {
			errs = append(errs, errUnsupported(coll))
		}
	}
	switch {
	case c.MinBytes < 1:
		errs = append(errs, fmt.Errorf("MinBytes %d < 1", c.MinBytes))
	case c.MaxBytes < c.MinBytes:
		errs = append(errs, fmt.Errorf("MinBytes %d > MaxBytes %d (nccl-tests: invalid sizes for 'minbytes' and 'maxbytes')", c.MinBytes, c.MaxBytes))
	case c.MaxBytes > math.MaxInt:
		errs = append(errs, fmt.Errorf("MaxBytes %d does not fit an int", c.MaxBytes))
	}
	if c.StepFactor <= 1 && c.StepBytes <= 0 && c.MinBytes != c.MaxBytes {
		errs = append(errs, fmt.Errorf("StepFactor %d ≤ 1 and StepBytes %d ≤ 0: the sweep never grows", c.StepFactor, c.StepBytes))
	}
	if c.Warmup < 0 {
		errs = append(errs, fmt.Errorf("Warmup %d < 0", c.Warmup))
	}
	if c.Iters < 1 {
		errs = append(errs, fmt.Errorf("Iters %d < 1", c.Iters))
	}
	if err := errors.Join(errs...); err != nil {
		return c, fmt.Errorf("ncclbench: config: %w", err)
	}
	return c, nil
}

// Sizes is the sweep (TimeTest's benchmark loop), before each collective's
// rounding (ShapeOf). It stops before a step that would overflow.
func (c Config) Sizes() []int64 {
	var out []int64
	for size := c.MinBytes; size >= 1 && size <= c.MaxBytes; {
		out = append(out, size)
		next, ok := c.next(size)
		if !ok {
			break
		}
		size = next
	}
	return out
}

func (c Config) next(size int64) (int64, bool) {
	if c.StepFactor > 1 {
		if size > math.MaxInt64/int64(c.StepFactor) {
			return 0, false
		}
		return size * int64(c.StepFactor), true
	}
	if c.StepBytes <= 0 || size > math.MaxInt64-c.StepBytes {
		return 0, false
	}
	return size + c.StepBytes, true
}

// warmupSizes is TimeTest's warm-up loop: MinBytes doubling while
// ≤ MaxBytes, whatever the step.
func (c Config) warmupSizes() []int64 {
	var out []int64
	for size := c.MinBytes; size >= 1 && size <= c.MaxBytes; size *= 2 {
		out = append(out, size)
		if size > math.MaxInt64/2 {
			break
		}
	}
	return out
}

// Params is the nccl-tests parameter line this sweep corresponds to, for
// one process driving one GPU (nThread 1 nGpus 1, as every rank of a
// multi-process run prints).
func (c Config) Params() nccl.Params {
	p := nccl.Params{
		NThreads: 1, NGpus: 1,
		MinBytes: c.MinBytes, MaxBytes: c.MaxBytes,
		WarmupIters: c.Warmup, Iters: c.Iters, AggIters: 1,
	}
	if c.StepFactor > 1 {
		p.StepFactor = int64(c.StepFactor)
	} else {
		p.StepBytes = c.StepBytes
	}
	if c.Check {
		p.Validation = 1
	}
	return p
}
