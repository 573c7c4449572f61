package bw

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"time"
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
}

// Factory opens the device and creates resources sized for p.
type Factory func(p Params) (Resources, error)

// SizeResult is one message size's result.
type SizeResult struct {
	Local  Figures  `json:"local"`
	Remote *Figures `json:"remote,omitempty"` // the peer's direction (bidirectional)
	Total  Figures  `json:"total"`            // local + remote, as perftest prints
}

// Report is a whole test's outcome on one side.
type Report struct {
	Role    string       `json:"role"` // client or server
	Params  Params       `json:"params"`
	Device  Device       `json:"device"`
	Peer    string       `json:"peer"`
	Results []SizeResult `json:"results"`
	// SetupSec is connect + resource creation + QP exchange + RTR/RTS.
	SetupSec float64 `json:"setupSec"`
}

type message struct {
	Type   string   `json:"type"` // hello, start, ready, done, bye, error
	Params *Params  `json:"params,omitempty"`
	QPs    []QPInfo `json:"qps,omitempty"`
	Size   int      `json:"size,omitempty"`
	Result *Figures `json:"result,omitempty"`
	Error  string   `json:"error,omitempty"`
}

type conn struct {
	c   net.Conn
	r   *bufio.Reader
	enc *json.Encoder
}

func newConn(c net.Conn) *conn { return &conn{c: c, r: bufio.NewReader(c), enc: json.NewEncoder(c)} }

func (c *conn) send(m message) error {
	if err := c.enc.Encode(m); err != nil {
		return fmt.Errorf("send %s to %s: %w", m.Type, c.c.RemoteAddr(), err)
	}
	return nil
}

// recv reads the next message, waiting at most timeout; an "error" message
// from the peer becomes an error here.
func (c *conn) recv(want string, timeout time.Duration) (message, error) {
	_ = c.c.SetReadDeadline(time.Now().Add(timeout))
	line, err := c.r.ReadBytes('\n')
	if err != nil {
		return message{}, fmt.Errorf("waiting for %s from %s: %w", want, c.c.RemoteAddr(), err)
	}
	var m message
	if err := json.Unmarshal(line, &m); err != nil {
		return m, fmt.Errorf("bad message from %s: %w", c.c.RemoteAddr(), err)
	}
	if m.Type == "error" {
		return m, fmt.Errorf("peer %s failed: %s", c.c.RemoteAddr(), m.Error)
	}
	if m.Type != want {
		return m, fmt.Errorf("protocol: got %q from %s, want %q", m.Type, c.c.RemoteAddr(), want)
	}
	return m, nil
}

// sizeTimeout bounds one size's run: generous, since TCG guests move only
// tens of MB/s, but finite so a dead peer cannot hang the pod forever.
func sizeTimeout(p Params, size int) time.Duration {
	if p.Duration > 0 {
		return p.Duration + 2*time.Minute
	}
	bytes := float64(size) * float64(p.Iters+p.Warmup) * float64(p.QPs)
	return 2*time.Minute + time.Duration(bytes/(1<<20)*float64(time.Second)) // ≥ 1 MiB/s
}

// Serve accepts one client on ln and runs the test it asks for. The server's
// own figures are non-empty only in bidirectional mode.
func Serve(ctx context.Context, ln net.Listener, factory Factory, acceptTimeout time.Duration, clock Clock) (Report, error) {
	if tl, ok := ln.(*net.TCPListener); ok {
		_ = tl.SetDeadline(time.Now().Add(acceptTimeout))
	}
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()
	nc, err := ln.Accept()
	if err != nil {
		return Report{Role: "server"}, fmt.Errorf("no client connected to %s within %s: %w", ln.Addr(), acceptTimeout, err)
	}
	defer nc.Close()
	c := newConn(nc)
	rep := Report{Role: "server", Peer: nc.RemoteAddr().String()}
	hello, err := c.recv("hello", 30*time.Second)
	if err != nil {
		return rep, err
	}
	if hello.Params == nil {
		return rep, errors.New("client hello without parameters")
	}
	p := *hello.Params
	rep.Params = p
	if err := p.Validate(); err != nil {
		_ = c.send(message{Type: "error", Error: err.Error()})
		return rep, err
	}
	res, err := setup(c, p, factory, hello.QPs, true)
	if err != nil {
		return rep, err
	}
	defer res.Close()
	rep.Device = res.Describe()
	for {
		m, err := c.recv("start", 10*time.Minute)
		if m.Type == "bye" {
			return rep, nil
		}
		if err != nil {
			return rep, err
		}
		if err := c.send(message{Type: "ready"}); err != nil {
			return rep, err
		}
		var local *Figures
		if p.Bidirectional {
			f, err := Measure(res, p, m.Size, clock)
			if err != nil {
				_ = c.send(message{Type: "error", Error: err.Error()})
				return rep, err
			}
			local = &f
		}
		done, err := c.recv("done", sizeTimeout(p, m.Size))
		if err != nil {
			return rep, err
		}
		if err := c.send(message{Type: "done", Result: local}); err != nil {
			return rep, err
		}
		sr := SizeResult{Remote: done.Result}
		if local != nil {
			sr.Local = *local
		}
		if done.Result != nil {
			sr.Total = sr.Local.Add(*done.Result)
		}
		rep.Results = append(rep.Results, sr)
	}
}

