package bw

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rdmasuite/rdmasuite/workloads/probeout"
)

// fakeRes pairs the fake endpoint with QP info for the session tests.
type fakeRes struct {
	fakeEP
	n         int
	dev       string
	connected []QPInfo
	closed    bool
	pongs     []bool // PingPong calls: true from the client side
	pongDelay time.Duration
}

func (r *fakeRes) Local() []QPInfo {
	out := make([]QPInfo, r.n)
	for i := range out {
		out[i] = QPInfo{QPN: uint32(100 + i), GID: "::ffff:192.168.77.1"}
	}
	return out
}
func (r *fakeRes) Connect(remote []QPInfo) error { r.connected = remote; return nil }

// PingPong answers like a peer 5 µs away; it records which side called.
func (r *fakeRes) PingPong(p Params, _ int, client bool) ([]time.Duration, error) {
	r.mu.Lock()
	r.pongs = append(r.pongs, client)
	r.mu.Unlock()
	if client && p.LoadSize > 0 {
		time.Sleep(r.pongDelay)
	}
	out := make([]time.Duration, p.Iters)
	for i := range out {
		out[i] = time.Duration(i) * 10 * time.Microsecond
	}
	return out, nil
}
func (r *fakeRes) Describe() Device { return Device{Name: r.dev, Port: 1} }
func (r *fakeRes) Close() error     { r.closed = true; return nil }

// fakeSide opens fake resources and remembers them; fail, if set, decides
// per rail whether opening fails, and failAfter makes a rail's endpoint
// fail its completions after that many posts.
type fakeSide struct {
	mu        sync.Mutex
	opened    []*fakeRes
	fail      func(r Rail, p Params) error
	failAfter map[string]int
	failOp    Op // when set, failAfter applies to this op's sessions only
	counters  CounterReader
	// renews opens endpoints that renew their QPs (QPRenewer) and claim
	// that every loop left leaveInFlight operations in flight.
	renews        bool
	leaveInFlight int
	renewing      []*renewingRes
	// pongDelay slows every ping-pong run under load (Params.LoadSize).
	pongDelay time.Duration
}

// renewingRes is a fakeRes whose loops stop with work in flight (a
// perftest -D run on the verbs endpoint): each RenewQPs hands out QP
// numbers of a new generation.
type renewingRes struct {
	*fakeRes
	inFlight, gen int
	// connects holds the QP numbers each Connect joined to, in order.
	connects [][]uint32
}

func (r *renewingRes) LeftInFlight() int { return r.inFlight }
func (r *renewingRes) RenewQPs() ([]QPInfo, error) {
	r.gen++
	return r.Local(), nil
}
func (r *renewingRes) Local() []QPInfo {
	out := r.fakeRes.Local()
	for i := range out {
		out[i].QPN += uint32(1000 * r.gen)
	}
	return out
}
func (r *renewingRes) Connect(remote []QPInfo) error {
	var qpns []uint32
	for _, q := range remote {
		qpns = append(qpns, q.QPN)
	}
	r.connects = append(r.connects, qpns)
	return r.fakeRes.Connect(remote)
}

func (s *fakeSide) open(r Rail, p Params) (Resources, error) {
	if s.fail != nil {
		if err := s.fail(r, p); err != nil {
			return nil, err
		}
	}
	res := &fakeRes{n: p.QPs, dev: r.Device, pongDelay: s.pongDelay}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failOp == "" || s.failOp == p.Op {
		res.failAfter = s.failAfter[r.Device]
	}
	s.opened = append(s.opened, res)
	if s.renews {
		rr := &renewingRes{fakeRes: res, inFlight: s.leaveInFlight}
		s.renewing = append(s.renewing, rr)
		return rr, nil
	}
	return res, nil
}

func (s *fakeSide) allClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range s.opened {
		if !r.closed {
			return false
		}
	}
	return true
}

func testRails(devs ...string) []Rail {
	out := make([]Rail, len(devs))
	for i, d := range devs {
		state := "ACTIVE"
		if name, ok := strings.CutSuffix(d, ":down"); ok {
			d, state = name, "DOWN"
		}
		out[i] = Rail{Index: i, Device: d, Port: 1, State: state, LinkLayer: "Ethernet", RateGbps: 100}
	}
	return out
}

func testParams(sizes ...int) Params {
	p := Defaults()
	p.Sizes, p.Iters = sizes, 200
	return p
}

type sideOut struct {
	out  ProbeOutput
	perr *probeout.Error
}

// runBoth runs a server and a client over loopback TCP and returns both
// outputs. The server's timeout is short, so a missing finish shows.
func runBoth(t *testing.T, srvRails []Rail, srv *fakeSide, cli ClientConfig, cliSide *fakeSide) (client, server sideOut) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srvDone := make(chan sideOut, 1)
	go func() {
		out, perr := Serve(context.Background(), ln, ServerConfig{Found: srvRails, Rails: srvRails, Open: srv.open,
			Clock: fakeClock(time.Microsecond), Timeout: 3 * time.Second, Counters: srv.counters})
		srvDone <- sideOut{out, perr}
	}()
	cli.Addr, cli.Open, cli.Timeout = ln.Addr().String(), cliSide.open, 5*time.Second
	if cli.Clock == nil {
		cli.Clock = fakeClock(time.Microsecond)
	}
	if cli.Found == nil {
		cli.Found = cli.Rails
	}
	out, perr := RunClient(context.Background(), cli)
	select {
	case s := <-srvDone:
		return sideOut{out, perr}, s
	case <-time.After(10 * time.Second):
		t.Fatal("server did not exit after the client's finish")
	}
	return
}

