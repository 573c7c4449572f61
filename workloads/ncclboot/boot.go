package ncclboot

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Options tune Serve, Fetch, Gather and Report. The zero value is usable.
type Options struct {
	// Token identifies the run; every rank must present the same one, so a
	// stale pod of another run cannot join. Used by Serve and Gather (Fetch
	// and Report take it as an argument).
	Token string
	// Timeout bounds the whole call (default 2m).
	Timeout time.Duration
	// IOTimeout bounds every single read and write (default 10s).
	IOTimeout time.Duration
	// IDLen is the required id length (default 128, sizeof ncclUniqueId).
	IDLen int
	// World, when > 0 in Fetch/Report, is sent to rank 0 and must match.
	World int
	// MinBackoff/MaxBackoff bound the client retry delay (default 50ms/2s).
	MinBackoff, MaxBackoff time.Duration
	// MaxBlob bounds a report blob (default 1 MiB).
	MaxBlob int
	// Logf, if set, receives rank 0's notices (refused hellos, dropped
	// connections). Nil discards them.
	Logf func(format string, args ...any)
}

// DefaultIDLen is sizeof(ncclUniqueId).
const DefaultIDLen = 128

func (o Options) withDefaults() Options {
	if o.Timeout <= 0 {
		o.Timeout = 2 * time.Minute
	}
	if o.IOTimeout <= 0 {
		o.IOTimeout = 10 * time.Second
	}
	if o.IDLen <= 0 {
		o.IDLen = DefaultIDLen
	}
	if o.MinBackoff <= 0 {
		o.MinBackoff = 50 * time.Millisecond
	}
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = 2 * time.Second
	}
	if o.MaxBackoff < o.MinBackoff {
		o.MaxBackoff = o.MinBackoff
	}
	if o.MaxBlob <= 0 {
		o.MaxBlob = 1 << 20
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	return o
}

// Serve runs on rank 0: it hands id to each of the world-1 other ranks
// exactly once and returns nil when all of them have confirmed receipt (a
// barrier). On timeout or cancellation it returns an error naming the ranks
// that never arrived. ln stays open (it can be reused for Gather).
func Serve(ctx context.Context, ln net.Listener, id []byte, world int, opts Options) error {
	opts = opts.withDefaults()
	if len(id) != opts.IDLen {
		return fmt.Errorf("ncclboot: id is %d bytes, want %d (sizeof ncclUniqueId): pass the id from ncclGetUniqueId unchanged", len(id), opts.IDLen)
	}
	if world < 1 {
		return fmt.Errorf("ncclboot: world size %d is invalid", world)
	}
	if opts.Token == "" {
		return errors.New("ncclboot: empty run token: set Options.Token to a value unique to this run (e.g. the Job UID)")
	}
	idc := append([]byte(nil), id...)
	_, err := collect(ctx, ln, world, opts, kindID, func(h hello) ([]byte, error) { return idc, nil })
	return err
}

// Gather runs on rank 0 after the measurement: it collects one JSON blob per
// rank 1..world-1 and returns all blobs indexed by rank, with self (rank 0's
// own blob) at index 0. Errors name the ranks that never reported.
func Gather(ctx context.Context, ln net.Listener, self json.RawMessage, world int, opts Options) ([]json.RawMessage, error) {
	opts = opts.withDefaults()
	if world < 1 {
		return nil, fmt.Errorf("ncclboot: world size %d is invalid", world)
	}
	if opts.Token == "" {
		return nil, errors.New("ncclboot: empty run token: set Options.Token to a value unique to this run (e.g. the Job UID)")
	}
	if self != nil && !json.Valid(self) {
		return nil, errors.New("ncclboot: rank 0's own report is not valid JSON")
	}
	got, err := collect(ctx, ln, world, opts, kindReport, func(h hello) ([]byte, error) {
		if !json.Valid(h.Data) {
			return nil, errors.New("report is not valid JSON")
		}
		if len(h.Data) > opts.MaxBlob {
			return nil, fmt.Errorf("report is %d bytes, limit %d", len(h.Data), opts.MaxBlob)
		}
		return nil, nil
	})
	out := make([]json.RawMessage, world)
	out[0] = self
	for r, h := range got {
		out[r] = h.Data
	}
	return out, err
}

