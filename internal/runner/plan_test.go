package runner

import (
	"context"
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/rdmasuite/rdmasuite/internal/pairing"
	"github.com/rdmasuite/rdmasuite/reports"
)

// The plan is the schedule: what BuildPlan saw is what Execute runs, even
// when the cluster changed in between (a node that joined later is not
// measured behind the plan's back); Execute records every check it made,
// and the features read exactly those, without starting a pod.
func TestExecuteRunsThePlanAsBuiltAndRecordsIt(t *testing.T) {
	kube := fake.NewClientset(testNode("a", 8), testNode("b", 8))
	created := runningPods(kube)
	cfg := testConfig(t)
	cfg.Selected = map[string][]string{VariantSharedDev: {PairedBandwidth, PairedLatency}}
	r := New(kube, cfg, "t-plan")
	ctx := context.Background()
	r.BuildPlan(ctx)
	if _, err := kube.CoreV1().Nodes().Create(ctx, testNode("late", 8), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	r.Execute(ctx)
	for _, p := range created() {
		if p.Spec.NodeName == "late" || strings.Contains(p.Name, "late") {
			t.Errorf("pod %s on a node the plan did not hold", p.Name)
		}
	}
	started := len(created())
	if started == 0 {
		t.Fatal("Execute started no pod")
	}
	recorded := map[string]int{}
	for _, c := range r.Checks() {
		recorded[c.ID+" "+strings.Join(c.Nodes, ",")+" "+c.Rail]++
	}
	v := r.Cfg.VariantList()[0]
	for _, name := range []string{PairedBandwidth, PairedLatency} {
		cs := r.Paired(ctx, v, name)
		if len(cs) == 0 {
			t.Errorf("%s: no checks from the plan", name)
		}
		for _, c := range cs {
			if recorded[c.ID+" "+strings.Join(c.Nodes, ",")+" "+c.Rail] == 0 {
				t.Errorf("%s: check %s (%s) read from the plan but not recorded by Execute", name, c.ID, c.Nodes)
			}
		}
	}
	if n := len(created()); n != started {
		t.Errorf("reading the features' checks started %d pod(s)", n-started)
	}
	if n := r.RecordUnfinished("after"); n != 0 {
		t.Errorf("%d feature(s) still marked running after Execute", n)
	}
}

// A feature the plan does not hold (the filters' prediction missed it)
// runs on its own when it asks, is recorded, and the progress says why;
// one the plan holds but that never ran is an error row, never an empty
// pass.
func TestPairedOutsideThePlan(t *testing.T) {
	kube := fake.NewClientset(testNode("a", 8), testNode("b", 8))
	runningPods(kube)
	cfg := testConfig(t)
	cfg.Selected = map[string][]string{VariantSharedDev: {PairedBandwidth}}
	r := New(kube, cfg, "t-outside")
	var lines []string
	r.Progress = func(l string) { lines = append(lines, l) }
	ctx := context.Background()
	v := r.Cfg.VariantList()[0]
	r.BuildPlan(ctx)

	cs := r.Paired(ctx, v, PairedBandwidth)
	if len(cs) != 1 || cs[0].Status != reports.Error || !strings.Contains(cs[0].Reason, "never executed") {
		t.Errorf("a planned feature read before Execute: %+v", cs)
	}

	lat := r.Paired(ctx, v, PairedLatency)
	if len(lat) == 0 {
		t.Fatal("the unplanned feature made no check")
	}
	if !strings.Contains(strings.Join(lines, "\n"), "latency is not in the run's plan") {
		t.Errorf("no progress line for the unplanned feature: %q", lines)
	}
	n := 0
	for _, c := range r.Checks() {
		if strings.HasPrefix(c.ID, "latency/") {
			n++
		}
	}
	if n != len(lat) {
		t.Errorf("%d latency check(s) recorded, want the %d it returned", n, len(lat))
	}
}

// --dry-run lists the rounds of the plan it will run; at fleet scale the
// listing stays bounded: 12 rounds, 4 pairs named per round.
func TestPlanLinesDetailListsRoundsBounded(t *testing.T) {
	var nodes []runtime.Object
	for i := range 40 {
		nodes = append(nodes, testNode(fmt.Sprintf("n%02d", i), 8))
	}
	kube := fake.NewClientset(nodes...)
	cfg := testConfig(t)
	cfg.Pairing = pairing.All
	cfg.Selected = map[string][]string{VariantSharedDev: {PairedBandwidth, PairedLatency}}
	r := New(kube, cfg, "t-dry")
	ctx := context.Background()
	r.BuildPlan(ctx)
	brief := r.PlanLines(ctx, false)
	full := r.PlanLines(ctx, true)
	rounds := 0
	for _, l := range full {
		if strings.Contains(l, ": round ") {
			rounds++
			if !strings.Contains(l, "bandwidth, latency: ") || !strings.Contains(l, "→") || !strings.Contains(l, "more") {
				t.Errorf("round line: %q", l)
			}
		}
	}
	if rounds != planRoundsShown {
		t.Errorf("%d round lines, want %d", rounds, planRoundsShown)
	}
	if last := full[len(full)-1]; !strings.Contains(last, "more round(s)") {
		t.Errorf("no line for the rounds left out: %q", last)
	}
	if len(full) != len(brief)+planRoundsShown+1 {
		t.Errorf("detail adds %d line(s) to %d", len(full)-len(brief), len(brief))
	}
}

// Every check a paired feature ends with carries its report traits,
// rows the runner made without a verdict (a node without the resource)
// included, and those read as the verdict's rows of the same op: a
// renderer never guesses from an id.
func TestEveryPairedCheckCarriesTraits(t *testing.T) {
	kube := fake.NewClientset(testNode("a", 8), testNode("b", 8), testNode("c", -1))
	runningPods(kube)
	cfg := testConfig(t)
	cfg.Selected = map[string][]string{VariantSharedDev: {PairedBandwidth, PairedLatency, PairedMsgRate}}
	r := New(kube, cfg, "t-traits")
	executePlan(r)
	byID := map[string]reports.Traits{}
	for _, c := range r.Checks() {
		if c.Traits == nil {
			t.Errorf("%s on %v (%s) carries no traits", c.ID, c.Nodes, c.Status)
			continue
		}
		if len(c.Nodes) == 2 {
			byID[c.ID] = *c.Traits
		}
	}
	rows := 0
	for _, c := range r.Checks() {
		if len(c.Nodes) == 1 && c.Nodes[0] == "c" && c.Traits != nil {
			rows++
			if want, ok := byID[c.ID]; ok && *c.Traits != want {
				t.Errorf("%s on c: traits %+v, the pairs' rows have %+v", c.ID, *c.Traits, want)
			}
			if c.Traits.Op == "" {
				t.Errorf("%s on c: no op in its traits", c.ID)
			}
		}
	}
	if rows == 0 {
		t.Error("node c without the resource has no row")
	}
}
