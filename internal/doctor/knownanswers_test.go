package doctor

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// knownAnswer is one state with the answer the doctor must give: a rule
// that must raise on a node (with a piece of evidence), or must stay
// silent. Every registered rule needs at least one of each
// (TestEveryRuleHasKnownAnswers). Sources: testdata/realworld/<file> (real
// outputs from public reports, cited in the file) or "staged" (a state built
// from the operators' documented behaviour).
type knownAnswer struct {
	rule   string
	name   string
	source string
	raises bool
	// node and evidence: where the raising finding must land and a piece
	// of its evidence (regexp).
	node     string
	evidence string
	// clean: a healthy variant; not only this rule, no rule may raise.
	clean bool
	state func(t *testing.T) State
}

var knownAnswers []knownAnswer

func answer(k knownAnswer) bool { knownAnswers = append(knownAnswers, k); return true }

func TestKnownAnswers(t *testing.T) {
	for _, k := range knownAnswers {
		verb := "silent"
		if k.raises {
			verb = "raises"
		}
		t.Run(fmt.Sprintf("%s/%s/%s", k.rule, verb, k.name), func(t *testing.T) {
			s := k.state(t)
			fs := Diagnose(s)
			var got *Finding
			for i := range fs {
				if fs[i].ID == k.rule && (!k.raises || fs[i].Node == k.node) {
					got = &fs[i]
				}
			}
			switch {
			case k.raises && got == nil:
				t.Fatalf("%s did not raise on %s (source %s); findings: %v", k.rule, k.node, k.source, ids(fs))
			case k.raises && k.evidence != "" && !regexp.MustCompile(k.evidence).MatchString(strings.Join(got.Evidence, "\n")):
				t.Fatalf("%s evidence lacks %q:\n%s", k.rule, k.evidence, strings.Join(got.Evidence, "\n"))
			case !k.raises && got != nil:
				t.Fatalf("false alarm (source %s): %s on %s: %s", k.source, got.ID, got.Node, strings.Join(got.Evidence, "; "))
			case k.clean && len(fs) > 0:
				t.Fatalf("healthy variant (source %s) raised: %v", k.source, ids(fs))
			}
		})
	}
}

func TestEveryRuleHasKnownAnswers(t *testing.T) {
	raise, silent := map[string]int{}, map[string]int{}
	for _, k := range knownAnswers {
		if _, ok := Catalogue[k.rule]; !ok {
			t.Errorf("known answer %q names unknown rule %s", k.name, k.rule)
		}
		if k.raises {
			raise[k.rule]++
		} else {
			silent[k.rule]++
		}
	}
	for _, r := range Rules() {
		if raise[r.ID] == 0 || silent[r.ID] == 0 {
			t.Errorf("rule %s needs a raising and a silent known answer (has %d and %d)", r.ID, raise[r.ID], silent[r.ID])
		}
	}
}

// --- the healthy cluster itself -------------------------------------------

var _ = answer(knownAnswer{rule: MOFEDNotReady, name: "healthy cluster", source: "staged", clean: true,
	state: func(*testing.T) State { return healthy() }})

// --- storage modules (seed 000) -------------------------------------------

func storageCrash(t *testing.T, log string) State {
	s := healthy()
	p := crashing(mofedPod("node-1"), 12, t0)
	s.replacePod(p)
	s.log(p, "mofed-container", log)
	s.host("node-1", func(h *HostFacts) {
		h.DriverReady, h.DriverReadyAt, h.StorageModulesLoaded = false, nil, []string{"rpcrdma", "xprtrdma"}
	})
	return s
}

var _ = answer(knownAnswer{rule: StorageModules, name: "legacy bash entrypoint wording", source: "realworld/mofed-storage-modules-loaded-legacy-bash.txt",
	raises: true, node: "node-1", evidence: `log: .*Storage modules are loaded for current driver`,
	state: func(t *testing.T) State {
		return storageCrash(t, realWorld(t, "mofed-storage-modules-loaded-legacy-bash.txt"))
	}})