// measured fails unless the rail pair holds every op with every size and
// no error.
func measured(t *testing.T, who string, rr RailResult, ops []Op, sizes int) {
	t.Helper()
	if rr.Error != nil {
		t.Fatalf("%s rail %s: unexpected error %v", who, rr.Local.Name(), rr.Error)
	}
	if len(rr.Runs) != len(ops) {
		t.Fatalf("%s rail %s: %d runs for ops %v", who, rr.Local.Name(), len(rr.Runs), ops)
	}
	for i, run := range rr.Runs {
		if run.Params.Op != ops[i] || len(run.Results) != sizes {
			t.Fatalf("%s rail %s run %d: op %s with %d results, want %s with %d", who, rr.Local.Name(), i, run.Params.Op, len(run.Results), ops[i], sizes)
		}
	}
}

func TestTwoRailsSameModeAllMeasured(t *testing.T) {
	srv, cli := &fakeSide{}, &fakeSide{}
	ops := []Op{OpWrite, OpRead}
	c, s := runBoth(t, testRails("s0", "s1"), srv, ClientConfig{Rails: testRails("c0", "c1"), Params: testParams(4096, 65536), Ops: ops}, cli)
	if c.perr != nil || s.perr != nil {
		t.Fatalf("probe errors: client %v server %v", c.perr, s.perr)
	}
	if len(c.out.Rails) != 2 || len(s.out.Rails) != 2 {
		t.Fatalf("rail pairs: client %d server %d, want 2 each", len(c.out.Rails), len(s.out.Rails))
	}
	for i, rr := range c.out.Rails {
		measured(t, "client", rr, ops, 2)
		if rr.Local.Index != i || rr.Peer == nil || rr.Peer.Index != i || rr.Runs[0].Device.Name != rr.Local.Device {
			t.Fatalf("client rail %d paired %+v ↔ %+v", i, rr.Local, rr.Peer)
		}
	}
	for i, rr := range s.out.Rails {
		measured(t, "server", rr, ops, 2)
		if rr.Local.Device != []string{"s0", "s1"}[i] || rr.Peer == nil || rr.Peer.Device != []string{"c0", "c1"}[i] {
			t.Fatalf("server rail %d paired %+v ↔ %+v", i, rr.Local, rr.Peer)
		}
	}
	if miss := c.out.Incomplete(); len(miss) != 0 {
		t.Fatalf("client incomplete: %v", miss)
	}
	if miss := s.out.Incomplete(); len(miss) != 0 {
		t.Fatalf("server incomplete: %v", miss)
	}
	if !slices.Equal(s.out.Requested.Ops, ops) || s.out.Requested.RailMode != RailsSame || len(s.out.Requested.Sizes) != 2 {
		t.Fatalf("server did not record what the client asked for: %+v", s.out.Requested)
	}
	if !srv.allClosed() || !cli.allClosed() || len(srv.opened) != 4 || len(cli.opened) != 4 {
		t.Fatalf("resources: server opened %d, client %d (want 4 each, all closed)", len(srv.opened), len(cli.opened))
	}
}

func TestCrossModeParallelNxM(t *testing.T) {
	srv, cli := &fakeSide{}, &fakeSide{}
	ops := []Op{OpWrite}
	c, s := runBoth(t, testRails("s0", "s1", "s2"), srv,
		ClientConfig{Rails: testRails("c0", "c1"), Params: testParams(65536), Ops: ops, Mode: RailsCross, Parallel: true}, cli)
	if c.perr != nil || s.perr != nil {
		t.Fatalf("probe errors: client %v server %v", c.perr, s.perr)
	}
	if len(c.out.Rails) != 6 || len(s.out.Rails) != 6 {
		t.Fatalf("rail pairs: client %d server %d, want 2×3 = 6", len(c.out.Rails), len(s.out.Rails))
	}
	seen := map[[2]int]bool{}
	for _, rr := range c.out.Rails {
		measured(t, "client", rr, ops, 1)
		seen[[2]int{rr.Local.Index, rr.Peer.Index}] = true
	}
	for _, rr := range s.out.Rails {
		measured(t, "server", rr, ops, 1)
	}
	if len(seen) != 6 || !c.out.Requested.Parallel || c.out.Requested.RailMode != RailsCross {
		t.Fatalf("pairs %v, requested %+v", seen, c.out.Requested)
	}
}

func TestRoundsUseEachRailOncePerRound(t *testing.T) {
	pairs, _ := plan(testRails("c0", "c1"), testRails("s0", "s1", "s2"), RailsCross)
	rs := rounds(pairs)
	if len(rs) != 3 {
		t.Fatalf("%d rounds for 2×3, want 3", len(rs))
	}
	count := 0
	for _, r := range rs {
		for i, a := range r {
			for _, b := range r[i+1:] {
				if pairs[a].local.Index == pairs[b].local.Index || pairs[a].peer.Index == pairs[b].peer.Index {
					t.Fatalf("round %v uses a rail twice", r)
				}
			}
		}
		count += len(r)
	}
	if count != 6 {
		t.Fatalf("rounds cover %d pairs, want 6", count)
	}
}

