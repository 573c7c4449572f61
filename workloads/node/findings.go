package node

import (
	"fmt"
	"strings"
)

// Finding severities. A fail is a known-broken state; a warn needs the
// cluster's context (is this port meant to be cabled?) to become a verdict.
const (
	SeverityFail = "fail"
	SeverityWarn = "warn"
)

// Finding is one known failure mode seen on the node, with its cause and fix
// in words an operator can act on. Seed names the incident write-up it comes
// from.
type Finding struct {
	Check    string `json:"check"`
	Severity string `json:"severity"`
	Seed     string `json:"seed"`
	Cause    string `json:"cause"`
	Fix      string `json:"fix"`
}

// Checks, as Finding.Check values.
const (
	CheckStorageModules     = "storage-modules-loaded"
	CheckPeermemBeforeMOFED = "peermem-before-mofed-ready"
	CheckGPUValidations     = "gpu-operator-validations-missing"
	CheckMOFEDNotReady      = "mofed-driver-not-ready"
	CheckPortNotActive      = "rdma-port-not-active"
)

// findings turns the collected facts into findings. PSI has no finding here:
// seed 004's outlier only shows against its peers, so the suite compares
// Pressure across nodes.
func findings(r Report) []Finding {
	out := []Finding{}
	if f, ok := storageFinding(r); ok {
		out = append(out, f)
	}
	if r.Ordering.PeermemWithoutDriverReady {
		out = append(out, Finding{
			Check: CheckPeermemBeforeMOFED, Severity: SeverityFail, Seed: "001,003",
			Cause: "nvidia_peermem is loaded (or a peer-memory client is registered in " + MemoryPeersDir + ") while " + DriverReadyPath +
				" is absent: the GPU Operator's nvidia-driver-ctr loads it without waiting for MOFED, and against a MOFED driver in transition the load fails with " +
				"\"modprobe: ERROR: could not insert 'nvidia_peermem': Invalid argument\" → CrashLoopBackOff, .driver-ctr-ready and toolkit-ready never written, downstream GPU Operator pods stuck in Init",
			Fix: "wait until the MOFED pod on this node is 2/2 Running and " + DriverReadyPath + " exists, then delete this node's nvidia-driver-daemonset pod so it loads nvidia_peermem again; " +
				"permanently, make nvidia-driver-ctr wait for " + DriverReadyPath + " before modprobe nvidia-peermem",
		})
	}
	if r.Markers.ValidationsDir && len(r.Ordering.ValidationsMissing) > 0 {
		sev := SeverityWarn
		if r.Markers.DriverReady.Present {
			// MOFED is done: the GPU stack is not racing any more, it is stuck.
			sev = SeverityFail
		}
		out = append(out, Finding{
			Check: CheckGPUValidations, Severity: sev, Seed: "001,003",
			Cause: fmt.Sprintf("GPU Operator status files %s missing from %s: nvidia-driver-ctr has not completed, so the container toolkit and every pod waiting for toolkit-ready stay in Init",
				strings.Join(r.Ordering.ValidationsMissing, ", "), ValidationsDir),
			Fix: "read this node's nvidia-driver-daemonset pod log (-c nvidia-driver-ctr); if it shows \"could not insert 'nvidia_peermem': Invalid argument\" and " +
				DriverReadyPath + " exists, delete the pod so it restarts after MOFED",
		})
	}
	if r.Markers.MellanoxDriversDir && r.Ordering.DriverReadyAbsent && len(r.StorageModulesLoaded) == 0 {
		out = append(out, Finding{
			Check: CheckMOFEDNotReady, Severity: SeverityWarn, Seed: "000,002",
			Cause: "a MOFED driver container has run on this node but " + DriverReadyPath + " is absent: the driver is still being built and loaded, or the container crash-loops; " +
				"until it appears network.nvidia.com/operator.mofed.wait stays true and no RDMA resource is advertised",
			Fix: "check the mofed pod on this node (kubectl -n nvidia-network-operator get pods -o wide; kubectl logs); if it is Pending on node taints, add matching tolerations to the NicClusterPolicy",
		})
	}
	for _, d := range r.RDMA.Devices {
		for _, p := range d.Ports {
			if !p.Active {
				out = append(out, portFinding(d, p))
			}
		}
	}
	return out
}

// storageFinding is seed 000: storage modules loaded before (or under) MOFED.
func storageFinding(r Report) (Finding, bool) {
	if len(r.StorageModulesLoaded) == 0 {
		return Finding{}, false
	}
	var by string
	var rdmaMounts []string
	for _, m := range r.Mounts.NFS {
		if m.RDMA {
			rdmaMounts = append(rdmaMounts, m.Device+" on "+m.MountPoint)
		}
	}
	if len(rdmaMounts) > 0 {
		by = " (NFS over RDMA: " + strings.Join(rdmaMounts, "; ") + ")"
	}
	mods := strings.Join(r.StorageModulesLoaded, ", ")
	f := Finding{
		Check: CheckStorageModules, Seed: "000",
		Fix: "set UNLOAD_STORAGE_MODULES=\"true\" under spec.ofedDriver.env of the NicClusterPolicy (export it with kubectl get nicclusterpolicy -o yaml, edit, kubectl apply -f, so other env entries stay); " +
			"MOFED then unloads them before installing, which stalls NFS I/O on this node while the driver reloads (27 s observed, no data lost): pause writers to shared volumes during network upgrades",
	}
	if r.Ordering.DriverReadyAbsent {
		f.Severity = SeverityFail
		f.Cause = "storage modules " + mods + " are loaded" + by + " and " + DriverReadyPath + " is absent: the MOFED driver container exits with " +
			"\"Storage modules are loaded for current driver, terminating prior driver reload failure due to UNLOAD_STORAGE_MODULES not set to \\\"true\\\"\" and crash-loops; " +
			"network.nvidia.com/operator.mofed.wait stays true, nvidia.com/hostdev stays 0 and nvidia.com/gpu disappears"
	} else {
		f.Severity = SeverityWarn
		f.Cause = "storage modules " + mods + " are loaded" + by + ": MOFED is ready now, but its next reload (node reboot, pod eviction, operator upgrade) " +
			"refuses with \"Storage modules are loaded for current driver\" unless UNLOAD_STORAGE_MODULES is \"true\""
	}
	return f, true
}

// portFinding is seed 002's ibstat view: a port that is not ACTIVE.
func portFinding(d Device, p Port) Finding {
	why := "the port is not carrying traffic"
	switch p.PhysStateName {
	case "Polling":
		why = "Polling: the port sees no peer (cable unplugged or faulty, or the switch port down)"
	case "Disabled":
		why = "Disabled: the port is shut (seed 002's uncabled HCA showed this)"
	}
	return Finding{
		Check: CheckPortNotActive, Severity: SeverityWarn, Seed: "002",
		Cause: fmt.Sprintf("%s port %d (%s) is %q, physical state %q — %s; perftest on it fails with \"Port number %d state is Down\"",
			d.Name, p.Port, p.LinkLayer, p.State, p.PhysState, why, p.Port),
		Fix: "cable the port and check the switch port; if it is meant to be unused, leave the device out of the RDMA device plugin's selectors and of bandwidth tests",
	}
}
