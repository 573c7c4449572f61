// Package suites holds the rdmasuite conformance features. Run them against a
// cluster with
//
//	go test ./suites -args --kubeconfig=PATH [suite flags]
//
// TestMain connects once, creates one namespace for the run and deletes it on
// every exit path: normal end, failed features, --fail-fast (which skips
// feature teardown) and SIGINT/SIGTERM.
package suites

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/e2e-framework/klient"
	"sigs.k8s.io/e2e-framework/pkg/env"
	"sigs.k8s.io/e2e-framework/pkg/envconf"

	"github.com/rdmasuite/rdmasuite/internal/cluster"
)

// Suite-wide flags (after -args). e2e-framework's own flags (--kubeconfig,
// --labels, --feature, --assess, --fail-fast, …) work as documented there.
var (
	flagImage       = flag.String("image", "rdmasuite/rdmaprobe:dev", "rdmaprobe image the probe pods run (build it from images/rdmaprobe)")
	flagRDMARes     = flag.String("rdma-resource", "rdma/rdma_shared_device_a", "extended resource of the RDMA shared device plugin")
	flagPodTimeout  = flag.Duration("pod-timeout", 2*time.Minute, "how long one probe pod may take from create to finish")
	flagNodeLabels  = flag.String("node-selector", "", "label selector for the nodes to test (default: every node)")
	flagCleanupWait = flag.Duration("cleanup-timeout", 90*time.Second, "how long to wait for the run namespace to be deleted")

	flagVariants        = flag.String("variants", "shared-dev,hostdev", "pod variants: shared-dev (RDMA shared device plugin) and/or hostdev (SR-IOV + Multus)")
	flagHostdevRes      = flag.String("hostdev-resource", "nvidia.com/hostdev", "extended resource of the SR-IOV (hostdev) device plugin")
	flagHostdevNet      = flag.String("hostdev-network", "default/sriov-rdma", "Multus network (namespace/name of the NetworkAttachmentDefinition) for hostdev pods")
	flagHostdevNetdev   = flag.String("hostdev-netdev", "net1", "interface Multus adds in hostdev pods; the probe uses the RDMA device behind it")
	flagDevice          = flag.String("device", "", "RDMA device name in shared-dev pods (default: the first one the pod sees)")
	flagGPUs            = flag.Int("gpus", 0, "nvidia.com/gpu to request per bandwidth pod")
	flagBWOps           = flag.String("bw-ops", "write,read", "RDMA operations to measure")
	flagBWSizes         = flag.String("bw-sizes", "64K,1M", "message sizes; the largest is judged against the SKU floor")
	flagBWQPs           = flag.Int("bw-qps", 4, "queue pairs per test (several QPs reach line rate on NDR/HDR)")
	flagBWDuration      = flag.Duration("bw-duration", 5*time.Second, "measurement time per size (perftest -D)")
	flagBWIters         = flag.Int("bw-iters", 0, "iterations per QP per size instead of --bw-duration")
	flagPairing         = flag.String("pairing", "ring", "ring (every node as client and server, 2 rounds) or all (every pair)")
	flagConcurrency     = flag.Int("concurrency", 4, "pairs (or memlock pods) run at the same time")
	flagLoopback        = flag.Bool("loopback", false, "also run a same-node pair on every node")
	flagThresholds      = flag.String("thresholds", "", "thresholds file (default: the built-in thresholds/skus.yaml)")
	flagSKU             = flag.String("sku", "", "force this SKU for every node instead of matching nvidia.com/gpu.product")
	flagMemlockRequired = flag.String("memlock-required", "", "registration size that must succeed (default: the SKU's minMemlockBytes)")
	flagMemlockMax      = flag.String("memlock-max", "1G", "largest region the memlock probe tries")
	flagMemlockIPCLock  = flag.Bool("memlock-ipc-lock", false, "give the memlock probe IPC_LOCK (then it tests registration, not the runtime's limit)")
	flagReportDir       = flag.String("report-dir", "", "where results-<run>.json and results.json go (default ./rdmasuite-results)")
)

var (
	testenv env.Environment
	// kube is the one clientset of the run; suites never call cfg.Client()
	// (it panics without a kubeconfig).
	kube  kubernetes.Interface
	runID string
)

func TestMain(m *testing.M) {
	cfg, err := envconf.NewFromFlags()
	if err != nil {
		fmt.Fprintf(os.Stderr, "rdmasuite: %v\n", err)
		os.Exit(2)
	}
	if flag.Lookup("test.list") != nil && flag.Lookup("test.list").Value.String() != "" {
		os.Exit(m.Run()) // listing tests needs no cluster
	}
	rc, where, err := cluster.RESTConfig(cfg.KubeconfigFile(), cfg.KubeContext())
	if err != nil {
		fmt.Fprintf(os.Stderr, "rdmasuite: %v\n", err)
		os.Exit(2)
	}
	version, err := cluster.Reachable(rc, 10*time.Second)
	if err != nil {
		fmt.Fprintf(os.Stderr, "rdmasuite: %v\n", err)
		os.Exit(2)
	}
	if kube, err = kubernetes.NewForConfig(rc); err != nil {
		fmt.Fprintf(os.Stderr, "rdmasuite: %v\n", err)
		os.Exit(2)
	}
	kl, err := klient.New(rc)
	if err != nil {
		fmt.Fprintf(os.Stderr, "rdmasuite: %v\n", err)
		os.Exit(2)
	}
	runID = cluster.NewRunID()
	ns := cluster.RunNamespace(runID)
	cfg.WithClient(kl).WithNamespace(ns)
	fmt.Printf("rdmasuite: cluster %s (%s, kubeconfig %s), run %s, namespace %s\n", rc.Host, version, where, runID, ns)
	if _, err := loadThresholds(); err != nil {
		fmt.Fprintf(os.Stderr, "rdmasuite: %v\n", err)
		os.Exit(2)
	}
	started := time.Now()

	// Interrupts must not leak the namespace: delete it, then exit.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		s := <-sigs
		fmt.Fprintf(os.Stderr, "rdmasuite: %v: deleting run namespace %s\n", s, ns)
		if err := cluster.DeleteRunNamespace(context.Background(), kube, runID, *flagCleanupWait); err != nil {
			fmt.Fprintf(os.Stderr, "rdmasuite: %v\n", err)
		}
		os.Exit(130)
	}()

	testenv = env.NewWithConfig(cfg)
	testenv.Setup(func(ctx context.Context, _ *envconf.Config) (context.Context, error) {
		return ctx, cluster.CreateRunNamespace(ctx, kube, runID)
	})
	testenv.Finish(func(ctx context.Context, _ *envconf.Config) (context.Context, error) {
		return ctx, cluster.DeleteRunNamespace(ctx, kube, runID, *flagCleanupWait)
	})
	code := testenv.Run(m)
	if path, err := writeResults(started, rc.Host, version); err != nil {
		fmt.Fprintf(os.Stderr, "rdmasuite: writing results: %v\n", err)
		if code == 0 {
			code = 1
		}
	} else {
		fmt.Printf("rdmasuite: results in %s (render: rdmasuite report %s)\n", path, path)
	}
	// Finish does not run when Setup failed half-way; deleting twice is harmless.
	if err := cluster.DeleteRunNamespace(context.Background(), kube, runID, *flagCleanupWait); err != nil {
		fmt.Fprintf(os.Stderr, "rdmasuite: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}
