package cuda

import (
	"errors"
	"fmt"
	"sync"
	"unsafe"

	"github.com/rdmasuite/rdmasuite/workloads/units"
)

// ErrClosed is returned by a Context method called after Close.
var ErrClosed = errors.New("cuda: context closed")

// Context is a retained primary context made current on the calling OS thread.
type Context struct {
	d      *Driver
	dev    Device
	handle int32 // CUdevice
	ctx    uintptr

	mu     sync.Mutex
	closed bool
}

// Activate retains dev's primary context (cuDevicePrimaryCtxRetain) and makes it
// current (cuCtxSetCurrent). CUDA's current context is per OS thread: call
// runtime.LockOSThread before Activate and use the Context (and any NCCL call that
// relies on it) from that goroutine only. Close releases the context.
func (d *Driver) Activate(dev Device) (*Context, error) {
	if d.cuDevicePrimaryCtxRetain == nil {
		return nil, d.symbolErr("cuDevicePrimaryCtxRetain")
	}
	if d.cuDevicePrimaryCtxRelease == nil {
		return nil, d.symbolErr("cuDevicePrimaryCtxRelease_v2")
	}
	if d.cuCtxSetCurrent == nil {
		return nil, d.symbolErr("cuCtxSetCurrent")
	}
	h, err := d.device(dev.Ordinal)
	if err != nil {
		return nil, err
	}
	var ctx uintptr
	if err := d.check(fmt.Sprintf("cuDevicePrimaryCtxRetain(device %d)", dev.Ordinal), d.cuDevicePrimaryCtxRetain(&ctx, h)); err != nil {
		return nil, err
	}
	if err := d.check(fmt.Sprintf("cuCtxSetCurrent(device %d)", dev.Ordinal), d.cuCtxSetCurrent(ctx)); err != nil {
		d.cuDevicePrimaryCtxRelease(h)
		return nil, err
	}
	return &Context{d: d, dev: dev, handle: h, ctx: ctx}, nil
}

// Device is the device the context belongs to.
func (c *Context) Device() Device { return c.dev }

// Close releases the primary context (cuDevicePrimaryCtxRelease_v2). Only the first
// call releases; later calls return nil.
func (c *Context) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	c.closed = true
	return c.d.check(fmt.Sprintf("cuDevicePrimaryCtxRelease(device %d)", c.dev.Ordinal), c.d.cuDevicePrimaryCtxRelease(c.handle))
}

func (c *Context) usable() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return ErrClosed
	}
	return nil
}

// Alloc allocates size bytes of device memory (cuMemAlloc_v2).
func (c *Context) Alloc(size int) (DevicePtr, error) {
	if err := c.usable(); err != nil {
		return 0, err
	}
	if size <= 0 {
		return 0, fmt.Errorf("cuMemAlloc(%d bytes): size must be positive", size)
	}
	if c.d.cuMemAlloc == nil {
		return 0, c.d.symbolErr("cuMemAlloc_v2")
	}
	var p uint64
	if err := c.d.check(fmt.Sprintf("cuMemAlloc(%s)", units.Bytes(int64(size))), c.d.cuMemAlloc(&p, uint64(size))); err != nil {
		return 0, err
	}
	return DevicePtr(p), nil
}

// Free frees memory from Alloc (cuMemFree_v2).
func (c *Context) Free(p DevicePtr) error {
	if err := c.usable(); err != nil {
		return err
	}
	if c.d.cuMemFree == nil {
		return c.d.symbolErr("cuMemFree_v2")
	}
	return c.d.check(fmt.Sprintf("cuMemFree(%#x)", uintptr(p)), c.d.cuMemFree(uint64(p)))
}

// CopyHtoD copies src to device memory at dst (cuMemcpyHtoD_v2, synchronous).
func (c *Context) CopyHtoD(dst DevicePtr, src []byte) error {
	if err := c.usable(); err != nil {
		return err
	}
	if len(src) == 0 {
		return nil
	}
	if c.d.cuMemcpyHtoD == nil {
		return c.d.symbolErr("cuMemcpyHtoD_v2")
	}
	return c.d.check(fmt.Sprintf("cuMemcpyHtoD(%s)", units.Bytes(int64(len(src)))),
		c.d.cuMemcpyHtoD(uint64(dst), unsafe.Pointer(&src[0]), uint64(len(src))))
}

