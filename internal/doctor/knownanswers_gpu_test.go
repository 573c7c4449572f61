package doctor

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// GPU Operator driver pods and GPUDirect RDMA (seeds 001/003 and field reports).

// nvidiaDriverPod is a driver pod created through the NVIDIADriver CRD:
// another name prefix, the same component label
// (realworld/nvidiadriver-crd-driver-daemonset-naming.txt).
func nvidiaDriverPod(node string) corev1.Pod {
	p := pod(gpuNS, "nvidia-gpu-driver-ubuntu22.04-7c6d7bd86b-"+node, node, "nvidia-driver-ctr", "nvidia-peermem-ctr")
	p.Labels = map[string]string{"app": "nvidia-gpu-driver-ubuntu22.04-7c6d7bd86b", "app.kubernetes.io/component": "nvidia-driver"}
	return p
}

// peermemCrash: the driver pod's nvidia-peermem-ctr crash-loops on the
// insert error at failedAt; .driver-ready was (re)created at readyAt (nil:
// absent).
func peermemCrash(t *testing.T, p corev1.Pod, failedAt time.Time, readyAt *time.Time) State {
	s := healthy()
	p.Status.ContainerStatuses[1].Ready, p.Status.ContainerStatuses[1].RestartCount = false, 64
	p.Status.ContainerStatuses[1].State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}
	p.Status.ContainerStatuses[1].LastTerminationState.Terminated = &corev1.ContainerStateTerminated{ExitCode: 1, FinishedAt: metav1.NewTime(failedAt)}
	p.Status.Conditions[0].Status = corev1.ConditionFalse
	s.replacePod(p)
	s.log(p, "nvidia-peermem-ctr", realWorld(t, "peermem-ctr-invalid-argument-symbol-mismatch.txt"))
	s.host(p.Spec.NodeName, func(h *HostFacts) {
		h.PeermemLoaded, h.MemoryPeerClients = false, nil
		h.DriverReady, h.DriverReadyAt = readyAt != nil, readyAt
	})
	return s
}

func at(t time.Time) *time.Time { return &t }

var _ = answer(knownAnswer{rule: PeermemRace, name: "nvidia-peermem-ctr of an NVIDIADriver pod, .driver-ready absent", source: "realworld/peermem-ctr-invalid-argument-symbol-mismatch.txt (log lines)",
	raises: true, node: "node-2", evidence: `could not insert 'nvidia_peermem': Invalid argument(.|\n)*\.driver-ready absent`,
	state: func(t *testing.T) State { return peermemCrash(t, nvidiaDriverPod("node-2"), t0, nil) }})

var _ = answer(knownAnswer{rule: PeermemRace, name: "seed 001: nvidia-driver-ctr, .driver-ready created after the failure", source: "staged (seed 001)",
	raises: true, node: "node-1", evidence: `created at 2026-09-08T17:17:23Z, after the failure at 2026-09-08T17:16:02Z`,
	state: func(t *testing.T) State {
		p := driverPod("node-1")
		s := peermemCrash(t, p, t0, at(t0.Add(81*time.Second)))
		s.log(p, "nvidia-peermem-ctr", "")
		s.log(p, "nvidia-driver-ctr", "Loading NVIDIA driver kernel modules...\nmodprobe: ERROR: could not insert 'nvidia_peermem': Invalid argument")
		return s
	}})

var _ = answer(knownAnswer{rule: PeermemRace, name: "host only: peermem loaded, no .driver-ready", source: "staged (seed 003)",
	raises: true, node: "node-1", evidence: `host: nvidia_peermem loaded`,
	state: func(*testing.T) State {
		s := healthy()
		s.host("node-1", func(h *HostFacts) { h.DriverReady, h.DriverReadyAt = false, nil })
		return s
	}})

var _ = answer(knownAnswer{rule: PeermemRace, name: "MOFED ready an hour before the insert failed", source: "realworld/peermem-ctr-invalid-argument-symbol-mismatch.txt",
	state: func(t *testing.T) State {
		return peermemCrash(t, nvidiaDriverPod("node-2"), t0, at(t0.Add(-time.Hour)))
	}})

var _ = answer(knownAnswer{rule: PeermemMismatch, name: "insert fails although .driver-ready predates it (ABI mismatch after a MOFED change)", source: "realworld/peermem-ctr-invalid-argument-symbol-mismatch.txt",
	raises: true, node: "node-2", evidence: `before the failure at 2026-09-08T17:16:02Z: MOFED was ready first`,
	state: func(t *testing.T) State {
		return peermemCrash(t, nvidiaDriverPod("node-2"), t0, at(t0.Add(-time.Hour)))
	}})

