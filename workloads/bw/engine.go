package bw

import (
	"fmt"
	"github.com/rdmasuite/rdmasuite/workloads/lat"
	"time"
)

// Endpoint is one side's connected RDMA resources: QPs 0..n-1 sharing one
// completion queue, each addressing its own slice of the peer's buffer.
type Endpoint interface {
	// Post posts one operation of size bytes on qp.
	Post(qp int, op Op, size int, wrID uint64, signaled bool) error
	// Poll fills wcs with completions and returns how many.
	Poll(wcs []Completion) (int, error)
}

// Looper is an Endpoint that runs one size's whole post/poll loop itself,
// with the same rules as RunLoop below (which stays the reference the unit
// tests pin down), except that a one-way duration run may stop at its
// deadline with work in flight, as perftest -D does (the endpoint is then
// a QPRenewer and the session replaces the QPs before the next size). The
// verbs endpoint does, so that no Go↔C transition sits between two posts. Times share one origin, like Clock's. With record it
// returns every stamp in iteration mode; in duration mode (no peak is
// computed) the first post and the last completion suffice.
type Looper interface {
	Loop(p Params, size int, record bool) (posted, completed []time.Duration, done int, err error)
}

// PingPonger is an endpoint that runs ib_write_lat's write ping-pong of one
// size (the client posts first) and returns every post time.
type PingPonger interface {
	PingPong(p Params, size int, client bool) ([]time.Duration, error)
}

// Completion is one work completion as the engine needs it.
type Completion struct {
	WrID   uint64
	Status string // "" on success, else the verbs status text
}

func wrID(qp, seq int) uint64        { return uint64(qp)<<40 | uint64(seq) }
func splitWrID(id uint64) (int, int) { return int(id >> 40), int(id & (1<<40 - 1)) }

// Clock is time since an arbitrary origin; tests inject a fake one.
type Clock func() time.Duration

// RealClock is the monotonic clock.
func RealClock() Clock {
	origin := time.Now()
	return func() time.Duration { return time.Since(origin) }
}

// Measure runs one size the way perftest's run_iter_bw does: keep up to
// TxDepth operations outstanding per QP, request a completion every CQMod
// posts (and on the last), poll in batches, and time each operation from
// post to the completion that covers it. With Params.Duration set it runs
// for that long instead of Iters and reports no peak, like perftest -D.
func Measure(ep Endpoint, p Params, size int, clock Clock) (Figures, error) {
	if p.Latency && p.Op.PingPongs() {
		return pingPong(ep, p, size)
	}
	p = p.ForSize(size)
	loop := func(p Params, record bool) ([]time.Duration, []time.Duration, int, error) {
		if l, ok := ep.(Looper); ok {
			return l.Loop(p, size, record)
		}
		return RunLoop(ep, p, size, clock, record)
	}
	if p.Warmup > 0 {
		w := p
		w.Iters, w.Duration = p.Warmup, 0
		if _, _, _, err := loop(w, false); err != nil {
			return Figures{}, fmt.Errorf("warm-up: %w", err)
		}
	}
	posted, completed, n, err := loop(p, true)
	if err != nil {
		return Figures{}, err
	}
	if n == 0 || len(posted) == 0 || len(completed) == 0 {
		if p.Duration > 0 {
			return Figures{}, Tag(ErrTransport, fmt.Errorf("no operation completed within the %s window (--bw-duration): the link carried nothing, or less than one %d B operation per QP in that time", p.Duration, size))
		}
		return Figures{}, fmt.Errorf("no operation completed")
	}
	elapsed := completed[len(completed)-1] - posted[0]
	var peak time.Duration
	if p.Duration <= 0 {
		if len(posted) < n || len(completed) < n {
			return Figures{}, fmt.Errorf("endpoint returned %d post and %d completion times for %d operations", len(posted), len(completed), n)
		}
		peak = PeakPerOp(posted[:n], completed[:n])
	}
	f := Compute(size, n, elapsed, peak)
	f.Disturbance = lastDisturbance(ep)
	if p.Op == OpRead && p.TxDepth == 1 && p.QPs == 1 && p.Duration <= 0 && n >= lat.Tail+2 {
		// ib_read_lat's loop: one READ outstanding, each post waits for
		// the previous completion, so the gap between posts is one READ.
		l, err := lat.FromDurations(posted[:n], false)
		if err != nil {
			return f, fmt.Errorf("read latency: %w", err)
		}
		f.Latency = &l
	}
	return f, nil
}

