package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/rdmasuite/rdmasuite/internal/cluster"
)

// cleanupOptions are rdmasuite cleanup's flags.
type cleanupOptions struct {
	Namespace string // a shared namespace (--namespace): delete runs' objects there, never the namespace
	OlderThan time.Duration
	RunID     string
	DryRun    bool
	Wait      time.Duration
}

// runCleanup deletes what a run left behind: a run killed by go test's
// timeout or by SIGKILL, or one kept with --keep-on-failure. By default
// those are run namespaces; with --namespace NS they are runs' objects in
// NS. It finds them by the suite's labels, never by name.
func runCleanup(args []string, stdout io.Writer) error {
	fs := newFlagSet("cleanup")
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig (default: as kubectl: $KUBECONFIG, ~/.kube/config, else the pod's ServiceAccount)")
	kubeContext := fs.String("context", "", "kubeconfig context to use (default: its current context)")
	var o cleanupOptions
	fs.StringVar(&o.Namespace, "namespace", "", "the existing namespace runs used with the suite's --namespace: delete runs' objects there (by the run label on pods), never the namespace itself")
	fs.DurationVar(&o.OlderThan, "older-than", 2*time.Hour, "delete runs at least this old (a younger one may be in progress); with --namespace a run's age is its oldest pod's")
	fs.StringVar(&o.RunID, "run", "", "delete this run's namespace (with --namespace: its objects there), whatever its age")
	fs.BoolVar(&o.DryRun, "dry-run", false, "list what would be deleted")
	fs.DurationVar(&o.Wait, "timeout", 90*time.Second, "how long to wait for each namespace to go (with --namespace: for each run's pods)")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return fmt.Errorf("unexpected argument %q: rdmasuite cleanup [--namespace NS] [--older-than D | --run ID] [--dry-run] (see: rdmasuite cleanup --help)", pos[0])
	}
	if o.RunID == "" && o.OlderThan < 0 {
		// A negative age is a typo (-1h for 1h), never a request: it would
		// select every run, a live one included. 0s says that on purpose.
		return fmt.Errorf("--older-than %s is negative: it would select every run, a live one included; give an age such as 2h (0s deletes every run on purpose), or --run ID for one run", o.OlderThan)
	}
	rc, where, err := cluster.RESTConfig(*kubeconfig, *kubeContext)
	if err != nil {
		return err
	}
	if _, err := cluster.ReachableFrom(rc, where, 10*time.Second); err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return err
	}
	return cleanup(context.Background(), cs, o, time.Now(), stdout)
}

// cleanup is runCleanup on a clientset.
func cleanup(ctx context.Context, cs kubernetes.Interface, o cleanupOptions, now time.Time, stdout io.Writer) error {
	if o.Namespace != "" {
		return cleanupShared(ctx, cs, o, now, stdout)
	}
	stale, err := cluster.StaleRuns(ctx, cs, o.OlderThan, o.RunID, now)
	if err != nil {
		return err
	}
	if len(stale) == 0 {
		if o.RunID != "" {
			return fmt.Errorf("no run namespace for run %q (labels %s=%s, %s=%s)", o.RunID, cluster.ManagedByLabel, cluster.ManagedBy, cluster.RunLabel, o.RunID)
		}
		fmt.Fprintf(stdout, "no run namespace older than %s\n", o.OlderThan)
		return nil
	}
	var errs []error
	for _, s := range stale {
		kept := ""
		if s.Kept {
			kept = ", kept by --keep-on-failure"
		}
		if o.DryRun {
			fmt.Fprintf(stdout, "would delete %s (run %s, age %s%s)\n", s.Name, s.RunID, s.Age.Round(time.Second), kept)
			continue
		}
		if err := cluster.DeleteRunNamespace(ctx, cs, s.RunID, o.Wait); err != nil {
			errs = append(errs, err)
			continue
		}
		fmt.Fprintf(stdout, "deleted %s (run %s, age %s%s)\n", s.Name, s.RunID, s.Age.Round(time.Second), kept)
	}
	return errors.Join(errs...)
}

// cleanupShared deletes runs' objects in the shared namespace o.Namespace:
// the one of --run (found by its label on any kind of object), or every run
// whose oldest pod is at least --older-than old. The namespace stays.
func cleanupShared(ctx context.Context, cs kubernetes.Interface, o cleanupOptions, now time.Time, stdout io.Writer) error {
	ns := o.Namespace
	if err := cluster.CheckNamespace(ctx, cs, ns); err != nil {
		return err
	}
	var runs []cluster.Stale
	if o.RunID != "" {
		// A run whose pods are gone may still have a service, a job or a
		// PVC: --run deletes whatever carries its label.
		objs, err := cluster.ListRunObjects(ctx, cs, ns, o.RunID)
		if err != nil {
			return err
		}
		if objs.Empty() {
			return fmt.Errorf("no object of run %q in namespace %s (labels %s)", o.RunID, ns, cluster.RunSelector(o.RunID))
		}
		stale, err := cluster.StaleRunsIn(ctx, cs, ns, 0, o.RunID, now)
		if err != nil {
			return err
		}
		runs = append(runs, cluster.Stale{Name: ns, RunID: o.RunID})
		if len(stale) == 1 {
			runs[0] = stale[0]
		}
	} else {
		stale, err := cluster.StaleRunsIn(ctx, cs, ns, o.OlderThan, "", now)
		if err != nil {
			return err
		}
		if len(stale) == 0 {
			fmt.Fprintf(stdout, "no run in namespace %s older than %s\n", ns, o.OlderThan)
			return nil
		}
		runs = stale
	}
	var errs []error
	for _, s := range runs {
		about := fmt.Sprintf("run %s in namespace %s", s.RunID, ns)
		if s.Pods > 0 {
			about += fmt.Sprintf(" (age %s", s.Age.Round(time.Second))
			if s.Kept {
				about += ", kept by --keep-on-failure"
			}
			about += ")"
		}
		if o.DryRun {
			objs, err := cluster.ListRunObjects(ctx, cs, ns, s.RunID)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			fmt.Fprintf(stdout, "would delete %s: %s\n", about, objs)
			warnSkipped(objs)
			continue
		}
		objs, err := cluster.DeleteRunObjects(ctx, cs, ns, s.RunID, o.Wait)
		warnSkipped(objs)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		fmt.Fprintf(stdout, "deleted %s: %s\n", about, objs)
	}
	return errors.Join(errs...)
}

// warnSkipped tells a person which kinds a cleanup was not allowed to list.
func warnSkipped(o cluster.RunObjects) {
	if len(o.Skipped) > 0 {
		fmt.Fprintf(os.Stderr, "rdmasuite: not allowed to list %s in %s: skipped them for run %s (a run without that RBAC created none)\n",
			strings.Join(o.Skipped, ", "), o.Namespace, o.RunID)
	}
}
