package bw

import (
	"errors"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fakeEP completes every signalled post on the next poll and advances a
// fake clock by step per clock read, so the engine's arithmetic can be
// checked exactly.
type fakeEP struct {
	mu        sync.Mutex
	pending   []Completion
	posts     int
	signalled int
	failAt    int // post number to fail at (0 = never)
	badStatus bool
	// failAfter: completions of posts after this many carry a transport
	// error (a peer that died mid-run); 0 = never.
	failAfter int
	inflight  map[int]int
	maxInfl   int
	qps       int
}

func (f *fakeEP) Post(qp int, op Op, size int, id uint64, signaled bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.posts++
	if f.failAt != 0 && f.posts == f.failAt {
		return errors.New("ibv_post_send: Cannot allocate memory")
	}
	if f.inflight == nil {
		f.inflight = map[int]int{}
	}
	f.inflight[qp]++
	f.maxInfl = max(f.maxInfl, f.inflight[qp])
	if signaled {
		f.signalled++
		c := Completion{WrID: id}
		if f.badStatus {
			c.Status = "remote access error"
		}
		if f.failAfter > 0 && f.posts > f.failAfter {
			c.Status = "transport retry counter exceeded"
		}
		f.pending = append(f.pending, c)
	}
	return nil
}

func (f *fakeEP) Poll(wcs []Completion) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := copy(wcs, f.pending)
	for _, c := range f.pending[:n] {
		q, seq := splitWrID(c.WrID)
		f.inflight[q] = 0
		_ = seq
	}
	f.pending = f.pending[n:]
	return n, nil
}

// fakeClock is safe for concurrent use (parallel rails share it).
func fakeClock(step time.Duration) Clock {
	var now atomic.Int64
	return func() time.Duration { return time.Duration(now.Add(int64(step))) }
}

func TestComputeUnits(t *testing.T) {
	// 1000 × 64 KiB in 1 s: 62.5 MiB/s (MB = 2^20), 0.524288 Gb/s (Gb = 10^9 bit).
	f := Compute(65536, 1000, time.Second, 0)
	if math.Abs(f.AvgMBps-62.5) > 1e-9 || math.Abs(f.AvgGbps-0.524288) > 1e-9 || math.Abs(f.MsgRateMpps-0.001) > 1e-12 {
		t.Fatalf("%+v", f)
	}
	if f.PeakGbps != 0 {
		t.Fatal("peak without a peak window")
	}
}

func TestPeakPerOp(t *testing.T) {
	ms := time.Millisecond
	posted := []time.Duration{0, 1 * ms, 2 * ms, 3 * ms}
	completed := []time.Duration{10 * ms, 11 * ms, 12 * ms, 13 * ms}
	// Best window: all four, (13-0)/4 = 3.25 ms.
	if got := PeakPerOp(posted, completed); got != 3250*time.Microsecond {
		t.Fatalf("peak per op %v", got)
	}
	if PeakPerOp(nil, nil) != 0 {
		t.Fatal("empty peak")
	}
}

func TestMeasureIterationsAndModeration(t *testing.T) {
	ep := &fakeEP{}
	p := Defaults()
	p.Iters, p.QPs, p.TxDepth, p.CQMod = 1000, 4, 128, 100
	f, err := Measure(ep, p, 4096, fakeClock(time.Microsecond))
	if err != nil {
		t.Fatal(err)
	}
	if f.Iterations != 4000 || ep.posts != 4000 {
		t.Fatalf("iterations %d posts %d", f.Iterations, ep.posts)
	}
	// One completion per 100 posts per QP (1000/100 = 10 per QP).
	if ep.signalled != 40 {
		t.Fatalf("signalled %d, want 40", ep.signalled)
	}
	if ep.maxInfl > p.TxDepth {
		t.Fatalf("%d in flight on one QP, tx depth %d", ep.maxInfl, p.TxDepth)
	}
	if f.AvgGbps <= 0 || f.PeakGbps < f.AvgGbps {
		t.Fatalf("avg %v peak %v: peak must be ≥ average", f.AvgGbps, f.PeakGbps)
	}
	// Every clock read is 1 µs; elapsed must equal first post → last completion.
	want := float64(4096*4000) / f.ElapsedSec / (1 << 20)
	if math.Abs(f.AvgMBps-want) > 1e-6 {
		t.Fatalf("avg %v want %v", f.AvgMBps, want)
	}
}

