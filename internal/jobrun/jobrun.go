// Package jobrun runs a world of rdmaprobe ranks the Kubernetes-native way:
// an Indexed Job (completion index = rank) behind a headless Service, so
// rank k is <job>-<k>.<service> in cluster DNS and rank 0 can be found by
// name before any pod exists. One rank per node of a given set (required
// pod anti-affinity), no MPI, no ssh, no launcher pod. Everything it
// creates is deleted before Run returns, on every path.
package jobrun

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/rdmasuite/rdmasuite/internal/podrun"
	"github.com/rdmasuite/rdmasuite/workloads/ncclboot"
)

// Label keys set by the Job controller on its pods (Kubernetes >= 1.27).
const (
	JobNameLabel    = "batch.kubernetes.io/job-name"
	IndexAnnotation = "batch.kubernetes.io/job-completion-index"
	// worldLabel groups the ranks for anti-affinity (one rank per node).
	worldLabel = "rdmasuite.io/world"
)

// Spec is one world.
type Spec struct {
	Name  string // Job and Service name (a DNS label)
	Nodes []string
	// Pod is the rank's pod: image, args, resources, caps, annotations;
	// its Name and Node are ignored (the Job names the pods; the scheduler
	// places one rank on each of Nodes).
	Pod podrun.Spec
	// Port is rank 0's bootstrap port (ncclboot).
	Port int
	// Env is added to the container (NCCL_DEBUG, ...).
	Env map[string]string
	// StartTimeout bounds the wait for every rank to be scheduled and
	// started; Timeout bounds the whole run.
	StartTimeout, Timeout time.Duration
	// SiblingGrace is how long the ranks still running are waited for
	// once one rank failed (default 60 s): long enough for rank 0 to
	// call the world off and print, short of a rendezvous timeout spent
	// waiting for a rank that crashed.
	SiblingGrace time.Duration
}

// Rank is one finished (or stuck) rank.
type Rank struct {
	Index    int
	Pod      string
	Node     string
	Phase    corev1.PodPhase
	ExitCode int32
	Logs     string
	// State describes the pod for a person when it did not run to the end
	// (unschedulable, image pull, still running at the deadline).
	State string
}

// Result is the world after the run. Ranks holds one entry per index that
// had a pod, in index order.
type Result struct {
	Job     string
	Service string
	Ranks   []Rank
	Elapsed time.Duration
}

// Rank0 returns rank 0's entry.
func (r Result) Rank0() (Rank, bool) {
	for _, rk := range r.Ranks {
		if rk.Index == 0 {
			return rk, true
		}
	}
	return Rank{}, false
}

// Objects builds the headless Service and the Indexed Job of s (exported
// for tests and for `--dry-run`-style inspection).
func Objects(s Spec) (*corev1.Service, *batchv1.Job) {
	world := int32(len(s.Nodes))
	labels := map[string]string{worldLabel: s.Name}
	pod := podrun.Pod(s.Pod)
	for k, v := range pod.Labels {
		labels[k] = v
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: s.Name, Namespace: s.Pod.Namespace, Labels: labels},
		Spec: corev1.ServiceSpec{
			ClusterIP: corev1.ClusterIPNone,
			Selector:  map[string]string{worldLabel: s.Name},
			// Ranks look rank 0 up while it starts: publish the address as
			// soon as the pod has one, not when it turns ready.
			PublishNotReadyAddresses: true,
			Ports:                    []corev1.ServicePort{{Name: "bootstrap", Port: int32(s.Port)}},
		},
	}
	spec := pod.Spec
	spec.NodeName = ""
	spec.Subdomain = s.Name
	// Rank 0 is found through cluster DNS (the headless Service).
	spec.DNSPolicy = corev1.DNSClusterFirst
	spec.RestartPolicy = corev1.RestartPolicyNever
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{worldLabel: s.Name}}
	nodes := append([]string(nil), s.Nodes...)
	sort.Strings(nodes)
	spec.Affinity = &corev1.Affinity{
		NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{
				Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn, Values: nodes}}}}}},
		PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
			LabelSelector: sel, TopologyKey: corev1.LabelHostname}}},
	}
	c := &spec.Containers[0]
	env := map[string]string{
		ncclboot.EnvJob:       s.Name,
		ncclboot.EnvService:   s.Name,
		ncclboot.EnvNamespace: s.Pod.Namespace,
		ncclboot.EnvPort:      strconv.Itoa(s.Port),
	}
	for k, v := range s.Env {
		env[k] = v
	}
	keys := make([]string, 0, len(env))
	for k := range env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		c.Env = append(c.Env, corev1.EnvVar{Name: k, Value: env[k]})
	}
	c.Ports = []corev1.ContainerPort{{Name: "bootstrap", ContainerPort: int32(s.Port)}}
	indexed := batchv1.IndexedCompletion
	zero := int32(0)
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: s.Name, Namespace: s.Pod.Namespace, Labels: labels},
		Spec: batchv1.JobSpec{
			Completions:    &world,
			Parallelism:    &world,
			CompletionMode: &indexed,
			// A rank that fails is a finding, not something to retry: a
			// replacement would join a world that has moved on. Per index,
			// not Job-wide: a Job-wide backoffLimit 0 fails the Job at the
			// first failed rank and the controller deletes the others,
			// rank 0 too, while it prints the world's result (CI of
			// 00fd87d). Run bounds the wait for the others instead
			// (SiblingGrace). GA in Kubernetes 1.33, on by default since 1.29.
			BackoffLimitPerIndex: &zero,
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: pod.Annotations},
				Spec:       spec,
			},
		},
	}
	if s.Timeout > 0 {
		d := int64(s.Timeout.Seconds()) + 30
		job.Spec.ActiveDeadlineSeconds = &d
	}
	return svc, job
}

