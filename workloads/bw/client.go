package bw

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/rdmasuite/rdmasuite/workloads/probeout"
)

// ClientConfig is the client side of `rdmaprobe bw`.
type ClientConfig struct {
	Addr   string // the server's HOST:PORT
	Found  []Rail // every rail the side sees
	Rails  []Rail // the rails to measure from, in pairing order
	Open   Factory
	Clock  Clock
	Params Params // every session's parameters; Op is set per session from Ops
	// Counters reads a rail's port counters around each size; nil reads
	// none (the results then say so).
	Counters CounterReader
	Ops      []Op
	Mode     string // RailsSame (default) or RailsCross
	// Parallel measures rails at the same time (ops stay sequential per
	// rail pair); in cross mode in rounds where no rail is used twice.
	Parallel bool
	// Timeout bounds connecting to the server (it may still be starting).
	Timeout time.Duration
	// Err is a probe-wide failure found before measuring (no device, bad
	// flags): nothing is measured, but the server is told to finish.
	Err *probeout.Error
	// OnReport, if set, sees each op's report as it completes (tables).
	OnReport func(local Rail, peer *Rail, rep Report)
	Logf     func(format string, args ...any)
	// measuring and measured, if set, are called right before and right
	// after each size's measurement: latency under load times the
	// measurements themselves, not their sessions' set-up and wrap-up.
	measuring, measured func()
}

// Requested is what the config asks for.
func (cfg ClientConfig) Requested() Requested {
	mode := cfg.Mode
	if mode == "" {
		mode = RailsSame
	}
	return Requested{Ops: cfg.Ops, Sizes: cfg.Params.Sizes, RailMode: mode, Parallel: cfg.Parallel}
}

// pair is one planned rail pair; err is set when it cannot run (same mode,
// no peer rail at this position).
type pair struct {
	local Rail
	peer  *Rail
	err   *probeout.Error
}

// RunClient asks the server for its rails, measures every op on every
// rail pair (Mode), tells the server to finish, and returns one
// RailResult per pair, each with one Report per op (the sizes that
// completed) and the typed error if anything was not measured. A failing
// pair does not stop the others. The second value is a probe-wide error.
func RunClient(ctx context.Context, cfg ClientConfig) (ProbeOutput, *probeout.Error) {
	if cfg.Logf == nil {
		cfg.Logf = func(string, ...any) {}
	}
	if cfg.Clock == nil {
		cfg.Clock = RealClock()
	}
	out := ProbeOutput{Role: "client", Requested: cfg.Requested(), Found: nonNil(cfg.Found), Rails: []RailResult{}}
	perr := cfg.Err
	if perr == nil {
		if err := validate(cfg); err != nil {
			perr = Classify(Tag(ErrUsage, err))
		}
	}
	req := out.Requested
	srvRails, err := askRails(ctx, cfg, &req)
	if err != nil {
		if perr == nil {
			perr = Classify(err)
		}
		if isPeer(err) {
			sendFinish(ctx, cfg, message{Rails: cfg.Rails}, perr)
		}
		return out, perr
	}
	if perr != nil {
		sendFinish(ctx, cfg, message{Rails: cfg.Rails}, perr)
		return out, perr
	}
	pairs, unpaired := plan(cfg.Rails, srvRails, out.Requested.RailMode)
	results := make([]RailResult, len(pairs))
	run := func(i int) { results[i] = runPair(ctx, cfg, pairs[i]) }
	if cfg.Parallel {
		for _, round := range rounds(pairs) {
			var wg sync.WaitGroup
			for _, i := range round {
				wg.Go(func() { run(i) })
			}
			wg.Wait()
		}
	} else {
		for i := range pairs {
			run(i)
		}
	}
	out.Rails = results
	sendFinish(ctx, cfg, message{Rails: cfg.Rails, Unpaired: unpaired}, nil)
	return out, nil
}

func validate(cfg ClientConfig) error {
	if m := cfg.Mode; m != "" && m != RailsSame && m != RailsCross {
		return fmt.Errorf("rail mode %q: want %s or %s", m, RailsSame, RailsCross)
	}
	if len(cfg.Ops) == 0 {
		return fmt.Errorf("no op: give --op write, read or write,read")
	}
	for _, op := range cfg.Ops {
		p := cfg.Params
		p.Op = op
		if err := p.Validate(); err != nil {
			return err
		}
	}
	if len(cfg.Rails) == 0 {
		return fmt.Errorf("no rail to measure from")
	}
	return nil
}

func isPeer(err error) bool {
	var pe *PeerError
	return errors.As(err, &pe)
}

// askRails is the first exchange: the client says what it was asked for
// (the server records it) and gets the server's rails.
//
// A connection the server closes before answering is asked again until
// cfg.Timeout: in a multi-run pod (--then) the server's previous run
// answers its client's finish and then closes its listener, and a
// connection for the next run that reached that listener in between is
// dropped unanswered (seen as "connection reset by peer" while
// the next run's server waited for a client). The request is idempotent:
// nothing was measured on a dropped connection.
func askRails(ctx context.Context, cfg ClientConfig, req *Requested) ([]Rail, error) {
	deadline := time.Now().Add(cfg.Timeout)
	for {
		rails, err := askRailsOnce(ctx, cfg, req, time.Until(deadline))
		if err == nil || !droppedUnanswered(err) || time.Now().After(deadline) || ctx.Err() != nil {
			return rails, err
		}
		cfg.Logf("rails: %v: the server dropped the connection unanswered (a previous run's listener closing); asking again", err)
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(250 * time.Millisecond):
		}
	}
}

