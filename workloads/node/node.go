// Package node checks a GPU/RDMA Kubernetes node from the host's files:
// kernel modules, the NVIDIA operators' readiness markers, RDMA ports, I/O
// pressure and NFS mounts. Every read goes through one host root ("/" on the
// host, "/host" in a pod that mounts the host read-only, a fixture tree in
// tests), and the result is one JSON-serialisable Report of facts. Verdicts,
// with their causes and fixes, are suites/doctor's: it compares nodes (seed
// 004's outlier only shows against its peers) and sees the API side too.
package node

import (
	"time"
)

// Options tell Collect where the host is and how long to sample.
type Options struct {
	// HostRoot is "/" on the host, "/host" in a pod, a fixture dir in tests.
	// Empty means "/".
	HostRoot string
	// SampleWindow is the PSI / iowait sampling window (0 = single read,
	// no rates), also the window the ports' counters are read around at
	// rest (0 = no at-rest read).
	SampleWindow time.Duration
	// Now is the clock (nil = time.Now); tests inject a fake one.
	Now func() time.Time
	// Sleep waits out SampleWindow between the two samples (nil =
	// time.Sleep). Tests use it to advance the fake clock and rewrite the
	// fixture's counters instead of sleeping.
	Sleep func(time.Duration)
}

// Report is everything Collect found on one node.
type Report struct {
	HostRoot    string    `json:"hostRoot"`
	CollectedAt time.Time `json:"collectedAt"`
	// Kernel is the running kernel's release: the seeds' races follow
	// kernel upgrades, which make both operators rebuild at once.
	Kernel string `json:"kernel,omitempty"`
	// Modules holds RDMAModules, StorageModules and ContextModules, in that
	// order.
	Modules []Module `json:"modules"`
	// StorageModulesLoaded are the StorageModules loaded now (seed 000).
	StorageModulesLoaded []string `json:"storageModulesLoaded"`
	Markers              Markers  `json:"markers"`
	Ordering             Ordering `json:"ordering"`
	RDMA                 RDMA     `json:"rdma"`
	Pressure             Pressure `json:"pressure"`
	Mounts               Mounts   `json:"mounts"`
	// AtRest is every RDMA port's counter deltas over the sampling window.
	AtRest AtRest `json:"atRest"`
	// Cost is how long the reads took, the sampling window left out: the
	// probe runs on every node of a fleet, and a GID table of 1024
	// entries per port is the largest thing it reads.
	Cost Cost `json:"cost"`
}

// Cost is the probe's own read time.
type Cost struct {
	// ReadMs is every read of the host (modules, markers, RDMA devices
	// and their configuration, mounts, PSI, the counters twice), the
	// sampling window's sleep excluded.
	ReadMs float64 `json:"readMs"`
	// RDMAMs is the RDMA part of it (devices, ports, PCIe paths, GID
	// tables); GIDEntries how many GID table entries were read.
	RDMAMs     float64 `json:"rdmaMs"`
	GIDEntries int     `json:"gidEntries"`
}

// Collect reads the host under opts.HostRoot. It fails only when the host
// itself is not visible (missing root, unreadable /proc/modules); optional
// files that are missing are reported as absent.
func Collect(opts Options) (Report, error) {
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	sleep := opts.Sleep
	if sleep == nil {
		sleep = time.Sleep
	}
	h, err := newHostFS(opts.HostRoot)
	if err != nil {
		return Report{}, err
	}
	// Wall time, whatever clock the caller injected: this is the cost.
	start := time.Now()
	slept := time.Duration(0)
	r := Report{HostRoot: h.root, CollectedAt: now().UTC()}
	r.Kernel, _ = h.readTrim("/proc/sys/kernel/osrelease")
	if r.Modules, err = collectModules(h); err != nil {
		return Report{}, err
	}
	r.StorageModulesLoaded = []string{}
	for _, m := range r.Modules {
		if m.Role == RoleStorage && m.Loaded {
			r.StorageModulesLoaded = append(r.StorageModulesLoaded, m.Name)
		}
	}
	r.Markers = collectMarkers(h, r.CollectedAt)
	peermem, _ := r.Module("nvidia_peermem")
	r.Ordering = checkOrdering(r.Markers, peermem)
	rdmaStart := time.Now()
	r.RDMA = collectRDMA(h)
	r.Cost.RDMAMs = ms(time.Since(rdmaStart))
	r.Cost.GIDEntries = r.RDMA.gidEntries()
	r.Mounts = collectMounts(h)
	// Sampling last: everything above is a snapshot, this takes time. One
	// window serves both: the ports' counters are read right before the
	// first PSI sample and right after the second, so the at-rest read
	// costs no extra wait.
	var before []portRead
	if opts.SampleWindow > 0 {
		before = readPortCounters(h, r.RDMA, now)
	}
	timedSleep := func(d time.Duration) {
		t := time.Now()
		sleep(d)
		slept += time.Since(t)
	}
	r.Pressure = collectPressure(h, opts.SampleWindow, now, timedSleep)
	switch {
	case opts.SampleWindow > 0:
		r.AtRest = atRest(before, readPortCounters(h, r.RDMA, now))
	case r.RDMA.hasPorts():
		r.AtRest = AtRest{NotRead: noWindow, Ports: []PortAtRest{}}
	default:
		r.AtRest = AtRest{Ports: []PortAtRest{}}
	}
	r.Cost.ReadMs = ms(time.Since(start) - slept)
	return r, nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
