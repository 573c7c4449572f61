package doctor

import (
	"fmt"
	"regexp"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
)

func (r Roles) isMOFED(p *corev1.Pod) bool {
	for _, pre := range r.MOFEDPrefixes {
		if strings.HasPrefix(p.Name, pre) {
			return true
		}
	}
	for _, c := range p.Spec.Containers {
		if c.Name == r.MOFEDContainer {
			return true
		}
	}
	return false
}

func (r Roles) isGPUDriver(p *corev1.Pod) bool {
	if !r.inGPUNamespace(p) {
		return false
	}
	for _, n := range r.GPUDriverNames {
		if strings.HasPrefix(p.Name, n) {
			return true
		}
	}
	if r.GPUDriverLabel != "" && p.Labels["app.kubernetes.io/component"] == r.GPUDriverLabel {
		return true
	}
	for _, c := range p.Spec.Containers {
		for _, want := range r.GPUDriverContainers {
			if c.Name == want {
				return true
			}
		}
	}
	return false
}

func (r Roles) inGPUNamespace(p *corev1.Pod) bool {
	for _, ns := range r.GPUNamespaces {
		if p.Namespace == ns {
			return true
		}
	}
	return false
}

// podNode is the node a pod runs on or, for a DaemonSet pod the scheduler
// has not placed yet, the node its affinity names (the DaemonSet controller
// pins each pod with a matchFields metadata.name term).
func podNode(p *corev1.Pod) string {
	if p.Spec.NodeName != "" {
		return p.Spec.NodeName
	}
	a := p.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return ""
	}
	for _, term := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		for _, f := range term.MatchFields {
			if f.Key == "metadata.name" && f.Operator == corev1.NodeSelectorOpIn && len(f.Values) == 1 {
				return f.Values[0]
			}
		}
	}
	return ""
}

// crashLooping reports a container in CrashLoopBackOff (or not Ready after
// restarting from a non-zero exit); podState shows the restart count. A
// Ready container with an old restart (an OOM kill days ago) is not
// crash-looping.
func crashLooping(p *corev1.Pod) bool {
	for _, cs := range append(append([]corev1.ContainerStatus{}, p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
		if cs.Ready || cs.State.Terminated != nil && cs.State.Terminated.ExitCode == 0 {
			continue
		}
		if w := cs.State.Waiting; w != nil && w.Reason == "CrashLoopBackOff" {
			return true
		}
		if t := cs.LastTerminationState.Terminated; t != nil && t.ExitCode != 0 && cs.RestartCount > 0 {
			return true
		}
	}
	return false
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// unscheduled returns the scheduler's message for a pod it could not place.
func unscheduled(p *corev1.Pod) (string, bool) {
	if p.Spec.NodeName != "" {
		return "", false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
			return strings.TrimSpace(c.Reason + ": " + c.Message), true
		}
	}
	return "not scheduled yet", true
}

// podState is what kubectl get pods prints in STATUS, roughly, plus the
// scheduler's reason for a pod it could not place.
func podState(p *corev1.Pod) string {
	if why, ok := unscheduled(p); ok {
		return "Pending, not scheduled (" + why + ")"
	}
	if st := initWaiting(p); st != "" {
		if c := pendingInit(p); c != "" {
			return st + " (waiting in init container " + c + ")"
		}
		return st
	}
	for _, cs := range p.Status.ContainerStatuses {
		if w := cs.State.Waiting; w != nil && w.Reason != "" {
			return fmt.Sprintf("%s (%d restarts)", w.Reason, cs.RestartCount)
		}
	}
	return string(p.Status.Phase)
}

// initWaiting returns "Init:k/n" when an init container has not finished.
func initWaiting(p *corev1.Pod) string {
	n := len(p.Spec.InitContainers)
	if n == 0 {
		return ""
	}
	done := 0
	for _, cs := range p.Status.InitContainerStatuses {
		if t := cs.State.Terminated; t != nil && t.ExitCode == 0 {
			done++
		}
	}
	if done == n {
		return ""
	}
	return fmt.Sprintf("Init:%d/%d", done, n)
}

// pendingInit names the first init container that has not completed.
func pendingInit(p *corev1.Pod) string {
	finished := map[string]bool{}
	for _, cs := range p.Status.InitContainerStatuses {
		if t := cs.State.Terminated; t != nil && t.ExitCode == 0 {
			finished[cs.Name] = true
		}
	}
	for _, c := range p.Spec.InitContainers {
		if !finished[c.Name] {
			return c.Name
		}
	}
	return ""
}

// lastFailure is when a container of the pod last terminated with an
// error (the time a modprobe failure happened); zero when unknown.
func lastFailure(p *corev1.Pod) time.Time {
	var at time.Time
	for _, cs := range append(append([]corev1.ContainerStatus{}, p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
		for _, t := range []*corev1.ContainerStateTerminated{cs.LastTerminationState.Terminated, cs.State.Terminated} {
			if t != nil && t.ExitCode != 0 && t.FinishedAt.Time.After(at) {
				at = t.FinishedAt.Time
			}
		}
	}
	return at
}

// containerEnv returns a container's literal env value.
func containerEnv(p *corev1.Pod, container, name string) (string, bool) {
	for _, c := range p.Spec.Containers {
		if c.Name != container {
			continue
		}
		for _, e := range c.Env {
			if e.Name == name {
				return e.Value, true
			}
		}
	}
	return "", false
}

// firstMatch returns the first log line any pattern matches.
func firstMatch(logs string, patterns []*regexp.Regexp) (string, bool) {
	for _, l := range strings.Split(logs, "\n") {
		for _, re := range patterns {
			if re.MatchString(l) {
				return strings.TrimSpace(l), true
			}
		}
	}
	return "", false
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}