func askRailsOnce(ctx context.Context, cfg ClientConfig, req *Requested, timeout time.Duration) ([]Rail, error) {
	nc, err := dialRetry(ctx, cfg.Addr, max(timeout, time.Second))
	if err != nil {
		return nil, err
	}
	defer nc.Close()
	c := newConn(nc, "server")
	if err := c.send(message{Type: "rails", Requested: req}); err != nil {
		return nil, err
	}
	m, err := c.recv("rails", 60*time.Second)
	if err != nil {
		return nil, err
	}
	return m.Rails, nil
}

// droppedUnanswered reports whether the server closed the control
// connection (EOF, reset, broken pipe) rather than answering or timing out.
func droppedUnanswered(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// sendFinish tells the server there is nothing more; failing to is only
// logged (the server then stops on its own timeout).
func sendFinish(ctx context.Context, cfg ClientConfig, m message, perr *probeout.Error) {
	m.Type = "finish"
	if perr != nil {
		m.Kind, m.Error = perr.Kind, perr.Message
	}
	nc, err := dialRetry(ctx, cfg.Addr, min(cfg.Timeout, 30*time.Second))
	if err != nil {
		cfg.Logf("finish: %v", err)
		return
	}
	defer nc.Close()
	c := newConn(nc, "server")
	if err := c.send(m); err != nil {
		cfg.Logf("finish: %v", err)
		return
	}
	if _, err := c.recv("bye", 30*time.Second); err != nil {
		cfg.Logf("finish: %v", err)
	}
}

// renewIfInFlight replaces the client's QPs when the size just measured
// left work in flight and another size follows (the last size's QPs are
// destroyed with the session); nil when nothing was renewed.
func renewIfInFlight(res Resources, more bool) ([]QPInfo, error) {
	rn, ok := res.(QPRenewer)
	if !ok || !more || rn.LeftInFlight() == 0 {
		return nil, nil
	}
	return rn.RenewQPs()
}

// plan pairs the client's rails with the server's. same: position i with
// position i; a client rail without a counterpart is a pair with an error,
// a server rail without one is returned (by index) for the finish. cross:
// every client rail with every server rail.
func plan(local, remote []Rail, mode string) (pairs []pair, unpaired []int) {
	if mode == RailsCross {
		for _, l := range local {
			for j := range remote {
				pairs = append(pairs, pair{local: l, peer: &remote[j]})
			}
		}
		return pairs, nil
	}
	for i := 0; i < max(len(local), len(remote)); i++ {
		switch {
		case i < len(local) && i < len(remote):
			pairs = append(pairs, pair{local: local[i], peer: &remote[i]})
		case i < len(local):
			pairs = append(pairs, pair{local: local[i], err: probeout.Errorf(probeout.KindNoDevice,
				"no server rail pairs with client rail %s: the server offers %d rail(s) %v, same-mode pairing needs one per client rail (is a NIC missing on the server node, or use --rails cross)",
				local[i].Name(), len(remote), railNames(remote))})
		default:
			unpaired = append(unpaired, remote[i].Index)
		}
	}
	return pairs, unpaired
}

// rounds groups pair indexes so that no rail (local or peer) is in two
// pairs of one round: with i and j the positions of a pair's local and
// peer rail, round r holds the pairs with j − i ≡ r (mod max(n, m)). Same
// mode is one round; cross mode n×m is max(n, m) rounds. A pair without a
// peer runs in the first round.
func rounds(pairs []pair) [][]int {
	lpos, ppos := map[int]int{}, map[int]int{}
	for _, p := range pairs {
		if _, ok := lpos[p.local.Index]; !ok {
			lpos[p.local.Index] = len(lpos)
		}
		if p.peer != nil {
			if _, ok := ppos[p.peer.Index]; !ok {
				ppos[p.peer.Index] = len(ppos)
			}
		}
	}
	k := max(len(lpos), len(ppos), 1)
	out := make([][]int, k)
	for n, p := range pairs {
		r := 0
		if p.peer != nil {
			r = ((ppos[p.peer.Index]-lpos[p.local.Index])%k + k) % k
		}
		out[r] = append(out[r], n)
	}
	return slices.DeleteFunc(out, func(r []int) bool { return len(r) == 0 })
}

// runPair runs every op, in order, on one rail pair.
func runPair(ctx context.Context, cfg ClientConfig, pr pair) RailResult {
	rr := RailResult{Local: pr.local, Peer: pr.peer, Runs: []Report{}}
	for _, op := range cfg.Ops {
		p := cfg.Params
		p.Op = op
		if pr.err != nil {
			rr.Runs = append(rr.Runs, Report{Role: "client", Params: p, Device: railDevice(pr.local), Results: []SizeResult{}})
			continue
		}
		measure := session
		if p.LoadSize > 0 {
			measure = underLoad
		}
		rep, err := measure(ctx, cfg, pr.local, *pr.peer, p)
		if err != nil {
			rep.Error = Classify(err)
		}
		rr.Runs = append(rr.Runs, rep)
		if cfg.OnReport != nil {
			cfg.OnReport(pr.local, pr.peer, rep)
		}
		if err != nil {
			cfg.Logf("rail %s ↔ server %s %s: %v", pr.local.Name(), pr.peer.Name(), op, err)
			addError(&rr, op, rep.Error)
		}
	}
	if pr.err != nil {
		rr.Error = pr.err
	}
	return rr
}

// session runs one op between local and the server's peer rail: its own
// connection, resources, QP exchange and every size.
func session(ctx context.Context, cfg ClientConfig, local, peer Rail, p Params) (Report, error) {
	rep := Report{Role: "client", Params: p, Device: railDevice(local), Peer: cfg.Addr, Results: []SizeResult{}}
	setupStart := time.Now()
	// The server answered the rails request: it is up, so a session that
	// cannot connect soon means it is gone (do not wait --timeout per op).
	nc, err := dialRetry(ctx, cfg.Addr, min(cfg.Timeout, 15*time.Second))
	if err != nil {
		return rep, err
	}
	defer nc.Close()
	stop := context.AfterFunc(ctx, func() { nc.Close() })
	defer stop()
	c := newConn(nc, "server")
	c.peerRail = peer.Name()
	base := message{Params: &p, Rail: &peer, ClientRail: &local}
	// Our port first: a down rail is reported (to the server too) without
	// trying to measure.
	if err := portActive(local); err != nil {
		c.sendErr(err, base)
		return rep, err
	}
	res, err := cfg.Open(local, p)
	if err != nil {
		c.sendErr(err, base)
		return rep, err
	}
	defer res.Close()
	rep.Device = res.Describe()
	hello := base
	hello.Type, hello.QPs = "hello", res.Local()
	if err := c.send(hello); err != nil {
		return rep, err
	}
	srv, err := c.recv("hello", 60*time.Second)
	if err != nil {
		return rep, err
	}
	if len(srv.QPs) != p.QPs {
		return rep, fmt.Errorf("server sent %d QPs, want %d", len(srv.QPs), p.QPs)
	}
	if err := res.Connect(srv.QPs); err != nil {
		c.sendErr(err, message{})
		return rep, err
	}
	rep.SetupSec = time.Since(setupStart).Seconds()
	for i, size := range p.Sizes {
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		if err := c.send(message{Type: "start", Size: size}); err != nil {
			return rep, err
		}
		if _, err := c.recv("ready", 60*time.Second); err != nil {
			return rep, fmt.Errorf("size %d: %w", size, err)
		}
		br := openBracket(cfg.Counters, local)
		if cfg.measuring != nil {
			cfg.measuring()
		}
		f, err := Measure(res, p, size, cfg.Clock)
		if cfg.measured != nil {
			cfg.measured()
		}
		counters, countersErr := br.close()
		if err != nil {
			err = fmt.Errorf("size %d: %w", size, err)
			c.sendErr(err, message{})
			rep.FailedSize = size
			rep.FailedCounters = &SizeCounters{Local: counters, LocalErr: countersErr,
				PeerErr: "the measurement failed before the server sent its port counters"}
			return rep, err
		}
		renewed, err := renewIfInFlight(res, i < len(p.Sizes)-1)
		if err != nil {
			err = fmt.Errorf("size %d: replacing the QPs that stopped with work in flight: %w", size, err)
			c.sendErr(err, message{})
			return rep, err
		}
		if err := c.send(message{Type: "done", Result: &f, QPs: renewed}); err != nil {
			return rep, err
		}
		done, err := c.recv("done", sizeTimeout(p, size))
		if err != nil {
			return rep, fmt.Errorf("size %d: %w", size, err)
		}
		if renewed != nil {
			if len(done.QPs) != len(renewed) {
				return rep, fmt.Errorf("size %d: the server answered the renewed QPs with %d of its own, want %d (a server probe older than this client?)", size, len(done.QPs), len(renewed))
			}
			if err := res.Connect(done.QPs); err != nil {
				c.sendErr(err, message{})
				return rep, fmt.Errorf("size %d: connecting the renewed QPs: %w", size, err)
			}
		}
		sc := &SizeCounters{Local: counters, LocalErr: countersErr, Peer: done.Counters, PeerErr: done.CountersErr}
		if sc.Peer == nil && sc.PeerErr == "" {
			sc.PeerErr = "the server sent no port counters (a probe older than this client)"
		}
		sr := SizeResult{Local: f, Remote: done.Result, Total: f, Counters: sc}
		if done.Result != nil {
			sr.Total = f.Add(*done.Result)
		}
		rep.Results = append(rep.Results, sr)
	}
	_ = c.send(message{Type: "bye"})
	return rep, nil
}
