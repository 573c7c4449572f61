// Package cuda binds the few CUDA driver API calls the in-pod probe needs. It loads
// libcuda.so.1 at run time with purego (no cgo), so the probe builds on machines
// without CUDA and a pod without a GPU gets a typed error (ErrNoDriver), not a crash.
//
// libcuda.so.1 is the driver library the NVIDIA container toolkit (GPU Operator)
// injects into a pod that requests nvidia.com/gpu; the CUDA runtime (libcudart) is not
// used. The environment variable RDMASUITE_LIBCUDA, when set, names the library file to
// load instead (a full path, or a name the dynamic loader resolves).
//
// Calls whose symbol an older driver lacks do not make Load fail: such a call returns a
// *SymbolError naming the symbol and the driver release that introduced it. Only
// cuInit, cuDriverGetVersion, cuDeviceGetCount and cuDeviceGet are required.
//
// CUDA's current context is per OS thread: a caller of Activate must call
// runtime.LockOSThread first and make every Context call from that goroutine.
//
// Numeric constants and signatures are those of cuda.h from CUDA 12.6.3
// (CUDA_VERSION 12060), read from the copy vendored in
// github.com/zspace/system.cuda-12.6 (include/cuda.h, commit b3d92c8):
// CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED = 124 (cuda.h line 831),
// CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD = 0x1 (line 3937),
// CUDA_ERROR_NO_DEVICE = 100 (line 2420), and the _v2 names the API macros select
// (cuMemAlloc -> cuMemAlloc_v2, cuDevicePrimaryCtxRelease -> cuDevicePrimaryCtxRelease_v2,
// lines 89-144). CUresult, CUdevice and the enums are C int; CUdeviceptr is
// unsigned long long on 64-bit targets; CUcontext and CUstream are pointers.
package cuda

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"unsafe"

	"github.com/ebitengine/purego"
)

// DefaultLibrary is the file name Load opens when RDMASUITE_LIBCUDA is unset.
const DefaultLibrary = "libcuda.so.1"

// EnvLibrary names the environment variable that overrides DefaultLibrary.
const EnvLibrary = "RDMASUITE_LIBCUDA"

// CUDA constants (cuda.h, CUDA 12.6.3; see the package comment).
const (
	cudaSuccess             = 0
	cudaErrorNoDevice       = 100 // CUDA_ERROR_NO_DEVICE
	attrDmaBufSupported     = 124 // CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED
	memRangeHandleDmaBufFD  = 1   // CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD
	deviceNameBufferBytes   = 256
	pciBusIDBufferBytes     = 64 // "0000:3b:00.0" plus room; cuda.h asks for >= 13
	dmaBufSupportedSinceMsg = "CUDA 11.7"
)

// DevicePtr is a CUDA device address (CUdeviceptr).
type DevicePtr uintptr

// Stream is a CUDA stream handle (CUstream).
type Stream uintptr

// ErrNoDriver is matched (errors.Is) by every error saying libcuda could not be used.
var ErrNoDriver = errors.New("no CUDA driver")

// ErrNoDevice is matched (errors.Is) when the driver loads but sees no GPU:
// cuInit returned CUDA_ERROR_NO_DEVICE (100) or cuDeviceGetCount reported 0.
var ErrNoDevice = errors.New("no CUDA device visible to this process: request nvidia.com/gpu for the pod and check NVIDIA_VISIBLE_DEVICES / CUDA_VISIBLE_DEVICES")

// LoadError says libcuda could not be loaded (or lacks a required symbol).
// errors.Is(err, ErrNoDriver) is true for it.
type LoadError struct {
	Library string   // the library that failed
	Tried   []string // every file name tried, in order
	Err     error    // the dynamic loader's error (dlerror) or a *SymbolError
}

func (e *LoadError) Error() string {
	return fmt.Sprintf("no CUDA driver: %s could not be loaded (%v): run on a GPU node whose container runtime injects the NVIDIA driver (NVIDIA container toolkit / GPU Operator), and request nvidia.com/gpu", e.Library, e.Err)
}

// Is reports ErrNoDriver.
func (e *LoadError) Is(target error) bool { return target == ErrNoDriver }

// Unwrap returns the loader's error.
func (e *LoadError) Unwrap() error { return e.Err }

// Error is a failed CUDA driver call. Name and Text come from cuGetErrorName and
// cuGetErrorString (empty when the driver does not know the code).
type Error struct {
	Call string // the call and its main argument, e.g. "cuMemAlloc(1 MiB)"
	Code int    // the CUresult
	Name string // e.g. "CUDA_ERROR_OUT_OF_MEMORY"
	Text string // e.g. "out of memory"
}