func TestMeasureLastOpSignalledWhenItersNotMultiple(t *testing.T) {
	ep := &fakeEP{}
	p := Defaults()
	p.Iters, p.CQMod = 250, 100
	if _, err := Measure(ep, p, 64, fakeClock(time.Microsecond)); err != nil {
		t.Fatal(err)
	}
	if ep.signalled != 3 { // 100, 200, and the last (250)
		t.Fatalf("signalled %d, want 3", ep.signalled)
	}
}

func TestMeasureDuration(t *testing.T) {
	ep := &fakeEP{}
	p := Defaults()
	p.Duration = 5 * time.Millisecond
	f, err := Measure(ep, p, 64, fakeClock(time.Microsecond))
	if err != nil {
		t.Fatal(err)
	}
	if f.Iterations == 0 || f.Iterations%p.CQMod != 0 {
		t.Fatalf("duration run covered %d ops: must be whole moderation groups", f.Iterations)
	}
	if f.PeakGbps != 0 {
		t.Fatal("duration mode reports no peak, like perftest -D")
	}
}

// loopEP is a Looper that returns canned stamps, to check that Measure uses
// an endpoint's own loop (and its stamps) instead of posting through Post.
type loopEP struct {
	fakeEP
	loops             []bool // record flag per call
	posted, completed []time.Duration
	done              int
}

func (l *loopEP) Loop(p Params, size int, record bool) ([]time.Duration, []time.Duration, int, error) {
	l.loops = append(l.loops, record)
	if !record {
		return nil, nil, p.Iters * p.QPs, nil
	}
	return l.posted, l.completed, l.done, nil
}

func TestMeasureUsesEndpointLoop(t *testing.T) {
	us := time.Microsecond
	ep := &loopEP{posted: []time.Duration{0, 1 * us, 2 * us, 3 * us}, completed: []time.Duration{10 * us, 10 * us, 12 * us, 20 * us}, done: 4}
	p := Defaults()
	p.Iters, p.Warmup = 4, 8
	f, err := Measure(ep, p, 1<<20, fakeClock(us))
	if err != nil {
		t.Fatal(err)
	}
	if ep.posts != 0 || len(ep.loops) != 2 || ep.loops[0] || !ep.loops[1] {
		t.Fatalf("posts through Post %d, loop calls %v: want warm-up then a recorded run, both in the endpoint's loop", ep.posts, ep.loops)
	}
	// 4 MiB in 20 µs from the endpoint's stamps, not from the fake clock.
	if f.Iterations != 4 || math.Abs(f.ElapsedSec-20e-6) > 1e-12 {
		t.Fatalf("figures %+v", f)
	}
	ep.completed = ep.completed[:2]
	if _, err := Measure(ep, p, 1<<20, fakeClock(us)); err == nil || !strings.Contains(err.Error(), "2 completion times for 4 operations") {
		t.Fatalf("short stamps: %v", err)
	}
}

func TestMeasureErrors(t *testing.T) {
	p := Defaults()
	p.Iters = 300
	if _, err := Measure(&fakeEP{failAt: 150}, p, 64, fakeClock(time.Microsecond)); err == nil || !strings.Contains(err.Error(), "Cannot allocate memory") {
		t.Fatalf("post failure: %v", err)
	}
	if _, err := Measure(&fakeEP{badStatus: true}, p, 64, fakeClock(time.Microsecond)); err == nil || !strings.Contains(err.Error(), "remote access error") {
		t.Fatalf("completion error: %v", err)
	}
}

