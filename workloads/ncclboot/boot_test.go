package ncclboot

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"
)

func testID() []byte {
	id := make([]byte, DefaultIDLen)
	for i := range id {
		id[i] = byte(i*7 + 1)
	}
	return id
}

func listen(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln
}

func opts(token string) Options {
	return Options{Token: token, Timeout: 2 * time.Second, IOTimeout: time.Second, MinBackoff: 10 * time.Millisecond, MaxBackoff: 100 * time.Millisecond}
}

// runWorld runs Serve and Fetch for ranks 1..world-1 except skip.
func runWorld(t *testing.T, world int, skip map[int]bool, o Options) (error, map[int][]byte, map[int]error) {
	t.Helper()
	ln := listen(t)
	var wg sync.WaitGroup
	var mu sync.Mutex
	ids := map[int][]byte{}
	errs := map[int]error{}
	for r := 1; r < world; r++ {
		if skip[r] {
			continue
		}
		wg.Add(1)
		go func(r int) {
			defer wg.Done()
			fo := o
			fo.World = world
			id, err := Fetch(context.Background(), ln.Addr().String(), r, o.Token, fo)
			mu.Lock()
			ids[r], errs[r] = id, err
			mu.Unlock()
		}(r)
	}
	serr := Serve(context.Background(), ln, testID(), world, o)
	wg.Wait()
	return serr, ids, errs
}

func TestWorldSizes(t *testing.T) {
	for _, world := range []int{1, 2, 8} {
		t.Run(fmt.Sprint(world), func(t *testing.T) {
			serr, ids, errs := runWorld(t, world, nil, opts("run-a"))
			if serr != nil {
				t.Fatalf("Serve: %v", serr)
			}
			if len(ids) != world-1 {
				t.Fatalf("got %d fetches, want %d", len(ids), world-1)
			}
			for r, id := range ids {
				if errs[r] != nil {
					t.Fatalf("rank %d: %v", r, errs[r])
				}
				if !bytes.Equal(id, testID()) {
					t.Fatalf("rank %d got wrong id", r)
				}
			}
		})
	}
}

func TestMissingRanks(t *testing.T) {
	o := opts("run-a")
	o.Timeout = 300 * time.Millisecond
	start := time.Now()
	serr, _, errs := runWorld(t, 6, map[int]bool{3: true, 5: true}, o)
	if serr == nil {
		t.Fatal("Serve succeeded with ranks missing")
	}
	var me *MissingError
	if !errors.As(serr, &me) || fmt.Sprint(me.Missing) != "[3 5]" {
		t.Fatalf("want MissingError for [3 5], got %v", serr)
	}
	for _, want := range []string{"ranks 3, 5 never connected to rank 0 within 300ms", "headless Service's DNS"} {
		if !strings.Contains(serr.Error(), want) {
			t.Errorf("error %q lacks %q", serr, want)
		}
	}
	if !errors.Is(serr, context.DeadlineExceeded) {
		t.Errorf("error does not wrap DeadlineExceeded: %v", serr)
	}
	for r, err := range errs {
		if err != nil {
			t.Errorf("rank %d: %v", r, err)
		}
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("took %v", d)
	}
}

func TestRank0Late(t *testing.T) {
	// Reserve a port, free it, and bring rank 0 up on it later.
	ln := listen(t)
	addr := ln.Addr().String()
	ln.Close()
	o := opts("run-a")
	done := make(chan error, 1)
	var got []byte
	go func() {
		var err error
		got, err = Fetch(context.Background(), addr, 1, "run-a", o)
		done <- err
	}()
	time.Sleep(300 * time.Millisecond)
	select {
	case err := <-done:
		t.Fatalf("Fetch returned before rank 0 listened: %v", err)
	default:
	}
	ln2, err := net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("port reuse failed: %v", err)
	}
	defer ln2.Close()
	if err := Serve(context.Background(), ln2, testID(), 2, o); err != nil {
		t.Fatalf("Serve: %v", err)
	}
	if err := <-done; err != nil {
		t.Fatalf("Fetch: %v", err)
	}
	if !bytes.Equal(got, testID()) {
		t.Fatal("wrong id")
	}
}

