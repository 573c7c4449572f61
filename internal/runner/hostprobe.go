package runner

import (
	"context"
	"fmt"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"

	"github.com/rdmasuite/rdmasuite/internal/doctor"
	"github.com/rdmasuite/rdmasuite/internal/podrun"
	"github.com/rdmasuite/rdmasuite/workloads/node"
	"github.com/rdmasuite/rdmasuite/workloads/probeout"
)

// ProbeHosts runs `rdmaprobe node` on every node of the doctor's state and
// reduces each report to what the catalogue needs. Nodes whose probe could
// not run are listed in the returned reasons: the doctor then reports
// their node check as not-run with that reason, never as a pass.
func (r *Runner) ProbeHosts(ctx context.Context, s doctor.State) (map[string]doctor.HostFacts, map[string]string) {
	facts, missing := map[string]doctor.HostFacts{}, map[string]string{}
	if !r.Cfg.NodeProbe {
		for _, n := range s.Nodes {
			missing[n.Name] = "the host probe is off (--node-probe=false): module, marker, port and pressure facts were not read"
		}
		return facts, missing
	}
	var mu sync.Mutex
	parallel(len(s.Nodes), r.Cfg.Concurrency, func(i int) {
		n := s.Nodes[i]
		hostPath := strings.ReplaceAll(r.Cfg.NodeProbeHostPath, "{node}", n.Name)
		args := []string{"node", "--host-root", "/host", "--window", r.Cfg.NodeProbeWindow}
		spec := podrun.Spec{Name: r.Object("node", n.Name), Namespace: r.Namespace(), RunID: r.RunID, Node: n.Name,
			Image: r.Cfg.Image, Args: args, Privileged: true, HostMounts: map[string]string{hostPath: "/host"}, Keep: r.Cfg.KeepOnFailure}
		res, err := podrun.Run(ctx, r.Kube, spec, r.Cfg.PodTimeout)
		var rep node.Report
		if err == nil {
			var perr *probeout.Error
			perr, err = probeout.ParseError(res.Logs, "node", &rep)
			if err == nil && perr != nil {
				err = perr
			}
		}
		if err == nil && res.ExitCode != 0 {
			err = fmt.Errorf("the probe exited %d", res.ExitCode)
		}
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			missing[n.Name] = fmt.Sprintf("host probe pod %s (host path %s, rdmaprobe %s) could not run: %v",
				spec.Name, hostPath, strings.Join(args, " "), err)
			return
		}
		facts[n.Name] = hostFacts(rep)
	})
	return facts, missing
}

func hostFacts(r node.Report) doctor.HostFacts {
	h := doctor.HostFacts{StorageModulesLoaded: r.StorageModulesLoaded, DriverReady: r.Markers.DriverReady.Present,
		DriverReadyAt:     r.Markers.DriverReady.ModTime,
		MemoryPeerClients: r.Markers.MemoryPeers.Clients, PortsDown: r.PortsDown(), PortsUnknown: r.PortsUnknown(),
		RDMARead: true, RDMAClassPresent: r.RDMA.ClassPresent}
	for _, d := range r.RDMA.Devices {
		h.RDMADevices = append(h.RDMADevices, d.Name)
	}
	if m, ok := r.Module("nvidia_peermem"); ok && m.Loaded {
		h.PeermemLoaded = true
	}
	if io := r.Pressure.IO; io.Available && io.Some != nil {
		h.IO = &doctor.PSIAverages{Avg10: io.Some.Avg10, Avg60: io.Some.Avg60, Avg300: io.Some.Avg300}
	} else {
		h.IOUnavailable = io.Reason
	}
	if r.Pressure.CPU.IOWaitPercent != nil {
		v := *r.Pressure.CPU.IOWaitPercent
		h.IOWaitPct = &v
	}
	h.PortsAtRest, h.PortsAtRestNotRead = atRestFacts(r)
	h.Devices = r.RDMA.Devices
	if r.Cost.ReadMs > 0 {
		h.ReadCost = fmt.Sprintf("reads took %.0f ms (RDMA devices, ports and their configuration %.0f ms, %d GID table entries), the sampling window aside",
			r.Cost.ReadMs, r.Cost.RDMAMs, r.Cost.GIDEntries)
	}
	return h
}

// atRestFacts names each port's at-rest deltas the way the port rules name
// ports ("mlx5_0/1"). A report with ports but without the section (its
// ports list missing, not empty) comes from a probe older than the suite:
// that is said, never taken for a clean read.
func atRestFacts(r node.Report) ([]doctor.PortAtRest, string) {
	a := r.AtRest
	if a.Ports == nil && a.NotRead == "" {
		for _, d := range r.RDMA.Devices {
			if len(d.Ports) > 0 {
				return nil, "the probe reported no at-rest port counters (an rdmaprobe image older than this suite: run the image of this version)"
			}
		}
		return nil, ""
	}
	var out []doctor.PortAtRest
	for _, p := range a.Ports {
		out = append(out, doctor.PortAtRest{Port: fmt.Sprintf("%s/%d", p.Device, p.Port), Deltas: p.Deltas, Err: p.Err})
	}
	return out, a.NotRead
}

// NodeSKUs is each node's thresholds SKU for the doctor: its host facts
// are compared with the other nodes of the same SKU, and judged against
// the SKU's host: pins. A node no SKU matches is left out (the doctor then
// compares it only with nodes of the same HCA types).
func (r *Runner) NodeSKUs(nodes []corev1.Node) map[string]doctor.NodeSKU {
	out := map[string]doctor.NodeSKU{}
	if r.Cfg.Thresholds == nil {
		return out
	}
	for _, n := range nodes {
		if k, err := r.Cfg.Thresholds.ForNode(n.Name, n.Labels, r.Cfg.SKU); err == nil && k != nil {
			out[n.Name] = doctor.NodeSKU{Name: k.Name, Host: k.Host}
		}
	}
	return out
}
