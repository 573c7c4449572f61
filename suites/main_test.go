// Package suites holds the rdmasuite conformance features. Run them against a
// cluster with
//
//	go test ./suites -args --kubeconfig=PATH [suite flags]
//
// The features are thin declarations; what they do lives in internal/runner,
// and the run's life around them (flags, connection, plan, run namespace,
// progress, deadline, interrupts, results, exit code, publishing, cleanup)
// in internal/lifecycle.
package suites

import (
	"flag"
	"testing"

	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/e2e-framework/pkg/env"

	"github.com/rdmasuite/rdmasuite/internal/disrupt"
	"github.com/rdmasuite/rdmasuite/internal/lifecycle"
	"github.com/rdmasuite/rdmasuite/internal/runner"
	"github.com/rdmasuite/rdmasuite/internal/suiteflags"
)

// cli holds the suite's flags (after -args), registered before any other
// package registers its own, so that --help lists them first.
var cli = lifecycle.Register(flag.CommandLine)

// What the features use, from the run's session.
var (
	testenv env.Environment
	// kube is the run's typed clientset. A feature's cfg.Client() is the
	// e2e-framework client that lifecycle.Start built from the same REST
	// config (found as kubectl finds it, in-cluster included) and set on
	// the environment, so it never falls back to e2e-framework's own
	// kubeconfig loading, which panics without --kubeconfig; features use
	// it only for that REST config (dynamic client, exec).
	kube       kubernetes.Interface
	run        *runner.Runner
	disruptive disrupt.Decision // the disruptive feature's gate
)

// suiteFlags are the suite's own flags: at init time no other package has
// registered any (testing, e2e-framework and klog do so later).
var suiteFlags []string

func init() { suiteFlags = suiteflags.Names(flag.CommandLine) }

func TestMain(m *testing.M) {
	s := lifecycle.Start(m, lifecycle.Options{Flags: cli, SuiteFlags: suiteFlags, Selected: selected})
	testenv, kube, run, disruptive = s.Env, s.Kube, s.Run, s.Disruptive
	s.Finish(testenv.Run(m))
}
