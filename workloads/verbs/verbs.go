// Package verbs is rdmasuite's only cgo package: a thin, leak-free layer over
// rdma-core's libibverbs for what a bandwidth and memory-registration test
// needs — devices, ports, GIDs, protection domains, memory regions, completion
// queues and RC queue pairs, RDMA WRITE/READ/SEND posts and CQ polling.
//
// Conventions (from rdma-core's own bindings): registered buffers live in C
// memory, never on the Go heap; children are closed before parents; Close is
// idempotent; errno is captured by cgo's two-value call on the failing call
// itself; errors name the verbs call, its inputs and strerror.
package verbs

/*
#cgo LDFLAGS: -libverbs
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <stdint.h>
#include <time.h>
#include <infiniband/verbs.h>

// ibv_post_send, ibv_poll_cq and ibv_query_port are static inline in
// verbs.h: cgo cannot call those directly.
static int rs_post(struct ibv_qp *qp, int opcode, uint64_t laddr, uint32_t len, uint32_t lkey,
                   uint64_t raddr, uint32_t rkey, uint64_t wr_id, int signaled, int inl) {
	struct ibv_sge sge = { .addr = laddr, .length = len, .lkey = lkey };
	struct ibv_send_wr wr, *bad = NULL;
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = wr_id;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = opcode;
	wr.send_flags = (signaled ? IBV_SEND_SIGNALED : 0) | (inl ? IBV_SEND_INLINE : 0);
	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	int rc = ibv_post_send(qp, &wr, &bad);
	if (rc) errno = rc; // ibv_post_send returns the error instead of setting errno
	return rc;
}

static int rs_post_recv(struct ibv_qp *qp, uint64_t laddr, uint32_t len, uint32_t lkey, uint64_t wr_id) {
	struct ibv_sge sge = { .addr = laddr, .length = len, .lkey = lkey };
	struct ibv_recv_wr wr, *bad = NULL;
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = wr_id;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	int rc = ibv_post_recv(qp, &wr, &bad);
	if (rc) errno = rc;
	return rc;
}

// rs_poll copies up to n completions into flat arrays Go can read.
static int rs_poll(struct ibv_cq *cq, int n, uint64_t *ids, int *status, uint32_t *qpn, int *opcode, uint32_t *bytes) {
	struct ibv_wc wc[64];
	if (n > 64) n = 64;
	int got = ibv_poll_cq(cq, n, wc);
	for (int i = 0; i < got; i++) {
		ids[i] = wc[i].wr_id; status[i] = wc[i].status; qpn[i] = wc[i].qp_num;
		opcode[i] = wc[i].opcode; bytes[i] = wc[i].byte_len;
	}
	return got;
}

static int rs_query_port(struct ibv_context *ctx, uint8_t port, struct ibv_port_attr *attr) {
	int rc = ibv_query_port(ctx, port, attr);
	if (rc) errno = rc;
	return rc;
}

static ssize_t rs_gid_table(struct ibv_context *ctx, struct ibv_gid_entry *e, size_t n) {
	return ibv_query_gid_table(ctx, e, n, 0);
}

static int rs_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *a, int mask) {
	int rc = ibv_modify_qp(qp, a, mask);
	if (rc) errno = rc;
	return rc;
}

#include "cycles.h"

// rs_create_rc_qp_ex creates an RC QP that can also be posted to through
// the extended-QP API (ibv_wr_*), which perftest 6.x uses on the devices
// it lists (mlx5, EFA, HNS, ...).
static struct ibv_qp *rs_create_rc_qp_ex(struct ibv_context *ctx, struct ibv_pd *pd, struct ibv_cq *cq,
                                         uint32_t send_wr, uint32_t recv_wr, uint32_t inl) {
	struct ibv_qp_init_attr_ex a;
	memset(&a, 0, sizeof(a));
	a.send_cq = cq;
	a.recv_cq = cq;
	a.qp_type = IBV_QPT_RC;
	a.cap.max_send_wr = send_wr;
	a.cap.max_recv_wr = recv_wr;
	a.cap.max_send_sge = 1;
	a.cap.max_recv_sge = 1;
	a.cap.max_inline_data = inl;
	a.sq_sig_all = 0;
	a.pd = pd;
	a.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	a.send_ops_flags = IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_READ | IBV_QP_EX_WITH_SEND;
	return ibv_create_qp_ex(ctx, &a);
}

// rs_reg_addr registers memory at an address this package did not
// allocate (e.g. a GPU pointer that a peer-memory client such as
// nvidia_peermem resolves); the address stays an integer on the Go side.
static struct ibv_mr *rs_reg_addr(struct ibv_pd *pd, uint64_t addr, size_t len, int access) {
	return ibv_reg_mr(pd, (void *)(uintptr_t)addr, len, access);
}

static void *rs_alloc(size_t size) {
	void *p = NULL;
	if (posix_memalign(&p, 4096, size) != 0) return NULL;
	memset(p, 0x5a, size); // touch every page so registration pins real memory
	return p;
}
*/
import "C"

