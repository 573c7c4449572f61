package ncclbench

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/rdmasuite/rdmasuite/workloads/nccl"
)

// fakeWorld simulates N ranks in one process: host byte slices behind
// Buffer handles (a separate address range per rank), and one rendezvous
// per collective call at which the last rank to arrive computes every
// rank's output from snapshots of every rank's input (so in-place calls
// behave as NCCL's do). It checks that every rank issues the same call
// with the same counts and that every operand lies inside an allocation,
// so an engine bug in offsets or call order is an error, not silent.
type fakeWorld struct {
	n int

	mu      sync.Mutex
	cond    *sync.Cond
	gen     int
	pending []*fakeOp
	arrived int
	abort   error
	abortAt int // the generation whose rendezvous failed

	// calls[rank][kind] counts collective calls, syncs[rank] Sync calls.
	calls []map[nccl.Collective]int
	syncs []int
	// nth[rank][kind/count] counts calls per collective and count.
	nth []map[string]int

	// fail, when set, is asked before every collective call; an error
	// fails that call and aborts the world (as ncclCommAbort would).
	fail func(rank int, kind nccl.Collective, count, nth int) error
	// corrupt, when set, may change a rank's output after a call.
	corrupt func(rank int, kind nccl.Collective, out []byte)
	// allocFail, when set, fails Alloc on that rank.
	allocFail func(rank int) error
	// noop, when set, makes a call leave that rank's output untouched.
	noop func(rank int, kind nccl.Collective) bool
	// recvAddrs[rank][kind/count] are the distinct receive addresses used.
	recvAddrs []map[string]map[Buffer]bool

	mems []*fakeMem
}

type fakeOp struct {
	kind               nccl.Collective
	count              int
	send               []byte // snapshot of the input
	recv               []byte // the output, aliasing the rank's memory
	sendPeer, recvPeer int
}

func newFakeWorld(n int) *fakeWorld {
	w := &fakeWorld{n: n, pending: make([]*fakeOp, n), syncs: make([]int, n)}
	w.cond = sync.NewCond(&w.mu)
	for r := range n {
		w.calls = append(w.calls, map[nccl.Collective]int{})
		w.nth = append(w.nth, map[string]int{})
		w.recvAddrs = append(w.recvAddrs, map[string]map[Buffer]bool{})
		w.mems = append(w.mems, &fakeMem{w: w, rank: r, next: Buffer(uint64(r+1) << 40), allocs: map[Buffer][]byte{}})
	}
	return w
}

func (w *fakeWorld) comm(rank int) *fakeComm { return &fakeComm{w: w, rank: rank} }

// fakeMem is one rank's "device" memory.
type fakeMem struct {
	w      *fakeWorld
	rank   int
	mu     sync.Mutex
	next   Buffer
	allocs map[Buffer][]byte
	live   int
}

func (m *fakeMem) Alloc(n int) (Buffer, error) {
	if m.w.allocFail != nil {
		if err := m.w.allocFail(m.rank); err != nil {
			return 0, err
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	b := m.next
	m.allocs[b] = make([]byte, n)
	m.next += Buffer(n) + 1<<20
	m.live++
	return b, nil
}

func (m *fakeMem) Free(b Buffer) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.allocs[b]; !ok {
		return fmt.Errorf("fake: free of %#x, not an allocation", uintptr(b))
	}
	delete(m.allocs, b)
	m.live--
	return nil
}

// resolve is the n bytes at b, inside one allocation.
func (m *fakeMem) resolve(b Buffer, n int) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for base, mem := range m.allocs {
		if b >= base && uint64(b-base)+uint64(n) <= uint64(len(mem)) {
			off := int(b - base)
			return mem[off : off+n : off+n], nil
		}
	}
	return nil, fmt.Errorf("fake: rank %d: %d bytes at %#x are outside every allocation", m.rank, n, uintptr(b))
}

func (m *fakeMem) Upload(dst Buffer, src []byte) error {
	d, err := m.resolve(dst, len(src))
	if err != nil {
		return err
	}
	copy(d, src)
	return nil
}

func (m *fakeMem) Download(dst []byte, src Buffer) error {
	s, err := m.resolve(src, len(dst))
	if err != nil {
		return err
	}
	copy(dst, s)
	return nil
}

type fakeComm struct {
	w    *fakeWorld
	rank int
}

func (c *fakeComm) Rank() int  { return c.rank }
func (c *fakeComm) World() int { return c.w.n }
func (c *fakeComm) Sync() error {
	c.w.mu.Lock()
	defer c.w.mu.Unlock()
	c.w.syncs[c.rank]++
	return nil
}

func (c *fakeComm) AllReduce(send, recv Buffer, count int) error {
	return c.do(nccl.AllReduce, count, send, count, recv, count, 0, 0)
}
func (c *fakeComm) AllGather(send, recv Buffer, sendCount int) error {
	return c.do(nccl.AllGather, sendCount, send, sendCount, recv, sendCount*c.w.n, 0, 0)
}
func (c *fakeComm) ReduceScatter(send, recv Buffer, recvCount int) error {
	return c.do(nccl.ReduceScatter, recvCount, send, recvCount*c.w.n, recv, recvCount, 0, 0)
}
func (c *fakeComm) AllToAll(send, recv Buffer, countPerPeer int) error {
	return c.do(nccl.AllToAll, countPerPeer, send, countPerPeer*c.w.n, recv, countPerPeer*c.w.n, 0, 0)
}
func (c *fakeComm) SendRecv(send, recv Buffer, count int, sendPeer, recvPeer int) error {
	return c.do(nccl.SendRecv, count, send, count, recv, count, sendPeer, recvPeer)
}

