package lifecycle

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/rdmasuite/rdmasuite/internal/cluster"
	"github.com/rdmasuite/rdmasuite/internal/latest"
	"github.com/rdmasuite/rdmasuite/reports"
)

// A runner killed while it measures leaves a results file that says so:
// from the start of the run, results.json is this run's, with what was
// recorded and an error row naming what was running; it never reads as
// passed, whatever passed before the kill. The run's own end writes over
// it, and no checkpoint follows that.
func TestAKilledRunLeavesResultsThatSayItDidNotFinish(t *testing.T) {
	ts := newSession(t)
	ts.Run.Record(reports.Check{ID: "bandwidth/write", Status: reports.Pass, Nodes: []string{"a", "b"}, Variant: "shared-dev"})
	end := ts.Run.Begin("bandwidth/read", "shared-dev")
	c := ts.startCheckpoints()
	killed := ts.results(t) // what a SIGKILL now would leave
	if killed.RunID != "0badcafe" {
		t.Fatalf("results.json is run %q's", killed.RunID)
	}
	if killed.ExitCode() == reports.ExitPassed {
		t.Error("the file of an unfinished run reads as passed")
	}
	var row *reports.Check
	for i, ch := range killed.Checks {
		if ch.ID == "run/incomplete" {
			row = &killed.Checks[i]
		}
	}
	if row == nil || row.Status != reports.Error ||
		!strings.Contains(row.Reason, "running: bandwidth/read [shared-dev] for") ||
		!strings.Contains(row.Reason, "the runner was killed") ||
		!strings.Contains(row.Reason, "rdmasuite cleanup --run 0badcafe") {
		t.Fatalf("the unfinished row: %+v", row)
	}
	if len(killed.Checks) != 2 {
		t.Errorf("checks in the file: %d, want the pass and the unfinished row", len(killed.Checks))
	}
	end()
	c.Stop()
	ts.ckpt = c
	code := ts.finishRun(0)
	final := ts.results(t)
	for _, ch := range final.Checks {
		if ch.ID == "run/incomplete" {
			t.Errorf("the final results keep the checkpoint's row: %s", ch.Reason)
		}
	}
	if code != 0 || final.ExitCode() != reports.ExitPassed {
		t.Errorf("exit %d, results %d", code, final.ExitCode())
	}
	c.write() // a tick after the end writes nothing
	if again := ts.results(t); len(again.Checks) != len(final.Checks) {
		t.Error("a checkpoint wrote over the final results")
	}
}

// In the cluster the pod's files go with the pod: the latest-run
// ConfigMap is written at the first checkpoint, so `rdmasuite results`
// and the CronJob's owner read this unfinished run, not the previous
// run's pass.
func TestAKilledInClusterRunLeavesItsConfigMapUnfinished(t *testing.T) {
	ts := newSession(t, "--namespace", "rdmasuite", "--results-configmap", "rdmasuite-latest")
	ts.Run.Record(reports.Check{ID: "bandwidth/write", Status: reports.Pass, Nodes: []string{"a", "b"}, Variant: "shared-dev"})
	c := ts.startCheckpoints()
	defer c.Stop()
	cm, err := ts.kube.CoreV1().ConfigMaps(ts.Run.Namespace()).Get(context.Background(), "rdmasuite-latest", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if cm.Data[latest.KeyRunID] != "0badcafe" || cm.Data[latest.KeyExitCode] == "0" ||
		!strings.Contains(cm.Data[latest.KeySummaryText], "the run had not finished when this file was written") {
		t.Errorf("the ConfigMap of the unfinished run: run %q exit %q\n%s", cm.Data[latest.KeyRunID], cm.Data[latest.KeyExitCode], cm.Data[latest.KeySummaryText])
	}
}

// The run after a killed one says what the killed run left (its namespace
// and pods), and how to delete it; its own objects are not named.
func TestTheNextRunSaysWhatAKilledRunLeft(t *testing.T) {
	ts := newSession(t)
	if w := ts.otherRuns(context.Background(), "0badcafe"); w != "" {
		t.Fatalf("a cluster with only this run: %q", w)
	}
	left := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: cluster.RunNamespace("dead0001"),
		Labels: map[string]string{cluster.ManagedByLabel: cluster.ManagedBy, cluster.RunLabel: "dead0001"}}}
	if _, err := ts.kube.CoreV1().Namespaces().Create(context.Background(), left, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	w := ts.otherRuns(context.Background(), "0badcafe")
	for _, want := range []string{"1 other run(s)", "run dead0001 (rdmasuite-dead0001", "a runner killed before its cleanup", "rdmasuite cleanup --run ID"} {
		if !strings.Contains(w, want) {
			t.Errorf("%q lacks %q", w, want)
		}
	}
	if strings.Contains(w, "0badcafe") {
		t.Errorf("the run names itself: %q", w)
	}
}

// The runner's own pod evicted: its SIGTERM is named by the pod's record.
func TestAnEvictedRunnerPodSaysWhoStoppedIt(t *testing.T) {
	now := metav1.Now()
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "rdmasuite-run-x-abcde", Namespace: "rdmasuite", DeletionTimestamp: &now},
		Spec: corev1.PodSpec{NodeName: "node-1"},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.DisruptionTarget,
			Status: corev1.ConditionTrue, Reason: "EvictionByEvictionAPI", Message: "Eviction API: evicting"}}}}
	kube := fake.NewClientset(p)
	got := ownPodLoss(kube, "rdmasuite", "rdmasuite-run-x-abcde")
	if !strings.Contains(got, ": the runner's pod rdmasuite-run-x-abcde on node-1 was evicted through the Eviction API") {
		t.Errorf("ownPodLoss = %q", got)
	}
	if got := ownPodLoss(kube, "rdmasuite", "not-there"); got != "" {
		t.Errorf("a pod that cannot be read: %q", got)
	}
}
