// Package gpucheck proves, on a machine with a CUDA driver but no RDMA
// device, the parts of the GPU path that can be proved there: the CUDA
// driver found and initialised through the probe's own loader, every GPU
// listed, device memory allocated, written and read back, that memory
// exported as a dma-buf (the handle GPUDirect RDMA registers without
// nvidia_peermem) or the driver's exact reason, and every CUDA GPU found on
// the PCI bus by the topology probe. It is what `rdmaprobe gpu` runs
// (hack/gpu-device-check.sh); the driver is an interface so that the
// judgement is tested without a GPU.
package gpucheck

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"syscall"

	"github.com/rdmasuite/rdmasuite/workloads/cuda"
	"github.com/rdmasuite/rdmasuite/workloads/gputopo"
	"github.com/rdmasuite/rdmasuite/workloads/nccl"
	"github.com/rdmasuite/rdmasuite/workloads/units"
)

// Driver is the CUDA driver as the check uses it (cuda.Driver through an
// adapter in cmd/rdmaprobe).
type Driver interface {
	Path() string
	Version() (int, error)
	Devices() ([]cuda.Device, error)
	// Open makes a context current on the calling (locked) OS thread.
	Open(dev cuda.Device) (Context, error)
}

// Context is one GPU's context (cuda.Context's methods).
type Context interface {
	Alloc(size int) (cuda.DevicePtr, error)
	Free(p cuda.DevicePtr) error
	Memset8(p cuda.DevicePtr, v byte, n int) error
	CopyDtoH(dst []byte, src cuda.DevicePtr) error
	DmaBufFD(p cuda.DevicePtr, size int) (int, error)
	Close() error
}

// Status of one proof.
type Status string

const (
	Pass Status = "pass"
	Fail Status = "fail"
	// Refused: the driver declined with a reason that is a fact about this
	// machine, not a fault of the probe (dma-buf export on a GPU whose
	// driver says it does not support it).
	Refused Status = "refused"
)

// Proof is one line of the check.
type Proof struct {
	Name   string `json:"name"`
	Status Status `json:"status"`
	Detail string `json:"detail"`
}

// GPU is what the check learnt about one CUDA device.
type GPU struct {
	Ordinal         int    `json:"ordinal"`
	Name            string `json:"name"`
	PCIBusID        string `json:"pciBusId"`
	MemoryBytes     int64  `json:"memoryBytes"`
	DmaBufSupported bool   `json:"dmaBufSupported"`
	NUMANode        *int   `json:"numaNode,omitempty"` // from sysfs, when found there
}

// Report is `rdmaprobe gpu`'s result.
type Report struct {
	Library    string  `json:"library,omitempty"`
	CUDADriver string  `json:"cudaDriver,omitempty"`
	GPUs       []GPU   `json:"gpus"`
	Proofs     []Proof `json:"proofs"`
}

// Failed reports whether any proof failed.
func (r Report) Failed() bool {
	return slices.ContainsFunc(r.Proofs, func(p Proof) bool { return p.Status == Fail })
}

// Config sizes the check.
type Config struct {
	Bytes int // device memory per GPU (a multiple of the host page size)
	// PCIGPUs is the topology probe's view of the bus (gputopo.Sysfs.GPUs),
	// PCIErr why it could not be read.
	PCIGPUs []gputopo.GPU
	PCIErr  error
}

// ErrNoGPU is matched when the machine has no usable CUDA driver or GPU:
// nothing here can be proved (a not-run, not a failure of the probe).
var ErrNoGPU = errors.New("no GPU path to prove on this machine")

