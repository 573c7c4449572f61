package main

import (
	"context"
	"io"
	"net"
	"testing"
	"time"
)

func TestRelay(t *testing.T) {
	// An echo server that answers after the client half-closes.
	echo, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer echo.Close()
	go func() {
		for {
			c, err := echo.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				b, _ := io.ReadAll(c)
				_, _ = c.Write(append([]byte("echo:"), b...))
			}()
		}
	}()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serve(ctx, l, echo.Addr().String(), time.Second) }()
	for i := 0; i < 3; i++ {
		c, err := net.Dial("tcp", l.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		_, _ = c.Write([]byte("hello"))
		_ = c.(*net.TCPConn).CloseWrite()
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		b, err := io.ReadAll(c)
		c.Close()
		if err != nil || string(b) != "echo:hello" {
			t.Fatalf("relayed answer %q, %v", b, err)
		}
	}
	cancel()
	l.Close()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("serve did not return after the listener closed")
	}
}
