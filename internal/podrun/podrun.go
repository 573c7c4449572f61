// Package podrun runs one rdmaprobe subcommand in a pod pinned to a node and
// returns what it printed: the unit every suite feature is built from. Pods
// get the suite's labels and the downward-API environment rdmaprobe reads,
// and they are never privileged unless the spec says so.
package podrun

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/rdmasuite/rdmasuite/internal/cluster"
)

// Spec describes one probe pod.
type Spec struct {
	Name      string
	Namespace string
	RunID     string
	Node      string // pinned with spec.nodeName; empty lets the scheduler choose
	Image     string
	Args      []string         // rdmaprobe subcommand and flags
	Resources map[string]int64 // extended resources requested as limits, e.g. rdma/rdma_shared_device_a: 1
	AddCaps   []corev1.Capability
	Labels    map[string]string // extra labels (the suite's own are always set)
	Annots    map[string]string // e.g. the Multus network annotation
	// Privileged and HostMounts (host path → container path, read-only)
	// are for the host probe only; the RDMA features never set them.
	Privileged bool
	HostMounts map[string]string
	// Stdin opens the container's standard input for one attach (stdin
	// once): a client pod started beside its server reads the server's
	// address there (Attach hands it over once the server has an IP).
	Stdin bool
	// Keep leaves the pod after Run for debugging (--keep-on-failure); the
	// run's cleanup (its namespace's deletion, or by the run label with
	// --namespace), or rdmasuite cleanup, removes it later.
	Keep bool
}

// ContainerName is the probe pod's one container.
const ContainerName = "probe"

// Pod builds the pod object for spec.
func Pod(s Spec) *corev1.Pod {
	labels := map[string]string{cluster.ManagedByLabel: cluster.ManagedBy, cluster.RunLabel: s.RunID}
	for k, v := range s.Labels {
		labels[k] = v
	}
	limits := corev1.ResourceList{}
	for name, n := range s.Resources {
		limits[corev1.ResourceName(name)] = *resource.NewQuantity(n, resource.DecimalSI)
	}
	fieldEnv := func(name, path string) corev1.EnvVar {
		return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: path}}}
	}
	falseV := false
	privileged := s.Privileged
	escalation := &falseV
	if privileged {
		escalation = nil // the API refuses privileged with allowPrivilegeEscalation=false
	}
	grace := int64(1)
	var volumes []corev1.Volume
	var mounts []corev1.VolumeMount
	i := 0
	for host, path := range s.HostMounts {
		name := fmt.Sprintf("host-%d", i)
		i++
		volumes = append(volumes, corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: host}}})
		mounts = append(mounts, corev1.VolumeMount{Name: name, MountPath: path, ReadOnly: true})
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: s.Name, Namespace: s.Namespace, Labels: labels, Annotations: s.Annots},
		Spec: corev1.PodSpec{
			NodeName:      s.Node,
			RestartPolicy: corev1.RestartPolicyNever,
			// Probes address peers by pod IP and need no cluster DNS.
			DNSPolicy:                     corev1.DNSDefault,
			TerminationGracePeriodSeconds: &grace,
			AutomountServiceAccountToken:  &falseV,
			// Many GPU nodes are tainted; a probe pinned to
			// a node must run there whatever the taints say.
			Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
			Volumes:     volumes,
			Containers: []corev1.Container{{
				Name:            ContainerName,
				Image:           s.Image,
				ImagePullPolicy: corev1.PullIfNotPresent,
				Args:            s.Args,
				Stdin:           s.Stdin,
				StdinOnce:       s.Stdin,
				Env: []corev1.EnvVar{
					fieldEnv("NODE_NAME", "spec.nodeName"),
					fieldEnv("POD_NAME", "metadata.name"),
					fieldEnv("POD_NAMESPACE", "metadata.namespace"),
				},
				Resources:                corev1.ResourceRequirements{Limits: limits},
				VolumeMounts:             mounts,
				TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
				SecurityContext: &corev1.SecurityContext{
					Privileged:               &privileged,
					AllowPrivilegeEscalation: escalation,
					Capabilities:             &corev1.Capabilities{Add: s.AddCaps},
				},
			}},
		},
	}
	return pod
}

// Result is what a finished probe pod left behind.
type Result struct {
	Pod      *corev1.Pod
	Phase    corev1.PodPhase
	ExitCode int32
	Logs     string
	Collect  time.Duration // fetching logs after the pod ended
	// StartLatency is create → first seen with its container started (or
	// finished), as the watch saw it; API timestamps have only
	// whole seconds.
	StartLatency time.Duration
}

// ErrTimeout is returned (wrapped) when the pod did not finish in time.
var ErrTimeout = errors.New("probe pod did not finish in time")

