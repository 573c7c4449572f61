package main

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"syscall"

	"github.com/rdmasuite/rdmasuite/workloads/bw"
	"github.com/rdmasuite/rdmasuite/workloads/bwverbs"
	"github.com/rdmasuite/rdmasuite/workloads/cuda"
)

// cudaAllocator is bwverbs.GPUAllocator over the CUDA driver API
// (workloads/cuda, libcuda.so.1 loaded at run time): what `bw --mem cuda`
// allocates the test buffer with. The driver is loaded on first use, so a
// host-memory run never touches libcuda.
type cudaAllocator struct {
	once sync.Once
	drv  *cuda.Driver
	devs []cuda.Device
	err  error
}

func newCUDAAllocator() *cudaAllocator { return &cudaAllocator{} }

// load opens and initialises the driver and lists its GPUs, once. No
// driver library and no device match bw.ErrNoGPU (the rail is a not-run);
// any other failure (a driver/library mismatch, a broken install) stays
// an error.
func (a *cudaAllocator) load() error {
	a.once.Do(func() {
		drv, err := cuda.Load()
		if err == nil {
			err = drv.Init()
		}
		var devs []cuda.Device
		if err == nil {
			devs, err = drv.Devices()
		}
		switch {
		case errors.Is(err, cuda.ErrNoDriver), errors.Is(err, cuda.ErrNoDevice):
			a.err = bw.Tag(bw.ErrNoGPU, err)
		case err != nil:
			a.err = fmt.Errorf("CUDA driver: %w", err)
		default:
			a.drv, a.devs = drv, devs
		}
	})
	return a.err
}

func (a *cudaAllocator) GPUs() ([]bwverbs.GPUInfo, error) {
	if err := a.load(); err != nil {
		return nil, err
	}
	out := make([]bwverbs.GPUInfo, 0, len(a.devs))
	for _, d := range a.devs {
		out = append(out, bwverbs.GPUInfo{Ordinal: d.Ordinal, Name: d.Name, PCIBusID: d.PCIBusID, DmaBufSupported: d.DmaBufSupported})
	}
	return out, nil
}

func (a *cudaAllocator) device(ordinal int) (cuda.Device, error) {
	for _, d := range a.devs {
		if d.Ordinal == ordinal {
			return d, nil
		}
	}
	return cuda.Device{}, bw.Tag(bw.ErrNoGPU, fmt.Errorf("no CUDA device with ordinal %d (this pod sees %d)", ordinal, len(a.devs)))
}

// Alloc allocates size bytes on the GPU with its primary context current
// on this OS thread. The caller (bwverbs) holds the thread locked through
// allocation, dma-buf export and registration.
func (a *cudaAllocator) Alloc(ordinal, size int) (bwverbs.GPUBuffer, error) {
	if err := a.load(); err != nil {
		return nil, err
	}
	dev, err := a.device(ordinal)
	if err != nil {
		return nil, err
	}
	runtime.LockOSThread() // nested in the caller's lock; harmless alone
	defer runtime.UnlockOSThread()
	ctx, err := a.drv.Activate(dev)
	if err != nil {
		return nil, err
	}
	p, err := ctx.Alloc(size)
	if err != nil {
		ctx.Close()
		return nil, err
	}
	return &cudaBuffer{drv: a.drv, dev: dev, ctx: ctx, ptr: p, size: size, fd: -1}, nil
}

// cudaBuffer is one allocation; it holds a retain of its device's primary
// context until Close.
type cudaBuffer struct {
	drv    *cuda.Driver
	dev    cuda.Device
	ctx    *cuda.Context
	ptr    cuda.DevicePtr
	size   int
	fd     int
	mu     sync.Mutex
	closed bool
}

func (b *cudaBuffer) Ptr() uintptr { return uintptr(b.ptr) }

// DmaBufFD exports the allocation as a dma-buf once and keeps the fd
// until Close. It runs where Alloc ran (the context is current).
func (b *cudaBuffer) DmaBufFD() (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return -1, cuda.ErrClosed
	}
	if b.fd >= 0 {
		return b.fd, nil
	}
	fd, err := b.ctx.DmaBufFD(b.ptr, b.size)
	if err != nil {
		return -1, err
	}
	b.fd = fd
	return fd, nil
}

// Close frees the allocation and releases the context; safe to call
// twice. It may run on any goroutine: it makes the context current on its
// own locked thread for cuMemFree.
func (b *cudaBuffer) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil
	}
	b.closed = true
	var errs []error
	if b.fd >= 0 {
		if err := syscall.Close(b.fd); err != nil {
			errs = append(errs, fmt.Errorf("close dma-buf fd %d: %w", b.fd, err))
		}
		b.fd = -1
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cur, err := b.drv.Activate(b.dev) // current here, whatever thread this is
	if err != nil {
		errs = append(errs, err)
	} else {
		errs = append(errs, cur.Free(b.ptr), cur.Close())
	}
	errs = append(errs, b.ctx.Close())
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("freeing %d bytes on GPU %d: %w", b.size, b.dev.Ordinal, err)
	}
	return nil
}

// memoryLog keeps where each local rail's buffer lived (bwverbs'
// OnMemory), logs it, and writes it into the rails of the probe output.
type memoryLog struct {
	mu     sync.Mutex
	byRail map[string]bw.Memory
	logf   func(format string, a ...any)
}

func newMemoryLog(logf func(format string, a ...any)) *memoryLog {
	return &memoryLog{byRail: map[string]bw.Memory{}, logf: logf}
}

func (l *memoryLog) record(r bw.Rail, m bw.Memory) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if old, seen := l.byRail[r.Name()]; !seen || old != m {
		l.logf("rail %s memory: %s", r.Name(), describeMemory(m))
	}
	l.byRail[r.Name()] = m
}

// fill sets each rail result's Memory from what its local rail recorded.
func (l *memoryLog) fill(out *bw.ProbeOutput) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := range out.Rails {
		if m, ok := l.byRail[out.Rails[i].Local.Name()]; ok {
			out.Rails[i].Memory = &m
		}
	}
}

// describeMemory is one log line about a rail's buffer.
func describeMemory(m bw.Memory) string {
	if m.Kind != bw.MemoryCUDA {
		return m.Kind
	}
	var b strings.Builder
	fmt.Fprintf(&b, "GPU %d (%s, %s, chosen: %s)", m.GPU, m.GPUName, m.GPUPCI, m.Selected)
	if m.Topology != "" {
		fmt.Fprintf(&b, ", %s to NIC %s", m.Topology, m.NICPCI)
	}
	if m.CrossSocket {
		fmt.Fprintf(&b, " CROSS-SOCKET (NIC on NUMA node %d, GPU on %d: expect lower bandwidth)", m.NUMANIC, m.NUMAGPU)
	}
	if m.TopologyWhy != "" {
		fmt.Fprintf(&b, " [topology: %s]", m.TopologyWhy)
	}
	if m.Path != "" {
		fmt.Fprintf(&b, "; GPUDirect RDMA via %s", m.Path)
	} else {
		b.WriteString("; no GPUDirect RDMA path")
	}
	if m.Why != "" {
		fmt.Fprintf(&b, " (%s)", m.Why)
	}
	return b.String()
}