// RunLoop is the reference post/poll loop over an Endpoint: it posts and
// polls until every posted operation completed, and returns per-operation
// post and completion times (in completion order, which for
// one CQ and RC QPs is post order per QP).
func RunLoop(ep Endpoint, p Params, size int, clock Clock, record bool) (posted, completed []time.Duration, done int, err error) {
	iters := p.Iters
	var deadline time.Duration
	if p.Duration > 0 {
		iters = int(^uint(0) >> 2) // until the deadline
	}
	capHint := 0
	if p.Duration <= 0 {
		capHint = iters * p.QPs
	}
	if record {
		posted = make([]time.Duration, 0, capHint)
		completed = make([]time.Duration, 0, capHint)
	}
	scnt := make([]int, p.QPs)
	ccnt := make([]int, p.QPs)
	var wcs [16]Completion
	totalPosted, stopPosting := 0, false
	op := p.Op
	start := clock()
	if p.Duration > 0 {
		deadline = start + p.Duration
	}
	for {
		if p.Duration > 0 && !stopPosting && clock() >= deadline {
			stopPosting = true
		}
		for q := 0; q < p.QPs; q++ {
			for scnt[q] < iters && scnt[q]-ccnt[q] < p.TxDepth {
				// After a duration run's deadline, only finish the current
				// moderation group, so its last op is signalled and every
				// posted op is covered by a completion (none is left in the
				// send queue for the next size).
				if stopPosting && scnt[q]%p.CQMod == 0 {
					break
				}
				last := scnt[q]+1 == iters
				signaled := (scnt[q]+1)%p.CQMod == 0 || last
				t := clock()
				if err := ep.Post(q, op, size, wrID(q, scnt[q]), signaled); err != nil {
					return nil, nil, done, Tag(ErrTransport, fmt.Errorf("post %s %d B on QP %d (op %d): %w", op, size, q, scnt[q], err))
				}
				if record {
					posted = append(posted, t)
				}
				scnt[q]++
				totalPosted++
			}
		}
		if done == totalPosted && (stopPosting || allDone(scnt, iters)) {
			break
		}
		n, err := ep.Poll(wcs[:])
		if err != nil {
			return nil, nil, done, err
		}
		if n == 0 {
			continue
		}
		t := clock()
		for _, wc := range wcs[:n] {
			q, seq := splitWrID(wc.WrID)
			if wc.Status != "" {
				return nil, nil, done, Tag(ErrTransport, fmt.Errorf("completion error on QP %d op %d: %s", q, seq, wc.Status))
			}
			if q >= p.QPs || seq < ccnt[q] {
				return nil, nil, done, fmt.Errorf("unexpected completion wr_id %#x", wc.WrID)
			}
			covered := seq + 1 - ccnt[q]
			ccnt[q] = seq + 1
			done += covered
			if record {
				for k := 0; k < covered; k++ {
					completed = append(completed, t)
				}
			}
		}
	}
	return posted, completed, done, nil
}

func allDone(scnt []int, iters int) bool {
	for _, s := range scnt {
		if s < iters {
			return false
		}
	}
	return true
}

// pingPong is the client's write or send latency: the gap between two of
// its posts is one round trip; perftest reports half of it.
func pingPong(ep Endpoint, p Params, size int) (Figures, error) {
	pp, ok := ep.(PingPonger)
	if !ok {
		return Figures{}, fmt.Errorf("%s latency needs the endpoint's ping-pong loop, which this endpoint lacks", p.Op)
	}
	posted, err := pp.PingPong(p, size, true)
	if err != nil {
		return Figures{}, err
	}
	l, err := lat.FromDurations(posted, true)
	if err != nil {
		return Figures{}, fmt.Errorf("%s latency: %w", p.Op, err)
	}
	return Figures{Bytes: size, Iterations: len(posted), Latency: &l, Disturbance: lastDisturbance(ep)}, nil
}
