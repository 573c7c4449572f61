package doctor

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/rdmasuite/rdmasuite/internal/resnames"
)

// NicClusterPolicyGVR is the Network Operator's policy resource.
var NicClusterPolicyGVR = resnames.NicClusterPolicyGVR

// GatherOptions say where the operators live and what to require.
type GatherOptions struct {
	NodeSelector string
	// Nodes, when not nil, narrows the nodes to these names (the suite's
	// default selection, so the doctor judges the nodes the run covers).
	Nodes             []string
	Resources         []string
	NetworkOperatorNS string
	GPUOperatorNS     []string
	LogTailLines      int64
	PerCallTimeout    time.Duration
	// UnusedPorts: see State.UnusedPorts.
	UnusedPorts []string
	// NoNetworkOperator: the cluster does not use the NVIDIA Network
	// Operator (see State.NoNetworkOperator).
	NoNetworkOperator bool
}

// Gather reads the cluster state the doctor needs through the API: nodes,
// operator pods with the logs of unhealthy ones (current and previous
// container), and the NicClusterPolicy. Host facts are added by the caller.
func Gather(ctx context.Context, cs kubernetes.Interface, dyn dynamic.Interface, o GatherOptions) (State, error) {
	s := State{Resources: o.Resources, Logs: map[string]string{}, Roles: DefaultRoles, NoNetworkOperator: o.NoNetworkOperator, UnusedPorts: o.UnusedPorts}
	if len(o.GPUOperatorNS) > 0 {
		s.Roles.GPUNamespaces = o.GPUOperatorNS
	}
	if o.LogTailLines == 0 {
		o.LogTailLines = 50
	}
	if o.PerCallTimeout == 0 {
		o.PerCallTimeout = 15 * time.Second
	}
	nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: o.NodeSelector})
	if err != nil {
		return s, fmt.Errorf("list nodes: %w", err)
	}
	selected := map[string]bool{}
	for _, n := range nodes.Items {
		if o.Nodes != nil && !slices.Contains(o.Nodes, n.Name) {
			continue
		}
		s.Nodes = append(s.Nodes, n)
		selected[n.Name] = true
	}
	for _, ns := range append([]string{o.NetworkOperatorNS}, s.Roles.GPUNamespaces...) {
		if ns == "" {
			continue
		}
		pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return s, fmt.Errorf("list pods in %s: %w", ns, err)
		}
		for _, p := range pods.Items {
			// A DaemonSet pod the scheduler could not place has no node
			// name yet; its affinity names the node it is for, and its
			// Pending state with the scheduler's reason is evidence.
			if !selected[podNode(&p)] {
				continue
			}
			s.Pods = append(s.Pods, p)
			if podReady(&p) || p.Spec.NodeName == "" {
				continue
			}
			// Every container, init containers included: the peermem
			// error is in nvidia-peermem-ctr, the MOFED wait in the
			// mofed-validation init container.
			for _, c := range append(append([]corev1.Container{}, p.Spec.InitContainers...), p.Spec.Containers...) {
				if l := containerLogs(ctx, cs, &p, c.Name, o); l != "" {
					s.Logs[LogKey(p.Namespace, p.Name, c.Name)] = l
				}
			}
		}
	}
	if dyn != nil {
		// The NicClusterPolicy and the SriovNetworkNodePolicies: what
		// cannot be read is said, never an error (resnames.Read).
		in := resnames.Read(ctx, resnames.DynamicLister(dyn))
		s.Policy, s.PolicyErr, s.SriovPolicies, s.SriovErr = in.Policy, in.PolicyErr, in.SriovPolicies, in.SriovErr
	}
	return s, nil
}

// containerLogs returns the previous container's log (the crash) and the
// current one, each limited to the last lines. A container that has
// restarted and shows neither is read again (up to logAttempts times,
// logRetryWait apart): right after a crash the kubelet may already have
// removed the dead container's log while its successor has printed nothing
// yet, and a crash-looping MOFED whose reason was not read would pass for a
// node with no known failure mode.
func containerLogs(ctx context.Context, cs kubernetes.Interface, p *corev1.Pod, container string, o GatherOptions) string {
	restarted := false
	for _, st := range append(append([]corev1.ContainerStatus{}, p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
		if st.Name == container && st.RestartCount > 0 {
			restarted = true
		}
	}
	for attempt := 1; ; attempt++ {
		var parts []string
		for _, previous := range []bool{true, false} {
			if l := readLogs(ctx, cs, p, container, previous, o); l != "" {
				parts = append(parts, l)
			}
		}
		if len(parts) > 0 || !restarted || attempt >= logAttempts || ctx.Err() != nil {
			return strings.Join(parts, "\n")
		}
		select {
		case <-ctx.Done():
		case <-time.After(logRetryWait):
		}
	}
}

// How often, and how far apart, a restarted container's empty logs are read.
var (
	logAttempts  = 4
	logRetryWait = 1500 * time.Millisecond
)

// readLogs reads one container's log (tests replace it).
var readLogs = func(ctx context.Context, cs kubernetes.Interface, p *corev1.Pod, container string, previous bool, o GatherOptions) string {
	c, cancel := context.WithTimeout(ctx, o.PerCallTimeout)
	defer cancel()
	rc, err := cs.CoreV1().Pods(p.Namespace).GetLogs(p.Name, &corev1.PodLogOptions{Container: container, Previous: previous, TailLines: &o.LogTailLines}).Stream(c)
	if err != nil {
		return ""
	}
	defer rc.Close()
	b, _ := io.ReadAll(io.LimitReader(rc, 256<<10))
	return string(b)
}
