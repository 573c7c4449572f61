package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/rdmasuite/rdmasuite/internal/cluster"
)

// runCleanup deletes run namespaces a run left behind: a run killed by
// go test's timeout or by SIGKILL, or one kept with --keep-on-failure. It
// finds them by the suite's labels, never by name.
func runCleanup(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("cleanup", flag.ContinueOnError)
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig (default $KUBECONFIG, or in-cluster)")
	olderThan := fs.Duration("older-than", 2*time.Hour, "delete run namespaces at least this old (a younger one may belong to a run in progress)")
	runID := fs.String("run", "", "delete this run's namespace, whatever its age")
	dryRun := fs.Bool("dry-run", false, "list what would be deleted")
	wait := fs.Duration("timeout", 90*time.Second, "how long to wait for each namespace to go")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q: rdmasuite cleanup [--older-than D | --run ID] [--dry-run]", fs.Arg(0))
	}
	rc, _, err := cluster.RESTConfig(*kubeconfig, "")
	if err != nil {
		return err
	}
	if _, err := cluster.Reachable(rc, 10*time.Second); err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return err
	}
	ctx := context.Background()
	stale, err := cluster.StaleRuns(ctx, cs, *olderThan, *runID, time.Now())
	if err != nil {
		return err
	}
	if len(stale) == 0 {
		if *runID != "" {
			return fmt.Errorf("no run namespace for run %q (labels %s=%s, %s=%s)", *runID, cluster.ManagedByLabel, cluster.ManagedBy, cluster.RunLabel, *runID)
		}
		fmt.Fprintf(stdout, "no run namespace older than %s\n", *olderThan)
		return nil
	}
	var errs []error
	for _, s := range stale {
		kept := ""
		if s.Kept {
			kept = ", kept by --keep-on-failure"
		}
		if *dryRun {
			fmt.Fprintf(stdout, "would delete %s (run %s, age %s%s)\n", s.Name, s.RunID, s.Age.Round(time.Second), kept)
			continue
		}
		if err := cluster.DeleteRunNamespace(ctx, cs, s.RunID, *wait); err != nil {
			errs = append(errs, err)
			continue
		}
		fmt.Fprintf(stdout, "deleted %s (run %s, age %s%s)\n", s.Name, s.RunID, s.Age.Round(time.Second), kept)
	}
	return errors.Join(errs...)
}
