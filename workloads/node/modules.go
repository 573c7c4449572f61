package node

import (
	"fmt"
	"strconv"
	"strings"
)

// StorageModules are the kernel modules that, loaded before MOFED (e.g. by an
// NFS-over-RDMA mount), make the MOFED driver container fail with "Storage
// modules are loaded for current driver" (seed 000). The list is the one the
// MOFED installer greps lsmod for.
var StorageModules = []string{"rpcrdma", "xprtrdma", "nvme_rdma", "nvmet_rdma", "ib_isert", "ib_srpt"}

// RDMAModules are reported loaded/not loaded: the HCA driver stack and
// nvidia_peermem, whose load order against MOFED is the race of seeds 001/003.
var RDMAModules = []string{"mlx5_core", "mlx5_ib", "ib_core", "ib_uverbs", "rdma_cm", "nvidia_peermem"}

// ContextModules are reported for evidence only. sunrpc's version tells
// where the NFS stack came from: seed 000's nodes showed "4.0.35-vastdata",
// i.e. MOFED's own DKMS NFS bundle, not the distribution's.
var ContextModules = []string{"sunrpc"}

// Module roles in Report.Modules.
const (
	RoleRDMA    = "rdma"
	RoleStorage = "storage"
	RoleContext = "context"
)

// Module is one kernel module's state on the host.
type Module struct {
	Name string `json:"name"`
	Role string `json:"role"`
	// Loaded: listed in /proc/modules.
	Loaded bool `json:"loaded"`
	// Builtin: not in /proc/modules but /sys/module/<name> exists without an
	// initstate file, i.e. compiled into the kernel (e.g. ib_core on some
	// kernels); it counts as present, not as "missing".
	Builtin bool `json:"builtin,omitempty"`
	// State is Live, Loading or Unloading (/proc/modules' fifth column).
	State string `json:"state,omitempty"`
	Size  int64  `json:"size,omitempty"`
	// RefCount is meaningful when Loaded (0 then means "unused"); -1 when
	// the kernel does not count references ("-").
	RefCount int      `json:"refCount"`
	UsedBy   []string `json:"usedBy,omitempty"`
	// Version from /sys/module/<name>/version: set by out-of-tree builds such
	// as MOFED's mlx5_core ("25.07-0.9.7") or its sunrpc ("4.0.35-vastdata").
	Version string `json:"version,omitempty"`
}

// procModule is one parsed /proc/modules line.
type procModule struct {
	size     int64
	refCount int
	usedBy   []string
	state    string
}

// parseProcModules reads lines like
//
//	ib_core 389120 8 rdma_cm,ib_cm,ib_uverbs,mlx5_ib, Live 0x0000000000000000 (OE)
//
// (name size refcount deps state address [taints]).
func parseProcModules(data string) (map[string]procModule, error) {
	mods := make(map[string]procModule)
	for i, line := range strings.Split(data, "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if len(f) < 5 {
			return nil, fmt.Errorf("line %d: %q: want at least 5 fields", i+1, line)
		}
		var m procModule
		m.size, _ = strconv.ParseInt(f[1], 10, 64)
		if f[2] == "-" {
			m.refCount = -1
		} else {
			m.refCount, _ = strconv.Atoi(f[2])
		}
		if f[3] != "-" {
			for _, dep := range strings.Split(f[3], ",") {
				if dep != "" {
					m.usedBy = append(m.usedBy, dep)
				}
			}
		}
		m.state = f[4]
		mods[f[0]] = m
	}
	return mods, nil
}

// moduleName normalises "nvidia-peermem" (modprobe's spelling) to
// "nvidia_peermem" (the kernel's, as in /proc/modules and /sys/module).
func moduleName(name string) string {
	return strings.ReplaceAll(name, "-", "_")
}

// collectModules reports every module of RDMAModules, StorageModules and
// ContextModules. An unreadable /proc/modules is an error: without it every
// verdict of this package would be a guess.
func collectModules(h hostFS) ([]Module, error) {
	const procModules = "/proc/modules"
	data, err := h.readFile(procModules)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w: the host's procfs must be visible under the host root (mount the host root read-only at /host, or run on the host with --host-root=/)", h.path(procModules), err)
	}
	loaded, err := parseProcModules(string(data))
	if err != nil {
		return nil, fmt.Errorf("parse %s: %w", h.path(procModules), err)
	}
	var out []Module
	add := func(role string, names []string) {
		for _, n := range names {
			out = append(out, moduleStatus(h, loaded, moduleName(n), role))
		}
	}
	add(RoleRDMA, RDMAModules)
	add(RoleStorage, StorageModules)
	add(RoleContext, ContextModules)
	return out, nil
}

func moduleStatus(h hostFS, loaded map[string]procModule, name, role string) Module {
	m := Module{Name: name, Role: role}
	if pm, ok := loaded[name]; ok {
		m.Loaded = true
		m.State, m.Size, m.RefCount, m.UsedBy = pm.state, pm.size, pm.refCount, pm.usedBy
	} else if _, err := h.stat("/sys/module/" + name); err == nil {
		if _, err := h.stat("/sys/module/" + name + "/initstate"); err != nil {
			m.Builtin = true
		}
	}
	m.Version, _ = h.readTrim("/sys/module/" + name + "/version")
	return m
}

// Module returns the named module's entry from the report.
func (r Report) Module(name string) (Module, bool) {
	name = moduleName(name)
	for _, m := range r.Modules {
		if m.Name == name {
			return m, true
		}
	}
	return Module{}, false
}

// present: loaded as a module or built into the kernel.
func (m Module) present() bool { return m.Loaded || m.Builtin }