func (c *fakeComm) do(kind nccl.Collective, count int, send Buffer, sendN int, recv Buffer, recvN int, sendPeer, recvPeer int) error {
	w, m := c.w, c.w.mems[c.rank]
	if count < 0 {
		return fmt.Errorf("fake: %s count %d", kind, count)
	}
	w.mu.Lock()
	key := fmt.Sprintf("%s/%d", kind, count)
	nth := w.nth[c.rank][key]
	w.nth[c.rank][key]++
	w.calls[c.rank][kind]++
	if w.recvAddrs[c.rank][key] == nil {
		w.recvAddrs[c.rank][key] = map[Buffer]bool{}
	}
	w.recvAddrs[c.rank][key][recv] = true
	w.mu.Unlock()
	if w.fail != nil {
		if err := w.fail(c.rank, kind, count, nth); err != nil {
			w.abortWith(fmt.Errorf("fake: rank %d aborted the communicator: %w", c.rank, err))
			return err
		}
	}
	in, err := m.resolve(send, 4*sendN)
	if err != nil {
		w.abortWith(err)
		return err
	}
	out, err := m.resolve(recv, 4*recvN)
	if err != nil {
		w.abortWith(err)
		return err
	}
	op := &fakeOp{kind: kind, count: count, send: append([]byte(nil), in...), recv: out, sendPeer: sendPeer, recvPeer: recvPeer}
	return w.rendezvous(c.rank, op)
}

func (w *fakeWorld) abortWith(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.abort == nil {
		w.abort, w.abortAt = err, w.gen
	}
	w.cond.Broadcast()
}

func (w *fakeWorld) rendezvous(rank int, op *fakeOp) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.abort != nil {
		return w.abort
	}
	my := w.gen
	w.pending[rank] = op
	w.arrived++
	if w.arrived == w.n {
		err := w.execute()
		w.pending, w.arrived = make([]*fakeOp, w.n), 0
		if err != nil && w.abort == nil {
			w.abort, w.abortAt = err, my
		}
		w.gen++
		w.cond.Broadcast()
		return err
	}
	for w.gen == my && w.abort == nil {
		w.cond.Wait()
	}
	if w.abort != nil && w.abortAt == my {
		return w.abort
	}
	return nil
}

func f32(b []byte, i int) float32 { return math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:])) }
func put32(b []byte, i int, v float32) {
	binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
}

// execute computes every rank's output; w.mu is held.
func (w *fakeWorld) execute() error {
	p0 := w.pending[0]
	for r, p := range w.pending {
		if p.kind != p0.kind || p.count != p0.count {
			return fmt.Errorf("fake: rank %d called %s(count %d) while rank 0 called %s(count %d)", r, p.kind, p.count, p0.kind, p0.count)
		}
	}
	n, cnt := w.n, p0.count
	for q, p := range w.pending {
		if w.noop != nil && w.noop(q, p.kind) {
			continue
		}
		switch p.kind {
		case nccl.AllReduce:
			for i := range cnt {
				var s float32
				for _, src := range w.pending {
					s += f32(src.send, i)
				}
				put32(p.recv, i, s)
			}
		case nccl.AllGather:
			for src := range n {
				copy(p.recv[4*src*cnt:4*(src+1)*cnt], w.pending[src].send)
			}
		case nccl.ReduceScatter:
			for i := range cnt {
				var s float32
				for _, src := range w.pending {
					s += f32(src.send, q*cnt+i)
				}
				put32(p.recv, i, s)
			}
		case nccl.AllToAll:
			for src := range n {
				copy(p.recv[4*src*cnt:4*(src+1)*cnt], w.pending[src].send[4*q*cnt:4*(q+1)*cnt])
			}
		case nccl.SendRecv:
			from := p.recvPeer
			if from < 0 || from >= n || w.pending[from].sendPeer != q {
				return fmt.Errorf("fake: rank %d receives from %d, which sends to %d", q, from, w.pending[from].sendPeer)
			}
			copy(p.recv, w.pending[from].send)
		default:
			return fmt.Errorf("fake: unknown collective %s", p.kind)
		}
		if w.corrupt != nil {
			w.corrupt(q, p.kind, p.recv)
		}
	}
	return nil
}

// stepClock is a clock that advances by d at every reading.
func stepClock(d time.Duration) func() time.Time {
	var mu sync.Mutex
	t := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	return func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		t = t.Add(d)
		return t
	}
}

// runFake runs Run on every rank of w concurrently; nowFor, if set, gives
// each rank its clock.
func runFake(t *testing.T, w *fakeWorld, cfg Config, nowFor func(rank int) func() time.Time) ([]RankResult, []error) {
	t.Helper()
	res := make([]RankResult, w.n)
	errs := make([]error, w.n)
	var wg sync.WaitGroup
	for r := range w.n {
		c := cfg
		if nowFor != nil {
			c.Now = nowFor(r)
		}
		wg.Go(func() { res[r], errs[r] = Run(context.Background(), w.comm(r), w.mems[r], c) })
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		w.abortWith(errors.New("test timeout"))
		t.Fatal("ranks did not finish in 60 s")
	}
	for r, m := range w.mems {
		if m.live != 0 {
			t.Errorf("rank %d: %d allocations not freed", r, m.live)
		}
	}
	return res, errs
}