var _ = answer(knownAnswer{rule: StorageModules, name: "DOCA Go entrypoint wording (lower case, no space after the comma)", source: "realworld/mofed-storage-modules-loaded-go-entrypoint.txt",
	raises: true, node: "node-1", evidence: `storage modules are loaded for current driver,terminating`,
	state: func(t *testing.T) State {
		return storageCrash(t, realWorld(t, "mofed-storage-modules-loaded-go-entrypoint.txt"))
	}})

var _ = answer(knownAnswer{rule: StorageModules, name: "host only: rpcrdma loaded, no .driver-ready, the policy deploys MOFED on this RDMA node", source: "staged (seed 000)",
	raises: true, node: "node-2", evidence: `host: storage modules loaded: rpcrdma`,
	state: func(*testing.T) State {
		s := healthy()
		s.removePod("mofed-ubuntu22.04-ds-node-2")
		s.host("node-2", func(h *HostFacts) {
			h.DriverReady, h.StorageModulesLoaded, h.PeermemLoaded = false, []string{"rpcrdma"}, false
		})
		return s
	}})

var _ = answer(knownAnswer{rule: StorageModules, name: "host-installed MOFED with rpcrdma for an NFS-over-RDMA mount (--network-operator=false)", source: "staged",
	clean: true,
	state: func(*testing.T) State {
		s := healthy()
		s.Policy, s.PolicyErr, s.NoNetworkOperator = nil, "no NicClusterPolicy CRD", true
		s.Pods = []corev1.Pod{driverPod("node-1"), driverPod("node-2")}
		s.Resources = []string{"rdma/rdma_shared_device_a", "nvidia.com/gpu"}
		for _, n := range []string{"node-1", "node-2"} {
			s.host(n, func(h *HostFacts) {
				h.DriverReady, h.DriverReadyAt, h.StorageModulesLoaded = false, nil, []string{"rpcrdma", "xprtrdma"}
			})
		}
		return s
	}})

// hostMOFEDWithPolicy: MOFED installed on the hosts, the Network Operator
// deploys only the device plugin (a policy without spec.ofedDriver), the
// GPU driver runs GPUDirect RDMA with peermem registered. The GPU driver
// DaemonSet creates /run/mellanox/drivers on every GPU node, so that
// directory proves nothing (realworld review of gpu-operator's
// assets/state-driver/0500_daemonset.yaml).
func hostMOFEDWithPolicy() State {
	s := healthy()
	delete(s.Policy.Object["spec"].(map[string]any), "ofedDriver")
	s.Pods = []corev1.Pod{driverPod("node-1"), driverPod("node-2")}
	for _, n := range []string{"node-1", "node-2"} {
		s.host(n, func(h *HostFacts) { h.DriverReady, h.DriverReadyAt = false, nil })
	}
	return s
}

var _ = answer(knownAnswer{rule: StorageModules, name: "host-installed MOFED, policy without ofedDriver, rpcrdma for NFS over RDMA", source: "staged",
	clean: true,
	state: func(*testing.T) State {
		s := hostMOFEDWithPolicy()
		s.host("node-1", func(h *HostFacts) { h.StorageModulesLoaded = []string{"rpcrdma", "xprtrdma"} })
		return s
	}})

var _ = answer(knownAnswer{rule: StorageModules, name: "rpcrdma loaded after MOFED became ready", source: "staged", clean: true,
	state: func(*testing.T) State {
		s := healthy()
		s.host("node-1", func(h *HostFacts) { h.StorageModulesLoaded = []string{"rpcrdma", "xprtrdma"} })
		return s
	}})

var unloadEnv = []any{map[string]any{"name": "UNLOAD_STORAGE_MODULES", "value": "true"}}

var _ = answer(knownAnswer{rule: StorageModulesPodOutdated, name: "policy sets UNLOAD_STORAGE_MODULES, the pod predates it", source: "staged (the driver DaemonSet uses OnDelete updates)",
	raises: true, node: "node-1", evidence: `has UNLOAD_STORAGE_MODULES=unset: the pod was created before`,
	state: func(t *testing.T) State {
		s := storageCrash(t, realWorld(t, "mofed-storage-modules-loaded-legacy-bash.txt"))
		s.Policy = policy(nil, unloadEnv)
		return s
	}})