// Run creates the pod, waits until it has terminated or timeout passes,
// fetches its logs and deletes it (unless Spec.Keep). The pod is deleted on
// every path, including a cancelled ctx.
func Run(ctx context.Context, cs kubernetes.Interface, s Spec, timeout time.Duration) (Result, error) {
	createdAt := time.Now()
	created, err := cs.CoreV1().Pods(s.Namespace).Create(ctx, Pod(s), metav1.CreateOptions{})
	if err != nil {
		return Result{}, fmt.Errorf("create pod %s/%s: %w", s.Namespace, s.Name, err)
	}
	if !s.Keep {
		defer Delete(cs, s.Namespace, created.Name)
	}
	return waitFrom(ctx, cs, created, timeout, createdAt)
}

// Start creates the pod and waits until it runs and has a pod IP, for
// servers that a second pod connects to; it also returns how long that took.
// The caller deletes it (Delete).
func Start(ctx context.Context, cs kubernetes.Interface, s Spec, timeout time.Duration) (*corev1.Pod, time.Duration, error) {
	return start(ctx, cs, s, timeout, "server", "before its client ran")
}

// StartWaiting is Start for a pod that waits on its standard input
// (Spec.Stdin) before it does anything: a client pod started beside its
// server, before the server's address is known. The caller attaches
// (Attacher) and then waits for it (Wait), and deletes it.
func StartWaiting(ctx context.Context, cs kubernetes.Interface, s Spec, timeout time.Duration) (*corev1.Pod, time.Duration, error) {
	return start(ctx, cs, s, timeout, "client", "before the suite could hand it its server's address")
}

// StartHolding is Start for a node's probe pod that only holds its
// container (rdmaprobe hold) for the runs the suite execs in it.
func StartHolding(ctx context.Context, cs kubernetes.Interface, s Spec, timeout time.Duration) (*corev1.Pod, time.Duration, error) {
	return start(ctx, cs, s, timeout, "probe", "before the suite could run anything in it")
}

func start(ctx context.Context, cs kubernetes.Interface, s Spec, timeout time.Duration, role, before string) (*corev1.Pod, time.Duration, error) {
	pods := cs.CoreV1().Pods(s.Namespace)
	createdAt := time.Now()
	created, err := pods.Create(ctx, Pod(s), metav1.CreateOptions{})
	if err != nil {
		return nil, 0, fmt.Errorf("create pod %s/%s: %w", s.Namespace, s.Name, err)
	}
	cur := created
	var ended error
	werr := watchPod(ctx, cs, created, timeout, func(p *corev1.Pod) (bool, error) {
		cur = p
		if Finished(p) {
			logs, _ := Logs(ctx, cs, s.Namespace, p.Name)
			ended = fmt.Errorf("%s pod %s/%s on node %q ended %s: %s; output: %s", role, s.Namespace, p.Name, s.Node, before, Describe(p), strings.TrimSpace(logs))
			return false, ended
		}
		return p.Status.Phase == corev1.PodRunning && p.Status.PodIP != "", nil
	})
	if ended != nil {
		return cur, 0, ended
	}
	if werr != nil && ctx.Err() != nil {
		return cur, 0, stopped(ctx, s.Namespace, created.Name, s.Node, cur)
	}
	if werr != nil {
		return cur, 0, fmt.Errorf("%w: %s pod %s/%s on node %q not running after %s: %s%s", ErrTimeout, role, s.Namespace, created.Name,
			s.Node, timeout, Describe(cur), warningEvents(context.WithoutCancel(ctx), cs, s.Namespace, created.Name))
	}
	return cur, time.Since(createdAt), nil
}

// Wait waits until pod has terminated or timeout passes and collects its
// exit code and logs. It does not delete the pod.
func Wait(ctx context.Context, cs kubernetes.Interface, pod *corev1.Pod, timeout time.Duration) (Result, error) {
	return waitFrom(ctx, cs, pod, timeout, time.Time{})
}

