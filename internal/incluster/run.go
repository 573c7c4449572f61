package incluster

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/rdmasuite/rdmasuite/internal/fate"
	"github.com/rdmasuite/rdmasuite/internal/jobrun"
	"github.com/rdmasuite/rdmasuite/internal/latest"
	"github.com/rdmasuite/rdmasuite/reports"
)

// Runner runs one acceptance Job and reports on Out (the run's log, the
// steps) and Err (what went wrong).
type Runner struct {
	Kube    kubernetes.Interface
	Out     io.Writer
	Err     io.Writer
	Objects Objects
	// StartTimeout bounds the runner pod's start (scheduling, image pull);
	// 0 means DefaultStartTimeout.
	StartTimeout time.Duration
	// Poll is how often the Job and its pod are read (tests shorten it).
	Poll time.Duration
	// GracePeriod bounds the wait for an interrupted runner's own cleanup
	// (its pod's terminationGracePeriodSeconds, plus a margin).
	GracePeriod time.Duration
}

// DefaultStartTimeout is the runner pod's start limit when none is given:
// `rdmasuite results` may follow a Job created a moment ago by run
// --wait=false, whose pod does not exist yet.
const DefaultStartTimeout = 5 * time.Minute

func (r *Runner) startTimeout() time.Duration {
	if r.StartTimeout > 0 {
		return r.StartTimeout
	}
	return DefaultStartTimeout
}

// Ref is one object a run applied.
type Ref struct{ Kind, Namespace, Name string }

func (r Ref) String() string { return strings.ToLower(r.Kind) + "/" + r.Name }

// Apply creates the manifests' objects that do not exist yet and returns
// them (what the run must delete). Existing ones are kept as they are,
// except the runner's roles and bindings, which are brought to this
// version's (a newer suite may need a right an older RBAC lacks). Each is
// read before it is created, so an operator who applied suites/deploy/base
// once as an admin can run with rights to the Job alone.
func (r *Runner) Apply(ctx context.Context) ([]Ref, error) {
	o, cs := r.Objects, r.Kube
	ns := o.Namespace.Name
	var created []Ref
	step := func(kind, name, namespace string, get func() error, create func() error, update func() error) error {
		err := get()
		switch {
		case err == nil:
			if update != nil {
				if err := update(); err != nil {
					return fmt.Errorf("update %s %s to this version's: %w", kind, name, err)
				}
			}
			return nil
		case apierrors.IsNotFound(err):
			if err := create(); err != nil {
				return fmt.Errorf("create %s %s: %w%s", kind, name, err, forbiddenFix(err))
			}
			created = append(created, Ref{kind, namespace, name})
			return nil
		default:
			return fmt.Errorf("read %s %s: %w%s", kind, name, err, forbiddenFix(err))
		}
	}
	opts := metav1.CreateOptions{}
	gopts := metav1.GetOptions{}
	err := errors.Join(
		step("Namespace", ns, "", func() error { _, err := cs.CoreV1().Namespaces().Get(ctx, ns, gopts); return err },
			func() error { _, err := cs.CoreV1().Namespaces().Create(ctx, o.Namespace, opts); return err }, nil),
	)
	if err != nil {
		return created, err
	}
	err = errors.Join(
		step("ServiceAccount", o.ServiceAccount.Name, ns, func() error {
			_, err := cs.CoreV1().ServiceAccounts(ns).Get(ctx, o.ServiceAccount.Name, gopts)
			return err
		}, func() error {
			_, err := cs.CoreV1().ServiceAccounts(ns).Create(ctx, o.ServiceAccount, opts)
			return err
		}, nil),
		step("Role", o.Role.Name, ns, func() error { _, err := cs.RbacV1().Roles(ns).Get(ctx, o.Role.Name, gopts); return err },
			func() error { _, err := cs.RbacV1().Roles(ns).Create(ctx, o.Role, opts); return err },
			func() error {
				cur, err := cs.RbacV1().Roles(ns).Get(ctx, o.Role.Name, gopts)
				if err != nil {
					return err
				}
				cur.Rules = o.Role.Rules
				_, err = cs.RbacV1().Roles(ns).Update(ctx, cur, metav1.UpdateOptions{})
				return err
			}),
		step("RoleBinding", o.RoleBinding.Name, ns, func() error { _, err := cs.RbacV1().RoleBindings(ns).Get(ctx, o.RoleBinding.Name, gopts); return err },
			func() error { _, err := cs.RbacV1().RoleBindings(ns).Create(ctx, o.RoleBinding, opts); return err }, nil),
		step("ClusterRole", o.ClusterRole.Name, "", func() error { _, err := cs.RbacV1().ClusterRoles().Get(ctx, o.ClusterRole.Name, gopts); return err },
			func() error { _, err := cs.RbacV1().ClusterRoles().Create(ctx, o.ClusterRole, opts); return err },
			func() error {
				cur, err := cs.RbacV1().ClusterRoles().Get(ctx, o.ClusterRole.Name, gopts)
				if err != nil {
					return err
				}
				cur.Rules = o.ClusterRole.Rules
				_, err = cs.RbacV1().ClusterRoles().Update(ctx, cur, metav1.UpdateOptions{})
				return err
			}),
		step("ClusterRoleBinding", o.ClusterRoleBinding.Name, "", func() error {
			_, err := cs.RbacV1().ClusterRoleBindings().Get(ctx, o.ClusterRoleBinding.Name, gopts)
			return err
		}, func() error {
			_, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, o.ClusterRoleBinding, opts)
			return err
		}, nil),
		step("ConfigMap", o.Thresholds.Name, ns, func() error { _, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, o.Thresholds.Name, gopts); return err },
			func() error { _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, o.Thresholds, opts); return err }, nil),
	)
	return created, err
}

