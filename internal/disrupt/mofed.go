package disrupt

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// PodRef names one MOFED driver pod.
type PodRef struct {
	Name     string
	UID      types.UID
	Restarts int32
}

func refOf(p *corev1.Pod) PodRef {
	r := PodRef{Name: p.Name, UID: p.UID}
	for _, c := range p.Status.ContainerStatuses {
		r.Restarts += c.RestartCount
	}
	return r
}

// Driver is what happened to a node's MOFED driver pod.
type Driver struct {
	Old       PodRef
	DeletedAt time.Time // runner clock: T
	Back      bool
	New       PodRef
	// ReadyAt is the new pod's Ready condition time (API server clock,
	// whole seconds); SeenAt is when the runner saw it Ready.
	ReadyAt, SeenAt time.Time
	Timeout         time.Duration
	// State: when not back, the new pod's phase, container states,
	// events and log tail (or why there is no new pod).
	State []string
	// StorageModules: the driver's log refuses to reload because storage
	// modules (rpcrdma, nvme-rdma, …) are loaded (seed 000).
	StorageModules bool
	// Interrupted: the run stopped (deadline, signal) while waiting; the
	// driver's state is unknown.
	Interrupted bool
	// Refusals, when not 0, says the wait stopped before Timeout, at
	// RefusedAfter (runner clock, from the deletion), because the new
	// driver container had refused to reload that many times on loaded
	// storage modules: a refusal that only an operator's fix changes, so
	// waiting out the limit (10 minutes by default) would add nothing.
	RefusedAfter time.Duration
	Refusals     int32
}

// MinRefusals is how many times the new driver container must have
// refused (exited with the storage-module refusal in its log) before the
// wait stops early: twice rules out a single start racing an unload.
const MinRefusals = 2

// waitLimit is the wait's length in words: the limit, or the early stop.
func (d Driver) waitLimit() string {
	if d.Refusals > 0 {
		return fmt.Sprintf("%.0f s (stopped before the %s limit: the new driver container refused to reload %d times on loaded storage modules, which waiting cannot change)",
			d.RefusedAfter.Seconds(), d.Timeout, d.Refusals)
	}
	return d.Timeout.String()
}

// findDriverPod returns the node's MOFED pod, or a reason it has none
// that is Ready (for a not-run).
func findDriverPod(ctx context.Context, env Env, o Options, node string) (*corev1.Pod, string, error) {
	pods, err := driverPods(ctx, env, o, node)
	if err != nil {
		return nil, "", err
	}
	switch len(pods) {
	case 0:
		return nil, fmt.Sprintf("no MOFED driver pod (namespace %s, selector %s) on node %s: nothing to restart (--mofed-namespace, --mofed-selector)",
			o.MOFEDNamespace, o.MOFEDSelector, node), nil
	case 1:
	default:
		var ns []string
		for _, p := range pods {
			ns = append(ns, p.Name)
		}
		return nil, fmt.Sprintf("%d MOFED driver pods on node %s (%s): an upgrade or another restart is in progress; not disrupting",
			len(pods), node, strings.Join(ns, ", ")), nil
	}
	p := &pods[0]
	if !podReady(p) {
		return nil, fmt.Sprintf("MOFED driver pod %s/%s on %s is not Ready before the test (%s): not disrupting a driver that is already down",
			p.Namespace, p.Name, node, podState(p, o.MOFEDContainer)), nil
	}
	return p, "", nil
}

// driverPods lists the selector's live (not terminating) pods on node.
func driverPods(ctx context.Context, env Env, o Options, node string) ([]corev1.Pod, error) {
	list, err := env.Kube.CoreV1().Pods(o.MOFEDNamespace).List(ctx, metav1.ListOptions{LabelSelector: o.MOFEDSelector,
		FieldSelector: "spec.nodeName=" + node})
	if err != nil {
		return nil, fmt.Errorf("list MOFED pods (namespace %s, selector %s): %w", o.MOFEDNamespace, o.MOFEDSelector, err)
	}
	var out []corev1.Pod
	for _, p := range list.Items {
		if p.Spec.NodeName == node && p.DeletionTimestamp == nil {
			out = append(out, p)
		}
	}
	return out, nil
}

func podReady(p *corev1.Pod) bool {
	_, ok := readyCondition(p)
	return ok
}

func readyCondition(p *corev1.Pod) (time.Time, bool) {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
			return c.LastTransitionTime.Time, true
		}
	}
	return time.Time{}, false
}

