package verbs

import (
	"runtime"
	"runtime/debug"
	"sync"
	"syscall"
	"time"
)

// ThreadUsage is what the kernel counted over one C loop: for the OS
// thread that ran it (getrusage RUSAGE_THREAD) and for the whole process
// (RUSAGE_SELF). A polling loop that ran undisturbed has as much thread
// CPU time as wall time and no involuntary context switch; the process's
// other threads (the Go runtime's, the server's connections) should use
// next to none meanwhile. On a busy node these figures say what competed
// with the measuring thread.
type ThreadUsage struct {
	Wall        time.Duration
	ThreadCPU   time.Duration // user + system time of the measuring thread
	ProcessCPU  time.Duration // the same for every thread of the process
	Involuntary int64         // times the kernel preempted the measuring thread
	Voluntary   int64         // times it blocked (a polling loop does not)
}

// rusageThread is Linux's RUSAGE_THREAD (not in package syscall).
const rusageThread = 1

// usageMark is the counters at the start of a loop.
type usageMark struct {
	thr, proc syscall.Rusage
	at        time.Time
	ok        bool
}

// startUsage locks the calling goroutine to its OS thread, so the loop's
// C call runs on the thread the counters are read from (and the runtime
// never moves the measurement), and reads the counters. The caller runs
// the loop and then calls end, which unlocks.
func startUsage() *usageMark {
	runtime.LockOSThread()
	m := &usageMark{}
	m.ok = syscall.Getrusage(rusageThread, &m.thr) == nil && syscall.Getrusage(syscall.RUSAGE_SELF, &m.proc) == nil
	m.at = time.Now()
	return m
}

// end reads the counters again and returns the difference (ok false when
// the kernel refused a read).
func (m *usageMark) end() (ThreadUsage, bool) {
	defer runtime.UnlockOSThread()
	wall := time.Since(m.at)
	var thr, proc syscall.Rusage
	if !m.ok || syscall.Getrusage(rusageThread, &thr) != nil || syscall.Getrusage(syscall.RUSAGE_SELF, &proc) != nil {
		return ThreadUsage{}, false
	}
	return ThreadUsage{
		Wall:        wall,
		ThreadCPU:   cpuTime(thr) - cpuTime(m.thr),
		ProcessCPU:  cpuTime(proc) - cpuTime(m.proc),
		Involuntary: thr.Nivcsw - m.thr.Nivcsw,
		Voluntary:   thr.Nvcsw - m.thr.Nvcsw,
	}, true
}

func cpuTime(r syscall.Rusage) time.Duration {
	return time.Duration(r.Utime.Nano() + r.Stime.Nano())
}

// quiet counts the loops running now that asked the runtime to keep
// still (see quietRuntime).
var quiet struct {
	sync.Mutex
	n       int
	percent int
}

// quietRuntime keeps the Go runtime from competing with a C loop's thread
// while it measures: before the first of any concurrent loops it collects
// and returns freed memory to the kernel at once (debug.FreeOSMemory), so
// the background scavenger has nothing left to return in small paced
// steps, and it turns the collector off until the last loop ends (the
// loops allocate nothing; nothing else should run). On a slow emulated
// node the probe's other threads used 0-11 ms of CPU over a 1 s
// latency loop without it and about as little with it: the runtime was
// not what bent the figures there, and this keeps it so on a node whose
// heap is busier. It runs before every loop, warm-up included, outside
// the timed part. The returned func undoes it; call it once.
func quietRuntime() func() {
	quiet.Lock()
	if quiet.n == 0 {
		debug.FreeOSMemory()
		quiet.percent = debug.SetGCPercent(-1)
	}
	quiet.n++
	quiet.Unlock()
	return func() {
		quiet.Lock()
		defer quiet.Unlock()
		if quiet.n--; quiet.n == 0 {
			debug.SetGCPercent(quiet.percent)
		}
	}
}
