package lifecycle

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	e2eflags "sigs.k8s.io/e2e-framework/pkg/flags"

	"github.com/rdmasuite/rdmasuite/internal/cluster"
	"github.com/rdmasuite/rdmasuite/internal/runner"
	"github.com/rdmasuite/rdmasuite/reports"
)

// parse registers the suite's flags on a fresh set and parses args.
func parse(t *testing.T, args ...string) *Flags {
	t.Helper()
	fs := flag.NewFlagSet("suite", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	f := Register(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatalf("parse %v: %v", args, err)
	}
	return f
}

func noGate() error { return nil }

// Every bad flag is named with what to give instead, before any API call.
func TestRunnerConfigNamesTheBadFlag(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--bw-sizes", "64Q"}, "--bw-sizes"},
		{[]string{"--msgrate-sizes", "x"}, "--msgrate-sizes"},
		{[]string{"--lat-sizes", "-2"}, "--lat-sizes"},
		{[]string{"--nccl-iters", "0"}, "--nccl-iters 0"},
		{[]string{"--nccl-min-bytes", "lots"}, "--nccl-min-bytes"},
		{[]string{"--nccl-max-bytes", "1Z"}, "--nccl-max-bytes"},
		{[]string{"--sku", "no-such-sku"}, "--sku"},
		{[]string{"--thresholds", "/nonexistent/skus.yaml"}, "/nonexistent/skus.yaml"},
		{[]string{"--variants", "infiniband"}, "infiniband"},
		{[]string{"--pairing", "star"}, "star"},
		{[]string{"--qp-timeout", "0"}, "--qp-timeout 0: the IBTA's wait forever"},
		{[]string{"--qp-timeout", "32"}, "--qp-timeout 32: want 1..31"},
	} {
		_, err := parse(t, c.args...).RunnerConfig(io.Discard, noGate)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want one naming %q", c.args, err, c.want)
		}
	}
	// The gate's refusal is the run's refusal.
	refused := errors.New("the disruptive feature needs --allow-disruptive")
	if _, err := parse(t).RunnerConfig(io.Discard, func() error { return refused }); !errors.Is(err, refused) {
		t.Errorf("gate refusal: %v", err)
	}
	// The defaults are a valid run: every size, op and variant the operator
	// gets first.
	cfg, err := parse(t).RunnerConfig(io.Discard, noGate)
	if err != nil {
		t.Fatalf("defaults: %v", err)
	}
	if len(cfg.BWSizes) != 2 || cfg.BWSizes[0] != 64<<10 || cfg.BWSizes[1] != 1<<20 || cfg.BWQPs != 4 || strings.Join(cfg.BWOps, ",") != "write,read" || !cfg.VariantsAuto || cfg.QPTimeout != 14 {
		t.Errorf("defaults: sizes %v qps %d ops %v auto %v qp timeout %d", cfg.BWSizes, cfg.BWQPs, cfg.BWOps, cfg.VariantsAuto, cfg.QPTimeout)
	}
}

// An overlay says what it replaced and added, on the writer given.
func TestRunnerConfigSaysWhatTheOverlayChanged(t *testing.T) {
	// One built-in SKU's block under a new name and GPU: a SKU the overlay adds.
	builtin, err := os.ReadFile("../../thresholds/skus.yaml")
	if err != nil {
		t.Fatal(err)
	}
	i := bytes.Index(builtin, []byte("  - name: V100/EDR-100"))
	j := bytes.Index(builtin[i+1:], []byte("  - name: "))
	if i < 0 || j < 0 {
		t.Fatal("thresholds/skus.yaml no longer starts with the V100 SKU: pick another")
	}
	sku := strings.Replace(string(builtin[i:i+1+j]), "name: V100/EDR-100", "name: my-sku", 1)
	sku = strings.Replace(sku, `gpuProduct: ["Tesla-V100-*", "NVIDIA-V100-*"]`, `gpuProduct: ["My-GPU"]`, 1)
	file := filepath.Join(t.TempDir(), "skus.yaml")
	if err := os.WriteFile(file, []byte("schema: rdmasuite.io/thresholds/v1\nskus:\n"+sku), 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if _, err := parse(t, "--thresholds-overlay", file).RunnerConfig(&out, noGate); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "adds my-sku") {
		t.Errorf("overlay lines: %q", out.String())
	}
}