func forbiddenFix(err error) string {
	if apierrors.IsForbidden(err) {
		return " (your kubeconfig may not: apply suites/deploy/base once as a cluster admin, kubectl apply -k suites/deploy/base, then rdmasuite run needs only jobs and pods/log in its namespace)"
	}
	return ""
}

// Outcome is how a run ended.
type Outcome struct {
	Job string
	// Code is the suite's exit code (the runner container's, else the
	// results ConfigMap's); 2 when the run ended without results.
	Code int
	// Results are the run's results from the ConfigMap (nil: none came).
	Results *reports.Run
	// Why says why there are no results, or where the two codes disagree.
	Why string
}

// Start applies the manifests and creates the run's Job. created lists
// what the run must delete (also on error: what was created before it).
func (r *Runner) Start(ctx context.Context, job *batchv1.Job) (created []Ref, err error) {
	created, err = r.Apply(ctx)
	if err != nil {
		return created, err
	}
	names := make([]string, len(created))
	for i, c := range created {
		names[i] = c.Kind + "/" + c.Name
	}
	if job.Annotations == nil {
		job.Annotations = map[string]string{}
	}
	job.Annotations[CreatedAnnotation] = strings.Join(names, ",")
	if _, err := r.Kube.BatchV1().Jobs(job.Namespace).Create(ctx, job, metav1.CreateOptions{}); err != nil {
		return created, fmt.Errorf("create job %s/%s: %w%s", job.Namespace, job.Name, err, forbiddenFix(err))
	}
	return created, nil
}

// Follow waits for the Job's runner pod to start, streams its log to Out
// until the runner ends, waits for the Job to finish and fetches the
// results. ctx ends the wait (an interrupt): the Job is left to Cleanup.
func (r *Runner) Follow(ctx context.Context, ns, job string) (Outcome, error) {
	out := Outcome{Job: job}
	pod, err := r.waitStarted(ctx, ns, job)
	if err != nil {
		return out, err
	}
	fmt.Fprintf(r.Out, "rdmasuite run: runner pod %s on node %s; its log follows\n", pod.Name, pod.Spec.NodeName)
	if err := r.streamLog(ctx, ns, pod.Name); err != nil && ctx.Err() == nil {
		fmt.Fprintf(r.Err, "rdmasuite run: the runner's log stream ended: %v (waiting for the Job all the same)\n", err)
	}
	j, err := r.waitFinished(ctx, ns, job)
	if err != nil {
		return out, err
	}
	return r.Fetch(ctx, ns, j)
}