var _ = answer(knownAnswer{rule: PeermemMismatch, name: "host-installed MOFED: no container to race with", source: "realworld/nv-peer-mem-unknown-symbol-ofed-reinstalled.txt",
	raises: true, node: "node-1", evidence: `not run by the Network Operator`,
	state: func(t *testing.T) State {
		s := peermemCrash(t, driverPod("node-1"), t0, nil)
		s.log(driverPod("node-1"), "nvidia-peermem-ctr", realWorld(t, "nv-peer-mem-unknown-symbol-ofed-reinstalled.txt")+
			"\nmodprobe: ERROR: could not insert 'nvidia_peermem': Unknown symbol in module, or unknown parameter (see dmesg)")
		s.Pods = s.Pods[2:]
		s.NoNetworkOperator, s.Policy = true, nil
		return s
	}})

var _ = answer(knownAnswer{rule: PeermemMismatch, name: "the race: .driver-ready absent", source: "realworld/peermem-ctr-invalid-argument-symbol-mismatch.txt (log lines)",
	state: func(t *testing.T) State { return peermemCrash(t, nvidiaDriverPod("node-2"), t0, nil) }})

var _ = answer(knownAnswer{rule: PeermemNotRegistered, name: "nvidia_peermem loaded, memory_peers empty", source: "realworld/memory-peers-sysfs-nv-mem.txt",
	raises: true, node: "node-2", evidence: `memory_peers has no registered client`,
	state: func(*testing.T) State {
		s := healthy()
		s.host("node-2", func(h *HostFacts) { h.MemoryPeerClients = nil })
		return s
	}})

var _ = answer(knownAnswer{rule: PeermemNotRegistered, name: "nv_mem registered", source: "realworld/memory-peers-sysfs-nv-mem.txt", clean: true,
	state: func(*testing.T) State { return healthy() }})

var _ = answer(knownAnswer{rule: PeermemNotRegistered, name: "peermem not loaded (no GPUDirect RDMA)", source: "staged", clean: true,
	state: func(*testing.T) State {
		s := healthy()
		for _, n := range []string{"node-1", "node-2"} {
			s.host(n, func(h *HostFacts) { h.PeermemLoaded, h.MemoryPeerClients = false, nil })
		}
		return s
	}})

// waitingDriver: the driver pod sits in the init container that waits for
// MOFED, logging what it logs there.
func waitingDriver(t *testing.T, p corev1.Pod, done []string, initName, log string) State {
	s := healthy()
	p = inInit(p, done, initName)
	s.replacePod(p)
	s.log(p, initName, log)
	s.host(p.Spec.NodeName, func(h *HostFacts) {
		h.DriverReady, h.DriverReadyAt, h.PeermemLoaded, h.MemoryPeerClients = false, nil, false, nil
	})
	s.replacePod(crashing(mofedPod(p.Spec.NodeName), 3, t0))
	return s
}

var _ = answer(knownAnswer{rule: GPUDriverWaitsForMOFED, name: "mofed-validation init container (GPU Operator 22.9)", source: "realworld/mofed-validation-waiting-v22.9.txt",
	raises: true, node: "node-2", evidence: `Init:0/1 \(waiting in init container mofed-validation\)(.|\n)*statx '/run/mellanox/drivers/.driver-ready'`,
	state: func(t *testing.T) State {
		return waitingDriver(t, driverPod("node-2"), nil, "mofed-validation",
			realWorldGrep(t, "mofed-validation-waiting-v22.9.txt", `(stdout|stderr) F `))
	}})

var _ = answer(knownAnswer{rule: GPUDriverWaitsForMOFED, name: "k8s-driver-manager waiting for MOFED (NVIDIADriver pod)", source: "realworld/driver-manager-waiting-for-mofed.txt",
	raises: true, node: "node-1", evidence: `k8s-driver-manager log: .*Waiting for MOFED to be installed`,
	state: func(t *testing.T) State {
		return waitingDriver(t, nvidiaDriverPod("node-1"), nil, "k8s-driver-manager",
			realWorldGrep(t, "driver-manager-waiting-for-mofed.txt", `^time=`))
	}})

