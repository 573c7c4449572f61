package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/rdmasuite/rdmasuite/internal/cluster"
	"github.com/rdmasuite/rdmasuite/internal/incluster"
	"github.com/rdmasuite/rdmasuite/internal/lifecycle"
	"github.com/rdmasuite/rdmasuite/internal/runner"
	"github.com/rdmasuite/rdmasuite/internal/termwidth"
	"github.com/rdmasuite/rdmasuite/reports"
	"github.com/rdmasuite/rdmasuite/suites/deploy"
	"github.com/rdmasuite/rdmasuite/workloads/probeout"
)

// RunnerImageRepo is where the released runner image lives; a run uses
// the tag of this binary's version, so the suite in the cluster is the
// one this binary was built with.
const RunnerImageRepo = "docker.io/rdmasuite/rdmasuite-runner"

// interrupted is the context a run watches for Ctrl-C (tests replace it).
var interrupted = func() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
}

// jobFlags are what run and results share.
type jobFlags struct {
	kubeconfig, context, namespace, reportDir *string
}

// addJobFlags adds them; nsUsage says what --namespace means to the
// command (run creates it when missing, results only reads it).
func addJobFlags(fs interface {
	String(name, value, usage string) *string
}, nsUsage string) jobFlags {
	return jobFlags{
		kubeconfig: fs.String("kubeconfig", "", "kubeconfig (default: as kubectl: $KUBECONFIG, ~/.kube/config)"),
		context:    fs.String("context", "", "kubeconfig context to use (default: its current context)"),
		namespace:  fs.String("namespace", incluster.DefaultNamespace, nsUsage),
		reportDir:  fs.String("report-dir", "rdmasuite-results", "where the results come back to: results-<run>.json, results.json and the acceptance page"),
	}
}

func (f jobFlags) client() (kubernetes.Interface, string, error) {
	rc, where, err := cluster.RESTConfig(*f.kubeconfig, *f.context)
	if err != nil {
		return nil, "", err
	}
	version, err := cluster.ReachableFrom(rc, where, 10*time.Second)
	if err != nil {
		return nil, "", err
	}
	cs, err := kubernetes.NewForConfig(rc)
	return cs, fmt.Sprintf("%s (%s, kubeconfig %s)", rc.Host, version, where), err
}

