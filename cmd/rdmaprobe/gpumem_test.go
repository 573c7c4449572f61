package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"github.com/ebitengine/purego"

	"github.com/rdmasuite/rdmasuite/workloads/bw"
	"github.com/rdmasuite/rdmasuite/workloads/cuda"
	"github.com/rdmasuite/rdmasuite/workloads/probeout"
)

func TestMemFlag(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "host"},
		{[]string{"--mem", "host"}, "host"},
		{[]string{"--mem", "cuda"}, "cuda:auto"},
		{[]string{"--mem", "cuda:auto"}, "cuda:auto"},
		{[]string{"--mem", "cuda:3"}, "cuda:3"},
		{[]string{"--mem", "host", "--inline", "64"}, "host"},
	} {
		f, _, err := parseBWFlags("bw client", append(c.args, "server"))
		if err != nil || f.mem.String() != c.want {
			t.Errorf("%v: %v %v, want %s", c.args, f, err, c.want)
		}
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--mem", "gpu"}, `--mem: memory "gpu": want host, cuda`},
		{[]string{"--mem", "cuda:-1"}, "cuda:<ordinal>"},
		{[]string{"--mem", "cuda:one"}, "cuda:<ordinal>"},
		{[]string{"--mem", "cuda:0", "--inline", "64"}, "--inline 64 with --mem cuda:0"},
	} {
		_, _, err := parseBWFlags("bw client", append(c.args, "server"))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want an error containing %q", c.args, err, c.want)
		}
	}
}

func TestCUDAAllocatorWithoutDriverIsNoGPU(t *testing.T) {
	t.Setenv(cuda.EnvLibrary, "/nonexistent/libcuda.so.1")
	a := newCUDAAllocator()
	_, err := a.GPUs()
	if !errors.Is(err, bw.ErrNoGPU) || !errors.Is(err, cuda.ErrNoDriver) {
		t.Fatalf("GPUs without a driver: %v", err)
	}
	if pe := bw.Classify(err); pe.Kind != probeout.KindNoGPU || !strings.Contains(pe.Message, "/nonexistent/libcuda.so.1") {
		t.Fatalf("classified %v", pe)
	}
	if _, err := a.Alloc(0, 1<<20); !errors.Is(err, bw.ErrNoGPU) {
		t.Fatalf("Alloc without a driver: %v", err)
	}
}

// fakeDriver compiles workloads/cuda's stand-in libcuda (testdata/fakecuda.c)
// and points the loader at it; the returned functions inspect its state.
func fakeDriver(t *testing.T) (ctxRefs func(int32) int32, liveAllocs func() int32, setInit func(int32), reset func()) {
	t.Helper()
	cc := "gcc"
	if v := strings.Fields(os.Getenv("CC")); len(v) > 0 {
		cc = v[0]
	}
	lib := filepath.Join(t.TempDir(), "libcuda.so.1")
	src := filepath.Join("..", "..", "workloads", "cuda", "testdata", "fakecuda.c")
	if b, err := exec.Command(cc, "-shared", "-fPIC", "-O1", "-o", lib, src).CombinedOutput(); err != nil {
		t.Fatalf("building the fake libcuda: %v\n%s", err, b)
	}
	t.Setenv(cuda.EnvLibrary, lib)
	h, err := purego.Dlopen(lib, purego.RTLD_NOW|purego.RTLD_LOCAL)
	if err != nil {
		t.Fatal(err)
	}
	purego.RegisterLibFunc(&ctxRefs, h, "fake_ctx_refs")
	purego.RegisterLibFunc(&liveAllocs, h, "fake_live_allocs")
	purego.RegisterLibFunc(&setInit, h, "fake_set_init_result")
	purego.RegisterLibFunc(&reset, h, "fake_reset")
	reset()
	return
}