func TestServerRailDownOnlyThatRailFails(t *testing.T) {
	srv, cli := &fakeSide{}, &fakeSide{}
	ops := []Op{OpWrite, OpRead}
	c, s := runBoth(t, testRails("s0", "s1:down"), srv, ClientConfig{Rails: testRails("c0", "c1"), Params: testParams(65536), Ops: ops}, cli)
	if c.perr != nil || s.perr != nil {
		t.Fatalf("a down rail is a rail error, not a probe-wide one: client %v server %v", c.perr, s.perr)
	}
	measured(t, "client", c.out.Rails[0], ops, 1)
	measured(t, "server", s.out.Rails[0], ops, 1)
	srvDown, cliDown := s.out.Rails[1], c.out.Rails[1]
	if srvDown.Error == nil || srvDown.Error.Kind != probeout.KindLinkDown || !strings.Contains(srvDown.Error.Message, "s1/1 is DOWN") {
		t.Fatalf("server's down rail: %+v", srvDown.Error)
	}
	// The client's side of it: the peer failed, and says why (its kind).
	if cliDown.Error == nil || cliDown.Error.Kind != probeout.KindPeer || !strings.Contains(cliDown.Error.Message, "server rail s1/1 failed: link-down") {
		t.Fatalf("client's rail facing the down server rail: %+v", cliDown.Error)
	}
	if len(cliDown.Runs) != 2 || len(cliDown.Runs[0].Results) != 0 || cliDown.Peer == nil || cliDown.Peer.State != "DOWN" {
		t.Fatalf("client's failed rail must hold an empty run per op and the peer rail: %+v", cliDown)
	}
	for _, o := range []ProbeOutput{c.out, s.out} {
		miss := o.Incomplete()
		if len(miss) == 0 || strings.Contains(strings.Join(miss, "\n"), "0/1 ") {
			t.Fatalf("%s incomplete: %v: want only rail 1 missing", o.Role, miss)
		}
	}
	if len(srv.opened) != 2 || len(cli.opened) != 4 {
		t.Fatalf("the server must not open resources on its down rail: opened %d", len(srv.opened))
	}
}

func TestClientRailDownAndLiveStateCheck(t *testing.T) {
	// The discovered state said ACTIVE, the factory's live check says
	// DOWN (the link dropped since): still link-down, before measuring.
	cli := &fakeSide{fail: func(r Rail, p Params) error {
		if r.Device == "c1" {
			return Tag(ErrLinkDown, errors.New("c1 port 1 is DOWN (physical state Disabled)"))
		}
		return nil
	}}
	srv := &fakeSide{}
	c, s := runBoth(t, testRails("s0", "s1"), srv, ClientConfig{Rails: testRails("c0", "c1"), Params: testParams(65536), Ops: []Op{OpWrite}}, cli)
	if e := c.out.Rails[1].Error; e == nil || e.Kind != probeout.KindLinkDown {
		t.Fatalf("client rail c1: %+v", e)
	}
	if e := s.out.Rails[1].Error; e == nil || e.Kind != probeout.KindPeer || !strings.Contains(e.Message, "client rail c1/1 failed: link-down") {
		t.Fatalf("server's rail facing the down client rail: %+v", e)
	}
	if c.out.Rails[0].Error != nil || s.out.Rails[0].Error != nil || len(srv.opened) != 1 {
		t.Fatalf("the healthy rail must be measured and the server must not open resources for the down one")
	}
}

func TestMemlockIsTyped(t *testing.T) {
	cli := &fakeSide{fail: func(Rail, Params) error {
		return Tag(ErrMemlock, &net.OpError{Op: "ibv_reg_mr(1 MiB)", Err: syscall.ENOMEM})
	}}
	c, s := runBoth(t, testRails("s0"), &fakeSide{}, ClientConfig{Rails: testRails("c0"), Params: testParams(1 << 20), Ops: []Op{OpWrite}}, cli)
	if e := c.out.Rails[0].Error; e == nil || e.Kind != probeout.KindMemlock || !strings.Contains(e.Message, "cannot allocate memory") {
		t.Fatalf("client: %+v", e)
	}
	if e := s.out.Rails[0].Error; e == nil || e.Kind != probeout.KindPeer || !strings.Contains(e.Message, "memlock") {
		t.Fatalf("server: %+v", e)
	}
}