func (e *Error) Error() string {
	name := e.Name
	if name == "" {
		name = fmt.Sprintf("CUresult %d", e.Code)
	}
	if e.Text == "" {
		return e.Call + ": " + name
	}
	return fmt.Sprintf("%s: %s (%s)", e.Call, name, e.Text)
}

// Is reports ErrNoDevice for CUDA_ERROR_NO_DEVICE.
func (e *Error) Is(target error) bool { return target == ErrNoDevice && e.Code == cudaErrorNoDevice }

// SymbolError is returned by a call whose entry point the loaded driver does not export
// (an older driver than the call needs).
type SymbolError struct {
	Library string // the loaded library
	Symbol  string // e.g. "cuMemGetHandleForAddressRange"
	Since   string // the release that introduced it, e.g. "CUDA 11.7"
	Driver  int    // cuDriverGetVersion of the loaded driver, 0 when unknown
}

func (e *SymbolError) Error() string {
	drv := ""
	if e.Driver > 0 {
		drv = fmt.Sprintf(", driver API %s", VersionString(e.Driver))
	}
	return fmt.Sprintf("%s is not exported by %s%s: it needs a %s or newer driver", e.Symbol, e.Library, drv, e.Since)
}

// VersionString renders a cuDriverGetVersion code: 12040 -> "12.4".
func VersionString(code int) string {
	return fmt.Sprintf("%d.%d", code/1000, code%1000/10)
}

// Driver is a loaded libcuda. Its methods are safe for concurrent use; the Context
// methods follow CUDA's per-thread current context (see Activate).
type Driver struct {
	path   string
	handle uintptr

	cuInit                        func(flags uint32) int32
	cuDriverGetVersion            func(v *int32) int32
	cuDeviceGetCount              func(n *int32) int32
	cuDeviceGet                   func(dev *int32, ordinal int32) int32
	cuDeviceGetName               func(name *byte, length int32, dev int32) int32
	cuDeviceGetPCIBusID           func(busID *byte, length int32, dev int32) int32
	cuDeviceGetAttribute          func(v *int32, attr int32, dev int32) int32
	cuDeviceTotalMem              func(bytes *uint64, dev int32) int32
	cuDevicePrimaryCtxRetain      func(ctx *uintptr, dev int32) int32
	cuDevicePrimaryCtxRelease     func(dev int32) int32
	cuCtxSetCurrent               func(ctx uintptr) int32
	cuMemAlloc                    func(p *uint64, size uint64) int32
	cuMemFree                     func(p uint64) int32
	cuMemcpyHtoD                  func(dst uint64, src unsafe.Pointer, n uint64) int32
	cuMemcpyDtoH                  func(dst unsafe.Pointer, src uint64, n uint64) int32
	cuMemsetD8                    func(p uint64, v uint8, n uint64) int32
	cuStreamCreate                func(s *uintptr, flags uint32) int32
	cuStreamSynchronize           func(s uintptr) int32
	cuStreamDestroy               func(s uintptr) int32
	cuMemGetHandleForAddressRange func(handle unsafe.Pointer, p uint64, size uint64, handleType int32, flags uint64) int32
	cuGetErrorName                func(code int32, s **byte) int32
	cuGetErrorString              func(code int32, s **byte) int32

	missing map[string]string // first symbol name -> release that introduced it
}

// Load opens libcuda.so.1, or the file RDMASUITE_LIBCUDA names.
func Load() (*Driver, error) {
	if p := os.Getenv(EnvLibrary); p != "" {
		return LoadFrom(p)
	}
	return LoadFrom(DefaultLibrary)
}