func TestCUDAAllocatorOverTheDriverAPI(t *testing.T) {
	ctxRefs, liveAllocs, setInit, reset := fakeDriver(t)
	a := newCUDAAllocator()
	gpus, err := a.GPUs()
	if err != nil {
		t.Fatal(err)
	}
	if len(gpus) != 2 || gpus[0].PCIBusID != "0000:3b:00.0" || !gpus[0].DmaBufSupported || gpus[1].DmaBufSupported || gpus[1].Ordinal != 1 ||
		!strings.Contains(gpus[0].Name, "H100") {
		t.Fatalf("GPUs %+v", gpus)
	}
	type allocated struct {
		ptr    uintptr
		fd     int
		fd2    int
		err    error
		buffer interface{ Close() error }
	}
	done := make(chan allocated)
	go func() { // as bwverbs does: one locked thread for alloc, export, registration
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		b, err := a.Alloc(0, 1<<20)
		if err != nil {
			done <- allocated{err: err}
			return
		}
		fd, err := b.DmaBufFD()
		fd2, _ := b.DmaBufFD()
		done <- allocated{ptr: b.Ptr(), fd: fd, fd2: fd2, err: err, buffer: b}
	}()
	got := <-done
	if got.err != nil || got.ptr == 0 || got.fd < 0 || got.fd2 != got.fd {
		t.Fatalf("alloc %+v", got)
	}
	if ctxRefs(0) != 1 || liveAllocs() != 1 {
		t.Fatalf("after alloc: context refs %d, allocations %d", ctxRefs(0), liveAllocs())
	}
	// Freed from another goroutine than the one that allocated.
	for i := 0; i < 2; i++ {
		if err := got.buffer.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if ctxRefs(0) != 0 || liveAllocs() != 0 {
		t.Fatalf("after close: context refs %d, allocations %d", ctxRefs(0), liveAllocs())
	}
	if _, err := fcntlGetfd(got.fd); !errors.Is(err, syscall.EBADF) {
		t.Fatalf("dma-buf fd %d still open after Close (%v)", got.fd, err)
	}
	if _, err := a.Alloc(7, 1<<20); !errors.Is(err, bw.ErrNoGPU) || !strings.Contains(err.Error(), "ordinal 7") {
		t.Fatalf("Alloc on a GPU the pod does not have: %v", err)
	}

	// A driver that sees no device: a not-run too.
	reset()
	setInit(100) // CUDA_ERROR_NO_DEVICE
	if _, err := newCUDAAllocator().GPUs(); !errors.Is(err, bw.ErrNoGPU) || !errors.Is(err, cuda.ErrNoDevice) {
		t.Fatalf("no device: %v", err)
	}
	// Any other init failure is not "no GPU here".
	reset()
	setInit(3) // CUDA_ERROR_NOT_INITIALIZED
	if _, err := newCUDAAllocator().GPUs(); err == nil || errors.Is(err, bw.ErrNoGPU) {
		t.Fatalf("init failure: %v", err)
	}
}

func fcntlGetfd(fd int) (uintptr, error) {
	r, _, e := syscall.Syscall(syscall.SYS_FCNTL, uintptr(fd), syscall.F_GETFD, 0)
	if e != 0 {
		return 0, e
	}
	return r, nil
}

func TestMemoryLogFillsEveryPairOfARail(t *testing.T) {
	var lines []string
	l := newMemoryLog(func(format string, a ...any) { lines = append(lines, format) })
	r0, r1, r2 := bw.Rail{Device: "mlx5_0", Port: 1}, bw.Rail{Device: "mlx5_1", Port: 1}, bw.Rail{Device: "mlx5_2", Port: 1}
	gpu := bw.Memory{Kind: bw.MemoryCUDA, GPU: 4, GPUPCI: "0000:9a:00.0", Path: bw.PathPeermem, Topology: "SYS", CrossSocket: true, NUMANIC: 0, NUMAGPU: 1}
	l.record(r0, bw.Memory{Kind: bw.MemoryHost})
	l.record(r1, gpu)
	l.record(r1, gpu) // the next op on the same rail: logged once
	out := bw.ProbeOutput{Rails: []bw.RailResult{{Local: r0}, {Local: r1, Peer: &r0}, {Local: r1, Peer: &r1}, {Local: r2}}}
	l.fill(&out)
	if m := out.Rails[0].Memory; m == nil || m.Kind != bw.MemoryHost {
		t.Fatalf("rail 0: %+v", m)
	}
	for _, i := range []int{1, 2} {
		if m := out.Rails[i].Memory; m == nil || *m != gpu {
			t.Fatalf("rail result %d: %+v", i, m)
		}
	}
	if out.Rails[1].Memory == out.Rails[2].Memory {
		t.Fatal("rail results share one Memory")
	}
	if out.Rails[3].Memory != nil {
		t.Fatalf("a rail that never opened has memory %+v", out.Rails[3].Memory)
	}
	if len(lines) != 2 {
		t.Fatalf("%d log lines, want 2", len(lines))
	}
	if d := describeMemory(gpu); !strings.Contains(d, "CROSS-SOCKET") || !strings.Contains(d, "via peermem") {
		t.Fatalf("log line %q", d)
	}
}

// SEND is latency only: --op send without --latency names the fix; with it
// the op list keeps its order.
func TestOpSendNeedsLatency(t *testing.T) {
	if _, _, err := parseBWFlags("bw client", []string{"--op", "send", "server"}); err == nil || !strings.Contains(err.Error(), "add --latency") {
		t.Fatalf("--op send alone: %v", err)
	}
	if _, _, err := parseBWFlags("bw client", []string{"--op", "write,atomic", "server"}); err == nil || !strings.Contains(err.Error(), "want write, read, send") {
		t.Fatalf("--op atomic: %v", err)
	}
	for _, bad := range []string{"0", "32", "-1"} {
		if _, _, err := parseBWFlags("bw client", []string{"--qp-timeout", bad, "server"}); err == nil || !strings.Contains(err.Error(), "--qp-timeout "+bad+": want 1..31") {
			t.Errorf("--qp-timeout %s: %v", bad, err)
		}
	}
	if f, _, err := parseBWFlags("bw client", []string{"--qp-timeout", "18", "server"}); err != nil || f.params.QPTimeout != 18 {
		t.Errorf("--qp-timeout 18: %v", err)
	}
	if f, _, err := parseBWFlags("bw client", []string{"server"}); err != nil || f.params.QPTimeout != bw.DefaultQPTimeout {
		t.Errorf("default QP timeout: %v", err)
	}
	f, _, err := parseBWFlags("bw client", []string{"--latency", "--op", "write,send,read", "server"})
	if err != nil || len(f.ops) != 3 || f.ops[1] != bw.OpSend || f.params.TxDepth != 1 || f.params.MaxInline != -1 {
		t.Fatalf("--latency --op write,send,read: %+v %v", f, err)
	}
}

// Without --cq-mod the moderation stops above 8 KiB (perftest without -Q);
// a --cq-mod given applies to every size, and latency runs use 1.
func TestCQModFlag(t *testing.T) {
	for _, c := range []struct {
		args   []string
		mod    int
		upTo8K bool
	}{
		{nil, 100, true},
		{[]string{"--cq-mod", "100"}, 100, false},
		{[]string{"--cq-mod", "16"}, 16, false},
		{[]string{"--latency"}, 1, true},
	} {
		f, _, err := parseBWFlags("bw client", append(c.args, "server"))
		if err != nil || f.params.CQMod != c.mod || f.params.CQModUpTo8K != c.upTo8K {
			t.Errorf("%v: cq-mod %d up to 8 KiB %v (%v), want %d %v", c.args, f.params.CQMod, f.params.CQModUpTo8K, err, c.mod, c.upTo8K)
		}
	}
}