// A client whose transport dies after the first of two sizes: its rail
// holds the one size and a transport error; the server's holds the same
// size and a peer error naming the client's kind. Both are incomplete.
func TestTransportFailureAfterFirstSize(t *testing.T) {
	cli := &fakeSide{failAfter: map[string]int{"c0": 200}} // size 1 is 200 posts
	ops := []Op{OpWrite, OpRead}
	c, s := runBoth(t, testRails("s0", "s1"), &fakeSide{}, ClientConfig{Rails: testRails("c0", "c1"), Params: testParams(4096, 65536), Ops: ops}, cli)
	rr := c.out.Rails[0]
	if rr.Error == nil || rr.Error.Kind != probeout.KindTransport || !strings.Contains(rr.Error.Message, "transport retry counter exceeded") {
		t.Fatalf("client rail 0 error: %+v", rr.Error)
	}
	if len(rr.Runs) != 2 || len(rr.Runs[0].Results) != 1 || rr.Runs[0].Results[0].Local.Bytes != 4096 {
		t.Fatalf("client rail 0 must keep the size that completed: %+v", rr.Runs)
	}
	srr := s.out.Rails[0]
	if srr.Error == nil || srr.Error.Kind != probeout.KindPeer || !strings.Contains(srr.Error.Message, "transport") || len(srr.Runs[0].Results) != 1 {
		t.Fatalf("server rail 0: %+v", srr)
	}
	measured(t, "client", c.out.Rails[1], ops, 2)
	if len(c.out.Incomplete()) == 0 || len(s.out.Incomplete()) == 0 {
		t.Fatal("a partial rail must make both sides incomplete (non-zero exit)")
	}
}

// Each op's run carries its own error, so that a verdict can
// fail the op that broke and not the one that measured cleanly after it on
// the same rail; the rail's error still joins them (older readers).
func TestEachOpRunCarriesItsOwnError(t *testing.T) {
	cli := &fakeSide{failAfter: map[string]int{"c0": 200}, failOp: OpWrite}
	ops := []Op{OpWrite, OpRead}
	c, s := runBoth(t, testRails("s0"), &fakeSide{}, ClientConfig{Rails: testRails("c0"), Params: testParams(4096, 65536), Ops: ops}, cli)
	rr := c.out.Rails[0]
	if len(rr.Runs) != 2 || rr.Runs[0].Error == nil || rr.Runs[0].Error.Kind != probeout.KindTransport || rr.Runs[1].Error != nil {
		t.Fatalf("client runs: write %+v, read %+v", rr.Runs[0].Error, rr.Runs[1].Error)
	}
	if len(rr.Runs[1].Results) != 2 || rr.Error == nil || !strings.HasPrefix(rr.Error.Message, "write: ") {
		t.Fatalf("read must be measured whole, the rail error name write: %+v", rr)
	}
	srr := s.out.Rails[0]
	if len(srr.Runs) != 2 || srr.Runs[0].Error == nil || srr.Runs[0].Error.Kind != probeout.KindPeer || srr.Runs[1].Error != nil {
		t.Fatalf("server runs: %+v", srr.Runs)
	}
}