// Run creates the Service and the Job, waits until every rank has ended
// (or the Job failed, or a timeout passed), collects each rank's log and
// deletes both objects (and the pods) before it returns. A returned error
// says what stopped the wait; the Result still holds what every rank did.
func Run(ctx context.Context, cs kubernetes.Interface, s Spec) (Result, error) {
	start := time.Now()
	res := Result{Job: s.Name, Service: s.Name}
	if len(s.Nodes) < 1 {
		return res, fmt.Errorf("jobrun: world %s has no node", s.Name)
	}
	if s.Timeout <= 0 {
		s.Timeout = 10 * time.Minute
	}
	if s.StartTimeout <= 0 || s.StartTimeout > s.Timeout {
		s.StartTimeout = s.Timeout
	}
	if s.SiblingGrace <= 0 {
		s.SiblingGrace = time.Minute
	}
	ns := s.Pod.Namespace
	svc, job := Objects(s)
	defer deleteAll(cs, ns, s.Name, s.Pod.Keep)
	if _, err := cs.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		return res, fmt.Errorf("create headless Service %s/%s: %w", ns, s.Name, err)
	}
	if _, err := cs.BatchV1().Jobs(ns).Create(ctx, job, metav1.CreateOptions{}); err != nil {
		return res, fmt.Errorf("create Indexed Job %s/%s: %w", ns, s.Name, err)
	}
	world := len(s.Nodes)
	var pods []corev1.Pod
	// The last state seen of every rank's pod: the Job controller deletes
	// pending ranks once another rank failed the Job, and that state is
	// the only record of why they never ran.
	seen := map[int]corev1.Pod{}
	var jobFailed string
	var firstFailed time.Time
	failedRank := -1
	started := false
	werr := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, s.Timeout, true, func(ctx context.Context) (bool, error) {
		list, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: JobNameLabel + "=" + s.Name})
		if err != nil {
			return false, nil
		}
		pods = latestPerIndex(list.Items)
		// A rank whose containers have exited has ended, whether or not
		// the kubelet has stopped its sandbox and said so yet: every read
		// below (and the collected state) takes the phase it will report.
		for i := range pods {
			pods[i].Status.Phase = podrun.EffectivePhase(&pods[i])
		}
		for _, p := range pods {
			seen[index(p)] = p
		}
		running := 0
		ended := 0
		for _, p := range pods {
			if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
				ended++
			}
			if p.Status.Phase == corev1.PodFailed && failedRank < 0 {
				failedRank, firstFailed = index(p), time.Now()
			}
			if p.Status.Phase != corev1.PodPending {
				running++
			}
		}
		if running == world {
			started = true
		}
		if !started && time.Since(start) > s.StartTimeout {
			return false, fmt.Errorf("%w: not every rank started within %v", podrun.ErrTimeout, s.StartTimeout)
		}
		if j, err := cs.BatchV1().Jobs(ns).Get(ctx, s.Name, metav1.GetOptions{}); err == nil {
			for _, c := range j.Status.Conditions {
				if c.Type == batchv1.JobFailed && c.Status == corev1.ConditionTrue {
					jobFailed = c.Reason + ": " + c.Message
				}
			}
		}
		if ended == world || (jobFailed != "" && ended+pending(pods) == len(pods) && len(pods) > 0) {
			return true, nil
		}
		// A failed rank no longer fails the Job (backoffLimitPerIndex):
		// the others go on and rank 0 prints why the world stopped; a
		// rank that outlives the grace is waiting for the failed one.
		if failedRank >= 0 && time.Since(firstFailed) > s.SiblingGrace {
			return false, fmt.Errorf("rank %d failed and %d of %d ranks were still running %v later", failedRank, world-ended, world, s.SiblingGrace)
		}
		return false, nil
	})
	res.Ranks = collect(context.WithoutCancel(ctx), cs, ns, pods)
	res.Ranks = append(res.Ranks, vanished(seen, pods)...)
	sort.Slice(res.Ranks, func(i, j int) bool { return res.Ranks[i].Index < res.Ranks[j].Index })
	res.Elapsed = time.Since(start)
	switch {
	case werr != nil && ctx.Err() != nil:
		return res, fmt.Errorf("world %s was still running when the run stopped waiting (%v): %s", s.Name, ctx.Err(), states(res.Ranks, world))
	case werr != nil:
		return res, fmt.Errorf("world %s (%d ranks on %s): %w: %s", s.Name, world, strings.Join(s.Nodes, ", "), werr, states(res.Ranks, world))
	}
	return res, nil
}

