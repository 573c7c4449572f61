package bw

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"sync"
	"time"

	"github.com/rdmasuite/rdmasuite/workloads/probeout"
)

// ServerConfig is the server side of `rdmaprobe bw`.
type ServerConfig struct {
	Found []Rail  // every rail the side sees
	Rails []Rail  // the rails it offers, in pairing order (all of Found, or the one selected)
	Open  Factory // opens resources on one of Rails
	Clock Clock
	// Counters reads a rail's port counters around each size (sent to the
	// client with done); nil reads none.
	Counters CounterReader
	// Timeout: the server gives up when no client is connected for this
	// long (none at all, or none since the last session without a finish).
	Timeout time.Duration
	// Err is a probe-wide failure found before serving (no device, a bad
	// --netdev): the server still answers, so the client learns why.
	Err  *probeout.Error
	Logf func(format string, args ...any)
}

type railKey struct{ local, peer int }

type server struct {
	cfg       ServerConfig
	mu        sync.Mutex
	requested *Requested
	results   map[railKey]*RailResult
	finished  bool
	finishErr *probeout.Error // the client's own probe-wide failure, told in finish
}

// Serve answers clients on ln until one sends finish: each connection is
// either a rails request, one session (one op between one client rail and
// one of this server's rails), a client-side failure report, or the
// finish. Sessions run concurrently. It returns what the server measured
// per rail pair, and a probe-wide error: cfg.Err, a timeout (no client
// within cfg.Timeout, or no finish), or the client's own failure.
func Serve(ctx context.Context, ln net.Listener, cfg ServerConfig) (ProbeOutput, *probeout.Error) {
	if cfg.Logf == nil {
		cfg.Logf = func(string, ...any) {}
	}
	if cfg.Clock == nil {
		cfg.Clock = RealClock()
	}
	s := &server{cfg: cfg, results: map[railKey]*RailResult{}}
	stop := make(chan struct{})
	defer close(stop)
	defer ln.Close()
	conns := make(chan net.Conn)
	go func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			select {
			case conns <- nc:
			case <-stop:
				nc.Close()
				return
			}
		}
	}()
	ended := make(chan struct{})
	finish := make(chan struct{}, 1)
	active, served := 0, 0
	idle := time.NewTimer(cfg.Timeout)
	defer idle.Stop()
	var perr *probeout.Error
loop:
	for {
		select {
		case nc := <-conns:
			active++
			served++
			idle.Stop()
			go func() {
				s.handle(ctx, nc, finish)
				select {
				case ended <- struct{}{}:
				case <-stop:
				}
			}()
		case <-ended:
			active--
			if active == 0 {
				if s.isFinished() {
					break loop
				}
				idle.Reset(cfg.Timeout)
			}
		case <-finish:
			ln.Close() // no new connections; wait for the running ones
			if active == 0 {
				break loop
			}
		case <-idle.C:
			if served == 0 {
				perr = probeout.Errorf(probeout.KindTimeout, "no client connected to %s within %s: is the client pod running, and can it reach this pod?", ln.Addr(), cfg.Timeout)
			} else {
				perr = probeout.Errorf(probeout.KindTimeout, "the client sent no finish within %s after its last session (it may have died: see its output)", cfg.Timeout)
			}
			break loop
		case <-ctx.Done():
			perr = probeout.Errorf(probeout.KindInternal, "interrupted: %v", context.Cause(ctx))
			break loop
		}
	}
	out := s.output()
	switch {
	case cfg.Err != nil:
		perr = cfg.Err
	case perr == nil && s.finishErr != nil:
		perr = s.finishErr
	}
	return out, perr
}

func (s *server) isFinished() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.finished
}

// output snapshots the results: rail pairs by local then peer index, runs
// in the requested op order.
func (s *server) output() ProbeOutput {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := ProbeOutput{Role: "server", Found: nonNil(s.cfg.Found), Rails: []RailResult{}}
	if s.requested != nil {
		out.Requested = *s.requested
	}
	keys := make([]railKey, 0, len(s.results))
	for k := range s.results {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b railKey) int {
		if a.local != b.local {
			return a.local - b.local
		}
		return a.peer - b.peer
	})
	for _, k := range keys {
		rr := *s.results[k]
		rr.Runs = slices.Clone(rr.Runs)
		slices.SortStableFunc(rr.Runs, func(a, b Report) int {
			return slices.Index(out.Requested.Ops, a.Params.Op) - slices.Index(out.Requested.Ops, b.Params.Op)
		})
		out.Rails = append(out.Rails, rr)
	}
	return out
}

// record adds one op's report (and its error, if any) to a rail pair.
func (s *server) record(local Rail, peer *Rail, rep Report, perr *probeout.Error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := railKey{local.Index, -1}
	if peer != nil {
		k.peer = peer.Index
	}
	rr := s.results[k]
	if rr == nil {
		rr = &RailResult{Local: local, Peer: peer, Runs: []Report{}}
		s.results[k] = rr
	}
	if rep.Params.Op != "" {
		rep.Error = perr
		rr.Runs = append(rr.Runs, rep)
	}
	addError(rr, rep.Params.Op, perr)
}