// A client process that dies (its connection drops) after the first of
// two sizes: the server keeps the size, records a peer error on that rail,
// and, with no finish coming, ends with a timeout.
func TestClientDiesAfterFirstSize(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srvRails := testRails("s0")
	done := make(chan sideOut, 1)
	go func() {
		out, perr := Serve(context.Background(), ln, ServerConfig{Found: srvRails, Rails: srvRails, Open: (&fakeSide{}).open,
			Clock: fakeClock(time.Microsecond), Timeout: 500 * time.Millisecond})
		done <- sideOut{out, perr}
	}()
	nc, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	c := newConn(nc, "server")
	p := testParams(4096, 65536)
	cr := testRails("c0")[0]
	step := func(m message, want string) {
		if err := c.send(m); err != nil {
			t.Fatal(err)
		}
		if _, err := c.recv(want, 5*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	step(message{Type: "hello", Params: &p, Rail: &srvRails[0], ClientRail: &cr, QPs: (&fakeRes{n: 1}).Local()}, "hello")
	step(message{Type: "start", Size: 4096}, "ready")
	step(message{Type: "done", Result: &Figures{Bytes: 4096, Iterations: 200, AvgGbps: 1}}, "done")
	step(message{Type: "start", Size: 65536}, "ready")
	nc.Close() // dies mid-size
	var s sideOut
	select {
	case s = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("server did not give up")
	}
	if s.perr == nil || s.perr.Kind != probeout.KindTimeout {
		t.Fatalf("no finish: want a timeout, got %v", s.perr)
	}
	if len(s.out.Rails) != 1 {
		t.Fatalf("rails %+v", s.out.Rails)
	}
	rr := s.out.Rails[0]
	if rr.Error == nil || rr.Error.Kind != probeout.KindPeer || len(rr.Runs) != 1 || len(rr.Runs[0].Results) != 1 || rr.Runs[0].Results[0].Remote.Bytes != 4096 {
		t.Fatalf("server rail: %+v", rr)
	}
}

func TestMissingPeerRailSameMode(t *testing.T) {
	// More client rails than server rails: the client's extra rail names
	// the missing server rail.
	c, s := runBoth(t, testRails("s0"), &fakeSide{}, ClientConfig{Rails: testRails("c0", "c1"), Params: testParams(65536), Ops: []Op{OpWrite}}, &fakeSide{})
	if len(c.out.Rails) != 2 || c.out.Rails[0].Error != nil {
		t.Fatalf("client rails %+v", c.out.Rails)
	}
	if e := c.out.Rails[1].Error; e == nil || e.Kind != probeout.KindNoDevice || c.out.Rails[1].Peer != nil || !strings.Contains(e.Message, "no server rail pairs with client rail c1/1") {
		t.Fatalf("client rail c1: %+v", c.out.Rails[1])
	}
	if len(s.out.Rails) != 1 || len(s.out.Incomplete()) != 0 || len(c.out.Incomplete()) == 0 {
		t.Fatalf("server %+v; client incomplete %v", s.out.Rails, c.out.Incomplete())
	}
	// More server rails than client rails: the server records its extra
	// rail (the client told it in finish).
	c, s = runBoth(t, testRails("s0", "s1"), &fakeSide{}, ClientConfig{Rails: testRails("c0"), Params: testParams(65536), Ops: []Op{OpWrite}}, &fakeSide{})
	if len(c.out.Rails) != 1 || len(c.out.Incomplete()) != 0 {
		t.Fatalf("client %+v", c.out.Rails)
	}
	if len(s.out.Rails) != 2 || s.out.Rails[1].Error == nil || s.out.Rails[1].Error.Kind != probeout.KindNoDevice || !strings.Contains(s.out.Rails[1].Error.Message, "server rail s1/1") {
		t.Fatalf("server rails %+v", s.out.Rails)
	}
}

func TestSessionSweepBidirectional(t *testing.T) {
	srv, cli := &fakeSide{}, &fakeSide{}
	p := testParams(2, 65536, 1<<20)
	p.QPs, p.Bidirectional = 2, true
	c, s := runBoth(t, testRails("s0"), srv, ClientConfig{Rails: testRails("c0"), Params: p, Ops: []Op{OpWrite}}, cli)
	rep, srep := c.out.Rails[0].Runs[0], s.out.Rails[0].Runs[0]
	if len(rep.Results) != 3 || len(srep.Results) != 3 {
		t.Fatalf("results client %d server %d", len(rep.Results), len(srep.Results))
	}
	for i, r := range rep.Results {
		if r.Remote == nil || r.Total.AvgGbps <= r.Local.AvgGbps || r.Local.Bytes != p.Sizes[i] {
			t.Fatalf("size %d: bidirectional total must add the server's direction: %+v", p.Sizes[i], r)
		}
	}
	if len(cli.opened[0].connected) != 2 || cli.opened[0].connected[0].QPN != 100 || !cli.allClosed() || !srv.allClosed() {
		t.Fatal("QP info not exchanged or resources not closed")
	}
}

func TestBadParamsAreUsageAndServerFinishes(t *testing.T) {
	p := testParams(65536)
	p.CQMod = 1000 // > tx depth
	c, s := runBoth(t, testRails("s0"), &fakeSide{}, ClientConfig{Rails: testRails("c0"), Params: p, Ops: []Op{OpWrite}}, &fakeSide{})
	if c.perr == nil || c.perr.Kind != probeout.KindUsage {
		t.Fatalf("client: %v", c.perr)
	}
	if s.perr == nil || s.perr.Kind != probeout.KindPeer || !strings.Contains(s.perr.Message, "usage") {
		t.Fatalf("server: %v", s.perr)
	}
}

func TestServerWideFailureReachesClient(t *testing.T) {
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	done := make(chan sideOut, 1)
	noDev := probeout.Errorf(probeout.KindNoDevice, "no RDMA device visible")
	go func() {
		out, perr := Serve(context.Background(), ln, ServerConfig{Err: noDev, Timeout: 5 * time.Second})
		done <- sideOut{out, perr}
	}()
	out, perr := RunClient(context.Background(), ClientConfig{Addr: ln.Addr().String(), Rails: testRails("c0"), Open: (&fakeSide{}).open,
		Params: testParams(65536), Ops: []Op{OpWrite}, Timeout: 2 * time.Second})
	if perr == nil || perr.Kind != probeout.KindPeer || !strings.Contains(perr.Message, "no-device") || len(out.Incomplete()) == 0 {
		t.Fatalf("client: %v", perr)
	}
	s := <-done
	if s.perr == nil || s.perr.Kind != probeout.KindNoDevice {
		t.Fatalf("server: %v", s.perr)
	}
}

func TestServerTimesOutWithoutClient(t *testing.T) {
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	start := time.Now()
	_, perr := Serve(context.Background(), ln, ServerConfig{Rails: testRails("s0"), Open: (&fakeSide{}).open, Timeout: 300 * time.Millisecond})
	if perr == nil || perr.Kind != probeout.KindTimeout || time.Since(start) > 5*time.Second {
		t.Fatalf("%v after %s", perr, time.Since(start))
	}
}

func TestClassify(t *testing.T) {
	cases := []struct {
		err  error
		kind probeout.Kind
	}{
		{Tag(ErrMemlock, syscall.ENOMEM), probeout.KindMemlock},
		{Tag(ErrLinkDown, errors.New("x")), probeout.KindLinkDown},
		{&PeerError{Role: "server", Err: probeout.Errorf(probeout.KindLinkDown, "down")}, probeout.KindPeer},
		{probeout.Errorf(probeout.KindNoNetdev, "net1"), probeout.KindNoNetdev},
		{Tag(ErrGPUDirect, errors.New("neither path")), probeout.KindGPUDirect},
		{Tag(ErrNoGPU, errors.New("no libcuda")), probeout.KindNoGPU},
		{errors.New("anything"), probeout.KindInternal},
	}
	for _, c := range cases {
		if got := Classify(c.err); got.Kind != c.kind {
			t.Errorf("%v: kind %s, want %s", c.err, got.Kind, c.kind)
		}
	}
	if e := Tag(ErrMemlock, syscall.ENOMEM); e.Error() != syscall.ENOMEM.Error() || !errors.Is(e, syscall.ENOMEM) {
		t.Fatalf("Tag must keep message and chain: %v", e)
	}
}

// A write latency run is a ping-pong on both sides: the server answers
// every size in its own loop, the client reports half the round trip. A
// read latency run needs nothing of the server.
func TestLatencySessionPingPongsOnBothSides(t *testing.T) {
	srv, cli := &fakeSide{}, &fakeSide{}
	p := testParams(2, 64)
	p.Latency, p.TxDepth, p.CQMod, p.Iters = true, 1, 1, 20
	c, _ := runBoth(t, testRails("s0"), srv, ClientConfig{Rails: testRails("c0"), Params: p, Ops: []Op{OpWrite, OpRead}}, cli)
	measured(t, "client", c.out.Rails[0], []Op{OpWrite, OpRead}, 2)
	for _, r := range c.out.Rails[0].Runs[0].Results {
		if l := r.Local.Latency; l == nil || !l.Halved || l.Typical != 5 {
			t.Fatalf("write latency result %+v", r.Local)
		}
	}
	var srvPongs, cliPongs []bool
	for _, r := range srv.opened {
		srvPongs = append(srvPongs, r.pongs...)
	}
	for _, r := range cli.opened {
		cliPongs = append(cliPongs, r.pongs...)
	}
	if len(srvPongs) != 2 || srvPongs[0] || srvPongs[1] || len(cliPongs) != 2 || !cliPongs[0] {
		t.Fatalf("ping-pong calls: server %v, client %v; want the server to answer each write size", srvPongs, cliPongs)
	}
}

// A send latency run is the same ping-pong on both sides (ib_send_lat).
func TestSendLatencySessionPingPongsOnBothSides(t *testing.T) {
	srv, cli := &fakeSide{}, &fakeSide{}
	p := testParams(2)
	p.Latency, p.TxDepth, p.CQMod, p.Iters = true, 1, 1, 20
	c, _ := runBoth(t, testRails("s0"), srv, ClientConfig{Rails: testRails("c0"), Params: p, Ops: []Op{OpSend}}, cli)
	measured(t, "client", c.out.Rails[0], []Op{OpSend}, 1)
	if l := c.out.Rails[0].Runs[0].Results[0].Local.Latency; l == nil || !l.Halved || l.Typical != 5 {
		t.Fatalf("send latency result %+v", c.out.Rails[0].Runs[0].Results[0].Local)
	}
	var srvPongs []bool
	for _, r := range srv.opened {
		srvPongs = append(srvPongs, r.pongs...)
	}
	if len(srvPongs) != 1 || srvPongs[0] {
		t.Fatalf("server ping-pong calls %v: want the server to answer the send size", srvPongs)
	}
}

// droppingListener drops the first rails request unanswered, as a
// multi-run server's previous run does to a connection that reached its
// listener after it answered the finish; every other connection passes.
type droppingListener struct {
	net.Listener
	dropped int
}

func (l *droppingListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil || l.dropped > 0 {
			return c, err
		}
		br := bufio.NewReader(c)
		_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
		line, _ := br.ReadBytes('\n')
		_ = c.SetReadDeadline(time.Time{})
		if !strings.Contains(string(line), `"type":"rails"`) {
			return &replayConn{Conn: c, r: io.MultiReader(bytes.NewReader(line), br)}, nil
		}
		l.dropped++
		if tc, ok := c.(*net.TCPConn); ok {
			_ = tc.SetLinger(0) // a reset, as the closing listener's backlog gets
		}
		c.Close()
	}
}

// replayConn gives back what droppingListener read to look at a request.
type replayConn struct {
	net.Conn
	r io.Reader
}

func (c *replayConn) Read(p []byte) (int, error) { return c.r.Read(p) }

// The next run's client asks again and measures everything; the dropped
// connection costs nothing but a log line.
func TestRailsAskedAgainAfterAnUnansweredDrop(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dl := &droppingListener{Listener: ln}
	srv, cli := &fakeSide{}, &fakeSide{}
	srvDone := make(chan *probeout.Error, 1)
	go func() {
		_, perr := Serve(context.Background(), dl, ServerConfig{Found: testRails("s0"), Rails: testRails("s0"), Open: srv.open,
			Clock: fakeClock(time.Microsecond), Timeout: 3 * time.Second, Counters: srv.counters})
		srvDone <- perr
	}()
	var logged []string
	cfg := ClientConfig{Addr: ln.Addr().String(), Rails: testRails("c0"), Found: testRails("c0"), Open: cli.open, Clock: fakeClock(time.Microsecond),
		Timeout: 5 * time.Second, Params: testParams(4096), Ops: []Op{OpWrite},
		Logf: func(f string, a ...any) { logged = append(logged, fmt.Sprintf(f, a...)) }}
	out, perr := RunClient(context.Background(), cfg)
	if perr != nil || len(out.Rails) != 1 {
		t.Fatalf("client: %v, %d rails", perr, len(out.Rails))
	}
	measured(t, "client", out.Rails[0], []Op{OpWrite}, 1)
	if dl.dropped != 1 || !strings.Contains(strings.Join(logged, "\n"), "asking again") {
		t.Fatalf("dropped %d, log %q", dl.dropped, logged)
	}
	if perr := <-srvDone; perr != nil {
		t.Fatalf("server: %v", perr)
	}
}

// servedRun is what Serve returned.
type servedRun struct {
	out  ProbeOutput
	perr *probeout.Error
}

// finishBesideAnEarlyConn serves one run on rail s0, opens a connection
// that the server accepts before the finish and that stays silent, then
// sends the run's finish and reads its bye: the early connection speaks
// only after the finish, as a racing request does.
func finishBesideAnEarlyConn(t *testing.T, logf func(string, ...any)) (early net.Conn, served <-chan servedRun) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &fakeSide{}
	done := make(chan servedRun, 1)
	go func() {
		out, perr := Serve(context.Background(), ln, ServerConfig{Found: testRails("s0"), Rails: testRails("s0"), Open: srv.open,
			Clock: fakeClock(time.Microsecond), Timeout: 3 * time.Second, Counters: srv.counters, Logf: logf})
		done <- servedRun{out, perr}
	}()
	early, err = net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { early.Close() })
	fin, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer fin.Close()
	fc := newConn(fin, "server")
	if err := fc.send(message{Type: "finish"}); err != nil {
		t.Fatal(err)
	}
	if _, err := fc.recv("bye", 5*time.Second); err != nil {
		t.Fatalf("finish: %v", err)
	}
	return early, done
}