// waitReplacement waits until a MOFED pod other than old (another UID) is
// Ready on node, or timeout passes: then Driver.State says why.
func waitReplacement(ctx context.Context, env Env, o Options, node string, d *Driver) error {
	var latest *corev1.Pod
	var readRestarts int32 = -1 // the restart count whose log was last read
	err := poll(ctx, env.clock(), 2*env.every(), d.Timeout, func(ctx context.Context) (bool, error) {
		pods, err := driverPods(ctx, env, o, node)
		if err != nil {
			return false, nil // the API may blink while a node reloads its NIC driver
		}
		for i := range pods {
			p := &pods[i]
			if p.UID == d.Old.UID {
				continue
			}
			if latest == nil || !p.CreationTimestamp.Before(&latest.CreationTimestamp) {
				latest = p
			}
			if at, ok := readyCondition(p); ok {
				d.Back, d.New, d.ReadyAt, d.SeenAt = true, refOf(p), at, env.clock().Now()
				return true, nil
			}
		}
		// Seed 000's refusal repeats identically on every restart until
		// someone sets UNLOAD_STORAGE_MODULES=true or unmounts: once the
		// newest pod's container has refused MinRefusals times, stop.
		if n := failedRestarts(latest, o.MOFEDContainer); n >= MinRefusals && n != readRestarts {
			// In CrashLoopBackOff the current log is the run that just
			// ended; the previous one may be gone (garbage-collected).
			read := false
			for _, previous := range []bool{false, true} {
				logs, err := env.logs(ctx, latest.Namespace, latest.Name, o.MOFEDContainer, previous, 10)
				if err == nil && strings.TrimSpace(logs) != "" {
					read = true
				}
				if err == nil && storageModules(logs) {
					d.Refusals, d.RefusedAfter, d.StorageModules = n, env.clock().Now().Sub(d.DeletedAt), true
					return true, nil
				}
			}
			// Right after a restart the kubelet may show neither run's
			// log yet: read this restart again on the next poll rather
			// than wait for the next one (a back-off later).
			if read {
				readRestarts = n
			}
		}
		return false, nil
	})
	if d.Back {
		return nil
	}
	if err != nil && err != errPollTimeout {
		d.Interrupted = true
		d.State = []string{fmt.Sprintf("the run stopped waiting (%v) before a new MOFED pod was Ready on %s: check the driver", err, node)}
		return err
	}
	d.State = describeNotBack(context.WithoutCancel(ctx), env, o, node, latest, d)
	return nil
}

// describeNotBack is the evidence for a driver that did not come back:
// the new pod's phase and container states, its last 10 events and the
// last lines of its driver container's log.
func describeNotBack(ctx context.Context, env Env, o Options, node string, p *corev1.Pod, d *Driver) []string {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if p == nil {
		return []string{fmt.Sprintf("no new MOFED pod (namespace %s, selector %s) appeared on %s within %s of deleting %s: check the DaemonSet (kubectl -n %s get ds) and the node's taints",
			o.MOFEDNamespace, o.MOFEDSelector, node, d.Timeout, d.Old.Name, o.MOFEDNamespace)}
	}
	out := []string{fmt.Sprintf("new MOFED pod %s (uid %s) not Ready within %s: %s", p.Name, p.UID, d.waitLimit(), podState(p, o.MOFEDContainer))}
	out = append(out, podEvents(ctx, env, p, 10)...)
	return append(out, driverLogs(ctx, env, o, p, d)...)
}

// Reading a restarted container's logs again when both read empty: run
// CI-39 lost the refusal (and with it the fix) to one such read, right
// after the kubelet restarted the container.
const (
	logAttempts  = 4
	logRetryWait = 1500 * time.Millisecond
)

// driverLogs is the evidence from the new pod's driver container logs,
// current and (after a restart) previous; it marks d.StorageModules when
// either refuses on loaded storage modules.
func driverLogs(ctx context.Context, env Env, o Options, p *corev1.Pod, d *Driver) []string {
	restart := restarted(p, o.MOFEDContainer)
	for attempt := 1; ; attempt++ {
		var out []string
		read := false
		for _, previous := range []bool{false, true} {
			if previous && !restart {
				continue
			}
			logs, err := env.logs(ctx, p.Namespace, p.Name, o.MOFEDContainer, previous, 10)
			which := "log"
			if previous {
				which = "previous log"
			}
			switch {
			case err != nil:
				out = append(out, fmt.Sprintf("container %s %s: unavailable: %v", o.MOFEDContainer, which, err))
			case strings.TrimSpace(logs) != "":
				read = true
				out = append(out, fmt.Sprintf("container %s %s (last 10 lines):\n%s", o.MOFEDContainer, which, lastLines(logs, 10)))
				if storageModules(logs) {
					d.StorageModules = true
				}
			}
		}
		if read || !restart || attempt >= logAttempts {
			return out
		}
		select {
		case <-ctx.Done():
			return out
		case <-env.clock().After(logRetryWait):
		}
	}
}

