package stall

import (
	"io/fs"
	"sync"
	"syscall"
	"time"
)

// fakeClock is time that moves only when someone sleeps: a write that
// stalls for 27 s takes no real time.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{t: time.Date(2026, 3, 14, 9, 26, 53, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Sleep(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// memFile is a file in memory; ReadAt returns short counts at the end.
type memFile struct {
	mu   sync.Mutex
	data []byte
}

func (m *memFile) WriteAt(p []byte, off int64) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if end := int(off) + len(p); end > len(m.data) {
		m.data = append(m.data, make([]byte, end-len(m.data))...)
	}
	return copy(m.data[off:], p), nil
}

func (m *memFile) ReadAt(p []byte, off int64) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if off >= int64(len(m.data)) {
		return 0, nil
	}
	return copy(p, m.data[off:]), nil
}

func (m *memFile) Sync() error { return nil }
func (m *memFile) Size() (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return int64(len(m.data)), nil
}
func (m *memFile) Close() error { return nil }

func (m *memFile) bytes() []byte {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]byte(nil), m.data...)
}

// Fault kinds, each applied to the write of one slot.
const (
	faultLost      = "lost"      // dropped, reported written
	faultTorn      = "torn"      // only the first half lands
	faultDuplicate = "duplicate" // the record also lands in the next slot, over its own record
	faultReorder   = "reorder"   // this record and the next land in each other's slot
	faultStall     = "stall"     // the write blocks for stall (fake time)
	faultEIO       = "eio"       // the write fails with EIO, times times (forever when negative)
	faultHang      = "hang"      // the write blocks (real time) until release is closed
	faultShort     = "short"     // half lands, and the call says so (no error)
)

type fault struct {
	kind    string
	stall   time.Duration
	times   int
	release chan struct{}
	reached chan struct{} // closed when a hang begins
}

// faultFS is the fault-injecting layer under the writer: an Opener whose
// write handles apply faults by slot and charge fake time for each call;
// read handles see the resulting bytes as they are.
type faultFS struct {
	mem                 *memFile
	rb                  int
	clock               *fakeClock
	writeCost, syncCost time.Duration

	mu       sync.Mutex
	faults   map[uint64]*fault
	held     []byte // reorder: the record waiting for its successor
	heldSlot uint64
	dupOf    []byte // duplicate: the record to land again in the next slot
	dupSlot  uint64
	openErr  error
	readOpen int
	// syncErrs: the next syncs that fail with EIO. dropOnSyncErr: a failed
	// sync also loses what was written since the last good one, as the
	// kernel may drop dirty pages after a writeback error.
	syncErrs      int
	dropOnSyncErr bool
	dirty         []int64 // offsets written since the last good sync
}

func newFaultFS(rb int, clock *fakeClock) *faultFS {
	return &faultFS{mem: &memFile{}, rb: rb, clock: clock, writeCost: time.Millisecond, syncCost: 2 * time.Millisecond, faults: map[uint64]*fault{}}
}

func (f *faultFS) inject(slot uint64, ft fault) *faultFS {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.faults[slot] = &ft
	return f
}

func (f *faultFS) open(path string, mode OpenMode) (File, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.openErr != nil {
		return nil, f.openErr
	}
	if mode == OpenRead {
		f.readOpen++
		return f.mem, nil
	}
	return &faultHandle{fs: f}, nil
}

type faultHandle struct{ fs *faultFS }

func (h *faultHandle) WriteAt(p []byte, off int64) (int, error) {
	f := h.fs
	if f.clock != nil {
		f.clock.Sleep(f.writeCost)
	}
	slot := uint64(off) / uint64(f.rb)
	f.mu.Lock()
	ft := f.faults[slot]
	if ft != nil && ft.kind != faultEIO {
		delete(f.faults, slot) // once: a retry of the same record goes through
	}
	if ft != nil && ft.kind == faultEIO {
		if ft.times == 0 {
			delete(f.faults, slot)
			ft = nil
		} else {
			ft.times--
		}
	}
	held, heldSlot, dupOf, dupSlot := f.held, f.heldSlot, f.dupOf, f.dupSlot
	f.mu.Unlock()

	switch {
	case held != nil && slot == heldSlot+1:
		// The successor of a held record: swap them.
		f.mu.Lock()
		f.held = nil
		f.mu.Unlock()
		f.mem.WriteAt(p, off-int64(f.rb))
		f.mem.WriteAt(held, off)
		return len(p), nil
	case dupOf != nil && slot == dupSlot+1:
		f.mem.WriteAt(p, off)
		f.mem.WriteAt(dupOf, off)
		f.mu.Lock()
		f.dupOf = nil
		f.mu.Unlock()
		return len(p), nil
	}
	f.mu.Lock()
	f.dirty = append(f.dirty, off)
	f.mu.Unlock()
	if ft == nil {
		return f.mem.WriteAt(p, off)
	}
	switch ft.kind {
	case faultLost:
		return len(p), nil
	case faultTorn:
		f.mem.WriteAt(p[:len(p)/2], off)
		return len(p), nil
	case faultShort:
		return f.mem.WriteAt(p[:len(p)/2], off)
	case faultDuplicate:
		f.mu.Lock()
		f.dupOf, f.dupSlot = append([]byte(nil), p...), slot
		f.mu.Unlock()
		return f.mem.WriteAt(p, off)
	case faultReorder:
		f.mu.Lock()
		f.held, f.heldSlot = append([]byte(nil), p...), slot
		f.mu.Unlock()
		return len(p), nil
	case faultStall:
		f.clock.Sleep(ft.stall)
		return f.mem.WriteAt(p, off)
	case faultEIO:
		return 0, &fs.PathError{Op: "write", Path: "fault", Err: syscall.EIO}
	case faultHang:
		close(ft.reached)
		<-ft.release
		return f.mem.WriteAt(p, off)
	}
	panic("unknown fault " + ft.kind)
}

func (h *faultHandle) ReadAt(p []byte, off int64) (int, error) { return h.fs.mem.ReadAt(p, off) }

func (h *faultHandle) Sync() error {
	f := h.fs
	if f.clock != nil {
		f.clock.Sleep(f.syncCost)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.syncErrs > 0 {
		f.syncErrs--
		if f.dropOnSyncErr {
			for _, off := range f.dirty {
				f.mem.WriteAt(make([]byte, f.rb), off)
			}
		}
		f.dirty = nil
		return &fs.PathError{Op: "fsync", Path: "fault", Err: syscall.EIO}
	}
	f.dirty = nil
	return nil
}

func (h *faultHandle) Size() (int64, error) { return h.fs.mem.Size() }
func (h *faultHandle) Close() error         { return nil }