var _ = answer(knownAnswer{rule: StorageModulesPodOutdated, name: "the pod has the env (the unload failed instead)", source: "staged",
	state: func(t *testing.T) State {
		s := storageCrash(t, realWorld(t, "mofed-storage-modules-loaded-legacy-bash.txt"))
		s.Policy = policy(nil, unloadEnv)
		s.replacePod(withEnv(crashing(mofedPod("node-1"), 12, t0), "UNLOAD_STORAGE_MODULES", "true"))
		return s
	}})

var _ = answer(knownAnswer{rule: StorageModulesNoFix, name: "policy and pod both set UNLOAD_STORAGE_MODULES", source: "staged",
	raises: true, node: "node-1", evidence: `both set UNLOAD_STORAGE_MODULES=true`,
	state: func(t *testing.T) State {
		s := storageCrash(t, realWorld(t, "mofed-storage-modules-loaded-go-entrypoint.txt"))
		s.Policy = policy(nil, unloadEnv)
		s.replacePod(withEnv(crashing(mofedPod("node-1"), 12, t0), "UNLOAD_STORAGE_MODULES", "true"))
		return s
	}})

var _ = answer(knownAnswer{rule: StorageModulesNoFix, name: "policy set, pod outdated", source: "staged",
	state: func(t *testing.T) State {
		s := storageCrash(t, realWorld(t, "mofed-storage-modules-loaded-legacy-bash.txt"))
		s.Policy = policy(nil, unloadEnv)
		return s
	}})

// --- MOFED pod states -------------------------------------------------------

var _ = answer(knownAnswer{rule: MOFEDCrashLoop, name: "crash with an uncatalogued log", source: "staged",
	raises: true, node: "node-2", evidence: `CrashLoopBackOff \(7 restarts\)`,
	state: func(*testing.T) State {
		s := healthy()
		p := crashing(mofedPod("node-2"), 7, t0)
		s.replacePod(p)
		s.log(p, "mofed-container", "Building driver\nError: kernel headers for 6.8.0-1059-azure not found")
		return s
	}})

var _ = answer(knownAnswer{rule: MOFEDCrashLoop, name: "crash explained by storage modules", source: "realworld/mofed-storage-modules-loaded-go-entrypoint.txt",
	state: func(t *testing.T) State {
		return storageCrash(t, realWorld(t, "mofed-storage-modules-loaded-go-entrypoint.txt"))
	}})

var _ = answer(knownAnswer{rule: MOFEDNotReady, name: "Pending MOFED pod shows the scheduler's reason", source: "realworld/scheduler-untolerated-taint-messages.txt",
	raises: true, node: "node-2", evidence: `Pending, not scheduled \(Unschedulable: 0/3 nodes are available: 1 node\(s\) had untolerated taint`,
	state: func(*testing.T) State {
		s := healthy()
		s.replacePod(pendingFor(mofedPod("node-2"), "node-2", "0/3 nodes are available: 1 node(s) had untolerated taint {example.com/maintenance: true}, 2 node(s) didn't match Pod's node affinity/selector."))
		return s
	}})

var _ = answer(knownAnswer{rule: MOFEDNotReady, name: "Ready MOFED pods", source: "staged", clean: true,
	state: func(*testing.T) State { return healthy() }})

var _ = answer(knownAnswer{rule: MOFEDWaitStuck, name: "mofed.wait=true with a Pending pod: the evidence shows the pod, not 'no pod'", source: "staged (seed 002)",
	raises: true, node: "node-2", evidence: `MOFED pod nvidia-network-operator/mofed-ubuntu22.04-ds-node-2: Pending, not scheduled`,
	state: func(*testing.T) State {
		s := healthy()
		s.Nodes[1].Labels[MOFEDWaitLabel] = "true"
		s.replacePod(pendingFor(mofedPod("node-2"), "node-2", "0/3 nodes are available: 1 node(s) had untolerated taint {crater.raids.io/account: exclusive}"))
		return s
	}})

var _ = answer(knownAnswer{rule: MOFEDWaitStuck, name: "mofed.wait=false", source: "staged", clean: true,
	state: func(*testing.T) State { return healthy() }})

