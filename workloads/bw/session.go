package bw

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/rdmasuite/rdmasuite/workloads/portcounters"
	"github.com/rdmasuite/rdmasuite/workloads/probeout"
)

// QPInfo is what one side tells the other about one of its QPs, over TCP
// before any RDMA traffic (perftest's "Ethernet exchange").
type QPInfo struct {
	QPN  uint32 `json:"qpn"`
	PSN  uint32 `json:"psn"`
	LID  uint16 `json:"lid"`
	GID  string `json:"gid"`
	Addr uint64 `json:"addr"` // this QP's slice of the registered buffer
	RKey uint32 `json:"rkey"`
	MTU  int    `json:"mtu"`
	IsIB bool   `json:"ib"`
}

// Resources are one side's device resources for a test.
type Resources interface {
	Endpoint
	Local() []QPInfo
	Connect(remote []QPInfo) error
	// Describe names the device, port, link and GID in use (for reports).
	Describe() Device
	Close() error
}

// QPRenewer is Resources whose duration loop stops at its deadline with
// work still in flight, as perftest -D does, instead of waiting for every
// posted operation (4 QPs × 128 × 1 MiB is seconds on a slow link and
// minutes on Soft-RoCE, charged to no measurement). Before the next size
// both sides replace their QPs: the client renews its own and sends them in
// its done, the server renews and connects its own and answers with them.
type QPRenewer interface {
	// LeftInFlight is what the last loop left posted and uncompleted.
	LeftInFlight() int
	// RenewQPs destroys the QPs with their work, and returns new ones in
	// INIT (for Connect).
	RenewQPs() ([]QPInfo, error)
}

// Device is what a side reports about the device it tested with.
type Device struct {
	Name      string  `json:"name"`
	Port      int     `json:"port"`
	GIDIndex  int     `json:"gidIndex"`
	GID       string  `json:"gid,omitempty"`
	LinkLayer string  `json:"linkLayer"`
	RateGbps  float64 `json:"rateGbps"`
	MTU       int     `json:"mtu"`
	Netdev    string  `json:"netdev,omitempty"`
	// PostAPI is how the loop posted, and why (perftest's choice for the
	// device unless --post-api said otherwise).
	PostAPI string `json:"postAPI,omitempty"`
	// InlineBytes is the largest payload posted inline (0: none).
	InlineBytes int `json:"inlineBytes,omitempty"`
	// ClockMHz is the rate of the cycle counter this run's timestamps were
	// converted with, as measured against CLOCK_MONOTONIC (0: the run used
	// the monotonic clock itself).
	ClockMHz float64 `json:"clockMHz,omitempty"`
}

// Factory opens resources sized for p on one rail. It checks the port's
// live state first and fails with an error matching ErrLinkDown when the
// port is not ACTIVE; errors should match the sentinels of errors.go.
type Factory func(r Rail, p Params) (Resources, error)

// SizeResult is one message size's result.
type SizeResult struct {
	Local  Figures  `json:"local"`
	Remote *Figures `json:"remote,omitempty"` // the peer's direction (bidirectional)
	Total  Figures  `json:"total"`            // local + remote, as perftest prints
	// Counters are the port counters around this size's measurement, both
	// sides (absent from older probes' output: not read, never clean).
	Counters *SizeCounters `json:"counters,omitempty"`
}

// Report is one op's outcome on one side, on one rail pair. Results holds
// the sizes that completed, in order; fewer than Params.Sizes means the
// run stopped early (its RailResult then carries the error).
type Report struct {
	Role    string       `json:"role"` // client or server
	Params  Params       `json:"params"`
	Device  Device       `json:"device"`
	Peer    string       `json:"peer"`
	Results []SizeResult `json:"results"`
	// SetupSec is connect + resource creation + QP exchange + RTR/RTS.
	SetupSec float64 `json:"setupSec"`
	// Error is this op's own failure (the rail's Error joins every op's):
	// one op's error is not another's result. Absent from older probes.
	Error *probeout.Error `json:"error,omitempty"`
	// FailedSize and FailedCounters are the size whose measurement failed
	// and this side's port counters around it: what the port saw while
	// the op broke (retransmissions, sequence errors). Client side only.
	FailedSize     int           `json:"failedSize,omitempty"`
	FailedCounters *SizeCounters `json:"failedCounters,omitempty"`
	// Baseline and Load belong to a latency run measured under load
	// (Params.LoadSize): the same op's latency measured alone on the same
	// rail pair just before, and the stream that ran meanwhile.
	Baseline *Report     `json:"baseline,omitempty"`
	Load     *LoadStream `json:"load,omitempty"`
}

