package tcpcheck

import (
	"context"
	"net"
	"testing"
	"time"
)

func TestServeCheckLoopback(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- Serve(context.Background(), ln, "server-pod", 5*time.Second) }()
	r, err := Check(context.Background(), ln.Addr().String(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if r.Peer != "server-pod" || r.RTTMicros <= 0 {
		t.Fatalf("result %+v", r)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestCheckFailsWithoutServer(t *testing.T) {
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := ln.Addr().String()
	ln.Close()
	if _, err := Check(context.Background(), addr, 500*time.Millisecond); err == nil {
		t.Fatal("check passed with no server")
	}
}
