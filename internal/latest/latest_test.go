package latest

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	authv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/rdmasuite/rdmasuite/internal/cluster"
	"github.com/rdmasuite/rdmasuite/reports"
)

const ns, name = "rdma-tests", "rdmasuite-latest"

var ctx = context.Background()

func check(id string, st reports.Status, evidence ...string) reports.Check {
	return reports.Check{ID: id, Title: id, Nodes: []string{"a", "b"}, Status: st, Evidence: evidence,
		Measured: []reports.Measurement{{Name: "write_1MiB_avg", Node: "a", Port: "mlx5_0/1", Value: 190, Unit: "Gb/s",
			Threshold: &reports.Threshold{Op: ">=", Value: 180, Source: "sku"}}}}
}

func runOf(id string, checks ...reports.Check) reports.Run {
	return reports.Run{RunID: id, Started: time.Date(2026, 5, 1, 3, 0, 0, 0, time.UTC), Finished: time.Date(2026, 5, 1, 3, 42, 0, 0, time.UTC),
		Cluster: reports.Cluster{Server: "https://k8s", Version: "v1.35"}, Checks: checks}
}

// random is incompressible text (base64 of random bytes), n bytes.
func random(t *testing.T, n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(b)[:n]
}

// huge is a failed run whose gzipped results exceed MaxResults.
func huge(t *testing.T, id string) reports.Run {
	var cs []reports.Check
	for i := range 300 {
		var ev []string
		for range 10 {
			ev = append(ev, "ибв "+random(t, 500)) // multi-byte runes, to cut between
		}
		cs = append(cs, check(fmt.Sprintf("bandwidth/write/%03d", i), reports.Fail, ev...))
	}
	return runOf(id, cs...)
}

func get(t *testing.T, cs *fake.Clientset) *corev1.ConfigMap {
	t.Helper()
	cm, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return cm
}

func gunzipRun(t *testing.T, gz []byte) reports.Run {
	t.Helper()
	r, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	var run reports.Run
	if err := json.Unmarshal(b, &run); err != nil || run.Schema != reports.Schema {
		t.Fatalf("not a results file (%v): %.200s", err, b)
	}
	return run
}

func verbs(cs *fake.Clientset) []string {
	var out []string
	for _, a := range cs.Actions() {
		if a.GetResource().Resource == "configmaps" {
			out = append(out, a.GetVerb())
		}
	}
	return out
}

// The first run creates the ConfigMap, the second replaces its content in
// place (labels and annotations others set stay; stale keys go).
func TestCreateThenUpdate(t *testing.T) {
	cs := fake.NewClientset()
	first, err := Build(ns, name, huge(t, "run1"), reports.ExitChecksFailed, "/results/results-run1.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := Write(ctx, cs, first); err != nil {
		t.Fatal(err)
	}
	cm := get(t, cs)
	if cm.Data[KeyRunID] != "run1" || cm.Data[KeyExitCode] != "1" || cm.Data[KeyFinished] != "2026-05-01T03:42:00Z" || cm.Data[KeyResultsOmitted] == "" {
		t.Fatalf("first run: %v", keys(cm))
	}
	// Someone labels and annotates it between runs.
	cm.Labels["team"] = "fabric"
	cm.Annotations = map[string]string{"note": "kept"}
	if _, err := cs.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	second, err := Build(ns, name, runOf("run2", check("bandwidth/write", reports.Pass)), reports.ExitPassed, "/results/results-run2.json")
	if err != nil {
		t.Fatal(err)
	}
	cs.ClearActions()
	if err := Write(ctx, cs, second); err != nil {
		t.Fatal(err)
	}
	if v := strings.Join(verbs(cs), ","); v != "get,update" {
		t.Errorf("second run: %s, want get,update", v)
	}
	cm = get(t, cs)
	if cm.Data[KeyRunID] != "run2" || cm.Data[KeyExitCode] != "0" {
		t.Errorf("second run: %v", cm.Data)
	}
	if _, stale := cm.Data[KeyResultsOmitted]; stale {
		t.Error("the first run's omission note is still there")
	}
	if got := gunzipRun(t, cm.BinaryData[KeyResults]); got.RunID != "run2" || len(got.Checks) != 1 {
		t.Errorf("results.json.gz holds %+v", got)
	}
	if !strings.HasPrefix(cm.Data[KeySummaryText], "rdmasuite: PASSED — 1 pass, 0 fail, 0 error, 0 not run (0 allowed), exit 0\n") ||
		!strings.Contains(cm.Data[KeySummaryText], "bandwidth/write") {
		t.Errorf("summary.txt:\n%s", cm.Data[KeySummaryText])
	}
	if !strings.HasPrefix(cm.Data[KeySummaryMD], "# rdmasuite acceptance report") || !strings.Contains(cm.Data[KeySummaryMD], "**PASSED") {
		t.Errorf("summary.md:\n%s", cm.Data[KeySummaryMD])
	}
	if cm.Labels["team"] != "fabric" || cm.Annotations["note"] != "kept" {
		t.Errorf("others' labels or annotations lost: %v %v", cm.Labels, cm.Annotations)
	}
	checkLabels(t, cm)
}

