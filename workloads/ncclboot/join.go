package ncclboot

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"sort"
	"strings"
	"sync"
	"time"
)

// Rendezvous and Join are the start of a run: every rank sends rank 0 what
// it found in its pod (library versions, GPU, or why it cannot take part),
// and rank 0 answers all of them at once, after the last one arrived, with
// either the NCCL unique id or an abort saying why the run cannot go on.
//
// Deciding once with every rank's facts in hand is the point: a rank whose
// pod has no CUDA driver would otherwise leave the others blocked in
// ncclCommInitRank until NCCL's own bootstrap timeout, with no word of why.
// Serve/Fetch remain for callers that already know every rank can start.

// kindJoin is the hello kind of Rendezvous/Join.
const kindJoin = "join"

// frameAbort is rank 0's answer to a join when the run cannot go on; the
// payload is the reason (UTF-8). The rank acknowledges it like an id.
const frameAbort byte = 5

// AbortError is rank 0 calling the run off; Reason says why (a rank
// without CUDA, ranks that never joined, ...). Join returns it at once.
type AbortError struct {
	Rank   int // the rank that received it
	Reason string
}

func (e *AbortError) Error() string {
	return fmt.Sprintf("ncclboot: rank 0 called the run off for rank %d: %s", e.Rank, e.Reason)
}

// Decision is rank 0's answer to every rank: the id, or Abort's reason.
type Decision struct {
	ID    []byte
	Abort string
}

// Rendezvous runs on rank 0. It waits until ranks 1..world-1 have joined,
// then calls decide with every rank's facts (self at index 0) and sends its
// decision to each rank. It returns the facts and the decision. When ranks
// are missing at the deadline, the ranks that did join are told so (an
// abort naming the missing ranks), and the error is a *MissingError; the
// facts then hold nil for the missing ranks and decide is not called.
func Rendezvous(ctx context.Context, ln net.Listener, self json.RawMessage, world int, opts Options,
	decide func(facts []json.RawMessage) Decision) ([]json.RawMessage, Decision, error) {
	opts = opts.withDefaults()
	if world < 1 {
		return nil, Decision{}, fmt.Errorf("ncclboot: world size %d is invalid", world)
	}
	if opts.Token == "" {
		return nil, Decision{}, errors.New("ncclboot: empty run token: set Options.Token to a value unique to this run (e.g. the Job UID)")
	}
	facts := make([]json.RawMessage, world)
	facts[0] = self

	start := time.Now()
	budget := waitBudget(ctx, opts.Timeout)
	ctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()

	rv := &rendezvous{
		world:  world,
		opts:   opts,
		facts:  facts,
		joined: map[int]net.Conn{},
		allIn:  make(chan struct{}),
	}
	if world == 1 {
		close(rv.allIn)
	}
	acceptDone := make(chan struct{})
	go rv.acceptLoop(ctx, ln, acceptDone)

	var dec Decision
	var result error
	select {
	case <-rv.allIn:
	case <-ctx.Done():
		result = ctx.Err()
	}
	// Stop accepting without closing ln (it serves Gather later).
	stopAccepting(ln, acceptDone)

	conns, missing, refused := rv.snapshot()
	var err error
	if len(missing) > 0 {
		dec, err = abortMissing(missing, refused, result, start, budget)
	} else {
		dec = decideChecked(decide, facts, opts)
	}
	answer(conns, dec, opts)
	return facts, dec, err
}

// rendezvous is the state Rendezvous's accept loop and handlers share;
// handlers change joined, refusals and the entries of facts only under mu.
type rendezvous struct {
	world int
	opts  Options
	facts []json.RawMessage // index = rank; Rendezvous returns this slice

	mu sync.Mutex
	// joined keeps each joined rank's connection open: the rank waits on
	// it for the decision, which is only sent once everyone is in.
	joined   map[int]net.Conn
	refusals []string
	allIn    chan struct{} // closed when joined reaches world-1 ranks
}

// acceptLoop hands every connection to its own handler until ctx ends or
// stopAccepting interrupts Accept, then closes acceptDone.
func (rv *rendezvous) acceptLoop(ctx context.Context, ln net.Listener, acceptDone chan struct{}) {
	defer close(acceptDone)
	for {
		c, err := ln.Accept()
		if err != nil {
			var ne net.Error
			if ctx.Err() != nil || errors.Is(err, net.ErrClosed) || (errors.As(err, &ne) && ne.Timeout()) {
				return
			}
			// Anything else may pass: retry after a short pause rather
			// than spin.
			rv.opts.Logf("ncclboot: rank 0: accept: %v", err)
			time.Sleep(10 * time.Millisecond)
			continue
		}
		select {
		case <-rv.allIn:
			// Everyone is in: a latecomer is a stale or duplicate pod.
			_ = writeFrame(c, frameRefuse, []byte("every rank has already joined: a stale pod of this run, or a duplicate JOB_COMPLETION_INDEX"), rv.opts.IOTimeout)
			c.Close()
			continue
		default:
		}
		go rv.handle(c)
	}
}