// A publishing flag without the flag it needs fails before the run, not
// at its end.
func TestPublishingNeedsItsCompanionFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--node-mark-valid-for", "1h"}, "--node-annotations"},
		{[]string{"--taint-effect", "PreferNoSchedule"}, "--taint-failed-nodes"},
		{[]string{"--taint-failed-nodes", "--taint-effect", "Sometimes"}, "Sometimes"},
		{[]string{"--results-configmap", "latest"}, "--namespace"},
		{[]string{"--namespace", "ops", "--results-configmap", "Not_A_Name"}, "Not_A_Name"},
		{[]string{"--pushgateway-job", "nightly"}, "--pushgateway"},
		{[]string{"--pushgateway-grouping", "cluster=prod"}, "--pushgateway"},
		{[]string{"--pushgateway", "ftp://gateway:9091"}, "--pushgateway"},
	} {
		_, err := parse(t, c.args...).Publishing()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want one naming %q", c.args, err, c.want)
		}
	}
	p, err := parse(t, "--pushgateway", "http://pushgateway.monitoring:9091", "--node-annotations", "--taint-failed-nodes").Publishing()
	if err != nil || p.PushGroup == nil || !p.NodeMarks.Annotate || !p.NodeMarks.Taint {
		t.Fatalf("valid publishing: %+v, %v", p, err)
	}
	if p, err := parse(t).Publishing(); err != nil || p.PushGroup != nil || p.NodeMarks.Enabled() {
		t.Fatalf("defaults publish nothing: %+v, %v", p, err)
	}
}

// The gate reads e2e-framework's label filter from the flag set.
func TestDisruptiveGateReadsTheFilters(t *testing.T) {
	fs := flag.NewFlagSet("suite", flag.ContinueOnError)
	f := Register(fs)
	labels := e2eflags.LabelsMap{}
	fs.Var(&labels, "labels", "")
	if err := fs.Parse([]string{"--labels", "suite=disruptive"}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.DisruptiveGate(fs); err == nil || !strings.Contains(err.Error(), "--allow-disruptive") {
		t.Fatalf("selected without --allow-disruptive: %v", err)
	}
	if err := fs.Parse([]string{"--labels", "suite=disruptive", "--allow-disruptive", "--disrupt-nodes", "node-1"}); err != nil {
		t.Fatal(err)
	}
	if d, err := f.DisruptiveGate(fs); err != nil || !d.Run {
		t.Fatalf("allowed: %+v, %v", d, err)
	}
	if FlagValue(fs, "no-such-flag") != "" || FlagValue(fs, "disrupt-nodes") != "node-1" {
		t.Fatal("FlagValue")
	}
}

// session is a run as Start leaves it, on a fake cluster, with the run
// namespace created and the output captured.
type session struct {
	*Session
	kube           *fake.Clientset
	stdout, stderr bytes.Buffer
	exited         []int
	dir            string
}

func newSession(t *testing.T, args ...string) *session {
	t.Helper()
	dir := t.TempDir()
	f := parse(t, append([]string{"--report-dir", dir, "--cleanup-timeout", "2s"}, args...)...)
	cfg, err := f.RunnerConfig(io.Discard, noGate)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := f.Publishing()
	if err != nil {
		t.Fatal(err)
	}
	// The API server's service-account controller: a namespace's default
	// service account, which the namespace's creation waits for.
	kube := fake.NewClientset(&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: cluster.RunNamespace("0badcafe"), Name: "default"}})
	ts := &session{kube: kube, dir: dir}
	ts.Session = &Session{flags: f, publishing: pub, Kube: kube, Run: runner.New(kube, cfg, "0badcafe"),
		host: "https://cluster.test", version: "v1.34.0", started: time.Now(), deleting: "deleting run namespace rdmasuite-0badcafe",
		cancel: func() {}, exit: func(c int) { ts.exited = append(ts.exited, c) },
		out: &output{stdout: &ts.stdout, stderr: &ts.stderr}}
	if cfg.Namespace == "" {
		if err := ts.createNamespace(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	return ts
}

func (ts *session) results(t *testing.T) reports.Run {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(ts.dir, "results.json"))
	if err != nil {
		t.Fatalf("results: %v", err)
	}
	var r reports.Run
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("results: %v", err)
	}
	return r
}