func keys(cm *corev1.ConfigMap) map[string]int {
	out := map[string]int{}
	for k, v := range cm.Data {
		out[k] = len(v)
	}
	for k, v := range cm.BinaryData {
		out[k] = len(v)
	}
	return out
}

func checkLabels(t *testing.T, cm *corev1.ConfigMap) {
	t.Helper()
	if cm.Labels[cluster.ManagedByLabel] != cluster.ManagedBy || cm.Labels[LatestLabel] != "true" {
		t.Errorf("labels %v", cm.Labels)
	}
	if _, ok := cm.Labels[cluster.RunLabel]; ok {
		t.Errorf("the ConfigMap carries the run label %s: the run's cleanup would delete it", cluster.RunLabel)
	}
}

// A run too big for a ConfigMap keeps its verdict, truncated summaries
// that say where the rest is, and no results.json.gz but a note.
func TestSizeCap(t *testing.T) {
	run := huge(t, "big")
	cm, err := Build(ns, name, run, reports.ExitChecksFailed, "/results/results-big.json")
	if err != nil {
		t.Fatal(err)
	}
	if n := Size(cm); n > Budget || n > MaxBytes {
		t.Fatalf("%d bytes (%v), over the %d budget", n, keys(cm), Budget)
	}
	if _, ok := cm.BinaryData[KeyResults]; ok {
		t.Fatal("an over-cap results.json.gz was stored")
	}
	note := cm.Data[KeyResultsOmitted]
	for _, w := range []string{"results.json.gz left out", "/results/results-big.json", "--report-dir", "rdmasuite report"} {
		if !strings.Contains(note, w) {
			t.Errorf("the note lacks %q: %s", w, note)
		}
	}
	txt, md := cm.Data[KeySummaryText], cm.Data[KeySummaryMD]
	if len(txt) > MaxSummaryText || len(md) > MaxSummaryMD {
		t.Errorf("summary.txt %d, summary.md %d bytes", len(txt), len(md))
	}
	if !strings.HasPrefix(txt, "rdmasuite: NOT PASSED — 0 pass, 300 fail") || !strings.HasPrefix(md, "# rdmasuite acceptance report") {
		t.Errorf("the verdict is not first:\n%.300s\n%.300s", txt, md)
	}
	for k, s := range map[string]string{"summary.txt": txt, "summary.md": md} {
		if !utf8.ValidString(s) {
			t.Errorf("%s is not valid UTF-8 after the cut", k)
		}
		if k == "summary.txt" && !strings.Contains(s, "… truncated") && strings.Contains(s, "bandwidth/write/299") {
			continue // the table fits whole
		}
		if !strings.Contains(s, "… truncated: ") || !strings.Contains(s, "/results/results-big.json") || strings.Contains(s, "from the results.json.gz key") {
			t.Errorf("%s does not say it was truncated and where the rest is:\n%s", k, s[max(0, len(s)-400):])
		}
	}
	if openFence(md[:strings.LastIndex(md, "… truncated")]) {
		t.Error("summary.md ends inside a code block")
	}

	// Results that fit are kept, and the summaries then point at them.
	mid := runOf("mid")
	for i := range 60 {
		mid.Checks = append(mid.Checks, check(fmt.Sprintf("bandwidth/read/%02d", i), reports.Fail, random(t, 6000)))
	}
	cm, err = Build(ns, name, mid, 1, "/results/results-mid.json")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := cm.BinaryData[KeyResults]; !ok || Size(cm) > Budget {
		t.Fatalf("mid: %v, %d bytes", keys(cm), Size(cm))
	}
	if got := gunzipRun(t, cm.BinaryData[KeyResults]); len(got.Checks) != 60 {
		t.Errorf("mid: %d checks in results.json.gz", len(got.Checks))
	}
	if s := cm.Data[KeySummaryMD]; !strings.Contains(s, "from the results.json.gz key of this ConfigMap") {
		t.Errorf("mid summary.md does not point at results.json.gz: %s", s[max(0, len(s)-300):])
	}

	// Without a results file, the note says so.
	cm, _ = Build(ns, name, run, 2, "")
	if !strings.Contains(cm.Data[KeyResultsOmitted], "could not write the results file") {
		t.Errorf("no results file: %s", cm.Data[KeyResultsOmitted])
	}
}