var _ = answer(knownAnswer{rule: GPUDriverWaitsForMOFED, name: "k8s-driver-manager draining GPU pods", source: "staged",
	state: func(*testing.T) State {
		s := healthy()
		p := inInit(driverPod("node-1"), nil, "k8s-driver-manager")
		s.replacePod(p)
		s.log(p, "k8s-driver-manager", `time="2026-08-19T12:00:00Z" level=info msg=Draining node nvidia-gpu-node-1 of any GPU pods...`)
		return s
	}})

var _ = answer(knownAnswer{rule: GPUDriverNotReady, name: "nvidia-peermem-ctr: Module nvidia-peermem not found (userspace-only install)", source: "realworld/peermem-ctr-module-not-found-userspace-only.txt",
	raises: true, node: "node-1", evidence: `container nvidia-peermem-ctr not ready, log tail: .*Module nvidia-peermem not found`,
	state: func(t *testing.T) State {
		s := healthy()
		p := driverPod("node-1")
		p.Status.ContainerStatuses[1].Ready = false
		p.Status.ContainerStatuses[1].State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}
		p.Status.Conditions[0].Status = corev1.ConditionFalse
		s.replacePod(p)
		s.log(p, "nvidia-peermem-ctr", "modprobe: FATAL: Module nvidia-peermem not found in directory /lib/modules/6.8.0-1059-azure")
		return s
	}})

var _ = answer(knownAnswer{rule: GPUDriverNotReady, name: "peermem insert failure (named by the peermem rules)", source: "realworld/peermem-ctr-invalid-argument-symbol-mismatch.txt",
	state: func(t *testing.T) State { return peermemCrash(t, nvidiaDriverPod("node-2"), t0, nil) }})

var _ = answer(knownAnswer{rule: GPUOperatorCascade, name: "seed 001: toolkit in Init behind a crash-looping driver", source: "staged (seed 001)",
	raises: true, node: "node-2", evidence: `nvidia-container-toolkit-daemonset-sxfkr: Init:0/1`,
	state: func(t *testing.T) State {
		s := peermemCrash(t, driverPod("node-2"), t0, nil)
		s.replacePod(inInit(pod(gpuNS, "nvidia-container-toolkit-daemonset-sxfkr", "node-2", "nvidia-container-toolkit-ctr"), nil, "driver-validation"))
		return s
	}})

var _ = answer(knownAnswer{rule: GPUOperatorCascade, name: "pod in Init while the driver is Ready", source: "staged",
	state: func(*testing.T) State {
		s := healthy()
		s.replacePod(inInit(pod(gpuNS, "nvidia-container-toolkit-daemonset-sxfkr", "node-2", "nvidia-container-toolkit-ctr"), nil, "driver-validation"))
		return s
	}})

// --- I/O pressure (seed 004) -------------------------------------------------

func pressure(avgs map[string]PSIAverages) State {
	s := healthy()
	s.Nodes = nil
	s.Pods = nil
	s.Hosts = map[string]HostFacts{}
	for name, a := range avgs {
		s.Nodes = append(s.Nodes, rdmaNode(name))
		s.Pods = append(s.Pods, mofedPod(name))
		h := healthyHost()
		h.IO = &PSIAverages{a.Avg10, a.Avg60, a.Avg300}
		s.Hosts[name] = h
	}
	return s
}

var _ = answer(knownAnswer{rule: IOPressureOutlier, name: "seed 004: one VM sustained, peers clean", source: "staged (seed 004 numbers)",
	raises: true, node: "vm-3", evidence: `avg300 = 41.0%(.|\n)*vm-3=46.0/44.0/41.0`,
	state: func(*testing.T) State {
		return pressure(map[string]PSIAverages{"vm-1": {0.8, 0.6, 0.5}, "vm-2": {1.2, 1.0, 0.9}, "vm-3": {46, 44, 41}, "vm-4": {0.5, 0.4, 0.4}})
	}})

var _ = answer(knownAnswer{rule: IOPressureOutlier, name: "sustained outlier quiet for the last 10 s", source: "staged",
	raises: true, node: "vm-3", evidence: `avg60 = 38.0%`,
	state: func(*testing.T) State {
		return pressure(map[string]PSIAverages{"vm-1": {0.8, 0.6, 0.5}, "vm-2": {1.2, 1.0, 0.9}, "vm-3": {0.3, 38, 40}, "vm-4": {0.5, 0.4, 0.4}})
	}})