import (
	"errors"
	"fmt"
	"strings"
	"syscall"
	"time"
	"unsafe"

	"github.com/rdmasuite/rdmasuite/workloads/units"
)

// ErrNoDevice means this process sees no RDMA device at all.
var ErrNoDevice = errors.New("no RDMA device visible: /dev/infiniband has no uverbs device in this container or host " +
	"(is the RDMA device plugin / MOFED ready, and did the pod request the RDMA resource?)")

// ErrMemlock matches a memory registration the kernel refused for want of
// locked memory (ibv_reg_mr with ENOMEM or EPERM: RLIMIT_MEMLOCK without
// CAP_IPC_LOCK), where perftest prints "Couldn't allocate MR".
var ErrMemlock = errors.New("memory registration refused (RLIMIT_MEMLOCK)")

// ErrDmabufUnsupported matches a dma-buf registration (RegDmabufMR) that
// the stack cannot do at all: ibv_reg_dmabuf_mr with EOPNOTSUPP (the HCA's
// kernel driver or user-space provider has no dma-buf support),
// EPROTONOSUPPORT or ENOSYS (a kernel or rdma-core without the method).
// Other errnos (EINVAL, EFAULT, EBADF: a bad fd or range, an exporter that
// refused) do not match; errors.Is with the errno still tells them apart.
var ErrDmabufUnsupported = errors.New("dma-buf memory registration not supported by the HCA driver, kernel or rdma-core")

// ErrPeerMemMissing matches registering memory this package did not
// allocate (RegExternalMR) refused with EFAULT or EINVAL: for a GPU
// pointer, no peer-memory client (nvidia_peermem) claimed the address, so
// the kernel tried to pin it as host memory and failed.
var ErrPeerMemMissing = errors.New("external memory registration refused (for a GPU pointer: no peer-memory client such as nvidia_peermem claimed it)")

// ErrNoSuchDevice matches opening a device by a name this process does
// not see.
var ErrNoSuchDevice = errors.New("no such RDMA device")

// ErrCompletion matches a work completion with an error status (e.g.
// "transport retry counter exceeded"): see CompletionError.
var ErrCompletion = errors.New("work completion failed")

// CompletionError is a failed work completion in the C loop.
type CompletionError struct {
	QPIndex int
	Seq     int64
	Status  int // ibv_wc_status
}

func (e *CompletionError) Error() string {
	return fmt.Sprintf("completion error on QP index %d op %d: %s", e.QPIndex, e.Seq, StatusString(e.Status))
}

// Is makes a CompletionError match ErrCompletion.
func (e *CompletionError) Is(target error) bool { return target == ErrCompletion }

// Error is a failed verbs call with its inputs and errno.
type Error struct {
	Call  string // e.g. "ibv_reg_mr(1 MiB)"
	Errno syscall.Errno
	// Mem says which kind of registration failed (MemHost when Call is
	// not a registration); it decides which sentinel the error matches.
	Mem MemKind
}

// MemKind is where a memory region's buffer comes from.
type MemKind int

const (
	MemHost     MemKind = iota // allocated and owned by this package (RegMR)
	MemExternal                // someone else's pointer (RegExternalMR), e.g. GPU memory through peer memory
	MemDmabuf                  // a dma-buf exported by another driver (RegDmabufMR), e.g. GPU memory
)

func (k MemKind) String() string {
	switch k {
	case MemExternal:
		return "external"
	case MemDmabuf:
		return "dma-buf"
	}
	return "host"
}

// Error prints strerror's wording ("Cannot allocate memory"); Go's errno
// strings are the same text in lower case.
func (e *Error) Error() string {
	msg := e.Errno.Error()
	if msg != "" && msg[0] >= 'a' && msg[0] <= 'z' {
		msg = string(msg[0]-'a'+'A') + msg[1:]
	}
	return fmt.Sprintf("%s: %s", e.Call, msg)
}
func (e *Error) Unwrap() error { return e.Errno }