func TestValidate(t *testing.T) {
	bad := []func(*Params){
		func(p *Params) { p.Op = "atomic" },
		func(p *Params) { p.Sizes = nil },
		func(p *Params) { p.QPs = 0 },
		func(p *Params) { p.CQMod = 500 },
		func(p *Params) { p.Iters = 0 },
		func(p *Params) { p.Sizes = []int{0} },
		func(p *Params) { p.QPTimeout = 32 },
		func(p *Params) { p.QPTimeout = -1 },
	}
	for i, mod := range bad {
		p := Defaults()
		mod(&p)
		if p.Validate() == nil {
			t.Errorf("case %d: %+v accepted", i, p)
		}
	}
	if err := Defaults().Validate(); err != nil {
		t.Fatal(err)
	}
	// An older client sends no QP timeout: perftest's 14 (≈ 67 ms).
	if p := (Params{}); EffectiveQPTimeout(p.QPTimeout) != 14 || Defaults().QPTimeout != 14 || EffectiveQPTimeout(18) != 18 {
		t.Fatalf("effective %d, default %d", EffectiveQPTimeout(p.QPTimeout), Defaults().QPTimeout)
	}
	if d := QPTimeoutDuration(14); d < 67*time.Millisecond || d > 68*time.Millisecond {
		t.Fatalf("2^14 × 4.096 µs = %s", d)
	}
}

// A READ run of one QP at tx depth 1 is ib_read_lat's loop (one signaled
// READ, poll until it completes, next): its figures carry the latency the
// way perftest computes it, the whole READ round trip. Any other shape
// (outstanding operations overlap, or WRITE, whose ib_write_lat is a
// ping-pong) carries none: no number that is not perftest's.
func TestMeasureReadLatencyAtDepthOne(t *testing.T) {
	us := time.Microsecond
	posted := []time.Duration{0, 3 * us, 5 * us, 9 * us, 12 * us, 14 * us, 30 * us}
	completed := []time.Duration{3 * us, 5 * us, 9 * us, 12 * us, 14 * us, 30 * us, 32 * us}
	p := Defaults()
	p.Op, p.Iters, p.TxDepth, p.CQMod = OpRead, 7, 1, 1
	f, err := Measure(&loopEP{posted: posted, completed: completed, done: 7}, p, 2, fakeClock(us))
	if err != nil {
		t.Fatal(err)
	}
	// gaps 3 2 4 3 2 16 → sorted 2 2 3 3 4 16, 2 largest dropped → 2 2 3 3.
	if l := f.Latency; l == nil || l.Samples != 4 || l.Typical != 2.5 || l.Max != 4 || l.Min != 2 || l.Halved {
		t.Fatalf("latency %+v", f.Latency)
	}
	for _, change := range []func(*Params){
		func(p *Params) { p.TxDepth = 2 },
		func(p *Params) { p.Op = OpWrite },
		func(p *Params) { p.QPs = 2 },
	} {
		q := p
		change(&q)
		f, err := Measure(&loopEP{posted: posted, completed: completed, done: 7}, q, 2, fakeClock(us))
		if err != nil || f.Latency != nil {
			t.Errorf("%+v: latency %+v, err %v: want none", q, f.Latency, err)
		}
	}
}

type pingEP struct {
	loopEP
	posted []time.Duration
	client []bool
	err    error
}

func (p *pingEP) PingPong(_ Params, _ int, client bool) ([]time.Duration, error) {
	p.client = append(p.client, client)
	return p.posted, p.err
}

