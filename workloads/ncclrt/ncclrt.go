// Package ncclrt binds NCCL (libnccl.so.2) at run time with purego (no cgo), so the
// in-pod probe builds without NCCL or CUDA and uses the NCCL its pod image ships.
// The environment variable RDMASUITE_LIBNCCL, when set, names the library file to load
// instead (a full path, or a name the dynamic loader resolves).
//
// Calls whose symbol an older NCCL lacks do not make Load fail; such a call returns a
// *SymbolError naming the symbol and the NCCL release that introduced it. Only
// ncclGetUniqueId, ncclCommInitRank and ncclGetErrorString are required.
//
// NCCL takes the CUDA device from the calling thread's current context: make the
// device's context current (cuda.Driver.Activate, after runtime.LockOSThread) and call
// CommInitRank and the collectives from that goroutine.
//
// Signatures and enum values are those of NCCL's src/nccl.h.in
// (github.com/NVIDIA/nccl, commit 021e804): ncclResult_t 0..8, ncclRedOp_t
// Sum=0..Avg=4, ncclDataType_t Int8=0..Bfloat16=9, Float8e4m3=10, Float8e5m2=11,
// NCCL_UNIQUE_ID_BYTES 128, NCCL_VERSION(X,Y,Z) = X*1000+Y*100+Z up to 2.8 and
// X*10000+Y*100+Z after; ncclCommInitRank(ncclComm_t*, int nranks,
// ncclUniqueId commId /* by value */, int rank).
package ncclrt

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"unsafe"

	"github.com/ebitengine/purego"
)

// DefaultLibrary is the file name Load opens when RDMASUITE_LIBNCCL is unset.
const DefaultLibrary = "libnccl.so.2"

// EnvLibrary names the environment variable that overrides DefaultLibrary.
const EnvLibrary = "RDMASUITE_LIBNCCL"

// ErrNoNCCL is matched (errors.Is) by every error saying libnccl could not be used.
var ErrNoNCCL = errors.New("no NCCL library")

// ErrDestroyed is returned by a Comm method called after Destroy or Abort.
var ErrDestroyed = errors.New("ncclrt: communicator destroyed")

// LoadError says libnccl could not be loaded (or lacks a required symbol).
type LoadError struct {
	Library string
	Err     error // the dynamic loader's error (dlerror) or a *SymbolError
}

func (e *LoadError) Error() string {
	return fmt.Sprintf("NCCL library %s could not be loaded (%v): use an image that ships NCCL (e.g. an NGC PyTorch image) or set %s to its path", e.Library, e.Err, EnvLibrary)
}

// Is reports ErrNoNCCL.
func (e *LoadError) Is(target error) bool { return target == ErrNoNCCL }

// Unwrap returns the loader's error.
func (e *LoadError) Unwrap() error { return e.Err }

// ncclResult_t values.
const (
	Success            = 0
	UnhandledCudaError = 1
	SystemError        = 2
	InternalError      = 3
	InvalidArgument    = 4
	InvalidUsage       = 5
	RemoteError        = 6
	InProgress         = 7
	Timeout            = 8 // NCCL 2.29+
)

var resultNames = [...]string{
	"ncclSuccess", "ncclUnhandledCudaError", "ncclSystemError", "ncclInternalError",
	"ncclInvalidArgument", "ncclInvalidUsage", "ncclRemoteError", "ncclInProgress", "ncclTimeout",
}

// ResultName names an ncclResult_t: 4 -> "ncclInvalidArgument".
func ResultName(code int) string {
	if code >= 0 && code < len(resultNames) {
		return resultNames[code]
	}
	return fmt.Sprintf("ncclResult %d", code)
}

// Error is a failed NCCL call.
type Error struct {
	Call string // the call and its main arguments, e.g. "ncclCommInitRank(nranks 2, rank 0)"
	Code int    // the ncclResult_t
	Text string // ncclGetErrorString
	Last string // ncclGetLastError (NCCL >= 2.13; empty when absent or empty)
}

func (e *Error) Error() string {
	s := e.Call + ": " + ResultName(e.Code)
	if e.Text != "" {
		s += " (" + e.Text + ")"
	}
	if e.Last != "" {
		s += ": " + e.Last
	}
	return s
}

// SymbolError is returned by a call whose entry point the loaded NCCL does not export.
type SymbolError struct {
	Library string
	Symbol  string // e.g. "ncclSend"
	Since   string // e.g. "NCCL 2.7"
	Version int    // ncclGetVersion of the loaded library, 0 when unknown
}