// waitFrom is Wait; with createdAt set it also measures the start latency.
func waitFrom(ctx context.Context, cs kubernetes.Interface, pod *corev1.Pod, timeout time.Duration, createdAt time.Time) (Result, error) {
	res := Result{Pod: pod}
	werr := watchPod(ctx, cs, pod, timeout, func(p *corev1.Pod) (bool, error) {
		res.Pod, res.Phase = p, p.Status.Phase
		if res.StartLatency == 0 && !createdAt.IsZero() && containerStarted(p) {
			res.StartLatency = time.Since(createdAt)
		}
		return Finished(p), nil
	})
	if term := containerTerminated(res.Pod); term != nil {
		res.ExitCode = term.ExitCode
	}
	res.Phase = finishedPhase(res.Pod, res.Phase)
	collect := time.Now()
	res.Logs, _ = Logs(context.WithoutCancel(ctx), cs, pod.Namespace, pod.Name)
	res.Collect = time.Since(collect)
	if werr != nil && ctx.Err() != nil {
		return res, stopped(ctx, pod.Namespace, pod.Name, res.Pod.Spec.NodeName, res.Pod)
	}
	if werr != nil {
		return res, fmt.Errorf("%w: pod %s/%s on node %q after %s: %s%s", ErrTimeout, pod.Namespace, pod.Name,
			res.Pod.Spec.NodeName, timeout, Describe(res.Pod), warningEvents(context.WithoutCancel(ctx), cs, pod.Namespace, pod.Name))
	}
	if res.Phase == corev1.PodFailed && containerTerminated(res.Pod) == nil {
		// Failed before its container ran (a device plugin's refusal at
		// admission, an eviction): no exit, no output, and the pod's own
		// status says why.
		return res, fmt.Errorf("pod %s/%s on node %q failed before its container ran: %s%s", pod.Namespace, pod.Name,
			res.Pod.Spec.NodeName, Describe(res.Pod), warningEvents(context.WithoutCancel(ctx), cs, pod.Namespace, pod.Name))
	}
	return res, nil
}

// watchPod calls cond with the pod as it is now and on every change until
// cond says done, cond fails, or timeout passes: one GET and one watch per
// wait (both again only if the API ends the watch), never a GET per
// interval, so a round of hundreds of pods does not queue behind the
// client's rate limit. A non-nil error means cond did not finish it (the
// caller tells its own timeout from the run's ctx).
func watchPod(ctx context.Context, cs kubernetes.Interface, pod *corev1.Pod, timeout time.Duration, cond func(*corev1.Pod) (bool, error)) error {
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	pods := cs.CoreV1().Pods(pod.Namespace)
	byName := fields.OneTermEqualSelector("metadata.name", pod.Name).String()
	for {
		cur, err := pods.Get(wctx, pod.Name, metav1.GetOptions{})
		if err == nil {
			if done, err := cond(cur); done || err != nil {
				return err
			}
		}
		if wctx.Err() != nil {
			return wctx.Err()
		}
		opts := metav1.ListOptions{FieldSelector: byName}
		if cur != nil && err == nil {
			opts.ResourceVersion = cur.ResourceVersion
		}
		w, werr := pods.Watch(wctx, opts)
		if werr != nil {
			// The API refused the watch: wait a moment and start over
			// (a GET, then a new watch).
			select {
			case <-wctx.Done():
				return wctx.Err()
			case <-time.After(time.Second):
			}
			continue
		}
		done, err := drain(wctx, w, pod.Name, cond)
		w.Stop()
		if done || err != nil {
			return err
		}
		if wctx.Err() != nil {
			return wctx.Err()
		}
	}
}

// drain feeds cond the pod's watch events until cond finishes, the watch
// ends (done false, err nil: the caller starts over) or ctx ends.
func drain(ctx context.Context, w watch.Interface, name string, cond func(*corev1.Pod) (bool, error)) (bool, error) {
	for {
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case e, ok := <-w.ResultChan():
			if !ok || e.Type == watch.Error {
				return false, nil
			}
			p, isPod := e.Object.(*corev1.Pod)
			if !isPod || p.Name != name || e.Type == watch.Deleted {
				continue
			}
			if done, err := cond(p); done || err != nil {
				return true, err
			}
		}
	}
}

// stopped is the error for a pod the run itself stopped waiting for: the
// suite's internal deadline (below go test -timeout) or an interrupt, not
// the pod's own timeout.
func stopped(ctx context.Context, ns, name, node string, p *corev1.Pod) error {
	return fmt.Errorf("pod %s/%s on node %q was still running when the run stopped waiting (%v: the suite's internal deadline below go test -timeout, or an interrupt): %s",
		ns, name, node, ctx.Err(), Describe(p))
}

// warningEvents returns the pod's last Warning events (FailedCreatePodSandBox,
// FailedMount, …), formatted for an error message.
func warningEvents(ctx context.Context, cs kubernetes.Interface, ns, pod string) string {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	evs, err := cs.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + pod + ",type=Warning"})
	if err != nil || len(evs.Items) == 0 {
		return ""
	}
	items := evs.Items
	if len(items) > 3 {
		items = items[len(items)-3:]
	}
	var b strings.Builder
	for _, e := range items {
		fmt.Fprintf(&b, "; event %s: %s", e.Reason, e.Message)
	}
	return b.String()
}

// Logs returns the probe container's log.
func Logs(ctx context.Context, cs kubernetes.Interface, ns, name string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	rc, err := cs.CoreV1().Pods(ns).GetLogs(name, &corev1.PodLogOptions{Container: "probe"}).Stream(ctx)
	if err != nil {
		return "", fmt.Errorf("logs of %s/%s: %w", ns, name, err)
	}
	defer rc.Close()
	b, err := io.ReadAll(io.LimitReader(rc, 4<<20))
	return string(b), err
}