// waitStarted waits for the Job's pod to run (or to have ended), and fails
// fast, with the reason, on what will not resolve by waiting: an image
// that cannot be pulled, a Job the API or the controller failed.
func (r *Runner) waitStarted(ctx context.Context, ns, job string) (*corev1.Pod, error) {
	var pod *corev1.Pod
	var last string
	err := wait.PollUntilContextTimeout(ctx, r.poll(), r.startTimeout(), true, func(ctx context.Context) (bool, error) {
		if j, err := r.Kube.BatchV1().Jobs(ns).Get(ctx, job, metav1.GetOptions{}); err == nil {
			if c := jobCondition(j, batchv1.JobFailed); c != nil {
				if p, _ := r.jobPod(ctx, ns, job); p != nil {
					pod = p
					return true, nil // it ran and failed: its log says why
				}
				return false, fmt.Errorf("job %s failed before its runner pod started: %s: %s", job, c.Reason, c.Message)
			}
		}
		p, err := r.jobPod(ctx, ns, job)
		if err != nil || p == nil {
			last = "no pod yet"
			return false, nil
		}
		pod = p
		for _, cs := range p.Status.ContainerStatuses {
			if cs.State.Running != nil || cs.State.Terminated != nil {
				return true, nil
			}
			if w := cs.State.Waiting; w != nil {
				switch w.Reason {
				case "ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull", "CreateContainerConfigError", "CreateContainerError":
					return false, fmt.Errorf("runner pod %s cannot start: %s: %s (the runner image is %s: give another with --image)", p.Name, w.Reason, w.Message, p.Spec.Containers[0].Image)
				}
				last = w.Reason + ": " + w.Message
			}
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
				last = "not scheduled: " + c.Message
			}
		}
		return false, nil
	})
	switch {
	case err == nil:
		return pod, nil
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case wait.Interrupted(err):
		return nil, fmt.Errorf("the runner pod of job %s did not start within %s: %s", job, r.startTimeout(), last)
	}
	return nil, err
}

func (r *Runner) jobPod(ctx context.Context, ns, job string) (*corev1.Pod, error) {
	l, err := r.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: jobrun.JobNameLabel + "=" + job})
	if err != nil || len(l.Items) == 0 {
		return nil, err
	}
	return &l.Items[len(l.Items)-1], nil
}

func (r *Runner) streamLog(ctx context.Context, ns, pod string) error {
	s, err := r.Kube.CoreV1().Pods(ns).GetLogs(pod, &corev1.PodLogOptions{Container: runnerContainer, Follow: true}).Stream(ctx)
	if err != nil {
		return err
	}
	defer s.Close()
	_, err = io.Copy(r.Out, s)
	return err
}

// waitFinished waits for the Job's Complete or Failed condition.
func (r *Runner) waitFinished(ctx context.Context, ns, job string) (*batchv1.Job, error) {
	var j *batchv1.Job
	err := wait.PollUntilContextCancel(ctx, r.poll(), true, func(ctx context.Context) (bool, error) {
		got, err := r.Kube.BatchV1().Jobs(ns).Get(ctx, job, metav1.GetOptions{})
		if err != nil {
			if apierrors.IsNotFound(err) {
				return false, fmt.Errorf("job %s/%s was deleted before it finished", ns, job)
			}
			return false, nil
		}
		j = got
		return Finished(got), nil
	})
	return j, err
}

func jobCondition(j *batchv1.Job, t batchv1.JobConditionType) *batchv1.JobCondition {
	for i, c := range j.Status.Conditions {
		if c.Type == t && c.Status == corev1.ConditionTrue {
			return &j.Status.Conditions[i]
		}
	}
	return nil
}

