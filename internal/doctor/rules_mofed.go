package doctor

import (
	"fmt"
	"regexp"
	"strings"
)

// Rules about the Network Operator's MOFED/DOCA driver pod and its policy.

// storageModulePhrases are the MOFED/DOCA driver container's words for
// refusing to replace the in-tree RDMA stack while storage modules are
// loaded, matched case-insensitively. Sources beside the test data in
// testdata/realworld.
var storageModulePhrases = []*regexp.Regexp{
	regexp.MustCompile(`(?i)storage modules? (are |is )?loaded`),
	regexp.MustCompile(`(?i)loaded storage modules?`),
	regexp.MustCompile(`(?i)storage modules?.*(prevent|block|in use|must be unloaded|need to be unloaded)`),
}

// peermemInUsePhrases: the driver container cannot reload MOFED because
// nvidia_peermem holds ib_core (doca-driver-build entrypoint.sh and the Go
// entrypoint).
var peermemInUsePhrases = []*regexp.Regexp{
	regexp.MustCompile(`(?i)nvidia_peermem is used and will fail driver reload`),
	regexp.MustCompile(`(?i)failed to unload nvidia_peermem`),
}

// mofedKnownPhrases are log lines a named MOFED rule explains.
var mofedKnownPhrases = append(append([]*regexp.Regexp{}, storageModulePhrases...), peermemInUsePhrases...)

// storageEvidence returns what shows storage modules blocking MOFED on the
// node: a driver log line or, from the host, storage modules loaded while
// the driver container never declared itself ready. Host MOFED setups never
// write .driver-ready and may load rpcrdma legitimately: not evidence.
func (v *View) storageEvidence(n *NodeView) []string {
	var ev []string
	for _, p := range n.MOFED {
		if line, ok := firstMatch(v.Logs(p), storageModulePhrases); ok {
			ev = append(ev, fmt.Sprintf("MOFED pod %s/%s: %s", p.Namespace, p.Name, podState(p)), "log: "+line)
		}
	}
	if h := n.Host; h != nil && len(h.StorageModulesLoaded) > 0 && !h.DriverReady && v.ContainerMOFED(n) {
		ev = append(ev, "host: storage modules loaded: "+strings.Join(h.StorageModulesLoaded, ", "),
			"host: /run/mellanox/drivers/.driver-ready absent")
	}
	return ev
}

// storageVariant tells which of the three storage-module findings applies:
// the policy lacks UNLOAD_STORAGE_MODULES=true; it has it but the running
// pod predates it (its env lacks it); or the pod has it and the unload
// itself failed.
func (v *View) storageVariant(n *NodeView) (string, string) {
	if !v.Policy.EnvTrue("UNLOAD_STORAGE_MODULES") {
		return StorageModules, fmt.Sprintf("NicClusterPolicy spec.ofedDriver.env UNLOAD_STORAGE_MODULES=true: no (%s)", policyName(v.Policy))
	}
	for _, p := range n.MOFED {
		if val, _ := containerEnv(p, v.Roles.MOFEDContainer, "UNLOAD_STORAGE_MODULES"); !strings.EqualFold(val, "true") {
			if val == "" {
				val = "unset"
			}
			return StorageModulesPodOutdated, fmt.Sprintf("NicClusterPolicy %s sets UNLOAD_STORAGE_MODULES=true, but pod %s/%s container %s has UNLOAD_STORAGE_MODULES=%s: the pod was created before the policy changed",
				v.Policy.Name, p.Namespace, p.Name, v.Roles.MOFEDContainer, val)
		}
	}
	return StorageModulesNoFix, fmt.Sprintf("NicClusterPolicy %s and the running MOFED pod both set UNLOAD_STORAGE_MODULES=true", v.Policy.Name)
}

func policyName(p PolicyFacts) string {
	if !p.Present {
		return "no NicClusterPolicy"
	}
	return "NicClusterPolicy " + p.Name
}

func storageRule(id string) func(v *View) []Hit {
	return func(v *View) []Hit {
		var out []Hit
		for _, n := range v.Nodes {
			ev := v.storageEvidence(n)
			if len(ev) == 0 {
				continue
			}
			if variant, why := v.storageVariant(n); variant == id {
				out = append(out, hit(n.Name, append(ev, why)...))
			}
		}
		return out
	}
}

