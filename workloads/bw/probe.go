package bw

import (
	"encoding/json"
	"strconv"

	"github.com/rdmasuite/rdmasuite/workloads/probeout"
)

// ProbeName is the envelope name of `rdmaprobe bw`.
const ProbeName = "bw"

// AddressFromStdin is the client's HOST that reads the server's address as
// the first line of standard input: the suite starts a client pod beside
// its server, before the server has an IP, and hands the address over
// pods/attach once it has one (`rdmaprobe bw client … - <<< 10.0.0.7` by
// hand).
const AddressFromStdin = "-"

// Rail modes: how a client's rails are paired with the server's.
const (
	RailsSame  = "same"  // client rail i ↔ server rail i (the default: one rail, one switch plane)
	RailsCross = "cross" // every client rail ↔ every server rail
)

// ProbeOutput is what `rdmaprobe bw` prints, on the client and the server
// alike: the one type both the probe and the runner use. Requested is what
// the side was asked to cover; Rails holds one entry per (local rail, peer
// rail) session set, each with its runs (one per op) or its typed error.
// A rail that was asked for and has neither a run per op nor an error is
// missing, and the runner fails it.
type ProbeOutput struct {
	Role      string       `json:"role"` // client or server
	Requested Requested    `json:"requested"`
	Found     []Rail       `json:"found"` // every device/port the pod sees (or the one it was told to use)
	Rails     []RailResult `json:"rails"`
	// PodView is what the pod saw of the node's RDMA devices and of their
	// network-namespace isolation. Absent from older probes' output: a
	// reader treats that as "not observed", never as "nothing visible".
	PodView *PodView `json:"podView,omitempty"`
}

// RDMA netns modes as `rdma system show netns` names them.
const (
	NetnsShared    = "shared"    // every network namespace sees every RDMA device
	NetnsExclusive = "exclusive" // a device is visible only in the namespace it was moved to
)

// PodView is what one probe pod saw: the kernel's RDMA netns mode as read
// from the pod, and every RDMA device visible there, with whether the
// probe could open it (a pod may see devices whose /dev/infiniband/uverbs
// node it was not given).
type PodView struct {
	// NetnsMode is NetnsShared or NetnsExclusive, read over RDMA netlink;
	// "" when it could not be read, with the reason in NetnsModeError.
	NetnsMode      string `json:"netnsMode"`
	NetnsModeError string `json:"netnsModeError,omitempty"`
	// Devices are the RDMA devices under /sys/class/infiniband in the pod
	// (and any other libibverbs listed), sorted by name; empty when none is
	// visible. DevicesError is set when the list could not be read: the
	// list is then unknown, not empty.
	Devices      []VisibleDevice `json:"devices"`
	DevicesError string          `json:"devicesError,omitempty"`
}

// VisibleDevice is one RDMA device visible in the pod.
type VisibleDevice struct {
	Name      string `json:"name"`
	Netdev    string `json:"netdev,omitempty"` // the network interface behind port 1, if any
	Openable  bool   `json:"openable"`
	OpenError string `json:"openError,omitempty"` // why it could not be opened
}

// Requested is the coverage a side was asked for.
type Requested struct {
	Ops      []Op   `json:"ops"`
	Sizes    []int  `json:"sizes"`
	RailMode string `json:"railMode"`           // RailsSame or RailsCross
	Parallel bool   `json:"parallel,omitempty"` // rails measured at the same time
}

// Rail is one device port.
type Rail struct {
	Index     int     `json:"index"` // position in the side's sorted rail list
	Device    string  `json:"device"`
	Port      int     `json:"port"`
	State     string  `json:"state"` // ACTIVE, DOWN, … as ibstat prints it
	LinkLayer string  `json:"linkLayer,omitempty"`
	RateGbps  float64 `json:"rateGbps,omitempty"`
	Netdev    string  `json:"netdev,omitempty"`
}

// Name is device/port, the way reports name a port.
func (r Rail) Name() string { return r.Device + "/" + strconv.Itoa(r.Port) }

// RailResult is one local rail measured against one peer rail.
type RailResult struct {
	Local Rail            `json:"local"`
	Peer  *Rail           `json:"peer,omitempty"`
	Runs  []Report        `json:"runs"` // one per op, in request order; a run may hold fewer sizes than requested
	Error *probeout.Error `json:"error,omitempty"`
	// Memory is where this side's registered buffer lived on the local
	// rail: host memory, or a GPU with the GPUDirect RDMA path that
	// worked (and why the other did not). Absent from older probes'
	// output, and when the rail never got as far as choosing memory.
	Memory *Memory `json:"memory,omitempty"`
}