// failedRestarts is the container's restart count when its last run
// ended in failure (exit code not 0), else 0.
func failedRestarts(p *corev1.Pod, container string) int32 {
	if p == nil {
		return 0
	}
	for _, c := range p.Status.ContainerStatuses {
		if t := c.LastTerminationState.Terminated; c.Name == container && t != nil && t.ExitCode != 0 {
			return c.RestartCount
		}
	}
	return 0
}

func restarted(p *corev1.Pod, container string) bool {
	for _, c := range p.Status.ContainerStatuses {
		if c.Name == container && (c.RestartCount > 0 || c.LastTerminationState.Terminated != nil) {
			return true
		}
	}
	return false
}

// storageModules recognises the driver container's refusal to reload
// while storage modules are loaded (UNLOAD_STORAGE_MODULES unset).
func storageModules(log string) bool {
	l := strings.ToLower(log)
	return strings.Contains(l, "unload_storage_modules") || strings.Contains(l, "storage modules are loaded")
}

// podState is a pod's phase and every container's state, waiting reason,
// last termination (reason, exit code, message) and restart count.
func podState(p *corev1.Pod, container string) string {
	parts := []string{"phase " + string(p.Status.Phase)}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			parts = append(parts, fmt.Sprintf("Ready=%s", c.Status))
		}
	}
	statuses := append(append([]corev1.ContainerStatus{}, p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...)
	sort.SliceStable(statuses, func(i, j int) bool { return statuses[i].Name == container && statuses[j].Name != container })
	for _, c := range statuses {
		s := fmt.Sprintf("container %s", c.Name)
		switch st := c.State; {
		case st.Waiting != nil:
			s += fmt.Sprintf(" waiting %s", st.Waiting.Reason)
			if st.Waiting.Message != "" {
				s += ": " + oneLine(st.Waiting.Message, 200)
			}
		case st.Running != nil:
			s += fmt.Sprintf(" running since %s", st.Running.StartedAt.UTC().Format(time.RFC3339))
			if !c.Ready {
				s += " (not ready)"
			}
		case st.Terminated != nil:
			s += fmt.Sprintf(" terminated %s exit %d", st.Terminated.Reason, st.Terminated.ExitCode)
		}
		if t := c.LastTerminationState.Terminated; t != nil {
			s += fmt.Sprintf(", last termination %s exit %d", t.Reason, t.ExitCode)
			if t.Message != "" {
				s += ": " + oneLine(t.Message, 300)
			}
		}
		s += fmt.Sprintf(", restarts %d", c.RestartCount)
		parts = append(parts, s)
	}
	return strings.Join(parts, "; ")
}

// podEvents are the pod's last n events (core/v1, by involvedObject.uid).
func podEvents(ctx context.Context, env Env, p *corev1.Pod, n int) []string {
	list, err := env.Kube.CoreV1().Events(p.Namespace).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.uid=" + string(p.UID)})
	if err != nil {
		return []string{fmt.Sprintf("events of %s: unavailable: %v", p.Name, err)}
	}
	var evs []corev1.Event
	for _, e := range list.Items {
		if e.InvolvedObject.UID == p.UID {
			evs = append(evs, e)
		}
	}
	if len(evs) == 0 {
		return []string{fmt.Sprintf("no events for pod %s", p.Name)}
	}
	sort.SliceStable(evs, func(i, j int) bool { return eventTime(evs[i]).Before(eventTime(evs[j])) })
	if len(evs) > n {
		evs = evs[len(evs)-n:]
	}
	out := []string{fmt.Sprintf("last %d events of pod %s:", len(evs), p.Name)}
	for _, e := range evs {
		s := fmt.Sprintf("  %s %s %s: %s", eventTime(e).UTC().Format(time.RFC3339), e.Type, e.Reason, oneLine(e.Message, 300))
		if e.Count > 1 {
			s += fmt.Sprintf(" (×%d)", e.Count)
		}
		out = append(out, s)
	}
	return out
}

func eventTime(e corev1.Event) time.Time {
	for _, t := range []time.Time{e.LastTimestamp.Time, e.EventTime.Time, e.FirstTimestamp.Time} {
		if !t.IsZero() {
			return t
		}
	}
	return e.CreationTimestamp.Time
}

// containerLogs returns the last lines of a container's log.
func containerLogs(ctx context.Context, env Env, ns, pod, container string, previous bool, lines int64) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	opts := &corev1.PodLogOptions{Container: container, Previous: previous}
	if lines > 0 {
		opts.TailLines = &lines
	}
	rc, err := env.Kube.CoreV1().Pods(ns).GetLogs(pod, opts).Stream(ctx)
	if err != nil {
		return "", err
	}
	defer rc.Close()
	b, err := io.ReadAll(io.LimitReader(rc, 4<<20))
	return string(b), err
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	for i, l := range lines {
		lines[i] = oneLine(l, 400)
	}
	return strings.Join(lines, "\n")
}

func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}
