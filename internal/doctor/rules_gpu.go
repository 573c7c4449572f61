package doctor

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"regexp"
	"strings"
	"time"
)

// Rules about the GPU Operator's driver pod and GPUDirect RDMA (peermem).

// peermemInsertFailed matches modprobe's refusal to load nvidia_peermem,
// whatever the errno text ("Invalid argument", "Unknown symbol in module").
var peermemInsertFailed = []*regexp.Regexp{regexp.MustCompile(`(?i)could not insert '?nvidia[_-]peermem'?`)}

// MOFEDValidationInit is the GPU driver pod's init container that waits for
// MOFED's .driver-ready when driver.rdma.enabled=true (GPU Operator up to
// 23.x); newer driver pods wait in k8s-driver-manager instead, logging
// "Waiting for MOFED to be installed" (testdata/realworld).
const MOFEDValidationInit = "mofed-validation"

var waitingForMOFED = []*regexp.Regexp{
	regexp.MustCompile(`(?i)waiting for mofed`),
	regexp.MustCompile(`(?i)waiting for mellanox ofed`),
	regexp.MustCompile(`(?i)stat .*/run/mellanox/drivers/\.driver-ready`),
}

// waitsForMOFED returns the driver pod's container that is waiting for
// MOFED, if any: the pending init container (mofed-validation, or
// k8s-driver-manager saying so), or a main container that is not Ready and
// says so (nvidia-peermem-ctr loops "waiting for mellanox ofed and nvidia
// drivers to be installed").
func (v *View) waitsForMOFED(p *corev1.Pod) string {
	if c := pendingInit(p); c != "" {
		if _, ok := firstMatch(v.ContainerLogs(p, c), waitingForMOFED); ok || c == MOFEDValidationInit {
			return c
		}
		return ""
	}
	for _, cs := range p.Status.ContainerStatuses {
		if _, ok := firstMatch(v.ContainerLogs(p, cs.Name), waitingForMOFED); ok && !cs.Ready {
			return cs.Name
		}
	}
	return ""
}

const (
	PeermemRace     = "peermem-before-mofed"
	PeermemMismatch = "peermem-mofed-mismatch"
	// PeermemUndecided: the insert failed and the evidence cannot order it
	// against .driver-ready, so neither the race nor the mismatch is claimed.
	PeermemUndecided       = "peermem-race-or-mismatch"
	PeermemNotRegistered   = "peermem-not-registered"
	GPUDriverWaitsForMOFED = "gpu-driver-waits-for-mofed"
	GPUOperatorCascade     = "gpu-operator-init-cascade"
)

// peermemFailure is a GPU driver pod on the node whose log shows the
// nvidia_peermem insert failing, with the line and when it failed.
type peermemFailure struct {
	evidence []string
	at       time.Time
}

func (v *View) peermemFailures(n *NodeView) []peermemFailure {
	var out []peermemFailure
	for _, p := range n.GPUDriver {
		if line, ok := firstMatch(v.Logs(p), peermemInsertFailed); ok {
			out = append(out, peermemFailure{evidence: []string{fmt.Sprintf("GPU driver pod %s/%s: %s", p.Namespace, p.Name, podState(p)), "log: " + line},
				at: lastFailure(p)})
		}
	}
	return out
}

// readyBefore reports whether MOFED's .driver-ready existed before t: then
// a peermem failure at t was not the ordering race.
func readyBefore(h *HostFacts, t time.Time) bool {
	return h != nil && h.DriverReady && h.DriverReadyAt != nil && !t.IsZero() && h.DriverReadyAt.Before(t)
}

