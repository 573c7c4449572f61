package bwverbs

import (
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"strings"

	"github.com/rdmasuite/rdmasuite/workloads/bw"
	"github.com/rdmasuite/rdmasuite/workloads/gputopo"
	"github.com/rdmasuite/rdmasuite/workloads/units"
	"github.com/rdmasuite/rdmasuite/workloads/verbs"
)

// GPUAllocator hands out GPU memory for the bandwidth buffer (perftest's
// --use_cuda). bwverbs never imports CUDA itself: cmd/rdmaprobe implements
// this over workloads/cuda. Errors meaning "no CUDA driver / no device
// here" should match bw.ErrNoGPU (bw.Tag), so the rail is reported as a
// not-run naming what is missing.
type GPUAllocator interface {
	GPUs() ([]GPUInfo, error)
	Alloc(ordinal int, size int) (GPUBuffer, error)
}

// GPUInfo is one GPU as the CUDA driver lists it.
type GPUInfo struct {
	Ordinal         int
	Name            string
	PCIBusID        string // as cuDeviceGetPCIBusId prints it, e.g. 0000:1B:00.0
	DmaBufSupported bool   // CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED
}

// GPUBuffer is device memory from a GPUAllocator. DmaBufFD exports it as
// a dma-buf; the buffer owns that fd (repeated calls may return the same
// one) and closes it in Close, which also frees the memory. Close is
// called after the memory region over it was deregistered, possibly on
// another OS thread than Alloc: it makes its own CUDA context current.
// Alloc, DmaBufFD and the registration run with the OS thread locked, so
// a context Alloc made current stays current for them.
type GPUBuffer interface {
	Ptr() uintptr
	DmaBufFD() (int, error)
	Close() error
}

// MemorySpec is a parsed --mem value.
type MemorySpec struct {
	Kind    string // bw.MemoryHost or bw.MemoryCUDA
	Auto    bool   // cuda: the GPU nearest the rail's NIC
	Ordinal int    // cuda without Auto: this CUDA ordinal
}

func (m MemorySpec) String() string {
	switch {
	case m.Kind != bw.MemoryCUDA:
		return bw.MemoryHost
	case m.Auto:
		return "cuda:auto"
	}
	return "cuda:" + strconv.Itoa(m.Ordinal)
}

// ParseMemory reads where the buffer lives: "host" (or ""), "cuda" or
// "cuda:auto" (the GPU nearest each rail's NIC, as nvidia-smi topo -m
// ranks them), or "cuda:<ordinal>". Errors match bw.ErrUsage.
func ParseMemory(s string) (MemorySpec, error) {
	v := strings.TrimSpace(strings.ToLower(s))
	switch v {
	case "", bw.MemoryHost:
		return MemorySpec{Kind: bw.MemoryHost}, nil
	case bw.MemoryCUDA, "cuda:auto":
		return MemorySpec{Kind: bw.MemoryCUDA, Auto: true}, nil
	}
	if rest, ok := strings.CutPrefix(v, "cuda:"); ok {
		n, err := strconv.Atoi(rest)
		if err == nil && n >= 0 {
			return MemorySpec{Kind: bw.MemoryCUDA, Ordinal: n}, nil
		}
	}
	return MemorySpec{}, bw.Tag(bw.ErrUsage, fmt.Errorf("memory %q: want host, cuda (= cuda:auto, the GPU nearest the rail), cuda:auto or cuda:<ordinal>", s))
}

// FixNoGPU is what a pod needs for --mem cuda.
const FixNoGPU = "request nvidia.com/gpu and use an image with the NVIDIA driver injected (the NVIDIA container toolkit / GPU operator mounts libcuda.so.1)"

// FixGPUDirect is what makes one of the GPUDirect RDMA paths work.
const FixGPUDirect = "load nvidia_peermem (GPU operator: driver.rdma.enabled=true; with MOFED it must load after the MOFED driver is ready), " +
	"or use dma-buf: Linux ≥ 5.12, the open NVIDIA kernel modules, CUDA ≥ 11.7 and an HCA driver with dma-buf support (mlx5)"

// withNoGPUFix adds FixNoGPU to an allocator's no-GPU error unless the
// error already tells the pod to request nvidia.com/gpu (the CUDA
// loader's errors do): one fix, not the same one twice.
func withNoGPUFix(err error) error {
	if strings.Contains(err.Error(), "request nvidia.com/gpu") {
		return err
	}
	return fmt.Errorf("%w: %s", err, FixNoGPU)
}

// gpuPage is the granularity GPU buffers are allocated and registered in:
// a dma-buf export needs host-page alignment, nvidia_peermem pins 64 KiB
// GPU pages.
const gpuPage = 64 << 10

