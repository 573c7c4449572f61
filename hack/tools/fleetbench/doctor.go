package main

import (
	"context"
	"flag"
	"fmt"
	"sort"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/rdmasuite/rdmasuite/internal/cluster"
	"github.com/rdmasuite/rdmasuite/internal/doctor"
	"github.com/rdmasuite/rdmasuite/internal/runner"
	"github.com/rdmasuite/rdmasuite/reports"
	"github.com/rdmasuite/rdmasuite/thresholds"
	"github.com/rdmasuite/rdmasuite/workloads/gputopo"
	"github.com/rdmasuite/rdmasuite/workloads/node"
	"github.com/rdmasuite/rdmasuite/workloads/pcilink"
)

// cannedNodeReport is the host probe's report of one simulated node: ports
// InfiniBand HCAs, each at PCIe Gen4 x16 behind its own root port with a
// GPU behind the same switch (PIX, ACS off), swept ports with a partition
// key, the host facts the doctor's host-configuration rules read. Every
// node gets the same report (kwok serves one log), so the doctor finds
// nothing and its cost is judging ports × nodes facts.
func cannedNodeReport(ports int, rate float64) node.Report {
	r := node.Report{HostRoot: "/host", CollectedAt: time.Now().UTC(), Kernel: "6.8.0-fleetbench",
		StorageModulesLoaded: []string{}, RDMA: node.RDMA{ClassPresent: true},
		AtRest: node.AtRest{NotRead: "fleetbench: no counters (simulated node)", Ports: []node.PortAtRest{}},
		Cost:   node.Cost{ReadMs: 1}}
	r.Markers.DriverReady.Present = true
	r.Pressure.IO = node.PSI{Available: true, Some: &node.PSILine{}, Full: &node.PSILine{}}
	for i := 0; i < ports; i++ {
		addr := fmt.Sprintf("0000:%02x:00.0", 0x18+i*0x10)
		root := fmt.Sprintf("0000:%02x:01.0", 0x17+i*0x10)
		link := func(a string) pcilink.Link {
			return pcilink.Link{Address: a, Source: "/sys/devices/pci0000:00/" + a, CurGTs: 16, CurWidth: 16, MaxGTs: 16, MaxWidth: 16}
		}
		r.RDMA.Devices = append(r.RDMA.Devices, node.Device{Name: fmt.Sprintf("mlx5_%d", i), PCIAddress: addr, HCAType: "MT4123",
			FWVersion: "20.39.1002", BoardID: "MT_0000000222",
			PCIe: &node.DevicePCIe{Address: addr, NUMANode: i / 4, Path: &pcilink.Path{Device: addr, Links: []pcilink.Link{link(root), link(addr)}},
				NearestGPU: &node.NearestGPU{Address: fmt.Sprintf("0000:%02x:00.0", 0x19+i*0x10), Level: gputopo.PIX, NUMANode: i / 4,
					ACS: []pcilink.ACS{{Address: root, Present: true, Control: pcilink.ACSSourceValidation}}}},
			Ports: []node.Port{{Port: 1, State: "4: ACTIVE", StateName: "ACTIVE", PhysState: "5: LinkUp", PhysStateName: "LinkUp",
				Rate: fmt.Sprintf("%g Gb/sec (4X HDR)", rate), RateGbps: rate, LinkLayer: "InfiniBand", Active: true, LinkUp: true,
				Netdevs: []node.Netdev{{Name: fmt.Sprintf("ib%d", i), OperState: "up"}},
				Config: &node.PortConfig{LID: fmt.Sprintf("0x%x", 0x10+i), SMLID: "0x1", SMSL: "0", PKeys: []string{"0xffff", "0x8001"},
					NetdevMTU: 4092, GIDTableLen: 128,
					GIDs: []node.GID{{Index: 0, GID: fmt.Sprintf("fe80:0000:0000:0000:0c42:a103:00%02x:1234", i), Type: "IB/RoCE v1"}}}}}})
	}
	return r
}