const (
	StorageModules            = "mofed-storage-modules"
	StorageModulesPodOutdated = "mofed-storage-modules-pod-predates-policy"
	StorageModulesNoFix       = "mofed-storage-modules-unload-failed"
	MOFEDCrashLoop            = "mofed-crashloop"
	MOFEDNotReady             = "mofed-not-ready"
	MOFEDWaitStuck            = "mofed-wait-stuck"
	UntoleratedTaint          = "nicclusterpolicy-untolerated-taint"
	NoNicClusterPolicy        = "nicclusterpolicy-missing"
)

var _ = register(Rule{ID: StorageModules, Severity: Critical, Seed: "000",
	Cause:  "storage modules (rpcrdma, xprtrdma, nvme_rdma, nvmet_rdma, ib_isert, ib_srpt) were loaded before MOFED (e.g. by an NFS-over-RDMA mount): the MOFED container refuses to replace the in-tree RDMA stack and crash-loops",
	Fix:    "set UNLOAD_STORAGE_MODULES=true in NicClusterPolicy spec.ofedDriver.env (kubectl edit nicclusterpolicy nic-cluster-policy), then delete the MOFED pod so it is recreated with it. Side effect: NFS-over-RDMA I/O stalls while MOFED restarts (27 s observed, no data lost)",
	Raises: "the MOFED/DOCA driver container's log refuses storage modules (any known wording, any case), or the host probe sees storage modules loaded and no .driver-ready on a node whose MOFED runs in a container; and the policy does not set UNLOAD_STORAGE_MODULES=true",
	Silent: []string{"host-installed MOFED (--network-operator=false, or no MOFED pod and no /run/mellanox/drivers) with rpcrdma loaded for an NFS-over-RDMA mount",
		"storage modules loaded after MOFED became ready (.driver-ready present)"},
	Eval: storageRule(StorageModules)})

var _ = register(Rule{ID: StorageModulesPodOutdated, Severity: Critical, Seed: "000",
	Cause:  "the NicClusterPolicy sets UNLOAD_STORAGE_MODULES=true, but the running MOFED pod was created before that change and still runs without it (the driver DaemonSet does not replace running pods by itself), so it keeps refusing the loaded storage modules",
	Fix:    "delete the MOFED pod on the node (kubectl delete pod -n <ns> <pod>) so the DaemonSet recreates it with the policy's env, or let the Network Operator's driver upgrade controller roll it; expect an NFS-over-RDMA I/O stall during the driver reload",
	Raises: "storage-module evidence (as for mofed-storage-modules), the policy sets UNLOAD_STORAGE_MODULES=true, and the MOFED pod's mofed-container env lacks it",
	Silent: []string{"the pod's env already has UNLOAD_STORAGE_MODULES=true (that is mofed-storage-modules-unload-failed)"},
	Eval:   storageRule(StorageModulesPodOutdated)})

var _ = register(Rule{ID: StorageModulesNoFix, Severity: Warning, Seed: "000",
	Cause:  "storage modules are loaded and the MOFED pod runs with UNLOAD_STORAGE_MODULES=true, yet it still fails on them: the unload itself failed (modules in use by a mounted NFS-over-RDMA share)",
	Fix:    "unmount or quiesce the NFS-over-RDMA mounts on the node, then delete the MOFED pod so it retries; expect an NFS I/O stall during the driver reload",
	Raises: "storage-module evidence, and both the policy and the running MOFED pod set UNLOAD_STORAGE_MODULES=true",
	Silent: []string{"the policy sets it but the running pod predates it (mofed-storage-modules-pod-predates-policy)"},
	Eval:   storageRule(StorageModulesNoFix)})