// Is makes a refused registration (ibv_reg_mr with ENOMEM or EPERM) match
// ErrMemlock; errors.Is with the errno itself still works through Unwrap.
//
// A registration of memory this package did not allocate matches
// ErrPeerMemMissing on EFAULT or EINVAL; a dma-buf registration matches
// ErrDmabufUnsupported on EOPNOTSUPP, EPROTONOSUPPORT or ENOSYS. Neither
// matches ErrMemlock: the kernel does not pin such memory as the
// process's own, so RLIMIT_MEMLOCK is not what refused it.
func (e *Error) Is(target error) bool {
	switch target {
	case ErrMemlock:
		return e.Mem == MemHost && strings.HasPrefix(e.Call, "ibv_reg_mr") && (e.Errno == syscall.ENOMEM || e.Errno == syscall.EPERM)
	case ErrPeerMemMissing:
		return e.Mem == MemExternal && (e.Errno == syscall.EFAULT || e.Errno == syscall.EINVAL)
	case ErrDmabufUnsupported:
		return e.Mem == MemDmabuf && (e.Errno == syscall.EOPNOTSUPP || e.Errno == syscall.EPROTONOSUPPORT || e.Errno == syscall.ENOSYS)
	}
	return false
}

// notFound is Open's error for a device name this process does not see.
type notFound struct {
	name  string
	found []string
}

func (e *notFound) Error() string {
	return fmt.Sprintf("RDMA device %q not found; this process sees %v", e.name, e.found)
}
func (e *notFound) Is(target error) bool { return target == ErrNoSuchDevice }

func callErr(call string, err error) error {
	var errno syscall.Errno
	if errors.As(err, &errno) && errno != 0 {
		return &Error{Call: call, Errno: errno}
	}
	return &Error{Call: call, Errno: syscall.EIO}
}

// DeviceNames lists the verbs devices libibverbs finds. No device, and
// ENOSYS (no uverbs in the kernel), both return ErrNoDevice.
func DeviceNames() ([]string, error) {
	var n C.int
	list, err := C.ibv_get_device_list(&n)
	if list == nil {
		if errors.Is(err, syscall.ENOSYS) || err == nil {
			return nil, ErrNoDevice
		}
		return nil, callErr("ibv_get_device_list", err)
	}
	defer C.ibv_free_device_list(list)
	devs := unsafe.Slice(list, int(n))
	names := make([]string, 0, len(devs))
	for _, d := range devs {
		names = append(names, C.GoString(C.ibv_get_device_name(d)))
	}
	if len(names) == 0 {
		return nil, ErrNoDevice
	}
	return names, nil
}

// Context is an open device.
type Context struct {
	ctx  *C.struct_ibv_context
	Name string
}

// Open opens the device called name, or the first device when name is "".
func Open(name string) (*Context, error) {
	var n C.int
	list, err := C.ibv_get_device_list(&n)
	if list == nil {
		if errors.Is(err, syscall.ENOSYS) || err == nil {
			return nil, ErrNoDevice
		}
		return nil, callErr("ibv_get_device_list", err)
	}
	defer C.ibv_free_device_list(list)
	devs := unsafe.Slice(list, int(n))
	if len(devs) == 0 {
		return nil, ErrNoDevice
	}
	var found []string
	for _, d := range devs {
		dn := C.GoString(C.ibv_get_device_name(d))
		found = append(found, dn)
		if name != "" && dn != name {
			continue
		}
		ctx, err := C.ibv_open_device(d)
		if ctx == nil {
			return nil, callErr(fmt.Sprintf("ibv_open_device(%s)", dn), err)
		}
		return &Context{ctx: ctx, Name: dn}, nil
	}
	return nil, &notFound{name: name, found: found}
}

// Close closes the device; safe to call twice.
func (c *Context) Close() error {
	if c == nil || c.ctx == nil {
		return nil
	}
	rc, err := C.ibv_close_device(c.ctx)
	c.ctx = nil
	if rc != 0 {
		return callErr("ibv_close_device("+c.Name+")", err)
	}
	return nil
}

// DeviceAttr is the subset of ibv_device_attr the tests use.
type DeviceAttr struct {
	FWVersion     string `json:"fwVersion"`
	NodeGUID      uint64 `json:"nodeGuid"`
	PhysPorts     int    `json:"physPorts"`
	MaxMRSize     uint64 `json:"maxMrSize"`
	MaxQPWR       int    `json:"maxQpWr"`
	MaxCQE        int    `json:"maxCqe"`
	MaxQPRdAtom   int    `json:"maxQpRdAtom"`
	MaxQPInitRdAt int    `json:"maxQpInitRdAtom"`
}

// QueryDevice reads the device's capabilities.
func (c *Context) QueryDevice() (DeviceAttr, error) {
	var a C.struct_ibv_device_attr
	rc, err := C.ibv_query_device(c.ctx, &a)
	if rc != 0 {
		return DeviceAttr{}, callErr("ibv_query_device("+c.Name+")", err)
	}
	return DeviceAttr{
		FWVersion: C.GoString(&a.fw_ver[0]), NodeGUID: uint64(a.node_guid), PhysPorts: int(a.phys_port_cnt),
		MaxMRSize: uint64(a.max_mr_size), MaxQPWR: int(a.max_qp_wr), MaxCQE: int(a.max_cqe),
		MaxQPRdAtom: int(a.max_qp_rd_atom), MaxQPInitRdAt: int(a.max_qp_init_rd_atom),
	}, nil
}