// --- taints and tolerations (seed 002) ------------------------------------

func tainted(s State, node int, taints ...corev1.Taint) State {
	s.Nodes[node].Spec.Taints = append(s.Nodes[node].Spec.Taints, taints...)
	return s
}

var accountTaint = corev1.Taint{Key: "crater.raids.io/account", Value: "exclusive", Effect: corev1.TaintEffectNoSchedule}

var _ = answer(knownAnswer{rule: UntoleratedTaint, name: "seed 002: custom NoSchedule taint, mofed.wait=true", source: "staged (seed 002)",
	raises: true, node: "node-2", evidence: `taint crater.raids.io/account=exclusive:NoSchedule`,
	state: func(*testing.T) State {
		s := tainted(healthy(), 1, accountTaint)
		s.Nodes[1].Labels[MOFEDWaitLabel] = "true"
		s.removePod("mofed-ubuntu22.04-ds-node-2")
		return s
	}})

var _ = answer(knownAnswer{rule: UntoleratedTaint, name: "NoExecute-only taint evicted MOFED, no mofed.wait label", source: "staged",
	raises: true, node: "node-2", evidence: `example.com/maintenance=true:NoExecute`,
	state: func(*testing.T) State {
		s := tainted(healthy(), 1, corev1.Taint{Key: "example.com/maintenance", Value: "true", Effect: corev1.TaintEffectNoExecute})
		delete(s.Nodes[1].Labels, MOFEDWaitLabel)
		s.removePod("mofed-ubuntu22.04-ds-node-2")
		return s
	}})

var _ = answer(knownAnswer{rule: UntoleratedTaint, name: "resource missing because MOFED never ran (explicit resources, no labels)", source: "staged",
	raises: true, node: "node-2", evidence: `no MOFED driver pod exists`,
	state: func(*testing.T) State {
		s := tainted(healthy(), 1, accountTaint)
		s.Resources = []string{"rdma/rdma_shared_device_a"}
		s.Nodes[1].Labels = map[string]string{}
		delete(s.Nodes[1].Status.Allocatable, "rdma/rdma_shared_device_a")
		s.removePod("mofed-ubuntu22.04-ds-node-2")
		return s
	}})

var _ = answer(knownAnswer{rule: UntoleratedTaint, name: "the taint is tolerated by the policy", source: "staged",
	state: func(*testing.T) State {
		s := tainted(healthy(), 1, accountTaint)
		s.Nodes[1].Labels[MOFEDWaitLabel] = "true"
		s.Policy = policy([]any{map[string]any{"key": "crater.raids.io/account", "operator": "Exists", "effect": "NoSchedule"}}, nil)
		return s
	}})

// Every taint the DaemonSet controller tolerates by itself, on a node whose
// MOFED pod is gone (the worst case for a false alarm).
func autoTolerated(t *testing.T) State {
	s := healthy()
	s.Nodes[1].Labels[MOFEDWaitLabel] = "true"
	s.removePod("mofed-ubuntu22.04-ds-node-2")
	for key, eff := range dsAutoTolerated {
		s = tainted(s, 1, corev1.Taint{Key: key, Effect: eff})
	}
	return s
}

var _ = answer(knownAnswer{rule: UntoleratedTaint, name: "taints DaemonSets tolerate automatically (cordon, not-ready, pressure, network-unavailable)", source: "realworld/daemonset-default-tolerations-k8s-docs.txt",
	state: autoTolerated})

var _ = answer(knownAnswer{rule: UntoleratedTaint, name: "PreferNoSchedule", source: "staged",
	state: func(*testing.T) State {
		s := tainted(healthy(), 1, corev1.Taint{Key: "example.com/soft", Effect: corev1.TaintEffectPreferNoSchedule})
		s.Nodes[1].Labels[MOFEDWaitLabel] = "true"
		return s
	}})

