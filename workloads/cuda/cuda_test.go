package cuda

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"github.com/ebitengine/purego"

	"github.com/rdmasuite/rdmasuite/workloads/cfake"
)

// The binding tests load real shared objects: testdata/fakecuda.c compiled with gcc
// (or $CC) into a temporary directory. No GPU, no CUDA: the fake implements the used
// entry points with cuda.h's C signatures and rejects misplaced arguments.

// fakes builds testdata/fakecuda.c into shared objects, one per set of -D flags.
var fakes = &cfake.Builder{Source: filepath.Join("testdata", "fakecuda.c")}

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "fakecuda-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fakes.Dir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// buildFake compiles testdata/fakecuda.c with the -D flags into <name>.so.
func buildFake(t *testing.T, name string, defines ...string) string {
	t.Helper()
	return fakes.Build(t, name, defines...)
}

// fake steers and inspects a loaded fake through its fake_* functions.
type fake struct {
	reset            func()
	setDeviceCount   func(n int32)
	setInitResult    func(r int32)
	setDriverVersion func(v int32)
	setAllocLimit    func(n uint64)
	ctxRefs          func(ordinal int32) int32
	currentOrdinal   func() int32
	liveAllocs       func() int32
	liveStreams      func() int32
}

// loadFake builds (once) and loads a fake, resets its state and returns the Driver and
// the steering functions (the same library handle, so the same state).
func loadFake(t *testing.T, name string, defines ...string) (*Driver, *fake) {
	t.Helper()
	path := buildFake(t, name, defines...)
	d, err := LoadFrom(path)
	if err != nil {
		t.Fatalf("LoadFrom(%s): %v", path, err)
	}
	h, err := purego.Dlopen(path, purego.RTLD_NOW|purego.RTLD_LOCAL)
	if err != nil {
		t.Fatal(err)
	}
	f := &fake{}
	for sym, fp := range map[string]any{
		"fake_reset": &f.reset, "fake_set_device_count": &f.setDeviceCount,
		"fake_set_init_result": &f.setInitResult, "fake_set_driver_version": &f.setDriverVersion,
		"fake_set_alloc_limit": &f.setAllocLimit, "fake_ctx_refs": &f.ctxRefs,
		"fake_current_ordinal": &f.currentOrdinal, "fake_live_allocs": &f.liveAllocs,
		"fake_live_streams": &f.liveStreams,
	} {
		purego.RegisterLibFunc(fp, h, sym)
	}
	f.reset()
	return d, f
}

// activate inits the driver and activates device 0 on a locked OS thread.
func activate(t *testing.T, d *Driver) *Context {
	t.Helper()
	runtime.LockOSThread()
	t.Cleanup(runtime.UnlockOSThread)
	if err := d.Init(); err != nil {
		t.Fatal(err)
	}
	dev, err := d.Device(0)
	if err != nil {
		t.Fatal(err)
	}
	c, err := d.Activate(dev)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestLoadMissingLibraryNamesLibraryAndFix(t *testing.T) {
	_, err := LoadFrom("/nonexistent/libcuda.so.1")
	if !errors.Is(err, ErrNoDriver) {
		t.Fatalf("err = %v, want errors.Is ErrNoDriver", err)
	}
	var le *LoadError
	if !errors.As(err, &le) || le.Library != "/nonexistent/libcuda.so.1" || len(le.Tried) != 1 {
		t.Fatalf("err = %#v, want *LoadError for the path", err)
	}
	msg := err.Error()
	for _, want := range []string{
		"no CUDA driver: /nonexistent/libcuda.so.1 could not be loaded (",
		"No such file", // the loader's reason
		"NVIDIA container toolkit / GPU Operator", "request nvidia.com/gpu",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %q lacks %q", msg, want)
		}
	}
	if errors.Is(err, ErrNoDevice) {
		t.Error("a missing library must not read as 'no device'")
	}
}

func TestLoadHonoursEnvOverride(t *testing.T) {
	t.Setenv(EnvLibrary, "/nonexistent/override/libcuda.so.1")
	_, err := Load()
	if !errors.Is(err, ErrNoDriver) || !strings.Contains(err.Error(), "/nonexistent/override/libcuda.so.1") {
		t.Fatalf("Load with %s set: %v", EnvLibrary, err)
	}
	t.Setenv(EnvLibrary, buildFake(t, "libfakecuda"))
	d, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	if v, err := d.Version(); err != nil || v != 12040 {
		t.Fatalf("Version = %d, %v; want the fake's 12040", v, err)
	}
}

