package nodemark

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	authv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/rdmasuite/rdmasuite/reports"
)

var finished = time.Date(2025, 3, 4, 2, 17, 9, 500_000_000, time.UTC)

func newRun(nodes []string, checks ...reports.Check) reports.Run {
	r := reports.Run{RunID: "ab12cd34", Finished: finished, Checks: checks}
	for _, n := range nodes {
		r.Nodes = append(r.Nodes, reports.Node{Name: n})
	}
	return r
}

func chk(id string, st reports.Status, nodes ...string) reports.Check {
	return reports.Check{ID: id, Variant: "shared-dev", Status: st, Nodes: nodes}
}

func node(name string, ann map[string]string, taints ...corev1.Taint) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: ann, Labels: map[string]string{"team": "hpc"}},
		Spec: corev1.NodeSpec{Taints: taints}}
}

func get(t *testing.T, cs *fake.Clientset, name string) *corev1.Node {
	t.Helper()
	n, err := cs.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func outcomes(ms []Mark) map[string]Outcome {
	out := map[string]Outcome{}
	for _, m := range ms {
		out[m.Node] = m.Outcome
	}
	return out
}

func TestComputeOutcomes(t *testing.T) {
	run := newRun([]string{"pass", "fail", "idle", "partial", "allowed"},
		chk("memlock/rlimit", reports.Pass, "pass"),
		chk("bandwidth/write", reports.Pass, "pass", "fail"),
		chk("bandwidth/read", reports.Error, "fail", "pass"),
		chk("doctor/node", reports.Pass, "partial"),
		chk("memlock/rlimit", reports.NotRun, "partial"), // not allowed: not everything was measured
		chk("doctor/node", reports.Pass, "allowed"),
		reports.Check{ID: "gpudirect/write", Status: reports.NotRun, Nodes: []string{"allowed"}},
		chk("doctor/node", reports.NotRun, "idle"),
		chk("bandwidth/ports", reports.Fail, "extra"), // a node of a check only
	)
	run.AllowNotRun = []string{"gpudirect/"}
	got := outcomes(Compute(run))
	want := map[string]Outcome{"pass": Fail, "fail": Fail, "idle": NotRun, "partial": NotRun, "allowed": Pass, "extra": Fail}
	// "pass" took part in the errored pair check: it reads fail too.
	for n, w := range want {
		if got[n] != w {
			t.Errorf("node %s: outcome %q, want %q", n, got[n], w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("nodes %v, want %v", got, want)
	}
	for _, m := range Compute(run) {
		if m.Node == "fail" && !slices.Equal(m.Failures, []string{"bandwidth/read[shared-dev] with pass (error)"}) {
			t.Errorf("failures of node fail: %q", m.Failures)
		}
	}

	clean := newRun([]string{"a", "b"}, chk("bandwidth/write", reports.Pass, "a", "b"))
	if got := outcomes(Compute(clean)); got["a"] != Pass || got["b"] != Pass {
		t.Errorf("a passing pair: %v, want both pass", got)
	}
}

func TestCapped(t *testing.T) {
	var items []string
	for i := 0; i < 200; i++ {
		items = append(items, "bandwidth/write[shared-dev]{mlx5_0/1→mlx5_0/1} with node-"+strings.Repeat("x", i%7))
	}
	s := Capped(items, MaxFailures)
	if len(s) > MaxFailures {
		t.Errorf("capped to %d bytes, want at most %d", len(s), MaxFailures)
	}
	if !strings.Contains(s, " more") || !strings.HasPrefix(s, items[0]) {
		t.Errorf("capped list should start with the first item and count the rest: %q", s)
	}
	if got := Capped([]string{"a", "b"}, MaxFailures); got != "a; b" {
		t.Errorf("short list: %q", got)
	}
}

func TestApplyAnnotations(t *testing.T) {
	cs := fake.NewClientset(
		node("a", map[string]string{"other.io/keep": "1", AnnFailures: "stale from the last run"}),
		node("b", map[string]string{"other.io/keep": "2"}),
		node("c", nil),
	)
	run := newRun([]string{"a", "b", "c"},
		chk("memlock/rlimit", reports.Pass, "a"),
		chk("memlock/rlimit", reports.Fail, "b"),
		chk("doctor/node", reports.NotRun, "c"))
	s, err := Apply(context.Background(), cs, run, Options{Annotate: true, ValidFor: DefaultValidFor})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(s.Annotated, []string{"a", "b", "c"}) {
		t.Errorf("annotated %v", s.Annotated)
	}
	for name, want := range map[string]string{"a": "pass", "b": "fail", "c": "not-run"} {
		n := get(t, cs, name)
		a := n.Annotations
		if a[AnnResult] != want || a[AnnRun] != "ab12cd34" || a[AnnChecked] != "2025-03-04T02:17:09Z" || a[AnnValidUntil] != "2025-03-05T14:17:09Z" {
			t.Errorf("node %s annotations %v, want result %s", name, a, want)
		}
		if n.Labels["team"] != "hpc" {
			t.Errorf("node %s labels changed: %v", name, n.Labels)
		}
		if _, ok := a[AnnFailures]; ok != (want == "fail") {
			t.Errorf("node %s: last-failures present %v, want %v (%q)", name, ok, want == "fail", a[AnnFailures])
		}
	}
	if a := get(t, cs, "a").Annotations; a["other.io/keep"] != "1" {
		t.Errorf("other annotation of a: %v", a)
	}
	if a := get(t, cs, "b").Annotations; a["other.io/keep"] != "2" || a[AnnFailures] != "memlock/rlimit[shared-dev]" {
		t.Errorf("node b: %v", a)
	}
	if len(s.Tainted)+len(s.Untainted) > 0 {
		t.Errorf("taints changed without --taint-failed-nodes: %+v", s)
	}
	if ts := get(t, cs, "b").Spec.Taints; len(ts) != 0 {
		t.Errorf("node b tainted without --taint-failed-nodes: %v", ts)
	}
}

func TestValidUntil(t *testing.T) {
	run := newRun([]string{"a"}, chk("memlock/rlimit", reports.Pass, "a"))
	run.Finished = time.Date(2025, 12, 31, 23, 30, 0, 0, time.FixedZone("CET", 3600))
	a := Compute(run)[0].Annotations(run, 90*time.Minute)
	if *a[AnnChecked] != "2025-12-31T22:30:00Z" || *a[AnnValidUntil] != "2026-01-01T00:00:00Z" {
		t.Errorf("last-checked %s, valid-until %s", *a[AnnChecked], *a[AnnValidUntil])
	}
	if a[AnnFailures] != nil {
		t.Errorf("a pass must remove last-failures, got %q", *a[AnnFailures])
	}
}

func taintsOf(t *testing.T, cs *fake.Clientset, name string) []string {
	var out []string
	for _, tt := range get(t, cs, name).Spec.Taints {
		out = append(out, tt.Key+"="+tt.Value+":"+string(tt.Effect))
	}
	slices.Sort(out)
	return out
}

func TestTaintOnlyAttributable(t *testing.T) {
	w := "bandwidth/write"
	cases := []struct {
		name   string
		nodes  []string
		checks []reports.Check
		want   []string // tainted
	}{
		{"bad node", []string{"a", "b", "x"},
			[]reports.Check{chk(w, reports.Fail, "x", "a"), chk(w, reports.Fail, "b", "x"), chk(w, reports.Pass, "a", "b")}, []string{"x"}},
		{"bad link taints nobody", []string{"a", "b", "c"},
			[]reports.Check{chk(w, reports.Fail, "a", "b"), chk(w, reports.Pass, "b", "c"), chk(w, reports.Pass, "c", "a")}, nil},
		{"inconclusive taints nobody", []string{"a", "b"},
			[]reports.Check{chk(w, reports.Fail, "a", "b")}, nil},
		{"single-node checks", []string{"m", "p", "d", "e"},
			[]reports.Check{chk("memlock/rlimit", reports.Fail, "m"), chk("bandwidth/ports", reports.Fail, "p"),
				chk("doctor/port-down", reports.Fail, "d"), chk("memlock/rlimit", reports.Error, "e")}, []string{"d", "m", "p"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var objs []runtime.Object
			for _, n := range tc.nodes {
				objs = append(objs, node(n, nil, corev1.Taint{Key: "gpu", Value: "true", Effect: corev1.TaintEffectNoSchedule}))
			}
			cs := fake.NewClientset(objs...)
			s, err := Apply(context.Background(), cs, newRun(tc.nodes, tc.checks...), Options{Taint: true})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(s.Tainted, tc.want) {
				t.Errorf("tainted %v, want %v", s.Tainted, tc.want)
			}
			for _, n := range tc.nodes {
				want := []string{"gpu=true:NoSchedule"}
				if slices.Contains(tc.want, n) {
					want = append(want, TaintKey+"=ab12cd34:NoSchedule")
				}
				if got := taintsOf(t, cs, n); !slices.Equal(got, want) {
					t.Errorf("node %s taints %v, want %v", n, got, want)
				}
				if len(get(t, cs, n).Annotations) != 0 {
					t.Errorf("node %s annotated without --node-annotations", n)
				}
			}
		})
	}
}

func TestTaintRemovedOnPassOnly(t *testing.T) {
	ours := corev1.Taint{Key: TaintKey, Value: "old", Effect: corev1.TaintEffectNoSchedule}
	other := corev1.Taint{Key: "dedicated", Value: "ml", Effect: corev1.TaintEffectNoExecute}
	cs := fake.NewClientset(node("ok", nil, other, ours), node("link1", nil, ours), node("link2", nil), node("link3", nil),
		node("idle", nil, ours), node("bad", nil, other, ours))
	w := "bandwidth/write"
	run := newRun([]string{"ok", "link1", "link2", "link3", "idle", "bad"},
		chk("memlock/rlimit", reports.Pass, "ok"),
		chk(w, reports.Fail, "link1", "link2"), chk(w, reports.Pass, "link2", "link3"), chk(w, reports.Pass, "link3", "link1"),
		chk("memlock/rlimit", reports.Fail, "bad"))
	s, err := Apply(context.Background(), cs, run, Options{Taint: true, Effect: corev1.TaintEffectPreferNoSchedule})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(s.Untainted, []string{"ok"}) || !slices.Equal(s.Tainted, []string{"bad"}) {
		t.Errorf("summary %+v", s)
	}
	want := map[string][]string{
		"ok":    {"dedicated=ml:NoExecute"},                                          // passes: the suite's taint goes, the other stays
		"link1": {TaintKey + "=old:NoSchedule"},                                      // failed without blame: kept as it was
		"idle":  {TaintKey + "=old:NoSchedule"},                                      // not measured: kept
		"bad":   {"dedicated=ml:NoExecute", TaintKey + "=ab12cd34:PreferNoSchedule"}, // replaced, one suite taint
		"link3": nil,
	}
	for n, w := range want {
		if got := taintsOf(t, cs, n); !slices.Equal(got, w) {
			t.Errorf("node %s taints %v, want %v", n, got, w)
		}
	}
	// A second run with the same outcome writes nothing.
	s, err = Apply(context.Background(), cs, run, Options{Taint: true, Effect: corev1.TaintEffectPreferNoSchedule})
	if err != nil || len(s.Tainted)+len(s.Untainted) != 0 {
		t.Errorf("second run: %+v, %v; want no change", s, err)
	}
}

func TestForbiddenKeepsVerdict(t *testing.T) {
	for _, tc := range []struct{ code, want int }{
		{reports.ExitPassed, reports.ExitBroken},
		{reports.ExitChecksFailed, reports.ExitChecksFailed},
		{reports.ExitBroken, reports.ExitBroken},
	} {
		cs := fake.NewClientset(node("a", nil))
		cs.PrependReactor("patch", "nodes", func(k8stesting.Action) (bool, runtime.Object, error) {
			return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "nodes"}, "a", nil)
		})
		run := newRun([]string{"a"}, chk("memlock/rlimit", reports.Pass, "a"))
		var out, errw bytes.Buffer
		got := Finish(context.Background(), cs, run, Options{Annotate: true, ValidFor: time.Hour}, time.Minute, tc.code, &out, &errw)
		if got != tc.want {
			t.Errorf("exit %d with a forbidden patch: got %d, want %d", tc.code, got, tc.want)
		}
		if !strings.Contains(errw.String(), "forbidden") || !strings.Contains(errw.String(), "components/node-marks") {
			t.Errorf("stderr should say forbidden and how to grant it: %q", errw.String())
		}
	}
	// Nothing asked: nothing written, the code as it was.
	cs := fake.NewClientset(node("a", nil))
	if got := Finish(context.Background(), cs, newRun([]string{"a"}), Options{}, time.Minute, 0, &bytes.Buffer{}, &bytes.Buffer{}); got != 0 ||
		len(get(t, cs, "a").Annotations) != 0 {
		t.Errorf("disabled: exit %d, annotations %v", got, get(t, cs, "a").Annotations)
	}
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		o  Options
		ok bool
	}{
		{Options{Annotate: true, ValidFor: time.Hour}, true},
		{Options{Annotate: true}, false},
		{Options{Taint: true, Effect: corev1.TaintEffectNoSchedule}, true},
		{Options{Taint: true, Effect: corev1.TaintEffectPreferNoSchedule}, true},
		{Options{Taint: true, Effect: corev1.TaintEffectNoExecute}, false},
		{Options{Taint: true, Effect: "noschedule"}, false},
	} {
		if err := tc.o.Validate(); (err == nil) != tc.ok {
			t.Errorf("%+v: err %v, want ok %v", tc.o, err, tc.ok)
		}
	}
}

