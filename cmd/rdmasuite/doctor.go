package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/rdmasuite/rdmasuite/internal/cluster"
	"github.com/rdmasuite/rdmasuite/internal/doctor"
	"github.com/rdmasuite/rdmasuite/internal/termwidth"
	"github.com/rdmasuite/rdmasuite/reports"
	"github.com/rdmasuite/rdmasuite/workloads/units"
)

// errFindings makes `rdmasuite doctor` exit 1 (checks failed) when something was found.
var errFindings = errors.New("known failure modes found")

// runDoctor is the API-level doctor without the test framework: nodes,
// operator pods and logs, NicClusterPolicy. The host probe on each node
// runs in the suite (go test ./suites -args --labels suite=doctor).
func runDoctor(args []string, stdout io.Writer) error {
	fs := newFlagSet("doctor")
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig (default: as kubectl: $KUBECONFIG, ~/.kube/config, else the pod's ServiceAccount)")
	kubeContext := fs.String("context", "", "kubeconfig context to use (default: its current context)")
	selector := fs.String("node-selector", "", "label selector for the nodes to check")
	resources := fs.String("resources", "", "extended resources every selected node must advertise; empty: learned from the cluster (the NicClusterPolicy's device-plugin configs, else SriovNetworkNodePolicies and the nodes' allocatable) on RDMA nodes, and nvidia.com/gpu on nodes labelled nvidia.com/gpu.present=true; the output's resources: line says which and from where")
	netNS := fs.String("network-operator-namespace", "nvidia-network-operator", "Network Operator namespace")
	netOp := fs.Bool("network-operator", true, "the cluster runs the NVIDIA Network Operator; false when RDMA drivers are managed outside Kubernetes (a missing NicClusterPolicy is then expected)")
	gpuNS := fs.String("gpu-operator-namespaces", "gpu-operator,nvidia-gpu-operator", "GPU Operator namespaces")
	out := fs.String("o", "", "also write the results JSON here")
	allow := fs.String("allow-not-run", "", "check ids or prefixes whose not-run does not fail, as in the suite (e.g. doctor/node-api: a node whose expected resources could not be derived)")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return fmt.Errorf("unexpected argument %q (see: rdmasuite doctor --help)", pos[0])
	}
	rc, where, err := cluster.RESTConfig(*kubeconfig, *kubeContext)
	if err != nil {
		return err
	}
	version, err := cluster.ReachableFrom(rc, where, 10*time.Second)
	if err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return err
	}
	dyn, err := dynamic.NewForConfig(rc)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	start := time.Now()
	state, err := doctor.Gather(ctx, cs, dyn, doctor.GatherOptions{NodeSelector: *selector, Resources: split(*resources),
		NetworkOperatorNS: *netNS, GPUOperatorNS: split(*gpuNS), NoNetworkOperator: !*netOp})
	if err != nil {
		return err
	}
	// This command reads the API only, by design: its node checks are
	// doctor/node-api (what the API shows), and it says plainly that the
	// host checks did not run and how to run them.
	state.APIOnly = true
	findings := doctor.Diagnose(state)
	run := reports.Run{RunID: "doctor-" + cluster.NewRunID(), Started: start, Finished: time.Now(),
		Cluster: reports.Cluster{Server: rc.Host, Version: version}, Checks: doctor.Checks(state, findings, time.Since(start)),
		AllowNotRun: split(*allow)}
	run.Sort()
	if *out != "" {
		if err := reports.Write(*out, run); err != nil {
			return err
		}
	}
	if err := reports.TableWidth(stdout, run, termwidth.Fit(stdout)); err != nil {
		return err
	}
	// Which RDMA resource names were used, and where they came from.
	fmt.Fprintf(stdout, "\n%s\n", doctor.ResourcesLine(state))
	for _, f := range findings {
		if f.Node != "" {
			fmt.Fprintf(stdout, "\n%s on %s [%s, seed %s]\n  cause: %s\n  fix:   %s\n  evidence: %s\n", f.ID, f.Node, f.Severity, f.Seed, f.Cause, f.Fix, strings.Join(f.Evidence, "; "))
		}
	}
	fmt.Fprintf(stdout, "\nhost checks did not run: this command reads the API only (storage modules, driver markers, peermem, "+
		"RDMA devices and ports, I/O pressure are read on each node by the host probe); run them with: "+
		"go test ./suites -args --kubeconfig=%s --labels suite=doctor\n", orDefault(*kubeconfig, "~/.kube/config"))
	for _, c := range run.Checks {
		if c.Status == reports.Fail {
			return errFindings
		}
	}
	if code := run.ExitCode(); code != reports.ExitPassed {
		return &exitError{code: code, err: fmt.Errorf("%s", reports.SummaryText(run))}
	}
	return nil
}

func split(s string) []string { return units.SplitList(s) }

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