// PortAttr is a port's state as ibv_query_port reports it, decoded.
type PortAttr struct {
	State       string  `json:"state"`     // ACTIVE, DOWN, INIT, ARMED
	PhysState   string  `json:"physState"` // LinkUp, Polling, Disabled, …
	LinkLayer   string  `json:"linkLayer"` // InfiniBand or Ethernet
	ActiveMTU   int     `json:"activeMtu"` // bytes
	MaxMTU      int     `json:"maxMtu"`
	LID         uint16  `json:"lid"`
	SpeedGbps   float64 `json:"laneGbps"` // per-lane signalling rate
	Width       int     `json:"width"`    // lanes
	RateGbps    float64 `json:"rateGbps"` // lanes × lane rate: what ibstat calls Rate
	GIDTableLen int     `json:"gidTableLen"`
	mtuEnum     C.enum_ibv_mtu
}

// Active reports whether the port can carry traffic.
func (p PortAttr) Active() bool { return p.State == "ACTIVE" }

// QueryPort reads port (1-based) of the device.
func (c *Context) QueryPort(port int) (PortAttr, error) {
	var a C.struct_ibv_port_attr
	rc, err := C.rs_query_port(c.ctx, C.uint8_t(port), &a)
	if rc != 0 {
		return PortAttr{}, callErr(fmt.Sprintf("ibv_query_port(%s, port %d)", c.Name, port), err)
	}
	p := PortAttr{
		State:     portState(int(a.state)),
		PhysState: physState(int(a.phys_state)),
		ActiveMTU: mtuBytes(int(a.active_mtu)),
		MaxMTU:    mtuBytes(int(a.max_mtu)),
		LID:       uint16(a.lid),
		Width:     widthLanes(int(a.active_width)),
		// active_speed_ex (XDR) is newer than Debian 12's rdma-core 44.
		SpeedGbps:   laneGbps(int(a.active_speed), 0),
		GIDTableLen: int(a.gid_tbl_len),
		mtuEnum:     a.active_mtu,
		LinkLayer:   "InfiniBand",
	}
	if a.link_layer == C.IBV_LINK_LAYER_ETHERNET {
		p.LinkLayer = "Ethernet"
	}
	p.RateGbps = p.SpeedGbps * float64(p.Width)
	return p, nil
}

// GID is one GID table entry.
type GID struct {
	Index int      `json:"index"`
	Port  int      `json:"port"`
	Type  string   `json:"type"` // IB, RoCE v1, RoCE v2
	Raw   [16]byte `json:"-"`
	Addr  string   `json:"gid"`
}

// IPv4 reports whether the GID is an IPv4-mapped address (::ffff:a.b.c.d).
func (g GID) IPv4() bool {
	for i := 0; i < 10; i++ {
		if g.Raw[i] != 0 {
			return false
		}
	}
	return g.Raw[10] == 0xff && g.Raw[11] == 0xff
}

// GIDs returns the valid GID table entries of every port.
func (c *Context) GIDs() ([]GID, error) {
	entries := make([]C.struct_ibv_gid_entry, 256)
	n, err := C.rs_gid_table(c.ctx, &entries[0], C.size_t(len(entries)))
	if n < 0 {
		return nil, callErr("ibv_query_gid_table("+c.Name+")", err)
	}
	out := make([]GID, 0, int(n))
	for _, e := range entries[:int(n)] {
		g := GID{Index: int(e.gid_index), Port: int(e.port_num)}
		copy(g.Raw[:], C.GoBytes(unsafe.Pointer(&e.gid), 16))
		switch e.gid_type {
		case C.IBV_GID_TYPE_IB:
			g.Type = "IB"
		case C.IBV_GID_TYPE_ROCE_V1:
			g.Type = "RoCE v1"
		case C.IBV_GID_TYPE_ROCE_V2:
			g.Type = "RoCE v2"
		}
		g.Addr = formatGID(g.Raw)
		out = append(out, g)
	}
	return out, nil
}

// PD is a protection domain.
type PD struct {
	pd  *C.struct_ibv_pd
	ctx *Context
}

// AllocPD allocates a protection domain.
func (c *Context) AllocPD() (*PD, error) {
	pd, err := C.ibv_alloc_pd(c.ctx)
	if pd == nil {
		return nil, callErr("ibv_alloc_pd("+c.Name+")", err)
	}
	return &PD{pd: pd, ctx: c}, nil
}