func TestCheckRBAC(t *testing.T) {
	for _, allowed := range []bool{true, false} {
		cs := fake.NewClientset()
		var verbs []string
		cs.PrependReactor("create", "selfsubjectaccessreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
			r := a.(k8stesting.CreateAction).GetObject().(*authv1.SelfSubjectAccessReview)
			verbs = append(verbs, r.Spec.ResourceAttributes.Verb)
			r.Status.Allowed = allowed
			return true, r, nil
		})
		err := Check(context.Background(), cs, Options{Annotate: true, Taint: true}, func(string) {})
		if (err == nil) != allowed {
			t.Errorf("allowed %v: err %v", allowed, err)
		}
		if !slices.Equal(verbs, []string{"get", "patch"}) {
			t.Errorf("asked for %v, want get and patch", verbs)
		}
	}
}

// A taint write that lost a race (someone changed the node in between) is
// read again and retried, not lost and not forced over the other write.
func TestTaintRetriesConflict(t *testing.T) {
	cs := fake.NewClientset(node("m", nil))
	conflicts, gets := 1, 0
	cs.PrependReactor("get", "nodes", func(k8stesting.Action) (bool, runtime.Object, error) {
		gets++
		return false, nil, nil
	})
	cs.PrependReactor("patch", "nodes", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if conflicts > 0 && strings.Contains(string(a.(k8stesting.PatchAction).GetPatch()), `"taints"`) {
			conflicts--
			return true, nil, apierrors.NewConflict(schema.GroupResource{Resource: "nodes"}, "m", nil)
		}
		return false, nil, nil
	})
	s, err := Apply(context.Background(), cs, newRun([]string{"m"}, chk("memlock/rlimit", reports.Fail, "m")), Options{Taint: true})
	if err != nil || !slices.Equal(s.Tainted, []string{"m"}) || gets != 2 {
		t.Errorf("after one conflict: %+v, %v, %d reads; want m tainted after 2 reads", s, err, gets)
	}
	if got := taintsOf(t, cs, "m"); !slices.Equal(got, []string{TaintKey + "=ab12cd34:NoSchedule"}) {
		t.Errorf("taints %v", got)
	}
}

