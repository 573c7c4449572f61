package cluster

import (
	"context"
	"errors"
	"sort"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

const shared = "rdma-conformance"

func runMeta(name, ns, runID string, created time.Time) metav1.ObjectMeta {
	m := metav1.ObjectMeta{Name: name, Namespace: ns, CreationTimestamp: metav1.NewTime(created)}
	if runID != "" {
		m.Labels = map[string]string{ManagedByLabel: ManagedBy, RunLabel: runID}
	}
	return m
}

// twoRuns is one shared namespace holding the objects of runs a and b (a
// pod, a job's rank pod, a service, a job, a PVC and a PV each), a pod
// that is not the suite's, a pod carrying a's run label but not the
// suite's managed-by label, and a's label on a pod in another namespace.
func twoRuns(now time.Time) *fake.Clientset {
	var objs []runtime.Object
	objs = append(objs, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: shared}})
	for _, id := range []string{"a", "b"} {
		objs = append(objs,
			&corev1.Pod{ObjectMeta: runMeta("mr-shared-dev-"+id, shared, id, now.Add(-time.Hour))},
			&corev1.Pod{ObjectMeta: runMeta("nccl-"+id+"-0-xyz", shared, id, now.Add(-time.Hour))},
			&corev1.Service{ObjectMeta: runMeta("nccl-"+id, shared, id, now)},
			&batchv1.Job{ObjectMeta: runMeta("nccl-"+id, shared, id, now)},
			&corev1.PersistentVolumeClaim{ObjectMeta: runMeta("stall-data-"+id, shared, id, now)},
			&corev1.PersistentVolume{ObjectMeta: runMeta("rdmasuite-"+id+"-stall-pv", "", id, now)})
	}
	lookalike := runMeta("lookalike", shared, "", now)
	lookalike.Labels = map[string]string{RunLabel: "a"}
	objs = append(objs,
		&corev1.Pod{ObjectMeta: runMeta("operator-debug", shared, "", now.Add(-48*time.Hour))},
		&corev1.Pod{ObjectMeta: lookalike},
		&corev1.Pod{ObjectMeta: runMeta("mr-shared-dev-a", "elsewhere", "a", now)},
		&corev1.PersistentVolume{ObjectMeta: runMeta("pv-1", "", "", now)})
	return fake.NewClientset(objs...)
}

func names[T any](t *testing.T, list []T, name func(T) string) string {
	t.Helper()
	var out []string
	for _, o := range list {
		out = append(out, name(o))
	}
	sort.Strings(out)
	return strings.Join(out, ",")
}

