// Package mr is the memory-registration probe: it reads the memlock limit and
// CAP_IPC_LOCK, registers memory regions of growing size, and explains a
// failure the way seed 002 (64 KiB pod memlock, "Couldn't allocate MR" at
// ≥ 1 MiB) needs explaining: cause and fix, with the numbers.
package mr

import (
	"errors"
	"fmt"
	"syscall"

	"github.com/rdmasuite/rdmasuite/workloads/podenv"
	"github.com/rdmasuite/rdmasuite/workloads/units"
)

// Registrar registers (and immediately frees) one memory region of size
// bytes on a device. nil means no device is available.
type Registrar func(size int64) error

// Attempt is one registration.
type Attempt struct {
	Bytes int64  `json:"bytes"`
	OK    bool   `json:"ok"`
	Error string `json:"error,omitempty"`
	Errno string `json:"errno,omitempty"` // e.g. ENOMEM
}

// Status values, as the results model uses them.
const (
	Pass   = "pass"
	Fail   = "fail"
	NotRun = "not-run"
)

// Result is the probe's verdict with its evidence.
type Result struct {
	Device  string        `json:"device,omitempty"`
	UID     int           `json:"uid"`
	Memlock podenv.Limits `json:"memlock"`
	IPCLock bool          `json:"capIpcLock"`
	// DroppedIPCLock: the probe dropped CAP_IPC_LOCK itself before
	// registering (rdmaprobe mr --drop-ipc-lock), to judge a pod without
	// IPC_LOCK from one that has it; IPCLock is then false.
	DroppedIPCLock bool      `json:"droppedIpcLock,omitempty"`
	RequiredBytes  int64     `json:"requiredBytes"`
	Attempts       []Attempt `json:"attempts"`
	LargestOK      int64     `json:"largestOkBytes"`
	FirstFailure   *Attempt  `json:"firstFailure,omitempty"`
	// Rlimit is judged even without a device: would the limit let a process
	// without IPC_LOCK register RequiredBytes?
	RlimitStatus string `json:"rlimitStatus"`
	// Registration is not-run when there is no device.
	RegStatus string `json:"registrationStatus"`
	Status    string `json:"status"`
	Diagnosis string `json:"diagnosis,omitempty"`
	Fix       string `json:"fix,omitempty"`
	NotRunWhy string `json:"notRunReason,omitempty"`
}

// FixMemlock is what seed 002 established: raising the limit inside the pod
// (ulimit, limits.conf) does not work under containerd; the OCI base spec
// does.
//
// The code in it is in backquotes: reports never break a line inside
// them, so what is pasted from a log is what was printed.
const FixMemlock = "raise RLIMIT_MEMLOCK for containers: export the default spec (`ctr oci spec > /etc/containerd/rdma-spec.json`), " +
	"add `{\"type\":\"RLIMIT_MEMLOCK\",\"hard\":18446744073709551615,\"soft\":18446744073709551615}` to process.rlimits, " +
	"set `base_runtime_spec = \"/etc/containerd/rdma-spec.json\"` under `[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.<runtime>]` " +
	"and restart containerd (also `LimitMEMLOCK=infinity` for containerd.service); or give the pod the IPC_LOCK capability " +
	"(`securityContext.capabilities.add: [IPC_LOCK]`), which exempts it from the limit"

// Sizes returns powers of two from min to max inclusive.
func Sizes(minBytes, maxBytes int64) []int64 {
	var s []int64
	for n := minBytes; n <= maxBytes; n *= 2 {
		s = append(s, n)
	}
	if len(s) == 0 || s[len(s)-1] != maxBytes {
		s = append(s, maxBytes)
	}
	return s
}

// Probe runs the check. reg may be nil (no device: registration not run,
// rlimit still judged). Registration stops at the first failure.
func Probe(reg Registrar, device string, sizes []int64, required int64, lim podenv.Limits, ipcLock bool, uid int) Result {
	r := Result{Device: device, UID: uid, Memlock: lim, IPCLock: ipcLock, RequiredBytes: required, Attempts: []Attempt{}}
	limitTooLow := !ipcLock && lim.Soft != podenv.Unlimited && lim.Soft < required
	r.RlimitStatus = Pass
	if limitTooLow {
		r.RlimitStatus = Fail
	}
	if reg == nil {
		r.RegStatus = NotRun
		r.NotRunWhy = "no RDMA device visible in this pod, registration not attempted"
	} else {
		r.RegStatus = Pass
		for _, size := range sizes {
			a := Attempt{Bytes: size, OK: true}
			if err := reg(size); err != nil {
				a.OK, a.Error = false, err.Error()
				var errno syscall.Errno
				if errors.As(err, &errno) {
					a.Errno = errnoName(errno)
				}
				r.Attempts = append(r.Attempts, a)
				r.FirstFailure = &r.Attempts[len(r.Attempts)-1]
				break
			}
			r.Attempts = append(r.Attempts, a)
			r.LargestOK = size
		}
		if r.LargestOK < required {
			r.RegStatus = Fail
		}
	}
	// Overall: any failure fails; otherwise a registration that could not
	// run makes the whole check not-run, never pass.
	switch {
	case r.RlimitStatus == Fail || r.RegStatus == Fail:
		r.Status = Fail
	case r.RegStatus == NotRun:
		r.Status = NotRun
	default:
		r.Status = Pass
	}
	r.Diagnosis, r.Fix = diagnose(r, limitTooLow)
	return r
}

func diagnose(r Result, limitTooLow bool) (string, string) {
	limit := "unlimited"
	if r.Memlock.Soft != podenv.Unlimited {
		limit = units.Bytes(r.Memlock.Soft)
	}
	switch {
	case r.Status != Fail:
		return "", ""
	case limitTooLow:
		d := fmt.Sprintf("memlock limit is %s and the process lacks CAP_IPC_LOCK: registering %s or more fails (perftest: \"Couldn't allocate MR\")",
			limit, units.Bytes(r.RequiredBytes))
		if f := r.FirstFailure; f != nil {
			d += fmt.Sprintf("; observed: %s failed with %s", units.Bytes(f.Bytes), f.Errno)
		}
		return d, FixMemlock
	case r.FirstFailure != nil && (r.FirstFailure.Errno == "ENOMEM" || r.FirstFailure.Errno == "EPERM") && !r.IPCLock:
		return fmt.Sprintf("registering %s failed with %s although memlock is %s: the limit is reached by memory already locked in this process, or the node is short of memory",
			units.Bytes(r.FirstFailure.Bytes), r.FirstFailure.Errno, limit), FixMemlock
	case r.FirstFailure != nil:
		return fmt.Sprintf("registering %s failed (%s) with memlock %s and IPC_LOCK=%v: not a memlock limit; check node memory and the device (dmesg)",
			units.Bytes(r.FirstFailure.Bytes), r.FirstFailure.Error, limit, r.IPCLock), "check free memory and hugepage/pinned-memory use on the node, and the RDMA driver's kernel log"
	}
	return "registration stopped below the required size", ""
}

func errnoName(e syscall.Errno) string {
	switch e {
	case syscall.ENOMEM:
		return "ENOMEM"
	case syscall.EPERM:
		return "EPERM"
	case syscall.EACCES:
		return "EACCES"
	case syscall.EINVAL:
		return "EINVAL"
	case syscall.EFAULT:
		return "EFAULT"
	}
	return fmt.Sprintf("errno %d", int(e))
}
