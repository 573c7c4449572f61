package bwverbs

import (
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/rdmasuite/rdmasuite/workloads/bw"
	"github.com/rdmasuite/rdmasuite/workloads/gputopo"
	"github.com/rdmasuite/rdmasuite/workloads/probeout"
	"github.com/rdmasuite/rdmasuite/workloads/verbs"
)

// fakeGPUs is a GPUAllocator over made-up device pointers.
type fakeGPUs struct {
	gpus    []GPUInfo
	listErr error
	allocs  []int // ordinals allocated on
	bufs    []*fakeBuf
	fdErr   error
}

func (f *fakeGPUs) GPUs() ([]GPUInfo, error) { return f.gpus, f.listErr }
func (f *fakeGPUs) Alloc(ordinal, size int) (GPUBuffer, error) {
	f.allocs = append(f.allocs, ordinal)
	b := &fakeBuf{ptr: uintptr(0x7f0000000000 + ordinal<<32), size: size, fdErr: f.fdErr}
	f.bufs = append(f.bufs, b)
	return b, nil
}

type fakeBuf struct {
	ptr     uintptr
	size    int
	fdErr   error
	exports int
	closed  int
}

func (b *fakeBuf) Ptr() uintptr { return b.ptr }
func (b *fakeBuf) DmaBufFD() (int, error) {
	b.exports++
	if b.fdErr != nil {
		return -1, b.fdErr
	}
	return 42, nil
}
func (b *fakeBuf) Close() error { b.closed++; return nil }

// fakeReg is a PD whose two external registrations fail with the given
// errnos (0: success); it records what it was asked.
type fakeReg struct {
	dmabufErrno, peerErrno syscall.Errno
	dmabufCalls, peerCalls []string
}

func (r *fakeReg) RegDmabufMR(fd int, offset uint64, size int, iova uint64, access verbs.Access) (*verbs.MR, error) {
	call := fmt.Sprintf("ibv_reg_dmabuf_mr(fd %d, offset %d, %d, iova 0x%x)", fd, offset, size, iova)
	r.dmabufCalls = append(r.dmabufCalls, call)
	if r.dmabufErrno != 0 {
		return nil, &verbs.Error{Call: call, Errno: r.dmabufErrno, Mem: verbs.MemDmabuf}
	}
	return &verbs.MR{Size: size}, nil
}

func (r *fakeReg) RegExternalMR(addr uintptr, size int, access verbs.Access) (*verbs.MR, error) {
	call := fmt.Sprintf("ibv_reg_mr(external 0x%x, %d)", addr, size)
	r.peerCalls = append(r.peerCalls, call)
	if r.peerErrno != 0 {
		return nil, &verbs.Error{Call: call, Errno: r.peerErrno, Mem: verbs.MemExternal}
	}
	return &verbs.MR{Size: size}, nil
}

// fakeTopo places devices by address on made-up sysfs paths.
type fakeTopo struct {
	nics map[string]gputopo.PCIDevice // by RDMA device
	pci  map[string]gputopo.PCIDevice // by address
}

func (f fakeTopo) RDMADevice(ibdev string) (gputopo.PCIDevice, error) {
	if d, ok := f.nics[ibdev]; ok {
		return d, nil
	}
	return gputopo.PCIDevice{}, &gputopo.NoPCIError{Device: ibdev, Why: "a software device on network interface dummy0, which has no PCI device"}
}

func (f fakeTopo) Device(addr string) (gputopo.PCIDevice, error) {
	if d, ok := f.pci[addr]; ok {
		return d, nil
	}
	return gputopo.PCIDevice{}, fmt.Errorf("PCI device %s: %w", addr, gputopo.ErrNotFound)
}

