package lifecycle

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/rdmasuite/rdmasuite/internal/cluster"
	"github.com/rdmasuite/rdmasuite/internal/latest"
	"github.com/rdmasuite/rdmasuite/internal/nodemark"
	"github.com/rdmasuite/rdmasuite/internal/runner"
	"github.com/rdmasuite/rdmasuite/internal/termwidth"
	"github.com/rdmasuite/rdmasuite/reports"
)

// finishRun writes the results, makes the exit code agree with them,
// publishes them (--pushgateway, the node marks, --results-configmap), and
// deletes the run namespace (or keeps it with --keep-on-failure); with
// --namespace it deletes (or keeps) the run's objects there instead. It
// returns the process's exit code.
func (s *Session) finishRun(code int) int {
	o, f := s.out, s.flags
	s.ckpt.Stop()
	res, code := runner.Reconcile(s.Run.Results(s.started, s.host, s.version), code)
	written := ""
	if path, err := runner.WriteResults(*f.ReportDir, res); err != nil {
		fmt.Fprintf(o.stderr, "rdmasuite: writing results: %v\n", err)
		code = max(code, reports.ExitBroken)
	} else if page, err := runner.WritePage(filepath.Dir(path), res); err != nil {
		// The results are safe; only the HTML page failed.
		written = path
		fmt.Fprintf(o.stderr, "rdmasuite: results in %s, but the HTML page: %v\n", path, err)
		code = max(code, reports.ExitBroken)
	} else {
		written = path
		o.say("rdmasuite: results in %s (render: rdmasuite report %s), acceptance page %s\n", path, path, page)
	}
	if o.plog != nil {
		o.plog.EndStatus() // the table starts on a line of its own
	}
	if len(res.Checks) > 0 {
		width := termwidth.Controlling(os.Stdout)
		if width == 0 {
			width = termwidth.Default // a CI log or the Job's: 80 columns, passing rows folded
		}
		_ = reports.TableWidth(o.stdout, res, width)
		if o.term != nil {
			_ = reports.TableWidth(o.term, res, width)
		}
		o.say("rdmasuite: %s, exit %d\n", reports.SummaryText(res), code)
	} else {
		fmt.Fprintln(o.stderr, "rdmasuite: no check ran: nothing was measured (check --labels / -run)")
	}
	code = s.publish(res, code, written)
	ctx, cancel := context.WithTimeout(context.Background(), *f.CleanupWait+15*time.Second)
	defer cancel()
	if s.Run.SharedNamespace() {
		return s.finishShared(ctx, res, code)
	}
	if !s.nsMayExist {
		return code // the API refused the namespace (or it was never asked for): nothing to keep or delete
	}
	run := s.Run
	if code != 0 && *f.KeepOnFailure {
		why := reports.SummaryText(res)
		if err := cluster.MarkKept(ctx, s.Kube, run.RunID, why); err != nil {
			fmt.Fprintf(o.stderr, "rdmasuite: marking namespace kept: %v\n", err)
		}
		fmt.Fprintf(o.stdout, "rdmasuite: --keep-on-failure: namespace %s kept for debugging; delete it with: rdmasuite cleanup --run %s\n", run.Namespace(), run.RunID)
		return code
	}
	if err := cluster.DeleteRunNamespace(ctx, s.Kube, run.RunID, *f.CleanupWait); err != nil {
		fmt.Fprintf(o.stderr, "rdmasuite: %v (or: rdmasuite cleanup --run %s)\n", err, run.RunID)
		if code == 0 {
			code = 1
		}
	}
	return code
}

// finishShared is finishRun's end with --namespace: the run's objects in
// the existing namespace are deleted by the run label (or kept and their
// pods labelled), and the namespace itself is left as it was.
func (s *Session) finishShared(ctx context.Context, res reports.Run, code int) int {
	o, run := s.out, s.Run
	ns, cleanup := run.Namespace(), fmt.Sprintf("rdmasuite cleanup --namespace %s --run %s", run.Namespace(), run.RunID)
	if code != 0 && *s.flags.KeepOnFailure {
		if err := cluster.MarkRunObjectsKept(ctx, s.Kube, ns, run.RunID, reports.SummaryText(res)); err != nil {
			fmt.Fprintf(o.stderr, "rdmasuite: marking the run's pods kept: %v\n", err)
		}
		fmt.Fprintf(o.stdout, "rdmasuite: --keep-on-failure: run %s's objects kept in namespace %s for debugging (kubectl get pods -n %s -l %s); delete them with: %s\n",
			run.RunID, ns, ns, cluster.RunSelector(run.RunID), cleanup)
		return code
	}
	if _, err := cluster.DeleteRunObjects(ctx, s.Kube, ns, run.RunID, *s.flags.CleanupWait); err != nil {
		fmt.Fprintf(o.stderr, "rdmasuite: %v (or: %s)\n", err, cleanup)
		if code == 0 {
			code = 1
		}
	}
	return code
}

// publish pushes the run's metrics (--pushgateway), marks the nodes
// (--node-annotations, --taint-failed-nodes), then records the run as the
// latest run (--results-configmap), with the exit code as it stands after
// the push and the node marks. A failure of any is said on stderr and never
// hides the run's verdict: a run that did not pass keeps its exit code;
// only a passing run's 0 becomes 2, so a pass that was not published is
// not taken for a published one.
func (s *Session) publish(res reports.Run, code int, resultsPath string) int {
	o := s.out
	failed := func(what string, err error) {
		fmt.Fprintf(o.stderr, "rdmasuite: %s: %v\n", what, err)
		if code == reports.ExitPassed {
			code = reports.ExitBroken
			fmt.Fprintf(o.stderr, "rdmasuite: exit %d, not 0: the checks passed, but %s failed (see above)\n", code, what)
		} else {
			fmt.Fprintf(o.stderr, "rdmasuite: the run's own exit %d stands\n", code)
		}
	}
	if g := s.publishing.PushGroup; g != nil {
		if n, err := g.Push(res); err != nil {
			failed("--pushgateway", err)
		} else {
			fmt.Fprintf(o.stdout, "rdmasuite: pushed %d series of run %s to %s\n", n, res.RunID, g)
		}
	}
	code = nodemark.Finish(context.Background(), s.Kube, res, s.publishing.NodeMarks, publishTimeout, code, o.stdout, o.stderr)
	if name := *s.flags.ResultsCM; name != "" {
		ns := s.Run.Namespace()
		cm, err := latest.Build(ns, name, res, code, resultsPath)
		if err == nil {
			ctx, cancel := context.WithTimeout(context.Background(), publishTimeout)
			err = latest.Write(ctx, s.Kube, cm)
			cancel()
		}
		if err != nil {
			failed("--results-configmap", err)
		} else {
			fmt.Fprintf(o.stdout, "rdmasuite: latest run in configmap %s/%s (%d KiB): kubectl get configmap -n %s %s -o jsonpath='{.data.summary\\.txt}'\n",
				ns, name, latest.Size(cm)>>10, ns, name)
		}
	}
	return code
}
