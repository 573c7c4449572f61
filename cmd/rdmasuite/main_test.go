package main

import (
	"bytes"
	"compress/gzip"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rdmasuite/rdmasuite/reports"
	"github.com/rdmasuite/rdmasuite/workloads/probeout"
)

func results(t *testing.T, checks ...reports.Check) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "results.json")
	resultsMade++ // each file its own run, as two runs' files are
	if err := reports.Write(p, reports.Run{RunID: fmt.Sprintf("r%d", resultsMade), Checks: checks}); err != nil {
		t.Fatal(err)
	}
	return p
}

// resultsMade numbers the runs results writes.
var resultsMade int

func bw(node string, gbps float64, st reports.Status) reports.Check {
	return reports.Check{ID: "bandwidth/write", Nodes: []string{node, "peer-" + node}, Status: st,
		Measured: []reports.Measurement{{Name: "write_1MiB_avg", Node: node, Port: "mlx5_0/1", Value: gbps, Unit: "Gb/s",
			Threshold: &reports.Threshold{Op: ">=", Value: 180, Source: "sku"}}}}
}

func notRun(id string) reports.Check {
	return reports.Check{ID: id, Nodes: []string{"a"}, Status: reports.NotRun, Reason: "no GPU"}
}

func TestReportExitCodes(t *testing.T) {
	dir := t.TempDir()
	garbage := filepath.Join(dir, "garbage.json")
	os.WriteFile(garbage, []byte("{not json"), 0o644)
	badStatus := filepath.Join(dir, "bad-status.json")
	os.WriteFile(badStatus, []byte(`{"schema":"`+reports.Schema+`","checks":[{"id":"memlock","status":"passed"}]}`), 0o644)

	passed := results(t, bw("a", 190, reports.Pass))
	failed := results(t, bw("a", 150, reports.Fail))
	empty := results(t)
	allNotRun := results(t, notRun("gpudirect/write"))
	withNotRun := results(t, bw("a", 190, reports.Pass), notRun("gpudirect/write"))
	// Passes its check (a floor of 160 here), 10.5 % under the baseline.
	slow := bw("a", 170, reports.Pass)
	slow.Measured[0].Threshold.Value = 160
	slower := results(t, slow)
	otherNodes := results(t, bw("z", 190, reports.Pass))
	// Baselines that cannot be one: the run itself, a newer run; and one
	// of another cluster, which is said.
	at := func(id string, start time.Time, server string) string {
		p := filepath.Join(t.TempDir(), "results-"+id+".json")
		if err := reports.Write(p, reports.Run{RunID: id, Started: start, Cluster: reports.Cluster{Server: server},
			Checks: []reports.Check{bw("a", 190, reports.Pass)}}); err != nil {
			t.Fatal(err)
		}
		return p
	}
	day := time.Date(2026, 12, 6, 3, 0, 0, 0, time.UTC)
	tonight, yesterday := at("tonight", day, "https://k8s:6443"), at("yesterday", day.Add(-24*time.Hour), "https://k8s:6443")
	sameAsTonight := at("tonight", day, "https://k8s:6443")
	otherCluster := at("reference", day.Add(-48*time.Hour), "https://lab:6443")

	for _, c := range []struct {
		name string
		args []string
		code int
		out  string // the rendering is printed whatever the verdict
	}{
		{"passed", []string{passed}, reports.ExitPassed, "PASSED"},
		{"a check failed", []string{failed}, reports.ExitChecksFailed, "NOT PASSED"},
		{"a check failed, markdown", []string{failed, "--format", "markdown"}, reports.ExitChecksFailed, "❌ fail"},
		{"a check failed, junit", []string{failed, "--format", "junit"}, reports.ExitChecksFailed, "<failure"},
		{"a check failed, prometheus", []string{failed, "--format", "prometheus"}, reports.ExitChecksFailed, "rdmasuite_run_passed 0"},
		{"passed, prometheus", []string{passed, "--format", "prometheus"}, reports.ExitPassed, "rdmasuite_run_passed 1"},
		{"zero checks, prometheus", []string{empty, "--format", "prometheus"}, reports.ExitBroken, `rdmasuite_run_checks{status="pass"} 0`},
		{"unallowed not-run, prometheus", []string{withNotRun, "--format", "prometheus"}, reports.ExitChecksFailed,
			`rdmasuite_check_status{check="gpudirect/write",node="a",op="write",status="not-run"} 1`},
		{"zero checks", []string{empty}, reports.ExitBroken, "no check ran"},
		{"every check not-run", []string{allNotRun, "--allow-not-run", "gpudirect/"}, reports.ExitChecksFailed, "nothing was measured"},
		{"unallowed not-run", []string{withNotRun}, reports.ExitChecksFailed, "(0 allowed)"},
		{"allowed not-run", []string{withNotRun, "--allow-not-run=gpudirect/write"}, reports.ExitPassed, "(1 allowed)"},
		{"unreadable file", []string{filepath.Join(dir, "nope.json")}, reports.ExitBroken, ""},
		{"not JSON", []string{garbage}, reports.ExitBroken, ""},
		{"unknown status", []string{badStatus}, reports.ExitBroken, ""},
		{"bad flag", []string{passed, "--colour"}, reports.ExitBroken, ""},
		{"bad format", []string{passed, "--format", "pdf"}, reports.ExitBroken, ""},
		{"two files", []string{passed, failed}, reports.ExitBroken, ""},
		{"regression", []string{slower, "--baseline", passed}, reports.ExitRegression, "REGRESSION"},
		{"regression, junit", []string{slower, "--baseline", passed, "--format", "junit"}, reports.ExitRegression, "rdmasuite/baseline"},
		{"regression, prometheus: the exit code says it", []string{slower, "--baseline", passed, "--format", "prometheus"}, reports.ExitRegression, "rdmasuite_run_passed 1"},
		{"failed wins over regression", []string{failed, "--baseline", passed}, reports.ExitChecksFailed, "REGRESSION"},
		{"a check failed, html", []string{failed, "--format", "html"}, reports.ExitChecksFailed, "NOT PASSED — 0 pass, 1 fail, 0 error, 0 not run (0 allowed) — exit code 1"},
		{"passed, html", []string{passed, "--format", "html"}, reports.ExitPassed, "exit code 0"},
		{"regression, html: the page and the exit code agree", []string{slower, "--baseline", passed, "--format", "html"}, reports.ExitRegression, "1 regression(s) against the baseline — exit code 3"},
		{"no regression", []string{passed, "--baseline", slower}, reports.ExitPassed, "no regression against the baseline; 1 improved"},
		// A diff that compared nothing proves nothing: never green.
		{"no nodes in common is never green", []string{otherNodes, "--baseline", passed}, reports.ExitRegression, "share no node"},
		{"the run itself is no baseline", []string{tonight, "--baseline", sameAsTonight}, reports.ExitBroken, ""},
		{"the run itself is no baseline, html", []string{tonight, "--baseline", sameAsTonight, "--format", "html"}, reports.ExitBroken, ""},
		{"a newer baseline is refused", []string{yesterday, "--baseline", tonight}, reports.ExitBroken, ""},
		{"an older baseline", []string{tonight, "--baseline", yesterday}, reports.ExitPassed, "no regression against the baseline; 1 unchanged"},
		{"another cluster's baseline is said", []string{tonight, "--baseline", otherCluster}, reports.ExitPassed, "warning: the baseline is of another cluster (https://lab:6443; this run: https://k8s:6443)"},
		{"no nodes in common, junit", []string{otherNodes, "--baseline", passed, "--format", "junit"}, reports.ExitRegression, "the baseline comparison compared nothing"},
		{"no nodes in common, html", []string{otherNodes, "--baseline", passed, "--format", "html"}, reports.ExitRegression, "exit code 3"},
		{"unreadable baseline", []string{passed, "--baseline", garbage}, reports.ExitBroken, ""},
	} {
		var out bytes.Buffer
		err := runReport(c.args, &out)
		if got := exitCode(err); got != c.code {
			t.Errorf("%s: exit %d (err %v), want %d\n%s", c.name, got, err, c.code, out.String())
		}
		if !strings.Contains(out.String(), c.out) {
			t.Errorf("%s: output lacks %q:\n%s", c.name, c.out, out.String())
		}
		if strings.Contains(strings.Join(c.args, " "), "junit") && out.Len() > 0 {
			if err := xml.Unmarshal(out.Bytes(), new(struct{})); err != nil {
				t.Errorf("%s: junit output is not XML: %v\n%s", c.name, err, out.String())
			}
		}
		if strings.Contains(strings.Join(c.args, " "), "prometheus") && out.Len() > 0 {
			parseText(t, out.Bytes())
		}
		if strings.Contains(strings.Join(c.args, " "), "html") && out.Len() > 0 && (!strings.HasPrefix(out.String(), "<!DOCTYPE html>") || strings.Contains(out.String(), "Baseline ")) {
			t.Errorf("%s: an html report is one page, with no text table appended:\n%s", c.name, out.String())
		}
	}
}