// peermemVerdict splits an insert failure into the race (MOFED not ready
// when the GPU driver loaded peermem) and the mismatch (MOFED was ready, or
// is not a container at all, and the symbols still do not match).
func (v *View) peermemVerdict(n *NodeView, f peermemFailure) (string, []string) {
	ev := append([]string(nil), f.evidence...)
	h := n.Host
	switch {
	case readyBefore(h, f.at):
		return PeermemMismatch, append(ev, fmt.Sprintf("host: .driver-ready present since %s, before the failure at %s: MOFED was ready first",
			h.DriverReadyAt.UTC().Format(time.RFC3339), f.at.UTC().Format(time.RFC3339)))
	case h != nil && !v.ContainerMOFED(n), h == nil && v.NoNetworkOperator:
		return PeermemMismatch, append(ev, "MOFED is not run by the Network Operator on this node (no MOFED pod, no spec.ofedDriver in the policy): there is no driver container to race with")
	// The evidence cannot order the two events: the finding claims neither
	// cause, names both and what would tell them apart.
	case h == nil:
		return PeermemUndecided, append(ev, "host facts missing, so whether .driver-ready predates the failure is unknown: "+
			"either the GPU driver loaded nvidia_peermem before MOFED was ready ("+PeermemRace+") or MOFED was ready and the symbols do not match ("+PeermemMismatch+"); "+
			"the .driver-ready time would tell them apart: ls -l --time-style=full-iso /run/mellanox/drivers/.driver-ready on the node (or run the suite's doctor, whose host probe reads it): after the failure means "+PeermemRace+", before it "+PeermemMismatch)
	case !h.DriverReady:
		return PeermemRace, append(ev, "host: /run/mellanox/drivers/.driver-ready absent")
	case h.DriverReadyAt == nil:
		// Only the order of two observed times is stated as fact.
		return PeermemUndecided, append(ev, "host: .driver-ready is present but its time is unknown, so whether MOFED was ready before the failure is not known: "+
			"either the GPU driver loaded nvidia_peermem first ("+PeermemRace+") or the symbols do not match ("+PeermemMismatch+"); "+
			"the .driver-ready time would tell them apart (ls -l --time-style=full-iso /run/mellanox/drivers/.driver-ready on the node): after the failure means "+PeermemRace+", before it "+PeermemMismatch)
	case f.at.IsZero():
		return PeermemUndecided, append(ev, fmt.Sprintf("the failure's time is unknown (the container records no finishedAt), so its order against .driver-ready (%s) is not known: "+
			"either the GPU driver loaded nvidia_peermem first (%s) or the symbols do not match (%s); "+
			"the container's previous log timestamps would tell them apart (kubectl logs --previous --timestamps): a failure before .driver-ready means %s, after it %s",
			h.DriverReadyAt.UTC().Format(time.RFC3339), PeermemRace, PeermemMismatch, PeermemRace, PeermemMismatch))
	default:
		return PeermemRace, append(ev, fmt.Sprintf("host: .driver-ready was created at %s, after the failure at %s: MOFED became ready too late",
			h.DriverReadyAt.UTC().Format(time.RFC3339), f.at.UTC().Format(time.RFC3339)))
	}
}

func peermemRule(id string) func(v *View) []Hit {
	return func(v *View) []Hit {
		var out []Hit
		for _, n := range v.Nodes {
			for _, f := range v.peermemFailures(n) {
				if got, ev := v.peermemVerdict(n, f); got == id {
					out = append(out, hit(n.Name, ev...))
				}
			}
			// From the host alone: peermem loaded while a MOFED container
			// has not declared itself ready. Not while that container is
			// restarting: it removes .driver-ready at every start, and a
			// loaded peermem then blocks its reload (mofed-reload-blocked-by-peermem).
			if h := n.Host; id == PeermemRace && h != nil && h.PeermemLoaded && !h.DriverReady && v.ContainerMOFED(n) && !n.MOFEDRestarting() {
				out = append(out, hit(n.Name, "host: nvidia_peermem loaded", "host: /run/mellanox/drivers/.driver-ready absent"))
			}
		}
		return out
	}
}

var _ = register(Rule{ID: PeermemRace, Severity: Critical, Seed: "001/003",
	Cause:  "the GPU driver loaded nvidia_peermem before MOFED created /run/mellanox/drivers/.driver-ready (both operators start at once after a kernel upgrade): modprobe fails (\"could not insert 'nvidia_peermem': Invalid argument\") and the driver pod crash-loops",
	Fix:    "make the GPU Operator wait for MOFED: set driver.rdma.enabled=true with the Network Operator's MOFED (the driver then waits in mofed-validation for .driver-ready), or delete the GPU driver pod once .driver-ready exists so it restarts in order",
	Raises: "\"could not insert 'nvidia_peermem'\" in any container of a GPU driver pod (nvidia-driver-ctr, nvidia-peermem-ctr; ClusterPolicy or NVIDIADriver pods) while .driver-ready is absent or created after the failure; or the host probe sees nvidia_peermem loaded without .driver-ready on a MOFED-container node",
	Silent: []string{".driver-ready present before the failure (peermem-mofed-mismatch)",
		"the order of the failure and .driver-ready unknown: no host facts, the marker's time or the failure's time missing (peermem-race-or-mismatch)", "host-installed MOFED (no driver container to race with; a policy without spec.ofedDriver)",
		"/run/mellanox/drivers existing without .driver-ready (the GPU driver DaemonSet creates that directory on every GPU node)",
		"a MOFED pod restarting or crash-looping (it removes .driver-ready at every start)"},
	Eval: peermemRule(PeermemRace)})