// Run runs every proof. It returns ErrNoGPU (wrapped, with the loader's
// reason) when there is nothing to prove on; the report still holds the
// proofs that ran. The caller locks the OS thread (a CUDA context is per
// thread).
func Run(load func() (Driver, error), cfg Config) (Report, error) {
	rep := Report{GPUs: []GPU{}, Proofs: []Proof{}}
	add := func(name string, st Status, format string, a ...any) {
		rep.Proofs = append(rep.Proofs, Proof{Name: name, Status: st, Detail: fmt.Sprintf(format, a...)})
	}
	d, err := load()
	if err != nil {
		add("cuda-driver", Fail, "%v", err)
		return rep, fmt.Errorf("%w: %v", ErrNoGPU, err)
	}
	rep.Library = d.Path()
	v, err := d.Version()
	if err != nil {
		add("cuda-driver", Fail, "%s loaded, cuDriverGetVersion: %v", d.Path(), err)
		return rep, nil
	}
	rep.CUDADriver = cuda.VersionString(v)
	devs, err := d.Devices()
	switch {
	case err != nil:
		add("cuda-driver", Fail, "%s (CUDA %s): listing GPUs: %v", d.Path(), rep.CUDADriver, err)
		return rep, nil
	case len(devs) == 0:
		add("cuda-driver", Fail, "%s (CUDA %s) lists no GPU", d.Path(), rep.CUDADriver)
		return rep, fmt.Errorf("%w: the driver lists no GPU", ErrNoGPU)
	}
	names := make([]string, len(devs))
	for i, dev := range devs {
		names[i] = fmt.Sprintf("%d %s [%s] %s", dev.Ordinal, dev.Name, dev.PCIBusID, units.Bytes(dev.MemoryBytes))
		rep.GPUs = append(rep.GPUs, GPU{Ordinal: dev.Ordinal, Name: dev.Name, PCIBusID: dev.PCIBusID,
			MemoryBytes: dev.MemoryBytes, DmaBufSupported: dev.DmaBufSupported})
	}
	add("cuda-driver", Pass, "%s, CUDA driver %s, %d GPU(s): %s", d.Path(), rep.CUDADriver, len(devs), strings.Join(names, "; "))
	for i, dev := range devs {
		memoryProofs(d, dev, cfg.Bytes, add)
		topologyProof(&rep.GPUs[i], cfg, add)
	}
	return rep, nil
}

// memoryProofs allocates, writes, reads back and exports one GPU's memory.
func memoryProofs(d Driver, dev cuda.Device, size int, add func(string, Status, string, ...any)) {
	tag := fmt.Sprintf("gpu%d", dev.Ordinal)
	ctx, err := d.Open(dev)
	if err != nil {
		add(tag+"/alloc", Fail, "creating a context on %s [%s]: %v", dev.Name, dev.PCIBusID, err)
		return
	}
	defer ctx.Close()
	p, err := ctx.Alloc(size)
	if err != nil {
		add(tag+"/alloc", Fail, "cuMemAlloc %s on %s: %v", units.Bytes(int64(size)), dev.Name, err)
		return
	}
	defer ctx.Free(p)
	const pattern = 0xa5
	back := make([]byte, size)
	if err := ctx.Memset8(p, pattern, size); err != nil {
		add(tag+"/alloc", Fail, "cuMemsetD8 on %s of device memory: %v", units.Bytes(int64(size)), err)
		return
	}
	if err := ctx.CopyDtoH(back, p); err != nil {
		add(tag+"/alloc", Fail, "cuMemcpyDtoH of %s: %v", units.Bytes(int64(size)), err)
		return
	}
	if i := slices.IndexFunc(back, func(b byte) bool { return b != pattern }); i >= 0 {
		add(tag+"/alloc", Fail, "%s allocated and set to 0x%02x, but byte %d reads back 0x%02x", units.Bytes(int64(size)), pattern, i, back[i])
		return
	}
	add(tag+"/alloc", Pass, "%s of device memory allocated at 0x%x, set to 0x%02x and read back intact", units.Bytes(int64(size)), uintptr(p), pattern)

	fd, err := ctx.DmaBufFD(p, size)
	switch {
	case err == nil && fd >= 0:
		add(tag+"/dmabuf", Pass, "cuMemGetHandleForAddressRange exported %s as dma-buf fd %d (what ibv_reg_dmabuf_mr registers; nvidia_peermem not needed)", units.Bytes(int64(size)), fd)
		closeFD(fd)
	case err == nil:
		add(tag+"/dmabuf", Fail, "cuMemGetHandleForAddressRange returned success with fd %d", fd)
	case !dev.DmaBufSupported:
		add(tag+"/dmabuf", Refused, "the driver says %s does not support dma-buf (CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED = 0; the open kernel modules and CUDA 11.7+ are needed), and the export says why: %v", dev.Name, err)
	default:
		add(tag+"/dmabuf", Fail, "the driver says %s supports dma-buf, yet exporting %s failed: %v", dev.Name, units.Bytes(int64(size)), err)
	}
}