// Write latency is ib_write_lat's ping-pong: the gap between two posts is
// a round trip and the report is half of it; no bandwidth is claimed.
func TestMeasureWriteLatencyIsAHalvedPingPong(t *testing.T) {
	us := time.Microsecond
	ep := &pingEP{posted: []time.Duration{0, 4 * us, 8 * us, 14 * us, 18 * us, 22 * us, 60 * us}}
	p := Defaults()
	p.Latency, p.Iters, p.TxDepth, p.CQMod, p.Sizes = true, 7, 1, 1, []int{2}
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	f, err := Measure(ep, p, 2, fakeClock(us))
	if err != nil {
		t.Fatal(err)
	}
	// gaps 4 4 6 4 4 38 → 4 4 4 4 (6 and 38 dropped) → typical 4/2 = 2.
	if l := f.Latency; l == nil || !l.Halved || l.Typical != 2 || l.Max != 3 || l.Samples != 4 {
		t.Fatalf("latency %+v", f.Latency)
	}
	if f.AvgGbps != 0 || f.MsgRateMpps != 0 || len(ep.client) != 1 || !ep.client[0] || len(ep.loops) != 0 {
		t.Fatalf("a ping-pong is no bandwidth run: %+v, calls %v, loops %v", f, ep.client, ep.loops)
	}
	ep.err = errors.New("the peer stopped answering")
	if _, err := Measure(ep, p, 2, fakeClock(us)); err == nil {
		t.Fatal("a failed ping-pong must fail the size")
	}
	if _, err := Measure(&loopEP{}, p, 2, fakeClock(us)); err == nil || !strings.Contains(err.Error(), "ping-pong") {
		t.Fatalf("an endpoint without a ping-pong: %v", err)
	}
}

// Send latency is ib_send_lat's ping-pong: halved like write; a read at
// the same parameters is no ping-pong.
func TestMeasureSendLatencyIsAHalvedPingPong(t *testing.T) {
	us := time.Microsecond
	ep := &pingEP{posted: []time.Duration{0, 10 * us, 20 * us, 30 * us, 40 * us, 90 * us}}
	p := Defaults()
	p.Op, p.Latency, p.Iters, p.TxDepth, p.CQMod, p.Sizes = OpSend, true, 6, 1, 1, []int{2}
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	f, err := Measure(ep, p, 2, fakeClock(us))
	if err != nil {
		t.Fatal(err)
	}
	if l := f.Latency; l == nil || !l.Halved || l.Typical != 5 || l.Samples != 3 || len(ep.client) != 1 || !ep.client[0] {
		t.Fatalf("latency %+v, calls %v", f.Latency, ep.client)
	}
	if !OpSend.PingPongs() || !OpWrite.PingPongs() || OpRead.PingPongs() {
		t.Fatal("write and send ping-pong, read does not")
	}
}

// SEND is measured as latency only: a bandwidth run of it is refused,
// naming --latency.
func TestSendIsLatencyOnly(t *testing.T) {
	p := Defaults()
	p.Op = OpSend
	if err := p.Validate(); err == nil || !strings.Contains(err.Error(), "--latency") {
		t.Fatalf("send bandwidth: %v", err)
	}
	p.Op = "atomic"
	if err := p.Validate(); err == nil || !strings.Contains(err.Error(), "write, read or send") {
		t.Fatalf("unknown op: %v", err)
	}
	// -1 inline (the device's perftest default) belongs to latency runs.
	p.Op, p.MaxInline = OpWrite, -1
	if err := p.Validate(); err == nil || !strings.Contains(err.Error(), "inline -1") {
		t.Fatalf("inline -1 for bandwidth: %v", err)
	}
}