func (e *SymbolError) Error() string {
	v := ""
	if e.Version > 0 {
		v = " (NCCL " + VersionString(e.Version) + ")"
	}
	return fmt.Sprintf("%s is not exported by %s%s: it needs %s or newer", e.Symbol, e.Library, v, e.Since)
}

// VersionString renders an NCCL version code: 22105 -> "2.21.5", 2708 -> "2.7.8".
func VersionString(code int) string {
	if code >= 10000 { // NCCL_VERSION for anything after 2.8
		return fmt.Sprintf("%d.%d.%d", code/10000, code%10000/100, code%100)
	}
	return fmt.Sprintf("%d.%d.%d", code/1000, code%1000/100, code%100)
}

// UniqueID is an ncclUniqueId: rank 0 creates it and hands it to every rank.
type UniqueID [128]byte

// uniqueIDArg is ncclUniqueId as a C struct, so purego passes it by value
// (on the stack on amd64; as a pointer to a copy on arm64, as AAPCS64 wants).
type uniqueIDArg struct{ Internal [128]byte }

// DataType is ncclDataType_t.
type DataType int32

const (
	Int8       DataType = 0
	Uint8      DataType = 1
	Int32      DataType = 2
	Uint32     DataType = 3
	Int64      DataType = 4
	Uint64     DataType = 5
	Float16    DataType = 6
	Float32    DataType = 7
	Float64    DataType = 8
	Bfloat16   DataType = 9  // NCCL built with CUDA >= 11
	Float8e4m3 DataType = 10 // NCCL 2.24+, sm_90+
	Float8e5m2 DataType = 11 // NCCL 2.24+, sm_90+
)

var dataTypes = [...]struct {
	name string
	size int
}{
	{"ncclInt8", 1}, {"ncclUint8", 1}, {"ncclInt32", 4}, {"ncclUint32", 4}, {"ncclInt64", 8},
	{"ncclUint64", 8}, {"ncclFloat16", 2}, {"ncclFloat32", 4}, {"ncclFloat64", 8},
	{"ncclBfloat16", 2}, {"ncclFloat8e4m3", 1}, {"ncclFloat8e5m2", 1},
}

func (t DataType) String() string {
	if t >= 0 && int(t) < len(dataTypes) {
		return dataTypes[t].name
	}
	return fmt.Sprintf("ncclDataType(%d)", int32(t))
}

// Size is the element size in bytes (0 for an unknown type).
func (t DataType) Size() int {
	if t >= 0 && int(t) < len(dataTypes) {
		return dataTypes[t].size
	}
	return 0
}

// RedOp is ncclRedOp_t.
type RedOp int32

const (
	Sum  RedOp = 0
	Prod RedOp = 1
	Max  RedOp = 2
	Min  RedOp = 3
	Avg  RedOp = 4 // NCCL 2.10+
)

func (o RedOp) String() string {
	switch o {
	case Sum:
		return "ncclSum"
	case Prod:
		return "ncclProd"
	case Max:
		return "ncclMax"
	case Min:
		return "ncclMin"
	case Avg:
		return "ncclAvg"
	}
	return fmt.Sprintf("ncclRedOp(%d)", int32(o))
}

// Lib is a loaded libnccl. Safe for concurrent use.
type Lib struct {
	path   string
	handle uintptr

	ncclGetVersion        func(v *int32) int32
	ncclGetUniqueID       func(id *UniqueID) int32
	ncclCommInitRank      func(comm *uintptr, nranks int32, id uniqueIDArg, rank int32) int32
	ncclCommDestroy       func(comm uintptr) int32
	ncclCommAbort         func(comm uintptr) int32
	ncclCommGetAsyncError func(comm uintptr, res *int32) int32
	ncclCommCount         func(comm uintptr, n *int32) int32
	ncclCommUserRank      func(comm uintptr, rank *int32) int32
	ncclCommCuDevice      func(comm uintptr, dev *int32) int32
	ncclGetErrorString    func(res int32) *byte
	ncclGetLastError      func(comm uintptr) *byte
	ncclGroupStart        func() int32
	ncclGroupEnd          func() int32
	ncclAllReduce         func(send, recv uintptr, count uint64, dt, op int32, comm, stream uintptr) int32
	ncclAllGather         func(send, recv uintptr, sendCount uint64, dt int32, comm, stream uintptr) int32
	ncclReduceScatter     func(send, recv uintptr, recvCount uint64, dt, op int32, comm, stream uintptr) int32
	ncclBroadcast         func(send, recv uintptr, count uint64, dt, root int32, comm, stream uintptr) int32
	ncclSend              func(buf uintptr, count uint64, dt, peer int32, comm, stream uintptr) int32
	ncclRecv              func(buf uintptr, count uint64, dt, peer int32, comm, stream uintptr) int32

	missing map[string]string // symbol -> release that introduced it
}