// handle reads one rank's hello and either records the rank as joined,
// leaving its connection open for the decision, or refuses and closes it.
func (rv *rendezvous) handle(c net.Conn) {
	h, reason, ok := readHello(c, kindJoin, rv.world, rv.opts)
	if !ok {
		c.Close()
		return
	}
	if reason == "" && h.Data != nil && (!json.Valid(h.Data) || len(h.Data) > rv.opts.MaxBlob) {
		reason = fmt.Sprintf("rank %d's facts are not valid JSON or exceed %d bytes", h.Rank, rv.opts.MaxBlob)
	}
	// The duplicate check and the registration share one critical
	// section, so two pods with the same rank cannot both join.
	rv.mu.Lock()
	if reason == "" {
		if _, dup := rv.joined[h.Rank]; dup {
			reason = fmt.Sprintf("rank %d already joined: two pods share JOB_COMPLETION_INDEX %d (a stale pod?)", h.Rank, h.Rank)
		}
	}
	if reason != "" {
		rv.refusals = append(rv.refusals, fmt.Sprintf("%s (rank %d): %s", c.RemoteAddr(), h.Rank, reason))
		rv.mu.Unlock()
		rv.opts.Logf("ncclboot: rank 0: refused %s (rank %d): %s", c.RemoteAddr(), h.Rank, reason)
		_ = writeFrame(c, frameRefuse, []byte(reason), rv.opts.IOTimeout)
		c.Close()
		return
	}
	rv.joined[h.Rank] = c
	rv.facts[h.Rank] = h.Data
	if len(rv.joined) == rv.world-1 {
		close(rv.allIn)
	}
	rv.mu.Unlock()
}

// snapshot copies, under mu, what Rendezvous needs to decide and answer:
// the joined ranks' connections, the ranks still missing, and the
// refusals. Copies, because handlers are not waited for and may still be
// running.
func (rv *rendezvous) snapshot() (conns map[int]net.Conn, missing []int, refused []string) {
	rv.mu.Lock()
	defer rv.mu.Unlock()
	conns = make(map[int]net.Conn, len(rv.joined))
	for r, c := range rv.joined {
		conns[r] = c
	}
	for r := 1; r < rv.world; r++ {
		if _, ok := rv.joined[r]; !ok {
			missing = append(missing, r)
		}
	}
	refused = append([]string(nil), rv.refusals...)
	return conns, missing, refused
}

// abortMissing is the decision when ranks never joined: the ranks that did
// join get an abort naming the missing ones (instead of waiting out their
// own timeout with no word of why), and the caller gets a *MissingError
// with the same text.
func abortMissing(missing []int, refused []string, result error, start time.Time, budget time.Duration) (Decision, error) {
	what := fmt.Sprintf("never joined within %v", budget.Round(time.Millisecond))
	if !errors.Is(result, context.DeadlineExceeded) {
		what = fmt.Sprintf("had not joined when rank 0 was canceled after %v (%v)", time.Since(start).Round(time.Millisecond), result)
	}
	msg := fmt.Sprintf("%s %s: check those pods' status/logs and the headless Service's DNS", rankList(missing), what)
	if len(refused) > 0 {
		msg += "; refused meanwhile: " + strings.Join(refused, "; ")
	}
	return Decision{Abort: msg}, &MissingError{Missing: missing, msg: "ncclboot: " + msg, cause: result}
}

// decideChecked calls decide on a copy of the facts (so decide cannot
// alter what Rendezvous returns) and turns an id of the wrong length into
// an abort, since every rank would reject it anyway.
func decideChecked(decide func(facts []json.RawMessage) Decision, facts []json.RawMessage, opts Options) Decision {
	dec := decide(append([]json.RawMessage(nil), facts...))
	if dec.Abort == "" && len(dec.ID) != opts.IDLen {
		dec = Decision{Abort: fmt.Sprintf("rank 0 produced a %d-byte id, want %d", len(dec.ID), opts.IDLen)}
	}
	return dec
}

// answer sends every joined rank the decision and waits for the acks (a
// rank that does not acknowledge is logged: it will time out on its own).
func answer(conns map[int]net.Conn, dec Decision, opts Options) {
	ranks := make([]int, 0, len(conns))
	for r := range conns {
		ranks = append(ranks, r)
	}
	sort.Ints(ranks)
	var wg sync.WaitGroup
	for _, r := range ranks {
		wg.Add(1)
		go func(r int, c net.Conn) {
			defer wg.Done()
			defer c.Close()
			typ, payload := frameOK, dec.ID
			if dec.Abort != "" {
				typ, payload = frameAbort, []byte(dec.Abort)
			}
			if err := writeFrame(c, typ, payload, opts.IOTimeout); err != nil {
				opts.Logf("ncclboot: rank 0: answering rank %d: %v", r, err)
				return
			}
			if t, _, err := readFrame(c, opts.IOTimeout); err != nil || t != frameAck {
				opts.Logf("ncclboot: rank 0: rank %d did not acknowledge (type %d): %v", r, t, err)
			}
		}(r, conns[r])
	}
	wg.Wait()
}