func TestLatencyParamsAreOneOutstandingOperation(t *testing.T) {
	base := Defaults()
	base.Latency, base.Iters, base.TxDepth, base.CQMod, base.Sizes = true, 1000, 1, 1, []int{2}
	for name, change := range map[string]func(*Params){
		"two QPs":       func(p *Params) { p.QPs = 2 },
		"depth 128":     func(p *Params) { p.TxDepth, p.CQMod = 128, 1 },
		"duration":      func(p *Params) { p.Duration = time.Second },
		"bidirectional": func(p *Params) { p.Bidirectional = true },
		"3 iterations":  func(p *Params) { p.Iters = 3 },
	} {
		p := base
		change(&p)
		if err := p.Validate(); err == nil || !strings.Contains(err.Error(), "latency") {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// disturbedEP is a ping-pong endpoint that tells what competed with its
// measuring thread.
type disturbedEP struct {
	pingEP
	d *Disturbance
}

func (e *disturbedEP) LastDisturbance() *Disturbance { return e.d }

// A figure carries the disturbance its endpoint counted over the timed
// loop, for latency and bandwidth alike; an endpoint that cannot tell
// leaves it out rather than claiming an undisturbed run.
func TestFiguresCarryTheEndpointsDisturbance(t *testing.T) {
	us := time.Microsecond
	d := &Disturbance{WallMs: 12, ThreadCPUShare: 0.6, Preemptions: 40, OtherThreadsCPUMs: 0.2}
	ep := &disturbedEP{pingEP: pingEP{posted: []time.Duration{0, 4 * us, 8 * us, 12 * us, 16 * us}}, d: d}
	p := Defaults()
	p.Latency, p.Iters, p.TxDepth, p.CQMod, p.Sizes = true, 5, 1, 1, []int{2}
	f, err := Measure(ep, p, 2, fakeClock(us))
	if err != nil || f.Disturbance != d {
		t.Fatalf("latency figures %+v (err %v): want the endpoint's disturbance", f, err)
	}
	ep.pingEP.posted = nil
	ep.loopEP = loopEP{posted: []time.Duration{0, us, 2 * us, 3 * us}, completed: []time.Duration{us, 2 * us, 3 * us, 4 * us}, done: 4}
	p = Defaults()
	p.Iters, p.QPs, p.Sizes = 4, 1, []int{2}
	if f, err = Measure(ep, p, 2, fakeClock(us)); err != nil || f.Disturbance != d {
		t.Fatalf("bandwidth figures %+v (err %v): want the endpoint's disturbance", f, err)
	}
	if f, err = Measure(&ep.loopEP, p, 2, fakeClock(us)); err != nil || f.Disturbance != nil {
		t.Fatalf("an endpoint that cannot tell: %+v (err %v): want no disturbance", f.Disturbance, err)
	}
}

// As perftest without -Q: CQ moderation up to 8 KiB, a completion per
// post above (MSG_SIZE_CQ_MOD_LIMIT); a --cq-mod given applies to every
// size.
func TestCQModerationStopsAbove8K(t *testing.T) {
	for _, c := range []struct {
		size     int
		upTo8K   bool
		signaled int // of 1000 posts (one QP, 1000 iterations)
	}{
		{8192, true, 10},
		{8193, true, 1000},
		{1 << 20, true, 1000},
		{1 << 20, false, 10},
	} {
		p := Defaults()
		p.Iters, p.CQModUpTo8K = 1000, c.upTo8K
		ep := &fakeEP{}
		if _, err := Measure(ep, p, c.size, fakeClock(time.Microsecond)); err != nil {
			t.Fatal(err)
		}
		if ep.posts != 1000 || ep.signalled != c.signaled {
			t.Errorf("%d B, moderation up to 8 KiB %v: %d of %d posts signaled, want %d", c.size, c.upTo8K, ep.signalled, ep.posts, c.signaled)
		}
	}
}

// nothingLooper's loop completes nothing (a link that carried nothing in
// the window).
type nothingLooper struct{ fakeEP }

func (*nothingLooper) Loop(Params, int, bool) ([]time.Duration, []time.Duration, int, error) {
	return []time.Duration{0}, nil, 0, nil
}

// A duration window in which nothing completed is a transport failure
// naming the window, never a figure of zero.
func TestDurationWindowWithNoCompletionFails(t *testing.T) {
	p := Defaults()
	p.Duration = 5 * time.Second
	f, err := Measure(&nothingLooper{}, p, 1<<20, fakeClock(time.Microsecond))
	if err == nil || !errors.Is(err, ErrTransport) || !strings.Contains(err.Error(), "no operation completed within the 5s window") {
		t.Fatalf("got %+v, %v", f, err)
	}
}