// A peer outlier warns: the node it names reads pass with a last-warnings
// annotation, its partners carry none, and nobody is tainted (a warned
// node that had the suite's taint loses it: it passed).
func TestWarnAnnotatesNeverTaints(t *testing.T) {
	var names []string
	for i := range 12 {
		names = append(names, "n"+string(rune('a'+i)))
	}
	var checks []reports.Check
	for i, n := range names {
		v := 392.0 + float64(i%3)
		if n == "nc" || n == "nd" { // nc→nd and nd→ne use nd's slow port
			v = 384
		}
		checks = append(checks, reports.Check{ID: "bandwidth/write", Variant: "shared-dev", Nodes: []string{n, names[(i+1)%len(names)]},
			Rail: "mlx5_0/1→mlx5_0/1", Status: reports.Pass, Measured: []reports.Measurement{{Name: "write_1MiB_avg", Node: n, Port: "mlx5_0/1",
				Value: v, Unit: "Gb/s", Threshold: &reports.Threshold{Op: ">=", Value: 380}}}})
	}
	run := newRun(names, checks...)
	for i := range run.Nodes {
		run.Nodes[i].SKU = "H100/NDR-400"
	}
	reports.MarkPeerOutliers(&run)
	if n := run.Summary()[reports.Warn]; n != 2 {
		t.Fatalf("%d warn checks, want 2", n)
	}
	for _, m := range Compute(run) {
		if m.Outcome != Pass || m.Attributable() {
			t.Errorf("node %s: %s, attributable %v", m.Node, m.Outcome, m.Attributable())
		}
		if (len(m.Warnings) > 0) != (m.Node == "nd") {
			t.Errorf("node %s warnings %v", m.Node, m.Warnings)
		}
	}
	taint := corev1.Taint{Key: TaintKey, Value: "old", Effect: corev1.TaintEffectNoSchedule}
	var objs []runtime.Object
	for _, n := range names {
		if n == "nd" {
			objs = append(objs, node(n, nil, taint))
		} else {
			objs = append(objs, node(n, nil))
		}
	}
	cs := fake.NewClientset(objs...)
	s, err := Apply(context.Background(), cs, run, Options{Annotate: true, ValidFor: DefaultValidFor, Taint: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Tainted) != 0 || !slices.Equal(s.Untainted, []string{"nd"}) {
		t.Errorf("taints: %+v", s)
	}
	a := get(t, cs, "nd").Annotations
	if a[AnnResult] != "pass" || !strings.Contains(a[AnnWarnings], "port mlx5_0/1 on node nd (peer outlier") {
		t.Errorf("nd annotations: %v", a)
	}
	if _, ok := get(t, cs, "nc").Annotations[AnnWarnings]; ok {
		t.Error("the partner of the outlier carries a warning")
	}
}
