package suites

import (
	"context"
	"flag"
	"fmt"
	"testing"
	"time"

	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	"github.com/rdmasuite/rdmasuite/internal/doctor"
	"github.com/rdmasuite/rdmasuite/internal/runner"
	"github.com/rdmasuite/rdmasuite/reports"
)

var (
	flagPreflightRes = flag.String("preflight-resources", "", "extended resources every selected node must advertise (allocatable > 0); empty: derived per node from the NicClusterPolicy's device-plugin config on RDMA nodes and nvidia.com/gpu on nodes labelled nvidia.com/gpu.present=true")
	flagUnusedPorts  = flag.String("unused-ports", "", "RDMA ports left unused or disabled on purpose, not reported down: mlx5_3/1, mlx5_3 (every port) or node-7:mlx5_3/1")
	flagNetOpNS      = flag.String("network-operator-namespace", "nvidia-network-operator", "namespace of the NVIDIA Network Operator (MOFED driver pods)")
	flagNetOp        = flag.Bool("network-operator", true, "the cluster runs the NVIDIA Network Operator; false when RDMA drivers are managed outside Kubernetes (host MOFED / inbox): a missing NicClusterPolicy is then expected, not a check that could not run")
	flagGPUOpNS      = flag.String("gpu-operator-namespaces", "gpu-operator,nvidia-gpu-operator", "namespaces of the NVIDIA GPU Operator")
)

// TestPreflight runs the doctor: node readiness after upgrades and every
// known failure mode of the seeds, API-level (labels, taints, allocatable,
// operator pods and logs, NicClusterPolicy) plus the host probe on each
// node. A node passes only when both sources were read. Label suite=doctor
// selects it alone.
func TestPreflight(t *testing.T) {
	f := features.New("node readiness and known failure modes (doctor)").
		WithLabel("suite", "doctor").WithLabel("check", "preflight").
		Assess("no selected node shows a known failure mode", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			defer run.Begin("doctor", "")()
			start := time.Now()
			dyn, err := dynamic.NewForConfig(cfg.Client().RESTConfig())
			if err != nil {
				assertChecks(t, []reports.Check{{ID: "doctor/gather", Status: reports.Error, Reason: err.Error()}})
				return ctx
			}
			state, err := doctor.Gather(ctx, kube, dyn, doctor.GatherOptions{NodeSelector: *cli.NodeLabels, Nodes: doctorNodes(ctx),
				Resources: runner.SplitList(*flagPreflightRes), NetworkOperatorNS: *flagNetOpNS, GPUOperatorNS: runner.SplitList(*flagGPUOpNS),
				NoNetworkOperator: !*flagNetOp, UnusedPorts: runner.SplitList(*flagUnusedPorts)})
			if err != nil {
				assertChecks(t, []reports.Check{{ID: "doctor/gather", Title: "the doctor could read the cluster",
					Status: reports.Error, Reason: fmt.Sprintf("reading nodes, operator pods and NicClusterPolicy failed: %v", err)}})
				return ctx
			}
			state.Hosts, state.HostsMissing = run.ProbeHosts(ctx, state)
			assertChecks(t, doctor.Checks(state, doctor.Diagnose(state), time.Since(start)))
			return ctx
		}).Feature()
	testenv.Test(t, f)
}

// doctorNodes narrows the doctor to the run's default node selection (no
// --node-selector), so a CPU or control-plane node is not held to
// --preflight-resources. When the default selection is empty the doctor
// judges every node: why nothing advertises RDMA is what it is for.
func doctorNodes(ctx context.Context) []string {
	if *cli.NodeLabels != "" {
		return nil
	}
	nodes, err := run.SelectedNodes(ctx)
	if err != nil {
		return nil
	}
	names := []string{}
	for _, n := range nodes {
		names = append(names, n.Name)
	}
	return names
}
