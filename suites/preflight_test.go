package suites

import (
	"context"
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
				Resources: runner.SplitList(*cli.PreflightRes), NetworkOperatorNS: *cli.NetOpNS, GPUOperatorNS: runner.SplitList(*cli.GPUOpNS),
				NoNetworkOperator: !*cli.NetOp, UnusedPorts: runner.SplitList(*cli.UnusedPorts)})
			if err != nil {
				assertChecks(t, []reports.Check{{ID: "doctor/gather", Title: "the doctor could read the cluster",
					Status: reports.Error, Reason: fmt.Sprintf("reading nodes, operator pods and NicClusterPolicy failed: %v", err)}})
				return ctx
			}
			// Which RDMA resource names the doctor holds nodes to, and
			// where they came from (the flag, else learned from the cluster).
			t.Log(doctor.ResourcesLine(state))
			state.Hosts, state.HostsMissing = run.ProbeHosts(ctx, state)
			state.SKUs = run.NodeSKUs(state.Nodes)
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
