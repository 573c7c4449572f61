package main

import (
	"bytes"
	"context"
	"sort"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/rdmasuite/rdmasuite/internal/cluster"
	"github.com/rdmasuite/rdmasuite/internal/incluster"
)

var cleanupNow = time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)

func labelled(name, ns, runID string, age time.Duration) metav1.ObjectMeta {
	m := metav1.ObjectMeta{Name: name, Namespace: ns, CreationTimestamp: metav1.NewTime(cleanupNow.Add(-age))}
	if runID != "" {
		m.Labels = map[string]string{cluster.ManagedByLabel: cluster.ManagedBy, cluster.RunLabel: runID}
	}
	return m
}

// The shared namespace "team" holds an old run (a pod and a service), a
// fresh one, a run whose pods are gone but whose service is left, and a
// pod that is not the suite's.
func sharedCluster() *fake.Clientset {
	return fake.NewClientset(
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}},
		&corev1.Pod{ObjectMeta: labelled("mr-old", "team", "old", 5*time.Hour)},
		&corev1.Service{ObjectMeta: labelled("nccl-old", "team", "old", 5*time.Hour)},
		&corev1.Pod{ObjectMeta: labelled("mr-fresh", "team", "fresh", 10*time.Minute)},
		&corev1.Service{ObjectMeta: labelled("nccl-podless", "team", "podless", 9*time.Hour)},
		&corev1.Pod{ObjectMeta: labelled("jupyter", "team", "", 50*time.Hour)})
}

func left(t *testing.T, cs *fake.Clientset) string {
	t.Helper()
	var out []string
	pods, _ := cs.CoreV1().Pods("team").List(context.Background(), metav1.ListOptions{})
	for _, p := range pods.Items {
		out = append(out, "pod/"+p.Name)
	}
	svcs, _ := cs.CoreV1().Services("team").List(context.Background(), metav1.ListOptions{})
	for _, s := range svcs.Items {
		out = append(out, "svc/"+s.Name)
	}
	sort.Strings(out)
	return strings.Join(out, ",")
}

func TestCleanupInASharedNamespace(t *testing.T) {
	ctx := context.Background()
	o := cleanupOptions{Namespace: "team", OlderThan: 2 * time.Hour, Wait: time.Second}
	all := "pod/jupyter,pod/mr-fresh,pod/mr-old,svc/nccl-old,svc/nccl-podless"

	cs := sharedCluster()
	var out bytes.Buffer
	dry := o
	dry.DryRun = true
	if err := cleanup(ctx, cs, dry, cleanupNow, &out); err != nil {
		t.Fatal(err)
	}
	if out.String() != "would delete run old in namespace team (age 5h0m0s): 1 pod, 1 service\n" || left(t, cs) != all {
		t.Fatalf("--dry-run printed %q and left %s", out.String(), left(t, cs))
	}

	out.Reset()
	if err := cleanup(ctx, cs, o, cleanupNow, &out); err != nil {
		t.Fatal(err)
	}
	if out.String() != "deleted run old in namespace team (age 5h0m0s): 1 pod, 1 service\n" {
		t.Errorf("printed %q", out.String())
	}
	if got := left(t, cs); got != "pod/jupyter,pod/mr-fresh,svc/nccl-podless" {
		t.Fatalf("left %s", got)
	}
	if _, err := cs.CoreV1().Namespaces().Get(ctx, "team", metav1.GetOptions{}); err != nil {
		t.Fatalf("the namespace must stay: %v", err)
	}

	// --run finds a run by its label on any object, pods gone or not.
	out.Reset()
	one := o
	one.RunID = "podless"
	if err := cleanup(ctx, cs, one, cleanupNow, &out); err != nil {
		t.Fatal(err)
	}
	if got := left(t, cs); got != "pod/jupyter,pod/mr-fresh" || out.String() != "deleted run podless in namespace team: 1 service\n" {
		t.Fatalf("left %s, printed %q", got, out.String())
	}
	one.RunID = "fresh"
	if err := cleanup(ctx, cs, one, cleanupNow, &out); err != nil || left(t, cs) != "pod/jupyter" {
		t.Fatalf("--run of a fresh run: %v, left %s", err, left(t, cs))
	}
	one.RunID = "gone"
	if err := cleanup(ctx, cs, one, cleanupNow, &out); err == nil || !strings.Contains(err.Error(), `no object of run "gone" in namespace team`) {
		t.Fatalf("unknown run: %v", err)
	}
	if left(t, cs) != "pod/jupyter" {
		t.Fatal("the pod that is not the suite's was deleted")
	}
}

