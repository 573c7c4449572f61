// Package tcpcheck proves two pods can reach each other over the pod
// network: the path the bandwidth test's out-of-band QP exchange takes.
package tcpcheck

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"strings"
	"time"
)

// Result of one client exchange.
type Result struct {
	Addr      string  `json:"addr"`
	Peer      string  `json:"peer"`
	RTTMicros float64 `json:"rttMicros"`
}

const greeting = "rdmasuite-tcpcheck"

// Serve accepts one connection on ln, answers one greeting with the server's
// hostname, and returns. The deadline bounds the wait for a client.
func Serve(ctx context.Context, ln net.Listener, hostname string, deadline time.Duration) error {
	if tl, ok := ln.(*net.TCPListener); ok {
		_ = tl.SetDeadline(time.Now().Add(deadline))
	}
	go func() { <-ctx.Done(); ln.Close() }()
	c, err := ln.Accept()
	if err != nil {
		return fmt.Errorf("no client within %s on %s: %w", deadline, ln.Addr(), err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil || strings.TrimSpace(line) != greeting {
		return fmt.Errorf("bad greeting from %s: %q %v", c.RemoteAddr(), line, err)
	}
	_, err = fmt.Fprintf(c, "%s %s\n", greeting, hostname)
	return err
}

// Check connects to addr (retrying until timeout, since the server pod may
// still be starting), exchanges one greeting and measures the round trip.
func Check(ctx context.Context, addr string, timeout time.Duration) (Result, error) {
	r := Result{Addr: addr}
	deadline := time.Now().Add(timeout)
	var c net.Conn
	var err error
	for {
		d := net.Dialer{Timeout: 2 * time.Second}
		if c, err = d.DialContext(ctx, "tcp", addr); err == nil {
			break
		}
		if time.Now().After(deadline) {
			return r, fmt.Errorf("connect %s: %w (pod network or server pod not ready)", addr, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	start := time.Now()
	if _, err := fmt.Fprintf(c, "%s\n", greeting); err != nil {
		return r, err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return r, fmt.Errorf("read reply from %s: %w", addr, err)
	}
	r.RTTMicros = float64(time.Since(start).Nanoseconds()) / 1e3
	fields := strings.Fields(line)
	if len(fields) != 2 || fields[0] != greeting {
		return r, fmt.Errorf("unexpected reply from %s: %q", addr, line)
	}
	r.Peer = fields[1]
	return r, nil
}