func TestMainExitCodes(t *testing.T) {
	passed := results(t, bw("a", 190, reports.Pass))
	failed := results(t, bw("a", 150, reports.Fail))
	for _, c := range []struct {
		args []string
		code int
	}{
		{nil, reports.ExitPassed}, // no command: the help, as kubectl does
		{[]string{"frobnicate"}, reports.ExitBroken},
		{[]string{"version"}, reports.ExitPassed},
		{[]string{"push"}, reports.ExitBroken},
		{[]string{"report", passed}, reports.ExitPassed},
		{[]string{"report", failed, "-o", filepath.Join(t.TempDir(), "r.md"), "--format", "markdown"}, reports.ExitChecksFailed},
		{[]string{"thresholds", "check"}, reports.ExitPassed},
		{[]string{"thresholds", "list"}, reports.ExitPassed},
		{[]string{"thresholds", "check", filepath.Join(t.TempDir(), "missing.yaml")}, reports.ExitBroken},
		{[]string{"thresholds", "frob"}, reports.ExitBroken},
	} {
		var out, errb bytes.Buffer
		if got := run(c.args, &out, &errb); got != c.code {
			t.Errorf("%q: exit %d, want %d\nstdout: %s\nstderr: %s", c.args, got, c.code, out.String(), errb.String())
		}
	}
	if exitCode(errFindings) != reports.ExitChecksFailed || exitCode(errors.New("cluster unreachable")) != reports.ExitBroken || exitCode(nil) != reports.ExitPassed {
		t.Error("doctor: findings are failed checks (1), an unreachable cluster is broken (2)")
	}
}