// waitServed is the run's end, which the finish must bring.
func waitServed(t *testing.T, served <-chan servedRun) servedRun {
	t.Helper()
	select {
	case got := <-served:
		return got
	case <-time.After(10 * time.Second):
		t.Fatal("the server did not end after the finish")
	}
	return servedRun{}
}

// A connection the server accepted before its client's finish but whose
// request came after it is the client's next run's: the run that has
// finished must drop it unanswered (the client asks the next run again),
// never answer it, or every later run of a multi-run pod is served one
// run early.
func TestRequestAfterTheFinishIsLeftToTheNextRun(t *testing.T) {
	var logged []string
	var mu sync.Mutex
	// The next run's connection, accepted first and silent until the
	// finish has been answered.
	early, served := finishBesideAnEarlyConn(t, func(f string, a ...any) { mu.Lock(); logged = append(logged, fmt.Sprintf(f, a...)); mu.Unlock() })
	ec := newConn(early, "server")
	if err := ec.send(message{Type: "rails", Requested: &Requested{}}); err != nil {
		t.Fatal(err)
	}
	m, err := ec.recv("rails", 5*time.Second)
	if err == nil || !droppedUnanswered(err) {
		t.Fatalf("the finished run answered the next run's request: %+v, %v", m, err)
	}
	if got := waitServed(t, served); got.perr != nil {
		t.Fatalf("server: %v", got.perr)
	}
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(strings.Join(logged, "\n"), "after this run's finish: dropped unanswered") {
		t.Errorf("the drop is not logged: %q", logged)
	}
}