// Close deallocates the PD; safe to call twice.
func (p *PD) Close() error {
	if p == nil || p.pd == nil {
		return nil
	}
	rc, err := C.ibv_dealloc_pd(p.pd)
	p.pd = nil
	if rc != 0 {
		return callErr("ibv_dealloc_pd", err)
	}
	return nil
}

// Access flags for memory regions and QPs.
type Access int

const (
	AccessLocalWrite  Access = C.IBV_ACCESS_LOCAL_WRITE
	AccessRemoteWrite Access = C.IBV_ACCESS_REMOTE_WRITE
	AccessRemoteRead  Access = C.IBV_ACCESS_REMOTE_READ
)

// MR is a registered memory region: over a C-allocated, page-aligned
// buffer this package owns (RegMR), or over memory someone else owns (a
// GPU pointer through RegExternalMR, a dma-buf through RegDmabufMR), which
// Close leaves alone and Bytes never exposes.
type MR struct {
	mr   *C.struct_ibv_mr
	buf  unsafe.Pointer // owned host buffer; nil for external and dma-buf memory
	addr uint64         // the address posts and peers use (the iova for dma-buf)
	kind MemKind
	Size int
}

// RegMR allocates size bytes in C memory, touches them, and registers them.
// A memlock limit below size fails here with ENOMEM or EPERM, exactly where
// perftest prints "Couldn't allocate MR".
func (p *PD) RegMR(size int, access Access) (*MR, error) {
	if size <= 0 {
		return nil, fmt.Errorf("ibv_reg_mr: size %d must be positive", size)
	}
	buf := C.rs_alloc(C.size_t(size))
	if buf == nil {
		return nil, &Error{Call: fmt.Sprintf("posix_memalign(%s)", units.Bytes(int64(size))), Errno: syscall.ENOMEM}
	}
	mr, err := C.ibv_reg_mr(p.pd, buf, C.size_t(size), C.int(access))
	if mr == nil {
		C.free(buf)
		return nil, callErr(fmt.Sprintf("ibv_reg_mr(%s)", units.Bytes(int64(size))), err)
	}
	return &MR{mr: mr, buf: buf, addr: uint64(uintptr(buf)), Size: size}, nil
}

// RegExternalMR registers size bytes at addr, memory this package did not
// allocate and never frees: e.g. a GPU pointer, which the kernel resolves
// through a peer-memory client (nvidia_peermem). Without one, the kernel
// tries to pin the range as host memory and fails with EFAULT or EINVAL:
// the error then matches ErrPeerMemMissing. The caller keeps the memory
// alive until the MR is closed.
func (p *PD) RegExternalMR(addr uintptr, size int, access Access) (*MR, error) {
	call := fmt.Sprintf("ibv_reg_mr(external 0x%x, %s)", addr, units.Bytes(int64(size)))
	if size <= 0 || addr == 0 {
		return nil, &Error{Call: call, Errno: syscall.EINVAL, Mem: MemExternal}
	}
	mr, err := C.rs_reg_addr(p.pd, C.uint64_t(addr), C.size_t(size), C.int(access))
	if mr == nil {
		return nil, regErr(call, MemExternal, err)
	}
	return &MR{mr: mr, addr: uint64(addr), kind: MemExternal, Size: size}, nil
}

// RegDmabufMR registers size bytes at offset of the dma-buf fd (exported
// by another driver, e.g. CUDA's cuMemGetHandleForAddressRange), addressed
// as iova by posts and by the peer (pass the buffer's own virtual address
// so that both sides agree). The fd stays the caller's: the MR holds its
// own reference to the dma-buf. An HCA driver, kernel or rdma-core without
// dma-buf support fails with an error matching ErrDmabufUnsupported.
func (p *PD) RegDmabufMR(fd int, offset uint64, size int, iova uint64, access Access) (*MR, error) {
	call := fmt.Sprintf("ibv_reg_dmabuf_mr(fd %d, offset %d, %s, iova 0x%x)", fd, offset, units.Bytes(int64(size)), iova)
	if size <= 0 || fd < 0 {
		return nil, &Error{Call: call, Errno: syscall.EINVAL, Mem: MemDmabuf}
	}
	mr, err := C.ibv_reg_dmabuf_mr(p.pd, C.uint64_t(offset), C.size_t(size), C.uint64_t(iova), C.int(fd), C.int(access))
	if mr == nil {
		return nil, regErr(call, MemDmabuf, err)
	}
	return &MR{mr: mr, addr: iova, kind: MemDmabuf, Size: size}, nil
}