// Deleting run a in a shared namespace deletes a's pods, service, job, PVC
// and PV, and nothing else: b's objects, the pod that is not the suite's,
// the look-alike and a's namesake in another namespace stay, and so does
// the namespace.
func TestDeleteRunObjectsDeletesOnlyTheRun(t *testing.T) {
	ctx := context.Background()
	cs := twoRuns(time.Now())
	var jobDel, podDel []metav1.DeleteOptions
	cs.PrependReactor("delete", "jobs", func(a k8stesting.Action) (bool, runtime.Object, error) {
		jobDel = append(jobDel, a.(k8stesting.DeleteActionImpl).DeleteOptions)
		return false, nil, nil
	})
	cs.PrependReactor("delete", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		podDel = append(podDel, a.(k8stesting.DeleteActionImpl).DeleteOptions)
		return false, nil, nil
	})
	got, err := DeleteRunObjects(ctx, cs, shared, "a", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if got.String() != "2 pods, 1 service, 1 job, 1 PVC, 1 PV" {
		t.Errorf("deleted %s", got)
	}
	pods, _ := cs.CoreV1().Pods(shared).List(ctx, metav1.ListOptions{})
	if s := names(t, pods.Items, func(p corev1.Pod) string { return p.Name }); s != "lookalike,mr-shared-dev-b,nccl-b-0-xyz,operator-debug" {
		t.Errorf("pods left in %s: %s", shared, s)
	}
	if p, _ := cs.CoreV1().Pods("elsewhere").List(ctx, metav1.ListOptions{}); len(p.Items) != 1 {
		t.Errorf("a pod of another namespace was deleted")
	}
	svcs, _ := cs.CoreV1().Services(shared).List(ctx, metav1.ListOptions{})
	jobs, _ := cs.BatchV1().Jobs(shared).List(ctx, metav1.ListOptions{})
	pvcs, _ := cs.CoreV1().PersistentVolumeClaims(shared).List(ctx, metav1.ListOptions{})
	pvs, _ := cs.CoreV1().PersistentVolumes().List(ctx, metav1.ListOptions{})
	if s := names(t, svcs.Items, func(o corev1.Service) string { return o.Name }); s != "nccl-b" {
		t.Errorf("services left: %s", s)
	}
	if s := names(t, jobs.Items, func(o batchv1.Job) string { return o.Name }); s != "nccl-b" {
		t.Errorf("jobs left: %s", s)
	}
	if s := names(t, pvcs.Items, func(o corev1.PersistentVolumeClaim) string { return o.Name }); s != "stall-data-b" {
		t.Errorf("PVCs left: %s", s)
	}
	if s := names(t, pvs.Items, func(o corev1.PersistentVolume) string { return o.Name }); s != "pv-1,rdmasuite-b-stall-pv" {
		t.Errorf("PVs left: %s", s)
	}
	if _, err := cs.CoreV1().Namespaces().Get(ctx, shared, metav1.GetOptions{}); err != nil {
		t.Errorf("the shared namespace must stay: %v", err)
	}
	if len(jobDel) != 1 || jobDel[0].PropagationPolicy == nil || *jobDel[0].PropagationPolicy != metav1.DeletePropagationBackground {
		t.Errorf("jobs are deleted with background propagation: %+v", jobDel)
	}
	for _, o := range podDel {
		if o.GracePeriodSeconds == nil || *o.GracePeriodSeconds != 0 {
			t.Errorf("pods are deleted with grace 0: %+v", o)
		}
	}
	if len(podDel) != 2 {
		t.Errorf("%d pod deletions, want a's 2", len(podDel))
	}
}

// A pod that does not go (a node that stopped answering, a finalizer)
// makes the cleanup fail after the timeout, naming the command that
// finishes it, instead of reporting the run as cleaned up.
func TestDeleteRunObjectsWaitsForThePods(t *testing.T) {
	cs := twoRuns(time.Now())
	cs.PrependReactor("delete", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, nil // accepted, but the pod stays
	})
	start := time.Now()
	_, err := DeleteRunObjects(context.Background(), cs, shared, "a", 600*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "2 pod(s) of run a still in namespace "+shared) ||
		!strings.Contains(err.Error(), "kubectl delete pod -n "+shared+" -l "+RunSelector("a")) {
		t.Fatalf("got %v", err)
	}
	if time.Since(start) < 500*time.Millisecond {
		t.Errorf("returned before the timeout")
	}
}

// An empty run id would select every object carrying an empty run label:
// refused.
func TestDeleteRunObjectsRefusesNoRunID(t *testing.T) {
	cs := twoRuns(time.Now())
	if _, err := DeleteRunObjects(context.Background(), cs, shared, "", time.Second); err == nil {
		t.Fatal("no error for an empty run id")
	}
	pods, _ := cs.CoreV1().Pods(shared).List(context.Background(), metav1.ListOptions{})
	if len(pods.Items) != 6 {
		t.Fatalf("%d pods left, want all 6", len(pods.Items))
	}
}

// A Role without services/jobs/PVC/PV rights (a run of suite=rdma only)
// still cleans up its pods: a run cannot create what it may not list.
func TestDeleteRunObjectsSkipsForbiddenKinds(t *testing.T) {
	cs := twoRuns(time.Now())
	for _, r := range []string{"services", "jobs", "persistentvolumeclaims", "persistentvolumes"} {
		cs.PrependReactor("list", r, func(a k8stesting.Action) (bool, runtime.Object, error) {
			return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: a.GetResource().Resource}, "", errors.New("RBAC"))
		})
	}
	got, err := DeleteRunObjects(context.Background(), cs, shared, "a", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if got.String() != "2 pods" || strings.Join(got.Skipped, ",") != "services,jobs,persistentvolumeclaims,persistentvolumes" {
		t.Fatalf("deleted %s, skipped %v", got, got.Skipped)
	}
	// Pods must be listable: without that the run's pods would leak.
	cs.PrependReactor("list", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", errors.New("RBAC"))
	})
	if _, err := DeleteRunObjects(context.Background(), cs, shared, "b", time.Second); err == nil {
		t.Fatal("forbidden pods list must fail the cleanup")
	}
}

