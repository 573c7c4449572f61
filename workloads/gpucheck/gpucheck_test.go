package gpucheck

import (
	"errors"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/rdmasuite/rdmasuite/workloads/cuda"
	"github.com/rdmasuite/rdmasuite/workloads/gputopo"
	"github.com/rdmasuite/rdmasuite/workloads/nccl"
)

// fakeDriver is a CUDA driver whose GPUs keep their memory in host slices.
type fakeDriver struct {
	devs     []cuda.Device
	listErr  error
	openErr  error
	allocErr error
	corrupt  bool  // the read-back differs from what was written
	dmabuf   error // the export's error; nil exports a real pipe fd
	exported []int
}

func (d *fakeDriver) Path() string                    { return "/usr/lib/x86_64-linux-gnu/libcuda.so.1" }
func (d *fakeDriver) Version() (int, error)           { return 12080, nil }
func (d *fakeDriver) Devices() ([]cuda.Device, error) { return d.devs, d.listErr }
func (d *fakeDriver) Open(cuda.Device) (Context, error) {
	if d.openErr != nil {
		return nil, d.openErr
	}
	return &fakeContext{d: d, mem: map[cuda.DevicePtr][]byte{}}, nil
}

type fakeContext struct {
	d    *fakeDriver
	mem  map[cuda.DevicePtr][]byte
	next cuda.DevicePtr
}

func (c *fakeContext) Alloc(n int) (cuda.DevicePtr, error) {
	if c.d.allocErr != nil {
		return 0, c.d.allocErr
	}
	c.next += 0x200000
	c.mem[c.next] = make([]byte, n)
	return c.next, nil
}
func (c *fakeContext) Free(p cuda.DevicePtr) error { delete(c.mem, p); return nil }
func (c *fakeContext) Memset8(p cuda.DevicePtr, v byte, n int) error {
	for i := range c.mem[p][:n] {
		c.mem[p][i] = v
	}
	return nil
}
func (c *fakeContext) CopyDtoH(dst []byte, src cuda.DevicePtr) error {
	copy(dst, c.mem[src])
	if c.d.corrupt {
		dst[len(dst)-1] ^= 0xff
	}
	return nil
}
func (c *fakeContext) DmaBufFD(cuda.DevicePtr, int) (int, error) {
	if c.d.dmabuf != nil {
		return -1, c.d.dmabuf
	}
	r, w, err := os.Pipe()
	if err != nil {
		return -1, err
	}
	w.Close()
	fd, err := dupFD(r)
	r.Close()
	c.d.exported = append(c.d.exported, fd)
	return fd, err
}
func (c *fakeContext) Close() error { return nil }

func h100(ordinal int, bus string, dmabuf bool) cuda.Device {
	return cuda.Device{Ordinal: ordinal, Name: "NVIDIA H100 80GB HBM3", PCIBusID: bus, DmaBufSupported: dmabuf, MemoryBytes: 80 << 30}
}

func pciGPU(addr string, numa int) gputopo.GPU {
	return gputopo.GPU{PCIDevice: gputopo.PCIDevice{Address: addr, NUMANode: numa,
		Path: "/sys/devices/pci0000:18/0000:18:01.0/" + addr}, Device: "0x2330", Class: "0x030200"}
}

func statuses(r Report) string {
	var b strings.Builder
	for _, p := range r.Proofs {
		b.WriteString(p.Name + "=" + string(p.Status) + " ")
	}
	return strings.TrimSpace(b.String())
}

func run(t *testing.T, d *fakeDriver, cfg Config) (Report, error) {
	t.Helper()
	if cfg.Bytes == 0 {
		cfg.Bytes = 1 << 20
	}
	return Run(func() (Driver, error) { return d, nil }, cfg)
}