func regErr(call string, kind MemKind, err error) error {
	e := callErr(call, err).(*Error)
	e.Mem = kind
	return e
}

// Addr, LKey and RKey are what a peer needs to address this region.
func (m *MR) Addr() uint64 { return m.addr }

// Zero clears a host MR this package allocated (RegMR fills it with 0x5a
// to touch every page); other memory is left alone and reported.
func (m *MR) Zero() error {
	if m.buf == nil {
		return errors.New("verbs: only a host MR from RegMR can be zeroed by the CPU")
	}
	C.memset(m.buf, 0, C.size_t(m.Size))
	return nil
}
func (m *MR) LKey() uint32 { return uint32(m.mr.lkey) }
func (m *MR) RKey() uint32 { return uint32(m.mr.rkey) }

// Kind says whose memory the region covers.
func (m *MR) Kind() MemKind { return m.kind }

// External reports whether the region covers memory this package does not
// own (a GPU pointer or a dma-buf): the CPU must not touch it.
func (m *MR) External() bool { return m.kind != MemHost }

// Bytes returns the registered buffer. It is C memory: valid until Close.
// It is nil for memory this package did not allocate (External): that may
// be GPU memory, which the CPU cannot read or write through a slice.
func (m *MR) Bytes() []byte {
	if m.External() || m.buf == nil {
		return nil
	}
	return unsafe.Slice((*byte)(m.buf), m.Size)
}

// Close deregisters the region and frees its buffer if this package
// allocated it (never external or dma-buf memory); safe to call twice.
func (m *MR) Close() error {
	if m == nil || m.mr == nil {
		return nil
	}
	rc, err := C.ibv_dereg_mr(m.mr)
	m.mr = nil
	if m.buf != nil {
		C.free(m.buf)
		m.buf = nil
	}
	if rc != 0 {
		return callErr("ibv_dereg_mr", err)
	}
	return nil
}

// CQ is a completion queue.
type CQ struct {
	cq *C.struct_ibv_cq
	// Reused poll buffers, so polling does not allocate.
	ids    [64]C.uint64_t
	status [64]C.int
	qpn    [64]C.uint32_t
	opcode [64]C.int
	bytes  [64]C.uint32_t
}

// CreateCQ creates a completion queue with room for depth entries.
func (c *Context) CreateCQ(depth int) (*CQ, error) {
	cq, err := C.ibv_create_cq(c.ctx, C.int(depth), nil, nil, 0)
	if cq == nil {
		return nil, callErr(fmt.Sprintf("ibv_create_cq(depth %d)", depth), err)
	}
	return &CQ{cq: cq}, nil
}

// Close destroys the CQ; safe to call twice.
func (q *CQ) Close() error {
	if q == nil || q.cq == nil {
		return nil
	}
	rc, err := C.ibv_destroy_cq(q.cq)
	q.cq = nil
	if rc != 0 {
		return callErr("ibv_destroy_cq", err)
	}
	return nil
}

// Completion is one work completion.
type Completion struct {
	WrID   uint64
	QPN    uint32
	Status int // 0 = success; see StatusString
	Opcode int
	Bytes  uint32
}

// Poll fills wcs with up to len(wcs) (≤ 64) completions and returns how many.
func (q *CQ) Poll(wcs []Completion) (int, error) {
	n := len(wcs)
	if n > 64 {
		n = 64
	}
	got, err := C.rs_poll(q.cq, C.int(n), &q.ids[0], &q.status[0], &q.qpn[0], &q.opcode[0], &q.bytes[0])
	if got < 0 {
		return 0, callErr("ibv_poll_cq", err)
	}
	for i := 0; i < int(got); i++ {
		wcs[i] = Completion{WrID: uint64(q.ids[i]), QPN: uint32(q.qpn[i]), Status: int(q.status[i]),
			Opcode: int(q.opcode[i]), Bytes: uint32(q.bytes[i])}
	}
	return int(got), nil
}

// StatusString names a completion status (ibv_wc_status_str).
func StatusString(status int) string {
	return C.GoString(C.ibv_wc_status_str(C.enum_ibv_wc_status(status)))
}

// QPCaps sizes a queue pair.
type QPCaps struct {
	SendDepth, RecvDepth int
	MaxInline            int
	// Plain creates the QP with ibv_create_qp, so it is posted to with
	// ibv_post_send (perftest's --use_old_post_send, and what perftest
	// does by itself on devices outside its list, rxe included).
	Plain bool
}

// QP is a reliable-connected queue pair.
type QP struct {
	qp  *C.struct_ibv_qp
	pd  *PD
	PSN uint32
	// ex: created with ibv_create_qp_ex, so the C loop posts through
	// ibv_wr_* as perftest does; else through ibv_post_send.
	ex bool
}

