package incluster

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/rdmasuite/rdmasuite/internal/jobrun"
	"github.com/rdmasuite/rdmasuite/internal/latest"
	"github.com/rdmasuite/rdmasuite/reports"
	"github.com/rdmasuite/rdmasuite/suites/deploy"
)

func load(t *testing.T) Objects {
	t.Helper()
	o, err := Load(deploy.Files)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// The embedded manifests decode into the objects kustomize would apply,
// in the base's namespace, and a run in another namespace changes every
// place that names it.
func TestLoadAndNamespace(t *testing.T) {
	o := load(t)
	if o.Namespace.Name != "rdmasuite" || o.Role.Namespace != "rdmasuite" || o.Job.Namespace != "rdmasuite" ||
		o.Thresholds.Data[ThresholdsKey] == "" || o.Job.Labels[PartOfLabel] != PartOf || o.ClusterRoleBinding.Subjects[0].Namespace != "rdmasuite" {
		t.Fatalf("loaded %+v", o)
	}
	o2, err := o.InNamespace("gpu-acceptance")
	if err != nil {
		t.Fatal(err)
	}
	if o2.Namespace.Name != "gpu-acceptance" || o2.ServiceAccount.Namespace != "gpu-acceptance" || o2.Thresholds.Namespace != "gpu-acceptance" ||
		o2.RoleBinding.Subjects[0].Namespace != "gpu-acceptance" || o2.ClusterRoleBinding.Subjects[0].Namespace != "gpu-acceptance" {
		t.Fatalf("moved %+v", o2)
	}
	var getsNS bool
	for _, r := range o2.Role.Rules {
		if len(r.Resources) == 1 && r.Resources[0] == "namespaces" {
			getsNS = len(r.ResourceNames) == 1 && r.ResourceNames[0] == "gpu-acceptance"
		}
	}
	if !getsNS {
		t.Fatalf("the runner may not get its own namespace: %+v", o2.Role.Rules)
	}
	if o.Namespace.Name != "rdmasuite" {
		t.Fatal("InNamespace changed the original")
	}
	if _, err := o.InNamespace("Not_A_Namespace"); err == nil {
		t.Fatal("a bad namespace name was accepted")
	}
}

func spec() JobSpec {
	return JobSpec{ID: "1a2b3c4d", Image: "registry.local/runner:v9", Timeout: 50 * time.Minute,
		SuiteArgs:    []string{"--labels", "suite=doctor", "--bw-sizes=1M"},
		NodeSelector: map[string]string{"kubernetes.io/hostname": "node-1"},
		Env:          []corev1.EnvVar{{Name: "KUBERNETES_SERVICE_HOST", Value: "10.0.0.1"}}}
}

// The Job is the manifest's, made the run's: the suite's flags pass
// through and replace the manifest's own (e2e-framework's --labels would
// add up), the results come back through the ConfigMap (emptyDir, no
// claim), the deadline leaves the teardown its time.
func TestBuildJob(t *testing.T) {
	o := load(t)
	j, err := BuildJob(o, spec())
	if err != nil {
		t.Fatal(err)
	}
	c := j.Spec.Template.Spec.Containers[0]
	args := strings.Join(c.Args, " ")
	if j.Name != "rdmasuite-run-1a2b3c4d" || j.Labels[RunLabel] != "1a2b3c4d" || c.Image != "registry.local/runner:v9" {
		t.Fatalf("job %s labels %v image %s", j.Name, j.Labels, c.Image)
	}
	for _, want := range []string{"-test.timeout=50m0s", "--namespace=rdmasuite", "--results-configmap=rdmasuite-latest", "--labels suite=doctor", "--bw-sizes=1M", "-test.v"} {
		if !strings.Contains(args, want) {
			t.Errorf("args %q lack %q", args, want)
		}
	}
	if strings.Contains(args, "suite=smoke") || strings.Count(args, "-test.timeout") != 1 || strings.Count(args, "--namespace") != 1 {
		t.Errorf("args %q: the manifest's --labels, timeout or namespace survived beside the run's", args)
	}
	if *j.Spec.ActiveDeadlineSeconds != int64((65 * time.Minute).Seconds()) {
		t.Errorf("deadline %d", *j.Spec.ActiveDeadlineSeconds)
	}
	for _, v := range j.Spec.Template.Spec.Volumes {
		if v.Name == "results" && (v.EmptyDir == nil || v.PersistentVolumeClaim != nil) {
			t.Errorf("results volume %+v", v)
		}
	}
	if j.Spec.Template.Spec.NodeSelector["kubernetes.io/hostname"] != "node-1" || len(c.Env) != 1 {
		t.Errorf("placement %v env %v", j.Spec.Template.Spec.NodeSelector, c.Env)
	}
	if o.Job.Spec.Template.Spec.Containers[0].Image == "registry.local/runner:v9" {
		t.Error("BuildJob changed the manifest")
	}
	// Without suite flags the manifest's own acceptance flags run.
	s := spec()
	s.SuiteArgs = nil
	j, _ = BuildJob(o, s)
	if !strings.Contains(strings.Join(j.Spec.Template.Spec.Containers[0].Args, " "), "--labels=suite=smoke,suite=rdma,suite=doctor,suite=gpu") {
		t.Errorf("default args %v", j.Spec.Template.Spec.Containers[0].Args)
	}
}

func TestSuiteArgsTheRunSets(t *testing.T) {
	for _, a := range []string{"--namespace=x", "-namespace", "--results-configmap", "--report-dir=/tmp", "--kubeconfig", "-test.timeout=1h"} {
		if err := CheckSuiteArgs([]string{"--labels", "suite=rdma", a}); err == nil {
			t.Errorf("%s accepted", a)
		}
	}
	if err := CheckSuiteArgs([]string{"--labels", "suite=rdma", "--bw-qps", "2", "--node-selector", "a=b"}); err != nil {
		t.Error(err)
	}
}

func newRunner(cs *fake.Clientset, o Objects) (*Runner, *bytes.Buffer) {
	var out bytes.Buffer
	return &Runner{Kube: cs, Out: &out, Err: &out, Objects: o, StartTimeout: 2 * time.Second, Poll: 10 * time.Millisecond, GracePeriod: time.Second}, &out
}

// On an empty cluster everything is created and listed for deletion; on a
// cluster where an admin applied the base, nothing of it is, and an old
// Role is brought to this version's rules.
func TestApply(t *testing.T) {
	o := load(t)
	cs := fake.NewClientset()
	r, _ := newRunner(cs, o)
	created, err := r.Apply(context.Background())
	if err != nil || len(created) != 7 {
		t.Fatalf("created %v, %v", created, err)
	}
	old := o.Role.DeepCopy()
	old.Rules = []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get"}}}
	cs = fake.NewClientset(o.Namespace.DeepCopy(), o.ServiceAccount.DeepCopy(), old, o.RoleBinding.DeepCopy(), o.ClusterRole.DeepCopy(), o.ClusterRoleBinding.DeepCopy())
	r, _ = newRunner(cs, o)
	created, err = r.Apply(context.Background())
	if err != nil || len(created) != 1 || created[0].Kind != "ConfigMap" {
		t.Fatalf("created %v, %v", created, err)
	}
	got, _ := cs.RbacV1().Roles("rdmasuite").Get(context.Background(), o.Role.Name, metav1.GetOptions{})
	if len(got.Rules) != len(o.Role.Rules) {
		t.Fatalf("old role kept: %+v", got.Rules)
	}
	cs = fake.NewClientset()
	cs.PrependReactor("get", "namespaces", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "namespaces"}, "rdmasuite", errors.New("RBAC"))
	})
	r, _ = newRunner(cs, o)
	if _, err := r.Apply(context.Background()); err == nil || !strings.Contains(err.Error(), "kubectl apply -k suites/deploy/base") {
		t.Fatalf("forbidden: %v", err)
	}
}

