package doctor

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/klog/v2"
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
	for _, n := range r.GPUDriverNames {
		if strings.HasPrefix(p.Name, n) {
			return true
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

// LogKey is how State.Logs is keyed.
func LogKey(ns, pod, container string) string { return ns + "/" + pod + "/" + container }

func (s State) podLogs(p *corev1.Pod, preferred string) string {
	if l, ok := s.Logs[LogKey(p.Namespace, p.Name, preferred)]; ok {
		return l
	}
	var all []string
	for _, c := range p.Spec.Containers {
		all = append(all, s.Logs[LogKey(p.Namespace, p.Name, c.Name)])
	}
	return strings.Join(all, "\n")
}

// crashLooping reports a container in CrashLoopBackOff (or restarting with
// a non-zero last exit) and the restart count.
func crashLooping(p *corev1.Pod) (bool, int32) {
	for _, cs := range p.Status.ContainerStatuses {
		if w := cs.State.Waiting; w != nil && w.Reason == "CrashLoopBackOff" {
			return true, cs.RestartCount
		}
		if t := cs.LastTerminationState.Terminated; t != nil && t.ExitCode != 0 && cs.RestartCount > 0 {
			return true, cs.RestartCount
		}
	}
	return false, 0
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// podState is what kubectl get pods prints in STATUS, roughly.
func podState(p *corev1.Pod) string {
	for _, cs := range p.Status.ContainerStatuses {
		if w := cs.State.Waiting; w != nil && w.Reason != "" {
			return fmt.Sprintf("%s (%d restarts)", w.Reason, cs.RestartCount)
		}
	}
	if st := initWaiting(p); st != "" {
		return st
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

// policyTolerations reads spec.tolerations (v1alpha1 puts them there, per
// seed 002), tolerating schema differences.
func policyTolerations(u *unstructured.Unstructured) ([]corev1.Toleration, bool) {
	if u == nil {
		return nil, false
	}
	raw, found, _ := unstructured.NestedSlice(u.Object, "spec", "tolerations")
	if !found {
		return nil, true // a policy without tolerations tolerates nothing
	}
	var out []corev1.Toleration
	for _, r := range raw {
		m, ok := r.(map[string]any)
		if !ok {
			continue
		}
		t := corev1.Toleration{}
		t.Key, _ = m["key"].(string)
		op, _ := m["operator"].(string)
		t.Operator = corev1.TolerationOperator(op)
		t.Value, _ = m["value"].(string)
		eff, _ := m["effect"].(string)
		t.Effect = corev1.TaintEffect(eff)
		out = append(out, t)
	}
	return out, true
}

func tolerated(ts []corev1.Toleration, taint corev1.Taint) bool {
	for i := range ts {
		if ts[i].ToleratesTaint(klog.Background(), &taint, false) {
			return true
		}
	}
	return false
}

func describeTolerations(ts []corev1.Toleration) string {
	if len(ts) == 0 {
		return "none"
	}
	var parts []string
	for _, t := range ts {
		parts = append(parts, fmt.Sprintf("%s %s %s:%s", t.Key, t.Operator, t.Value, t.Effect))
	}
	return strings.Join(parts, "; ")
}

// policyEnvTrue reports whether spec.ofedDriver.env sets name=true.
func policyEnvTrue(u *unstructured.Unstructured, name string) bool {
	if u == nil {
		return false
	}
	env, _, _ := unstructured.NestedSlice(u.Object, "spec", "ofedDriver", "env")
	for _, e := range env {
		m, ok := e.(map[string]any)
		if ok && m["name"] == name && strings.EqualFold(fmt.Sprint(m["value"]), "true") {
			return true
		}
	}
	return false
}

func lineWith(logs, s string) string {
	for _, l := range strings.Split(logs, "\n") {
		if strings.Contains(l, s) {
			return strings.TrimSpace(l)
		}
	}
	return ""
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}