// twoSocketNode: mlx5_0 under a switch with GPU 1 on socket 0, GPU 0 on
// socket 1, mlx5_1 on socket 1 on its own root port; rxe0 has no PCI.
func twoSocketNode() fakeTopo {
	dev := func(path string, numa int) gputopo.PCIDevice {
		return gputopo.PCIDevice{Address: filepath.Base(path), NUMANode: numa, Path: path}
	}
	sw0 := "/sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0"
	nic0 := dev(sw0+"/0000:02:08.0/0000:04:00.0", 0)
	gpu1 := dev(sw0+"/0000:02:00.0/0000:03:00.0", 0)
	gpu0 := dev("/sys/devices/pci0000:80/0000:80:01.0/0000:81:00.0", 1)
	nic1 := dev("/sys/devices/pci0000:80/0000:80:03.0/0000:83:00.0", 1)
	return fakeTopo{
		nics: map[string]gputopo.PCIDevice{"mlx5_0": nic0, "mlx5_1": nic1},
		pci:  map[string]gputopo.PCIDevice{gpu0.Address: gpu0, gpu1.Address: gpu1},
	}
}

// CUDA orders GPUs fastest first, not by bus: ordinal 0 is on socket 1.
func twoGPUs(dmabuf bool) []GPUInfo {
	return []GPUInfo{
		{Ordinal: 0, Name: "NVIDIA H100 80GB HBM3", PCIBusID: "0000:81:00.0", DmaBufSupported: dmabuf},
		{Ordinal: 1, Name: "NVIDIA H100 80GB HBM3", PCIBusID: "0000:03:00.0", DmaBufSupported: dmabuf},
	}
}

const access = verbs.AccessLocalWrite | verbs.AccessRemoteWrite | verbs.AccessRemoteRead

func auto() MemorySpec { return MemorySpec{Kind: bw.MemoryCUDA, Auto: true} }

func TestGPUMemoryDmabufFirst(t *testing.T) {
	alloc, reg := &fakeGPUs{gpus: twoGPUs(true)}, &fakeReg{}
	mr, buf, mem, err := gpuMemory(gpuDeps{alloc: alloc, topo: twoSocketNode(), reg: reg}, auto(), "mlx5_0", 100_000, access)
	if err != nil {
		t.Fatal(err)
	}
	// The GPU under mlx5_0's switch, although CUDA lists it second; the
	// size rounded up to 64 KiB GPU pages; registered as a dma-buf at the
	// buffer's own address, peer memory never tried.
	if len(alloc.allocs) != 1 || alloc.allocs[0] != 1 || mr.Size != 128<<10 || buf != alloc.bufs[0] {
		t.Fatalf("allocated on %v, MR %d bytes", alloc.allocs, mr.Size)
	}
	if len(reg.dmabufCalls) != 1 || reg.dmabufCalls[0] != "ibv_reg_dmabuf_mr(fd 42, offset 0, 131072, iova 0x7f0100000000)" || len(reg.peerCalls) != 0 {
		t.Fatalf("registrations: dma-buf %v, peer %v", reg.dmabufCalls, reg.peerCalls)
	}
	want := bw.Memory{Kind: "cuda", GPU: 1, GPUName: "NVIDIA H100 80GB HBM3", GPUPCI: "0000:03:00.0", Selected: "nearest",
		Path: "dmabuf", Topology: "PIX", NICPCI: "0000:04:00.0", NUMANIC: 0, NUMAGPU: 0}
	if mem != want {
		t.Fatalf("memory %+v\nwant   %+v", mem, want)
	}
	if alloc.bufs[0].closed != 0 {
		t.Fatal("the buffer of a working MR was freed")
	}
}

