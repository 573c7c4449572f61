package runner

import (
	"github.com/rdmasuite/rdmasuite/internal/podrun"
)

// bwMemory is where a paired feature's buffers live and the probe mode
// both sides run (PairedSpec.Memory): host memory, or GPU memory through
// the probe's --mem with a GPU requested for each pod; --latency for the
// latency feature's ping-pong.
type bwMemory struct {
	prefix  string // pod names: bw-…, gd-…, lat-…, mps-…, ll-…
	mem     string // the probe's --mem; "" leaves it out (host memory, and probes older than --mem)
	gpus    int    // nvidia.com/gpu per pod at least (Cfg.GPUs when higher)
	latency bool   // the probe measures latency (--latency): the latency and latency-under-load pairs
}

// hostMemory is the bandwidth feature's.
var hostMemory = bwMemory{prefix: "bw"}

// args are the probe flags for this memory, on both sides.
func (m bwMemory) args() []string {
	var a []string
	if m.mem != "" {
		a = append(a, "--mem", m.mem)
	}
	if m.latency {
		a = append(a, "--latency")
	}
	return a
}

// spec adds the GPUs the memory needs to a probe pod.
func (m bwMemory) spec(s podrun.Spec) podrun.Spec {
	if int64(m.gpus) > s.Resources[GPUResource] {
		s.Resources[GPUResource] = int64(m.gpus)
	}
	return s
}