// setup creates resources, exchanges QP info and connects. The client sends
// its hello first (it carries the parameters); the server answers.
func setup(c *conn, p Params, factory Factory, peerQPs []QPInfo, server bool) (Resources, error) {
	res, err := factory(p)
	if err != nil {
		_ = c.send(message{Type: "error", Error: err.Error()})
		return nil, err
	}
	if server {
		if err := c.send(message{Type: "hello", QPs: res.Local()}); err != nil {
			res.Close()
			return nil, err
		}
	}
	if len(peerQPs) != p.QPs {
		res.Close()
		return nil, fmt.Errorf("peer sent %d QPs, want %d", len(peerQPs), p.QPs)
	}
	if err := res.Connect(peerQPs); err != nil {
		res.Close()
		_ = c.send(message{Type: "error", Error: err.Error()})
		return nil, err
	}
	return res, nil
}

// Run is the client: it connects to the server at addr (retrying until
// dialTimeout, since the server pod may still be starting), sends the
// parameters, and runs every size.
func Run(ctx context.Context, addr string, p Params, factory Factory, dialTimeout time.Duration, clock Clock) (Report, error) {
	rep := Report{Role: "client", Params: p, Peer: addr}
	if err := p.Validate(); err != nil {
		return rep, err
	}
	setupStart := time.Now()
	nc, err := dialRetry(ctx, addr, dialTimeout)
	if err != nil {
		return rep, err
	}
	defer nc.Close()
	c := newConn(nc)
	// Resources first: the hello carries our QP info.
	res, err := factory(p)
	if err != nil {
		_ = c.send(message{Type: "error", Error: err.Error()})
		return rep, err
	}
	defer res.Close()
	rep.Device = res.Describe()
	if err := c.send(message{Type: "hello", Params: &p, QPs: res.Local()}); err != nil {
		return rep, err
	}
	hello, err := c.recv("hello", 60*time.Second)
	if err != nil {
		return rep, err
	}
	if len(hello.QPs) != p.QPs {
		return rep, fmt.Errorf("server sent %d QPs, want %d", len(hello.QPs), p.QPs)
	}
	if err := res.Connect(hello.QPs); err != nil {
		_ = c.send(message{Type: "error", Error: err.Error()})
		return rep, err
	}
	rep.SetupSec = time.Since(setupStart).Seconds()
	for _, size := range p.Sizes {
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		if err := c.send(message{Type: "start", Size: size}); err != nil {
			return rep, err
		}
		if _, err := c.recv("ready", 60*time.Second); err != nil {
			return rep, err
		}
		f, err := Measure(res, p, size, clock)
		if err != nil {
			_ = c.send(message{Type: "error", Error: err.Error()})
			return rep, fmt.Errorf("size %d: %w", size, err)
		}
		if err := c.send(message{Type: "done", Result: &f}); err != nil {
			return rep, err
		}
		done, err := c.recv("done", sizeTimeout(p, size))
		if err != nil {
			return rep, err
		}
		sr := SizeResult{Local: f, Remote: done.Result, Total: f}
		if done.Result != nil {
			sr.Total = f.Add(*done.Result)
		}
		rep.Results = append(rep.Results, sr)
	}
	_ = c.send(message{Type: "bye"})
	return rep, nil
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
			return nil, fmt.Errorf("connect to bw server %s: %w (is the server pod running and reachable?)", addr, err)
		}
		time.Sleep(250 * time.Millisecond)
	}
}