func TestCheckNamespace(t *testing.T) {
	ctx := context.Background()
	cs := twoRuns(time.Now())
	if err := CheckNamespace(ctx, cs, shared); err != nil {
		t.Fatalf("existing namespace: %v", err)
	}
	err := CheckNamespace(ctx, cs, "rdma-missing")
	if err == nil || !strings.Contains(err.Error(), "does not exist") ||
		!strings.Contains(err.Error(), "create it (kubectl create ns rdma-missing) or drop --namespace") {
		t.Fatalf("missing namespace: %v", err)
	}
	if _, err := cs.CoreV1().Namespaces().Get(ctx, "rdma-missing", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the check must never create the namespace: %v", err)
	}
	dying := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "dying"}, Status: corev1.NamespaceStatus{Phase: corev1.NamespaceTerminating}}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, dying, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := CheckNamespace(ctx, cs, "dying"); err == nil || !strings.Contains(err.Error(), "Terminating") {
		t.Fatalf("terminating namespace: %v", err)
	}
	cs.PrependReactor("get", "namespaces", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "namespaces"}, shared, errors.New("RBAC"))
	})
	err = CheckNamespace(ctx, cs, shared)
	if err == nil || !strings.Contains(err.Error(), "not allowed to read") ||
		!strings.Contains(err.Error(), "create it (kubectl create ns "+shared+") or drop --namespace") {
		t.Fatalf("forbidden namespace: %v", err)
	}
}

// cleanup --namespace finds runs by the run label on pods: the age is the
// oldest pod's, a run is kept when a pod says so, pods that are not the
// suite's and other namespaces are ignored.
func TestStaleRunsInSharedNamespace(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	pod := func(name, ns, id string, age time.Duration, kept bool) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: runMeta(name, ns, id, now.Add(-age))}
		if kept {
			p.Labels[KeptLabel] = "true"
		}
		return p
	}
	cs := fake.NewClientset(
		pod("old-1", shared, "old", 10*time.Minute, false),
		pod("old-2", shared, "old", 5*time.Hour, false),
		pod("kept-1", shared, "kept", 3*time.Hour, true),
		pod("kept-2", shared, "kept", 3*time.Hour, false),
		pod("fresh-1", shared, "fresh", 10*time.Minute, false),
		pod("not-ours", shared, "", 9*time.Hour, false),
		pod("elsewhere", "other", "far", 9*time.Hour, false))
	got, err := StaleRunsIn(ctx, cs, shared, 2*time.Hour, "", now)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].RunID != "kept" || !got[0].Kept || got[0].Pods != 2 ||
		got[1].RunID != "old" || got[1].Kept || got[1].Age != 5*time.Hour || got[1].Pods != 2 || got[1].Name != shared {
		t.Fatalf("%+v", got)
	}
	one, err := StaleRunsIn(ctx, cs, shared, 2*time.Hour, "fresh", now)
	if err != nil || len(one) != 1 || one[0].RunID != "fresh" || one[0].Age != 10*time.Minute {
		t.Fatalf("--run picks one run whatever its age: %+v %v", one, err)
	}
	none, _ := StaleRunsIn(ctx, cs, shared, 2*time.Hour, "far", now)
	if len(none) != 0 {
		t.Fatalf("a run of another namespace: %+v", none)
	}
}

// --keep-on-failure in a shared namespace labels the run's pods kept, and
// nobody else's.
func TestMarkRunObjectsKept(t *testing.T) {
	ctx := context.Background()
	cs := twoRuns(time.Now())
	if err := MarkRunObjectsKept(ctx, cs, shared, "a", "2 checks failed"); err != nil {
		t.Fatal(err)
	}
	pods, _ := cs.CoreV1().Pods(shared).List(ctx, metav1.ListOptions{LabelSelector: KeptLabel + "=true"})
	if s := names(t, pods.Items, func(p corev1.Pod) string { return p.Name }); s != "mr-shared-dev-a,nccl-a-0-xyz" {
		t.Fatalf("kept pods: %s", s)
	}
	if pods.Items[0].Annotations["rdmasuite.io/kept-because"] != "2 checks failed" {
		t.Fatalf("%+v", pods.Items[0].ObjectMeta)
	}
}
