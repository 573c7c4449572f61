// Package lifecycle is one acceptance run's life around its features: the
// suite's flags turned into the runner's settings (every flag checked
// before the first API call), the connection, the plan, the run namespace,
// the progress log, the internal deadline and the interrupts, and at the
// end the results, the exit code that agrees with them, publishing and the
// cleanup. The suites package declares the features and hands its
// TestMain to Start and Finish; the in-cluster runner image is that
// compiled suite, so both run this code.
//
// Start creates one namespace for the run and Finish deletes it on every
// exit path: normal end, failed features, --fail-fast (which skips feature
// teardown), SIGINT/SIGTERM/SIGHUP, and an internal deadline set below `go
// test -timeout` (whose panic would skip all cleanup). With --namespace NS
// the run lives in that existing namespace instead, and the same exit paths
// delete exactly the run's objects there (by the run label), never NS. On
// every one of those paths the results are written first, and, when asked,
// pushed to a Pushgateway (--pushgateway) and kept as the latest run in a
// ConfigMap of NS (--results-configmap); neither ever hides the run's
// verdict.
package lifecycle

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/e2e-framework/klient"
	"sigs.k8s.io/e2e-framework/pkg/env"
	"sigs.k8s.io/e2e-framework/pkg/envconf"

	"github.com/rdmasuite/rdmasuite/internal/cluster"
	"github.com/rdmasuite/rdmasuite/internal/disrupt"
	"github.com/rdmasuite/rdmasuite/internal/latest"
	"github.com/rdmasuite/rdmasuite/internal/nodemark"
	"github.com/rdmasuite/rdmasuite/internal/podrun"
	"github.com/rdmasuite/rdmasuite/internal/progress"
	"github.com/rdmasuite/rdmasuite/internal/runner"
	"github.com/rdmasuite/rdmasuite/internal/suiteflags"
	"github.com/rdmasuite/rdmasuite/internal/termwidth"
	"github.com/rdmasuite/rdmasuite/reports"
)

// publishTimeout bounds the push and the ConfigMap write at the run's end
// (each), so that they leave the cleanup its time after a SIGTERM.
const publishTimeout = 20 * time.Second

// Options is what the suites package hands the lifecycle.
type Options struct {
	Flags *Flags
	// SuiteFlags are the suite's flag names, listed first by --help.
	SuiteFlags []string
	// Selected says, per variant label, which of the features the plan
	// schedules (the paired features, memlock) the run selected: the
	// declarations with the filters in cfg applied, as go test and
	// e2e-framework will apply them.
	Selected func(cfg *envconf.Config, variants []runner.Variant) map[string][]string
}

// Session is one run: what the features use (Env, Kube, Run, Disruptive),
// and what Finish needs to end it.
type Session struct {
	Env  env.Environment
	Kube kubernetes.Interface
	Run  *runner.Runner
	// Disruptive is the disruptive feature's gate, decided before the run
	// namespace exists.
	Disruptive disrupt.Decision

	flags      *Flags
	publishing Publishing
	host       string // the API server
	version    string // its Kubernetes version
	started    time.Time
	// nsMayExist: the run asked the API for its namespace and was not
	// refused (set just before the request, so an interrupt during it
	// still deletes).
	nsMayExist  bool
	setupFailed bool
	// deleting says what the cleanup of an interrupted run deletes.
	deleting string
	// cancel ends the features' context (the internal deadline's).
	cancel     context.CancelFunc
	out        *output
	finishOnce sync.Once
	// ckpt keeps the results file on disk while the run goes.
	ckpt *checkpoints
	// exit ends the process; tests replace it.
	exit func(int)
}

// fatal ends a run that could not start: no check ran, nothing was created.
func fatal(err error) {
	fmt.Fprintf(os.Stderr, "rdmasuite: %v\n", err)
	os.Exit(reports.ExitBroken)
}