// topologyProof finds a CUDA GPU on the PCI bus as the topology probe
// reads it (what matches a GPU to its nearest NIC).
func topologyProof(g *GPU, cfg Config, add func(string, Status, string, ...any)) {
	tag := fmt.Sprintf("gpu%d/topology", g.Ordinal)
	if cfg.PCIErr != nil {
		add(tag, Fail, "reading the PCI bus: %v", cfg.PCIErr)
		return
	}
	want, err := gputopo.NormalizeAddress(g.PCIBusID)
	if err != nil {
		add(tag, Fail, "CUDA's PCI bus id %q: %v", g.PCIBusID, err)
		return
	}
	addrs := make([]string, len(cfg.PCIGPUs))
	for i, pg := range cfg.PCIGPUs {
		addrs[i] = pg.Address
		if pg.Address == want {
			n := pg.NUMANode
			g.NUMANode = &n
			numa := fmt.Sprintf("NUMA node %d", n)
			if n < 0 {
				// sysfs numa_node -1: the firmware gave none (a VM, a
				// one-node machine); the topology probe reads it so.
				numa = "NUMA node unknown (sysfs -1)"
			}
			add(tag, Pass, "%s found on the PCI bus at %s (%s, host bridge %s, %d bridge(s) above it)", g.Name, pg.Path, numa, pg.HostBridge(), len(pg.Bridges()))
			return
		}
	}
	add(tag, Fail, "CUDA lists %s at %s, but the topology probe finds NVIDIA GPUs only at [%s] on the PCI bus", g.Name, want, strings.Join(addrs, ", "))
}

// closeFD closes an exported dma-buf: the check only proves it exists.
func closeFD(fd int) { _ = syscall.Close(fd) }

// NCCLLogProof judges an NCCL_DEBUG=INFO log (of `rdmaprobe nccl` on this
// machine) as the suite's transport parser reads it: NCCL lines, NCCL's
// version (the library's own, when wantVersion is given) and what it says
// about the networks it found.
func NCCLLogProof(f nccl.LogFacts, wantVersion string) Proof {
	p := Proof{Name: "nccl-log", Status: Fail}
	switch {
	case f.Lines == 0:
		p.Detail = "no NCCL line in the log: was NCCL_DEBUG=INFO set for the run?"
	case f.Version == "":
		p.Detail = fmt.Sprintf("%d NCCL lines, none with \"NCCL version\": the parser cannot tell the version", f.Lines)
	case wantVersion != "" && !strings.HasPrefix(f.Version, wantVersion):
		p.Detail = fmt.Sprintf("the log says NCCL %s, the library loaded says %s", f.Version, wantVersion)
	default:
		p.Status = Pass
		nets := make([]string, 0, len(f.Networks))
		for n, c := range f.Networks {
			nets = append(nets, fmt.Sprintf("%s×%d", n, c))
		}
		slices.Sort(nets)
		p.Detail = fmt.Sprintf("%d NCCL lines read: NCCL %s; networks [%s]; IB devices %d (no device line: %t, libibverbs missing: %t); %d NET connection(s), %d over GPUDirect RDMA",
			f.Lines, f.Version, strings.Join(nets, ", "), len(f.IBDevices), f.IBNoDevice, f.IBVerbsMissing, f.NetConnections, f.GDRConnections)
	}
	return p
}