// addError keeps the first error's kind; later ones join its message.
func addError(rr *RailResult, op Op, perr *probeout.Error) {
	if perr == nil {
		return
	}
	msg := perr.Message
	if op != "" {
		msg = string(op) + ": " + msg
	}
	if rr.Error == nil {
		rr.Error = &probeout.Error{Kind: perr.Kind, Message: msg}
		return
	}
	rr.Error.Message += "; " + msg
}

func (s *server) rail(r *Rail) (Rail, error) {
	if r != nil {
		for _, x := range s.cfg.Rails {
			if x.Index == r.Index {
				return x, nil
			}
		}
	}
	names := make([]string, len(s.cfg.Rails))
	for i, x := range s.cfg.Rails {
		names[i] = fmt.Sprintf("%d=%s", x.Index, x.Name())
	}
	return Rail{}, Tag(ErrNoDevice, fmt.Errorf("server offers no rail %v (it offers %v)", r, names))
}

func (s *server) handle(ctx context.Context, nc net.Conn, finish chan<- struct{}) {
	defer nc.Close()
	stop := context.AfterFunc(ctx, func() { nc.Close() })
	defer stop()
	c := newConn(nc, "client")
	m, err := c.recvAny("a request", 30*time.Second)
	if err != nil {
		s.cfg.Logf("%v", err)
		return
	}
	// The client sends nothing more for a run once it has read the bye
	// to its finish: a request after the finish is its next run's (a
	// multi-run pod, --then), which reached this run's listener before it
	// closed. Answered here, that run would be served by this one and
	// every later run would land one run early (a device-less client's
	// quick runs ran ahead of its server, whose last run then
	// waited minutes for a client that had exited). Dropped unanswered,
	// it is asked again of the next run (the client's askRails).
	// An "error" is the exception: the client's one-way report of its own
	// rail's failure, sent on its own connection before it dials the
	// finish, may be read after the finish; it is this run's (a run opens
	// with "rails", so a next run cannot have reached an error yet).
	if s.isFinished() && m.Type != "error" {
		s.cfg.Logf("a %q request from %s after this run's finish: dropped unanswered (the client's next run asks again)", m.Type, nc.RemoteAddr())
		return
	}
	switch m.Type {
	case "rails":
		s.mu.Lock()
		if m.Requested != nil {
			s.requested = m.Requested
		}
		s.mu.Unlock()
		if s.cfg.Err != nil {
			_ = c.send(message{Type: "error", Kind: s.cfg.Err.Kind, Error: s.cfg.Err.Message})
			return
		}
		_ = c.send(message{Type: "rails", Rails: s.cfg.Rails})
	case "hello":
		s.session(c, m)
	case "error":
		// The client could not open its side of a session (its port is
		// down, its memlock too low): record it against our rail.
		rail, err := s.rail(m.Rail)
		if err != nil || m.Params == nil {
			s.cfg.Logf("client error for unknown rail %v: %s", m.Rail, m.Error)
			return
		}
		rep := Report{Role: "server", Params: *m.Params, Device: railDevice(rail), Peer: nc.RemoteAddr().String(), Results: []SizeResult{}}
		s.record(rail, m.ClientRail, rep, Classify(peerError("client", railName(m.ClientRail), m)))
	case "finish":
		s.finish(m)
		_ = c.send(message{Type: "bye"})
		select {
		case finish <- struct{}{}:
		default:
		}
	default:
		s.cfg.Logf("unexpected first message %q from %s", m.Type, nc.RemoteAddr())
	}
}

func railName(r *Rail) string {
	if r == nil {
		return ""
	}
	return r.Name()
}

// finish records what the client could not cover on this side: server
// rails no client rail pairs with (same mode), and the client's own
// probe-wide failure.
func (s *server) finish(m message) {
	for _, idx := range m.Unpaired {
		rail, err := s.rail(&Rail{Index: idx})
		if err != nil {
			continue
		}
		perr := probeout.Errorf(probeout.KindNoDevice, "no client rail pairs with server rail %s: the client has %d rail(s) %v, same-mode pairing needs one per server rail (is a NIC missing on the client node, or use --rails cross)",
			rail.Name(), len(m.Rails), railNames(m.Rails))
		s.record(rail, nil, Report{}, perr)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.finished = true
	if m.Kind != "" {
		s.finishErr = Classify(peerError("client", "", m))
	}
}

func railNames(rs []Rail) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.Name()
	}
	return out
}