// Whatever is over the cap, the object still fits: a results file just
// under MaxResults leaves the summaries what remains.
func TestSizeCapNearTheLimit(t *testing.T) {
	for _, n := range []int{1150, 1200, 1250} { // results.json.gz ≈ 861, 898 (kept), 936 KiB (left out)
		run := runOf("near")
		for i := range n {
			run.Checks = append(run.Checks, check(fmt.Sprintf("nccl/%04d", i), reports.Fail, random(t, 1000)))
		}
		cm, err := Build(ns, name, run, 1, "/r.json")
		if err != nil {
			t.Fatal(err)
		}
		if Size(cm) > Budget {
			t.Errorf("%d checks: %d bytes (%v)", n, Size(cm), keys(cm))
		}
		if len(cm.Data[KeySummaryMD]) < 16<<10 || len(cm.Data[KeySummaryText]) < 16<<10 {
			t.Errorf("%d checks: summaries squeezed out: %v", n, keys(cm))
		}
	}
}

// The run's cleanup in a shared namespace deletes by the run label: the
// ConfigMap, which never has it, outlives it.
func TestOutlivesTheRunCleanup(t *testing.T) {
	cs := fake.NewClientset(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "bw-run9-a",
		Labels: map[string]string{cluster.ManagedByLabel: cluster.ManagedBy, cluster.RunLabel: "run9"}}})
	cm, _ := Build(ns, name, runOf("run9", check("memlock", reports.Pass)), 0, "/r.json")
	if err := Write(ctx, cs, cm); err != nil {
		t.Fatal(err)
	}
	objs, err := cluster.DeleteRunObjects(ctx, cs, ns, "run9", time.Second)
	if err != nil || len(objs.Pods) != 1 {
		t.Fatalf("%+v %v", objs, err)
	}
	checkLabels(t, get(t, cs))
}

// A ConfigMap of that name that is not the suite's is never overwritten.
func TestNotOurs(t *testing.T) {
	theirs := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: map[string]string{"x": "1"}}
	cs := fake.NewClientset(theirs)
	cm, _ := Build(ns, name, runOf("r", check("memlock", reports.Pass)), 0, "")
	err := Write(ctx, cs, cm)
	if err == nil || !strings.Contains(err.Error(), "is not rdmasuite's") || !strings.Contains(err.Error(), "pick another --results-configmap") {
		t.Fatalf("%v", err)
	}
	if got := get(t, cs); len(got.Data) != 1 || got.Data["x"] != "1" {
		t.Errorf("overwritten: %v", got.Data)
	}
	if err := Check(ctx, cs, ns, name, func(string) {}); err == nil || !strings.Contains(err.Error(), "is not rdmasuite's") {
		t.Errorf("Check: %v", err)
	}
}