// readHello reads a rank's first frame and validates it as a hello of
// kind. It returns the hello and "" when it is acceptable, or the reason to
// refuse it. ok is false when no frame could be read at all (logged
// here): the caller then drops the connection without a refusal.
func readHello(c net.Conn, kind string, world int, opts Options) (h hello, reason string, ok bool) {
	typ, p, err := readFrame(c, opts.IOTimeout)
	if err != nil {
		opts.Logf("ncclboot: rank 0: dropped connection from %s before hello: %v", c.RemoteAddr(), err)
		return h, "", false
	}
	switch {
	case typ != frameHello:
		reason = fmt.Sprintf("expected a hello frame, got type %d", typ)
	case json.Unmarshal(p, &h) != nil:
		reason = "malformed hello"
	default:
		reason = checkHello(h, kind, world, opts)
	}
	return h, reason, true
}

// checkHello is the validation every rank-0 handler applies; "" is valid.
func checkHello(h hello, kind string, world int, opts Options) string {
	switch {
	case h.Kind != kind:
		return fmt.Sprintf("rank 0 is serving %q, not %q: the ranks are out of step", kind, h.Kind)
	case h.Token != opts.Token:
		return fmt.Sprintf("run token mismatch (got %q, rank 0 has %q): this pod belongs to another run; delete stale pods of earlier runs", h.Token, opts.Token)
	case h.Rank < 1 || h.Rank >= world:
		return fmt.Sprintf("rank %d is out of range 1..%d for world size %d: completions/parallelism and the world-size flag disagree", h.Rank, world-1, world)
	case h.World != 0 && h.World != world:
		return fmt.Sprintf("world size mismatch: rank %d says %d, rank 0 says %d", h.Rank, h.World, world)
	}
	return ""
}

// Join runs on ranks >= 1: it sends this rank's facts to rank 0's
// Rendezvous (retrying while rank 0's pod and DNS record come up) and
// waits for rank 0's decision: the id, or an *AbortError with rank 0's
// reason. It waits opts.Timeout plus one opts.IOTimeout, so that with the
// same options on every rank the abort rank 0 sends at its own deadline
// ("rank 2 never joined") still arrives.
func Join(ctx context.Context, addr string, rank int, token string, facts json.RawMessage, opts Options) ([]byte, error) {
	opts = opts.withDefaults()
	if rank < 1 {
		return nil, fmt.Errorf("ncclboot: Join is for ranks >= 1, got rank %d (rank 0 calls Rendezvous)", rank)
	}
	if facts != nil && !json.Valid(facts) {
		return nil, fmt.Errorf("ncclboot: rank %d facts are not valid JSON", rank)
	}
	msg, err := json.Marshal(hello{Kind: kindJoin, Rank: rank, World: opts.World, Token: token, Data: facts})
	if err != nil {
		return nil, err
	}
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, opts.Timeout+opts.IOTimeout)
	defer cancel()
	backoff := opts.MinBackoff
	var lastErr error
	for attempts := 1; ; attempts++ {
		id, err := joinOnce(ctx, addr, rank, msg, opts)
		if err == nil {
			return id, nil
		}
		var ab *AbortError
		if errors.As(err, &ab) || permanent(err) {
			return nil, err
		}
		lastErr = err
		select {
		case <-ctx.Done():
		case <-time.After(backoff):
		}
		if ctx.Err() != nil {
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return nil, fmt.Errorf("ncclboot: rank %d got no decision from rank 0 at %s within %v (%d attempts); last error: %v: check rank 0's pod and the headless Service's DNS", rank, addr, time.Since(start).Round(time.Millisecond), attempts, lastErr)
			}
			return nil, fmt.Errorf("ncclboot: rank %d canceled after %v waiting for rank 0 at %s: %w (last error: %v)", rank, time.Since(start).Round(time.Millisecond), addr, ctx.Err(), lastErr)
		}
		backoff = min(backoff*2, opts.MaxBackoff)
	}
}

func joinOnce(ctx context.Context, addr string, rank int, msg []byte, opts Options) ([]byte, error) {
	d := net.Dialer{Timeout: opts.IOTimeout}
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	stop := context.AfterFunc(ctx, func() { c.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	if err := writeFrame(c, frameHello, msg, opts.IOTimeout); err != nil {
		return nil, err
	}
	// Rank 0 answers when the last rank has joined: wait for as long as
	// the whole call may take, not one I/O timeout.
	wait := opts.Timeout
	if dl, ok := ctx.Deadline(); ok {
		wait = time.Until(dl)
	}
	typ, p, err := readFrame(c, wait)
	if err != nil {
		return nil, err
	}
	switch typ {
	case frameRefuse:
		return nil, &RefusedError{Addr: addr, Rank: rank, Reason: string(p)}
	case frameAbort:
		_ = writeFrame(c, frameAck, nil, opts.IOTimeout)
		return nil, &AbortError{Rank: rank, Reason: string(p)}
	case frameOK:
	default:
		return nil, &protocolError{fmt.Sprintf("unexpected frame type %d from %s", typ, addr)}
	}
	if len(p) != opts.IDLen {
		return nil, &lengthError{got: len(p), want: opts.IDLen}
	}
	return p, writeFrame(c, frameAck, nil, opts.IOTimeout)
}