func TestFetchDeadline(t *testing.T) {
	ln := listen(t)
	addr := ln.Addr().String()
	ln.Close()
	o := opts("run-a")
	o.Timeout = 300 * time.Millisecond
	_, err := Fetch(context.Background(), addr, 1, "run-a", o)
	if err == nil {
		t.Fatal("Fetch succeeded with nobody listening")
	}
	for _, want := range []string{addr, "refused", "after trying for"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	// DNS failure is retried until the deadline too.
	_, err = Fetch(context.Background(), "nosuchjob-0.nosuchsvc.invalid:1", 1, "run-a", o)
	if err == nil || !strings.Contains(err.Error(), "nosuchjob-0.nosuchsvc.invalid") || !strings.Contains(err.Error(), "after trying for") {
		t.Fatalf("DNS failure: %v", err)
	}
}

func TestTokenMismatch(t *testing.T) {
	ln := listen(t)
	o := opts("run-a")
	o.Timeout = 500 * time.Millisecond
	ferr := make(chan error, 1)
	go func() {
		_, err := Fetch(context.Background(), ln.Addr().String(), 1, "run-old", o)
		ferr <- err
	}()
	serr := Serve(context.Background(), ln, testID(), 2, o)
	err := <-ferr
	var re *RefusedError
	if !errors.As(err, &re) || !strings.Contains(err.Error(), "token mismatch") {
		t.Fatalf("Fetch: want token refusal, got %v", err)
	}
	if serr == nil || !strings.Contains(serr.Error(), "token mismatch") || !strings.Contains(serr.Error(), "rank 1 never") {
		t.Fatalf("Serve: want missing rank 1 with token refusal, got %v", serr)
	}
}

func TestDuplicateRank(t *testing.T) {
	ln := listen(t)
	o := opts("run-a")
	o.Timeout = 500 * time.Millisecond
	addr := ln.Addr().String()
	serr := make(chan error, 1)
	go func() { serr <- Serve(context.Background(), ln, testID(), 3, o) }()
	if _, err := Fetch(context.Background(), addr, 1, "run-a", o); err != nil {
		t.Fatal(err)
	}
	_, err := Fetch(context.Background(), addr, 1, "run-a", o)
	var re *RefusedError
	if !errors.As(err, &re) || !strings.Contains(err.Error(), "already checked in") {
		t.Fatalf("want duplicate refusal, got %v", err)
	}
	if _, err := Fetch(context.Background(), addr, 2, "run-a", o); err != nil {
		t.Fatal(err)
	}
	if err := <-serr; err != nil {
		t.Fatalf("Serve: %v", err)
	}
}

func TestOutOfRange(t *testing.T) {
	ln := listen(t)
	o := opts("run-a")
	o.Timeout = 500 * time.Millisecond
	addr := ln.Addr().String()
	serr := make(chan error, 1)
	go func() { serr <- Serve(context.Background(), ln, testID(), 2, o) }()
	_, err := Fetch(context.Background(), addr, 2, "run-a", o)
	if !strings.Contains(fmt.Sprint(err), "out of range") {
		t.Fatalf("rank 2 of 2: want out-of-range refusal, got %v", err)
	}
	wo := o
	wo.World = 4
	_, err = Fetch(context.Background(), addr, 1, "run-a", wo)
	if !strings.Contains(fmt.Sprint(err), "world size mismatch") {
		t.Fatalf("want world mismatch refusal, got %v", err)
	}
	if _, err := Fetch(context.Background(), addr, 0, "run-a", o); err == nil {
		t.Fatal("Fetch accepted rank 0")
	}
	if err := <-serr; err == nil || !strings.Contains(err.Error(), "out of range") {
		t.Fatalf("Serve: %v", err)
	}
}

func TestIDLength(t *testing.T) {
	ln := listen(t)
	o := opts("run-a")
	if err := Serve(context.Background(), ln, testID()[:64], 2, o); err == nil || !strings.Contains(err.Error(), "want 128") {
		t.Fatalf("short id: %v", err)
	}
	// Custom length on rank 0 that the fetching rank does not expect.
	o.Timeout = 500 * time.Millisecond
	so := o
	so.IDLen = 64
	serr := make(chan error, 1)
	go func() { serr <- Serve(context.Background(), ln, testID()[:64], 2, so) }()
	_, err := Fetch(context.Background(), ln.Addr().String(), 1, "run-a", o)
	if err == nil || !strings.Contains(err.Error(), "64-byte id") {
		t.Fatalf("Fetch: %v", err)
	}
	if err := <-serr; err == nil {
		t.Fatal("Serve succeeded though the rank rejected the id")
	}
	// And matching custom lengths work.
	serr2 := make(chan error, 1)
	go func() { serr2 <- Serve(context.Background(), ln, testID()[:64], 2, so) }()
	if id, err := Fetch(context.Background(), ln.Addr().String(), 1, "run-a", so); err != nil || len(id) != 64 {
		t.Fatalf("Fetch 64: %v", err)
	}
	if err := <-serr2; err != nil {
		t.Fatal(err)
	}
}

func TestCancel(t *testing.T) {
	ln := listen(t)
	ctx, cancel := context.WithCancel(context.Background())
	o := opts("run-a")
	time.AfterFunc(100*time.Millisecond, cancel)
	start := time.Now()
	err := Serve(ctx, ln, testID(), 4, o)
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "ranks 1, 2, 3") {
		t.Fatalf("Serve: %v", err)
	}
	ctx2, cancel2 := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel2)
	_, err = Fetch(ctx2, "127.0.0.1:1", 1, "run-a", o)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Fetch: %v", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("cancel took %v", d)
	}
	// The listener is still usable after Serve returns.
	go func() { _, _ = Fetch(context.Background(), ln.Addr().String(), 1, "run-a", o) }()
	if err := Serve(context.Background(), ln, testID(), 2, o); err != nil {
		t.Fatalf("Serve after cancel: %v", err)
	}
}