func forbidden(verb string) k8stesting.ReactionFunc {
	return func(a k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, name, errors.New("RBAC: "+verb+" denied"))
	}
}

func TestWriteForbidden(t *testing.T) {
	cs := fake.NewClientset()
	cs.PrependReactor("create", "configmaps", forbidden("create"))
	cm, _ := Build(ns, name, runOf("r", check("memlock", reports.Pass)), 0, "")
	err := Write(ctx, cs, cm)
	if err == nil || !strings.Contains(err.Error(), "get and update on configmaps named "+name+" and create on configmaps") {
		t.Errorf("%v", err)
	}
}

// access answers self subject access reviews: allowed for the verbs given.
func access(allowed ...string) k8stesting.ReactionFunc {
	return func(a k8stesting.Action) (bool, runtime.Object, error) {
		r := a.(k8stesting.CreateAction).GetObject().(*authv1.SelfSubjectAccessReview).DeepCopy()
		attr := r.Spec.ResourceAttributes
		for _, v := range allowed {
			if attr.Verb == v && attr.Resource == "configmaps" && attr.Namespace == ns && (v == "create") == (attr.Name == "") {
				r.Status.Allowed = true
			}
		}
		return true, r, nil
	}
}

func TestCheck(t *testing.T) {
	ours := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: Labels()}}
	for _, c := range []struct {
		name    string
		objs    []runtime.Object
		allowed []string
		want    string // "" is no error
	}{
		{"absent, all granted", nil, []string{"create", "update"}, ""},
		{"absent, no create", nil, []string{"update"}, "may not create configmap"},
		{"absent, nothing", nil, nil, "may not create or update configmap"},
		{"ours, update granted", []runtime.Object{ours}, []string{"update"}, ""},
		{"ours, no update", []runtime.Object{ours}, []string{"create"}, "may not update configmap"},
	} {
		cs := fake.NewClientset(c.objs...)
		cs.PrependReactor("create", "selfsubjectaccessreviews", access(c.allowed...))
		err := Check(ctx, cs, ns, name, func(w string) { t.Errorf("%s: warned %s", c.name, w) })
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "grant the suite's ServiceAccount")):
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
	// Reading it is forbidden.
	cs := fake.NewClientset()
	cs.PrependReactor("get", "configmaps", forbidden("get"))
	if err := Check(ctx, cs, ns, name, func(string) {}); err == nil || !strings.Contains(err.Error(), "not allowed to read configmap") {
		t.Errorf("get forbidden: %v", err)
	}
	// No access reviews: warned, not failed.
	cs = fake.NewClientset()
	cs.PrependReactor("create", "selfsubjectaccessreviews", forbidden("selfsubjectaccessreviews"))
	var warned []string
	if err := Check(ctx, cs, ns, name, func(w string) { warned = append(warned, w) }); err != nil || len(warned) != 2 {
		t.Errorf("no reviews: %v, warned %q", err, warned)
	}
}

func TestValidName(t *testing.T) {
	if err := ValidName("rdmasuite-latest"); err != nil {
		t.Error(err)
	}
	for _, bad := range []string{"", "Latest", "a_b", strings.Repeat("a", 254)} {
		if err := ValidName(bad); err == nil || !strings.Contains(err.Error(), "--results-configmap") {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

func TestClip(t *testing.T) {
	s := "# r\n\n```\n" + strings.Repeat("éé\n", 400) + "```\n"
	got := clip(s, 300, "see X", true)
	if len(got) > 300 || !utf8.ValidString(got) || !strings.Contains(got, "… truncated: ") || !strings.HasSuffix(got, "see X\n") {
		t.Fatalf("%d bytes: %q", len(got), got)
	}
	if openFence(got[:strings.Index(got, "… truncated")]) {
		t.Errorf("fence left open: %q", got)
	}
	if clip("short", 300, "x", true) != "short" {
		t.Error("a short text was changed")
	}
	long := strings.Repeat("ü", 1000) // one line: cut between runes
	if got := clip(long, 500, "x", false); len(got) > 500 || !utf8.ValidString(got) {
		t.Errorf("%d bytes, valid %v", len(got), utf8.ValidString(got))
	}
}