func TestEveryProofPassesOnAWorkingGPU(t *testing.T) {
	d := &fakeDriver{devs: []cuda.Device{h100(0, "0000:19:00.0", true)}}
	rep, err := run(t, d, Config{PCIGPUs: []gputopo.GPU{pciGPU("0000:19:00.0", 0)}})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := statuses(rep), "cuda-driver=pass gpu0/alloc=pass gpu0/dmabuf=pass gpu0/topology=pass"; got != want {
		t.Fatalf("proofs %s, want %s", got, want)
	}
	if rep.Failed() || rep.CUDADriver != "12.8" || rep.GPUs[0].NUMANode == nil || *rep.GPUs[0].NUMANode != 0 {
		t.Fatalf("report %+v", rep)
	}
	if len(d.exported) != 1 {
		t.Fatalf("exported %v", d.exported)
	}
	if p := rep.Proofs[3]; !strings.Contains(p.Detail, "(NUMA node 0,") {
		t.Errorf("topology detail %q", p.Detail)
	}
	// The H200 VM of the first GPU run: sysfs numa_node -1.
	rep, err = run(t, &fakeDriver{devs: []cuda.Device{h100(0, "0000:19:00.0", true)}}, Config{PCIGPUs: []gputopo.GPU{pciGPU("0000:19:00.0", -1)}})
	if err != nil || rep.Failed() || !strings.Contains(rep.Proofs[3].Detail, "(NUMA node unknown (sysfs -1),") {
		t.Errorf("NUMA -1: %v %+v", err, rep.Proofs)
	}
}

// A figure the check cannot trust, or a step that did not happen, fails.
func TestBrokenOrMissingStepsFail(t *testing.T) {
	bus := "0000:19:00.0"
	pci := []gputopo.GPU{pciGPU(bus, 1)}
	for name, tc := range map[string]struct {
		d     *fakeDriver
		cfg   Config
		fail  string // the proof that must fail
		words string // in its detail
	}{
		"memory reads back wrong":  {&fakeDriver{devs: []cuda.Device{h100(0, bus, true)}, corrupt: true}, Config{PCIGPUs: pci}, "gpu0/alloc", "reads back"},
		"allocation refused":       {&fakeDriver{devs: []cuda.Device{h100(0, bus, true)}, allocErr: errors.New("cuMemAlloc: CUDA_ERROR_OUT_OF_MEMORY")}, Config{PCIGPUs: pci}, "gpu0/alloc", "OUT_OF_MEMORY"},
		"no context":               {&fakeDriver{devs: []cuda.Device{h100(0, bus, true)}, openErr: errors.New("cuCtxCreate: CUDA_ERROR_DEVICES_UNAVAILABLE")}, Config{PCIGPUs: pci}, "gpu0/alloc", "DEVICES_UNAVAILABLE"},
		"dma-buf claimed, refused": {&fakeDriver{devs: []cuda.Device{h100(0, bus, true)}, dmabuf: errors.New("CUDA_ERROR_NOT_SUPPORTED")}, Config{PCIGPUs: pci}, "gpu0/dmabuf", "supports dma-buf, yet"},
		"GPU not on the bus":       {&fakeDriver{devs: []cuda.Device{h100(0, bus, true)}}, Config{PCIGPUs: []gputopo.GPU{pciGPU("0000:3b:00.0", 0)}}, "gpu0/topology", "only at [0000:3b:00.0]"},
		"bus unreadable":           {&fakeDriver{devs: []cuda.Device{h100(0, bus, true)}}, Config{PCIErr: errors.New("/sys/bus/pci/devices: no such file")}, "gpu0/topology", "reading the PCI bus"},
		"driver cannot list GPUs":  {&fakeDriver{listErr: errors.New("cuDeviceGetCount: CUDA_ERROR_UNKNOWN")}, Config{PCIGPUs: pci}, "cuda-driver", "CUDA_ERROR_UNKNOWN"},
	} {
		t.Run(name, func(t *testing.T) {
			rep, _ := run(t, tc.d, tc.cfg)
			if !rep.Failed() {
				t.Fatalf("nothing failed: %s", statuses(rep))
			}
			for _, p := range rep.Proofs {
				if p.Name == tc.fail {
					if p.Status != Fail || !strings.Contains(p.Detail, tc.words) {
						t.Fatalf("%s: %s %q, want fail with %q", p.Name, p.Status, p.Detail, tc.words)
					}
					return
				}
			}
			t.Fatalf("no proof %s in %s", tc.fail, statuses(rep))
		})
	}
}

