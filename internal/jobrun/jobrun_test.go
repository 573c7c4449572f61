package jobrun

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/rdmasuite/rdmasuite/internal/cluster"
	"github.com/rdmasuite/rdmasuite/internal/podrun"
	"github.com/rdmasuite/rdmasuite/workloads/ncclboot"
)

func spec() Spec {
	return Spec{Name: "nccl-ab12", Nodes: []string{"n2", "n1"}, Port: 29400,
		Pod: podrun.Spec{Namespace: "rdmasuite-r1", RunID: "r1", Image: "probe:1", Args: []string{"nccl", "--world", "2"},
			Resources: map[string]int64{"nvidia.com/gpu": 1, "rdma/rdma_shared_device_a": 1}, AddCaps: []corev1.Capability{"IPC_LOCK"}},
		Env: map[string]string{"NCCL_DEBUG": "INFO"}, StartTimeout: time.Second, Timeout: 3 * time.Second}
}

func TestObjectsAreAnIndexedJobBehindAHeadlessService(t *testing.T) {
	svc, job := Objects(spec())
	if svc.Spec.ClusterIP != corev1.ClusterIPNone || !svc.Spec.PublishNotReadyAddresses || svc.Spec.Selector[worldLabel] != "nccl-ab12" {
		t.Fatalf("service: %+v", svc.Spec)
	}
	js := job.Spec
	if *js.Completions != 2 || *js.Parallelism != 2 || *js.CompletionMode != batchv1.IndexedCompletion {
		t.Fatalf("job spec: completions %d parallelism %d mode %s", *js.Completions, *js.Parallelism, *js.CompletionMode)
	}
	// A failed rank is never retried, and it must not fail the Job (a
	// Job-wide backoffLimit 0 does): the controller would then delete the
	// other ranks before rank 0 has printed the world's result.
	if js.BackoffLimitPerIndex == nil || *js.BackoffLimitPerIndex != 0 || js.BackoffLimit != nil || js.MaxFailedIndexes != nil {
		t.Fatalf("job spec: backoffLimitPerIndex %v backoffLimit %v maxFailedIndexes %v; want 0, unset, unset",
			js.BackoffLimitPerIndex, js.BackoffLimit, js.MaxFailedIndexes)
	}
	ps := js.Template.Spec
	if ps.Subdomain != svc.Name || ps.DNSPolicy != corev1.DNSClusterFirst || ps.NodeName != "" || ps.RestartPolicy != corev1.RestartPolicyNever {
		t.Fatalf("pod: subdomain %q dns %q node %q restart %q", ps.Subdomain, ps.DNSPolicy, ps.NodeName, ps.RestartPolicy)
	}
	if js.Template.Labels[worldLabel] != "nccl-ab12" {
		t.Fatal("pods must carry the Service's selector label")
	}
	aa := ps.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	if len(aa) != 1 || aa[0].TopologyKey != corev1.LabelHostname {
		t.Fatalf("one rank per node needs hostname anti-affinity: %+v", aa)
	}
	na := ps.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0].MatchExpressions[0]
	if strings.Join(na.Values, ",") != "n1,n2" {
		t.Fatalf("node affinity: %v", na.Values)
	}
	env := map[string]string{}
	for _, e := range ps.Containers[0].Env {
		env[e.Name] = e.Value
	}
	self, err := ncclboot.FromEnv(func(k string) string {
		if k == ncclboot.EnvIndex {
			return "1"
		}
		return env[k]
	}, 2)
	if err != nil || self.Rank0Addr != "nccl-ab12-0.nccl-ab12.rdmasuite-r1.svc:29400" || env["NCCL_DEBUG"] != "INFO" {
		t.Fatalf("the probe cannot find rank 0 from this env (%v): %+v", err, self)
	}
	if l := ps.Containers[0].Resources.Limits; l.Name("nvidia.com/gpu", "").Value() != 1 {
		t.Fatalf("limits: %v", l)
	}
}

func rankPod(name string, idx string, phase corev1.PodPhase, logs string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "rdmasuite-r1", CreationTimestamp: metav1.Now(),
		Labels: map[string]string{JobNameLabel: "nccl-ab12"}, Annotations: map[string]string{IndexAnnotation: idx}},
		Spec: corev1.PodSpec{NodeName: "n" + idx}, Status: corev1.PodStatus{Phase: phase}}
}

func TestRunCollectsEveryRankAndDeletesWhatItCreated(t *testing.T) {
	cs := fake.NewClientset(rankPod("nccl-ab12-1-x", "1", corev1.PodSucceeded, ""), rankPod("nccl-ab12-0-y", "0", corev1.PodFailed, ""))
	res, err := Run(context.Background(), cs, spec())
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Ranks) != 2 || res.Ranks[0].Index != 0 || res.Ranks[0].Pod != "nccl-ab12-0-y" || res.Ranks[1].Node != "n1" {
		t.Fatalf("ranks: %+v", res.Ranks)
	}
	if r0, ok := res.Rank0(); !ok || r0.Logs == "" || r0.State == "" {
		t.Fatalf("rank 0 must carry its logs and, as it failed, its state: %+v", r0)
	}
	if _, err := cs.BatchV1().Jobs("rdmasuite-r1").Get(context.Background(), "nccl-ab12", metav1.GetOptions{}); err == nil {
		t.Fatal("the Job was not deleted")
	}
	if _, err := cs.CoreV1().Services("rdmasuite-r1").Get(context.Background(), "nccl-ab12", metav1.GetOptions{}); err == nil {
		t.Fatal("the Service was not deleted")
	}
	if l, _ := cs.CoreV1().Pods("rdmasuite-r1").List(context.Background(), metav1.ListOptions{}); len(l.Items) != 0 {
		t.Fatalf("%d rank pods left behind", len(l.Items))
	}
}