func TestGather(t *testing.T) {
	ln := listen(t)
	o := opts("run-a")
	const world = 5
	var wg sync.WaitGroup
	for r := 1; r < world; r++ {
		wg.Add(1)
		go func(r int) {
			defer wg.Done()
			blob, _ := json.Marshal(map[string]int{"rank": r, "busbw": r * 10})
			if err := Report(context.Background(), ln.Addr().String(), r, "run-a", blob, o); err != nil {
				t.Errorf("rank %d: %v", r, err)
			}
		}(r)
	}
	out, err := Gather(context.Background(), ln, json.RawMessage(`{"rank":0,"busbw":0}`), world, o)
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	for r := 0; r < world; r++ {
		var v map[string]int
		if err := json.Unmarshal(out[r], &v); err != nil || v["rank"] != r || v["busbw"] != r*10 {
			t.Fatalf("rank %d blob %s (%v)", r, out[r], err)
		}
	}
}

func TestGatherMissing(t *testing.T) {
	ln := listen(t)
	o := opts("run-a")
	o.Timeout = 300 * time.Millisecond
	go func() {
		_ = Report(context.Background(), ln.Addr().String(), 1, "run-a", json.RawMessage(`{"x":1}`), o)
	}()
	out, err := Gather(context.Background(), ln, nil, 3, o)
	if err == nil || !strings.Contains(err.Error(), "rank 2 never reported to rank 0 within 300ms") {
		t.Fatalf("Gather: %v", err)
	}
	if string(out[1]) != `{"x":1}` || out[2] != nil {
		t.Fatalf("partial results: %q", out)
	}
	if err := Report(context.Background(), "127.0.0.1:1", 1, "run-a", json.RawMessage(`not json`), o); err == nil {
		t.Fatal("Report accepted invalid JSON")
	}
}

func TestProtocolGarbage(t *testing.T) {
	// A non-ncclboot peer on rank 0's port is a permanent error, not retried.
	ln := listen(t)
	go func() {
		c, err := ln.Accept()
		if err == nil {
			c.Write([]byte("HTTP/1.1 400 Bad Request\r\n\r\n"))
			c.Close()
		}
	}()
	o := opts("run-a")
	start := time.Now()
	_, err := Fetch(context.Background(), ln.Addr().String(), 1, "run-a", o)
	if err == nil || !strings.Contains(err.Error(), "bad magic") || time.Since(start) > time.Second {
		t.Fatalf("Fetch: %v", err)
	}
}

func TestFromEnv(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	s, err := FromEnv(env(map[string]string{EnvIndex: "3", EnvHostname: "nccl-ar-3", EnvService: "nccl"}), 4)
	if err != nil || s.Rank != 3 || s.Job != "nccl-ar" || s.Rank0Addr != "nccl-ar-0.nccl:29400" {
		t.Fatalf("%+v %v", s, err)
	}
	s, err = FromEnv(env(map[string]string{EnvIndex: "0", EnvJob: "j", EnvService: "svc", EnvNamespace: "ns", EnvPort: "5000"}), 2)
	if err != nil || s.Rank0Addr != "j-0.svc.ns.svc:5000" {
		t.Fatalf("%+v %v", s, err)
	}
	// Outside Kubernetes rank 0's address is given, not looked up.
	s, err = FromEnv(env(map[string]string{EnvIndex: "1", EnvJob: "j", EnvService: "svc", EnvRank0Addr: "127.0.0.1:29411"}), 2)
	if err != nil || s.Rank0Addr != "127.0.0.1:29411" {
		t.Fatalf("%+v %v", s, err)
	}
	for _, c := range []struct {
		m     map[string]string
		world int
		want  string
	}{
		{map[string]string{EnvJob: "j", EnvService: "s"}, 2, "completionMode: Indexed"},
		{map[string]string{EnvIndex: "x", EnvJob: "j", EnvService: "s"}, 2, "not an integer"},
		{map[string]string{EnvIndex: "2", EnvJob: "j", EnvService: "s"}, 2, "out of range"},
		{map[string]string{EnvIndex: "1", EnvService: "s", EnvHostname: "other"}, 2, EnvJob},
		{map[string]string{EnvIndex: "1", EnvJob: "j"}, 2, EnvService},
		{map[string]string{EnvIndex: "1", EnvJob: "j", EnvService: "s", EnvPort: "99999"}, 2, EnvPort},
		{map[string]string{EnvIndex: "0", EnvJob: "j", EnvService: "s"}, 0, "world size"},
		{map[string]string{EnvIndex: "0", EnvJob: "j", EnvService: "s", EnvRank0Addr: "localhost"}, 2, EnvRank0Addr},
		{map[string]string{EnvIndex: "0", EnvJob: "j", EnvService: "s", EnvRank0Addr: ":0"}, 2, EnvRank0Addr},
	} {
		if _, err := FromEnv(env(c.m), c.world); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v world %d: want error with %q, got %v", c.m, c.world, c.want, err)
		}
	}
}