// The client reports its own rail's failure one way (an "error" on its
// own connection, no answer awaited) and then dials its finish: the
// server may read the finish first. That report is still this run's (a
// next run opens with "rails", never with an error) and must be recorded,
// not dropped with the next run's requests (seen on the bed: the client
// rail down check lost the server's "client rail failed" record).
func TestClientErrorReadAfterTheFinishIsStillRecorded(t *testing.T) {
	report, served := finishBesideAnEarlyConn(t, nil)
	p := testParams(65536)
	p.Op = OpWrite
	peer, local := testRails("s0")[0], testRails("c0")[0]
	rc := newConn(report, "server")
	rc.sendErr(Tag(ErrLinkDown, errors.New("c0/1 is DOWN, not ACTIVE")), message{Params: &p, Rail: &peer, ClientRail: &local})
	report.Close()
	got := waitServed(t, served)
	if len(got.out.Rails) != 1 || got.out.Rails[0].Error == nil || got.out.Rails[0].Error.Kind != probeout.KindPeer ||
		!strings.Contains(got.out.Rails[0].Error.Message, "client rail c0/1 failed: link-down") {
		t.Fatalf("the client's rail failure read after the finish is not on the server's rail: %+v", got.out.Rails)
	}
}

// A multi-run pod pair (--then) whose client has no device: each client
// run asks for the rails and finishes at once, so its next run's requests
// race the previous server run's closing listener. Every server run must
// still end on its own client run's finish (the client's failure it
// reports names that run): none on another run's, none on a timeout.
func TestDevicelessClientRunsStayInStepWithTheServerRuns(t *testing.T) {
	const runs = 12
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	srvErrs := make(chan *probeout.Error, runs)
	go func() {
		for k := 0; k < runs; k++ {
			l := ln
			if k > 0 {
				var lerr error
				if l, lerr = net.Listen("tcp", addr); lerr != nil {
					srvErrs <- probeout.Errorf(probeout.KindInternal, "listen for run %d: %v", k+1, lerr)
					return
				}
			}
			srv := &fakeSide{}
			_, perr := Serve(context.Background(), l, ServerConfig{Found: testRails("s0"), Rails: testRails("s0"), Open: srv.open,
				Clock: fakeClock(time.Microsecond), Timeout: 3 * time.Second, Counters: srv.counters})
			srvErrs <- perr
		}
	}()
	for k := 1; k <= runs; k++ {
		cfg := ClientConfig{Addr: addr, Clock: fakeClock(time.Microsecond), Timeout: 5 * time.Second, Params: testParams(4096), Ops: []Op{OpWrite},
			Err: probeout.Errorf(probeout.KindNoDevice, "client run %d: no RDMA device", k)}
		if _, perr := RunClient(context.Background(), cfg); perr == nil {
			t.Fatalf("client run %d without a device reported no failure", k)
		}
	}
	for k := 1; k <= runs; k++ {
		select {
		case perr := <-srvErrs:
			if perr == nil || !strings.Contains(perr.Message, fmt.Sprintf("client run %d: no RDMA device", k)) {
				t.Fatalf("server run %d ended on %v: want its own client run's finish", k, perr)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("server run %d did not end", k)
		}
	}
}

// A server that answers nothing within the time is still a timeout, not
// an endless retry.
func TestRailsNotAskedAgainAfterTheTimeout(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	start := time.Now()
	_, err = askRails(context.Background(), ClientConfig{Addr: ln.Addr().String(), Timeout: 2 * time.Second, Logf: func(string, ...any) {}}, &Requested{})
	if err == nil || time.Since(start) > 6*time.Second {
		t.Fatalf("err %v after %s", err, time.Since(start))
	}
}

// A duration run that stops with work in flight (perftest -D) renews the
// QPs of both sides before every further size, and each side's new QPs are
// joined to the other's new ones; the last size renews nothing.
func TestQPsRenewedAfterASizeLeftWorkInFlight(t *testing.T) {
	srv, cli := &fakeSide{renews: true, leaveInFlight: 1}, &fakeSide{renews: true, leaveInFlight: 512}
	c, s := runBoth(t, testRails("s0"), srv, ClientConfig{Rails: testRails("c0"), Params: testParams(4096, 65536, 1<<20), Ops: []Op{OpWrite}}, cli)
	if c.perr != nil || s.perr != nil {
		t.Fatalf("probe errors: client %v server %v", c.perr, s.perr)
	}
	measured(t, "client", c.out.Rails[0], []Op{OpWrite}, 3)
	measured(t, "server", s.out.Rails[0], []Op{OpWrite}, 3)
	cr, sr := cli.renewing[0], srv.renewing[0]
	if cr.gen != 2 || sr.gen != 2 {
		t.Fatalf("renewals: client %d, server %d; want 2 each (after sizes 1 and 2, not after the last)", cr.gen, sr.gen)
	}
	// Connects: the hello's, then one per renewal, each to the peer's
	// newest generation.
	if len(cr.connects) != 3 || len(sr.connects) != 3 {
		t.Fatalf("connects: client %v, server %v; want 3 each", cr.connects, sr.connects)
	}
	for g := 0; g < 3; g++ {
		if cr.connects[g][0] != uint32(100+1000*g) || sr.connects[g][0] != uint32(100+1000*g) {
			t.Fatalf("connect %d: client joined QP %d, server joined QP %d; want generation %d's (%d)", g, cr.connects[g][0], sr.connects[g][0], g, 100+1000*g)
		}
	}
}

// Nothing in flight, nothing renewed, though both endpoints could renew.
func TestQPsNotRenewedWhenTheLoopDrained(t *testing.T) {
	srv, cli := &fakeSide{renews: true}, &fakeSide{renews: true}
	c, s := runBoth(t, testRails("s0"), srv, ClientConfig{Rails: testRails("c0"), Params: testParams(4096, 65536), Ops: []Op{OpWrite}}, cli)
	if c.perr != nil || s.perr != nil {
		t.Fatalf("probe errors: client %v server %v", c.perr, s.perr)
	}
	measured(t, "client", c.out.Rails[0], []Op{OpWrite}, 2)
	for who, r := range map[string]*renewingRes{"client": cli.renewing[0], "server": srv.renewing[0]} {
		if r.gen != 0 || len(r.connects) != 1 {
			t.Fatalf("%s renewed %d times, connected %d times; want 0 and 1", who, r.gen, len(r.connects))
		}
	}
}

// A server that cannot renew its QPs fails the op at the size that needed
// it: the next sizes are not measured, and the results say why.
func TestServerThatCannotRenewFailsTheOp(t *testing.T) {
	srv, cli := &fakeSide{}, &fakeSide{renews: true, leaveInFlight: 8}
	c, _ := runBoth(t, testRails("s0"), srv, ClientConfig{Rails: testRails("c0"), Params: testParams(4096, 65536), Ops: []Op{OpWrite}}, cli)
	rr := c.out.Rails[0]
	if rr.Error == nil || len(rr.Runs) != 1 || rr.Runs[0].Error == nil {
		t.Fatalf("want the write op failed, got rail error %v, runs %+v", rr.Error, rr.Runs)
	}
	if got := len(rr.Runs[0].Results); got != 0 {
		t.Fatalf("%d sizes recorded as measured; want 0 (size 1's done was never answered)", got)
	}
	if msg := rr.Runs[0].Error.Message; !strings.Contains(msg, "cannot renew") {
		t.Fatalf("error does not say the server could not renew its QPs: %s", msg)
	}
	if miss := c.out.Incomplete(); len(miss) == 0 {
		t.Fatal("the sizes not measured are not reported incomplete")
	}
}