// runJob is `rdmasuite run`: the acceptance suite as a Job in the cluster,
// its log streamed here, its results brought back, everything it created
// deleted, the suite's exit code returned.
func runJob(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("run")
	jf := addJobFlags(fs, "namespace of the run (created with the runner's ServiceAccount and RBAC when missing, and deleted again)")
	image := fs.String("image", RunnerImageRepo+":"+probeout.Version, "runner image (the compiled suite); default: the release of this binary's version")
	timeout := fs.Duration("timeout", 110*time.Minute, "the suite's go test -timeout; the Job's deadline is 15 minutes more")
	startTimeout := fs.Duration("start-timeout", incluster.DefaultStartTimeout, "how long the runner pod may take to start (scheduling, image pull)")
	waitRun := fs.Bool("wait", true, "stream the run and wait for it; --wait=false creates the Job and returns (fetch with rdmasuite results)")
	keep := fs.Bool("keep", false, "keep the Job and what the run created (default: delete them when the results are back)")
	var selector, env listFlag
	fs.Var(&selector, "runner-node-selector", "KEY=VALUE the runner pod's node must carry (repeatable, comma-separated)")
	fs.Var(&env, "runner-env", "NAME=VALUE environment of the runner pod (repeatable, comma-separated; e.g. an API server address the pod network reaches)")
	own, suiteArgs := args, []string(nil)
	for i, a := range args {
		if a == "--" {
			own, suiteArgs = args[:i], args[i+1:]
			break
		}
	}
	pos, err := parseArgs(fs, own)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return fmt.Errorf("unexpected argument %q: the suite's flags go after --, e.g. rdmasuite run -- --labels suite=rdma", pos[0])
	}
	if err := incluster.CheckSuiteArgs(suiteArgs); err != nil {
		return err
	}
	// Every suite flag is checked here, as the runner will parse it,
	// before anything is applied: a typo fails in a second, not after the
	// namespace, the RBAC and the Job exist.
	if err := lifecycle.CheckArgs(suiteArgs); err != nil {
		return fmt.Errorf("%w (the suite's flags, after --)", err)
	}
	if *image == RunnerImageRepo+":"+probeout.Version && !probeout.Released(probeout.Version) {
		fmt.Fprintf(stderr, "rdmasuite run: warning: image %s is the default of a build without a release version (this binary is %s): "+
			"no registry serves that tag; pass --image with a released runner or your own build (make push-images)\n", *image, probeout.Version)
	}
	sel, err := keyValues(selector, "--runner-node-selector")
	if err != nil {
		return err
	}
	envMap, err := keyValues(env, "--runner-env")
	if err != nil {
		return err
	}
	objs, err := incluster.Load(deploy.Files)
	if err != nil {
		return err
	}
	if *jf.namespace != incluster.DefaultNamespace {
		objs, err = objs.InNamespace(*jf.namespace)
		if err != nil {
			return err
		}
	}
	spec := incluster.JobSpec{ID: cluster.NewRunID(), Image: *image, SuiteArgs: suiteArgs, NodeSelector: sel, Timeout: *timeout}
	for _, k := range sortedKeys(envMap) {
		spec.Env = append(spec.Env, corev1.EnvVar{Name: k, Value: envMap[k]})
	}
	job, err := incluster.BuildJob(objs, spec)
	if err != nil {
		return err
	}
	cs, where, err := jf.client()
	if err != nil {
		return err
	}
	r := &incluster.Runner{Kube: cs, Out: stdout, Err: stderr, Objects: objs, StartTimeout: *startTimeout,
		GracePeriod: graceOf(job.Spec.Template.Spec.TerminationGracePeriodSeconds) + 30*time.Second}
	ns := objs.Namespace.Name
	fmt.Fprintf(stdout, "rdmasuite run: cluster %s, job %s/%s, image %s\nrdmasuite run: suite flags: %s\n",
		where, ns, job.Name, *image, strings.Join(job.Spec.Template.Spec.Containers[0].Args, " "))
	ctx, stop := interrupted()
	defer stop()
	created, err := r.Start(ctx, job)
	if len(created) > 0 {
		fmt.Fprintf(stdout, "rdmasuite run: created %s\n", refList(created))
	}
	if err != nil {
		return errors.Join(err, cleanupAfter(r, ns, "", created, stdout))
	}
	if !*waitRun {
		fmt.Fprintf(stdout, "rdmasuite run: detached (--wait=false); the run goes on in the cluster. Its log: kubectl -n %s logs -f job/%s\n"+
			"rdmasuite run: fetch the results, then delete what the run created: rdmasuite results --namespace %s --job %s --delete\n", ns, job.Name, ns, job.Name)
		return nil
	}
	out, err := r.Follow(ctx, ns, job.Name)
	if ctx.Err() != nil {
		fmt.Fprintf(stderr, "rdmasuite run: interrupted: deleting job %s/%s (its runner deletes its probe pods first) and what the run created\n", ns, job.Name)
		cerr := r.Cleanup(ns, job.Name, created)
		if cerr == nil {
			fmt.Fprintln(stderr, "rdmasuite run: interrupted: nothing of the run is left")
		}
		return &exitError{code: 130, err: errors.Join(errors.New("interrupted"), cerr)}
	}
	if err != nil {
		fmt.Fprintf(stderr, "rdmasuite run: %v\n", err)
		if !*keep {
			return errors.Join(err, cleanupAfter(r, ns, job.Name, created, stdout))
		}
		return err
	}
	rerr := showResults(out, *jf.reportDir, stdout, stderr)
	if !*keep {
		if err := cleanupAfter(r, ns, job.Name, created, stdout); err != nil {
			fmt.Fprintf(stderr, "rdmasuite run: cleanup: %v\n", err)
			if out.Code == reports.ExitPassed {
				out.Code = reports.ExitBroken
			}
		}
	} else {
		fmt.Fprintf(stdout, "rdmasuite run: --keep: job %s/%s and %s kept\n", ns, job.Name, refList(created))
	}
	return codeError(out, rerr)
}

