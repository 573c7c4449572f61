package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/rdmasuite/rdmasuite/internal/cluster"
	"github.com/rdmasuite/rdmasuite/internal/incluster"
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
	olderGiven := false
	fs.Visit(func(f *flag.Flag) { olderGiven = olderGiven || f.Name == "older-than" })
	if o.RunID != "" && olderGiven {
		return fmt.Errorf("--run %s and --older-than %s both select runs: give one (--run deletes that run whatever its age)", o.RunID, o.OlderThan)
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

// cleanup is runCleanup on a clientset: the suite's runs, then the Jobs
// of rdmasuite run invocations that did not clean up after themselves (a
// killed CLI leaves its Job, and the objects it created, behind).
func cleanup(ctx context.Context, cs kubernetes.Interface, o cleanupOptions, now time.Time, stdout io.Writer) error {
	jobs, jerr := cleanupCLIRuns(ctx, cs, o, now, stdout)
	var err error
	if o.Namespace != "" {
		err = cleanupShared(ctx, cs, o, now, stdout, jobs > 0)
	} else {
		err = cleanupNamespaces(ctx, cs, o, now, stdout, jobs > 0)
	}
	return errors.Join(err, jerr)
}

// cleanupNamespaces deletes run namespaces: the one of --run, or those at
// least --older-than old. foundJob: --run matched a CLI run's Job, so no
// namespace of that id is no error.
func cleanupNamespaces(ctx context.Context, cs kubernetes.Interface, o cleanupOptions, now time.Time, stdout io.Writer, foundJob bool) error {
	stale, err := cluster.StaleRuns(ctx, cs, o.OlderThan, o.RunID, now)
	if err != nil {
		return err
	}
	if len(stale) == 0 {
		switch {
		case o.RunID != "" && foundJob:
		case o.RunID != "":
			return fmt.Errorf("no run namespace and no rdmasuite run job for run %q (labels %s=%s, %s=%s; %s=%s)", o.RunID,
				cluster.ManagedByLabel, cluster.ManagedBy, cluster.RunLabel, o.RunID, incluster.RunLabel, o.RunID)
		default:
			fmt.Fprintf(stdout, "no run namespace older than %s\n", o.OlderThan)
		}
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
func cleanupShared(ctx context.Context, cs kubernetes.Interface, o cleanupOptions, now time.Time, stdout io.Writer, foundJob bool) error {
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
		if objs.Empty() && foundJob {
			return nil
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

// cleanupCLIRuns deletes the Jobs of rdmasuite run invocations (label
// incluster.RunLabel) that --run names or that are at least --older-than
// old, in --namespace or in every namespace, with the objects each one's
// run created (its created annotation). It returns how many it found.
func cleanupCLIRuns(ctx context.Context, cs kubernetes.Interface, o cleanupOptions, now time.Time, stdout io.Writer) (int, error) {
	sel := incluster.RunLabel
	if o.RunID != "" {
		sel += "=" + o.RunID
	}
	list, err := cs.BatchV1().Jobs(o.Namespace).List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return 0, fmt.Errorf("list rdmasuite run jobs (%s): %w", sel, err)
	}
	found := 0
	var errs []error
	for i := range list.Items {
		j := &list.Items[i]
		age := now.Sub(j.CreationTimestamp.Time)
		if o.RunID == "" && age < o.OlderThan {
			continue
		}
		found++
		state := "running"
		if incluster.Finished(j) {
			state = "finished"
		}
		what := fmt.Sprintf("job %s/%s (rdmasuite run %s, %s, age %s)", j.Namespace, j.Name, j.Labels[incluster.RunLabel], state, age.Round(time.Second))
		if o.DryRun {
			fmt.Fprintf(stdout, "would delete %s and what it created\n", what)
			continue
		}
		r := &incluster.Runner{Kube: cs, Out: io.Discard, Err: io.Discard, GracePeriod: graceOf(j.Spec.Template.Spec.TerminationGracePeriodSeconds) + 30*time.Second}
		if err := r.Cleanup(j.Namespace, j.Name, incluster.ParseCreated(j)); err != nil {
			errs = append(errs, err)
			continue
		}
		fmt.Fprintf(stdout, "deleted %s and what it created\n", what)
	}
	return found, errors.Join(errs...)
}