// collect is the rank-0 side shared by Serve and Gather: it accepts
// connections on ln until ranks 1..world-1 have each been answered and have
// acknowledged, or until ctx or opts.Timeout ends the wait.
func collect(ctx context.Context, ln net.Listener, world int, opts Options, kind string, accept func(hello) ([]byte, error)) (map[int]hello, error) {
	start := time.Now()
	budget := waitBudget(ctx, opts.Timeout)
	ctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()

	s := &collector{
		world:   world,
		opts:    opts,
		kind:    kind,
		accept:  accept,
		done:    map[int]hello{},
		pending: map[int]bool{},
		conns:   map[net.Conn]bool{},
		allIn:   make(chan struct{}),
	}
	if world == 1 {
		return s.done, nil
	}

	acceptDone := make(chan struct{})
	go s.acceptLoop(ctx, ln, acceptDone)

	var result error
	select {
	case <-s.allIn:
	case <-ctx.Done():
		result = ctx.Err()
	}
	cancel()
	// Stop accepting without closing ln, so the caller can reuse it.
	stopAccepting(ln, acceptDone)
	s.closeAndWait()
	return s.outcome(result, start, budget)
}

// collector is the state collect's accept loop and per-connection handlers
// share; mu guards every map and slice in it.
type collector struct {
	world  int
	opts   Options
	kind   string
	accept func(hello) ([]byte, error)

	mu sync.Mutex
	// done holds the ranks that acknowledged; pending the ranks being
	// served right now, so that a duplicate is refused before the first
	// one's ack arrives.
	done     map[int]hello
	pending  map[int]bool
	refusals []string
	// conns are the open connections, so collect can cut off handlers
	// still blocked on a slow peer when it stops.
	conns map[net.Conn]bool
	allIn chan struct{} // closed when done reaches world-1 ranks
	wg    sync.WaitGroup
}

// waitBudget is how long a rank-0 wait can actually last: opts.Timeout, or
// less when the caller's ctx ends sooner. It is only for error messages, so
// that they state the limit that really applied.
func waitBudget(ctx context.Context, timeout time.Duration) time.Duration {
	budget := timeout
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < budget {
		budget = time.Until(dl)
	}
	return budget
}

// acceptLoop hands every connection to its own handler until ctx ends or
// stopAccepting interrupts Accept. It closes acceptDone on return so the
// caller knows no handler will be started any more.
func (s *collector) acceptLoop(ctx context.Context, ln net.Listener, acceptDone chan struct{}) {
	defer close(acceptDone)
	for {
		c, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				return
			}
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// Anything else (e.g. too many open files) may pass: retry
			// after a short pause rather than spin.
			s.opts.Logf("ncclboot: rank 0: accept: %v", err)
			select {
			case <-ctx.Done():
				return
			case <-time.After(10 * time.Millisecond):
			}
			continue
		}
		// Register under mu and re-check ctx there: once collect has
		// canceled and started closing conns, no new handler may slip in
		// that it would neither close nor wait for.
		s.mu.Lock()
		if ctx.Err() != nil {
			s.mu.Unlock()
			c.Close()
			return
		}
		s.conns[c] = true
		s.wg.Add(1)
		s.mu.Unlock()
		go s.handle(c)
	}
}

// handle serves one connection: it validates the hello, refuses it or
// sends the reply, and counts the rank once it has acknowledged.
func (s *collector) handle(c net.Conn) {
	defer s.wg.Done()
	defer func() {
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
		c.Close()
	}()
	h, reason, ok := readHello(c, s.kind, s.world, s.opts)
	if !ok {
		return
	}
	var reply []byte
	if reason == "" {
		reason = s.reserve(h.Rank)
	}
	if reason == "" {
		reply, reason = s.vet(h)
	}
	if reason != "" {
		s.refuse(c, h, reason)
		return
	}
	s.deliver(c, h, reply)
}

// reserve claims rank for this connection, so that two pods presenting
// the same rank cannot both be served; "" means the claim succeeded.
func (s *collector) reserve(rank int) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, isDone := s.done[rank]
	if isDone || s.pending[rank] {
		return fmt.Sprintf("rank %d already checked in: two pods share JOB_COMPLETION_INDEX %d (a stale pod?)", rank, rank)
	}
	s.pending[rank] = true
	return ""
}