// Fetch reads the finished Job's results from the run's ConfigMap and its
// runner's exit code. A ConfigMap older than the Job belongs to an earlier
// run: then this run brought no results, and says so (exit 2).
func (r *Runner) Fetch(ctx context.Context, ns string, j *batchv1.Job) (Outcome, error) {
	out := Outcome{Job: j.Name, Code: reports.ExitBroken}
	runnerCode := -1
	lost := "" // the runner pod's own record of an eviction, a preemption, a deletion
	if p, _ := r.jobPod(ctx, ns, j.Name); p != nil {
		for _, cs := range p.Status.ContainerStatuses {
			if cs.Name == runnerContainer && cs.State.Terminated != nil {
				runnerCode = int(cs.State.Terminated.ExitCode)
			}
		}
		lost = fate.PodLost(p)
	}
	cm, err := r.Kube.CoreV1().ConfigMaps(ns).Get(ctx, LatestCM, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		out.Why = fmt.Sprintf("the run wrote no results: configmap %s/%s does not exist", ns, LatestCM)
	case err != nil:
		return out, fmt.Errorf("read the results: configmap %s/%s: %w%s", ns, LatestCM, err, forbiddenFix(err))
	default:
		res, code, why := decodeLatest(cm, j.CreationTimestamp.Time)
		out.Results, out.Why = res, why
		if res != nil {
			out.Code = code
		}
	}
	if c := jobCondition(j, batchv1.JobFailed); c != nil && runnerCode < 0 && out.Results == nil {
		out.Why += fmt.Sprintf("; job %s failed: %s: %s", j.Name, c.Reason, c.Message)
	}
	if lost != "" && (runnerCode < 0 || runnerCode == 137) {
		// Killed from outside: the results (if any) are the run's last
		// checkpoint, which says it did not finish.
		out.Why = strings.TrimPrefix(out.Why+"; the runner did not finish: its "+lost, "; ")
		if out.Results != nil {
			out.Why += "; the results are its last checkpoint: what it had recorded by then"
			out.Code = max(out.Code, reports.ExitChecksFailed)
		}
		return out, nil
	}
	switch {
	case out.Results == nil:
		out.Code = reports.ExitBroken
	case runnerCode >= 0 && runnerCode != out.Code:
		// The runner's code is the final word (a cleanup that failed after
		// the ConfigMap was written raises it); a disagreement is said.
		out.Why = fmt.Sprintf("the runner exited %d, its results ConfigMap says %d: the run's end (cleanup, publishing) changed the verdict after the results were written; see the log above", runnerCode, out.Code)
		out.Code = max(runnerCode, out.Code)
	}
	if lost != "" {
		// Stopped from outside within its grace (SIGTERM): the run ended
		// as interrupted, and this says who stopped it.
		out.Why = strings.TrimPrefix(out.Why+"; the runner was stopped from outside: its "+lost, "; ")
	}
	return out, nil
}

// decodeLatest reads a latest-run ConfigMap written after since.
func decodeLatest(cm *corev1.ConfigMap, since time.Time) (*reports.Run, int, string) {
	finished, err := time.Parse(time.RFC3339, cm.Data[latest.KeyFinished])
	if err != nil {
		return nil, 0, fmt.Sprintf("configmap %s has no valid %s (%q): not a results ConfigMap of this version", cm.Name, latest.KeyFinished, cm.Data[latest.KeyFinished])
	}
	if finished.Before(since.Truncate(time.Second)) {
		return nil, 0, fmt.Sprintf("the run wrote no results: configmap %s holds run %s, finished %s, before this run's Job was created (%s)",
			cm.Name, cm.Data[latest.KeyRunID], finished.Format(time.RFC3339), since.Format(time.RFC3339))
	}
	code, err := strconv.Atoi(strings.TrimSpace(cm.Data[latest.KeyExitCode]))
	if err != nil {
		return nil, 0, fmt.Sprintf("configmap %s: exit-code %q is not a number", cm.Name, cm.Data[latest.KeyExitCode])
	}
	gz, ok := cm.BinaryData[latest.KeyResults]
	if !ok {
		return nil, 0, fmt.Sprintf("configmap %s carries no results JSON: %s", cm.Name, cm.Data[latest.KeyResultsOmitted])
	}
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		return nil, 0, fmt.Sprintf("configmap %s: results.json.gz: %v", cm.Name, err)
	}
	var res reports.Run
	if err := json.NewDecoder(zr).Decode(&res); err != nil {
		return nil, 0, fmt.Sprintf("configmap %s: results.json.gz: %v", cm.Name, err)
	}
	if res.RunID != cm.Data[latest.KeyRunID] {
		return nil, 0, fmt.Sprintf("configmap %s: run-id %s but its results are run %s", cm.Name, cm.Data[latest.KeyRunID], res.RunID)
	}
	if want := res.ExitCode(); code < want {
		return nil, 0, fmt.Sprintf("configmap %s says exit %d, its results give %d: refusing a verdict its own results contradict", cm.Name, code, want)
	}
	return &res, code, ""
}