// Start runs everything before the features, on flag.CommandLine: --help,
// go test's -test.list (which needs no cluster and exits), the flags, the
// connection, the variants, the plan (--dry-run exits there), the progress
// log, the deadline and the interrupt handler, and the test environment
// whose setup creates the run namespace. A setup step that fails ends the
// run as a result (an error check with the cause and the fix); a run that
// cannot start at all exits 2 with the reason.
func Start(m *testing.M, o Options) *Session {
	f := o.Flags
	cfg := parseFlags(m, o)
	s := &Session{flags: f, exit: os.Exit, out: newOutput(), cancel: func() {}}
	// Every flag is checked before the first API call: a typo fails in
	// seconds with its fix, never after the cluster answered.
	rcfg, err := f.RunnerConfig(os.Stdout, func() error {
		var err error
		s.Disruptive, err = f.DisruptiveGate(flag.CommandLine)
		return err
	})
	if err != nil {
		fatal(err)
	}
	if s.publishing, err = f.Publishing(); err != nil {
		fatal(err)
	}
	rc, where, rateLine := s.connect(cfg)
	kl, err := klient.New(rc)
	if err != nil {
		fatal(err)
	}
	rcfg, variantLines := s.variants(rcfg)
	// The features the run selected that its plan schedules: the paired
	// ones share their pods (the plan lines of each variant say how).
	if o.Selected != nil {
		rcfg.Selected = o.Selected(cfg, rcfg.VariantList())
	}
	runID := cluster.NewRunID()
	s.Run = runner.New(s.Kube, rcfg, runID)
	// A pair's client pod starts beside its server and gets the server's
	// address over pods/attach (when the identity may attach: the runner
	// asks once and says which way the pairs start).
	s.Run.Attach = podrun.RemoteAttach{Config: rc, Kube: s.Kube}
	// Better: one probe pod per node and variant, every round's runs
	// exec'd in it (when the identity may exec in the run namespace).
	s.Run.Exec = podrun.RemoteExec{Config: rc, Kube: s.Kube}
	ns := s.Run.Namespace()
	cfg.WithClient(kl).WithNamespace(ns)
	s.deleting = "deleting run namespace " + ns
	s.started = time.Now()
	mode := s.checkBeforeCreating(runID)
	s.startProgress(runID, *f.DryRun)
	s.header(rc.Host, where, ns, mode, variantLines, rateLine, *f.DryRun)
	if *f.DryRun {
		s.out.say("rdmasuite: --dry-run: nothing was created; the run would start here\n")
		os.Exit(0)
	}
	s.started = time.Now()
	ctx := s.armDeadlineAndSignals()
	s.ckpt = s.startCheckpoints()
	if s.Env, err = env.NewWithContext(ctx, cfg); err != nil {
		fatal(err)
	}
	s.Env.Setup(func(ctx context.Context, _ *envconf.Config) (context.Context, error) {
		return ctx, s.createNamespace(ctx)
	})
	// The plan the header printed runs once, before the features, which
	// read their checks from it; it records every check it makes.
	s.Env.Setup(func(ctx context.Context, _ *envconf.Config) (context.Context, error) {
		s.Run.Execute(ctx)
		return ctx, nil
	})
	return s
}

// parseFlags handles what needs no cluster: --help (the suite's flags
// first), the flags themselves, and go test's -test.list (which exits).
func parseFlags(m *testing.M, o Options) *envconf.Config {
	flag.CommandLine.Usage = func() {
		width := termwidth.Of(os.Stdout)
		if width == 0 {
			width = termwidth.Default
		}
		suiteflags.UsageWidth(os.Stdout, flag.CommandLine, o.SuiteFlags, width)
	}
	cfg, err := envconf.NewFromFlags()
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		fatal(err)
	}
	if FlagValue(flag.CommandLine, "test.list") != "" {
		os.Exit(m.Run()) // listing tests needs no cluster
	}
	return cfg
}

// connect finds the cluster as kubectl does, proves it answers, and makes
// the run's clientset, its rate scaled to the fleet; rateLine says so
// when it was.
func (s *Session) connect(cfg *envconf.Config) (rc *rest.Config, where, rateLine string) {
	rc, where, err := cluster.RESTConfig(cfg.KubeconfigFile(), cfg.KubeContext())
	if errors.Is(err, cluster.ErrNoCluster) {
		fatal(fmt.Errorf("%w; the suite's flags go after -args: go test ./suites -args --kubeconfig=FILE", err))
	}
	if err != nil {
		fatal(err)
	}
	if s.version, err = cluster.ReachableFrom(rc, where, 10*time.Second); err != nil {
		fatal(err)
	}
	if s.Kube, err = kubernetes.NewForConfig(rc); err != nil {
		fatal(err)
	}
	s.host = rc.Host
	// The client's rate grows with the fleet (cluster.ScaleClientRate), so
	// that a round whose pairs all start at once never queues in the
	// suite's own client.
	lctx, lcancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer lcancel()
	if nl, err := s.Kube.CoreV1().Nodes().List(lctx, metav1.ListOptions{}); err == nil && cluster.ScaleClientRate(rc, len(nl.Items)) {
		rateLine = fmt.Sprintf("client rate %.0f requests/s, burst %d (%d nodes in the cluster: %d/%d per node)",
			rc.QPS, rc.Burst, len(nl.Items), cluster.ClientQPSPerNode, cluster.ClientBurstPerNode)
		if s.Kube, err = kubernetes.NewForConfig(rc); err != nil {
			fatal(err)
		}
	}
	return rc, where, rateLine
}

