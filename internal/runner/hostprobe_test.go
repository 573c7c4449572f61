package runner

import (
	"reflect"
	"testing"
	"time"

	"github.com/rdmasuite/rdmasuite/workloads/node"
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
	r.Pressure.IO = node.PSI{Reason: "/proc/pressure/io: no such file (kernel without CONFIG_PSI, or booted with psi=0)"}
	if h := hostFacts(r); h.IO != nil || h.IOUnavailable == "" {
		t.Errorf("no PSI: %+v %q", h.IO, h.IOUnavailable)
	}
}