// message is one line of the out-of-band protocol. A connection's first
// message says what it is for:
//
//	rails   client → server: what the client was asked for; the server
//	        answers rails with the rails it offers (or an error kind)
//	hello   client → server: one session (one op) between a client rail and
//	        the server rail it names, with the client's QPs; the server
//	        answers hello with its QPs (or an error), then start/ready/
//	        done per size and bye. A client done with QPs renewed its QPs
//	        (QPRenewer: the size left work in flight); the server renews
//	        and connects its own and answers done with them
//	error   client → server: the client could not open its side of a
//	        session (e.g. its port is down); the server records it
//	finish  client → server: no more sessions; the server answers bye and
//	        exits. Unpaired names server rails no client rail paired with.
type message struct {
	Type       string        `json:"type"`
	Params     *Params       `json:"params,omitempty"`
	QPs        []QPInfo      `json:"qps,omitempty"`
	Size       int           `json:"size,omitempty"`
	Result     *Figures      `json:"result,omitempty"`
	Error      string        `json:"error,omitempty"`
	Kind       probeout.Kind `json:"kind,omitempty"`
	Rail       *Rail         `json:"rail,omitempty"`       // hello/error: the server rail
	ClientRail *Rail         `json:"clientRail,omitempty"` // hello/error: the client's rail
	Rails      []Rail        `json:"rails,omitempty"`      // rails reply; finish: the client's rails
	Requested  *Requested    `json:"requested,omitempty"`
	Unpaired   []int         `json:"unpaired,omitempty"`
	// done (server → client): the server rail's port counters around the
	// size, or why there are none.
	Counters    *portcounters.Deltas `json:"counters,omitempty"`
	CountersErr string               `json:"countersErr,omitempty"`
}

type conn struct {
	c        net.Conn
	r        *bufio.Reader
	enc      *json.Encoder
	peerRole string // who is on the other end: "client" or "server"
	peerRail string // the peer's rail, for error messages
}

func newConn(c net.Conn, peerRole string) *conn {
	return &conn{c: c, r: bufio.NewReader(c), enc: json.NewEncoder(c), peerRole: peerRole}
}

func (c *conn) send(m message) error {
	_ = c.c.SetWriteDeadline(time.Now().Add(30 * time.Second))
	if err := c.enc.Encode(m); err != nil {
		return c.ioErr("send "+m.Type+" to", err)
	}
	return nil
}

// sendErr tells the peer why this side stopped, with the error's kind.
func (c *conn) sendErr(err error, m message) {
	pe := Classify(err)
	m.Type, m.Kind, m.Error = "error", pe.Kind, pe.Message
	_ = c.send(m)
}

// ioErr classifies a failed read or write on the control connection: a
// deadline is a timeout, anything else (EOF, reset) means the peer is gone.
func (c *conn) ioErr(what string, err error) error {
	err = fmt.Errorf("%s %s %s: %w", what, c.peerRole, c.c.RemoteAddr(), err)
	if errors.Is(err, net.ErrClosed) || !isTimeout(err) {
		return Tag(ErrPeer, err)
	}
	return Tag(ErrTimeout, err)
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// recvAny reads the next message, waiting at most timeout.
func (c *conn) recvAny(want string, timeout time.Duration) (message, error) {
	_ = c.c.SetReadDeadline(time.Now().Add(timeout))
	line, err := c.r.ReadBytes('\n')
	if err != nil {
		return message{}, c.ioErr(fmt.Sprintf("waiting %s for %s from", timeout, want), err)
	}
	var m message
	if err := json.Unmarshal(line, &m); err != nil {
		return m, fmt.Errorf("bad message from %s %s: %w", c.peerRole, c.c.RemoteAddr(), err)
	}
	return m, nil
}

// recv reads the next message and wants it to be of type want; an "error"
// message from the peer becomes a *PeerError carrying the peer's kind.
func (c *conn) recv(want string, timeout time.Duration) (message, error) {
	m, err := c.recvAny(want, timeout)
	if err != nil {
		return m, err
	}
	if m.Type == "error" {
		return m, peerError(c.peerRole, c.peerRail, m)
	}
	if m.Type != want {
		return m, fmt.Errorf("protocol: got %q from %s %s, want %q", m.Type, c.peerRole, c.c.RemoteAddr(), want)
	}
	return m, nil
}

func peerError(role, rail string, m message) *PeerError {
	k := m.Kind
	if k == "" {
		k = probeout.KindInternal
	}
	return &PeerError{Role: role, Rail: rail, Err: &probeout.Error{Kind: k, Message: m.Error}}
}

// sizeTimeout bounds one size's run: generous, since a slow emulated node
// may move only tens of MB/s, but finite so a dead peer cannot hang the
// pod forever.
func sizeTimeout(p Params, size int) time.Duration {
	if p.Duration > 0 {
		return p.Duration + 2*time.Minute
	}
	bytes := float64(size) * float64(p.Iters+p.Warmup) * float64(p.QPs)
	return 2*time.Minute + time.Duration(bytes/(1<<20)*float64(time.Second)) // ≥ 1 MiB/s
}

// portActive is the state check both sides make before measuring, on the
// state discovery recorded (the factory re-checks the live state).
func portActive(r Rail) error {
	if r.State != "" && r.State != "ACTIVE" {
		return Tag(ErrLinkDown, fmt.Errorf("%s is %s, not ACTIVE: the link is not up — check cable, switch port and the subnet manager (ibstat shows the same)", r.Name(), r.State))
	}
	return nil
}

func railDevice(r Rail) Device {
	return Device{Name: r.Device, Port: r.Port, LinkLayer: r.LinkLayer, RateGbps: r.RateGbps, Netdev: r.Netdev}
}

func dialRetry(ctx context.Context, addr string, timeout time.Duration) (net.Conn, error) {
	deadline := time.Now().Add(timeout)
	for {
		d := net.Dialer{Timeout: 3 * time.Second}
		c, err := d.DialContext(ctx, "tcp", addr)
		if err == nil {
			return c, nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return nil, Tag(ErrTimeout, fmt.Errorf("connect to bw server %s within %s: %w (is the server pod running and reachable?)", addr, timeout, err))
		}
		time.Sleep(250 * time.Millisecond)
	}
}
