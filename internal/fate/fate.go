// Package fate follows the run's probe pods and the nodes they stand on
// while a run measures, and says why one was lost: a pod deleted, evicted
// (a drain, preemption, node pressure) or ended; a node NotReady, deleted
// or cordoned. A nightly run on a fleet meets these in the middle of its
// rounds: a node drained for maintenance, a pod preempted, a node whose
// kubelet stopped. The runner asks before it starts a pair (a lost pod or
// node is not measured: its pairs are not run, with the reason) and after a
// run failed (the failure names what happened to its pod or node, not only
// the broken stream).
package fate

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// PodLost says why the pod can no longer run the suite's work, "" when it
// still can. The pod's own record is quoted: the DisruptionTarget
// condition the API server and kubelet set on an eviction, preemption or
// taint-manager deletion, the kubelet's Evicted status, the container's end.
func PodLost(p *corev1.Pod) string {
	name := "pod " + p.Name
	why := ""
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.DisruptionTarget && c.Status == corev1.ConditionTrue {
			why = disruption(c)
		}
	}
	switch {
	case p.DeletionTimestamp != nil && why != "":
		return fmt.Sprintf("%s on %s was %s (being deleted since %s)", name, p.Spec.NodeName, why, clock(p.DeletionTimestamp.Time))
	case p.DeletionTimestamp != nil:
		return fmt.Sprintf("%s on %s is being deleted since %s, not by the suite (kubectl delete, a controller, its namespace)",
			name, p.Spec.NodeName, clock(p.DeletionTimestamp.Time))
	case p.Status.Phase == corev1.PodFailed && p.Status.Reason != "":
		// The kubelet's own eviction (node pressure) and other terminal
		// reasons: Evicted, OutOfmemory, Shutdown, NodeLost.
		return fmt.Sprintf("%s on %s failed: %s: %s", name, p.Spec.NodeName, p.Status.Reason, strings.TrimSpace(p.Status.Message))
	case why != "":
		return fmt.Sprintf("%s on %s was %s", name, p.Spec.NodeName, why)
	case p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed:
		return fmt.Sprintf("%s on %s ended (phase %s%s) while the run still needed it", name, p.Spec.NodeName, p.Status.Phase, containerEnd(p))
	}
	return ""
}

// disruption names a DisruptionTarget condition's reason in words.
func disruption(c corev1.PodCondition) string {
	what := map[string]string{
		"EvictionByEvictionAPI":  "evicted through the Eviction API (a drain: kubectl drain, a node upgrade, an autoscaler)",
		"PreemptionByScheduler":  "preempted by the scheduler for a pod of higher priority",
		"DeletionByTaintManager": "deleted by the taint manager (its node has a NoExecute taint it does not tolerate)",
		"TerminationByKubelet":   "terminated by its kubelet (node pressure or a node shutdown)",
		"DeletionByPodGC":        "deleted by the pod garbage collector (its node is gone or out of service)",
	}[c.Reason]
	if what == "" {
		what = "disrupted (" + c.Reason + ")"
	}
	if m := strings.TrimSpace(c.Message); m != "" {
		what += ": " + m
	}
	return what
}

// containerEnd quotes the first container that terminated.
func containerEnd(p *corev1.Pod) string {
	for _, cs := range p.Status.ContainerStatuses {
		if t := cs.State.Terminated; t != nil {
			return fmt.Sprintf("; container %s exited %d (%s)", cs.Name, t.ExitCode, t.Reason)
		}
	}
	return ""
}

// NodeLost says why the node can no longer take part in measurements, ""
// when it can: NotReady (its kubelet stopped posting status, or reports a
// fault) or being deleted. A cordon alone is not a loss (the pods on a
// cordoned node keep running; a drain's evictions are the pods' fate):
// see Cordoned.
func NodeLost(n *corev1.Node) string {
	if n.DeletionTimestamp != nil {
		return fmt.Sprintf("node %s is being deleted (since %s)", n.Name, clock(n.DeletionTimestamp.Time))
	}
	for _, c := range n.Status.Conditions {
		if c.Type != corev1.NodeReady || c.Status == corev1.ConditionTrue {
			continue
		}
		why := fmt.Sprintf("node %s turned NotReady at %s (Ready=%s", n.Name, clock(c.LastTransitionTime.Time), c.Status)
		if c.Reason != "" {
			why += ": " + c.Reason
		}
		if m := strings.TrimSpace(c.Message); m != "" {
			why += ": " + m
		}
		return why + ")"
	}
	return ""
}

// Cordoned says that the node is cordoned (unschedulable), "" when not:
// the context of a pod's eviction (a drain cordons first).
func Cordoned(n *corev1.Node) string {
	if !n.Spec.Unschedulable {
		return ""
	}
	return fmt.Sprintf("node %s is cordoned (spec.unschedulable: a drain or maintenance)", n.Name)
}

// Deleted is the fate of a pod or node that is gone from the API.
func Deleted(kind, name string, at time.Time) string {
	return fmt.Sprintf("%s %s was deleted (gone from the API at %s), not by the suite", kind, name, clock(at))
}

func clock(t time.Time) string { return t.UTC().Format("15:04:05Z") }