func (ts *session) namespace() *corev1.Namespace {
	ns, err := ts.kube.CoreV1().Namespaces().Get(context.Background(), cluster.RunNamespace("0badcafe"), metav1.GetOptions{})
	if err != nil {
		return nil
	}
	return ns
}

var (
	passed = reports.Check{ID: "bandwidth/write", Status: reports.Pass, Nodes: []string{"node-1", "node-2"}}
	failed = reports.Check{ID: "bandwidth/write", Status: reports.Fail, Nodes: []string{"node-1", "node-2"}, Diagnosis: "below the floor"}
)

// A passing run: results written and saying PASSED, exit 0, the run
// namespace deleted.
func TestFinishPassingRun(t *testing.T) {
	ts := newSession(t)
	if ts.namespace() == nil {
		t.Fatal("setup did not create the run namespace")
	}
	ts.Run.Record(passed)
	ts.Finish(0)
	if len(ts.exited) != 1 || ts.exited[0] != 0 {
		t.Fatalf("exit %v, stderr %s", ts.exited, ts.stderr.String())
	}
	if r := ts.results(t); r.ExitCode() != 0 || len(r.Checks) != 1 {
		t.Fatalf("results %+v", r)
	}
	if ts.namespace() != nil {
		t.Fatal("run namespace left behind")
	}
	if !strings.Contains(ts.stdout.String(), "rdmasuite: results in ") || !strings.Contains(ts.stdout.String(), "exit 0") {
		t.Fatalf("stdout %s", ts.stdout.String())
	}
	ts.Finish(1) // a second end (an interrupt racing the features' end) does nothing
	if len(ts.exited) != 1 {
		t.Fatalf("finished twice: %v", ts.exited)
	}
}

// go test failing outside the checks never leaves a PASSED report; a
// failed check never leaves exit 0; nothing recorded is exit 2.
func TestFinishExitCodeAgreesWithTheResults(t *testing.T) {
	ts := newSession(t)
	ts.Run.Record(passed)
	ts.Finish(1) // a t.Fatal outside the recorded checks
	if r := ts.results(t); len(ts.exited) != 1 || ts.exited[0] != 1 || r.ExitCode() == 0 {
		t.Fatalf("exit %v, results exit %d, checks %+v", ts.exited, r.ExitCode(), r.Checks)
	}

	ts = newSession(t)
	ts.Run.Record(failed)
	ts.Finish(0) // go test passed, a check did not
	if r := ts.results(t); ts.exited[0] == 0 || ts.exited[0] != r.ExitCode() {
		t.Fatalf("exit %v, results exit %d", ts.exited, r.ExitCode())
	}

	ts = newSession(t)
	ts.Finish(0)
	if ts.exited[0] != reports.ExitBroken || !strings.Contains(ts.stderr.String(), "no check ran") {
		t.Fatalf("nothing measured: exit %v, stderr %s", ts.exited, ts.stderr.String())
	}
	if ts.namespace() != nil {
		t.Fatal("run namespace left behind")
	}
}

// An interrupt: the running feature gets an error row naming the signal,
// the exit code is 130's story, and the namespace goes.
func TestInterruptRecordsTheUnfinishedFeature(t *testing.T) {
	ts := newSession(t)
	done := ts.Run.Begin("bandwidth", "shared-dev")
	defer done()
	ts.end(130, "interrupt")
	r := ts.results(t)
	var row *reports.Check
	for i, c := range r.Checks {
		if c.ID == "bandwidth" && c.Status == reports.Error {
			row = &r.Checks[i]
		}
	}
	if row == nil || !strings.Contains(row.Reason, "interrupt") {
		t.Fatalf("no error row for the cut feature: %+v", r.Checks)
	}
	if len(ts.exited) != 1 || ts.exited[0] == 0 || ts.namespace() != nil {
		t.Fatalf("exit %v, namespace %v", ts.exited, ts.namespace())
	}
	if !strings.Contains(ts.stderr.String(), "rdmasuite: interrupt: deleting run namespace") {
		t.Fatalf("stderr %s", ts.stderr.String())
	}
}

