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

type joinOutcome struct {
	id  []byte
	err error
}

// runJoin runs Rendezvous with decide and Join for ranks 1..world-1 except
// skip, each rank sending {"rank":r}.
func runJoin(t *testing.T, world int, skip map[int]bool, o Options, decide func([]json.RawMessage) Decision) ([]json.RawMessage, Decision, error, map[int]joinOutcome) {
	t.Helper()
	ln := listen(t)
	var wg sync.WaitGroup
	var mu sync.Mutex
	out := map[int]joinOutcome{}
	for r := 1; r < world; r++ {
		if skip[r] {
			continue
		}
		wg.Add(1)
		go func(r int) {
			defer wg.Done()
			jo := o
			jo.World = world
			id, err := Join(context.Background(), ln.Addr().String(), r, o.Token, json.RawMessage(fmt.Sprintf(`{"rank":%d}`, r)), jo)
			mu.Lock()
			out[r] = joinOutcome{id, err}
			mu.Unlock()
		}(r)
	}
	facts, dec, err := Rendezvous(context.Background(), ln, json.RawMessage(`{"rank":0}`), world, o, decide)
	wg.Wait()
	return facts, dec, err, out
}

func TestJoinHandsEveryRankTheIDAfterAllJoined(t *testing.T) {
	for _, world := range []int{1, 2, 5} {
		var seen []json.RawMessage
		facts, dec, err, out := runJoin(t, world, nil, opts("run-a"), func(f []json.RawMessage) Decision {
			seen = f
			return Decision{ID: testID()}
		})
		if err != nil || dec.Abort != "" {
			t.Fatalf("world %d: err %v abort %q", world, err, dec.Abort)
		}
		if len(seen) != world || len(facts) != world {
			t.Fatalf("world %d: decide saw %d facts, returned %d", world, len(seen), len(facts))
		}
		for r := 0; r < world; r++ {
			if string(seen[r]) != fmt.Sprintf(`{"rank":%d}`, r) {
				t.Errorf("world %d: facts[%d] = %s", world, r, seen[r])
			}
		}
		for r := 1; r < world; r++ {
			if out[r].err != nil || !bytes.Equal(out[r].id, testID()) {
				t.Errorf("world %d rank %d: id %v err %v", world, r, out[r].id != nil, out[r].err)
			}
		}
	}
}

func TestJoinAbortReachesEveryRank(t *testing.T) {
	why := "rank 1 (pod p-1 on node n2): no CUDA driver"
	_, dec, err, out := runJoin(t, 3, nil, opts("run-b"), func([]json.RawMessage) Decision { return Decision{Abort: why} })
	if err != nil || dec.Abort != why {
		t.Fatalf("rank 0: err %v decision %+v", err, dec)
	}
	for r := 1; r < 3; r++ {
		var ab *AbortError
		if !errors.As(out[r].err, &ab) || ab.Reason != why || ab.Rank != r || out[r].id != nil {
			t.Errorf("rank %d: got id=%v err=%v, want the abort", r, out[r].id, out[r].err)
		}
	}
}

func TestJoinMissingRankAbortsTheOthers(t *testing.T) {
	o := opts("run-c")
	o.Timeout = 700 * time.Millisecond
	called := false
	facts, dec, err, out := runJoin(t, 4, map[int]bool{2: true}, o, func([]json.RawMessage) Decision { called = true; return Decision{ID: testID()} })
	var me *MissingError
	if !errors.As(err, &me) || len(me.Missing) != 1 || me.Missing[0] != 2 {
		t.Fatalf("rank 0: err %v, want rank 2 missing", err)
	}
	if called || facts[2] != nil || facts[1] == nil || !strings.Contains(dec.Abort, "rank 2 never joined") {
		t.Fatalf("decide called %v, facts %s, abort %q", called, facts, dec.Abort)
	}
	for _, r := range []int{1, 3} {
		var ab *AbortError
		if !errors.As(out[r].err, &ab) || !strings.Contains(ab.Reason, "rank 2 never joined") {
			t.Errorf("rank %d: %v, want an abort naming rank 2", r, out[r].err)
		}
	}
}

func TestJoinRefusesAnotherRunAndWrongKind(t *testing.T) {
	ln := listen(t)
	o := opts("run-d")
	o.Timeout = 600 * time.Millisecond
	done := make(chan error, 1)
	go func() {
		_, _, err := Rendezvous(context.Background(), ln, nil, 2, o, func([]json.RawMessage) Decision { return Decision{ID: testID()} })
		done <- err
	}()
	_, err := Join(context.Background(), ln.Addr().String(), 1, "other-run", nil, o)
	var re *RefusedError
	if !errors.As(err, &re) || !strings.Contains(re.Reason, "token mismatch") {
		t.Fatalf("stale pod: %v", err)
	}
	if _, err := Fetch(context.Background(), ln.Addr().String(), 1, "run-d", o); !errors.As(err, &re) || !strings.Contains(re.Reason, "out of step") {
		t.Fatalf("Fetch against a rendezvous: %v", err)
	}
	if err := <-done; err == nil || !strings.Contains(err.Error(), "refused meanwhile") {
		t.Fatalf("rank 0 should time out naming the refusals: %v", err)
	}
}

func TestJoinWaitsForALateRank0(t *testing.T) {
	ln := listen(t)
	addr := ln.Addr().String()
	ln.Close() // nothing listens yet: Join must retry
	o := opts("run-e")
	res := make(chan joinOutcome, 1)
	go func() {
		id, err := Join(context.Background(), addr, 1, "run-e", nil, o)
		res <- joinOutcome{id, err}
	}()
	time.Sleep(200 * time.Millisecond)
	ln2, err := net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("could not re-listen on %s: %v", addr, err) // port taken meanwhile: nothing to judge
	}
	defer ln2.Close()
	if _, _, err := Rendezvous(context.Background(), ln2, nil, 2, o, func([]json.RawMessage) Decision { return Decision{ID: testID()} }); err != nil {
		t.Fatal(err)
	}
	if r := <-res; r.err != nil || !bytes.Equal(r.id, testID()) {
		t.Fatalf("late rank 0: %v", r.err)
	}
}