var _ = answer(knownAnswer{rule: UntoleratedTaint, name: "control-plane node with its taint owes no RDMA", source: "staged", clean: true,
	state: func(*testing.T) State {
		s := healthy()
		s.Nodes = append(s.Nodes, cpuNode("cp-1", corev1.Taint{Key: "node-role.kubernetes.io/control-plane", Effect: corev1.TaintEffectNoSchedule}))
		s.Hosts["cp-1"] = HostFacts{IO: &PSIAverages{}}
		return s
	}})

var _ = answer(knownAnswer{rule: UntoleratedTaint, name: "tainted node whose MOFED pod is Ready", source: "staged", clean: true,
	state: func(*testing.T) State { return tainted(healthy(), 0, accountTaint) }})

// --- cordon -----------------------------------------------------------------

var _ = answer(knownAnswer{rule: NodeCordoned, name: "kubectl cordon", source: "staged",
	raises: true, node: "node-1", evidence: `spec.unschedulable=true`,
	state: func(*testing.T) State {
		s := tainted(healthy(), 0, corev1.Taint{Key: "node.kubernetes.io/unschedulable", Effect: corev1.TaintEffectNoSchedule})
		s.Nodes[0].Spec.Unschedulable = true
		return s
	}})

var _ = answer(knownAnswer{rule: NodeCordoned, name: "schedulable nodes", source: "staged", clean: true,
	state: func(*testing.T) State { return healthy() }})

var _ = answer(knownAnswer{rule: NoNicClusterPolicy, name: "no CRD", source: "staged",
	raises: true, node: "", evidence: `no NicClusterPolicy CRD`,
	state: func(*testing.T) State {
		s := healthy()
		s.Policy, s.PolicyErr = nil, "the cluster has no NicClusterPolicy CRD"
		return s
	}})

var _ = answer(knownAnswer{rule: NoNicClusterPolicy, name: "--network-operator=false", source: "staged",
	state: func(*testing.T) State {
		s := healthy()
		s.Policy, s.PolicyErr, s.NoNetworkOperator = nil, "the cluster has no NicClusterPolicy CRD", true
		return s
	}})

// --- resources ----------------------------------------------------------------

var _ = answer(knownAnswer{rule: ResourceMissing, name: "RDMA node advertises none of the device-plugin config's resources", source: "realworld/nicclusterpolicy-device-plugin-configs.txt",
	raises: true, node: "node-1", evidence: `rdma/rdma_shared_device_a: missing \(expected from NicClusterPolicy nic-cluster-policy device-plugin config`,
	state: func(*testing.T) State {
		s := healthy()
		delete(s.Nodes[0].Status.Allocatable, "rdma/rdma_shared_device_a")
		return s
	}})

var _ = answer(knownAnswer{rule: ResourceMissing, name: "GPU node advertises 0 GPUs", source: "staged",
	raises: true, node: "node-2", evidence: `nvidia.com/gpu: 0 \(expected from node label nvidia.com/gpu.present=true`,
	state: func(*testing.T) State {
		s := healthy()
		s.Nodes[1].Status.Allocatable["nvidia.com/gpu"] = resource.MustParse("0")
		return s
	}})

var _ = answer(knownAnswer{rule: ResourceMissing, name: "explicit resources flag", source: "staged",
	raises: true, node: "node-1", evidence: `nvidia.com/hostdev: missing \(expected from the resources flag`,
	state: func(*testing.T) State {
		s := healthy()
		s.Resources = []string{"nvidia.com/hostdev"}
		return s
	}})

var _ = answer(knownAnswer{rule: ResourceMissing, name: "control-plane and CPU nodes owe nothing by default", source: "staged", clean: true,
	state: func(*testing.T) State {
		s := healthy()
		s.Nodes = append(s.Nodes, cpuNode("cp-1"), cpuNode("cpu-7"))
		s.Hosts["cp-1"], s.Hosts["cpu-7"] = HostFacts{IO: &PSIAverages{}}, HostFacts{IO: &PSIAverages{}}
		return s
	}})

var _ = answer(knownAnswer{rule: ResourceMissing, name: "config resource whose selectors match no NIC of this node (it advertises another)", source: "staged",
	clean: true,
	state: func(*testing.T) State { return healthy() }, // the config lists rdma_shared_device_b; no node has it
})

// --- ports ------------------------------------------------------------------