// --keep-on-failure keeps a failed run's namespace, marked, and says how
// to delete it; a passing run's namespace goes all the same.
func TestKeepOnFailure(t *testing.T) {
	ts := newSession(t, "--keep-on-failure")
	ts.Run.Record(failed)
	ts.Finish(0)
	ns := ts.namespace()
	if ns == nil || ns.Labels[cluster.KeptLabel] != "true" || !strings.Contains(ts.stdout.String(), "rdmasuite cleanup --run 0badcafe") {
		t.Fatalf("kept namespace %+v, stdout %s", ns, ts.stdout.String())
	}
	ts = newSession(t, "--keep-on-failure")
	ts.Run.Record(passed)
	ts.Finish(0)
	if ts.namespace() != nil {
		t.Fatal("a passing run's namespace was kept")
	}
}

// A namespace the API refused: the setup row decides (not go test's
// failure of the setup), and there is nothing to delete.
func TestRefusedNamespaceIsTheResult(t *testing.T) {
	ts := newSession(t)
	_ = ts.kube.CoreV1().Namespaces().Delete(context.Background(), cluster.RunNamespace("0badcafe"), metav1.DeleteOptions{})
	ts.kube.PrependReactor("create", "namespaces", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "namespaces"}, "rdmasuite-0badcafe", errors.New("RBAC"))
	})
	if err := ts.createNamespace(context.Background()); err == nil {
		t.Fatal("refused namespace accepted")
	}
	ts.Finish(1)
	r := ts.results(t)
	if len(r.Checks) != 1 || r.Checks[0].Status != reports.Error || ts.exited[0] != r.ExitCode() || ts.exited[0] == 0 {
		t.Fatalf("exit %v, checks %+v", ts.exited, r.Checks)
	}
	if strings.Contains(ts.stderr.String(), "cleanup --run") {
		t.Fatalf("tried to delete a namespace that never existed: %s", ts.stderr.String())
	}
}

// With --namespace: the run's objects go by label, the namespace stays,
// the latest run is written to the ConfigMap; a ConfigMap the API refuses
// turns a pass into exit 2 and leaves a failure's own code.
func TestSharedNamespaceAndLatestRun(t *testing.T) {
	ts := newSession(t, "--namespace", "ops", "--results-configmap", "rdmasuite-latest")
	ctx := context.Background()
	if _, err := ts.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ops"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	mine := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ops", Name: "bw-0badcafe-a", Labels: map[string]string{cluster.RunLabel: "0badcafe", cluster.ManagedByLabel: cluster.ManagedBy}}}
	theirs := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ops", Name: "app"}}
	for _, p := range []*corev1.Pod{mine, theirs} {
		if _, err := ts.kube.CoreV1().Pods("ops").Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	ts.Run.Record(passed)
	ts.Finish(0)
	if ts.exited[0] != 0 {
		t.Fatalf("exit %v: %s", ts.exited, ts.stderr.String())
	}
	if _, err := ts.kube.CoreV1().Pods("ops").Get(ctx, "bw-0badcafe-a", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the run's pod is left: %v", err)
	}
	if _, err := ts.kube.CoreV1().Pods("ops").Get(ctx, "app", metav1.GetOptions{}); err != nil {
		t.Fatalf("another pod of the namespace was deleted: %v", err)
	}
	if _, err := ts.kube.CoreV1().Namespaces().Get(ctx, "ops", metav1.GetOptions{}); err != nil {
		t.Fatalf("the operator's namespace was deleted: %v", err)
	}
	cm, err := ts.kube.CoreV1().ConfigMaps("ops").Get(ctx, "rdmasuite-latest", metav1.GetOptions{})
	if err != nil || cm.Data["exit-code"] != "0" {
		t.Fatalf("latest run: %+v, %v", cm, err)
	}

	for _, c := range []struct {
		check reports.Check
		want  int
	}{{passed, reports.ExitBroken}, {failed, reports.ExitChecksFailed}} {
		ts := newSession(t, "--namespace", "ops", "--results-configmap", "rdmasuite-latest")
		ts.kube.PrependReactor("*", "configmaps", func(k8stesting.Action) (bool, runtime.Object, error) {
			return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "rdmasuite-latest", errors.New("RBAC"))
		})
		ts.Run.Record(c.check)
		ts.Finish(0)
		if ts.exited[0] != c.want || !strings.Contains(ts.stderr.String(), "--results-configmap") {
			t.Errorf("%s with the ConfigMap refused: exit %v (want %d), stderr %s", c.check.Status, ts.exited, c.want, ts.stderr.String())
		}
	}
}