func TestLoadRejectsLibraryWithoutCuInit(t *testing.T) {
	path := buildFake(t, "libnoinit", "NO_INIT")
	_, err := LoadFrom(path)
	var se *SymbolError
	if !errors.Is(err, ErrNoDriver) || !errors.As(err, &se) || se.Symbol != "cuInit" {
		t.Fatalf("err = %v, want ErrNoDriver wrapping a *SymbolError for cuInit", err)
	}
}

func TestDevices(t *testing.T) {
	d, _ := loadFake(t, "libfakecuda")
	if err := d.Init(); err != nil {
		t.Fatal(err)
	}
	if v, err := d.Version(); err != nil || v != 12040 || VersionString(v) != "12.4" {
		t.Fatalf("Version = %d (%s), %v", v, VersionString(v), err)
	}
	devs, err := d.Devices()
	if err != nil {
		t.Fatal(err)
	}
	want := []Device{
		{Ordinal: 0, Name: "Fake H100 80GB HBM3 #0", PCIBusID: "0000:3b:00.0", DmaBufSupported: true, MemoryBytes: 80<<30 | 12345},
		{Ordinal: 1, Name: "Fake H100 80GB HBM3 #1", PCIBusID: "0000:af:00.0", DmaBufSupported: false, MemoryBytes: 40<<30 | 12345},
	}
	if fmt.Sprint(devs) != fmt.Sprint(want) {
		t.Fatalf("Devices =\n %+v\nwant\n %+v", devs, want)
	}
}

func TestDeviceErrorCarriesNameAndText(t *testing.T) {
	d, _ := loadFake(t, "libfakecuda")
	if err := d.Init(); err != nil {
		t.Fatal(err)
	}
	_, err := d.Device(5)
	var ce *Error
	if !errors.As(err, &ce) || ce.Code != 101 || ce.Name != "CUDA_ERROR_INVALID_DEVICE" {
		t.Fatalf("err = %#v", err)
	}
	if got, want := err.Error(), "cuDeviceGet(5): CUDA_ERROR_INVALID_DEVICE (invalid device ordinal)"; got != want {
		t.Fatalf("message %q, want %q", got, want)
	}
}

func TestCallsBeforeInitFail(t *testing.T) {
	d, _ := loadFake(t, "libfakecuda")
	_, err := d.DeviceCount()
	if err == nil || err.Error() != "cuDeviceGetCount: CUDA_ERROR_NOT_INITIALIZED (initialization error)" {
		t.Fatalf("DeviceCount before Init: %v", err)
	}
}

func TestInitNoDevice(t *testing.T) {
	d, f := loadFake(t, "libfakecuda")
	f.setInitResult(100)
	err := d.Init()
	var ce *Error
	if !errors.Is(err, ErrNoDevice) || !errors.As(err, &ce) || ce.Code != 100 {
		t.Fatalf("Init = %v, want ErrNoDevice and *Error 100", err)
	}
	if errors.Is(err, ErrNoDriver) {
		t.Error("no device must not read as no driver")
	}
	if !strings.Contains(err.Error(), "cuInit: CUDA_ERROR_NO_DEVICE (no CUDA-capable device is detected)") ||
		!strings.Contains(err.Error(), "request nvidia.com/gpu") {
		t.Fatalf("message %q", err)
	}
}

func TestZeroDevicesIsNoDevice(t *testing.T) {
	d, f := loadFake(t, "libfakecuda")
	f.setDeviceCount(0)
	if err := d.Init(); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Devices(); !errors.Is(err, ErrNoDevice) {
		t.Fatalf("Devices with 0 GPUs = %v, want ErrNoDevice", err)
	}
}

func TestUnknownCodeWithoutName(t *testing.T) {
	d, f := loadFake(t, "libfakecuda")
	f.setInitResult(999)
	err := d.Init()
	if err == nil || err.Error() != "cuInit: CUresult 999" || errors.Is(err, ErrNoDevice) {
		t.Fatalf("Init = %v", err)
	}
}

