package bw

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/rdmasuite/rdmasuite/workloads/units"
)

// LoadStream is the WRITE stream a latency run was measured under: the
// stream's own report (its bandwidth, from the client's side) and whether
// it covered the whole latency run.
type LoadStream struct {
	Report Report `json:"report"`
	// Covered: the stream was measuring before the latency run started
	// and still measuring when it ended. A latency run the stream did not
	// cover was partly measured alone, and is no measurement under load.
	Covered bool `json:"covered"`
	// Why says what went wrong when the stream failed or did not cover.
	Why string `json:"why,omitempty"`
	// Retried says why the loaded run was measured a second time: the
	// first stream ended before the latency measurement did.
	Retried string `json:"retried,omitempty"`
}

// Stream length: long enough to outlast the latency measurement under
// load (slower than alone by the very effect being measured, on a busy or
// emulated node several times so), short enough not to dominate a pair's
// time; a stream that falls short is run once more (underLoad).
// Variables, so that tests can make streams short.
var (
	loadStreamPerAlone time.Duration = 8
	loadStreamMin                    = 3 * time.Second
	loadStreamMax                    = 2 * time.Minute
)

// loadStreamParams is the stream beside a latency run of p whose
// measurement took alone without load: bandwidth defaults (perftest's
// ib_write_bw), one size, duration mode, the run's QP timeout.
func loadStreamParams(p Params, alone time.Duration) Params {
	s := Defaults()
	s.Op, s.Sizes, s.QPTimeout = OpWrite, []int{p.LoadSize}, p.QPTimeout
	s.Duration = min(max(loadStreamPerAlone*alone+2*time.Second, loadStreamMin), loadStreamMax)
	return s
}

// window is when a session's measurement ran (its first size's start,
// its last size's end), read through the session's hooks.
type window struct{ start, end time.Time }

func (w *window) hooks(cfg ClientConfig) ClientConfig {
	cfg.measuring = func() {
		if w.start.IsZero() {
			w.start = time.Now()
		}
	}
	cfg.measured = func() { w.end = time.Now() }
	return cfg
}

// underLoad measures op's latency on a rail pair twice: alone, then
// while a WRITE stream runs between the same rails in a session of its
// own. The loaded run is the result; the baseline and the stream ride in
// it. An error anywhere is the run's error: a latency run that was not
// under load, or has no baseline, cannot be judged as latency under load.
// The stream covered the run when its measurement started before the
// latency measurement and ended after it. A stream that fell short (the
// loaded run was slower than the first stream allowed for) is measured
// once more, beside a stream of 1.5 × the loaded measurement + 2 s; the
// run says so.
func underLoad(ctx context.Context, cfg ClientConfig, local, peer Rail, p Params) (Report, error) {
	alone := p
	alone.LoadSize = 0
	var baseWin window
	base, err := session(ctx, baseWin.hooks(cfg), local, peer, alone)
	if err != nil {
		base.Error = Classify(err)
		rep := Report{Role: "client", Params: p, Device: base.Device, Peer: cfg.Addr, Results: []SizeResult{}, Baseline: &base}
		return rep, fmt.Errorf("the baseline (the latency alone): %w", err)
	}
	sp := loadStreamParams(p, baseWin.end.Sub(baseWin.start))
	rep, needed, err := loadedRun(ctx, cfg, local, peer, p, sp)
	if err == nil && rep.Load != nil && !rep.Load.Covered && needed > 0 {
		first := rep.Load.Why
		sp.Duration = min(max(needed*3/2+2*time.Second, loadStreamMin), loadStreamMax)
		rep, _, err = loadedRun(ctx, cfg, local, peer, p, sp)
		if rep.Load != nil {
			rep.Load.Retried = first + fmt.Sprintf("; measured again beside a %s stream", sp.Duration)
		}
	}
	rep.Baseline = &base
	if rep.Device.Name == "" {
		rep.Device = base.Device
	}
	return rep, err
}

// loadedRun is one latency run of p beside a stream of sp: the report
// with its stream (Load), and how long a stream it needed: from the
// stream's start to the end of the latency measurement (0: the latency
// measured nothing).
func loadedRun(ctx context.Context, cfg ClientConfig, local, peer Rail, p, sp Params) (Report, time.Duration, error) {
	var streamWin window
	scfg := streamWin.hooks(cfg)
	measuring := make(chan struct{})
	var once sync.Once
	startStream := scfg.measuring
	scfg.measuring = func() { startStream(); once.Do(func() { close(measuring) }) }
	var stream Report
	var streamErr error
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		stream, streamErr = session(ctx, scfg, local, peer, sp)
	}()
	select {
	case <-measuring:
	case <-ended:
		switch {
		case streamErr != nil:
		case !streamWin.start.IsZero():
			streamErr = errors.New("the stream measured and ended before the latency run began")
		default:
			streamErr = errors.New("the stream ended before it measured")
		}
		stream.Error = Classify(streamErr)
		rep := Report{Role: "client", Params: p, Peer: cfg.Addr, Results: []SizeResult{}, Load: &LoadStream{Report: stream, Why: streamErr.Error()}}
		return rep, 0, fmt.Errorf("the load stream (write %s): %w", units.Bytes(int64(p.LoadSize)), streamErr)
	}
	var latWin window
	rep, err := session(ctx, latWin.hooks(cfg), local, peer, p)
	<-ended
	load := &LoadStream{Report: stream}
	var took, needed time.Duration
	if !latWin.end.IsZero() {
		took, needed = latWin.end.Sub(latWin.start), latWin.end.Sub(streamWin.start)
	}
	switch {
	case streamErr != nil:
		stream.Error = Classify(streamErr)
		load.Report, load.Why = stream, streamErr.Error()
		if err == nil {
			err = fmt.Errorf("the load stream (write %s): %w", units.Bytes(int64(p.LoadSize)), streamErr)
		}
	case took == 0:
		load.Why = "the latency run measured nothing under the stream"
	case !streamWin.end.After(latWin.start):
		load.Why = fmt.Sprintf("the stream's measurement (%s) ended before the latency measurement (%s) began: all of it was measured alone",
			sp.Duration, took.Round(time.Millisecond))
	case streamWin.end.Before(latWin.end) || latWin.start.Before(streamWin.start):
		load.Why = fmt.Sprintf("the stream's measurement (%s) ended %s before the latency measurement (%s) did: part of it was measured alone",
			sp.Duration, latWin.end.Sub(streamWin.end).Round(time.Millisecond), took.Round(time.Millisecond))
	default:
		load.Covered = true
	}
	rep.Load = load
	return rep, needed, err
}