// vet runs the caller's accept check and returns its reply, or the refusal
// reason. A refused rank's claim is released: the rank is no longer being
// served, and another connection presenting it may still be.
func (s *collector) vet(h hello) ([]byte, string) {
	reply, err := s.accept(h)
	if err != nil {
		reason := err.Error()
		s.mu.Lock()
		delete(s.pending, h.Rank)
		s.mu.Unlock()
		return reply, reason
	}
	return reply, ""
}

// refuse tells the peer why it was turned away and keeps the reason, so
// that a later timeout error can name the refusals that explain it.
func (s *collector) refuse(c net.Conn, h hello, reason string) {
	s.opts.Logf("ncclboot: rank 0: refused %s (rank %d): %s", c.RemoteAddr(), h.Rank, reason)
	s.mu.Lock()
	s.refusals = append(s.refusals, fmt.Sprintf("%s (rank %d): %s", c.RemoteAddr(), h.Rank, reason))
	s.mu.Unlock()
	_ = writeFrame(c, frameRefuse, []byte(reason), s.opts.IOTimeout)
}

// deliver sends the reply and waits for the ack. Only an acknowledged
// rank counts as checked in; either way its claim is released on return,
// so a rank whose exchange failed can retry.
func (s *collector) deliver(c net.Conn, h hello, reply []byte) {
	ok := false
	defer func() {
		s.mu.Lock()
		delete(s.pending, h.Rank)
		if ok {
			s.done[h.Rank] = h
			if len(s.done) == s.world-1 {
				close(s.allIn)
			}
		}
		s.mu.Unlock()
	}()
	if err := writeFrame(c, frameOK, reply, s.opts.IOTimeout); err != nil {
		s.opts.Logf("ncclboot: rank 0: sending to rank %d: %v", h.Rank, err)
		return
	}
	typ, _, err := readFrame(c, s.opts.IOTimeout)
	if err != nil || typ != frameAck {
		s.opts.Logf("ncclboot: rank 0: rank %d did not acknowledge (type %d): %v", h.Rank, typ, err)
		return
	}
	ok = true
}

