package doctor

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/klog/v2"

	"github.com/rdmasuite/rdmasuite/internal/resnames"
)

// PolicyFacts are the NicClusterPolicy settings the rules read.
type PolicyFacts struct {
	Present bool
	Name    string
	// OFEDDriver: the policy deploys the MOFED/DOCA driver container
	// (spec.ofedDriver); without it MOFED is the host's.
	OFEDDriver  bool
	Tolerations []corev1.Toleration
	// Env is spec.ofedDriver.env (name → value).
	Env map[string]string
	// DevicePluginResources are the extended resources the policy's device
	// plugins advertise (rdmaSharedDevicePlugin and sriovDevicePlugin
	// configs), e.g. "rdma/rdma_shared_device_a", "nvidia.com/hostdev".
	// ConfigErrors say which config could not be parsed.
	DevicePluginResources []string
	ConfigErrors          []string
}

// readPolicy reads the policy without assuming one schema version: fields
// that are absent are simply not set.
func readPolicy(u *unstructured.Unstructured) PolicyFacts {
	if u == nil {
		return PolicyFacts{}
	}
	p := PolicyFacts{Present: true, Name: u.GetName(), Env: map[string]string{}}
	_, p.OFEDDriver, _ = unstructured.NestedMap(u.Object, "spec", "ofedDriver")
	raw, _, _ := unstructured.NestedSlice(u.Object, "spec", "tolerations")
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
		p.Tolerations = append(p.Tolerations, t)
	}
	env, _, _ := unstructured.NestedSlice(u.Object, "spec", "ofedDriver", "env")
	for _, e := range env {
		if m, ok := e.(map[string]any); ok {
			name, _ := m["name"].(string)
			p.Env[name] = fmt.Sprint(m["value"])
		}
	}
	// The device plugins' resources: one reading for the doctor and the
	// suite (resnames.FromPolicy).
	rdma, hostdev, errs := resnames.FromPolicy(u)
	p.DevicePluginResources = append(resnames.Resources(rdma), resnames.Resources(hostdev)...)
	p.ConfigErrors = errs
	return p
}

// EnvTrue reports whether spec.ofedDriver.env sets name=true.
func (p PolicyFacts) EnvTrue(name string) bool { return strings.EqualFold(p.Env[name], "true") }

// operatorBuiltinTolerations: the Network Operator's driver and network
// DaemonSets always tolerate nvidia.com/gpu:NoSchedule besides the policy's
// own tolerations (manifests/state-ofed-driver/0050_ofed-driver-ds.yaml).
var operatorBuiltinTolerations = []corev1.Toleration{
	{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
}

// dsAutoTolerated are the taints the DaemonSet controller tolerates for
// every DaemonSet pod by itself (Kubernetes docs, "DaemonSet: Taints and
// tolerations"); network-unavailable only for host-network pods, which the
// MOFED driver pod is. Such a taint never keeps the MOFED pod away, whatever
// the NicClusterPolicy says.
var dsAutoTolerated = map[string]corev1.TaintEffect{
	"node.kubernetes.io/not-ready":           corev1.TaintEffectNoExecute,
	"node.kubernetes.io/unreachable":         corev1.TaintEffectNoExecute,
	"node.kubernetes.io/disk-pressure":       corev1.TaintEffectNoSchedule,
	"node.kubernetes.io/memory-pressure":     corev1.TaintEffectNoSchedule,
	"node.kubernetes.io/pid-pressure":        corev1.TaintEffectNoSchedule,
	"node.kubernetes.io/unschedulable":       corev1.TaintEffectNoSchedule,
	"node.kubernetes.io/network-unavailable": corev1.TaintEffectNoSchedule,
}

// untoleratedTaints are the node's taints that keep the policy's pods off
// it: NoSchedule/NoExecute, not tolerated by the policy, not tolerated
// automatically for DaemonSets.
//
// scheduledHere: a MOFED pod is already placed on the node; a NoSchedule
// taint does not evict it, so such a taint is not what keeps MOFED away.
func (p PolicyFacts) untoleratedTaints(n *corev1.Node, scheduledHere bool) []corev1.Taint {
	var out []corev1.Taint
	for _, t := range n.Spec.Taints {
		if t.Effect == corev1.TaintEffectPreferNoSchedule || (scheduledHere && t.Effect == corev1.TaintEffectNoSchedule) {
			continue
		}
		if eff, ok := dsAutoTolerated[t.Key]; ok && eff == t.Effect {
			continue
		}
		tolerated := false
		for _, tol := range append(append([]corev1.Toleration{}, operatorBuiltinTolerations...), p.Tolerations...) {
			if tol.ToleratesTaint(klog.Background(), &t, false) {
				tolerated = true
				break
			}
		}
		if !tolerated {
			out = append(out, t)
		}
	}
	return out
}

func (p PolicyFacts) describeTolerations() string {
	var parts []string
	for _, t := range p.Tolerations {
		parts = append(parts, fmt.Sprintf("%s %s %s:%s", t.Key, t.Operator, t.Value, t.Effect))
	}
	if len(parts) == 0 {
		return "none (besides the built-in nvidia.com/gpu:NoSchedule)"
	}
	return strings.Join(parts, "; ")
}
