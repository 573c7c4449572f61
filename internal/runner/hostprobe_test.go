package runner

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/rdmasuite/rdmasuite/workloads/node"
	"github.com/rdmasuite/rdmasuite/workloads/portcounters"
)

// The host probe's report reaches the doctor whole: markers with their
// time, the driver directory that tells container MOFED from host MOFED,
// peer-memory clients, unknown ports apart from down ones, and all three
// PSI averages (the verdict uses the sustained ones).
func TestHostFactsCarryWhatTheRulesNeed(t *testing.T) {
	ready := time.Date(2026, 9, 8, 16, 0, 0, 0, time.UTC)
	r := node.Report{
		StorageModulesLoaded: []string{"rpcrdma"},
		Modules:              []node.Module{{Name: "nvidia_peermem", Loaded: true}},
		Markers: node.Markers{DriverReady: node.Marker{Present: true, ModTime: &ready},
			MemoryPeers: node.MemoryPeers{Clients: []string{"nv_mem"}}},
		RDMA: node.RDMA{Devices: []node.Device{{Name: "mlx5_0", Ports: []node.Port{
			{Port: 1, State: "1: DOWN", PhysState: "2: Polling"}, {Port: 2}}}}},
		Pressure: node.Pressure{IO: node.PSI{Available: true, Some: &node.PSILine{Avg10: 1, Avg60: 20, Avg300: 30}}},
	}
	h := hostFacts(r)
	if !h.DriverReady || h.DriverReadyAt == nil || !h.DriverReadyAt.Equal(ready) || !h.PeermemLoaded ||
		!reflect.DeepEqual(h.MemoryPeerClients, []string{"nv_mem"}) || !reflect.DeepEqual(h.StorageModulesLoaded, []string{"rpcrdma"}) {
		t.Errorf("markers/modules: %+v", h)
	}
	if !reflect.DeepEqual(h.PortsDown, []string{"mlx5_0/1: 1: DOWN (2: Polling)"}) || !reflect.DeepEqual(h.PortsUnknown, []string{"mlx5_0/2"}) {
		t.Errorf("ports: down %q unknown %q", h.PortsDown, h.PortsUnknown)
	}
	if !h.RDMARead || h.RDMAClassPresent || !reflect.DeepEqual(h.RDMADevices, []string{"mlx5_0"}) {
		t.Errorf("RDMA devices: read %v class %v devices %q", h.RDMARead, h.RDMAClassPresent, h.RDMADevices)
	}
	if h.IO == nil || h.IO.Avg60 != 20 || h.IO.Avg300 != 30 {
		t.Errorf("PSI: %+v", h.IO)
	}
	// A report without the at-rest section comes from an older probe: said,
	// not taken for a clean read.
	if len(h.PortsAtRest) != 0 || !strings.Contains(h.PortsAtRestNotRead, "older") {
		t.Errorf("at rest from an older probe: %+v %q", h.PortsAtRest, h.PortsAtRestNotRead)
	}
	r.Pressure.IO = node.PSI{Reason: "/proc/pressure/io: no such file (kernel without CONFIG_PSI, or booted with psi=0)"}
	if h := hostFacts(r); h.IO != nil || h.IOUnavailable == "" {
		t.Errorf("no PSI: %+v %q", h.IO, h.IOUnavailable)
	}
}

// Each port's at-rest deltas reach the doctor named as the
// port rules name ports, a port that could not be read keeps its reason,
// and a probe without a window says so.
func TestHostFactsCarryAtRestCounters(t *testing.T) {
	d := &portcounters.Deltas{Device: "mlx5_0", Port: 1, Items: []portcounters.Delta{
		{Group: portcounters.Counters, Name: "symbol_error", After: 12, Delta: 12, Status: portcounters.OK}}}
	r := node.Report{
		RDMA: node.RDMA{Devices: []node.Device{{Name: "mlx5_0", Ports: []node.Port{{Port: 1}}}, {Name: "rxe0", Ports: []node.Port{{Port: 1}}}}},
		AtRest: node.AtRest{WindowSeconds: 2, Ports: []node.PortAtRest{{Device: "mlx5_0", Port: 1, Deltas: d},
			{Device: "rxe0", Port: 1, Err: "after the window: gone"}}},
	}
	h := hostFacts(r)
	if len(h.PortsAtRest) != 2 || h.PortsAtRestNotRead != "" {
		t.Fatalf("at rest: %+v %q", h.PortsAtRest, h.PortsAtRestNotRead)
	}
	if p := h.PortsAtRest[0]; p.Port != "mlx5_0/1" || p.Deltas != d || p.Err != "" {
		t.Errorf("mlx5_0/1: %+v", p)
	}
	if p := h.PortsAtRest[1]; p.Port != "rxe0/1" || p.Deltas != nil || p.Err != "after the window: gone" {
		t.Errorf("rxe0/1: %+v", p)
	}

	r.AtRest = node.AtRest{NotRead: "no sampling window (--window 0)", Ports: []node.PortAtRest{}}
	if h := hostFacts(r); len(h.PortsAtRest) != 0 || h.PortsAtRestNotRead != "no sampling window (--window 0)" {
		t.Errorf("no window: %+v %q", h.PortsAtRest, h.PortsAtRestNotRead)
	}
	// A node without RDMA ports has nothing to read.
	if h := hostFacts(node.Report{}); len(h.PortsAtRest) != 0 || h.PortsAtRestNotRead != "" {
		t.Errorf("no ports: %+v %q", h.PortsAtRest, h.PortsAtRestNotRead)
	}
}
