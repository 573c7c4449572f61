package ncclrun

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rdmasuite/rdmasuite/workloads/ncclboot"
	"github.com/rdmasuite/rdmasuite/workloads/probeout"
)

// fakeStarter "measures" by echoing the id's first byte and its rank.
type fakeStarter struct {
	fail error
}

func (fakeStarter) NewID() ([]byte, error) {
	id := make([]byte, ncclboot.DefaultIDLen)
	id[0] = 42
	return id, nil
}

func (s fakeStarter) Run(_ context.Context, id []byte, world, rank int) (json.RawMessage, error) {
	if s.fail != nil {
		return nil, s.fail
	}
	return json.RawMessage(fmt.Sprintf(`{"id0":%d,"world":%d,"rank":%d}`, id[0], world, rank)), nil
}

func sumCombiner(ranks []json.RawMessage) (json.RawMessage, error) {
	var parts []string
	for _, r := range ranks {
		parts = append(parts, string(r))
	}
	return json.RawMessage("[" + strings.Join(parts, ",") + "]"), nil
}

type rankOut struct {
	out Output
	err *probeout.Error
}

// world runs ranks 0..n-1 (except skip) with facts from mk on loopback.
func world(t *testing.T, n int, skip map[int]bool, timeout time.Duration, mk func(rank int) (Facts, Starter)) map[int]rankOut {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var mu sync.Mutex
	res := map[int]rankOut{}
	var wg sync.WaitGroup
	for r := 0; r < n; r++ {
		if skip[r] {
			continue
		}
		wg.Add(1)
		go func(r int) {
			defer wg.Done()
			f, s := mk(r)
			f.Pod, f.Node = fmt.Sprintf("job-%d", r), fmt.Sprintf("node-%d", r)
			cfg := Config{Self: ncclboot.Self{Rank: r, World: n, Port: 0, Rank0Addr: ln.Addr().String()},
				Token: "tok", Timeout: timeout, Listen: func(int) (net.Listener, error) { return ln, nil }}
			o, e := Run(context.Background(), cfg, f, s, sumCombiner)
			mu.Lock()
			res[r] = rankOut{o, e}
			mu.Unlock()
		}(r)
	}
	wg.Wait()
	return res
}

func ready(int) (Facts, Starter) {
	return Facts{CUDADriver: "12.4", NCCL: "2.21.5", GPUs: []GPU{{Ordinal: 0, Name: "H100"}}}, fakeStarter{}
}

func TestEveryRankMeasuresAndRank0Combines(t *testing.T) {
	res := world(t, 3, nil, 5*time.Second, ready)
	for r := 0; r < 3; r++ {
		if res[r].err != nil {
			t.Fatalf("rank %d: %v", r, res[r].err)
		}
	}
	o := res[0].out
	want := `[{"id0":42,"world":3,"rank":0},{"id0":42,"world":3,"rank":1},{"id0":42,"world":3,"rank":2}]`
	if string(o.Result) != want || o.Joined != 3 || len(o.Ranks) != 3 || o.Ranks[2].Node != "node-2" {
		t.Fatalf("rank 0 output: %+v result %s", o, o.Result)
	}
}

func TestRankWithoutCUDAStopsEveryRankWithANotRun(t *testing.T) {
	why := "no CUDA driver: libcuda.so.1 could not be loaded"
	res := world(t, 3, nil, 5*time.Second, func(r int) (Facts, Starter) {
		if r == 1 {
			return Facts{NotReady: why, NotReadyKind: probeout.KindNoGPU}, nil
		}
		return ready(r)
	})
	o, e := res[0].out, res[0].err
	if e == nil || e.Kind != probeout.KindNoGPU || !strings.Contains(e.Message, "rank 1 (pod job-1 on node node-1): "+why) {
		t.Fatalf("rank 0 error: %v", e)
	}
	if o.Joined != 3 || len(o.Ranks) != 3 || o.Result != nil || o.Abort == "" {
		t.Fatalf("rank 0 output: %+v", o)
	}
	if e := res[1].err; e == nil || e.Kind != probeout.KindNoGPU {
		t.Fatalf("rank 1 (the one without CUDA): %v", e)
	}
	if e := res[2].err; e == nil || e.Kind != probeout.KindPeer || !strings.Contains(e.Message, "rank 1") {
		t.Fatalf("rank 2 must stop naming rank 1: %v", e)
	}
}

func TestNCCLVersionMismatchIsNotANotRun(t *testing.T) {
	res := world(t, 2, nil, 5*time.Second, func(r int) (Facts, Starter) {
		f, s := ready(r)
		if r == 1 {
			f.NCCL = "2.19.3"
		}
		return f, s
	})
	if e := res[0].err; e == nil || e.Kind != probeout.KindInternal || !strings.Contains(e.Message, "different NCCL versions") {
		t.Fatalf("rank 0: %v", e)
	}
}

func TestARankWhoseMeasurementFailsFailsTheRun(t *testing.T) {
	res := world(t, 2, nil, 5*time.Second, func(r int) (Facts, Starter) {
		f, _ := ready(r)
		if r == 1 {
			return f, fakeStarter{fail: errors.New("ncclCommInitRank: unhandled system error")}
		}
		return f, fakeStarter{}
	})
	o, e := res[0].out, res[0].err
	if e == nil || e.Kind != probeout.KindInternal || !strings.Contains(e.Message, "rank 1: ncclCommInitRank") || o.Result != nil {
		t.Fatalf("rank 0: %v %+v", e, o)
	}
}

func TestMissingRankIsATimeoutNamingIt(t *testing.T) {
	res := world(t, 3, map[int]bool{2: true}, 500*time.Millisecond, ready)
	o, e := res[0].out, res[0].err
	if e == nil || e.Kind != probeout.KindTimeout || !strings.Contains(e.Message, "rank 2") || o.Joined != 2 {
		t.Fatalf("rank 0: %v joined %d", e, o.Joined)
	}
	if e := res[1].err; e == nil || !strings.Contains(e.Message, "rank 2 never joined") {
		t.Fatalf("rank 1 must hear why: %v", e)
	}
}