func TestGPUMemoryFallsBackToPeerMemory(t *testing.T) {
	for _, c := range []struct {
		name     string
		dmabuf   bool
		fdErr    error
		errno    syscall.Errno
		why      []string
		exported bool
	}{
		{"HCA without dma-buf", true, nil, syscall.EOPNOTSUPP,
			[]string{"dma-buf: ibv_reg_dmabuf_mr(fd 42", "Operation not supported", "cannot register dma-buf memory"}, true},
		{"exporter refused", true, nil, syscall.EINVAL, []string{"dma-buf: ibv_reg_dmabuf_mr(", "Invalid argument"}, true},
		{"no export", true, errors.New("cuMemGetHandleForAddressRange: CUDA_ERROR_NOT_SUPPORTED"), 0,
			[]string{"dma-buf: exporting the GPU buffer failed: cuMemGetHandleForAddressRange: CUDA_ERROR_NOT_SUPPORTED"}, true},
		{"GPU without dma-buf", false, nil, 0, []string{"GPU 1 reports no dma-buf support"}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			alloc, reg := &fakeGPUs{gpus: twoGPUs(c.dmabuf), fdErr: c.fdErr}, &fakeReg{dmabufErrno: c.errno}
			_, _, mem, err := gpuMemory(gpuDeps{alloc: alloc, topo: twoSocketNode(), reg: reg}, auto(), "mlx5_0", 1<<20, access)
			if err != nil {
				t.Fatal(err)
			}
			if mem.Path != bw.PathPeermem || len(reg.peerCalls) != 1 || reg.peerCalls[0] != "ibv_reg_mr(external 0x7f0100000000, 1048576)" {
				t.Fatalf("path %q, peer registrations %v", mem.Path, reg.peerCalls)
			}
			for _, w := range c.why {
				if !strings.Contains(mem.Why, w) {
					t.Errorf("why %q lacks %q", mem.Why, w)
				}
			}
			if exported := alloc.bufs[0].exports > 0; exported != c.exported {
				t.Errorf("dma-buf exported: %v, want %v", exported, c.exported)
			}
			if !c.dmabuf && len(reg.dmabufCalls) != 0 {
				t.Errorf("dma-buf registration tried on a GPU without dma-buf: %v", reg.dmabufCalls)
			}
		})
	}
}

func TestGPUMemoryBothPathsFailNamesBoth(t *testing.T) {
	alloc, reg := &fakeGPUs{gpus: twoGPUs(true)}, &fakeReg{dmabufErrno: syscall.EOPNOTSUPP, peerErrno: syscall.EFAULT}
	mr, buf, mem, err := gpuMemory(gpuDeps{alloc: alloc, topo: twoSocketNode(), reg: reg}, MemorySpec{Kind: bw.MemoryCUDA, Ordinal: 0}, "mlx5_1", 1<<20, access)
	if err == nil || mr != nil || buf != nil {
		t.Fatalf("both paths failed, yet MR %v buffer %v", mr, buf)
	}
	if !errors.Is(err, bw.ErrGPUDirect) || errors.Is(err, bw.ErrNoGPU) || errors.Is(err, bw.ErrMemlock) {
		t.Fatalf("error kind: %v", err)
	}
	for _, w := range []string{"GPU 0", "0000:81:00.0", "mlx5_1", "dma-buf: ibv_reg_dmabuf_mr(", "Operation not supported",
		"peer memory: ibv_reg_mr(external 0x7f0000000000", "Bad address", "is nvidia_peermem loaded?", "fix: load nvidia_peermem"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error lacks %q: %v", w, err)
		}
	}
	if alloc.bufs[0].closed != 1 {
		t.Fatalf("GPU buffer closed %d times, want 1", alloc.bufs[0].closed)
	}
	// What was tried stays on record for the rail.
	if mem.Kind != bw.MemoryCUDA || mem.Path != "" || !strings.Contains(mem.Why, "dma-buf: ") || !strings.Contains(mem.Why, "; peer memory: ") ||
		mem.Selected != "ordinal" || mem.Topology != "PHB" {
		t.Fatalf("memory %+v", mem)
	}
	if pe := bw.Classify(err); pe.Kind == probeout.KindNoGPU || pe.Kind == probeout.KindMemlock {
		t.Fatalf("both paths failing is not a missing GPU nor memlock: %v", pe)
	}
}

