package doctor

import (
	"fmt"
	"sort"
	"strings"

	"github.com/montanaflynn/stats"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Finding is one observed failure mode on one node.
type Finding struct {
	ID       string   `json:"id"`
	Severity Severity `json:"severity"`
	Node     string   `json:"node"`
	Evidence []string `json:"evidence"`
	Cause    string   `json:"cause"`
	Fix      string   `json:"fix"`
	Seed     string   `json:"seed"`
}

// HostFacts is what the host probe (rdmaprobe node) saw on one node, reduced
// to what the catalogue needs.
type HostFacts struct {
	StorageModulesLoaded []string
	DriverReady          bool // /run/mellanox/drivers/.driver-ready exists
	PeermemLoaded        bool
	PortsDown            []string // "mlx5_1/1: 1: DOWN (2: Polling)"
	IOSomeAvg10          *float64 // PSI io "some avg10", percent
	IOWaitPct            *float64 // iowait over the sample window
}

// State is everything the doctor looks at.
type State struct {
	Nodes     []corev1.Node
	Resources []string // extended resources every selected node must advertise
	// Operator pods (Network Operator's MOFED, GPU Operator's driver and
	// friends) and their last log lines, keyed "namespace/pod/container".
	Pods []corev1.Pod
	Logs map[string]string
	// NicClusterPolicy as unstructured (its schema differs between Network
	// Operator versions); nil when absent. PolicyErr says why it is absent.
	Policy    *unstructured.Unstructured
	PolicyErr string
	// NoNetworkOperator: the operator said RDMA drivers are managed outside
	// Kubernetes (host MOFED or inbox), so a missing NicClusterPolicy is the
	// expected state, not a check that could not run.
	NoNetworkOperator bool
	Hosts             map[string]HostFacts
	// HostsMissing says, per node, why its host facts are absent from Hosts
	// (probe refused by PodSecurity, --node-probe=false, API-only doctor).
	HostsMissing map[string]string
	// PodRoles tells which pods are which (see DefaultRoles).
	Roles Roles
}

// Roles recognise operator pods by name prefix and container.
type Roles struct {
	MOFEDPrefixes  []string
	MOFEDContainer string
	GPUDriverNames []string
	GPUDriverCtr   string
	GPUNamespaces  []string
}

// DefaultRoles match the NVIDIA Network Operator and GPU Operator defaults.
var DefaultRoles = Roles{
	MOFEDPrefixes:  []string{"mofed-", "nvidia-doca-driver"},
	MOFEDContainer: "mofed-container",
	GPUDriverNames: []string{"nvidia-driver-daemonset"},
	GPUDriverCtr:   "nvidia-driver-ctr",
	GPUNamespaces:  []string{"gpu-operator", "nvidia-gpu-operator"},
}

// Log lines the classifiers look for, verbatim from the seeds.
const (
	LogStorageModules = "Storage modules are loaded for current driver"
	LogPeermemEINVAL  = "could not insert 'nvidia_peermem': Invalid argument"
	MOFEDWaitLabel    = "network.nvidia.com/operator.mofed.wait"
)

func newFinding(id, node string, evidence ...string) Finding {
	e := Catalogue[id]
	return Finding{ID: id, Severity: e.Severity, Node: node, Evidence: evidence, Cause: e.Cause, Fix: e.Fix, Seed: e.Seed}
}

// Diagnose applies the catalogue to the state. Findings are sorted by node
// and id; a healthy node gets none.
func Diagnose(s State) []Finding {
	var out []Finding
	nodeByName := map[string]corev1.Node{}
	for _, n := range s.Nodes {
		nodeByName[n.Name] = n
	}
	tolerations, haveTolerations := policyTolerations(s.Policy)
	unloadSet := policyEnvTrue(s.Policy, "UNLOAD_STORAGE_MODULES")
	mofedPod := map[string]*corev1.Pod{}
	driverCrash := map[string]bool{}
	for i := range s.Pods {
		p := &s.Pods[i]
		switch {
		case s.Roles.isMOFED(p):
			if p.Spec.NodeName != "" {
				mofedPod[p.Spec.NodeName] = p
			}
			out = append(out, s.classifyMOFED(p, unloadSet)...)
		case s.Roles.isGPUDriver(p):
			if f, ok := s.classifyGPUDriver(p); ok {
				out = append(out, f)
				driverCrash[p.Spec.NodeName] = true
			}
		}
	}
	for _, n := range s.Nodes {
		if n.Labels[MOFEDWaitLabel] == "true" {
			f := newFinding(MOFEDWaitStuck, n.Name, fmt.Sprintf("label %s=true", MOFEDWaitLabel))
			if p := mofedPod[n.Name]; p != nil {
				f.Evidence = append(f.Evidence, fmt.Sprintf("MOFED pod %s/%s: %s", p.Namespace, p.Name, podState(p)))
			} else {
				f.Evidence = append(f.Evidence, "no MOFED driver pod is scheduled on the node")
			}
			out = append(out, f)
			if haveTolerations {
				for _, t := range n.Spec.Taints {
					if t.Effect == corev1.TaintEffectPreferNoSchedule || tolerated(tolerations, t) {
						continue
					}
					out = append(out, newFinding(UntoleratedTaint, n.Name,
						fmt.Sprintf("taint %s=%s:%s", t.Key, t.Value, t.Effect),
						fmt.Sprintf("NicClusterPolicy %s tolerations: %s", s.Policy.GetName(), describeTolerations(tolerations))))
				}
			}
		}
		for _, r := range s.Resources {
			q, ok := n.Status.Allocatable[corev1.ResourceName(r)]
			if !ok || q.IsZero() {
				have := "missing"
				if ok {
					have = "0"
				}
				out = append(out, newFinding(ResourceMissing, n.Name, fmt.Sprintf("allocatable %s: %s", r, have)))
			}
		}
	}
	// GPU Operator pods stuck in Init behind a crash-looping driver.
	for i := range s.Pods {
		p := &s.Pods[i]
		if !driverCrash[p.Spec.NodeName] || s.Roles.isGPUDriver(p) || !s.Roles.inGPUNamespace(p) {
			continue
		}
		if st := initWaiting(p); st != "" {
			out = append(out, newFinding(GPUOperatorCascade, p.Spec.NodeName, fmt.Sprintf("pod %s/%s: %s", p.Namespace, p.Name, st)))
		}
	}
	if s.Policy == nil && s.PolicyErr != "" && !s.NoNetworkOperator {
		out = append(out, newFinding(NoNicClusterPolicy, "", s.PolicyErr))
	}
	out = append(out, s.hostFindings(unloadSet)...)
	return dedupe(out)
}

func (s State) classifyMOFED(p *corev1.Pod, unloadSet bool) []Finding {
	logs := s.podLogs(p, s.Roles.MOFEDContainer)
	crash, restarts := crashLooping(p)
	switch {
	case strings.Contains(logs, LogStorageModules):
		id := StorageModules
		if unloadSet {
			id = StorageModulesNoFix
		}
		return []Finding{newFinding(id, p.Spec.NodeName,
			fmt.Sprintf("MOFED pod %s/%s: %s", p.Namespace, p.Name, podState(p)),
			"log: "+lineWith(logs, LogStorageModules),
			fmt.Sprintf("NicClusterPolicy spec.ofedDriver.env UNLOAD_STORAGE_MODULES=true: %v", unloadSet))}
	case crash:
		return []Finding{newFinding(MOFEDCrashLoop, p.Spec.NodeName,
			fmt.Sprintf("MOFED pod %s/%s: %s, %d restarts", p.Namespace, p.Name, podState(p), restarts), "log tail: "+tail(logs, 3))}
	case !podReady(p):
		return []Finding{newFinding(MOFEDNotReady, p.Spec.NodeName, fmt.Sprintf("MOFED pod %s/%s: %s", p.Namespace, p.Name, podState(p)))}
	}
	return nil
}

func (s State) classifyGPUDriver(p *corev1.Pod) (Finding, bool) {
	logs := s.podLogs(p, s.Roles.GPUDriverCtr)
	if strings.Contains(logs, LogPeermemEINVAL) {
		return newFinding(PeermemRace, p.Spec.NodeName,
			fmt.Sprintf("GPU driver pod %s/%s: %s", p.Namespace, p.Name, podState(p)), "log: "+lineWith(logs, LogPeermemEINVAL)), true
	}
	return Finding{}, false
}

func (s State) hostFindings(unloadSet bool) []Finding {
	var out []Finding
	var names []string
	for n := range s.Hosts {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		h := s.Hosts[n]
		if len(h.StorageModulesLoaded) > 0 && !h.DriverReady {
			id := StorageModules
			if unloadSet {
				id = StorageModulesNoFix
			}
			out = append(out, newFinding(id, n, fmt.Sprintf("host: storage modules loaded: %s", strings.Join(h.StorageModulesLoaded, ", ")),
				"host: /run/mellanox/drivers/.driver-ready absent"))
		}
		if h.PeermemLoaded && !h.DriverReady {
			out = append(out, newFinding(PeermemRace, n, "host: nvidia_peermem loaded", "host: /run/mellanox/drivers/.driver-ready absent"))
		}
		for _, p := range h.PortsDown {
			out = append(out, newFinding(PortDown, n, "host: port "+p))
		}
	}
	out = append(out, pressureOutliers(s.Hosts)...)
	return out
}

// Outlier detection (seed 004): a node whose I/O pressure stands far above
// its peers'. Modified z-score (Iglewicz & Hoaglin): 0.6745·(x − median)/MAD,
// outlier above 3.5; with an absolute floor so that a cluster of idle nodes
// (all near 0) does not flag noise.
// The MAD is floored at 1 percentage point so identical peers (MAD 0) do
// not turn a 2-point difference into an infinite score.
const (
	outlierZ        = 3.5
	outlierFloorPct = 10.0
	madFloor        = 1.0
)

func pressureOutliers(hosts map[string]HostFacts) []Finding {
	var out []Finding
	for _, metric := range []struct {
		name string
		get  func(HostFacts) *float64
	}{{"PSI io some avg10", func(h HostFacts) *float64 { return h.IOSomeAvg10 }}, {"iowait", func(h HostFacts) *float64 { return h.IOWaitPct }}} {
		var names []string
		var vals []float64
		for n, h := range hosts {
			if v := metric.get(h); v != nil {
				names = append(names, n)
				vals = append(vals, *v)
			}
		}
		if len(vals) < 3 { // no peer majority to compare with
			continue
		}
		med, err := stats.Median(vals)
		if err != nil {
			continue
		}
		mad, err := stats.MedianAbsoluteDeviation(vals)
		if err != nil {
			continue
		}
		for i, v := range vals {
			if v < outlierFloorPct || v <= med {
				continue
			}
			z := 0.6745 * (v - med) / max(mad, madFloor)
			if z > outlierZ {
				out = append(out, newFinding(IOPressureOutlier, names[i],
					fmt.Sprintf("%s = %.1f%% on %s; peers' median %.1f%%, MAD %.2f, modified z-score %.1f > %.1f", metric.name, v, names[i], med, mad, z, outlierZ),
					fmt.Sprintf("all nodes: %s", valuesText(names, vals))))
			}
		}
	}
	return out
}

func valuesText(names []string, vals []float64) string {
	idx := make([]int, len(names))
	for i := range idx {
		idx[i] = i
	}
	sort.Slice(idx, func(a, b int) bool { return names[idx[a]] < names[idx[b]] })
	var parts []string
	for _, i := range idx {
		parts = append(parts, fmt.Sprintf("%s=%.1f", names[i], vals[i]))
	}
	return strings.Join(parts, " ")
}

func dedupe(fs []Finding) []Finding {
	seen := map[string]int{}
	var out []Finding
	for _, f := range fs {
		k := f.ID + "|" + f.Node
		if i, ok := seen[k]; ok {
			out[i].Evidence = append(out[i].Evidence, f.Evidence...)
			continue
		}
		seen[k] = len(out)
		out = append(out, f)
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Node != out[j].Node {
			return out[i].Node < out[j].Node
		}
		return out[i].ID < out[j].ID
	})
	return out
}