// LoadFrom opens the given driver library (a path or a name the dynamic loader resolves).
// The library is never closed: the CUDA driver does not support being unloaded.
func LoadFrom(path string) (*Driver, error) {
	h, err := purego.Dlopen(path, purego.RTLD_NOW|purego.RTLD_LOCAL)
	if err != nil {
		return nil, &LoadError{Library: path, Tried: []string{path}, Err: err}
	}
	d := &Driver{path: path, handle: h, missing: map[string]string{}}
	type binding struct {
		fptr     any
		since    string
		required bool
		names    []string
	}
	for _, b := range []binding{
		{&d.cuInit, "CUDA 2.0", true, []string{"cuInit"}},
		{&d.cuDriverGetVersion, "CUDA 2.2", true, []string{"cuDriverGetVersion"}},
		{&d.cuDeviceGetCount, "CUDA 2.0", true, []string{"cuDeviceGetCount"}},
		{&d.cuDeviceGet, "CUDA 2.0", true, []string{"cuDeviceGet"}},
		{&d.cuDeviceGetName, "CUDA 2.0", false, []string{"cuDeviceGetName"}},
		{&d.cuDeviceGetPCIBusID, "CUDA 4.1", false, []string{"cuDeviceGetPCIBusId"}},
		{&d.cuDeviceGetAttribute, "CUDA 2.0", false, []string{"cuDeviceGetAttribute"}},
		{&d.cuDeviceTotalMem, "CUDA 3.2", false, []string{"cuDeviceTotalMem_v2"}},
		{&d.cuDevicePrimaryCtxRetain, "CUDA 7.0", false, []string{"cuDevicePrimaryCtxRetain"}},
		// _v2 since CUDA 11.0; the unversioned symbol has the same signature.
		{&d.cuDevicePrimaryCtxRelease, "CUDA 7.0", false, []string{"cuDevicePrimaryCtxRelease_v2", "cuDevicePrimaryCtxRelease"}},
		{&d.cuCtxSetCurrent, "CUDA 4.0", false, []string{"cuCtxSetCurrent"}},
		{&d.cuMemAlloc, "CUDA 3.2", false, []string{"cuMemAlloc_v2"}},
		{&d.cuMemFree, "CUDA 3.2", false, []string{"cuMemFree_v2"}},
		{&d.cuMemcpyHtoD, "CUDA 3.2", false, []string{"cuMemcpyHtoD_v2"}},
		{&d.cuMemcpyDtoH, "CUDA 3.2", false, []string{"cuMemcpyDtoH_v2"}},
		{&d.cuMemsetD8, "CUDA 3.2", false, []string{"cuMemsetD8_v2"}},
		{&d.cuStreamCreate, "CUDA 2.0", false, []string{"cuStreamCreate"}},
		{&d.cuStreamSynchronize, "CUDA 2.0", false, []string{"cuStreamSynchronize"}},
		{&d.cuStreamDestroy, "CUDA 4.0", false, []string{"cuStreamDestroy_v2"}},
		{&d.cuMemGetHandleForAddressRange, dmaBufSupportedSinceMsg, false, []string{"cuMemGetHandleForAddressRange"}},
		{&d.cuGetErrorName, "CUDA 6.0", false, []string{"cuGetErrorName"}},
		{&d.cuGetErrorString, "CUDA 6.0", false, []string{"cuGetErrorString"}},
	} {
		if d.bind(b.fptr, b.names) {
			continue
		}
		if b.required {
			return nil, &LoadError{Library: path, Tried: []string{path},
				Err: &SymbolError{Library: path, Symbol: b.names[0], Since: b.since}}
		}
		d.missing[b.names[0]] = b.since
	}
	return d, nil
}

// bind resolves the first of names the library exports into fptr.
func (d *Driver) bind(fptr any, names []string) bool {
	for _, n := range names {
		addr, err := purego.Dlsym(d.handle, n)
		if err == nil && addr != 0 {
			purego.RegisterFunc(fptr, addr)
			return true
		}
	}
	return false
}

// Path is the library file the driver was loaded from.
func (d *Driver) Path() string { return d.path }