// Memory kinds.
const (
	MemoryHost = "host" // page-aligned host memory the probe allocated
	MemoryCUDA = "cuda" // GPU memory (perftest --use_cuda), registered for GPUDirect RDMA
)

// GPUDirect RDMA registration paths.
const (
	PathDmabuf  = "dmabuf"  // ibv_reg_dmabuf_mr on a dma-buf the CUDA driver exported (kernel ≥ 5.12, open GPU kernel modules)
	PathPeermem = "peermem" // ibv_reg_mr on the device pointer, resolved by nvidia_peermem
)

// Memory describes one side's buffer on one rail. For host memory only
// Kind is set (and printed).
type Memory struct {
	Kind    string `json:"kind"`    // MemoryHost or MemoryCUDA
	GPU     int    `json:"gpu"`     // CUDA ordinal
	GPUName string `json:"gpuName"` // e.g. NVIDIA H100 80GB HBM3
	GPUPCI  string `json:"gpuPCI"`  // e.g. 0000:1b:00.0
	// Selected says how the GPU was chosen: "ordinal" (given) or
	// "nearest" (the GPU closest to the rail's NIC).
	Selected string `json:"selected"`
	// Path is PathDmabuf or PathPeermem: the registration that worked;
	// "" when neither did (the rail's error then names both reasons).
	Path string `json:"path"`
	// Why says why the other path (or each path) was not used, e.g.
	// "dma-buf: ibv_reg_dmabuf_mr(…): Operation not supported".
	Why string `json:"why,omitempty"`
	// Topology is the GPU–NIC relation as nvidia-smi topo -m names it
	// (PIX, PXB, PHB, NODE, SYS), "" when it could not be read
	// (TopologyWhy says why, e.g. a Soft-RoCE NIC with no PCI device).
	Topology    string `json:"topology"`
	TopologyWhy string `json:"topologyWhy,omitempty"`
	// CrossSocket: GPU and NIC are on different NUMA nodes (SYS): the
	// data crosses the CPU interconnect and bandwidth is expected to drop.
	CrossSocket bool   `json:"crossSocket"`
	NICPCI      string `json:"nicPCI,omitempty"`
	NUMANIC     int    `json:"numaNIC"` // -1: unknown
	NUMAGPU     int    `json:"numaGPU"` // -1: unknown
}

// MarshalJSON prints host memory as {"kind":"host"}: the GPU fields mean
// nothing there.
func (m Memory) MarshalJSON() ([]byte, error) {
	if m.Kind != MemoryCUDA {
		return json.Marshal(struct {
			Kind string `json:"kind"`
		}{m.Kind})
	}
	type plain Memory
	return json.Marshal(plain(m))
}

// ErrNoGPU matches a rail asked to measure from GPU memory in a pod where
// no GPU is usable: no CUDA driver library, no device, or not the one
// asked for. It is a *probeout.Error of kind no-gpu, so Classify reports
// it as that kind (a not-run: nothing on the fabric was measured); tag
// errors with it (Tag) to keep their own message.
var ErrNoGPU error = &probeout.Error{Kind: probeout.KindNoGPU, Message: "no usable GPU in the pod"}

// ErrGPUDirect matches a GPU buffer that neither GPUDirect RDMA path could
// register (neither dma-buf nor peer memory): the GPU and the NIC are
// there, GPUDirect is broken. It is a *probeout.Error of kind gpudirect
// (Classify reports that kind); the tagged message names both reasons
// and the fix.
var ErrGPUDirect error = &probeout.Error{Kind: probeout.KindGPUDirect, Message: "GPUDirect RDMA registration failed"}

// Incomplete lists what was requested and not measured: every rail pair
// with an error, and every op or size a rail pair lacks. Empty means the
// side measured everything it was asked for (and at least one rail pair).
// The probe exits 0 only then.
func (o ProbeOutput) Incomplete() []string {
	var miss []string
	if len(o.Rails) == 0 {
		miss = append(miss, "no rail measured")
	}
	for _, rr := range o.Rails {
		name := rr.Local.Name()
		if rr.Peer != nil {
			name += " ↔ " + rr.Peer.Name()
		}
		if rr.Error != nil {
			miss = append(miss, name+": "+rr.Error.Error())
		}
		for _, op := range o.Requested.Ops {
			var run *Report
			for i := range rr.Runs {
				if rr.Runs[i].Params.Op == op {
					run = &rr.Runs[i]
					break
				}
			}
			switch {
			case run == nil:
				miss = append(miss, name+" "+string(op)+": not run")
			case len(run.Results) < len(o.Requested.Sizes):
				miss = append(miss, name+" "+string(op)+": "+strconv.Itoa(len(run.Results))+" of "+strconv.Itoa(len(o.Requested.Sizes))+" sizes")
			}
		}
	}
	return miss
}