// CreateRCQP creates an RC QP whose send and receive completions go to cq.
func (p *PD) CreateRCQP(cq *CQ, caps QPCaps, psn uint32) (*QP, error) {
	var a C.struct_ibv_qp_init_attr
	a.send_cq, a.recv_cq = cq.cq, cq.cq
	a.qp_type = C.IBV_QPT_RC
	a.cap.max_send_wr = C.uint32_t(caps.SendDepth)
	a.cap.max_recv_wr = C.uint32_t(max(caps.RecvDepth, 1))
	a.cap.max_send_sge, a.cap.max_recv_sge = 1, 1
	a.cap.max_inline_data = C.uint32_t(caps.MaxInline)
	// Only signalled WRs generate completions: the CQ-moderation scheme
	// perftest uses, so the CQ is not the bottleneck.
	a.sq_sig_all = 0
	// The extended QP first unless a plain one was asked for; a provider
	// without it gets a plain one.
	if !caps.Plain {
		if qp := C.rs_create_rc_qp_ex(p.ctx.ctx, p.pd, cq.cq, a.cap.max_send_wr, a.cap.max_recv_wr, a.cap.max_inline_data); qp != nil {
			return &QP{qp: qp, pd: p, PSN: psn & 0xffffff, ex: true}, nil
		}
	}
	qp, err := C.ibv_create_qp(p.pd, &a)
	if qp == nil {
		return nil, callErr(fmt.Sprintf("ibv_create_qp(RC, send %d, recv %d)", caps.SendDepth, caps.RecvDepth), err)
	}
	return &QP{qp: qp, pd: p, PSN: psn & 0xffffff}, nil
}

// Extended reports whether the QP takes ibv_wr_* posts (ibv_create_qp_ex).
func (q *QP) Extended() bool { return q.ex }

// QPN is the queue pair number the peer addresses.
func (q *QP) QPN() uint32 { return uint32(q.qp.qp_num) }

// Close destroys the QP; safe to call twice.
func (q *QP) Close() error {
	if q == nil || q.qp == nil {
		return nil
	}
	rc, err := C.ibv_destroy_qp(q.qp)
	q.qp = nil
	if rc != 0 {
		return callErr("ibv_destroy_qp", err)
	}
	return nil
}

// Remote is what the peer tells us about its QP, exchanged out of band.
type Remote struct {
	QPN   uint32
	PSN   uint32
	LID   uint16
	GID   [16]byte
	Addr  uint64
	RKey  uint32
	IsIB  bool // InfiniBand link layer: address by LID; RoCE: by GID
	MTU   int  // bytes; 0 = use the local port's active MTU
	RdAtm int  // responder resources the peer can take (outstanding READs)
}

// ToInit moves the QP RESET→INIT on port with remote access rights.
func (q *QP) ToInit(port int, access Access) error {
	var a C.struct_ibv_qp_attr
	a.qp_state = C.IBV_QPS_INIT
	a.pkey_index = 0
	a.port_num = C.uint8_t(port)
	a.qp_access_flags = C.uint(access)
	rc, err := C.rs_modify_qp(q.qp, &a, C.IBV_QP_STATE|C.IBV_QP_PKEY_INDEX|C.IBV_QP_PORT|C.IBV_QP_ACCESS_FLAGS)
	if rc != 0 {
		return callErr(fmt.Sprintf("ibv_modify_qp(QP %d → INIT, port %d)", q.QPN(), port), err)
	}
	return nil
}

// ToRTR moves INIT→RTR towards remote, using gidIndex as source GID for RoCE.
func (q *QP) ToRTR(r Remote, port int, gidIndex int, port0 PortAttr, rdAtomic int) error {
	var a C.struct_ibv_qp_attr
	a.qp_state = C.IBV_QPS_RTR
	a.path_mtu = port0.mtuEnum
	if r.MTU > 0 && mtuEnumFor(r.MTU) < int(a.path_mtu) {
		a.path_mtu = C.enum_ibv_mtu(mtuEnumFor(r.MTU))
	}
	a.dest_qp_num = C.uint32_t(r.QPN)
	a.rq_psn = C.uint32_t(r.PSN)
	a.max_dest_rd_atomic = C.uint8_t(rdAtomic)
	a.min_rnr_timer = 12
	a.ah_attr.port_num = C.uint8_t(port)
	a.ah_attr.dlid = C.uint16_t(r.LID)
	if !r.IsIB {
		a.ah_attr.is_global = 1
		a.ah_attr.grh.hop_limit = 64
		a.ah_attr.grh.sgid_index = C.uint8_t(gidIndex)
		C.memcpy(unsafe.Pointer(&a.ah_attr.grh.dgid), unsafe.Pointer(&r.GID[0]), 16)
	}
	mask := C.IBV_QP_STATE | C.IBV_QP_AV | C.IBV_QP_PATH_MTU | C.IBV_QP_DEST_QPN |
		C.IBV_QP_RQ_PSN | C.IBV_QP_MAX_DEST_RD_ATOMIC | C.IBV_QP_MIN_RNR_TIMER
	rc, err := C.rs_modify_qp(q.qp, &a, C.int(mask))
	if rc != 0 {
		return callErr(fmt.Sprintf("ibv_modify_qp(QP %d → RTR, remote QP %d, gid index %d)", q.QPN(), r.QPN, gidIndex), err)
	}
	return nil
}