// runResults is `rdmasuite results`: the results of a run started with
// --wait=false (or of the latest run in the namespace), rendered, with the
// suite's exit code; --delete then deletes what that run created.
func runResults(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("results")
	jf := addJobFlags(fs, "namespace the run's Job is in (read only; with --delete, what that run created is deleted)")
	jobName := fs.String("job", "", "the run's Job (rdmasuite run prints it; default: the newest Job rdmasuite run created in --namespace)")
	waitRun := fs.Bool("wait", true, "wait for a run still going; --wait=false says it is still running (exit 4, so a script can poll) instead")
	del := fs.Bool("delete", false, "after fetching, delete the Job and what its run created")
	startTimeout := fs.Duration("start-timeout", incluster.DefaultStartTimeout, "how long the runner pod of a run still starting may take (scheduling, image pull)")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return fmt.Errorf("unexpected argument %q (see: rdmasuite results --help)", pos[0])
	}
	cs, _, err := jf.client()
	if err != nil {
		return err
	}
	ns := *jf.namespace
	ctx, stop := interrupted()
	defer stop()
	jobs, err := cs.BatchV1().Jobs(ns).List(ctx, metav1.ListOptions{LabelSelector: incluster.RunLabel})
	if err != nil {
		return fmt.Errorf("list the runs' jobs in %s: %w", ns, err)
	}
	j, err := incluster.PickJob(jobs.Items, *jobName)
	if err != nil {
		return fmt.Errorf("%w in namespace %s", err, ns)
	}
	r := &incluster.Runner{Kube: cs, Out: stdout, Err: stderr, StartTimeout: *startTimeout,
		GracePeriod: graceOf(j.Spec.Template.Spec.TerminationGracePeriodSeconds) + 30*time.Second}
	if !*waitRun && !incluster.Finished(j) {
		return &exitError{reports.ExitStillRunning, fmt.Errorf("job %s/%s is still running (kubectl -n %s logs -f job/%s); fetch again later or with --wait (exit %d: still running, poll again)",
			ns, j.Name, ns, j.Name, reports.ExitStillRunning)}
	}
	var out incluster.Outcome
	if incluster.Finished(j) {
		out, err = r.Fetch(ctx, ns, j)
	} else {
		fmt.Fprintf(stdout, "rdmasuite results: job %s/%s is still running; following it\n", ns, j.Name)
		out, err = r.Follow(ctx, ns, j.Name)
	}
	if err != nil {
		return err
	}
	rerr := showResults(out, *jf.reportDir, stdout, stderr)
	if *del {
		if err := cleanupAfter(r, ns, j.Name, incluster.ParseCreated(j), stdout); err != nil {
			fmt.Fprintf(stderr, "rdmasuite results: cleanup: %v\n", err)
			if out.Code == reports.ExitPassed {
				out.Code = reports.ExitBroken
			}
		}
	}
	return codeError(out, rerr)
}

// showResults writes the run's results under dir with the acceptance page
// and renders them; with no results it says why.
func showResults(out incluster.Outcome, dir string, stdout, stderr io.Writer) error {
	if out.Why != "" {
		fmt.Fprintf(stderr, "rdmasuite run: %s\n", out.Why)
	}
	if out.Results == nil {
		return nil
	}
	path, err := runner.WriteResults(dir, *out.Results)
	if err != nil {
		return fmt.Errorf("writing the results: %w", err)
	}
	page, err := runner.WritePage(filepath.Dir(path), *out.Results)
	if err != nil {
		return fmt.Errorf("writing the acceptance page: %w", err)
	}
	if err := reports.TableWidth(stdout, *out.Results, termwidth.Fit(stdout)); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "rdmasuite run: results in %s (render: rdmasuite report %s), acceptance page %s\nrdmasuite run: %s, exit %d\n",
		path, path, page, reports.SummaryText(*out.Results), out.Code)
	return nil
}

func codeError(out incluster.Outcome, rerr error) error {
	if rerr != nil {
		return rerr
	}
	if out.Code == reports.ExitPassed {
		return nil
	}
	why := out.Why
	if out.Results != nil {
		why = fmt.Sprintf("exit %d, the suite's (its verdict is above)", out.Code)
	}
	return &exitError{code: out.Code, err: errors.New(why)}
}

func cleanupAfter(r *incluster.Runner, ns, job string, created []incluster.Ref, stdout io.Writer) error {
	err := r.Cleanup(ns, job, created)
	if err == nil {
		what := refList(created)
		if job != "" {
			what = strings.TrimSuffix("job/"+job+", "+what, ", ")
		}
		if what != "" {
			fmt.Fprintf(stdout, "rdmasuite run: deleted %s\n", what)
		}
	}
	return err
}

func refList(refs []incluster.Ref) string {
	s := make([]string, len(refs))
	for i, r := range refs {
		s[i] = r.String()
	}
	return strings.Join(s, ", ")
}

func graceOf(s *int64) time.Duration {
	if s == nil {
		return 30 * time.Second
	}
	return time.Duration(*s) * time.Second
}

// keyValues reads KEY=VALUE items.
func keyValues(items []string, flagName string) (map[string]string, error) {
	m := map[string]string{}
	for _, it := range items {
		k, v, ok := strings.Cut(it, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("%s %q: want KEY=VALUE", flagName, it)
		}
		m[k] = v
	}
	return m, nil
}

func sortedKeys(m map[string]string) []string { return slices.Sorted(maps.Keys(m)) }