// ibstatPortsDown turns ibstat blocks into the host probe's PortsDown lines
// (sysfs "N: NAME" form), so real ibstat outputs can drive the rule.
func ibstatPortsDown(text string) []string {
	states := map[string]string{"Down": "1: DOWN", "Initializing": "2: INIT", "Armed": "3: ARMED", "Active": "4: ACTIVE"}
	phys := map[string]string{"Sleep": "1: Sleep", "Polling": "2: Polling", "Disabled": "3: Disabled", "LinkUp": "5: LinkUp"}
	var out []string
	ca, port, state := "", "", ""
	for _, l := range strings.Split(text, "\n") {
		l = strings.TrimSpace(l)
		switch {
		case strings.HasPrefix(l, "CA '"):
			ca = strings.Trim(strings.TrimPrefix(l, "CA "), "'")
		case strings.HasPrefix(l, "Port ") && strings.HasSuffix(l, ":"):
			port = strings.TrimSuffix(strings.TrimPrefix(l, "Port "), ":")
		case strings.HasPrefix(l, "State:"):
			state = states[strings.TrimSpace(strings.TrimPrefix(l, "State:"))]
		case strings.HasPrefix(l, "Physical state:"):
			if state != "4: ACTIVE" {
				out = append(out, fmt.Sprintf("%s/%s: %s (%s)", ca, port, state, phys[strings.TrimSpace(strings.TrimPrefix(l, "Physical state:"))]))
			}
		}
	}
	return out
}

var _ = answer(knownAnswer{rule: PortDown, name: "ibstat: Down / Polling", source: "realworld/ibstat-port-down-polling.txt",
	raises: true, node: "node-1", evidence: `mlx5_10/1: 1: DOWN \(2: Polling\)`,
	state: func(t *testing.T) State {
		s := healthy()
		s.host("node-1", func(h *HostFacts) { h.PortsDown = ibstatPortsDown(realWorld(t, "ibstat-port-down-polling.txt")) })
		return s
	}})

var _ = answer(knownAnswer{rule: PortDown, name: "ibstat: Down / Disabled", source: "realworld/ibstat-port-down-disabled.txt",
	raises: true, node: "node-2", evidence: `: 1: DOWN \(3: Disabled\)`,
	state: func(t *testing.T) State {
		s := healthy()
		s.host("node-2", func(h *HostFacts) { h.PortsDown = ibstatPortsDown(realWorld(t, "ibstat-port-down-disabled.txt")) })
		return s
	}})

var _ = answer(knownAnswer{rule: PortDown, name: "disabled port declared unused", source: "realworld/ibstat-port-down-disabled.txt",
	clean: true,
	state: func(t *testing.T) State {
		s := healthy()
		down := ibstatPortsDown(realWorld(t, "ibstat-port-down-disabled.txt"))
		s.host("node-2", func(h *HostFacts) { h.PortsDown = down })
		for _, p := range down {
			id, _, _ := strings.Cut(p, ":")
			s.UnusedPorts = append(s.UnusedPorts, "node-2:"+id)
		}
		return s
	}})

var _ = answer(knownAnswer{rule: PortDown, name: "port state unreadable is unknown, not down", source: "staged",
	clean: true,
	state: func(*testing.T) State {
		s := healthy()
		s.host("node-1", func(h *HostFacts) { h.PortsUnknown = []string{"mlx5_0/1"} })
		return s
	}})

// sanity for the glue above: ibstat's Active ports never count.
func TestIbstatGlue(t *testing.T) {
	got := ibstatPortsDown("CA 'mlx5_0'\n\tPort 1:\n\t\tState: Active\n\t\tPhysical state: LinkUp\nCA 'mlx5_1'\n\tPort 1:\n\t\tState: Down\n\t\tPhysical state: Polling\n")
	if strings.Join(got, ",") != "mlx5_1/1: 1: DOWN (2: Polling)" {
		t.Fatalf("%q", got)
	}
}

// rdma-device-missing: the host probe is the only witness of a node whose
// RDMA devices never registered (a driver that loaded without creating
// them, or no driver at all); ibstatus then fails as in the excerpt.
func noRDMADevice(h *HostFacts) { h.RDMARead, h.RDMAClassPresent, h.RDMADevices = true, true, nil }