// variants resolves --variants auto to the variants this cluster can run,
// and the resource names the flags left at their defaults to the
// cluster's, before the features are declared (they are declared per
// variant); the lines say what it chose and why.
func (s *Session) variants(rcfg runner.Config) (runner.Config, []string) {
	vctx, vcancel := context.WithTimeout(context.Background(), 30*time.Second)
	facts, err := runner.GatherVariantFacts(vctx, s.Kube, rcfg)
	vcancel()
	if err != nil {
		what := "variants: auto"
		if !rcfg.VariantsAuto {
			what = "resources"
		}
		return rcfg, []string{fmt.Sprintf("%s could not read the cluster (%v): running %s with %s", what, err,
			strings.Join(rcfg.Variants, ", "), strings.Join(append(slices.Clone(rcfg.RDMAResources), rcfg.HostdevRes), ", "))}
	}
	return runner.ResolveVariants(rcfg, facts)
}

// checkBeforeCreating proves what the run needs before it creates
// anything: with --namespace, that namespace (and the results ConfigMap's
// right to be written there); with node marks, the right to mark. A
// refusal ends the run as its result. It returns the header's note on the
// namespace mode.
func (s *Session) checkBeforeCreating(runID string) (mode string) {
	f, run := s.flags, s.Run
	ns := run.Namespace()
	if run.SharedNamespace() {
		// Nothing is created before the namespace is proven there.
		if err := s.check(func(ctx context.Context) error { return cluster.CheckNamespace(ctx, s.Kube, ns) }); err != nil {
			s.stopAtSetup(runner.SetupNamespace, err)
		}
		if *f.ResultsCM != "" {
			if err := s.check(func(ctx context.Context) error {
				return latest.Check(ctx, s.Kube, ns, *f.ResultsCM, warn)
			}); err != nil {
				s.stopAtSetup(runner.SetupResultsCM, err)
			}
		}
		mode = fmt.Sprintf(" (existing, --namespace; the run's objects carry %s=%s)", cluster.RunLabel, runID)
		s.deleting = "deleting run objects in namespace " + ns
	}
	_ = s.check(func(ctx context.Context) error {
		if w := s.otherRuns(ctx, runID); w != "" {
			warn(w)
		}
		return nil
	})
	if s.publishing.NodeMarks.Enabled() {
		if err := s.check(func(ctx context.Context) error {
			return nodemark.Check(ctx, s.Kube, s.publishing.NodeMarks, warn)
		}); err != nil {
			s.stopAtSetup(runner.SetupNodeMarks, err)
		}
	}
	return mode
}

// otherRuns is the warning about other runs' objects in the cluster: a run
// still going (its traffic shares the links this one measures), one whose
// runner was killed before its cleanup (its probe pods may still hold RDMA
// devices and GPUs until their hold ends), one kept with
// --keep-on-failure; "" when there are none. A list that fails says
// nothing: this is advice.
func (s *Session) otherRuns(ctx context.Context, runID string) string {
	var others []cluster.Stale
	var err error
	if s.Run.SharedNamespace() {
		others, err = cluster.StaleRunsIn(ctx, s.Kube, s.Run.Namespace(), 0, "", time.Now())
	} else {
		others, err = cluster.StaleRuns(ctx, s.Kube, 0, "", time.Now())
	}
	if err != nil {
		return ""
	}
	var list []string
	for _, o := range others {
		if o.RunID == runID {
			continue
		}
		what := fmt.Sprintf("run %s (%s, %s old", o.RunID, o.Name, o.Age.Round(time.Minute))
		if o.Pods > 0 {
			what += fmt.Sprintf(", %d pod(s)", o.Pods)
		}
		if o.Kept {
			what += ", kept with --keep-on-failure"
		}
		list = append(list, what+")")
	}
	if len(list) == 0 {
		return ""
	}
	cleanup := "rdmasuite cleanup --run ID"
	if s.Run.SharedNamespace() {
		cleanup = "rdmasuite cleanup --namespace " + s.Run.Namespace() + " --run ID"
	}
	return fmt.Sprintf("%d other run(s) have objects in the cluster: %s: a run still going (its traffic shares the links this run measures), "+
		"a runner killed before its cleanup (its probe pods may hold RDMA devices and GPUs until their hold ends) or a run kept for debugging; "+
		"if none is still going, delete them with: %s", len(list), strings.Join(list, ", "), cleanup)
}

