// Command tcprelay forwards TCP connections from a listen address to a
// target address, both ways, until either side closes. The guest-node bed
// uses it so the apiserver reaches a kubelet inside a qemu user-mode guest:
// it listens on the node's InternalIP and forwards to qemu's hostfwd port on
// 127.0.0.1.
//
//	tcprelay -listen 10.250.0.21:10250 -to 127.0.0.1:20250
package main

import (
	"context"
	"errors"
	"flag"
	"io"
	"log"
	"net"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"
)

func main() {
	listen := flag.String("listen", "", "address to listen on, HOST:PORT")
	to := flag.String("to", "", "address to forward to, HOST:PORT")
	dialTimeout := flag.Duration("dial-timeout", 10*time.Second, "timeout for connecting to the target")
	flag.Parse()
	if *listen == "" || *to == "" || flag.NArg() > 0 {
		flag.Usage()
		os.Exit(2)
	}
	log.SetFlags(log.LstdFlags | log.Lmicroseconds)
	l, err := net.Listen("tcp", *listen)
	if err != nil {
		log.Fatal(err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	go func() { <-ctx.Done(); l.Close() }()
	log.Printf("relaying %s -> %s", *listen, *to)
	if err := serve(ctx, l, *to, *dialTimeout); err != nil {
		log.Fatal(err)
	}
}

// serve accepts on l until it is closed, relaying each connection to target.
func serve(ctx context.Context, l net.Listener, target string, dialTimeout time.Duration) error {
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		c, err := l.Accept()
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return nil
			}
			return err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			relay(ctx, c, target, dialTimeout)
		}()
	}
}

func relay(ctx context.Context, c net.Conn, target string, dialTimeout time.Duration) {
	defer c.Close()
	d := net.Dialer{Timeout: dialTimeout}
	t, err := d.DialContext(ctx, "tcp", target)
	if err != nil {
		log.Printf("%s: %v", c.RemoteAddr(), err)
		return
	}
	defer t.Close()
	stop := context.AfterFunc(ctx, func() { c.Close(); t.Close() })
	defer stop()
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		// Pass the half-close on so request/response protocols finish.
		if tc, ok := dst.(*net.TCPConn); ok {
			_ = tc.CloseWrite()
		}
		done <- struct{}{}
	}
	go pipe(t, c)
	go pipe(c, t)
	<-done
	<-done
}