// closeAndWait cuts off handlers still talking to a peer and waits for all
// of them, so that collect returns with no goroutine touching its state.
func (s *collector) closeAndWait() {
	s.mu.Lock()
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

// outcome is collect's result once every handler has finished: success
// when all ranks made it (even if the deadline fired at the same moment),
// else a *MissingError naming the absent ranks and any refusals.
func (s *collector) outcome(result error, start time.Time, budget time.Duration) (map[int]hello, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if result == nil || len(s.done) == s.world-1 {
		return s.done, nil
	}
	var missing []int
	for r := 1; r < s.world; r++ {
		if _, ok := s.done[r]; !ok {
			missing = append(missing, r)
		}
	}
	what := "connected to rank 0"
	if s.kind == kindReport {
		what = "reported to rank 0"
	}
	var msg string
	if errors.Is(result, context.DeadlineExceeded) {
		msg = fmt.Sprintf("ncclboot: %s never %s within %v: check those pods' status/logs and the headless Service's DNS", rankList(missing), what, budget.Round(time.Millisecond))
	} else {
		msg = fmt.Sprintf("ncclboot: canceled after %v while waiting for %s: %v", time.Since(start).Round(time.Millisecond), rankList(missing), result)
	}
	if len(s.refusals) > 0 {
		msg += "; refused meanwhile: " + strings.Join(s.refusals, "; ")
	}
	return s.done, &MissingError{Missing: missing, msg: msg, cause: result}
}

// stopAccepting makes the accept loop return and waits for it. It prefers
// an expired deadline to closing ln, because the listener is reused
// (Serve, then Gather on the same port); the deadline is cleared again
// afterwards.
func stopAccepting(ln net.Listener, acceptDone <-chan struct{}) {
	if d, ok := ln.(interface{ SetDeadline(time.Time) error }); ok {
		_ = d.SetDeadline(time.Unix(1, 0))
		<-acceptDone
		_ = d.SetDeadline(time.Time{})
	} else {
		ln.Close()
		<-acceptDone
	}
}

// MissingError reports the ranks that never checked in.
type MissingError struct {
	Missing []int
	msg     string
	cause   error
}

func (e *MissingError) Error() string { return e.msg }
func (e *MissingError) Unwrap() error { return e.cause }

func rankList(rs []int) string {
	sort.Ints(rs)
	s := make([]string, len(rs))
	for i, r := range rs {
		s[i] = strconv.Itoa(r)
	}
	if len(rs) == 1 {
		return "rank " + s[0]
	}
	return "ranks " + strings.Join(s, ", ")
}

// Fetch runs on ranks >= 1: it connects to rank 0 at addr, retrying with
// backoff while rank 0's pod and DNS record come up, presents rank and token,
// and returns the id. Refusals by rank 0 are returned at once.
func Fetch(ctx context.Context, addr string, rank int, token string, opts Options) ([]byte, error) {
	opts = opts.withDefaults()
	if rank < 1 {
		return nil, fmt.Errorf("ncclboot: Fetch is for ranks >= 1, got rank %d (rank 0 calls Serve)", rank)
	}
	var id []byte
	err := exchange(ctx, addr, hello{Kind: kindID, Rank: rank, World: opts.World, Token: token}, opts, func(p []byte) error {
		if len(p) != opts.IDLen {
			return &lengthError{got: len(p), want: opts.IDLen}
		}
		id = p
		return nil
	})
	return id, err
}

// Report runs on ranks >= 1: it sends this rank's JSON blob to rank 0's
// Gather, with the same retries as Fetch.
func Report(ctx context.Context, addr string, rank int, token string, blob json.RawMessage, opts Options) error {
	opts = opts.withDefaults()
	if rank < 1 {
		return fmt.Errorf("ncclboot: Report is for ranks >= 1, got rank %d (rank 0 calls Gather)", rank)
	}
	if !json.Valid(blob) {
		return fmt.Errorf("ncclboot: rank %d report is not valid JSON", rank)
	}
	return exchange(ctx, addr, hello{Kind: kindReport, Rank: rank, World: opts.World, Token: token, Data: blob}, opts, func([]byte) error { return nil })
}

func exchange(ctx context.Context, addr string, h hello, opts Options, got func([]byte) error) error {
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	msg, err := json.Marshal(h)
	if err != nil {
		return err
	}
	backoff := opts.MinBackoff
	var lastErr error
	attempts := 0
	for {
		attempts++
		err := tryOnce(ctx, addr, h.Rank, msg, opts, got)
		if err == nil {
			return nil
		}
		if permanent(err) {
			return err
		}
		lastErr = err
		select {
		case <-ctx.Done():
		case <-time.After(backoff):
		}
		if ctx.Err() != nil {
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return fmt.Errorf("ncclboot: rank %d could not reach rank 0 at %s after trying for %v (%d attempts); last error: %v: check rank 0's pod and the headless Service's DNS", h.Rank, addr, time.Since(start).Round(time.Millisecond), attempts, lastErr)
			}
			return fmt.Errorf("ncclboot: rank %d canceled after %v reaching rank 0 at %s: %w (last error: %v)", h.Rank, time.Since(start).Round(time.Millisecond), addr, ctx.Err(), lastErr)
		}
		backoff *= 2
		if backoff > opts.MaxBackoff {
			backoff = opts.MaxBackoff
		}
	}
}

func tryOnce(ctx context.Context, addr string, rank int, msg []byte, opts Options, got func([]byte) error) error {
	d := net.Dialer{Timeout: opts.IOTimeout}
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	defer c.Close()
	stop := context.AfterFunc(ctx, func() { c.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	if err := writeFrame(c, frameHello, msg, opts.IOTimeout); err != nil {
		return err
	}
	typ, p, err := readFrame(c, opts.IOTimeout)
	if err != nil {
		return err
	}
	switch typ {
	case frameRefuse:
		return &RefusedError{Addr: addr, Rank: rank, Reason: string(p)}
	case frameOK:
	default:
		return &protocolError{fmt.Sprintf("unexpected frame type %d from %s", typ, addr)}
	}
	if err := got(p); err != nil {
		return err
	}
	return writeFrame(c, frameAck, nil, opts.IOTimeout)
}