// cluster plays the Job controller and the runner: when the run's Job is
// created, its pod appears, runs, exits code, writes the results
// ConfigMap (unless stale), and the Job gets its condition.
type cluster struct {
	cs   *fake.Clientset
	code int
	// cmCode is the exit code the ConfigMap says (default: code).
	cmCode *int
	check  reports.Status
	noCM   bool
	// waiting, when set, keeps the pod waiting with this reason.
	waiting string
	// evicted: the runner pod was evicted mid-run (killed after its
	// grace, exit 137), its ConfigMap the run's last checkpoint.
	evicted bool
}

func (c *cluster) start(t *testing.T, job *batchv1.Job) {
	t.Helper()
	ctx := context.Background()
	ns := job.Namespace
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: job.Name + "-x7k2p", Labels: map[string]string{jobrun.JobNameLabel: job.Name}},
		Spec: corev1.PodSpec{NodeName: "node-1", Containers: []corev1.Container{{Name: runnerContainer, Image: "runner:v9"}}}}
	if c.waiting != "" {
		pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: runnerContainer, State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: c.waiting, Message: "pull access denied"}}}}
		if _, err := c.cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		return
	}
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: runnerContainer, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: int32(c.code)}}}}
	if c.evicted {
		pod.Status.Phase = corev1.PodFailed
		pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue,
			Reason: "EvictionByEvictionAPI", Message: "Eviction API: evicting"}}
	}
	if _, err := c.cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if !c.noCM {
		res := reports.Run{RunID: "5e5e5e5e", Finished: time.Now().Add(time.Second), Checks: []reports.Check{{ID: "doctor/node", Nodes: []string{"node-1"}, Status: c.check}}}
		code := c.code
		if c.cmCode != nil {
			code = *c.cmCode
		}
		cm, err := latest.Build(ns, LatestCM, res, code, "")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.cs.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	j, _ := c.cs.BatchV1().Jobs(ns).Get(ctx, job.Name, metav1.GetOptions{})
	cond := batchv1.JobComplete
	if c.code != 0 {
		cond = batchv1.JobFailed
	}
	j.Status.Conditions = []batchv1.JobCondition{{Type: cond, Status: corev1.ConditionTrue, Reason: "BackoffLimitExceeded"}}
	if _, err := c.cs.BatchV1().Jobs(ns).UpdateStatus(ctx, j, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func (c *cluster) run(t *testing.T) (Outcome, error, *Runner, []Ref, *bytes.Buffer) {
	t.Helper()
	o := load(t)
	r, out := newRunner(c.cs, o)
	job, err := BuildJob(o, spec())
	if err != nil {
		t.Fatal(err)
	}
	job.CreationTimestamp = metav1.NewTime(time.Now().Add(-time.Second))
	created, err := r.Start(context.Background(), job)
	if err != nil {
		t.Fatal(err)
	}
	c.start(t, job)
	oc, err := r.Follow(context.Background(), job.Namespace, job.Name)
	return oc, err, r, created, out
}

// The suite's verdict comes back: a failed check is exit 1 with its
// results; a pass is 0.
func TestFollowBringsTheVerdictBack(t *testing.T) {
	for _, c := range []*cluster{{code: 1, check: reports.Fail}, {code: 0, check: reports.Pass}} {
		c.cs = fake.NewClientset()
		oc, err, r, created, out := c.run(t)
		if err != nil || oc.Results == nil || oc.Code != c.code || oc.Why != "" {
			t.Fatalf("%s: outcome %+v, %v\n%s", c.check, oc, err, out)
		}
		if !strings.Contains(out.String(), "fake logs") || !strings.Contains(out.String(), "on node node-1") {
			t.Errorf("the runner's log was not streamed: %s", out)
		}
		// Cleanup leaves nothing the run created, the Job and its pod.
		if err := r.Cleanup("rdmasuite", oc.Job, created); err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		if _, err := c.cs.CoreV1().Namespaces().Get(ctx, "rdmasuite", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Error("namespace left")
		}
		if _, err := c.cs.RbacV1().ClusterRoles().Get(ctx, "rdmasuite-runner", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Error("cluster role left")
		}
		if l, _ := c.cs.CoreV1().Pods("rdmasuite").List(ctx, metav1.ListOptions{}); len(l.Items) != 0 {
			t.Errorf("pods left: %d", len(l.Items))
		}
		if _, err := c.cs.BatchV1().Jobs("rdmasuite").Get(ctx, oc.Job, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Error("job left")
		}
	}
}

// What cannot be a verdict is not one: no results, an earlier run's
// results, a ConfigMap whose code its own results contradict; and the
// runner's final code wins over a lower ConfigMap code, saying so.
func TestFetchRefusesWhatIsNotThisRunsVerdict(t *testing.T) {
	oc, err, _, _, _ := (&cluster{cs: fake.NewClientset(), code: 2, noCM: true}).run(t)
	if err != nil || oc.Results != nil || oc.Code != reports.ExitBroken || !strings.Contains(oc.Why, "wrote no results") {
		t.Fatalf("no ConfigMap: %+v, %v", oc, err)
	}

	stale, err := latest.Build("rdmasuite", LatestCM, reports.Run{RunID: "0ld0ld00", Finished: time.Now().Add(-time.Hour),
		Checks: []reports.Check{{ID: "doctor/node", Status: reports.Pass}}}, 0, "")
	if err != nil {
		t.Fatal(err)
	}
	oc, err, _, _, _ = (&cluster{cs: fake.NewClientset(stale), code: 1, noCM: true}).run(t)
	if err != nil || oc.Results != nil || oc.Code != reports.ExitBroken || !strings.Contains(oc.Why, "before this run's Job was created") {
		t.Fatalf("stale ConfigMap: %+v, %v", oc, err)
	}

	zero := 0
	oc, err, _, _, _ = (&cluster{cs: fake.NewClientset(), code: 1, cmCode: &zero, check: reports.Fail}).run(t)
	if err != nil || oc.Results != nil || oc.Code != reports.ExitBroken || !strings.Contains(oc.Why, "contradict") {
		t.Fatalf("ConfigMap says 0 for a failed check: %+v, %v", oc, err)
	}

	oc, err, _, _, _ = (&cluster{cs: fake.NewClientset(), code: 1, cmCode: &zero, check: reports.Pass}).run(t)
	if err != nil || oc.Results == nil || oc.Code != 1 || !strings.Contains(oc.Why, "the runner exited 1") {
		t.Fatalf("runner 1, ConfigMap 0: %+v, %v", oc, err)
	}
}

// A runner image that cannot be pulled fails in seconds with the fix, not
// after the start timeout; a pod that never starts says its last reason.
func TestStartFailsFastOnAnImagePull(t *testing.T) {
	c := &cluster{cs: fake.NewClientset(), waiting: "ErrImagePull"}
	start := time.Now()
	_, err, _, _, _ := c.run(t)
	if err == nil || !strings.Contains(err.Error(), "ErrImagePull") || !strings.Contains(err.Error(), "--image") || time.Since(start) > time.Second {
		t.Fatalf("image pull: %v after %s", err, time.Since(start))
	}
	c = &cluster{cs: fake.NewClientset(), waiting: "ContainerCreating"}
	_, err, _, _, _ = c.run(t)
	if err == nil || !strings.Contains(err.Error(), "did not start within 2s: ContainerCreating") {
		t.Fatalf("slow start: %v", err)
	}
}

// An interrupt ends the wait at once; the cleanup then leaves nothing.
func TestInterruptedFollow(t *testing.T) {
	o := load(t)
	cs := fake.NewClientset()
	r, _ := newRunner(cs, o)
	r.StartTimeout = time.Minute
	job, _ := BuildJob(o, spec())
	created, err := r.Start(context.Background(), job)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	start := time.Now()
	if _, err := r.Follow(ctx, "rdmasuite", job.Name); !errors.Is(err, context.Canceled) || time.Since(start) > 5*time.Second {
		t.Fatalf("interrupted follow: %v after %s", err, time.Since(start))
	}
	if err := r.Cleanup("rdmasuite", job.Name, created); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Namespaces().Get(context.Background(), "rdmasuite", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatal("namespace left")
	}
	if got := ParseCreated(job); len(got) != len(created) || got[0].Kind != "Namespace" || got[1].Namespace != "rdmasuite" {
		t.Fatalf("created annotation %q read back as %v", job.Annotations[CreatedAnnotation], got)
	}
}

func TestPickJob(t *testing.T) {
	old, newer := batchv1.Job{}, batchv1.Job{}
	old.Name, old.CreationTimestamp = "rdmasuite-run-a", metav1.NewTime(time.Now().Add(-time.Hour))
	newer.Name, newer.CreationTimestamp = "rdmasuite-run-b", metav1.NewTime(time.Now())
	if j, err := PickJob([]batchv1.Job{newer, old}, ""); err != nil || j.Name != "rdmasuite-run-b" {
		t.Fatalf("newest: %v %v", j, err)
	}
	if j, err := PickJob([]batchv1.Job{newer, old}, "rdmasuite-run-a"); err != nil || j.Name != "rdmasuite-run-a" {
		t.Fatalf("named: %v %v", j, err)
	}
	if _, err := PickJob([]batchv1.Job{old}, "rdmasuite-run-z"); err == nil {
		t.Fatal("missing job found")
	}
}

// A Runner built without a start timeout (rdmasuite results right after
// run --wait=false, before the Job's pod exists) waits the default for the
// pod instead of giving up at once: found on the bed, where results
// failed "did not start within 0s: no pod yet".
func TestFollowWithoutStartTimeoutWaitsForThePod(t *testing.T) {
	o := load(t)
	c := &cluster{cs: fake.NewClientset(), code: 1, check: reports.Fail}
	r, _ := newRunner(c.cs, o)
	r.StartTimeout = 0
	job, err := BuildJob(o, spec())
	if err != nil {
		t.Fatal(err)
	}
	job.CreationTimestamp = metav1.NewTime(time.Now().Add(-time.Second))
	if _, err := r.Start(context.Background(), job); err != nil {
		t.Fatal(err)
	}
	time.AfterFunc(300*time.Millisecond, func() { c.start(t, job) })
	oc, err := r.Follow(context.Background(), job.Namespace, job.Name)
	if err != nil || oc.Code != 1 || oc.Results == nil {
		t.Fatalf("follow before the pod exists: %+v, %v", oc, err)
	}
}

// The runner pod evicted mid-run (a drain of its node): the Job failed,
// the ConfigMap holds the run's last checkpoint; the outcome names the
// eviction and never reads passed, even where the checkpoint's checks
// had all passed.
func TestFetchOfAnEvictedRunnerSaysSo(t *testing.T) {
	zero := 0
	oc, err, _, _, _ := (&cluster{cs: fake.NewClientset(), code: 137, cmCode: &zero, check: reports.Pass, evicted: true}).run(t)
	if err != nil {
		t.Fatal(err)
	}
	if oc.Code == reports.ExitPassed || !strings.Contains(oc.Why, "the runner did not finish: its pod") ||
		!strings.Contains(oc.Why, "evicted through the Eviction API") {
		t.Fatalf("evicted runner: code %d, %q", oc.Code, oc.Why)
	}
	// Evicted within its grace: the runner ended the run as interrupted
	// (exit 130, its ConfigMap says so); the outcome names the eviction.
	code := 130
	oc, err, _, _, _ = (&cluster{cs: fake.NewClientset(), code: 130, cmCode: &code, check: reports.Error, evicted: true}).run(t)
	if err != nil {
		t.Fatal(err)
	}
	if oc.Code == reports.ExitPassed || !strings.Contains(oc.Why, "the runner was stopped from outside: its pod") {
		t.Fatalf("evicted within its grace: code %d, %q", oc.Code, oc.Why)
	}
}