// session serves one op on one of our rails.
func (s *server) session(c *conn, hello message) {
	c.peerRail = railName(hello.ClientRail)
	rail, err := s.rail(hello.Rail)
	if err != nil {
		c.sendErr(err, message{})
		s.cfg.Logf("%v", err)
		return
	}
	if hello.Params == nil {
		c.sendErr(Tag(ErrUsage, errors.New("client hello without parameters")), message{})
		return
	}
	p := *hello.Params
	rep := Report{Role: "server", Params: p, Device: railDevice(rail), Peer: c.c.RemoteAddr().String(), Results: []SizeResult{}}
	fail := func(err error) {
		s.cfg.Logf("rail %s %s: %v", rail.Name(), p.Op, err)
		s.record(rail, hello.ClientRail, rep, Classify(err))
	}
	if err := p.Validate(); err != nil {
		err = Tag(ErrUsage, err)
		c.sendErr(err, message{})
		fail(err)
		return
	}
	if len(hello.QPs) != p.QPs {
		err := Tag(ErrUsage, fmt.Errorf("client sent %d QPs, want %d", len(hello.QPs), p.QPs))
		c.sendErr(err, message{})
		fail(err)
		return
	}
	if err := portActive(rail); err != nil {
		c.sendErr(err, message{})
		fail(err)
		return
	}
	res, err := s.cfg.Open(rail, p)
	if err != nil {
		c.sendErr(err, message{})
		fail(err)
		return
	}
	defer res.Close()
	rep.Device = res.Describe()
	if err := c.send(message{Type: "hello", QPs: res.Local()}); err != nil {
		fail(err)
		return
	}
	if err := res.Connect(hello.QPs); err != nil {
		c.sendErr(err, message{})
		fail(err)
		return
	}
	for {
		m, err := c.recv("start", 10*time.Minute)
		if m.Type == "bye" {
			s.record(rail, hello.ClientRail, rep, nil)
			return
		}
		if err != nil {
			fail(err)
			return
		}
		br := openBracket(s.cfg.Counters, rail)
		idle := startProcessUsage()
		if err := c.send(message{Type: "ready"}); err != nil {
			fail(err)
			return
		}
		if p.Latency && p.Op.PingPongs() {
			// ib_write_lat, ib_send_lat: the server answers every ping in
			// its own loop.
			pp, ok := res.(PingPonger)
			if !ok {
				err := fmt.Errorf("size %d: %s latency needs the endpoint's ping-pong loop, which the server's endpoint lacks", m.Size, p.Op)
				c.sendErr(err, message{})
				fail(err)
				return
			}
			if _, err := pp.PingPong(p, m.Size, false); err != nil {
				err = fmt.Errorf("size %d: answering the ping-pong: %w", m.Size, err)
				c.sendErr(err, message{})
				fail(err)
				return
			}
			// The answering side's thread bends the round trip as much as
			// the client's: its disturbance goes to the log (the client's
			// is in its figures).
			if d := lastDisturbance(res); d != nil {
				s.cfg.Logf("rail %s %s latency %d B, answering thread: %d preemptions, %.2f of a CPU over %.0f ms, other threads %.1f ms CPU",
					rail.Name(), p.Op, m.Size, d.Preemptions, d.ThreadCPUShare, d.WallMs, d.OtherThreadsCPUMs)
			}
		}
		var local *Figures
		if p.Bidirectional {
			f, err := Measure(res, p, m.Size, s.cfg.Clock)
			if err != nil {
				err = fmt.Errorf("size %d: %w", m.Size, err)
				c.sendErr(err, message{})
				fail(err)
				return
			}
			local = &f
		}
		done, err := c.recv("done", sizeTimeout(p, m.Size))
		if err != nil {
			fail(fmt.Errorf("size %d: %w", m.Size, err))
			return
		}
		if u, ok := idle.end(); ok {
			// On a software device the responder's work runs on this
			// host's CPUs: a server process busy while the client
			// measured takes them from it.
			s.cfg.Logf("rail %s %s %d B, server process while the client measured: %s", rail.Name(), p.Op, m.Size, u)
		}
		counters, countersErr := br.close()
		renewed, err := renewForClient(res, done.QPs)
		if err != nil {
			err = fmt.Errorf("size %d: %w", m.Size, err)
			c.sendErr(err, message{})
			fail(err)
			return
		}
		if err := c.send(message{Type: "done", Result: local, Counters: counters, CountersErr: countersErr, QPs: renewed}); err != nil {
			fail(err)
			return
		}
		sr := SizeResult{Remote: done.Result, Counters: &SizeCounters{Local: counters, LocalErr: countersErr}}
		if local != nil {
			sr.Local = *local
		}
		if done.Result != nil {
			sr.Total = sr.Local.Add(*done.Result)
		}
		rep.Results = append(rep.Results, sr)
	}
}

// renewForClient answers a client that renewed its QPs (clientQPs, from
// its done): the server's QPs are replaced too and connected to the
// client's new ones before the answer, so the client's first post of the
// next size finds them ready. nil when the client renewed nothing.
func renewForClient(res Resources, clientQPs []QPInfo) ([]QPInfo, error) {
	if len(clientQPs) == 0 {
		return nil, nil
	}
	rn, ok := res.(QPRenewer)
	if !ok {
		return nil, fmt.Errorf("the client renewed its QPs after a duration run, and this server's endpoint cannot renew its own")
	}
	qps, err := rn.RenewQPs()
	if err != nil {
		return nil, fmt.Errorf("renewing the QPs: %w", err)
	}
	if err := res.Connect(clientQPs); err != nil {
		return nil, fmt.Errorf("connecting the renewed QPs: %w", err)
	}
	return qps, nil
}

func nonNil(rs []Rail) []Rail {
	if rs == nil {
		return []Rail{}
	}
	return rs
}
