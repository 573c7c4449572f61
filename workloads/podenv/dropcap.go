package podenv

import (
	"fmt"
	"runtime"

	"golang.org/x/sys/unix"
)

// ThreadStatus is this thread's status file: capabilities are per thread.
const ThreadStatus = "/proc/thread-self/status"

// DropIPCLock removes CAP_IPC_LOCK from the calling OS thread's effective,
// permitted and inheritable sets, and locks the calling goroutine to that
// thread for good (a locked goroutine's thread ends with it, so no thread
// without the capability returns to Go's pool).
//
// What it is for: measuring, from a pod that holds IPC_LOCK (the suite's
// node pods), what a pod without it gets. The container runtime gives every
// container of a runtime class the same RLIMIT_MEMLOCK; IPC_LOCK changes
// only the kernel's capable(CAP_IPC_LOCK) in the pin check of a memory
// registration (ib_umem_get), which reads the registering thread's
// credentials. So every registration must then be made from this
// goroutine: verbs calls through cgo run on the calling goroutine's thread.
// Capabilities are per thread and syscall.AllThreadsSyscall refuses cgo
// binaries, so the process as a whole is not changed.
func DropIPCLock() error {
	runtime.LockOSThread() // never unlocked: see above
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return fmt.Errorf("capget: %w", err)
	}
	const bit = uint32(1) << capIPCLock
	data[0].Effective &^= bit
	data[0].Permitted &^= bit
	data[0].Inheritable &^= bit
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("capset without CAP_IPC_LOCK: %w", err)
	}
	if _, held, err := EffectiveCaps(ThreadStatus); err != nil || held {
		return fmt.Errorf("CAP_IPC_LOCK still effective on this thread after capset (%s: %v)", ThreadStatus, err)
	}
	return nil
}