// CopyDtoH copies len(dst) bytes of device memory at src into dst (cuMemcpyDtoH_v2).
func (c *Context) CopyDtoH(dst []byte, src DevicePtr) error {
	if err := c.usable(); err != nil {
		return err
	}
	if len(dst) == 0 {
		return nil
	}
	if c.d.cuMemcpyDtoH == nil {
		return c.d.symbolErr("cuMemcpyDtoH_v2")
	}
	return c.d.check(fmt.Sprintf("cuMemcpyDtoH(%s)", units.Bytes(int64(len(dst)))),
		c.d.cuMemcpyDtoH(unsafe.Pointer(&dst[0]), uint64(src), uint64(len(dst))))
}

// Memset8 sets n bytes at p to v (cuMemsetD8_v2).
func (c *Context) Memset8(p DevicePtr, v byte, n int) error {
	if err := c.usable(); err != nil {
		return err
	}
	if n < 0 {
		return fmt.Errorf("cuMemsetD8(%d bytes): negative size", n)
	}
	if c.d.cuMemsetD8 == nil {
		return c.d.symbolErr("cuMemsetD8_v2")
	}
	return c.d.check(fmt.Sprintf("cuMemsetD8(%s)", units.Bytes(int64(n))), c.d.cuMemsetD8(uint64(p), v, uint64(n)))
}

// StreamCreate creates a stream with default flags (cuStreamCreate(&s, 0)).
func (c *Context) StreamCreate() (Stream, error) {
	if err := c.usable(); err != nil {
		return 0, err
	}
	if c.d.cuStreamCreate == nil {
		return 0, c.d.symbolErr("cuStreamCreate")
	}
	var s uintptr
	if err := c.d.check("cuStreamCreate", c.d.cuStreamCreate(&s, 0)); err != nil {
		return 0, err
	}
	return Stream(s), nil
}

// StreamSync waits for the stream's work (cuStreamSynchronize).
func (c *Context) StreamSync(s Stream) error {
	if err := c.usable(); err != nil {
		return err
	}
	if c.d.cuStreamSynchronize == nil {
		return c.d.symbolErr("cuStreamSynchronize")
	}
	return c.d.check("cuStreamSynchronize", c.d.cuStreamSynchronize(uintptr(s)))
}

// StreamDestroy destroys a stream (cuStreamDestroy_v2).
func (c *Context) StreamDestroy(s Stream) error {
	if err := c.usable(); err != nil {
		return err
	}
	if c.d.cuStreamDestroy == nil {
		return c.d.symbolErr("cuStreamDestroy_v2")
	}
	return c.d.check("cuStreamDestroy", c.d.cuStreamDestroy(uintptr(s)))
}

// DmaBufFD exports [p, p+size) as a dma-buf file descriptor
// (cuMemGetHandleForAddressRange with CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, flags 0),
// the handle ibv_reg_dmabuf_mr registers for GPUDirect RDMA without nvidia_peermem.
// p and size must be aligned to the host page size. The caller owns the descriptor and
// closes it. A driver older than 11.7 lacks the call: the error is a *SymbolError.
func (c *Context) DmaBufFD(p DevicePtr, size int) (int, error) {
	if err := c.usable(); err != nil {
		return -1, err
	}
	if c.d.cuMemGetHandleForAddressRange == nil {
		return -1, c.d.symbolErr("cuMemGetHandleForAddressRange")
	}
	if size <= 0 {
		return -1, fmt.Errorf("cuMemGetHandleForAddressRange(DMA_BUF_FD, %d bytes): size must be positive", size)
	}
	var fd int32 = -1
	r := c.d.cuMemGetHandleForAddressRange(unsafe.Pointer(&fd), uint64(p), uint64(size), memRangeHandleDmaBufFD, 0)
	if err := c.d.check(fmt.Sprintf("cuMemGetHandleForAddressRange(DMA_BUF_FD, %s)", units.Bytes(int64(size))), r); err != nil {
		return -1, err
	}
	return int(fd), nil
}