// A driver that says it has no dma-buf support and refuses the export is
// a fact about the machine, reported with the driver's words, not a fault.
func TestDmaBufRefusedWhereUnsupportedIsNotAFailure(t *testing.T) {
	d := &fakeDriver{devs: []cuda.Device{h100(0, "0000:19:00.0", false)}, dmabuf: errors.New("cuMemGetHandleForAddressRange: CUDA_ERROR_NOT_SUPPORTED")}
	rep, err := run(t, d, Config{PCIGPUs: []gputopo.GPU{pciGPU("0000:19:00.0", 0)}})
	if err != nil || rep.Failed() {
		t.Fatalf("err %v, proofs %s", err, statuses(rep))
	}
	p := rep.Proofs[2]
	if p.Status != Refused || !strings.Contains(p.Detail, "CUDA_ERROR_NOT_SUPPORTED") {
		t.Fatalf("%+v", p)
	}
}

// No driver, or one that lists no GPU, is ErrNoGPU: nothing could be
// proved, which the caller reports as not run, never as a pass.
func TestNoDriverOrNoGPUIsNotRun(t *testing.T) {
	rep, err := Run(func() (Driver, error) { return nil, errors.New("libcuda.so.1: cannot open shared object file") }, Config{})
	if !errors.Is(err, ErrNoGPU) || !rep.Failed() || !strings.Contains(rep.Proofs[0].Detail, "libcuda.so.1") {
		t.Fatalf("err %v, report %+v", err, rep)
	}
	rep, err = run(t, &fakeDriver{}, Config{})
	if !errors.Is(err, ErrNoGPU) || !rep.Failed() {
		t.Fatalf("err %v, report %+v", err, rep)
	}
}

func TestEveryGPUIsChecked(t *testing.T) {
	d := &fakeDriver{devs: []cuda.Device{h100(0, "0000:19:00.0", true), h100(1, "0000:3B:00.0", true)}}
	rep, err := run(t, d, Config{PCIGPUs: []gputopo.GPU{pciGPU("0000:19:00.0", 0), pciGPU("0000:3b:00.0", 1)}})
	if err != nil || rep.Failed() || len(rep.Proofs) != 7 || *rep.GPUs[1].NUMANode != 1 {
		t.Fatalf("err %v, proofs %s", err, statuses(rep))
	}
}

// dupFD keeps a descriptor open after f is closed: the export's fd belongs
// to the check, which closes it.
func dupFD(f *os.File) (int, error) { return syscall.Dup(int(f.Fd())) }

// The NCCL log proof reads a real log as the suite's parser does, and
// fails on text that is no NCCL log or names another version.
func TestNCCLLogProof(t *testing.T) {
	f, err := os.Open("../nccl/testdata/log_socket_nodevice_941.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	facts, err := nccl.ParseNCCLLog(f)
	if err != nil {
		t.Fatal(err)
	}
	if p := NCCLLogProof(facts, "2.17.1"); p.Status != Pass || !strings.Contains(p.Detail, "NCCL 2.17.1+cuda12.1") {
		t.Fatalf("%+v", p)
	}
	if p := NCCLLogProof(facts, "2.21.5"); p.Status != Fail || !strings.Contains(p.Detail, "library loaded says 2.21.5") {
		t.Fatalf("%+v", p)
	}
	empty, _ := nccl.ParseNCCLLog(strings.NewReader("rdmaprobe: nothing here\n"))
	if p := NCCLLogProof(empty, ""); p.Status != Fail || !strings.Contains(p.Detail, "NCCL_DEBUG=INFO") {
		t.Fatalf("%+v", p)
	}
}