func TestRunNamesTheRankThatNeverStarted(t *testing.T) {
	stuck := rankPod("nccl-ab12-1-x", "1", corev1.PodPending, "")
	stuck.Spec.NodeName = ""
	stuck.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable",
		Message: "0/2 nodes are available: 2 Insufficient nvidia.com/gpu."}}
	cs := fake.NewClientset(stuck, rankPod("nccl-ab12-0-y", "0", corev1.PodRunning, ""))
	res, err := Run(context.Background(), cs, spec())
	if !errors.Is(err, podrun.ErrTimeout) || !strings.Contains(err.Error(), "Insufficient nvidia.com/gpu") || !strings.Contains(err.Error(), "rank 1") {
		t.Fatalf("err = %v", err)
	}
	if len(res.Ranks) != 2 {
		t.Fatalf("ranks: %+v", res.Ranks)
	}
	if _, err := cs.BatchV1().Jobs("rdmasuite-r1").Get(context.Background(), "nccl-ab12", metav1.GetOptions{}); err == nil {
		t.Fatal("the Job must be deleted on failure too")
	}
}

func TestRunWithoutNodes(t *testing.T) {
	s := spec()
	s.Nodes = nil
	if _, err := Run(context.Background(), fake.NewClientset(), s); err == nil {
		t.Fatal("a world without nodes must be an error")
	}
}

// Cleanup in a shared namespace (--namespace) finds a run's objects by
// its labels only: the Service, the Job and the Job's pods all carry them.
func TestServiceAndJobCarryTheRunLabels(t *testing.T) {
	svc, job := Objects(spec())
	for what, l := range map[string]map[string]string{"service": svc.Labels, "job": job.Labels, "job's pods": job.Spec.Template.Labels} {
		if l[cluster.ManagedByLabel] != cluster.ManagedBy || l[cluster.RunLabel] != "r1" {
			t.Errorf("%s labels %v", what, l)
		}
	}
	if svc.Namespace != "rdmasuite-r1" || job.Namespace != "rdmasuite-r1" {
		t.Errorf("namespaces %s %s", svc.Namespace, job.Namespace)
	}
}

// When a rank fails first, the Job controller fails the Job and deletes the
// ranks still pending: the result must still say why that rank never ran
// (its last seen state), not just that it "never got a pod" (CI of a2105e2:
// the hostdev world's rank 0 vanished without a reason).
func TestRunKeepsTheLastStateOfARankTheJobControllerDeleted(t *testing.T) {
	pend := rankPod("nccl-ab12-0-y", "0", corev1.PodPending, "")
	pend.Spec.NodeName = ""
	pend.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable",
		Message: "0/2 nodes are available: 1 Insufficient nvidia.com/gpu, 1 node(s) didn't match pod anti-affinity rules."}}
	cs := fake.NewClientset(pend, rankPod("nccl-ab12-1-x", "1", corev1.PodFailed, ""))
	lists := 0
	cs.PrependReactor("list", "pods", func(action k8stesting.Action) (bool, runtime.Object, error) {
		lists++
		if lists == 2 {
			// The controller's reaction to rank 1's failure.
			_ = cs.Tracker().Delete(corev1.SchemeGroupVersion.WithResource("pods"), "rdmasuite-r1", "nccl-ab12-0-y")
			j, err := cs.Tracker().Get(batchv1.SchemeGroupVersion.WithResource("jobs"), "rdmasuite-r1", "nccl-ab12")
			if err == nil {
				job := j.(*batchv1.Job)
				job.Status.Conditions = []batchv1.JobCondition{{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: "BackoffLimitExceeded", Message: "Job has reached the specified backoff limit"}}
				_ = cs.Tracker().Update(batchv1.SchemeGroupVersion.WithResource("jobs"), job, "rdmasuite-r1")
			}
		}
		return false, nil, nil
	})
	res, err := Run(context.Background(), cs, spec())
	if err != nil {
		t.Fatal(err)
	}
	r0, ok := res.Rank0()
	if !ok {
		t.Fatalf("rank 0 is missing from the result: %+v", res.Ranks)
	}
	if r0.Phase != corev1.PodPending || !strings.Contains(r0.State, "Insufficient nvidia.com/gpu") || !strings.Contains(r0.State, "deleted") {
		t.Fatalf("rank 0 must carry its last seen state and say its pod was deleted: %+v", r0)
	}
}

