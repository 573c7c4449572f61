package node

import (
	"path"
	"time"
)

// Host paths of the readiness markers the NVIDIA operators leave on the node.
const (
	// DriverReadyPath is created by the Network Operator's MOFED container
	// once its driver is loaded ("Setting driver ready state") and removed
	// when it starts over ("Unsetting driver ready state") — seeds 001/003.
	DriverReadyPath = "/run/mellanox/drivers/.driver-ready"
	// MellanoxDriversDir exists once a MOFED container has run on the node
	// (it is the container's hostPath).
	MellanoxDriversDir = "/run/mellanox/drivers"
	// ValidationsDir holds the GPU Operator's status files.
	ValidationsDir = "/run/nvidia/validations"
	// MemoryPeersDir is where ib_core registers peer-memory clients; each
	// client is a subdirectory (nvidia_peermem registers "nv_mem").
	MemoryPeersDir = "/sys/kernel/mm/memory_peers"
)

// GPUOperatorValidations are the status files seed 001/003's stuck node never
// got: nvidia-driver-ctr writes .driver-ctr-ready, the container toolkit
// writes toolkit-ready after it, and 7 downstream pods wait in Init for them.
var GPUOperatorValidations = []string{".driver-ctr-ready", "toolkit-ready"}

// Marker is a file whose existence is the signal.
type Marker struct {
	Path    string     `json:"path"`
	Present bool       `json:"present"`
	ModTime *time.Time `json:"modTime,omitempty"`
	// AgeSeconds is Now - ModTime: a .driver-ready younger than the node's
	// last MOFED restart tells when the driver came back.
	AgeSeconds float64 `json:"ageSeconds,omitempty"`
}

// MemoryPeers is /sys/kernel/mm/memory_peers. The directory is created on
// the first client registration and can stay behind empty, so only a client
// subdirectory proves a peer-memory client (GPUDirect RDMA) is registered.
type MemoryPeers struct {
	Marker
	Clients []string `json:"clients,omitempty"`
}

// Markers are the operators' readiness files on the host.
type Markers struct {
	DriverReady Marker `json:"driverReady"`
	// MellanoxDriversDir: a MOFED container has run here, so .driver-ready
	// is expected to appear.
	MellanoxDriversDir bool `json:"mellanoxDriversDir"`
	// ValidationsDir: the GPU Operator has run here.
	ValidationsDir bool `json:"validationsDir"`
	// Validations are every file in /run/nvidia/validations.
	Validations []Marker    `json:"validations"`
	MemoryPeers MemoryPeers `json:"memoryPeers"`
}

func collectMarkers(h hostFS, now time.Time) Markers {
	var m Markers
	m.DriverReady = readMarker(h, DriverReadyPath, now)
	m.MellanoxDriversDir = isDir(h, MellanoxDriversDir)
	m.ValidationsDir = isDir(h, ValidationsDir)
	names, _ := h.readDirNames(ValidationsDir)
	m.Validations = []Marker{}
	for _, n := range names {
		m.Validations = append(m.Validations, readMarker(h, ValidationsDir+"/"+n, now))
	}
	m.MemoryPeers.Marker = readMarker(h, MemoryPeersDir, now)
	m.MemoryPeers.Clients, _ = h.readDirNames(MemoryPeersDir)
	return m
}

func readMarker(h hostFS, hostPath string, now time.Time) Marker {
	m := Marker{Path: hostPath}
	fi, err := h.stat(hostPath)
	if err != nil {
		return m
	}
	mt := fi.ModTime().UTC()
	m.Present, m.ModTime = true, &mt
	if age := now.Sub(mt).Seconds(); age > 0 {
		m.AgeSeconds = age
	}
	return m
}

func isDir(h hostFS, hostPath string) bool {
	fi, err := h.stat(hostPath)
	return err == nil && fi.IsDir()
}

// Ordering is the MOFED ↔ GPU Operator ordering check of seeds 001/003.
type Ordering struct {
	// PeermemWithoutDriverReady: nvidia_peermem is loaded (or a peer-memory
	// client is registered) while MOFED's .driver-ready is absent — the load
	// happened, or will be redone, against a driver in transition; in seed
	// 001 this window ended in "modprobe: ERROR: could not insert
	// 'nvidia_peermem': Invalid argument" and CrashLoopBackOff.
	PeermemWithoutDriverReady bool `json:"peermemWithoutDriverReady"`
	DriverReadyAbsent         bool `json:"driverReadyAbsent"`
	// ValidationsMissing lists GPUOperatorValidations not present in
	// /run/nvidia/validations — also when the GPU Operator never ran here,
	// which Markers.ValidationsDir tells apart.
	ValidationsMissing []string `json:"validationsMissing"`
}

func checkOrdering(mk Markers, peermem Module) Ordering {
	o := Ordering{DriverReadyAbsent: !mk.DriverReady.Present, ValidationsMissing: []string{}}
	peer := peermem.present() || len(mk.MemoryPeers.Clients) > 0
	o.PeermemWithoutDriverReady = peer && o.DriverReadyAbsent
	have := make(map[string]bool)
	for _, v := range mk.Validations {
		have[path.Base(v.Path)] = true
	}
	for _, want := range GPUOperatorValidations {
		if !have[want] {
			o.ValidationsMissing = append(o.ValidationsMissing, want)
		}
	}
	return o
}