var _ = answer(knownAnswer{rule: IOPressureOutlier, name: "a 10 s burst: avg10 high, avg60/avg300 like the peers'", source: "staged",
	clean: true,
	state: func(*testing.T) State {
		return pressure(map[string]PSIAverages{"vm-1": {0.8, 0.6, 0.5}, "vm-2": {1.2, 1.0, 0.9}, "vm-3": {85, 14, 3.1}, "vm-4": {0.5, 0.4, 0.4}})
	}})

var _ = answer(knownAnswer{rule: IOPressureOutlier, name: "busy cluster: median 40 %, one node at 46 %", source: "staged",
	clean: true,
	state: func(*testing.T) State {
		return pressure(map[string]PSIAverages{"vm-1": {40, 40, 40}, "vm-2": {40, 40, 40}, "vm-3": {47, 46, 46}, "vm-4": {40, 40, 40}})
	}})

var _ = answer(knownAnswer{rule: IOPressureOutlier, name: "idle cluster", source: "realworld/proc-pressure-io.txt", clean: true,
	state: func(*testing.T) State {
		return pressure(map[string]PSIAverages{"vm-1": {0, 0, 0}, "vm-2": {0.1, 0, 0}, "vm-3": {2, 1.5, 1.2}, "vm-4": {0, 0, 0}})
	}})

// A finding states only the order it observed. A marker
// without a time, or a failure without one, leaves the order unknown: the
// evidence says so and what would tell, never "created after the failure".
var _ = answer(knownAnswer{rule: PeermemUndecided, name: ".driver-ready present, its time unknown", source: "realworld/peermem-ctr-invalid-argument-symbol-mismatch.txt",
	raises: true, node: "node-2", evidence: `time is unknown(.|\n)*either(.|\n)*peermem-before-mofed(.|\n)*peermem-mofed-mismatch(.|\n)*the \.driver-ready time would tell them apart`,
	state: func(t *testing.T) State {
		s := peermemCrash(t, nvidiaDriverPod("node-2"), t0, nil)
		s.host("node-2", func(h *HostFacts) { h.DriverReady, h.DriverReadyAt = true, nil })
		return s
	}})

var _ = answer(knownAnswer{rule: PeermemUndecided, name: "the failure's time unknown (no finishedAt)", source: "realworld/peermem-ctr-invalid-argument-symbol-mismatch.txt",
	raises: true, node: "node-2", evidence: `failure's time is unknown(.|\n)*either(.|\n)*would tell them apart`,
	state: func(t *testing.T) State { return peermemCrash(t, nvidiaDriverPod("node-2"), time.Time{}, at(t0)) }})

var _ = answer(knownAnswer{rule: PeermemRace, name: ".driver-ready present, its time unknown: not claimed", source: "realworld/peermem-ctr-invalid-argument-symbol-mismatch.txt",
	state: func(t *testing.T) State {
		s := peermemCrash(t, nvidiaDriverPod("node-2"), t0, nil)
		s.host("node-2", func(h *HostFacts) { h.DriverReady, h.DriverReadyAt = true, nil })
		return s
	}})

var _ = answer(knownAnswer{rule: PeermemMismatch, name: "the failure's time unknown: not claimed", source: "realworld/peermem-ctr-invalid-argument-symbol-mismatch.txt",
	state: func(t *testing.T) State { return peermemCrash(t, nvidiaDriverPod("node-2"), time.Time{}, at(t0)) }})

// The API-only doctor has no host facts: the order is unknown on every
// node, and its finding says so under the neutral id.
var _ = answer(knownAnswer{rule: PeermemUndecided, name: "API-only doctor: no host facts", source: "realworld/peermem-ctr-invalid-argument-symbol-mismatch.txt",
	raises: true, node: "node-2", evidence: `host facts missing(.|\n)*either(.|\n)*the \.driver-ready time would tell them apart`,
	state: func(t *testing.T) State {
		s := peermemCrash(t, nvidiaDriverPod("node-2"), t0, nil)
		s.Hosts, s.APIOnly = nil, true
		return s
	}})

var _ = answer(knownAnswer{rule: PeermemUndecided, name: ".driver-ready absent: the race is named", source: "realworld/peermem-ctr-invalid-argument-symbol-mismatch.txt (log lines)",
	state: func(t *testing.T) State { return peermemCrash(t, nvidiaDriverPod("node-2"), t0, nil) }})

var _ = answer(knownAnswer{rule: PeermemUndecided, name: "both times known, marker first: the mismatch is named", source: "realworld/peermem-ctr-invalid-argument-symbol-mismatch.txt",
	state: func(t *testing.T) State {
		return peermemCrash(t, nvidiaDriverPod("node-2"), t0, at(t0.Add(-time.Hour)))
	}})