// Delete removes a pod immediately. It uses its own context so that it also
// runs after the caller's context was cancelled (timeouts, SIGINT).
func Delete(cs kubernetes.Interface, ns, name string) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	zero := int64(0)
	err := cs.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
	if err != nil && !apierrors.IsNotFound(err) {
		fmt.Printf("rdmasuite: could not delete pod %s/%s: %v (the run's cleanup will retry)\n", ns, name, err)
	}
}

// Finished says a run-once pod's work is over: its phase is terminal, or
// (restartPolicy Never) every container has terminated. The second comes
// first: the kubelet reports the terminal phase only after it has stopped
// the pod's sandbox (CNI DEL through Multus, the network torn down), and a
// wait for it on a loaded node is a wait for teardown, not for the probe.
// The exit code and the log are final once the container has exited.
func Finished(p *corev1.Pod) bool {
	if p == nil {
		return false
	}
	if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
		return true
	}
	if p.Spec.RestartPolicy != corev1.RestartPolicyNever || len(p.Status.ContainerStatuses) < len(p.Spec.Containers) || len(p.Spec.Containers) == 0 {
		return false
	}
	for _, cs := range p.Status.ContainerStatuses {
		if cs.State.Terminated == nil {
			return false
		}
	}
	return true
}

// EffectivePhase is the pod's phase, or, for a run-once pod whose
// containers have all exited, the terminal phase the kubelet will report:
// it sets that only after it has stopped the pod's sandbox, tens of
// seconds later on a loaded node, and waiting for it would hold the
// run that long.
func EffectivePhase(p *corev1.Pod) corev1.PodPhase {
	if p == nil {
		return ""
	}
	return finishedPhase(p, p.Status.Phase)
}

// finishedPhase is the terminal phase the kubelet will report for a pod
// Finished by its containers' exit (Succeeded when every one exited 0,
// Failed otherwise), so callers read the same Phase either way; the
// reported phase can lag, even read Pending, while the exits are known.
func finishedPhase(p *corev1.Pod, phase corev1.PodPhase) corev1.PodPhase {
	if phase == corev1.PodSucceeded || phase == corev1.PodFailed || !Finished(p) {
		return phase
	}
	for _, cs := range p.Status.ContainerStatuses {
		if cs.State.Terminated.ExitCode != 0 {
			return corev1.PodFailed
		}
	}
	return corev1.PodSucceeded
}

func containerStarted(p *corev1.Pod) bool {
	for _, cs := range p.Status.ContainerStatuses {
		if cs.State.Running != nil || cs.State.Terminated != nil {
			return true
		}
	}
	return false
}

func containerTerminated(p *corev1.Pod) *corev1.ContainerStateTerminated {
	if p == nil {
		return nil
	}
	for _, cs := range p.Status.ContainerStatuses {
		if cs.State.Terminated != nil {
			return cs.State.Terminated
		}
	}
	return nil
}

// Describe summarises why a pod is where it is: its phase, the pod's own
// status reason and message (the kubelet's UnexpectedAdmissionError with
// the device plugin's "Allocate failed due to …", an eviction),
// unschedulable reasons, and waiting reasons such as ErrImagePull — the
// evidence an operator needs when a probe never ran.
func Describe(p *corev1.Pod) string {
	if p == nil {
		return "pod not found"
	}
	parts := []string{"phase " + string(p.Status.Phase)}
	if p.Status.Reason != "" || p.Status.Message != "" {
		parts = append(parts, fmt.Sprintf("pod status %s: %s", p.Status.Reason, p.Status.Message))
	}
	for _, c := range p.Status.Conditions {
		if c.Status != corev1.ConditionTrue && c.Reason != "" {
			parts = append(parts, fmt.Sprintf("%s=%s: %s", c.Type, c.Reason, c.Message))
		}
	}
	for _, cs := range p.Status.ContainerStatuses {
		if w := cs.State.Waiting; w != nil {
			parts = append(parts, fmt.Sprintf("container %s waiting: %s %s", cs.Name, w.Reason, w.Message))
		}
		if t := cs.State.Terminated; t != nil {
			parts = append(parts, fmt.Sprintf("container %s exited %d (%s)", cs.Name, t.ExitCode, t.Reason))
		}
	}
	return strings.Join(parts, "; ")
}

// Scheduled reports whether the scheduler placed the pod, and on which node.
func Scheduled(p *corev1.Pod) (bool, string) {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionTrue {
			return true, p.Spec.NodeName
		}
	}
	return false, ""
}
