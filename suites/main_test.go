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

	"github.com/rdmasuite/rdmasuite/suites/cluster"
)

// Suite-wide flags (after -args). e2e-framework's own flags (--kubeconfig,
// --labels, --feature, --assess, --fail-fast, …) work as documented there.
var (
	flagImage       = flag.String("image", "rdmasuite/rdmaprobe:dev", "rdmaprobe image the probe pods run (build it from images/rdmaprobe)")
	flagRDMARes     = flag.String("rdma-resource", "rdma/rdma_shared_device_a", "extended resource of the RDMA shared device plugin")
	flagPodTimeout  = flag.Duration("pod-timeout", 2*time.Minute, "how long one probe pod may take from create to finish")
	flagNodeLabels  = flag.String("node-selector", "", "label selector for the nodes to test (default: every node)")
	flagCleanupWait = flag.Duration("cleanup-timeout", 90*time.Second, "how long to wait for the run namespace to be deleted")
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
	fmt.Printf("rdmasuite: cluster %s (%s), run %s, namespace %s\n", rc.Host, version, runID, ns)
	_ = where

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
	// Finish does not run when Setup failed half-way; deleting twice is harmless.
	if err := cluster.DeleteRunNamespace(context.Background(), kube, runID, *flagCleanupWait); err != nil {
		fmt.Fprintf(os.Stderr, "rdmasuite: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}