func TestGPUMemoryNoGPUIsANotRun(t *testing.T) {
	noDriver := bw.Tag(bw.ErrNoGPU, errors.New("libcuda.so.1: cannot open shared object file"))
	for _, c := range []struct {
		name  string
		alloc GPUAllocator
		spec  MemorySpec
		want  []string
	}{
		{"no allocator", nil, auto(), []string{"--mem cuda:auto", "no CUDA driver"}},
		{"no driver", &fakeGPUs{listErr: noDriver}, auto(), []string{"libcuda.so.1"}},
		{"no device", &fakeGPUs{gpus: []GPUInfo{}}, auto(), []string{"lists no GPU"}},
		{"ordinal not given to the pod", &fakeGPUs{gpus: twoGPUs(true)}, MemorySpec{Kind: bw.MemoryCUDA, Ordinal: 3}, []string{"--mem cuda:3", "ordinals 0, 1 only"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			reg := &fakeReg{}
			_, _, mem, err := gpuMemory(gpuDeps{alloc: c.alloc, topo: twoSocketNode(), reg: reg}, c.spec, "mlx5_0", 1<<20, access)
			if !errors.Is(err, bw.ErrNoGPU) {
				t.Fatalf("error %v does not match bw.ErrNoGPU", err)
			}
			pe := bw.Classify(fmt.Errorf("rail mlx5_0/1: %w", err))
			if pe.Kind != probeout.KindNoGPU || !pe.Valid() {
				t.Fatalf("classified %v, want kind %s", pe, probeout.KindNoGPU)
			}
			for _, w := range append(c.want, "request nvidia.com/gpu", "NVIDIA driver injected") {
				if !strings.Contains(pe.Message, w) {
					t.Errorf("message lacks %q: %s", w, pe.Message)
				}
			}
			if mem.Kind != "" || len(reg.dmabufCalls)+len(reg.peerCalls) != 0 {
				t.Fatalf("memory %+v, registrations %v %v", mem, reg.dmabufCalls, reg.peerCalls)
			}
		})
	}
	// A failure to list GPUs that is not "none here" stays what it is.
	_, _, _, err := gpuMemory(gpuDeps{alloc: &fakeGPUs{listErr: errors.New("cuInit: CUDA_ERROR_SYSTEM_DRIVER_MISMATCH")}, reg: &fakeReg{}}, auto(), "mlx5_0", 1<<20, access)
	if err == nil || errors.Is(err, bw.ErrNoGPU) || !strings.Contains(err.Error(), "DRIVER_MISMATCH") {
		t.Fatalf("driver mismatch: %v", err)
	}
}

func TestGPUChoiceAndTopology(t *testing.T) {
	topo := twoSocketNode()
	for _, c := range []struct {
		name  string
		topo  gpuTopology
		spec  MemorySpec
		ibdev string
		want  bw.Memory
	}{
		{"nearest to mlx5_1 is on its socket", topo, auto(), "mlx5_1", bw.Memory{Kind: "cuda", GPU: 0, GPUPCI: "0000:81:00.0", Selected: "nearest",
			Path: "dmabuf", Topology: "PHB", NICPCI: "0000:83:00.0", NUMANIC: 1, NUMAGPU: 1}},
		{"an ordinal across sockets is flagged", topo, MemorySpec{Kind: bw.MemoryCUDA, Ordinal: 0}, "mlx5_0", bw.Memory{Kind: "cuda", GPU: 0, GPUPCI: "0000:81:00.0",
			Selected: "ordinal", Path: "dmabuf", Topology: "SYS", CrossSocket: true, NICPCI: "0000:04:00.0", NUMANIC: 0, NUMAGPU: 1,
			TopologyWhy: "across NUMA nodes: NIC on node 0 (pci0000:00), GPU on node 1 (pci0000:80): traffic crosses the CPU interconnect"}},
		{"Soft-RoCE: no nearest, the lowest ordinal", topo, auto(), "rxe0", bw.Memory{Kind: "cuda", GPU: 0, GPUPCI: "0000:81:00.0", Selected: "first",
			Path: "dmabuf", NUMANIC: -1, NUMAGPU: -1,
			TopologyWhy: "no GPU is nearest: the NIC's place is unknown (RDMA device rxe0 has no PCI device: a software device on network interface dummy0, which has no PCI device); took the lowest ordinal"}},
		{"no sysfs", nil, MemorySpec{Kind: bw.MemoryCUDA, Ordinal: 1}, "mlx5_0", bw.Memory{Kind: "cuda", GPU: 1, GPUPCI: "0000:03:00.0", Selected: "ordinal",
			Path: "dmabuf", NUMANIC: -1, NUMAGPU: -1, TopologyWhy: "the NIC's place is unknown: sysfs root /nonexistent is not a readable directory"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := gpuDeps{alloc: &fakeGPUs{gpus: twoGPUs(true)}, reg: &fakeReg{}, topo: c.topo}
			if c.topo == nil {
				d.topoErr = errors.New("sysfs root /nonexistent is not a readable directory")
			}
			_, _, mem, err := gpuMemory(d, c.spec, c.ibdev, 1<<20, access)
			if err != nil {
				t.Fatal(err)
			}
			mem.GPUName = ""
			if mem != c.want {
				t.Fatalf("memory %+v\nwant   %+v", mem, c.want)
			}
		})
	}
}