var _ = answer(knownAnswer{rule: RDMADeviceMissing, name: "ibstatus: sys files not found (class empty)", source: "realworld/ibstatus-no-sys-files.txt",
	raises: true, node: "node-1", evidence: `no RDMA device under /sys/class/infiniband`,
	state: func(t *testing.T) State {
		if !strings.Contains(realWorld(t, "ibstatus-no-sys-files.txt"), "sys files not found (/sys/class/infiniband/*/ports)") {
			t.Fatal("excerpt changed")
		}
		s := healthy()
		s.host("node-1", noRDMADevice)
		return s
	}})

var _ = answer(knownAnswer{rule: RDMADeviceMissing, name: "no /sys/class/infiniband at all (ib_core not loaded)", source: "staged",
	raises: true, node: "node-2", evidence: `/sys/class/infiniband is absent`,
	state: func(*testing.T) State {
		s := healthy()
		s.host("node-2", func(h *HostFacts) { h.RDMARead, h.RDMAClassPresent, h.RDMADevices = true, false, nil })
		return s
	}})

var _ = answer(knownAnswer{rule: RDMADeviceMissing, name: "devices present", source: "staged", clean: true,
	state: func(*testing.T) State {
		s := healthy()
		s.host("node-1", func(h *HostFacts) {
			h.RDMARead, h.RDMAClassPresent, h.RDMADevices = true, true, []string{"mlx5_0", "mlx5_1"}
		})
		return s
	}})

var _ = answer(knownAnswer{rule: RDMADeviceMissing, name: "a CPU node without RDMA hardware", source: "staged", clean: true,
	state: func(*testing.T) State {
		s := healthy()
		cpu := rdmaNode("cpu-7")
		cpu.Labels = map[string]string{}
		s.Nodes = append(s.Nodes, cpu)
		s.Hosts["cpu-7"] = HostFacts{RDMARead: true, IO: &PSIAverages{}}
		return s
	}})

var _ = answer(knownAnswer{rule: RDMADeviceMissing, name: "the MOFED driver pod is not Ready (its own finding names the cause)", source: "staged",
	state: func(*testing.T) State {
		s := healthy()
		s.replacePod(crashing(mofedPod("node-1"), 5, t0.Add(-time.Minute)))
		s.host("node-1", noRDMADevice)
		return s
	}})

// A MOFED pod Pending with no node yet (no DaemonSet affinity
// naming one) is kept: attributed to the node its scheduler message names,
// else reported cluster-wide as a failure carrying that message.
func unplacedMOFED(msg string) State {
	s := healthy()
	p := mofedPod("node-x")
	p.Name = "mofed-ubuntu22.04-ds-unplaced"
	p.Spec.NodeName, p.Spec.Affinity = "", nil
	p.Status.Phase = corev1.PodPending
	p.Status.ContainerStatuses = nil
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable", Message: msg}}
	s.Pods = append(s.Pods, p)
	return s
}

var _ = answer(knownAnswer{rule: MOFEDNotReady, name: "Pending with no node, the scheduler's message names none: cluster-wide", source: "realworld/scheduler-untolerated-taint-messages.txt",
	raises: true, node: "*", evidence: `untolerated taint`,
	state: func(t *testing.T) State {
		msg := strings.TrimSpace(strings.SplitN(realWorld(t, "scheduler-untolerated-taint-messages.txt"), "\n", 2)[0])
		if !strings.Contains(msg, "untolerated taint") {
			t.Fatalf("excerpt's first line: %q", msg)
		}
		return unplacedMOFED(msg)
	}})

var _ = answer(knownAnswer{rule: MOFEDNotReady, name: "Pending with no node, the scheduler's message names node-2", source: "staged",
	raises: true, node: "node-2", evidence: `Insufficient memory`,
	state: func(*testing.T) State {
		return unplacedMOFED(`0/3 nodes are available: 1 node(s) were unschedulable, node "node-2": Insufficient memory. preemption: 0/3 nodes are available`)
	}})