// Load opens libnccl.so.2, or the file RDMASUITE_LIBNCCL names.
func Load() (*Lib, error) {
	if p := os.Getenv(EnvLibrary); p != "" {
		return LoadFrom(p)
	}
	return LoadFrom(DefaultLibrary)
}

// LoadFrom opens the given NCCL library. It is never closed.
func LoadFrom(path string) (*Lib, error) {
	h, err := purego.Dlopen(path, purego.RTLD_NOW|purego.RTLD_LOCAL)
	if err != nil {
		return nil, &LoadError{Library: path, Err: err}
	}
	l := &Lib{path: path, handle: h, missing: map[string]string{}}
	for _, b := range []struct {
		fptr     any
		name     string
		since    string
		required bool
	}{
		{&l.ncclGetUniqueID, "ncclGetUniqueId", "NCCL 2.0", true},
		{&l.ncclCommInitRank, "ncclCommInitRank", "NCCL 2.0", true},
		{&l.ncclGetErrorString, "ncclGetErrorString", "NCCL 2.0", true},
		{&l.ncclGetVersion, "ncclGetVersion", "NCCL 2.3", false},
		{&l.ncclCommDestroy, "ncclCommDestroy", "NCCL 2.0", false},
		{&l.ncclCommAbort, "ncclCommAbort", "NCCL 2.4", false},
		{&l.ncclCommGetAsyncError, "ncclCommGetAsyncError", "NCCL 2.4", false},
		{&l.ncclCommCount, "ncclCommCount", "NCCL 2.0", false},
		{&l.ncclCommUserRank, "ncclCommUserRank", "NCCL 2.0", false},
		{&l.ncclCommCuDevice, "ncclCommCuDevice", "NCCL 2.0", false},
		{&l.ncclGetLastError, "ncclGetLastError", "NCCL 2.13", false},
		{&l.ncclGroupStart, "ncclGroupStart", "NCCL 2.0", false},
		{&l.ncclGroupEnd, "ncclGroupEnd", "NCCL 2.0", false},
		{&l.ncclAllReduce, "ncclAllReduce", "NCCL 2.0", false},
		{&l.ncclAllGather, "ncclAllGather", "NCCL 2.0", false},
		{&l.ncclReduceScatter, "ncclReduceScatter", "NCCL 2.0", false},
		{&l.ncclBroadcast, "ncclBroadcast", "NCCL 2.2", false},
		{&l.ncclSend, "ncclSend", "NCCL 2.7", false},
		{&l.ncclRecv, "ncclRecv", "NCCL 2.7", false},
	} {
		addr, err := purego.Dlsym(h, b.name)
		if err == nil && addr != 0 {
			purego.RegisterFunc(b.fptr, addr)
			continue
		}
		if b.required {
			return nil, &LoadError{Library: path, Err: &SymbolError{Library: path, Symbol: b.name, Since: b.since}}
		}
		l.missing[b.name] = b.since
	}
	return l, nil
}

// Path is the library file NCCL was loaded from.
func (l *Lib) Path() string { return l.path }