func TestParseMemory(t *testing.T) {
	for in, want := range map[string]string{"": "host", "host": "host", "cuda": "cuda:auto", "CUDA:auto": "cuda:auto", "cuda:0": "cuda:0", "cuda:7": "cuda:7"} {
		m, err := ParseMemory(in)
		if err != nil || m.String() != want {
			t.Errorf("%q: %v %v, want %s", in, m, err, want)
		}
	}
	for _, bad := range []string{"gpu", "cuda:", "cuda:-1", "cuda:x", "cuda:0,1", "hostmem", "rocm:0"} {
		_, err := ParseMemory(bad)
		if err == nil || !errors.Is(err, bw.ErrUsage) || !strings.Contains(err.Error(), "cuda:<ordinal>") {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

// Host memory prints as {"kind":"host"}; GPU memory with every field,
// zero values included (GPU 0, NUMA node 0, not cross-socket).
func TestMemoryJSON(t *testing.T) {
	b, err := json.Marshal(bw.RailResult{Runs: []bw.Report{}, Memory: &bw.Memory{Kind: bw.MemoryHost, GPU: 3}})
	if err != nil || !strings.Contains(string(b), `"memory":{"kind":"host"}`) {
		t.Fatalf("host: %s %v", b, err)
	}
	m := bw.Memory{Kind: bw.MemoryCUDA, GPU: 0, GPUName: "NVIDIA H100", GPUPCI: "0000:1b:00.0", Selected: "nearest", Path: bw.PathPeermem,
		Why: "dma-buf: x", Topology: "PIX", NICPCI: "0000:1a:00.0", NUMANIC: 0, NUMAGPU: 0}
	b, err = json.Marshal(m)
	want := `{"kind":"cuda","gpu":0,"gpuName":"NVIDIA H100","gpuPCI":"0000:1b:00.0","selected":"nearest","path":"peermem","why":"dma-buf: x",` +
		`"topology":"PIX","crossSocket":false,"nicPCI":"0000:1a:00.0","numaNIC":0,"numaGPU":0}`
	if err != nil || string(b) != want {
		t.Fatalf("cuda:\n%s\nwant\n%s", b, want)
	}
	var back bw.Memory
	if err := json.Unmarshal(b, &back); err != nil || back != m {
		t.Fatalf("round trip: %+v %v", back, err)
	}
}

// The CPU never reads or writes the test buffer: with it on a GPU that
// would fault. verbs.MR.Bytes refuses external memory; this keeps the
// bandwidth code from reaching for it at all.
func TestNoHostAccessToTheBuffer(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		file, err := parser.ParseFile(fset, f, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(file, func(n ast.Node) bool {
			// x.Bytes() with no argument: MR.Bytes (units.Bytes takes one).
			if call, ok := n.(*ast.CallExpr); ok && len(call.Args) == 0 {
				if sel, ok := call.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "Bytes" {
					t.Errorf("%s: .Bytes() in the bandwidth path: the buffer may be GPU memory", fset.Position(sel.Pos()))
				}
			}
			return true
		})
	}
}

// An allocator error that already names the fix gets no second copy.
func TestNoGPUFixOnce(t *testing.T) {
	own := bw.Tag(bw.ErrNoGPU, errors.New("no CUDA driver: libcuda.so.1 could not be loaded: run on a GPU node …, and request nvidia.com/gpu"))
	_, _, _, err := gpuMemory(gpuDeps{alloc: &fakeGPUs{listErr: own}, topo: twoSocketNode(), reg: &fakeReg{}}, auto(), "mlx5_0", 1<<20, access)
	if n := strings.Count(err.Error(), "request nvidia.com/gpu"); n != 1 || !errors.Is(err, bw.ErrNoGPU) {
		t.Fatalf("fix %d times: %v", n, err)
	}
}
