package verbs

import (
	"runtime/debug"
	"testing"
	"time"
)

// The counters are the loop thread's own: a polling loop shows its wall
// time as CPU time and does not block; a sleeping one blocks and uses
// almost no CPU. Either reading the other way round fails.
func TestUsageCountsTheLoopThread(t *testing.T) {
	const span = 40 * time.Millisecond
	m := startUsage()
	for start := time.Now(); time.Since(start) < span; {
	}
	spin, ok := m.end()
	if !ok {
		t.Fatal("getrusage refused to count this thread")
	}
	// The kernel scales the thread's and the process's sampled CPU times
	// separately (cputime_adjust), so the thread's may read up to a tick
	// per reading above the process's (CI, 2026-11-30: thread 42.96 ms,
	// process 40.86 ms): two readings, a 4 ms tick at HZ=250, with room.
	const tickSlack = 10 * time.Millisecond
	if spin.Wall < span || spin.ThreadCPU < span/4 || spin.ProcessCPU+tickSlack < spin.ThreadCPU {
		t.Fatalf("polling %s: %+v: want its wall time as the thread's CPU time, within the process's", span, spin)
	}
	m = startUsage()
	time.Sleep(span)
	sleep, ok := m.end()
	if !ok || sleep.Wall < span || sleep.ThreadCPU > span/4 || sleep.Voluntary < 1 {
		t.Fatalf("sleeping %s: %+v (ok %v): want little CPU and at least one block", span, sleep, ok)
	}
}

// Loops on several rails at once share one quiet spell: the collector
// stays off until the last of them ends, then comes back as it was.
func TestQuietRuntimeNests(t *testing.T) {
	before := debug.SetGCPercent(77)
	defer debug.SetGCPercent(before)
	first := quietRuntime()
	second := quietRuntime()
	if p := debug.SetGCPercent(-1); p != -1 {
		t.Fatalf("during two loops the collector is at %d%%: want off", p)
	}
	first()
	if p := debug.SetGCPercent(-1); p != -1 {
		t.Fatalf("with one loop still running the collector is at %d%%: want off", p)
	}
	second()
	if p := debug.SetGCPercent(77); p != 77 {
		t.Fatalf("after the last loop the collector is at %d%%: want the 77%% it had", p)
	}
}