// Cleanup deletes the Job (its pod gets SIGTERM: the suite deletes its
// probe pods and writes its results first, within the pod's grace period,
// which Cleanup waits for), then what the run created, newest first. It
// runs on a context of its own: an interrupt must not stop the cleanup.
func (r *Runner) Cleanup(ns, job string, created []Ref) error {
	ctx, cancel := context.WithTimeout(context.Background(), r.GracePeriod+3*time.Minute)
	defer cancel()
	var errs []error
	if job != "" {
		bg := metav1.DeletePropagationBackground
		if err := r.Kube.BatchV1().Jobs(ns).Delete(ctx, job, metav1.DeleteOptions{PropagationPolicy: &bg}); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("delete job %s/%s: %w", ns, job, err))
		}
		// Background propagation leaves the pod to the garbage collector;
		// delete it too (with its grace period) so its wait is ours.
		if l, err := r.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: jobrun.JobNameLabel + "=" + job}); err == nil {
			for _, p := range l.Items {
				_ = r.Kube.CoreV1().Pods(ns).Delete(ctx, p.Name, metav1.DeleteOptions{})
			}
		}
		werr := wait.PollUntilContextTimeout(ctx, r.poll(), r.GracePeriod, true, func(ctx context.Context) (bool, error) {
			l, err := r.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: jobrun.JobNameLabel + "=" + job})
			return err == nil && len(l.Items) == 0, nil
		})
		if werr != nil {
			errs = append(errs, fmt.Errorf("runner pod of job %s/%s still there after %s: kubectl -n %s delete pod -l %s=%s", ns, job, r.GracePeriod, ns, jobrun.JobNameLabel, job))
		}
	}
	for i := len(created) - 1; i >= 0; i-- {
		c := created[i]
		var err error
		switch c.Kind {
		case "Namespace":
			err = r.Kube.CoreV1().Namespaces().Delete(ctx, c.Name, metav1.DeleteOptions{})
		case "ServiceAccount":
			err = r.Kube.CoreV1().ServiceAccounts(c.Namespace).Delete(ctx, c.Name, metav1.DeleteOptions{})
		case "Role":
			err = r.Kube.RbacV1().Roles(c.Namespace).Delete(ctx, c.Name, metav1.DeleteOptions{})
		case "RoleBinding":
			err = r.Kube.RbacV1().RoleBindings(c.Namespace).Delete(ctx, c.Name, metav1.DeleteOptions{})
		case "ClusterRole":
			err = r.Kube.RbacV1().ClusterRoles().Delete(ctx, c.Name, metav1.DeleteOptions{})
		case "ClusterRoleBinding":
			err = r.Kube.RbacV1().ClusterRoleBindings().Delete(ctx, c.Name, metav1.DeleteOptions{})
		case "ConfigMap":
			err = r.Kube.CoreV1().ConfigMaps(c.Namespace).Delete(ctx, c.Name, metav1.DeleteOptions{})
		default:
			err = fmt.Errorf("unknown kind")
		}
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("delete %s: %w", c, err))
		}
		if c.Kind == "Namespace" && err == nil {
			// Gone when the run says so: a namespace still terminating is
			// still there for the next run's create.
			werr := wait.PollUntilContextTimeout(ctx, r.poll(), 2*time.Minute, true, func(ctx context.Context) (bool, error) {
				_, err := r.Kube.CoreV1().Namespaces().Get(ctx, c.Name, metav1.GetOptions{})
				return apierrors.IsNotFound(err), nil
			})
			if werr != nil {
				errs = append(errs, fmt.Errorf("namespace %s still terminating after 2m: kubectl get ns %s -o yaml shows what holds it", c.Name, c.Name))
			}
		}
	}
	return errors.Join(errs...)
}

// ParseCreated reads a Job's CreatedAnnotation back into refs in ns.
func ParseCreated(j *batchv1.Job) []Ref {
	var refs []Ref
	for _, s := range strings.Split(j.Annotations[CreatedAnnotation], ",") {
		kind, name, ok := strings.Cut(s, "/")
		if !ok {
			continue
		}
		ns := j.Namespace
		if kind == "Namespace" || strings.HasPrefix(kind, "Cluster") {
			ns = ""
		}
		refs = append(refs, Ref{kind, ns, name})
	}
	return refs
}

func (r *Runner) poll() time.Duration {
	if r.Poll > 0 {
		return r.Poll
	}
	return 2 * time.Second
}

// Finished: the Job has its Complete or Failed condition.
func Finished(j *batchv1.Job) bool {
	return jobCondition(j, batchv1.JobComplete) != nil || jobCondition(j, batchv1.JobFailed) != nil
}

// PickJob is the run's Job named name among jobs, or the newest one when
// name is "".
func PickJob(jobs []batchv1.Job, name string) (*batchv1.Job, error) {
	var pick *batchv1.Job
	for i := range jobs {
		j := &jobs[i]
		switch {
		case name != "" && j.Name == name:
			return j, nil
		case name == "" && (pick == nil || j.CreationTimestamp.After(pick.CreationTimestamp.Time)):
			pick = j
		}
	}
	if pick == nil {
		if name != "" {
			return nil, fmt.Errorf("no job %s of rdmasuite run", name)
		}
		return nil, fmt.Errorf("no job of rdmasuite run")
	}
	return pick, nil
}