// armDeadlineAndSignals sets the internal deadline (features stop starting
// pods in time for the teardown to finish before go test's own timeout
// panics) and the interrupt handler, and returns the features' context.
func (s *Session) armDeadlineAndSignals() context.Context {
	ctx := context.Background()
	deadline, reserve, hasDeadline := runner.Deadline(s.started, testTimeout())
	if hasDeadline {
		ctx, s.cancel = context.WithDeadline(ctx, deadline)
		fmt.Printf("rdmasuite: internal deadline %s (go test -timeout less %s for teardown)\n", deadline.Format(time.TimeOnly), reserve)
	}
	// Interrupts (Ctrl-C, kill, a closed ssh session) must not leak the
	// namespace (or, with --namespace, the run's objects): delete, then exit.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	go func() {
		sig := <-sigs
		s.end(130, sig.String())
	}()
	if hasDeadline {
		// A feature that ignores its context must not take the cleanup
		// down with it: half the reserve after the deadline, finish anyway.
		time.AfterFunc(time.Until(deadline.Add(reserve/2)), func() {
			s.end(reports.ExitChecksFailed, "internal deadline passed (context deadline exceeded) and the features did not return")
		})
	}
	return ctx
}

// Finish ends the run with go test's code for the features (Env.Run's):
// results, exit code, publishing, cleanup. It does not return.
func (s *Session) Finish(code int) { s.end(code, "") }

// end finishes the run once, whichever path comes first (the features'
// end, an interrupt, the deadline). why says what cut the run short ("":
// nothing); the features it cut short get an error row each in the
// results, never a silently shorter report.
func (s *Session) end(code int, why string) {
	s.finishOnce.Do(func() {
		if s.setupFailed {
			code = 0 // the setup row decides, as the results say
		}
		if why != "" {
			if code == 130 {
				why += s.stoppedBy()
			}
			fmt.Fprintf(s.out.stderr, "rdmasuite: %s: %s\n", why, s.deleting)
			s.Run.RecordUnfinished(why)
		}
		code = s.finishRun(code)
		s.cancel()
		s.exit(code)
	})
}

// createNamespace is the test environment's setup: the run namespace (none
// with --namespace: it was checked before). A refusal is the run's result.
func (s *Session) createNamespace(ctx context.Context) error {
	if s.Run.SharedNamespace() {
		return nil
	}
	s.nsMayExist = true
	err := cluster.CreateRunNamespace(ctx, s.Kube, s.Run.RunID)
	if err != nil {
		s.nsMayExist = !errors.Is(err, cluster.ErrNamespaceNotCreated)
		s.setupFailed = true
		s.Run.Record(runner.SetupFailure(runner.SetupNamespace, err))
	}
	return err
}

// check runs one setup check against the API, bounded.
func (s *Session) check(do func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return do(ctx)
}

// stopAtSetup ends a run whose setup step failed: the step is an error
// check with the cause and the fix, in the results, the report, JUnit and
// the page, and the exit code they give.
func (s *Session) stopAtSetup(step string, err error) {
	fmt.Fprintf(s.out.stderr, "rdmasuite: setup (%s): %v\n", step, err)
	s.Run.Record(runner.SetupFailure(step, err))
	s.exit(s.finishRun(0))
}

func warn(w string) { fmt.Fprintf(os.Stderr, "rdmasuite: warning: %s\n", w) }

