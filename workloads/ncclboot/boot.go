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

// collect is the rank-0 side shared by Serve and Gather.
func collect(ctx context.Context, ln net.Listener, world int, opts Options, kind string, accept func(hello) ([]byte, error)) (map[int]hello, error) {
	start := time.Now()
	budget := opts.Timeout
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < budget {
		budget = time.Until(dl)
	}
	ctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()

	var (
		mu       sync.Mutex
		done     = map[int]hello{}
		pending  = map[int]bool{}
		refusals []string
		conns    = map[net.Conn]bool{}
		allIn    = make(chan struct{})
		wg       sync.WaitGroup
	)
	if world == 1 {
		return done, nil
	}

	handle := func(c net.Conn) {
		defer wg.Done()
		defer func() {
			mu.Lock()
			delete(conns, c)
			mu.Unlock()
			c.Close()
		}()
		typ, p, err := readFrame(c, opts.IOTimeout)
		if err != nil {
			opts.Logf("ncclboot: rank 0: dropped connection from %s before hello: %v", c.RemoteAddr(), err)
			return
		}
		var h hello
		reason := ""
		switch {
		case typ != frameHello:
			reason = fmt.Sprintf("expected a hello frame, got type %d", typ)
		case json.Unmarshal(p, &h) != nil:
			reason = "malformed hello"
		default:
			reason = checkHello(h, kind, world, opts)
		}
		var reply []byte
		if reason == "" {
			mu.Lock()
			_, isDone := done[h.Rank]
			if isDone || pending[h.Rank] {
				reason = fmt.Sprintf("rank %d already checked in: two pods share JOB_COMPLETION_INDEX %d (a stale pod?)", h.Rank, h.Rank)
			} else {
				pending[h.Rank] = true
			}
			mu.Unlock()
		}
		if reason == "" {
			var aerr error
			reply, aerr = accept(h)
			if aerr != nil {
				reason = aerr.Error()
				mu.Lock()
				delete(pending, h.Rank)
				mu.Unlock()
			}
		}
		if reason != "" {
			opts.Logf("ncclboot: rank 0: refused %s (rank %d): %s", c.RemoteAddr(), h.Rank, reason)
			mu.Lock()
			refusals = append(refusals, fmt.Sprintf("%s (rank %d): %s", c.RemoteAddr(), h.Rank, reason))
			mu.Unlock()
			_ = writeFrame(c, frameRefuse, []byte(reason), opts.IOTimeout)
			return
		}
		ok := false
		defer func() {
			mu.Lock()
			delete(pending, h.Rank)
			if ok {
				done[h.Rank] = h
				if len(done) == world-1 {
					close(allIn)
				}
			}
			mu.Unlock()
		}()
		if err := writeFrame(c, frameOK, reply, opts.IOTimeout); err != nil {
			opts.Logf("ncclboot: rank 0: sending to rank %d: %v", h.Rank, err)
			return
		}
		typ, _, err = readFrame(c, opts.IOTimeout)
		if err != nil || typ != frameAck {
			opts.Logf("ncclboot: rank 0: rank %d did not acknowledge (type %d): %v", h.Rank, typ, err)
			return
		}
		ok = true
	}

	acceptDone := make(chan struct{})
	go func() {
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
				opts.Logf("ncclboot: rank 0: accept: %v", err)
				select {
				case <-ctx.Done():
					return
				case <-time.After(10 * time.Millisecond):
				}
				continue
			}
			mu.Lock()
			if ctx.Err() != nil {
				mu.Unlock()
				c.Close()
				return
			}
			conns[c] = true
			wg.Add(1)
			mu.Unlock()
			go handle(c)
		}
	}()

	var result error
	select {
	case <-allIn:
	case <-ctx.Done():
		result = ctx.Err()
	}
	cancel()
	// Stop accepting without closing ln, so the caller can reuse it.
	if d, ok := ln.(interface{ SetDeadline(time.Time) error }); ok {
		_ = d.SetDeadline(time.Unix(1, 0))
		<-acceptDone
		_ = d.SetDeadline(time.Time{})
	} else {
		ln.Close()
		<-acceptDone
	}
	mu.Lock()
	for c := range conns {
		c.Close()
	}
	mu.Unlock()
	wg.Wait()

	mu.Lock()
	defer mu.Unlock()
	if result == nil || len(done) == world-1 {
		return done, nil
	}
	var missing []int
	for r := 1; r < world; r++ {
		if _, ok := done[r]; !ok {
			missing = append(missing, r)
		}
	}
	what := "connected to rank 0"
	if kind == kindReport {
		what = "reported to rank 0"
	}
	var msg string
	if errors.Is(result, context.DeadlineExceeded) {
		msg = fmt.Sprintf("ncclboot: %s never %s within %v: check those pods' status/logs and the headless Service's DNS", rankList(missing), what, budget.Round(time.Millisecond))
	} else {
		msg = fmt.Sprintf("ncclboot: canceled after %v while waiting for %s: %v", time.Since(start).Round(time.Millisecond), rankList(missing), result)
	}
	if len(refusals) > 0 {
		msg += "; refused meanwhile: " + strings.Join(refusals, "; ")
	}
	return done, &MissingError{Missing: missing, msg: msg, cause: result}
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