var _ = register(Rule{ID: PeermemMismatch, Severity: Critical, Seed: "field",
	Cause:  "nvidia_peermem failed to load although MOFED was ready (or MOFED is installed on the host): its symbols do not match the loaded MOFED ib_core (the GPU driver's peermem was built against another MOFED version, or against the inbox RDMA stack)",
	Fix:    "check dmesg for \"disagrees about version of symbol\" / \"Unknown symbol ib_register_peer_memory_client\"; align the GPU driver and MOFED versions (GPU Operator / Network Operator compatibility matrix), with host MOFED set driver.rdma.useHostMofed=true, then delete the GPU driver pod",
	Raises: "the nvidia_peermem insert failure in a GPU driver pod's log, and .driver-ready existed before the failure or MOFED is not a Network Operator container on the node",
	Silent: []string{".driver-ready absent or newer than the failure (peermem-before-mofed)",
		"the order of the failure and .driver-ready unknown (peermem-race-or-mismatch)"},
	Eval: peermemRule(PeermemMismatch)})

var _ = register(Rule{ID: PeermemUndecided, Severity: Critical, Seed: "001/003",
	Cause: "nvidia_peermem failed to load (\"could not insert 'nvidia_peermem'\") and the evidence cannot tell which of two causes: either the GPU driver loaded it " +
		"before MOFED created /run/mellanox/drivers/.driver-ready (the ordering race, peermem-before-mofed) or MOFED was ready and peermem's symbols do not match " +
		"its ib_core (peermem-mofed-mismatch); the .driver-ready time against the failure's would tell them apart, and the evidence says how to read it",
	Fix: "first tell them apart: compare .driver-ready's time (ls -l --time-style=full-iso /run/mellanox/drivers/.driver-ready on the node) with the failure's " +
		"(kubectl logs --previous --timestamps of the GPU driver pod). Marker after the failure: make the GPU Operator wait for MOFED (driver.rdma.enabled=true) " +
		"or delete the GPU driver pod. Marker before it: align the GPU driver and MOFED versions (dmesg shows the symbol mismatch), then delete the GPU driver pod",
	Raises: "the nvidia_peermem insert failure in a GPU driver pod's log on a MOFED-container node, where the order against .driver-ready is unknown: no host facts (the API-only doctor), .driver-ready present without a time, or the failure without a time",
	Silent: []string{".driver-ready absent, or its time and the failure's both known (the race or the mismatch is named)",
		"host-installed MOFED (peermem-mofed-mismatch: there is no driver container to race with)"},
	Eval: peermemRule(PeermemUndecided)})

var _ = register(Rule{ID: PeermemNotRegistered, Severity: Critical, Seed: "field",
	Cause:  "nvidia_peermem is loaded but no peer-memory client is registered with ib_core (/sys/kernel/mm/memory_peers has no nv_mem): GPUDirect RDMA silently falls back to host memory staging, or fails to register GPU buffers",
	Fix:    "reload nvidia_peermem after MOFED (delete the GPU driver pod, or rmmod nvidia_peermem && modprobe nvidia_peermem on the node); it must load against the MOFED ib_core that is running now",
	Raises: "host probe: nvidia_peermem loaded and no client directory under /sys/kernel/mm/memory_peers",
	Silent: []string{"nvidia_peermem loaded with memory_peers/nv_mem present", "nvidia_peermem not loaded (GPUDirect RDMA not in use)",
		"peermem loaded before .driver-ready on a MOFED-container node (peermem-before-mofed explains it)",
		"host-installed MOFED with nv_mem registered and no .driver-ready (host MOFED never writes it)"},
	Eval: func(v *View) []Hit {
		var out []Hit
		for _, n := range v.Nodes {
			h := n.Host
			if h == nil || !h.PeermemLoaded || len(h.MemoryPeerClients) > 0 {
				continue
			}
			if !h.DriverReady && v.ContainerMOFED(n) && !n.MOFEDRestarting() {
				continue // peermem-before-mofed explains it
			}
			out = append(out, hit(n.Name, "host: nvidia_peermem loaded", "host: /sys/kernel/mm/memory_peers has no registered client"))
		}
		return out
	}})