// No evidence line of a finding may claim an order its facts lack.
func TestNoUnobservedOrderIsStated(t *testing.T) {
	for _, s := range []State{
		func() State {
			s := peermemCrash(t, nvidiaDriverPod("node-2"), t0, nil)
			s.host("node-2", func(h *HostFacts) { h.DriverReady, h.DriverReadyAt = true, nil })
			return s
		}(),
		peermemCrash(t, nvidiaDriverPod("node-2"), time.Time{}, at(t0)),
	} {
		for _, f := range Diagnose(s) {
			for _, e := range f.Evidence {
				if strings.Contains(e, "created after the failure") || strings.Contains(e, "was ready first") {
					t.Errorf("%s states an order it did not observe: %q", f.ID, e)
				}
			}
		}
	}
}

// One cause gives one finding per pod. A generic "not Ready"
// finding is not raised beside the specific finding that names why the
// same node's pod is not Ready.
func TestGenericFindingYieldsToTheSpecificOne(t *testing.T) {
	s := peermemCrash(t, nvidiaDriverPod("node-2"), t0, nil)
	// peermem loaded with no client: the specific host finding.
	s.host("node-2", func(h *HostFacts) {
		h.PeermemLoaded, h.DriverReady, h.DriverReadyAt = true, true, at(t0.Add(-time.Hour))
	})
	s.log(nvidiaDriverPod("node-2"), "nvidia-peermem-ctr", "waiting")
	ids := map[string]bool{}
	for _, f := range Diagnose(s) {
		if f.Node == "node-2" {
			ids[f.ID] = true
		}
	}
	if !ids[PeermemNotRegistered] {
		t.Fatalf("the specific finding is missing: %v", ids)
	}
	if ids[GPUDriverNotReady] {
		t.Fatalf("the generic %s is raised beside %s on the same pod: %v", GPUDriverNotReady, PeermemNotRegistered, ids)
	}
}

// The generic finding that yields leaves its evidence with the specific
// one: one finding per pod, nothing seen lost.
func TestYieldedEvidenceIsFoldedIn(t *testing.T) {
	fs := yieldToSpecific([]Finding{
		{ID: GPUDriverNotReady, Node: "node-2", Evidence: []string{"GPU driver pod x: CrashLoopBackOff", "container nvidia-peermem-ctr not ready, log tail: waiting"}},
		{ID: PeermemUndecided, Node: "node-2", Evidence: []string{"GPU driver pod x: CrashLoopBackOff", "log: could not insert"}},
		{ID: GPUDriverNotReady, Node: "node-1", Evidence: []string{"GPU driver pod y: Pending"}},
	})
	if len(fs) != 2 || fs[0].ID != PeermemUndecided || fs[1].ID != GPUDriverNotReady || fs[1].Node != "node-1" {
		t.Fatalf("%v", ids(fs))
	}
	if got := strings.Join(fs[0].Evidence, " | "); got != "GPU driver pod x: CrashLoopBackOff | log: could not insert | container nvidia-peermem-ctr not ready, log tail: waiting" {
		t.Fatalf("folded evidence: %s", got)
	}
}

// A generic finding yields to the specific one on the same pod, its
// evidence folded in (one cause, one finding per pod).
func peermemLoadedNoClientDriverWaiting(t *testing.T) State {
	s := peermemCrash(t, nvidiaDriverPod("node-2"), t0, nil)
	s.host("node-2", func(h *HostFacts) {
		h.PeermemLoaded, h.DriverReady, h.DriverReadyAt = true, true, at(t0.Add(-time.Hour))
	})
	s.log(nvidiaDriverPod("node-2"), "nvidia-peermem-ctr", "waiting")
	return s
}

var _ = answer(knownAnswer{rule: PeermemNotRegistered, name: "driver pod not Ready, peermem without a client: the generic not-Ready evidence folded in", source: "staged",
	raises: true, node: "node-2", evidence: `memory_peers has no registered client(.|\n)*container nvidia-peermem-ctr not ready, log tail: waiting`,
	state: peermemLoadedNoClientDriverWaiting})

var _ = answer(knownAnswer{rule: GPUDriverNotReady, name: "the same pod's specific finding (peermem-not-registered) is raised: the generic yields", source: "staged",
	state: peermemLoadedNoClientDriverWaiting})