func TestMemoryRoundTripAndContextLifecycle(t *testing.T) {
	d, f := loadFake(t, "libfakecuda")
	c := activate(t, d)
	if f.currentOrdinal() != 0 || f.ctxRefs(0) != 1 {
		t.Fatalf("after Activate: current %d refs %d", f.currentOrdinal(), f.ctxRefs(0))
	}
	const size = 1 << 20
	p, err := c.Alloc(size)
	if err != nil {
		t.Fatal(err)
	}
	src := make([]byte, size)
	for i := range src {
		src[i] = byte(i*7 + i>>8)
	}
	if err := c.CopyHtoD(p, src); err != nil {
		t.Fatal(err)
	}
	if err := c.Memset8(p+4096, 0xA5, 100); err != nil {
		t.Fatal(err)
	}
	copy(src[4096:4196], bytes.Repeat([]byte{0xA5}, 100))
	got := make([]byte, size)
	if err := c.CopyDtoH(got, p); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, src) {
		t.Fatal("device round trip changed the data")
	}
	// A copy past the allocation is refused by the driver, with its words.
	err = c.CopyDtoH(make([]byte, size+1), p)
	if err == nil || err.Error() != "cuMemcpyDtoH(1048577 B): CUDA_ERROR_INVALID_VALUE (invalid argument)" {
		t.Fatalf("overlong copy: %v", err)
	}
	if err := c.Free(p); err != nil {
		t.Fatal(err)
	}
	if n := f.liveAllocs(); n != 0 {
		t.Fatalf("%d allocations left after Free", n)
	}
	if err := c.Free(p); err == nil {
		t.Fatal("double Free succeeded")
	}

	s, err := c.StreamCreate()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.StreamSync(s); err != nil {
		t.Fatal(err)
	}
	if err := c.StreamDestroy(s); err != nil {
		t.Fatal(err)
	}
	if n := f.liveStreams(); n != 0 {
		t.Fatalf("%d streams left", n)
	}

	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if r := f.ctxRefs(0); r != 0 {
		t.Fatalf("context refs after Close = %d, want 0", r)
	}
	if _, err := c.Alloc(1); !errors.Is(err, ErrClosed) {
		t.Fatalf("Alloc after Close = %v", err)
	}
}

func TestAllocOutOfMemoryMessage(t *testing.T) {
	d, f := loadFake(t, "libfakecuda")
	c := activate(t, d)
	f.setAllocLimit(4096)
	_, err := c.Alloc(1 << 20)
	var ce *Error
	if !errors.As(err, &ce) || ce.Code != 2 {
		t.Fatalf("err = %#v", err)
	}
	if got, want := err.Error(), "cuMemAlloc(1 MiB): CUDA_ERROR_OUT_OF_MEMORY (out of memory)"; got != want {
		t.Fatalf("message %q, want %q", got, want)
	}
}

func TestDmaBufFD(t *testing.T) {
	d, _ := loadFake(t, "libfakecuda")
	c := activate(t, d)
	const size = 2 << 20
	p, err := c.Alloc(size)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Free(p)
	fd, err := c.DmaBufFD(p, size)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil || st.Size != size {
		t.Fatalf("fd %d: fstat size %d, %v; want %d", fd, st.Size, err, size)
	}
	// The driver wants page-aligned sizes; its refusal comes back as an *Error.
	if _, err := c.DmaBufFD(p, 1000); err == nil ||
		err.Error() != "cuMemGetHandleForAddressRange(DMA_BUF_FD, 1000 B): CUDA_ERROR_INVALID_VALUE (invalid argument)" {
		t.Fatalf("unaligned size: %v", err)
	}
}

func TestDmaBufMissingSymbolOnOldDriver(t *testing.T) {
	d, f := loadFake(t, "libolddriver", "NO_DMABUF")
	f.setDriverVersion(11040)
	if m := d.Missing(); len(m) != 1 || m[0] != "cuMemGetHandleForAddressRange" {
		t.Fatalf("Missing = %v", m)
	}
	c := activate(t, d) // the rest of the driver works
	p, err := c.Alloc(4096)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Free(p)
	_, err = c.DmaBufFD(p, 4096)
	var se *SymbolError
	if !errors.As(err, &se) || se.Symbol != "cuMemGetHandleForAddressRange" || se.Driver != 11040 {
		t.Fatalf("err = %#v", err)
	}
	for _, want := range []string{"cuMemGetHandleForAddressRange", "CUDA 11.7 or newer", "driver API 11.4"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("message %q lacks %q", err, want)
		}
	}
}