// vanished are the ranks whose pod was seen and is gone from the last
// list (the Job controller deleted it): their last seen state, saying so.
func vanished(seen map[int]corev1.Pod, last []corev1.Pod) []Rank {
	present := map[int]bool{}
	for _, p := range last {
		present[index(p)] = true
	}
	var out []Rank
	for idx, p := range seen {
		if present[idx] {
			continue
		}
		out = append(out, Rank{Index: idx, Pod: p.Name, Node: p.Spec.NodeName, Phase: p.Status.Phase,
			State: "its pod was deleted (the Job controller stops the other ranks once one failed) while " + podrun.Describe(&p)})
	}
	return out
}

func pending(pods []corev1.Pod) int {
	n := 0
	for _, p := range pods {
		if p.Status.Phase == corev1.PodPending {
			n++
		}
	}
	return n
}

// latestPerIndex keeps the newest pod of each completion index (a Job may
// have replaced one).
func latestPerIndex(items []corev1.Pod) []corev1.Pod {
	by := map[string]corev1.Pod{}
	for _, p := range items {
		idx := p.Annotations[IndexAnnotation]
		if cur, ok := by[idx]; !ok || p.CreationTimestamp.After(cur.CreationTimestamp.Time) {
			by[idx] = p
		}
	}
	out := make([]corev1.Pod, 0, len(by))
	for _, p := range by {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return index(out[i]) < index(out[j]) })
	return out
}

func index(p corev1.Pod) int {
	i, err := strconv.Atoi(p.Annotations[IndexAnnotation])
	if err != nil {
		return -1
	}
	return i
}

func collect(ctx context.Context, cs kubernetes.Interface, ns string, pods []corev1.Pod) []Rank {
	out := make([]Rank, 0, len(pods))
	for _, p := range pods {
		rk := Rank{Index: index(p), Pod: p.Name, Node: p.Spec.NodeName, Phase: p.Status.Phase}
		for _, st := range p.Status.ContainerStatuses {
			if t := st.State.Terminated; t != nil {
				rk.ExitCode = t.ExitCode
			}
		}
		if p.Status.Phase != corev1.PodSucceeded {
			rk.State = podrun.Describe(&p)
		}
		if p.Status.Phase != corev1.PodPending {
			lctx, cancel := context.WithTimeout(ctx, 20*time.Second)
			rk.Logs, _ = podrun.Logs(lctx, cs, ns, p.Name)
			cancel()
		}
		out = append(out, rk)
	}
	return out
}

// states is a one-line account of every rank for error messages.
func states(ranks []Rank, world int) string {
	var parts []string
	for _, r := range ranks {
		where := r.Node
		if where == "" {
			where = "unscheduled"
		}
		s := fmt.Sprintf("rank %d (%s on %s): %s", r.Index, r.Pod, where, r.Phase)
		if r.State != "" && r.Phase != corev1.PodFailed {
			s += " — " + r.State
		}
		parts = append(parts, s)
	}
	if len(ranks) < world {
		parts = append(parts, fmt.Sprintf("%d of %d ranks never got a pod", world-len(ranks), world))
	}
	return strings.Join(parts, "; ")
}

// deleteAll removes the Job (with its pods) and the Service with a context
// of its own, so it also runs after a timeout or an interrupt.
func deleteAll(cs kubernetes.Interface, ns, name string, keep bool) {
	if keep {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	bg := metav1.DeletePropagationBackground
	grace := int64(0)
	_ = cs.BatchV1().Jobs(ns).Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: &bg, GracePeriodSeconds: &grace})
	_ = cs.CoreV1().Services(ns).Delete(ctx, name, metav1.DeleteOptions{})
	// Background propagation leaves the pods to the garbage collector;
	// delete them now, each with its grace: the run's next pods wait until
	// their kubelets are done (the runner's awaitTerminated), so the next
	// world's anti-affinity, GPUs and devices are free.
	list, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: JobNameLabel + "=" + name})
	if err != nil {
		return
	}
	for _, p := range list.Items {
		podrun.DeleteGracefully(cs, ns, p.Name)
	}
}