// Missing lists the optional symbols the loaded driver lacks, sorted (nil when none).
func (d *Driver) Missing() []string {
	var out []string
	for s := range d.missing {
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

// symbolErr is the error of a call whose symbol is missing.
func (d *Driver) symbolErr(symbol string) error {
	e := &SymbolError{Library: d.path, Symbol: symbol, Since: d.missing[symbol]}
	var v int32
	if d.cuDriverGetVersion(&v) == cudaSuccess {
		e.Driver = int(v)
	}
	return e
}

// check turns a CUresult into nil or an *Error.
func (d *Driver) check(call string, r int32) error {
	if r == cudaSuccess {
		return nil
	}
	e := &Error{Call: call, Code: int(r)}
	if d.cuGetErrorName != nil {
		var s *byte
		if d.cuGetErrorName(r, &s) == cudaSuccess {
			e.Name = goString(s)
		}
	}
	if d.cuGetErrorString != nil {
		var s *byte
		if d.cuGetErrorString(r, &s) == cudaSuccess {
			e.Text = goString(s)
		}
	}
	return e
}

// goString copies a NUL-terminated C string.
func goString(p *byte) string {
	if p == nil {
		return ""
	}
	var b strings.Builder
	for i := 0; i < 4096; i++ {
		c := *(*byte)(unsafe.Add(unsafe.Pointer(p), i))
		if c == 0 {
			break
		}
		b.WriteByte(c)
	}
	return b.String()
}

// cString converts a NUL-terminated buffer filled by C.
func cString(b []byte) string {
	if i := strings.IndexByte(string(b), 0); i >= 0 {
		return string(b[:i])
	}
	return string(b)
}

// Init calls cuInit(0). A node without a visible GPU gives an error matching
// ErrNoDevice (and *Error with CUDA_ERROR_NO_DEVICE).
func (d *Driver) Init() error {
	err := d.check("cuInit", d.cuInit(0))
	if errors.Is(err, ErrNoDevice) {
		return fmt.Errorf("%w: %w", ErrNoDevice, err)
	}
	return err
}

// Version is cuDriverGetVersion: the newest CUDA the driver supports, e.g. 12040.
func (d *Driver) Version() (int, error) {
	var v int32
	if err := d.check("cuDriverGetVersion", d.cuDriverGetVersion(&v)); err != nil {
		return 0, err
	}
	return int(v), nil
}

// DeviceCount is cuDeviceGetCount. Zero devices is an error matching ErrNoDevice.
// Init must have succeeded.
func (d *Driver) DeviceCount() (int, error) {
	var n int32
	if err := d.check("cuDeviceGetCount", d.cuDeviceGetCount(&n)); err != nil {
		return 0, err
	}
	if n <= 0 {
		return 0, fmt.Errorf("cuDeviceGetCount: 0 devices: %w", ErrNoDevice)
	}
	return int(n), nil
}

// Device describes one GPU.
type Device struct {
	Ordinal         int
	Name            string
	PCIBusID        string // lowercase, "0000:3b:00.0"
	DmaBufSupported bool   // CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED; false on drivers older than 11.7
	MemoryBytes     int64
}

func (d *Driver) device(ordinal int) (int32, error) {
	var dev int32
	if err := d.check(fmt.Sprintf("cuDeviceGet(%d)", ordinal), d.cuDeviceGet(&dev, int32(ordinal))); err != nil {
		return 0, err
	}
	return dev, nil
}

// Device queries one GPU by ordinal. Init must have succeeded.
func (d *Driver) Device(ordinal int) (Device, error) {
	dev, err := d.device(ordinal)
	if err != nil {
		return Device{}, err
	}
	out := Device{Ordinal: ordinal}
	if d.cuDeviceGetName == nil {
		return out, d.symbolErr("cuDeviceGetName")
	}
	name := make([]byte, deviceNameBufferBytes)
	if err := d.check(fmt.Sprintf("cuDeviceGetName(%d)", ordinal), d.cuDeviceGetName(&name[0], int32(len(name)), dev)); err != nil {
		return out, err
	}
	out.Name = cString(name)
	if d.cuDeviceGetPCIBusID == nil {
		return out, d.symbolErr("cuDeviceGetPCIBusId")
	}
	bus := make([]byte, pciBusIDBufferBytes)
	if err := d.check(fmt.Sprintf("cuDeviceGetPCIBusId(%d)", ordinal), d.cuDeviceGetPCIBusID(&bus[0], int32(len(bus)), dev)); err != nil {
		return out, err
	}
	out.PCIBusID = strings.ToLower(cString(bus))
	if d.cuDeviceTotalMem == nil {
		return out, d.symbolErr("cuDeviceTotalMem_v2")
	}
	var mem uint64
	if err := d.check(fmt.Sprintf("cuDeviceTotalMem(%d)", ordinal), d.cuDeviceTotalMem(&mem, dev)); err != nil {
		return out, err
	}
	out.MemoryBytes = int64(mem)
	// A driver older than 11.7 does not know attribute 124 and answers
	// CUDA_ERROR_INVALID_VALUE: that means "not supported", not a failure.
	if d.cuDeviceGetAttribute != nil {
		var v int32
		if d.cuDeviceGetAttribute(&v, attrDmaBufSupported, dev) == cudaSuccess {
			out.DmaBufSupported = v != 0
		}
	}
	return out, nil
}

// Devices queries every GPU. Init must have succeeded.
func (d *Driver) Devices() ([]Device, error) {
	n, err := d.DeviceCount()
	if err != nil {
		return nil, err
	}
	out := make([]Device, 0, n)
	for i := 0; i < n; i++ {
		dev, err := d.Device(i)
		if err != nil {
			return out, err
		}
		out = append(out, dev)
	}
	return out, nil
}