func TestCleanupMissingSharedNamespace(t *testing.T) {
	err := cleanup(context.Background(), sharedCluster(), cleanupOptions{Namespace: "nope", OlderThan: time.Hour}, cleanupNow, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "create it (kubectl create ns nope) or drop --namespace") {
		t.Fatalf("got %v", err)
	}
}

// Without --namespace cleanup deletes run namespaces as before, and
// leaves the shared namespace's runs alone.
func TestCleanupRunNamespacesUnchanged(t *testing.T) {
	cs := sharedCluster()
	runNS := &corev1.Namespace{ObjectMeta: labelled(cluster.RunNamespace("r9"), "", "r9", 3*time.Hour)}
	if _, err := cs.CoreV1().Namespaces().Create(context.Background(), runNS, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := cleanup(context.Background(), cs, cleanupOptions{OlderThan: 2 * time.Hour, Wait: time.Second}, cleanupNow, &out); err != nil {
		t.Fatal(err)
	}
	if out.String() != "deleted rdmasuite-r9 (run r9, age 3h0m0s)\n" || left(t, sharedCluster()) != left(t, cs) {
		t.Fatalf("printed %q, left %s", out.String(), left(t, cs))
	}
}

// A negative --older-than (a typo for a positive one) would
// select every run, a live one included: refused before any API call,
// naming the fix. 0s stays the explicit "every run" (the bed uses it).
func TestCleanupRefusesANegativeAge(t *testing.T) {
	for _, v := range []string{"-1h", "-1s"} {
		var out, errb strings.Builder
		code := run([]string{"cleanup", "--kubeconfig", "/nonexistent/kubeconfig", "--older-than", v}, &out, &errb)
		if code != 2 || !strings.Contains(errb.String(), "--older-than") || strings.Contains(errb.String(), "kubeconfig") {
			t.Errorf("--older-than %s: exit %d, %q", v, code, errb.String())
		}
	}
}

// The Job of an rdmasuite run that was killed (it could not delete what it
// made) is found by its label: deleted with what its run created when old
// enough or named with --run, kept when young; --run and --older-than
// together are refused.
func TestCleanupFindsAKilledCLIRunsJob(t *testing.T) {
	job := func(id string, age time.Duration) *batchv1.Job {
		m := metav1.ObjectMeta{Name: "rdmasuite-run-" + id, Namespace: "rdmasuite", CreationTimestamp: metav1.NewTime(cleanupNow.Add(-age)),
			Labels: map[string]string{incluster.RunLabel: id}, Annotations: map[string]string{incluster.CreatedAnnotation: "ConfigMap/rdmasuite-thresholds-" + id}}
		return &batchv1.Job{ObjectMeta: m}
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "rdmasuite-thresholds-old1", Namespace: "rdmasuite"}}
	ctx := context.Background()
	cs := fake.NewClientset(job("old1", 5*time.Hour), job("new1", 10*time.Minute), cm)
	var out bytes.Buffer
	if err := cleanup(ctx, cs, cleanupOptions{OlderThan: 2 * time.Hour, Wait: time.Second}, cleanupNow, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "deleted job rdmasuite/rdmasuite-run-old1 (rdmasuite run old1, running, age 5h0m0s) and what it created") {
		t.Errorf("printed %q", out.String())
	}
	jobs, _ := cs.BatchV1().Jobs("rdmasuite").List(ctx, metav1.ListOptions{})
	if len(jobs.Items) != 1 || jobs.Items[0].Name != "rdmasuite-run-new1" {
		t.Errorf("jobs left: %v", jobs.Items)
	}
	if _, err := cs.CoreV1().ConfigMaps("rdmasuite").Get(ctx, cm.Name, metav1.GetOptions{}); err == nil {
		t.Error("the old run's ConfigMap was left")
	}
	out.Reset()
	if err := cleanup(ctx, cs, cleanupOptions{RunID: "new1", Wait: time.Second}, cleanupNow, &out); err != nil {
		t.Fatalf("--run of a CLI run: %v", err)
	}
	if !strings.Contains(out.String(), "deleted job rdmasuite/rdmasuite-run-new1") {
		t.Errorf("--run new1 printed %q", out.String())
	}
	if err := cleanup(ctx, cs, cleanupOptions{RunID: "nope", Wait: time.Second}, cleanupNow, &out); err == nil || !strings.Contains(err.Error(), "no rdmasuite run job") {
		t.Errorf("--run of nothing: %v", err)
	}
	var o, e strings.Builder
	if code := run([]string{"cleanup", "--kubeconfig", "/nonexistent", "--run", "x", "--older-than", "1h"}, &o, &e); code != 2 || !strings.Contains(e.String(), "give one") {
		t.Errorf("--run with --older-than: exit %d, %q", code, e.String())
	}
}