var _ = register(Rule{ID: MOFEDCrashLoop, Severity: Critical, Seed: "000",
	Cause:  "the MOFED driver pod is crash-looping for a reason not in the catalogue (see its log in the evidence)",
	Fix:    "read the MOFED container log (kubectl logs -n <ns> <pod> -c mofed-container --previous) and the node's dmesg",
	Raises: "a MOFED pod in CrashLoopBackOff or restarting after a non-zero exit, whose log matches no catalogued phrase",
	Silent: []string{"a crash whose log refuses storage modules or a loaded nvidia_peermem (named findings instead)", "a Ready pod with an old restart (e.g. an OOM kill days ago)"},
	Eval: func(v *View) []Hit {
		var out []Hit
		for _, n := range v.Nodes {
			for _, p := range n.MOFED {
				crash := crashLooping(p)
				logs := v.Logs(p)
				if _, known := firstMatch(logs, mofedKnownPhrases); crash && !known {
					out = append(out, hit(n.Name, fmt.Sprintf("MOFED pod %s/%s: %s", p.Namespace, p.Name, podState(p)), "log tail: "+tail(logs, 3)))
				}
			}
		}
		return out
	}})

var _ = register(Rule{ID: MOFEDNotReady, Severity: Warning, Seed: "002",
	Cause:  "the MOFED driver pod for the node is not Running and Ready (still building/loading the driver, or not scheduled at all)",
	Fix:    "for a pod the scheduler could not place, read its reason in the evidence (taints, resources); otherwise wait for the driver build/load to finish (minutes after a kernel upgrade) and read its events and log if it stays",
	Raises: "a MOFED pod for the node (scheduled there, or Pending with the node in its DaemonSet affinity) that is not Ready and not crash-looping; a Pending pod's evidence carries the scheduler's message. A MOFED pod Pending with no node at all is raised on the node its scheduler message names, else cluster-wide (node *)",
	Silent: []string{"a Ready MOFED pod", "a crash-looping one (mofed-crashloop or a storage-module finding)"},
	Eval: func(v *View) []Hit {
		var out []Hit
		for _, n := range v.Nodes {
			for _, p := range n.MOFED {
				crash := crashLooping(p)
				_, known := firstMatch(v.Logs(p), mofedKnownPhrases)
				if !podReady(p) && !crash && !known {
					out = append(out, hit(n.Name, fmt.Sprintf("MOFED pod %s/%s: %s", p.Namespace, p.Name, podState(p))))
				}
			}
		}
		// A MOFED pod with no node yet: the node its scheduler message
		// names, else the whole cluster (ClusterWide: a failure, not a
		// not-run).
		for _, p := range v.Unplaced {
			if !v.Roles.isMOFED(p) {
				continue
			}
			where := ClusterWide
			why, _ := unscheduled(p)
			if n := v.nodeNamedIn(why); n != "" {
				where = n
			}
			out = append(out, hit(where, fmt.Sprintf("MOFED pod %s/%s has no node yet: %s", p.Namespace, p.Name, podState(p))))
		}
		return out
	}})

var _ = register(Rule{ID: MOFEDWaitStuck, Severity: Critical, Seed: "002",
	Cause:  "network.nvidia.com/operator.mofed.wait=true: the Network Operator has not seen the MOFED driver pod ready on this node, so the RDMA device plugin stays locked and no RDMA resource is advertised",
	Fix:    "find out why the MOFED pod is not ready on the node (see the other findings: untolerated taint, crash loop, Pending); the label turns false by itself once it is",
	Raises: "label network.nvidia.com/operator.mofed.wait=true",
	Silent: []string{"mofed.wait=false", "the label absent (node not managed by the Network Operator)"},
	Eval: func(v *View) []Hit {
		var out []Hit
		for _, n := range v.Nodes {
			if n.Node.Labels[MOFEDWaitLabel] == "true" {
				out = append(out, hit(n.Name, fmt.Sprintf("label %s=true", MOFEDWaitLabel), n.describeMOFED()))
			}
		}
		return out
	}})

