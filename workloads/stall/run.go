package stall

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"
)

// runState is what an I/O loop has measured so far. The loop runs in its
// own goroutine so that a stop is honoured even while an op hangs in the
// kernel; the supervisor reads the state under the lock and, once it has
// given up on a hung op, the loop's later updates are dropped.
type runState struct {
	mu           sync.Mutex
	ops          []Op
	inFlight     *InFlight
	acked        int64
	ioErrors     []IOError
	ioErrorCount int
	steadyAt     time.Time
	requested    string // stop asked for by the supervisor
	stoppedBy    string
	stoppedAt    time.Time
	abandoned    bool
}

func (s *runState) begin(seq uint64, start time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.abandoned {
		s.inFlight = &InFlight{Seq: seq, Start: start}
	}
}

// idle clears the op in flight: the reader is not waiting any more.
func (s *runState) idle() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.abandoned {
		s.inFlight = nil
	}
}

// complete records an op; it returns true when it made the run steady.
func (s *runState) complete(op Op) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.abandoned {
		return false
	}
	s.ops = append(s.ops, op)
	s.inFlight = nil
	before := s.acked
	s.acked += int64(op.Records)
	if before < SteadyRecords && s.acked >= SteadyRecords {
		s.steadyAt = op.End
		return true
	}
	return false
}

func (s *runState) fail(e IOError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.abandoned {
		return
	}
	s.ioErrorCount++
	if len(s.ioErrors) < MaxListed {
		s.ioErrors = append(s.ioErrors, e)
	}
}

func (s *runState) request(reason string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.requested == "" {
		s.requested = reason
	}
}

func (s *runState) requestedStop() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requested
}

// finish ends the run; the first call wins.
func (s *runState) finish(reason string, at time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stoppedBy == "" {
		s.stoppedBy, s.stoppedAt = reason, at
	}
}

// abandon is finish for a loop stuck in an op: nothing it does later
// counts.
func (s *runState) abandon(reason string, at time.Time) {
	s.finish(reason, at)
	s.mu.Lock()
	s.abandoned = true
	s.mu.Unlock()
}

type snapshot struct {
	ops          []Op
	inFlight     *InFlight
	acked        int64
	ioErrors     []IOError
	ioErrorCount int
	steadyAt     time.Time
	stoppedBy    string
	stoppedAt    time.Time
}

func (s *runState) snapshot() snapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	snap := snapshot{ops: slices.Clone(s.ops), acked: s.acked, ioErrors: slices.Clone(s.ioErrors),
		ioErrorCount: s.ioErrorCount, steadyAt: s.steadyAt, stoppedBy: s.stoppedBy, stoppedAt: s.stoppedAt}
	if s.inFlight != nil {
		f := *s.inFlight
		snap.inFlight = &f
	}
	if snap.ioErrors == nil {
		snap.ioErrors = []IOError{}
	}
	return snap
}

// stopReason is the loops' check on every iteration: a stop the
// supervisor asked for, a signal, the duration cap, the stop file.
func stopReason(ctx context.Context, cfg *Config, st *runState, deadline time.Time) string {
	if r := st.requestedStop(); r != "" {
		return r
	}
	if ctx.Err() != nil {
		return StoppedBySignal
	}
	if !deadline.IsZero() && !cfg.Clock.Now().Before(deadline) {
		return StoppedByDuration
	}
	if cfg.Exists(cfg.StopFile) {
		return StoppedByStopFile
	}
	return ""
}

// capSlack lets the loop reach the duration cap itself before the
// supervisor steps in.
const capSlack = time.Second