var _ = register(Rule{ID: GPUDriverWaitsForMOFED, Severity: Critical, Seed: "001/003",
	Cause:  "the GPU driver pod waits in an init container (mofed-validation; k8s-driver-manager in newer releases) for MOFED's /run/mellanox/drivers/.driver-ready (driver.rdma.enabled=true): MOFED is not ready on the node, or MOFED is installed on the host and never writes the marker; the GPU driver, toolkit and device plugin never start",
	Fix:    "fix MOFED on the node (see its findings: not ready, crash loop, Pending); with MOFED installed on the host set driver.rdma.useHostMofed=true in the GPU Operator's ClusterPolicy/NVIDIADriver",
	Raises: "a GPU driver pod whose first unfinished init container is mofed-validation, or logs \"Waiting for MOFED to be installed\" / stats .driver-ready (k8s-driver-manager)",
	Silent: []string{"a driver pod past its init containers", "a driver pod in k8s-driver-manager doing something else (draining, evicting GPU pods)"},
	Eval: func(v *View) []Hit {
		var out []Hit
		for _, n := range v.Nodes {
			for _, p := range n.GPUDriver {
				c := v.waitsForMOFED(p)
				if c == "" {
					continue
				}
				ev := []string{fmt.Sprintf("GPU driver pod %s/%s: %s", p.Namespace, p.Name, podState(p))}
				if l := v.ContainerLogs(p, c); l != "" {
					ev = append(ev, c+" log: "+tail(l, 2))
				}
				ev = append(ev, n.describeMOFED())
				switch h := n.Host; {
				case h == nil:
				case h.DriverReady:
					ev = append(ev, "host: .driver-ready present (the validation should pass on its next poll)")
				case !v.ContainerMOFED(n):
					ev = append(ev, "no MOFED pod and no spec.ofedDriver in the policy: MOFED is host-installed, set driver.rdma.useHostMofed=true")
				default:
					ev = append(ev, "host: /run/mellanox/drivers/.driver-ready absent")
				}
				out = append(out, hit(n.Name, ev...))
			}
		}
		return out
	}})

var _ = register(Rule{ID: GPUOperatorCascade, Severity: Info, Seed: "001",
	Cause:  "GPU Operator pods on this node are stuck in Init because they wait for the driver (.driver-ctr-ready, toolkit-ready never created)",
	Fix:    "fix the driver pod's failure; these pods start by themselves afterwards",
	Raises: "a GPU Operator pod in Init on a node whose GPU driver pod is not Ready",
	Silent: []string{"pods in Init while the driver pod is Ready (another cause)"},
	Eval: func(v *View) []Hit {
		var out []Hit
		for _, n := range v.Nodes {
			var broken []string
			for _, p := range n.GPUDriver {
				if !podReady(p) {
					broken = append(broken, fmt.Sprintf("%s/%s: %s", p.Namespace, p.Name, podState(p)))
				}
			}
			if len(broken) == 0 {
				continue
			}
			for _, p := range n.GPUPods {
				if st := initWaiting(p); st != "" {
					out = append(out, hit(n.Name, fmt.Sprintf("pod %s/%s: %s", p.Namespace, p.Name, podState(p)), "GPU driver pod not Ready: "+strings.Join(broken, "; ")))
				}
			}
		}
		return out
	}})

const GPUDriverNotReady = "gpu-driver-not-ready"

var _ = register(Rule{ID: GPUDriverNotReady, Severity: Warning, Seed: "field",
	Cause:  "the GPU driver pod on the node is not Ready for a reason not in the catalogue (a container crash-looping or waiting): GPUs, the container toolkit and GPUDirect RDMA are not usable there",
	Fix:    "read the failing container's log in the evidence (kubectl logs -n <ns> <pod> -c <container> --previous) and the node's dmesg",
	Raises: "a GPU driver pod (ClusterPolicy or NVIDIADriver) not Ready and explained by no other rule (peermem insert failure, waiting for MOFED), e.g. nvidia-peermem-ctr \"Module nvidia-peermem not found\"",
	Silent: []string{"a Ready driver pod", "a driver pod whose failure another rule names on the node (peermem-before-mofed, peermem-mofed-mismatch, peermem-not-registered, gpu-driver-waits-for-mofed): one cause, one finding per pod"},
	Eval: func(v *View) []Hit {
		var out []Hit
		for _, n := range v.Nodes {
			for _, p := range n.GPUDriver {
				if podReady(p) || v.waitsForMOFED(p) != "" {
					continue
				}
				if _, explained := firstMatch(v.Logs(p), peermemInsertFailed); explained {
					continue
				}
				ev := []string{fmt.Sprintf("GPU driver pod %s/%s: %s", p.Namespace, p.Name, podState(p))}
				for _, cs := range p.Status.ContainerStatuses {
					if !cs.Ready {
						if l := v.ContainerLogs(p, cs.Name); l != "" {
							ev = append(ev, fmt.Sprintf("container %s not ready, log tail: %s", cs.Name, tail(l, 2)))
						} else {
							ev = append(ev, fmt.Sprintf("container %s not ready", cs.Name))
						}
					}
				}
				out = append(out, hit(n.Name, ev...))
			}
		}
		return out
	}})
