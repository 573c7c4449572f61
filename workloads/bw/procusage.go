package bw

import (
	"fmt"
	"syscall"
	"time"
)

// processUsage is this process's CPU time and context switches over a
// window (getrusage RUSAGE_SELF, every thread summed).
type processUsage struct {
	start time.Time
	ru    syscall.Rusage
	ok    bool
}

func startProcessUsage() processUsage {
	u := processUsage{start: time.Now()}
	u.ok = syscall.Getrusage(syscall.RUSAGE_SELF, &u.ru) == nil
	return u
}

// processWindow is what this process did over a window.
type processWindow struct {
	Wall                   time.Duration
	CPU                    time.Duration // user + system
	Voluntary, Involuntary int64         // context switches
}

func (u processWindow) String() string {
	return fmt.Sprintf("%.1f ms of CPU over %.0f ms, %d voluntary and %d involuntary context switches",
		float64(u.CPU.Microseconds())/1000, float64(u.Wall.Microseconds())/1000, u.Voluntary, u.Involuntary)
}

// end is the usage since start; false when getrusage failed.
func (u processUsage) end() (processWindow, bool) {
	var now syscall.Rusage
	if !u.ok || syscall.Getrusage(syscall.RUSAGE_SELF, &now) != nil {
		return processWindow{}, false
	}
	cpu := func(r *syscall.Rusage) time.Duration {
		return time.Duration(r.Utime.Nano() + r.Stime.Nano())
	}
	return processWindow{Wall: time.Since(u.start), CPU: cpu(&now) - cpu(&u.ru),
		Voluntary: now.Nvcsw - u.ru.Nvcsw, Involuntary: now.Nivcsw - u.ru.Nivcsw}, true
}