// supervise runs loop and waits for it. A signal, the duration cap or the
// stop file (polled here too: the loop cannot look while an op hangs) ask
// the loop to stop; if it has not returned StopGrace later, the run is
// abandoned with the op in flight and supervise reports hung. It also
// prints progress to the log every 5 s.
func supervise(ctx context.Context, cfg *Config, st *runState, what string, loop func()) (hung bool) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		loop()
	}()
	quit := make(chan struct{})
	defer close(quit)
	stopSeen := make(chan struct{})
	go func() {
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-quit:
				return
			case <-t.C:
				if cfg.Exists(cfg.StopFile) {
					close(stopSeen)
					return
				}
			}
		}
	}()
	var capC <-chan time.Time
	if cfg.Duration > 0 && cfg.Clock == RealClock {
		// The loop stops itself at the cap on its own clock; this timer is
		// for a loop stuck in an op at that moment (on the real clock only:
		// a test's clock is not real time).
		capTimer := time.NewTimer(cfg.Duration + capSlack)
		defer capTimer.Stop()
		capC = capTimer.C
	}
	progress := time.NewTicker(5 * time.Second)
	defer progress.Stop()
	reason := ""
	for reason == "" {
		select {
		case <-done:
			return false
		case <-ctx.Done():
			reason = StoppedBySignal
		case <-capC:
			reason = StoppedByDuration
		case <-stopSeen:
			reason = StoppedByStopFile
		case <-progress.C:
			logProgress(cfg, st, what)
		}
	}
	st.request(reason)
	grace := time.NewTimer(cfg.StopGrace)
	defer grace.Stop()
	for {
		select {
		case <-done:
			return false
		case <-progress.C:
			logProgress(cfg, st, what)
		case <-grace.C:
			st.abandon(reason, cfg.Clock.Now())
			snap := st.snapshot()
			if snap.inFlight != nil {
				fmt.Fprintf(cfg.Log, "stall: stopped (%s) with seq %d in flight since %s: I/O still hung after %s\n",
					reason, snap.inFlight.Seq, snap.inFlight.Start.UTC().Format(time.RFC3339Nano), cfg.StopGrace)
			}
			return true
		}
	}
}

func logProgress(cfg *Config, st *runState, what string) {
	snap := st.snapshot()
	now := cfg.Clock.Now()
	last := ""
	if n := len(snap.ops); n > 0 {
		op := snap.ops[n-1]
		last = fmt.Sprintf(", last op %.1f ms", ms(op.End.Sub(op.Start)))
	}
	hung := ""
	if snap.inFlight != nil {
		if age := now.Sub(snap.inFlight.Start); age > time.Second {
			hung = fmt.Sprintf(", seq %d in flight for %.1f s", snap.inFlight.Seq, age.Seconds())
		}
	}
	fmt.Fprintf(cfg.Log, "stall: %s %d records acknowledged, %d I/O errors%s%s\n", what, snap.acked, snap.ioErrorCount, last, hung)
}

// watcher polls a file's presence and keeps its transitions.
type watcher struct {
	path   string
	poll   time.Duration
	exists func(string) bool
	clock  Clock

	mu          sync.Mutex
	transitions []Transition
}

func (w *watcher) run(quit <-chan struct{}) {
	t := time.NewTicker(w.poll)
	defer t.Stop()
	first, last := true, false
	for {
		present := w.exists(w.path)
		if first || present != last {
			w.mu.Lock()
			w.transitions = append(w.transitions, Transition{At: w.clock.Now().UTC(), Present: present})
			w.mu.Unlock()
			first, last = false, present
		}
		select {
		case <-quit:
			return
		case <-t.C:
		}
	}
}

func (w *watcher) result() *Watch {
	w.mu.Lock()
	defer w.mu.Unlock()
	tr := slices.Clone(w.transitions)
	if tr == nil {
		tr = []Transition{}
	}
	return &Watch{Path: w.path, Transitions: tr}
}

// startWatch starts polling cfg.WatchFile; stop ends it and returns what it
// saw (nil without a watch file).
func startWatch(cfg *Config) (stop func() *Watch) {
	if cfg.WatchFile == "" {
		return func() *Watch { return nil }
	}
	w := &watcher{path: cfg.WatchFile, poll: cfg.WatchPoll, exists: cfg.Exists, clock: cfg.Clock}
	quit := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		w.run(quit)
	}()
	return func() *Watch {
		close(quit)
		select {
		case <-finished:
		case <-time.After(time.Second): // a stat hung on the watched path: keep what was seen
		}
		return w.result()
	}
}

// fillTimeline puts a finished run's measurements into r.
func fillTimeline(r *Result, snap snapshot, cfg *Config, startedAt time.Time) {
	tl := Analyze(snap.ops, snap.inFlight, startedAt, snap.stoppedAt, cfg.StallThreshold, r.RecordBytes)
	r.StartedAt, r.EndedAt, r.StoppedBy = startedAt.UTC(), snap.stoppedAt.UTC(), snap.stoppedBy
	if !snap.steadyAt.IsZero() {
		r.SteadyAt = snap.steadyAt.UTC()
	}
	r.Ops, r.Acknowledged = tl.Ops, snap.acked
	r.IOErrors, r.IOErrorCount = snap.ioErrors, snap.ioErrorCount
	r.Latency, r.LongestGap, r.Stalls, r.StallCount = tl.Latency, tl.LongestGap, tl.Stalls, tl.StallCount
	r.StallOngoing, r.Throughput = tl.StallOngoing, tl.Throughput
}