var _ = register(Rule{ID: UntoleratedTaint, Severity: Critical, Seed: "002",
	Cause:  "the node has a taint the NicClusterPolicy does not tolerate: the MOFED driver pod (and the device plugins) cannot run there, mofed.wait stays true and RDMA resources are never advertised",
	Fix:    "add the taint to NicClusterPolicy spec.tolerations, e.g. kubectl patch nicclusterpolicy nic-cluster-policy --type=merge -p '{\"spec\":{\"tolerations\":[{\"key\":\"<key>\",\"operator\":\"Exists\",\"effect\":\"<effect>\"}]}}' (try --dry-run=server first; with Helm/ArgoCD change values.yaml)",
	Raises: "a NoSchedule or NoExecute taint that the policy's tolerations do not match, on a node that should run MOFED and has no Ready MOFED pod: mofed.wait=true, an RDMA node label or a Pending MOFED pod for it, or a missing RDMA resource",
	Silent: []string{"taints the DaemonSet controller tolerates for every DaemonSet pod: node.kubernetes.io/{not-ready,unreachable}:NoExecute, {disk,memory,pid}-pressure, unschedulable (cordon), network-unavailable :NoSchedule",
		"PreferNoSchedule taints", "a tainted node whose MOFED pod is Ready", "a tainted CPU/control-plane node that owes no RDMA resource"},
	Eval: func(v *View) []Hit {
		if !v.Policy.Present {
			return nil
		}
		var out []Hit
		for _, n := range v.Nodes {
			scheduledHere := false
			for _, p := range n.MOFED {
				scheduledHere = scheduledHere || p.Spec.NodeName == n.Name
			}
			taints := v.Policy.untoleratedTaints(n.Node, scheduledHere)
			if len(taints) == 0 {
				continue
			}
			rdma, _ := n.RDMANode()
			rdmaMissing := false
			for _, m := range n.missingResources() {
				rdmaMissing = rdmaMissing || m.Resource != GPUResource
			}
			if n.Node.Labels[MOFEDWaitLabel] != "true" && !((rdma || rdmaMissing) && !n.MOFEDReady()) {
				continue
			}
			for _, t := range taints {
				out = append(out, hit(n.Name, fmt.Sprintf("taint %s=%s:%s", t.Key, t.Value, t.Effect),
					fmt.Sprintf("NicClusterPolicy %s tolerations: %s", v.Policy.Name, v.Policy.describeTolerations()),
					n.describeMOFED()))
			}
		}
		return out
	}})

var _ = register(Rule{ID: NoNicClusterPolicy, Severity: Info, Seed: "002",
	Cause:  "no NicClusterPolicy found (Network Operator not installed, or its CRD missing): the tolerations and MOFED env checks did not run",
	Fix:    "install the NVIDIA Network Operator, or run with --network-operator=false if RDMA drivers are managed outside Kubernetes",
	Raises: "the NicClusterPolicy CRD or object is absent and --network-operator=false was not given (reported as not-run)",
	Silent: []string{"--network-operator=false (host-installed MOFED or inbox drivers)"},
	Eval: func(v *View) []Hit {
		if v.Policy.Present || v.PolicyErr == "" || v.NoNetworkOperator {
			return nil
		}
		return []Hit{hit("", v.PolicyErr)}
	}})

const MOFEDBlockedByPeermem = "mofed-reload-blocked-by-peermem"

var _ = register(Rule{ID: MOFEDBlockedByPeermem, Severity: Critical, Seed: "field",
	Cause:  "the MOFED driver container cannot reload the driver because nvidia_peermem (loaded by the GPU driver for GPUDirect RDMA) holds ib_core: it aborts (\"Module nvidia_peermem is used and will FAIL driver reload\") and crash-loops, and the node has no RDMA until it is resolved",
	Fix:    "stop GPUDirect RDMA jobs on the node, unload nvidia_peermem (rmmod nvidia_peermem, or delete the GPU driver pod), then delete the MOFED pod; the GPU driver reloads peermem once .driver-ready is back",
	Raises: "the MOFED/DOCA driver container's log says nvidia_peermem is in use and will fail the reload, or failed to unload it",
	Silent: []string{"a MOFED pod that reloaded with peermem unloaded (no such line)", "peermem-before-mofed is not raised from host facts while the MOFED pod restarts"},
	Eval: func(v *View) []Hit {
		var out []Hit
		for _, n := range v.Nodes {
			for _, p := range n.MOFED {
				if line, ok := firstMatch(v.Logs(p), peermemInUsePhrases); ok {
					out = append(out, hit(n.Name, fmt.Sprintf("MOFED pod %s/%s: %s", p.Namespace, p.Name, podState(p)), "log: "+line))
				}
			}
		}
		return out
	}})