// doctorCmd runs the doctor as the suite's preflight feature runs it, on
// the first n simulated nodes: the API gather, one host probe pod per node
// (kwok completes it after the probe window and serves the canned report),
// the SKU match, the rules. It prints each phase's time.
func doctorCmd(args []string) error {
	fs := flag.NewFlagSet("doctor", flag.ExitOnError)
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig of the private control plane")
	sizesFlag := fs.String("sizes", "256", "fleet sizes")
	thr := fs.String("thresholds", "thresholds/skus.yaml", "thresholds file")
	window := fs.String("window", "2s", "the host probe's window (the kwok stage completes node probe pods after it)")
	_ = fs.Parse(args)
	sizes, err := ints(*sizesFlag)
	if err != nil {
		return err
	}
	set, err := thresholds.Load(*thr)
	if err != nil {
		return err
	}
	for _, n := range sizes {
		if err := doctorAt(*kubeconfig, n, set, *window); err != nil {
			return fmt.Errorf("doctor at %d nodes: %w", n, err)
		}
	}
	return nil
}

func doctorAt(kubeconfig string, n int, set *thresholds.Set, window string) error {
	rc, setup, err := client(kubeconfig)
	if err != nil {
		return err
	}
	cfg := rest.CopyConfig(rc)
	cluster.ScaleClientRate(cfg, n)
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	runID := fmt.Sprintf("fbdoctor%d-%d", n, time.Now().Unix()%100000)
	ctx := context.Background()
	ns, err := runNamespace(ctx, setup, runID)
	if ns != "" {
		defer setup.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{})
	}
	if err != nil {
		return err
	}
	r := runner.New(kube, runner.Config{Image: "rdmaprobe:fleetbench", PodTimeout: 2 * time.Minute, NodeSelector: subsetLabel(n) + "=true",
		NodeProbe: true, NodeProbeWindow: window, NodeProbeHostPath: "/", Thresholds: set}, runID)
	t0 := time.Now()
	state, err := doctor.Gather(ctx, kube, nil, doctor.GatherOptions{NodeSelector: subsetLabel(n) + "=true", Resources: []string{resource_}, NoNetworkOperator: true})
	if err != nil {
		return err
	}
	gather := time.Since(t0)
	if len(state.Nodes) != n {
		return fmt.Errorf("%d nodes carry %s=true, want %d: is %d among the sizes hack/fleet-bench.sh labelled?", len(state.Nodes), subsetLabel(n), n, n)
	}
	t1 := time.Now()
	state.Hosts, state.HostsMissing = r.ProbeHosts(ctx, state)
	state.SKUs = r.NodeSKUs(state.Nodes)
	probes := time.Since(t1)
	t2 := time.Now()
	fs := doctor.Diagnose(state)
	checks := doctor.Checks(state, fs, time.Since(t0))
	judge := time.Since(t2)
	byStatus := map[reports.Status]int{}
	for _, c := range checks {
		byStatus[c.Status]++
	}
	ids := map[string]int{}
	for _, f := range fs {
		ids[f.ID]++
	}
	var idList []string
	for id, c := range ids {
		idList = append(idList, fmt.Sprintf("%s %d", id, c))
	}
	sort.Strings(idList)
	fmt.Printf("doctor at %d nodes (%d ports each): gather %.2f s, host probes %.2f s (%d reports, %d missing; window %s), judge %.0f ms; %d findings [%s]; node checks: %d pass, %d not-run, %d fail\n",
		len(state.Nodes), portsOf(state), gather.Seconds(), probes.Seconds(), len(state.Hosts), len(state.HostsMissing), window,
		float64(judge.Microseconds())/1000, len(fs), strings.Join(idList, ", "), byStatus[reports.Pass], byStatus[reports.NotRun], byStatus[reports.Fail])
	for name, why := range state.HostsMissing {
		fmt.Printf("  %s: %s\n", name, why)
		break
	}
	return nil
}

func portsOf(s doctor.State) int {
	for _, h := range s.Hosts {
		return len(h.Devices)
	}
	return 0
}
