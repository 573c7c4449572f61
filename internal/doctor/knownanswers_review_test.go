package doctor

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Known answers from the adversarial review against public sources.

var _ = answer(knownAnswer{rule: PeermemRace, name: "host MOFED, policy without ofedDriver, GPUDirect healthy, /run/mellanox/drivers created by the GPU driver DaemonSet",
	source: "realworld/gpu-driver-ds-run-mellanox-drivers-hostpath.txt", clean: true,
	state: func(*testing.T) State { return hostMOFEDWithPolicy() }})

var _ = answer(knownAnswer{rule: PeermemMismatch, name: "host MOFED, policy without ofedDriver, peermem EINVAL", source: "realworld/peermem-ctr-invalid-argument-symbol-mismatch.txt (log lines)",
	raises: true, node: "node-2", evidence: `no MOFED pod, no spec.ofedDriver`,
	state: func(t *testing.T) State {
		s := hostMOFEDWithPolicy()
		p := nvidiaDriverPod("node-2")
		p.Status.ContainerStatuses[1].Ready = false
		p.Status.ContainerStatuses[1].State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}
		p.Status.ContainerStatuses[1].LastTerminationState.Terminated = &corev1.ContainerStateTerminated{ExitCode: 1, FinishedAt: metav1.NewTime(t0)}
		p.Status.Conditions[0].Status = corev1.ConditionFalse
		s.replacePod(p)
		s.log(p, "nvidia-peermem-ctr", realWorldGrep(t, "peermem-ctr-invalid-argument-symbol-mismatch.txt", `^(modprobe|failed|DRIVER)`))
		return s
	}})

var _ = answer(knownAnswer{rule: PeermemNotRegistered, name: "host MOFED, peermem loaded, nv_mem missing", source: "realworld/memory-peers-sysfs-nv-mem.txt",
	raises: true, node: "node-1", evidence: `no registered client`,
	state: func(*testing.T) State {
		s := hostMOFEDWithPolicy()
		s.host("node-1", func(h *HostFacts) { h.MemoryPeerClients = nil })
		return s
	}})

var gpuTaint = corev1.Taint{Key: "nvidia.com/gpu", Value: "present", Effect: corev1.TaintEffectNoSchedule}

var _ = answer(knownAnswer{rule: UntoleratedTaint, name: "nvidia.com/gpu:NoSchedule on a GPU pool, MOFED crash-looping on storage modules", source: "realworld/network-operator-builtin-gpu-toleration.txt",
	state: func(t *testing.T) State {
		s := tainted(storageCrash(t, realWorld(t, "mofed-storage-modules-loaded-legacy-bash.txt")), 0, gpuTaint)
		s.Nodes[0].Labels[MOFEDWaitLabel] = "true"
		return s
	}})

var _ = answer(knownAnswer{rule: UntoleratedTaint, name: "custom NoSchedule taint added after the MOFED pod was placed (it crash-loops for another reason)", source: "staged",
	state: func(t *testing.T) State {
		s := tainted(storageCrash(t, realWorld(t, "mofed-storage-modules-loaded-go-entrypoint.txt")), 0, accountTaint)
		s.Nodes[0].Labels[MOFEDWaitLabel] = "true"
		return s
	}})

var _ = answer(knownAnswer{rule: ResourceMissing, name: "config resource registered empty (0) on a node whose NICs its selectors miss", source: "realworld/rdma-shared-dp-empty-resource-server.txt",
	clean: true,
	state: func(*testing.T) State {
		s := healthy()
		s.Nodes[0].Status.Allocatable["rdma/rdma_shared_device_b"] = resource.MustParse("0")
		return s
	}})

var _ = answer(knownAnswer{rule: ResourceMissing, name: "every config resource 0: the plugin found nothing", source: "realworld/rdma-shared-dp-empty-resource-server.txt",
	raises: true, node: "node-1", evidence: `rdma/rdma_shared_device_a: 0 (.|\n)*none of the device-plugin config's resources above 0`,
	state: func(*testing.T) State {
		s := healthy()
		s.Nodes[0].Status.Allocatable["rdma/rdma_shared_device_a"] = resource.MustParse("0")
		return s
	}})

var _ = answer(knownAnswer{rule: MOFEDCrashLoop, name: "Ready MOFED pod with an OOM kill three days ago", source: "staged (gpu-operator#2868 comment: undersized RAM limits)",
	clean: true,
	state: func(*testing.T) State {
		s := healthy()
		p := mofedPod("node-1")
		p.Status.ContainerStatuses[0].RestartCount = 1
		p.Status.ContainerStatuses[0].LastTerminationState.Terminated = &corev1.ContainerStateTerminated{ExitCode: 137, Reason: "OOMKilled",
			FinishedAt: metav1.NewTime(t0.Add(-72 * time.Hour))}
		s.replacePod(p)
		return s
	}})

func blockedByPeermem(t *testing.T) State {
	s := healthy()
	p := crashing(mofedPod("node-2"), 9, t0)
	s.replacePod(p)
	s.log(p, "mofed-container", realWorld(t, "mofed-reload-blocked-by-peermem.txt"))
	s.Nodes[1].Labels[MOFEDWaitLabel] = "true"
	s.host("node-2", func(h *HostFacts) { h.DriverReady, h.DriverReadyAt = false, nil })
	return s
}

var _ = answer(knownAnswer{rule: MOFEDBlockedByPeermem, name: "DOCA container aborts: nvidia_peermem is used", source: "realworld/mofed-reload-blocked-by-peermem.txt",
	raises: true, node: "node-2", evidence: `Module nvidia_peermem is used and will FAIL driver reload`,
	state: blockedByPeermem})

var _ = answer(knownAnswer{rule: MOFEDBlockedByPeermem, name: "MOFED crash-looping on storage modules", source: "realworld/mofed-storage-modules-loaded-legacy-bash.txt",
	state: func(t *testing.T) State {
		return storageCrash(t, realWorld(t, "mofed-storage-modules-loaded-legacy-bash.txt"))
	}})

var _ = answer(knownAnswer{rule: PeermemRace, name: "MOFED restarting, blocked by peermem: not the ordering race", source: "realworld/mofed-reload-blocked-by-peermem.txt",
	state: blockedByPeermem})

var _ = answer(knownAnswer{rule: MOFEDCrashLoop, name: "crash explained by peermem in use", source: "realworld/mofed-reload-blocked-by-peermem.txt",
	state: blockedByPeermem})

var _ = answer(knownAnswer{rule: GPUDriverWaitsForMOFED, name: "nvidia-peermem-ctr looping 'waiting for mellanox ofed'", source: "realworld/peermem-ctr-source-strings.txt",
	raises: true, node: "node-1", evidence: `nvidia-peermem-ctr log: waiting for mellanox ofed and nvidia drivers to be installed`,
	state: func(t *testing.T) State {
		s := healthy()
		p := driverPod("node-1")
		p.Status.ContainerStatuses[1].Ready = false
		p.Status.Conditions[0].Status = corev1.ConditionFalse
		s.replacePod(p)
		s.log(p, "nvidia-peermem-ctr", realWorldGrep(t, "peermem-ctr-source-strings.txt", `^waiting for mellanox ofed`))
		m := mofedPod("node-1")
		m.Status.ContainerStatuses[0].Ready = false
		m.Status.Conditions[0].Status = corev1.ConditionFalse
		s.replacePod(m)
		s.host("node-1", func(h *HostFacts) { h.DriverReady, h.DriverReadyAt = false, nil })
		return s
	}})