// startProgress opens the run's progress log (not on a dry run: it creates
// nothing, not even a file) and routes the runner's progress through it.
func (s *Session) startProgress(runID string, dryRun bool) {
	o := s.out
	o.useTerminal()
	if !dryRun {
		var err error
		o.plog, err = progress.Open(runner.ReportDir(*s.flags.ReportDir), runID, o.term)
		if err != nil {
			fmt.Fprintf(os.Stderr, "rdmasuite: warning: %v: progress goes to the terminal and stdout only\n", err)
		}
	}
	s.Run.Progress = o.progressLine
	if o.term != nil && o.plog != nil {
		s.Run.Status = func(line string) { o.plog.Status(stamp(line)) }
	}
}

// header says where the run is and what it will do: cluster, variants,
// client rate, nodes, image, thresholds, and the plan before anything is
// created (pairs, rounds, waves and an estimate).
func (s *Session) header(host, where, ns, mode string, variantLines []string, rateLine string, dryRun bool) {
	o, run := s.out, s.Run
	if o.plog.Path() != "" {
		o.say("rdmasuite: progress in %s (tail -f it: without -v, go test shows the run's output only when it ends)\n", o.plog.Path())
	}
	o.say("rdmasuite: cluster %s (%s, kubeconfig %s), run %s, namespace %s%s\n", host, s.version, where, run.RunID, ns, mode)
	hctx, hcancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer hcancel()
	for _, l := range variantLines {
		o.say("rdmasuite: %s\n", l)
	}
	if rateLine != "" {
		o.say("rdmasuite: %s\n", rateLine)
	}
	o.say("rdmasuite: %s\n", run.NodesHeader(hctx))
	if note := runner.ImageNote(run.Cfg.Image); note != "" {
		o.say("rdmasuite: %s\n", note)
	}
	for _, l := range run.ThresholdsHeader(hctx) {
		o.say("rdmasuite: %s\n", l)
	}
	// The run's plan, built here once: what Execute will run (with
	// --dry-run, round by round).
	run.BuildPlan(hctx)
	for _, l := range run.PlanLines(hctx, dryRun) {
		o.say("rdmasuite: %s\n", l)
	}
}

// testTimeout is go test's -timeout (0 when none).
func testTimeout() time.Duration {
	f := flag.Lookup("test.timeout")
	if f == nil {
		return 0
	}
	if g, ok := f.Value.(flag.Getter); ok {
		if d, ok := g.Get().(time.Duration); ok {
			return d
		}
	}
	return 0
}

// output is where the run reports as it runs: stdout (go test -v, the
// in-cluster Job's log), the progress log, and the terminal when there is
// one. go test shows a passing package's output only with -v; without it
// the progress, the final table and the results path also go to the
// controlling terminal, so a long run is never silent and a passing one
// still says where its results are. CI (no terminal) reads stdout.
type output struct {
	stdout io.Writer
	stderr io.Writer
	term   io.Writer     // the terminal, when the run has one and -v is off
	plog   *progress.Log // the run's progress log, once the run id is known
}

func newOutput() *output { return &output{stdout: os.Stdout, stderr: os.Stderr} }

// useTerminal sends progress to the controlling terminal when go test
// runs without -v.
func (o *output) useTerminal() {
	if v := FlagValue(flag.CommandLine, "test.v"); v != "false" && v != "" {
		return // -v streams stdout already
	}
	if tty, err := os.OpenFile("/dev/tty", os.O_WRONLY, 0); err == nil {
		o.term = tty
	}
}

// say prints a run-level line on stdout and in the progress log, and
// without -v on the terminal.
func (o *output) say(format string, a ...any) {
	fmt.Fprintf(o.stdout, format, a...)
	switch {
	case o.plog != nil:
		o.plog.Line(fmt.Sprintf(format, a...)) // the file, and the terminal when there is one
	case o.term != nil:
		fmt.Fprintf(o.term, format, a...)
	}
}

// progressLine is the runner's progress: a stamped line on stdout (unless
// a terminal shows it) and in the progress log.
func (o *output) progressLine(line string) {
	l := stamp(line)
	if o.term == nil {
		fmt.Fprintln(o.stdout, l)
	}
	if o.plog != nil {
		o.plog.Line(l)
	} else if o.term != nil {
		fmt.Fprintln(o.term, l)
	}
}

func stamp(line string) string {
	return fmt.Sprintf("rdmasuite: %s %s", time.Now().Format(time.TimeOnly), line)
}