// Missing lists the optional symbols the loaded NCCL lacks, sorted (nil when none).
func (l *Lib) Missing() []string {
	var out []string
	for s := range l.missing {
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

func (l *Lib) symbolErr(symbol string) error {
	e := &SymbolError{Library: l.path, Symbol: symbol, Since: l.missing[symbol]}
	if v, err := l.Version(); err == nil {
		e.Version = v
	}
	return e
}

// check turns an ncclResult_t into nil or an *Error; comm (may be 0) is handed to
// ncclGetLastError.
func (l *Lib) check(call string, r int32, comm uintptr) error {
	if r == Success {
		return nil
	}
	e := &Error{Call: call, Code: int(r), Text: goString(l.ncclGetErrorString(r))}
	if l.ncclGetLastError != nil {
		e.Last = strings.TrimSpace(goString(l.ncclGetLastError(comm)))
	}
	return e
}

// goString copies a NUL-terminated C string.
func goString(p *byte) string {
	if p == nil {
		return ""
	}
	var b strings.Builder
	for i := 0; i < 8192; i++ {
		c := *(*byte)(unsafe.Add(unsafe.Pointer(p), i))
		if c == 0 {
			break
		}
		b.WriteByte(c)
	}
	return b.String()
}

// Version is ncclGetVersion, e.g. 22105 (see VersionString).
func (l *Lib) Version() (int, error) {
	if l.ncclGetVersion == nil {
		return 0, &SymbolError{Library: l.path, Symbol: "ncclGetVersion", Since: l.missing["ncclGetVersion"]}
	}
	var v int32
	if err := l.check("ncclGetVersion", l.ncclGetVersion(&v), 0); err != nil {
		return 0, err
	}
	return int(v), nil
}

// GetUniqueID creates the id rank 0 hands to every rank (ncclGetUniqueId).
func (l *Lib) GetUniqueID() (UniqueID, error) {
	var id UniqueID
	err := l.check("ncclGetUniqueId", l.ncclGetUniqueID(&id), 0)
	return id, err
}

// GroupStart is ncclGroupStart.
func (l *Lib) GroupStart() error {
	if l.ncclGroupStart == nil {
		return l.symbolErr("ncclGroupStart")
	}
	return l.check("ncclGroupStart", l.ncclGroupStart(), 0)
}

// GroupEnd is ncclGroupEnd.
func (l *Lib) GroupEnd() error {
	if l.ncclGroupEnd == nil {
		return l.symbolErr("ncclGroupEnd")
	}
	return l.check("ncclGroupEnd", l.ncclGroupEnd(), 0)
}

// Comm is an NCCL communicator.
type Comm struct {
	l     *Lib
	h     uintptr
	world int
	rank  int

	mu   sync.Mutex
	done bool
}

// CommInitRank joins rank of world ranks to the communicator id names
// (ncclCommInitRank; blocks until every rank joined).
func (l *Lib) CommInitRank(world, rank int, id UniqueID) (*Comm, error) {
	call := fmt.Sprintf("ncclCommInitRank(nranks %d, rank %d)", world, rank)
	if world < 1 || rank < 0 || rank >= world {
		return nil, fmt.Errorf("%s: rank must be in [0, nranks)", call)
	}
	var h uintptr
	if err := l.check(call, l.ncclCommInitRank(&h, int32(world), uniqueIDArg{Internal: id}, int32(rank)), 0); err != nil {
		return nil, err
	}
	return &Comm{l: l, h: h, world: world, rank: rank}, nil
}

// handle returns the communicator, or ErrDestroyed.
func (c *Comm) handle() (uintptr, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done {
		return 0, ErrDestroyed
	}
	return c.h, nil
}

// call runs one NCCL call on the communicator after checking its symbol.
func (c *Comm) call(symbol string, fnMissing bool, name string, run func(h uintptr) int32) error {
	h, err := c.handle()
	if err != nil {
		return err
	}
	if fnMissing {
		return c.l.symbolErr(symbol)
	}
	return c.l.check(name, run(h), h)
}

// AllReduce is ncclAllReduce.
func (c *Comm) AllReduce(send, recv uintptr, count int, dt DataType, op RedOp, stream uintptr) error {
	return c.call("ncclAllReduce", c.l.ncclAllReduce == nil, fmt.Sprintf("ncclAllReduce(count %d, %s, %s)", count, dt, op), func(h uintptr) int32 {
		return c.l.ncclAllReduce(send, recv, uint64(count), int32(dt), int32(op), h, stream)
	})
}

// AllGather is ncclAllGather (sendCount elements per rank).
func (c *Comm) AllGather(send, recv uintptr, sendCount int, dt DataType, stream uintptr) error {
	return c.call("ncclAllGather", c.l.ncclAllGather == nil, fmt.Sprintf("ncclAllGather(sendcount %d, %s)", sendCount, dt), func(h uintptr) int32 {
		return c.l.ncclAllGather(send, recv, uint64(sendCount), int32(dt), h, stream)
	})
}

// ReduceScatter is ncclReduceScatter (recvCount elements per rank).
func (c *Comm) ReduceScatter(send, recv uintptr, recvCount int, dt DataType, op RedOp, stream uintptr) error {
	return c.call("ncclReduceScatter", c.l.ncclReduceScatter == nil, fmt.Sprintf("ncclReduceScatter(recvcount %d, %s, %s)", recvCount, dt, op), func(h uintptr) int32 {
		return c.l.ncclReduceScatter(send, recv, uint64(recvCount), int32(dt), int32(op), h, stream)
	})
}

// Broadcast is ncclBroadcast.
func (c *Comm) Broadcast(send, recv uintptr, count int, dt DataType, root int, stream uintptr) error {
	return c.call("ncclBroadcast", c.l.ncclBroadcast == nil, fmt.Sprintf("ncclBroadcast(count %d, %s, root %d)", count, dt, root), func(h uintptr) int32 {
		return c.l.ncclBroadcast(send, recv, uint64(count), int32(dt), int32(root), h, stream)
	})
}

// Send is ncclSend (NCCL 2.7+).
func (c *Comm) Send(buf uintptr, count int, dt DataType, peer int, stream uintptr) error {
	return c.call("ncclSend", c.l.ncclSend == nil, fmt.Sprintf("ncclSend(count %d, %s, peer %d)", count, dt, peer), func(h uintptr) int32 {
		return c.l.ncclSend(buf, uint64(count), int32(dt), int32(peer), h, stream)
	})
}

// Recv is ncclRecv (NCCL 2.7+).
func (c *Comm) Recv(buf uintptr, count int, dt DataType, peer int, stream uintptr) error {
	return c.call("ncclRecv", c.l.ncclRecv == nil, fmt.Sprintf("ncclRecv(count %d, %s, peer %d)", count, dt, peer), func(h uintptr) int32 {
		return c.l.ncclRecv(buf, uint64(count), int32(dt), int32(peer), h, stream)
	})
}

// AsyncError is ncclCommGetAsyncError: nil while the communicator is healthy, an *Error
// with the asynchronous result (e.g. ncclRemoteError after a peer died) otherwise.
func (c *Comm) AsyncError() error {
	return c.call("ncclCommGetAsyncError", c.l.ncclCommGetAsyncError == nil, "ncclCommGetAsyncError", func(h uintptr) int32 {
		var res int32
		if r := c.l.ncclCommGetAsyncError(h, &res); r != Success {
			return r
		}
		return res
	})
}

// Count is ncclCommCount: the number of ranks.
func (c *Comm) Count() (int, error) {
	var n int32
	err := c.call("ncclCommCount", c.l.ncclCommCount == nil, "ncclCommCount", func(h uintptr) int32 {
		return c.l.ncclCommCount(h, &n)
	})
	return int(n), err
}

// UserRank is ncclCommUserRank: this rank.
func (c *Comm) UserRank() (int, error) {
	var r int32
	err := c.call("ncclCommUserRank", c.l.ncclCommUserRank == nil, "ncclCommUserRank", func(h uintptr) int32 {
		return c.l.ncclCommUserRank(h, &r)
	})
	return int(r), err
}

// CuDevice is ncclCommCuDevice: the CUDA device ordinal the communicator uses.
func (c *Comm) CuDevice() (int, error) {
	var d int32
	err := c.call("ncclCommCuDevice", c.l.ncclCommCuDevice == nil, "ncclCommCuDevice", func(h uintptr) int32 {
		return c.l.ncclCommCuDevice(h, &d)
	})
	return int(d), err
}

// finish runs Destroy or Abort once; later calls (of either) return nil.
func (c *Comm) finish(symbol string, fn func(uintptr) int32) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done {
		return nil
	}
	if fn == nil {
		return c.l.symbolErr(symbol)
	}
	c.done = true
	return c.l.check(fmt.Sprintf("%s(rank %d)", symbol, c.rank), fn(c.h), 0)
}

// Destroy frees the communicator (ncclCommDestroy). Only the first Destroy or Abort
// reaches NCCL; later calls return nil.
func (c *Comm) Destroy() error { return c.finish("ncclCommDestroy", c.l.ncclCommDestroy) }

// Abort aborts in-flight operations and frees the communicator (ncclCommAbort). Only
// the first Destroy or Abort reaches NCCL; later calls return nil.
func (c *Comm) Abort() error { return c.finish("ncclCommAbort", c.l.ncclCommAbort) }