// CI of 00fd87d: rank 1 exited 1 (rank 0 had called the world off) and
// the Job controller, failing the Job, deleted rank 0 while it printed the
// world's result, so the verdict had nothing to read. Rank 0 must be
// waited for after another rank failed, and its log collected.
func TestRunWaitsForRank0AfterAnotherRankFailed(t *testing.T) {
	cs := fake.NewClientset(rankPod("nccl-ab12-0-y", "0", corev1.PodRunning, ""), rankPod("nccl-ab12-1-x", "1", corev1.PodFailed, ""))
	lists := 0
	cs.PrependReactor("list", "pods", func(action k8stesting.Action) (bool, runtime.Object, error) {
		if lists++; lists == 3 {
			p := rankPod("nccl-ab12-0-y", "0", corev1.PodSucceeded, "")
			_ = cs.Tracker().Update(corev1.SchemeGroupVersion.WithResource("pods"), p, "rdmasuite-r1")
		}
		return false, nil, nil
	})
	s := spec()
	s.Timeout = 20 * time.Second
	res, err := Run(context.Background(), cs, s)
	if err != nil {
		t.Fatal(err)
	}
	r0, ok := res.Rank0()
	if !ok || r0.Phase != corev1.PodSucceeded || r0.Logs == "" {
		t.Fatalf("rank 0 must be waited for and its log kept: %+v", r0)
	}
}

// A rank that failed while another still runs (rank 0 waiting out its
// rendezvous for a rank that crashed) is not waited on for the whole run:
// after SiblingGrace the run stops, names the failed rank and keeps the
// log of the one still running.
func TestRunStopsWaitingSiblingGraceAfterARankFailed(t *testing.T) {
	cs := fake.NewClientset(rankPod("nccl-ab12-0-y", "0", corev1.PodRunning, ""), rankPod("nccl-ab12-1-x", "1", corev1.PodFailed, ""))
	s := spec()
	s.Timeout, s.SiblingGrace = time.Minute, time.Second
	res, err := Run(context.Background(), cs, s)
	if err == nil || !strings.Contains(err.Error(), "rank 1 failed") || !strings.Contains(err.Error(), "still running") {
		t.Fatalf("err = %v", err)
	}
	if r0, ok := res.Rank0(); !ok || r0.Phase != corev1.PodRunning || r0.Logs == "" {
		t.Fatalf("rank 0's log must be collected while it still runs: %+v", r0)
	}
	if l, _ := cs.CoreV1().Pods("rdmasuite-r1").List(context.Background(), metav1.ListOptions{}); len(l.Items) != 0 {
		t.Fatalf("%d rank pods left behind", len(l.Items))
	}
}

// exitedRank is a rank pod whose container has exited while the kubelet
// still reports phase Running: it sets the terminal phase only after it
// has stopped the pod's sandbox (CNI DEL), 20-40 s later on a loaded node.
func exitedRank(name, idx string, exit int32) *corev1.Pod {
	p := rankPod(name, idx, corev1.PodRunning, "")
	p.Spec.RestartPolicy = corev1.RestartPolicyNever
	p.Spec.Containers = []corev1.Container{{Name: "probe"}}
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "probe",
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: exit, Reason: "Completed"}}}}
	return p
}

// A world is over when every rank's container has exited; the
// run must not wait for the kubelet's terminal phase (the guest bed's
// NCCL worlds waited 20-60 s each for it), and each rank reads the phase
// the kubelet will report, so the verdict's rank states agree with the
// exits.
func TestRunEndsWhenEveryRankHasExitedBeforeThePhaseSaysSo(t *testing.T) {
	cs := fake.NewClientset(exitedRank("nccl-ab12-0-y", "0", 1), exitedRank("nccl-ab12-1-x", "1", 0))
	s := spec()
	s.StartTimeout, s.Timeout = time.Minute, time.Minute
	start := time.Now()
	res, err := Run(context.Background(), cs, s)
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 20*time.Second {
		t.Fatalf("the world took %v to end: its ranks had exited at the start", took)
	}
	r0, _ := res.Rank0()
	if r0.Phase != corev1.PodFailed || r0.ExitCode != 1 || !strings.Contains(r0.State, "phase Failed") || strings.Contains(r0.State, "Running") {
		t.Fatalf("rank 0 exited 1: want phase Failed, exit 1, a state that says so: %+v", r0)
	}
	if r1 := res.Ranks[1]; r1.Phase != corev1.PodSucceeded || r1.ExitCode != 0 {
		t.Fatalf("rank 1 exited 0: want phase Succeeded: %+v", r1)
	}
}

// A rank whose container still runs keeps the world waiting, whatever the
// other rank's exit says.
func TestRunWaitsForARankWhoseContainerStillRuns(t *testing.T) {
	running := exitedRank("nccl-ab12-0-y", "0", 0)
	running.Status.ContainerStatuses[0].State = corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
	cs := fake.NewClientset(running, exitedRank("nccl-ab12-1-x", "1", 0))
	s := spec()
	s.StartTimeout, s.Timeout = time.Second, 2*time.Second
	if _, err := Run(context.Background(), cs, s); err == nil {
		t.Fatal("a world with a rank still running ended")
	}
}