// Results that cannot be written are never a pass.
func TestUnwritableResultsAreNotAPass(t *testing.T) {
	ts := newSession(t)
	blocker := filepath.Join(ts.dir, "file")
	if err := os.WriteFile(blocker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	*ts.flags.ReportDir = filepath.Join(blocker, "sub") // a directory under a file
	ts.Run.Record(passed)
	ts.Finish(0)
	if ts.exited[0] != reports.ExitBroken || !strings.Contains(ts.stderr.String(), "writing results") {
		t.Fatalf("exit %v, stderr %s", ts.exited, ts.stderr.String())
	}
}

// rdmasuite run checks the suite flags it will pass before it applies
// anything: typos, unknown flags, wrong types and refused values fail
// with the flag named; what the runner binary accepts passes.
func TestCheckArgs(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string // "" passes
	}{
		{[]string{"--labels", "suite=rdma", "--bw-sizes", "64K,1M", "-test.run", "TestBandwidth", "--v=2", "--fail-fast"}, ""},
		{[]string{"--labels=suite=latency-load", "--thresholds-overlay", "/etc/rdmasuite/overlay.yaml"}, ""},
		{[]string{"--lables", "suite=rdma"}, "unknown suite flag --lables: did you mean --labels?"},
		{[]string{"--bogus-flag"}, "unknown suite flag --bogus-flag"},
		{[]string{"--labels", "suite"}, "label format error"},
		{[]string{"--bw-qps", "many"}, "bw-qps"},
		{[]string{"--bw-sizes", "3 lemons"}, "--bw-sizes"},
		{[]string{"--qp-timeout", "0"}, "--qp-timeout 0"},
		{[]string{"--nccl-iters", "0"}, "--nccl-iters 0"},
		{[]string{"--labels", "suite=disruptive"}, "--allow-disruptive"},
		{[]string{"--labels", "suite=rdma", "stray"}, `unexpected argument "stray"`},
		{[]string{"--variants", "bogus"}, "variant"},
		{[]string{"--pairing", "ringg"}, "ringg"},
		{[]string{"--taint-effect", "NoExecute"}, "--taint-effect needs --taint-failed-nodes"},
		{[]string{"--sku", "NOPE/X"}, "--sku"},
		// A SKU an overlay in the runner pod defines is not refused here.
		{[]string{"--thresholds-overlay", "/etc/rdmasuite/site.yaml", "--sku", "SITE/X"}, ""},
	} {
		err := CheckArgs(c.args)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%v: %v", c.args, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%v: %v, want %q", c.args, err, c.want)
		}
	}
}

// Every suite flag is registered by Register: rdmasuite run checks a run's
// suite flags against Register (CheckArgs) before it applies anything, so
// a flag the suites package registered on its own would be refused there
// although the runner accepts it. The suites' Go files register none.
func TestSuitesRegisterNoFlagOfTheirOwn(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "..", "suites", "*.go"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no suites files: %v", err)
	}
	fset := token.NewFileSet()
	for _, path := range files {
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if pkg, ok := sel.X.(*ast.Ident); ok && pkg.Name == "flag" && sel.Sel.Name != "Lookup" && sel.Sel.Name != "Parse" &&
				sel.Sel.Name != "NewFlagSet" && sel.Sel.Name != "CommandLine" {
				t.Errorf("%s: flag.%s: register suite flags in lifecycle.Register, where rdmasuite run's check sees them",
					fset.Position(call.Pos()), sel.Sel.Name)
			}
			return true
		})
	}
	// And the runner's own check knows them (a flag of every kind).
	if err := CheckArgs([]string{"--preflight-resources", "rdma/ib", "--unused-ports", "mlx5_3/1", "--network-operator=false",
		"--gpu-operator-namespaces", "gpu-operator", "--network-operator-namespace", "nvidia-network-operator"}); err != nil {
		t.Errorf("the doctor's flags: %v", err)
	}
}