// registrar is the part of a PD that registers memory it did not allocate
// (*verbs.PD); tests fake it.
type registrar interface {
	RegDmabufMR(fd int, offset uint64, size int, iova uint64, access verbs.Access) (*verbs.MR, error)
	RegExternalMR(addr uintptr, size int, access verbs.Access) (*verbs.MR, error)
}

// gpuTopology is where GPUs and NICs sit on the PCIe tree
// (*gputopo.Sysfs); tests fake it.
type gpuTopology interface {
	RDMADevice(ibdev string) (gputopo.PCIDevice, error)
	Device(pciAddr string) (gputopo.PCIDevice, error)
}

// gpuDeps are what GPU memory setup goes through.
type gpuDeps struct {
	alloc   GPUAllocator
	topo    gpuTopology // nil: topology unknown (topoErr says why)
	topoErr error
	reg     registrar
}

// gpuMemory puts the test buffer (size bytes, rounded up to GPU pages) on
// a GPU for the RDMA device ibdev and registers it for GPUDirect RDMA:
// the GPU is spec's ordinal, or the one nearest ibdev's PCI function; the
// registration tries dma-buf first, then peer memory. The returned Memory
// records the choice, the topology and which path worked and why the
// other did not; it is filled as far as setup got, also on error (Kind
// is "" when no GPU was chosen). The CPU never touches the buffer.
func gpuMemory(d gpuDeps, spec MemorySpec, ibdev string, size int, access verbs.Access) (*verbs.MR, GPUBuffer, bw.Memory, error) {
	if d.alloc == nil {
		return nil, nil, bw.Memory{}, bw.Tag(bw.ErrNoGPU, fmt.Errorf("--mem %s: this rdmaprobe has no CUDA driver to allocate GPU memory with: %s", spec, FixNoGPU))
	}
	gpus, err := d.alloc.GPUs()
	if err != nil {
		if errors.Is(err, bw.ErrNoGPU) {
			return nil, nil, bw.Memory{}, bw.Tag(bw.ErrNoGPU, fmt.Errorf("--mem %s: %w", spec, withNoGPUFix(err)))
		}
		return nil, nil, bw.Memory{}, fmt.Errorf("--mem %s: listing GPUs: %w", spec, err)
	}
	if len(gpus) == 0 {
		return nil, nil, bw.Memory{}, bw.Tag(bw.ErrNoGPU, fmt.Errorf("--mem %s: the CUDA driver lists no GPU in this pod: %s", spec, FixNoGPU))
	}
	gpu, mem, err := chooseGPU(d, spec, ibdev, gpus)
	if err != nil {
		return nil, nil, bw.Memory{}, err
	}
	size = (size + gpuPage - 1) / gpuPage * gpuPage
	where := fmt.Sprintf("%s on GPU %d (%s, %s) for %s", units.Bytes(int64(size)), gpu.Ordinal, gpu.Name, gpu.PCIBusID, ibdev)

	// The CUDA context is current per OS thread: allocation, export and
	// registration stay on one (the HCA does the DMA afterwards; the C
	// loop needs no context).
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	buf, err := d.alloc.Alloc(gpu.Ordinal, size)
	if err != nil {
		if errors.Is(err, bw.ErrNoGPU) {
			err = bw.Tag(bw.ErrNoGPU, withNoGPUFix(err))
		}
		return nil, nil, mem, fmt.Errorf("allocating %s: %w", where, err)
	}
	iova := uint64(buf.Ptr())
	var whyDmabuf string
	fd, ferr := -1, error(nil)
	if gpu.DmaBufSupported {
		fd, ferr = buf.DmaBufFD()
	}
	switch {
	case !gpu.DmaBufSupported:
		whyDmabuf = fmt.Sprintf("dma-buf: GPU %d reports no dma-buf support (CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED = 0: needs the open NVIDIA kernel modules, CUDA ≥ 11.7, Linux ≥ 5.12)", gpu.Ordinal)
	case ferr != nil:
		whyDmabuf = "dma-buf: exporting the GPU buffer failed: " + ferr.Error()
	default:
		mr, rerr := d.reg.RegDmabufMR(fd, 0, size, iova, access)
		if rerr == nil {
			mem.Path = bw.PathDmabuf
			return mr, buf, mem, nil
		}
		whyDmabuf = "dma-buf: " + rerr.Error()
		if errors.Is(rerr, verbs.ErrDmabufUnsupported) {
			whyDmabuf += " (the HCA driver, kernel or rdma-core cannot register dma-buf memory)"
		}
	}
	mr, perr := d.reg.RegExternalMR(buf.Ptr(), size, access)
	if perr == nil {
		mem.Path, mem.Why = bw.PathPeermem, whyDmabuf
		return mr, buf, mem, nil
	}
	whyPeer := "peer memory: " + perr.Error()
	if errors.Is(perr, verbs.ErrPeerMemMissing) {
		whyPeer += " (no peer-memory client claimed the GPU pointer: is nvidia_peermem loaded?)"
	}
	mem.Why = whyDmabuf + "; " + whyPeer
	if cerr := buf.Close(); cerr != nil {
		mem.Why += "; freeing the GPU buffer: " + cerr.Error()
	}
	return nil, nil, mem, bw.Tag(bw.ErrGPUDirect, fmt.Errorf("GPUDirect RDMA: neither path registers %s: %s; fix: %s", where, mem.Why, FixGPUDirect))
}