// -o with --format prometheus replaces the file atomically: a reader that
// opened the old file keeps reading it whole, the new one is readable by
// node_exporter (0644), and no temp file is left for the textfile collector.
func TestReportPrometheusFile(t *testing.T) {
	dir := t.TempDir()
	prom := filepath.Join(dir, "rdmasuite.prom")
	if err := os.WriteFile(prom, []byte("old_metric 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	old, err := os.Open(prom)
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	var out, errb bytes.Buffer
	if code := run([]string{"report", results(t, bw("a", 150, reports.Fail)), "--format", "prometheus", "-o", prom}, &out, &errb); code != reports.ExitChecksFailed {
		t.Fatalf("exit %d, want %d: %s", code, reports.ExitChecksFailed, errb.String())
	}
	if out.Len() != 0 {
		t.Errorf("-o FILE, yet stdout has %q", out.String())
	}
	if b, _ := io.ReadAll(old); string(b) != "old_metric 1\n" {
		t.Errorf("the old file was written in place: a reader saw %q", b)
	}
	b, err := os.ReadFile(prom)
	if err != nil {
		t.Fatal(err)
	}
	if fams := parseText(t, b); gauge(t, fams, "rdmasuite_run_passed") != 0 {
		t.Errorf("%s", b)
	}
	if fi, _ := os.Stat(prom); fi.Mode().Perm() != 0o644 {
		t.Errorf("mode %v, want 0644 (node_exporter runs as another user)", fi.Mode().Perm())
	}
	if es, _ := os.ReadDir(dir); len(es) != 1 {
		t.Errorf("files left beside the .prom: %v", es)
	}

	// A new file is 0644 too; a directory that does not exist is broken
	// and leaves nothing.
	fresh := filepath.Join(dir, "new.prom")
	if code := run([]string{"report", results(t, bw("a", 190, reports.Pass)), "--format", "prometheus", "-o", fresh}, &out, &errb); code != reports.ExitPassed {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if fi, err := os.Stat(fresh); err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("new file: %v %v", fi, err)
	}
	errb.Reset()
	if code := run([]string{"report", results(t, bw("a", 190, reports.Pass)), "--format", "prometheus", "-o", filepath.Join(dir, "no", "x.prom")}, &out, &errb); code != reports.ExitBroken ||
		!strings.Contains(errb.String(), "x.prom") {
		t.Errorf("missing directory: exit %d, %s", code, errb.String())
	}
}

func TestThresholdsList(t *testing.T) {
	var out bytes.Buffer
	if err := runThresholds([]string{"list"}, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "A100/HDR-200") || !strings.Contains(out.String(), "write ≥ 190 Gb/s") {
		t.Fatalf("%s", out.String())
	}
}

// --version and version print the version and the commit;
// report - reads the results on standard input, gzip-compressed or not;
// the commands that talk to a cluster take --context.
func TestCLIConventions(t *testing.T) {
	probeout.Commit = "0123456789abcdef0123"
	defer func() { probeout.Commit = "" }()
	for _, args := range [][]string{{"version"}, {"--version"}, {"-version"}} {
		var out, errb bytes.Buffer
		if code := run(args, &out, &errb); code != reports.ExitPassed || !strings.HasPrefix(out.String(), "rdmasuite ") ||
			!strings.Contains(out.String(), "(commit 0123456789ab") {
			t.Errorf("%q: exit %d: %q %q", args, code, out.String(), errb.String())
		}
	}
	failed := results(t, bw("a", 150, reports.Fail))
	raw, err := os.ReadFile(failed)
	if err != nil {
		t.Fatal(err)
	}
	var z bytes.Buffer
	zw := gzip.NewWriter(&z)
	_, _ = zw.Write(raw)
	_ = zw.Close()
	for name, in := range map[string][]byte{"plain": raw, "gzip": z.Bytes()} {
		stdin = bytes.NewReader(in)
		var out, errb bytes.Buffer
		if code := run([]string{"report", "-"}, &out, &errb); code != reports.ExitChecksFailed || !strings.Contains(out.String(), "NOT PASSED") {
			t.Errorf("report - (%s): exit %d\n%s\n%s", name, code, out.String(), errb.String())
		}
	}
	stdin = strings.NewReader("not json")
	var out, errb bytes.Buffer
	if code := run([]string{"report", "-"}, &out, &errb); code != reports.ExitBroken || !strings.Contains(errb.String(), "standard input: not a results file") {
		t.Errorf("report - with garbage: exit %d: %s", code, errb.String())
	}
	stdin = os.Stdin
	for _, cmd := range []string{"doctor", "cleanup"} {
		var out, errb bytes.Buffer
		run([]string{cmd, "--help"}, &out, &errb)
		if !strings.Contains(out.String(), "-context") {
			t.Errorf("%s --help lacks --context:\n%s", cmd, out.String())
		}
	}
}

// Completion scripts for bash and zsh ask the binary, which
// answers with its commands, a command's own flags (from its flag set) and
// thresholds' subcommands.
func TestCompletion(t *testing.T) {
	ask := func(words ...string) []string {
		var out bytes.Buffer
		if code := run(append([]string{"__complete"}, words...), &out, io.Discard); code != reports.ExitPassed {
			t.Fatalf("__complete %q: exit %d", words, code)
		}
		return strings.Fields(out.String())
	}
	has := func(got []string, want ...string) {
		t.Helper()
		for _, w := range want {
			if !slices.Contains(got, w) {
				t.Errorf("candidates %q lack %q", got, w)
			}
		}
	}
	top := ask("")
	has(top, "report", "doctor", "cleanup", "completion", "version", "help")
	if len(top) != len(slices.Compact(slices.Sorted(slices.Values(top)))) {
		t.Errorf("duplicate commands: %q", top)
	}
	has(ask("report", "--"), "--format", "--baseline", "--all", "--width", "-o")
	has(ask("doctor", "--c"), "--context", "--kubeconfig")
	has(ask("thresholds", ""), "check", "list")
	for _, sh := range []string{"bash", "zsh", "fish"} {
		var out bytes.Buffer
		if code := run([]string{"completion", sh}, &out, io.Discard); code != reports.ExitPassed || !strings.Contains(out.String(), "rdmasuite __complete") {
			t.Errorf("completion %s: %d %q", sh, code, out.String())
		}
	}
	if code := run([]string{"completion", "tcsh"}, io.Discard, io.Discard); code != reports.ExitBroken {
		t.Errorf("an unknown shell must exit 2, got %d", code)
	}
}

// rdmasuite run refuses, before any API call, what would send the results
// where it cannot fetch them or is not a flag of its own.
// A binary without a release version says its default runner image tag
// is not released; one with --image says nothing.
func TestRunJobWarnsOfAnUnreleasedDefaultImage(t *testing.T) {
	var out, errw bytes.Buffer
	run([]string{"run", "--kubeconfig", "/nonexistent"}, &out, &errw)
	if !strings.Contains(errw.String(), "warning: image "+RunnerImageRepo+":dev is the default of a build without a release version") {
		t.Errorf("no warning: %q", errw.String())
	}
	errw.Reset()
	run([]string{"run", "--kubeconfig", "/nonexistent", "--image", "registry.example.com/rdmasuite-runner:v1.2.3"}, &out, &errw)
	if strings.Contains(errw.String(), "warning: image") {
		t.Errorf("a warning for an image given: %q", errw.String())
	}
	for v, want := range map[string]bool{"v1.2.3": true, "v0.10.0": true, "dev": false, "bdf4618": false, "v1.2.3-4-gbdf4618": false, "v1.2.3-dirty": false, "1.2.3": false, "v1.2": false} {
		if probeout.Released(v) != want {
			t.Errorf("Released(%q) = %v", v, !want)
		}
	}
}

func TestRunJobRefusesBeforeTheCluster(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--kubeconfig", "/nonexistent", "--", "--namespace=other"}, "suite flag --namespace=other is set by rdmasuite run"},
		{[]string{"run", "--kubeconfig", "/nonexistent", "--", "--report-dir", "/x"}, "use rdmasuite run --report-dir"},
		{[]string{"run", "--kubeconfig", "/nonexistent", "--labels", "suite=rdma"}, "flag provided but not defined: -labels"},
		{[]string{"run", "--kubeconfig", "/nonexistent", "suite=rdma"}, "the suite's flags go after --"},
		{[]string{"run", "--kubeconfig", "/nonexistent", "--runner-node-selector", "node-1"}, "--runner-node-selector \"node-1\": want KEY=VALUE"},
		{[]string{"run", "--kubeconfig", "/nonexistent", "--namespace", "Bad_NS"}, "namespace \"Bad_NS\""},
		{[]string{"results", "--kubeconfig", "/nonexistent", "extra"}, "unexpected argument \"extra\""},
		// The suite's own flags, as the runner will parse them.
		{[]string{"run", "--kubeconfig", "/nonexistent", "--", "--lables", "suite=rdma"}, "unknown suite flag --lables: did you mean --labels?"},
		{[]string{"run", "--kubeconfig", "/nonexistent", "--", "--bogus-flag"}, "unknown suite flag --bogus-flag"},
		{[]string{"run", "--kubeconfig", "/nonexistent", "--", "--bw-sizes", "huge"}, "--bw-sizes"},
		{[]string{"run", "--kubeconfig", "/nonexistent", "--", "--labels", "suite=disruptive"}, "--allow-disruptive"},
	} {
		var out, errw bytes.Buffer
		code := run(c.args, &out, &errw)
		if code != 2 || !strings.Contains(errw.String(), c.want) || strings.Contains(errw.String(), "nonexistent") {
			t.Errorf("%v: exit %d, stderr %q; want 2 naming %q before the kubeconfig is read", c.args, code, errw.String(), c.want)
		}
	}
}
