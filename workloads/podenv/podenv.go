// Package podenv gathers what a process can see of its own execution
// environment that matters for RDMA: the memlock limit, whether CAP_IPC_LOCK
// is held, which verbs device nodes exist, and where it runs.
package podenv

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Unlimited marks an RLIM_INFINITY memlock limit in Limits.
const Unlimited int64 = -1

// capIPCLock is CAP_IPC_LOCK's bit number (linux/capability.h).
const capIPCLock = 14

// Env is the environment report of one process.
type Env struct {
	Hostname  string   `json:"hostname"`
	NodeName  string   `json:"nodeName,omitempty"`
	PodName   string   `json:"podName,omitempty"`
	Namespace string   `json:"namespace,omitempty"`
	Kernel    string   `json:"kernel"`
	UID       int      `json:"uid"`
	Memlock   Limits   `json:"memlock"`
	IPCLock   bool     `json:"capIpcLock"`
	CapEff    string   `json:"capEff"`
	Devices   []string `json:"rdmaDevices"`
}

// Limits is an rlimit pair in bytes; Unlimited for RLIM_INFINITY.
type Limits struct {
	Soft int64 `json:"soft"`
	Hard int64 `json:"hard"`
}

// Collect reads the environment. procRoot and devRoot are normally "/proc"
// and "/dev"; tests point them at fixture trees.
func Collect(procRoot, devRoot string) (Env, error) {
	var e Env
	e.Hostname, _ = os.Hostname()
	// The suite passes these through the downward API.
	e.NodeName = os.Getenv("NODE_NAME")
	e.PodName = os.Getenv("POD_NAME")
	e.Namespace = os.Getenv("POD_NAMESPACE")
	e.UID = os.Getuid()
	var uts unix.Utsname
	if unix.Uname(&uts) == nil {
		e.Kernel = unix.ByteSliceToString(uts.Release[:])
	}
	var err error
	if e.Memlock, err = MemlockLimits(); err != nil {
		return e, err
	}
	if e.CapEff, e.IPCLock, err = EffectiveCaps(filepath.Join(procRoot, "self/status")); err != nil {
		return e, err
	}
	e.Devices = verbsDevices(filepath.Join(devRoot, "infiniband"))
	return e, nil
}

// MemlockLimits returns this process's RLIMIT_MEMLOCK.
func MemlockLimits() (Limits, error) {
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_MEMLOCK, &rl); err != nil {
		return Limits{}, fmt.Errorf("getrlimit(RLIMIT_MEMLOCK): %w", err)
	}
	conv := func(v uint64) int64 {
		if v == unix.RLIM_INFINITY {
			return Unlimited
		}
		return int64(v)
	}
	return Limits{Soft: conv(rl.Cur), Hard: conv(rl.Max)}, nil
}

// EffectiveCaps parses CapEff from a /proc/<pid>/status file.
func EffectiveCaps(statusPath string) (hex string, ipcLock bool, err error) {
	f, err := os.Open(statusPath)
	if err != nil {
		return "", false, fmt.Errorf("read capabilities: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "CapEff:"); ok {
			hex = strings.TrimSpace(v)
			bits, perr := strconv.ParseUint(hex, 16, 64)
			if perr != nil {
				return hex, false, fmt.Errorf("parse CapEff %q in %s: %w", hex, statusPath, perr)
			}
			return hex, bits&(1<<capIPCLock) != 0, nil
		}
	}
	return "", false, fmt.Errorf("no CapEff line in %s", statusPath)
}

// verbsDevices lists the device nodes under /dev/infiniband (uverbsN,
// rdma_cm, umadN, issmN). A missing directory means no device was given to
// this container.
func verbsDevices(dir string) []string {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return []string{}
	}
	out := make([]string, 0, len(entries))
	for _, e := range entries {
		out = append(out, e.Name())
	}
	sort.Strings(out)
	return out
}