// RetryCount is every QP's transport retry count (the IBTA's maximum,
// perftest's too): how many times a requester resends before it fails
// the work request with "transport retry counter exceeded".
const RetryCount = 7

// ToRTS moves RTR→RTS; ackTimeout is the local ACK timeout exponent
// (4.096 µs × 2^ackTimeout before a resend; 0 would wait forever).
func (q *QP) ToRTS(rdAtomic, ackTimeout int) error {
	var a C.struct_ibv_qp_attr
	a.qp_state = C.IBV_QPS_RTS
	a.timeout = C.uint8_t(ackTimeout)
	a.retry_cnt = RetryCount
	a.rnr_retry = 7
	a.sq_psn = C.uint32_t(q.PSN)
	a.max_rd_atomic = C.uint8_t(rdAtomic)
	mask := C.IBV_QP_STATE | C.IBV_QP_TIMEOUT | C.IBV_QP_RETRY_CNT | C.IBV_QP_RNR_RETRY |
		C.IBV_QP_SQ_PSN | C.IBV_QP_MAX_QP_RD_ATOMIC
	rc, err := C.rs_modify_qp(q.qp, &a, C.int(mask))
	if rc != 0 {
		return callErr(fmt.Sprintf("ibv_modify_qp(QP %d → RTS)", q.QPN()), err)
	}
	return nil
}

// Op is a send opcode.
type Op int

const (
	OpWrite Op = C.IBV_WR_RDMA_WRITE
	OpRead  Op = C.IBV_WR_RDMA_READ
	OpSend  Op = C.IBV_WR_SEND
)

// Post posts one work request: length bytes at offset of mr, to remote
// address raddr/rkey (ignored for SEND).
// An inline post of an External region is refused: the CPU would copy
// the payload out of memory it must not touch.
func (q *QP) Post(op Op, mr *MR, offset, length int, raddr uint64, rkey uint32, wrID uint64, signaled, inline bool) error {
	if inline && mr.External() {
		return errInlineExternal(mr)
	}
	rc, err := C.rs_post(q.qp, C.int(op), C.uint64_t(mr.addr+uint64(offset)), C.uint32_t(length), mr.mr.lkey,
		C.uint64_t(raddr), C.uint32_t(rkey), C.uint64_t(wrID), cbool(signaled), cbool(inline))
	if rc != 0 {
		return callErr(fmt.Sprintf("ibv_post_send(QP %d, %s)", q.QPN(), units.Bytes(int64(length))), err)
	}
	return nil
}

// PostRecv posts one receive buffer (for SEND tests).
func (q *QP) PostRecv(mr *MR, offset, length int, wrID uint64) error {
	rc, err := C.rs_post_recv(q.qp, C.uint64_t(mr.addr+uint64(offset)), C.uint32_t(length), mr.mr.lkey, C.uint64_t(wrID))
	if rc != 0 {
		return callErr(fmt.Sprintf("ibv_post_recv(QP %d)", q.QPN()), err)
	}
	return nil
}

func errInlineExternal(mr *MR) error {
	return fmt.Errorf("inline post from %s memory refused: inline copies the payload with the CPU, which must not touch memory this process does not own (GPU memory); use inline 0", mr.kind)
}

// Cycles returns the CPU cycle counter (TSC on x86-64, CNTVCT on arm64).
// Callers calibrate it against the monotonic clock.
func Cycles() uint64 { return uint64(C.rs_cycles()) }

// ClockPair is the cycle counter and CLOCK_MONOTONIC read together: the
// best of 16 tries, the counter at the middle of the narrowest bracket
// around the clock read (bracket cycles wide). Two pairs far apart
// calibrate the counter.
func ClockPair() (cycles uint64, mono time.Duration, bracket uint64) {
	var c, b C.uint64_t
	var ns C.int64_t
	C.rs_clock_pair(16, &c, &ns, &b)
	return uint64(c), time.Duration(ns), uint64(b)
}

func cbool(b bool) C.int {
	if b {
		return 1
	}
	return 0
}