// chooseGPU picks the GPU (spec's ordinal, or the one nearest ibdev) and
// fills in what the topology says about the pair; an unreadable topology
// is recorded, never fatal (with cuda:auto the lowest ordinal is used).
func chooseGPU(d gpuDeps, spec MemorySpec, ibdev string, gpus []GPUInfo) (GPUInfo, bw.Memory, error) {
	mem := bw.Memory{Kind: bw.MemoryCUDA, NUMANIC: -1, NUMAGPU: -1}
	var nic gputopo.PCIDevice
	nicErr := d.topoErr
	if d.topo == nil && nicErr == nil {
		nicErr = errors.New("no sysfs view")
	}
	if d.topo != nil {
		nic, nicErr = d.topo.RDMADevice(ibdev)
	}
	if nicErr == nil {
		mem.NICPCI, mem.NUMANIC = nic.Address, nic.NUMANode
	}
	// Every GPU CUDA lists, placed on the PCIe tree where sysfs has it.
	placed := map[string]GPUInfo{}
	var cands []gputopo.GPU
	var unplaced []string
	for _, g := range gpus {
		if d.topo == nil {
			break
		}
		addr, err := gputopo.NormalizeAddress(g.PCIBusID)
		if err == nil {
			var dev gputopo.PCIDevice
			if dev, err = d.topo.Device(addr); err == nil {
				placed[dev.Address] = g
				cands = append(cands, gputopo.GPU{PCIDevice: dev})
				continue
			}
		}
		unplaced = append(unplaced, fmt.Sprintf("GPU %d (%q): %v", g.Ordinal, g.PCIBusID, err))
	}
	var gpu GPUInfo
	if spec.Auto {
		mem.Selected = "nearest"
		switch {
		case nicErr != nil:
			mem.Selected = "first"
			mem.TopologyWhy = fmt.Sprintf("no GPU is nearest: the NIC's place is unknown (%v); took the lowest ordinal", nicErr)
		case len(cands) == 0:
			mem.Selected = "first"
			mem.TopologyWhy = fmt.Sprintf("no GPU is nearest: none of the CUDA GPUs was found in sysfs (%s); took the lowest ordinal", strings.Join(unplaced, "; "))
		}
		if mem.Selected == "first" {
			gpu = gpus[0]
			for _, g := range gpus[1:] {
				if g.Ordinal < gpu.Ordinal {
					gpu = g
				}
			}
		} else {
			best, _, err := gputopo.NearestTo(nic, cands)
			if err != nil {
				return GPUInfo{}, mem, err
			}
			gpu = placed[best.Address]
		}
	} else {
		mem.Selected = "ordinal"
		found := false
		var seen []string
		for _, g := range gpus {
			seen = append(seen, strconv.Itoa(g.Ordinal))
			if g.Ordinal == spec.Ordinal {
				gpu, found = g, true
			}
		}
		if !found {
			return GPUInfo{}, bw.Memory{}, bw.Tag(bw.ErrNoGPU, fmt.Errorf("--mem %s: this pod sees CUDA ordinals %s only (how many nvidia.com/gpu it requested, CUDA_VISIBLE_DEVICES): %s",
				spec, strings.Join(seen, ", "), FixNoGPU))
		}
	}
	mem.GPU, mem.GPUName, mem.GPUPCI = gpu.Ordinal, gpu.Name, gpu.PCIBusID
	if a, err := gputopo.NormalizeAddress(gpu.PCIBusID); err == nil {
		mem.GPUPCI = a
	}
	if mem.TopologyWhy != "" {
		return gpu, mem, nil
	}
	var gdev *gputopo.PCIDevice
	for i := range cands {
		if cands[i].Address == mem.GPUPCI {
			gdev = &cands[i].PCIDevice
		}
	}
	switch {
	case nicErr != nil:
		mem.TopologyWhy = fmt.Sprintf("the NIC's place is unknown: %v", nicErr)
	case gdev == nil:
		mem.TopologyWhy = fmt.Sprintf("GPU %d (%s) was not found in sysfs", gpu.Ordinal, gpu.PCIBusID)
	default:
		rel := gputopo.Classify(nic, *gdev)
		mem.Topology, mem.CrossSocket, mem.NUMAGPU = string(rel.Level), rel.CrossSocket, rel.NUMAGPU
		if rel.Level == gputopo.SYS {
			mem.TopologyWhy = rel.Why
		}
	}
	return gpu, mem, nil
}
