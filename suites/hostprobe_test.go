package suites

import (
	"context"
	"flag"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/rdmasuite/rdmasuite/reports"
	"github.com/rdmasuite/rdmasuite/internal/doctor"
	"github.com/rdmasuite/rdmasuite/internal/podrun"
	"github.com/rdmasuite/rdmasuite/workloads/node"
	"github.com/rdmasuite/rdmasuite/workloads/probeout"
)

var (
	flagNodeProbe     = flag.Bool("node-probe", true, "run the host probe (a short-lived privileged pod per node, host / mounted read-only)")
	flagNodeProbePath = flag.String("node-probe-host-path", "/", "host path mounted as the probe's host root; {node} is replaced by the node name (bed tests point it at fixture roots)")
	flagNodeProbeWin  = flag.String("node-probe-window", "2s", "PSI / iowait sampling window of the host probe")
)

// probeHosts runs `rdmaprobe node` on every node and reduces each report to
// what the doctor's catalogue needs. A node whose probe could not run gets a
// not-run check with the reason (recorded here), never a silent pass.
func probeHosts(ctx context.Context, t *testing.T, s doctor.State) map[string]doctor.HostFacts {
	if !*flagNodeProbe {
		return nil
	}
	var (
		mu    sync.Mutex
		facts = map[string]doctor.HostFacts{}
		wg    sync.WaitGroup
	)
	sem := make(chan struct{}, max(*flagConcurrency, 1))
	for _, n := range s.Nodes {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			hostPath := strings.ReplaceAll(*flagNodeProbePath, "{node}", n.Name)
			args := []string{"node", "--host-root", "/host", "--window", *flagNodeProbeWin}
			spec := podrun.Spec{Name: "node-" + shortName(n.Name), Namespace: runNamespace(), RunID: runID, Node: n.Name,
				Image: *flagImage, Args: args, Privileged: true, HostMounts: map[string]string{hostPath: "/host"}}
			res, err := podrun.Run(ctx, kube, spec, *flagPodTimeout)
			var r node.Report
			if err == nil {
				err = probeout.Parse(res.Logs, "node", &r)
			}
			if err != nil {
				record(reports.Check{ID: "doctor/host-probe", Nodes: []string{n.Name}, Status: reports.NotRun,
					Reason:   fmt.Sprintf("host probe on %s (host path %s) could not run, host-level checks skipped: %v", n.Name, hostPath, err),
					Evidence: []string{"rdmaprobe " + strings.Join(args, " "), res.Logs}})
				return
			}
			mu.Lock()
			facts[n.Name] = hostFacts(r)
			mu.Unlock()
		}()
	}
	wg.Wait()
	return facts
}

func hostFacts(r node.Report) doctor.HostFacts {
	h := doctor.HostFacts{StorageModulesLoaded: r.StorageModulesLoaded, DriverReady: r.Markers.DriverReady.Present, PortsDown: r.PortsDown()}
	if m, ok := r.Module("nvidia_peermem"); ok && m.Loaded {
		h.PeermemLoaded = true
	}
	if r.Pressure.IO.Available {
		v := r.Pressure.IO.Some.Avg10
		h.IOSomeAvg10 = &v
	}
	if r.Pressure.CPU.IOWaitPercent != nil {
		v := *r.Pressure.CPU.IOWaitPercent
		h.IOWaitPct = &v
	}
	return h
}
