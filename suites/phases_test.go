package suites

import (
	"fmt"
	"io"
	"sort"
	"sync"
	"time"

	"github.com/rdmasuite/rdmasuite/reports"
)

// Phase names of the per-phase breakdown.
const (
	phasePodStart   = "pod start"
	phaseExchange   = "exchange"
	phaseMeasure    = "measurement"
	phaseCollection = "collection"
)

var phases struct {
	sync.Mutex
	m map[string]reports.Phase
}

func addPhase(name string, d time.Duration) {
	if d <= 0 {
		return
	}
	phases.Lock()
	defer phases.Unlock()
	if phases.m == nil {
		phases.m = map[string]reports.Phase{}
	}
	p := phases.m[name]
	p.Count++
	p.TotalSec += d.Seconds()
	p.MaxSec = max(p.MaxSec, d.Seconds())
	phases.m[name] = p
}

func phaseSnapshot() map[string]reports.Phase {
	phases.Lock()
	defer phases.Unlock()
	out := map[string]reports.Phase{}
	for k, v := range phases.m {
		out[k] = v
	}
	return out
}

func printPhases(w io.Writer, m map[string]reports.Phase) {
	if len(m) == 0 {
		return
	}
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	sort.Strings(names)
	fmt.Fprintln(w, "rdmasuite: time per phase (summed over pods/pairs; max of one):")
	for _, n := range names {
		p := m[n]
		fmt.Fprintf(w, "  %-12s %3d × total %7.2f s  max %6.2f s\n", n, p.Count, p.TotalSec, p.MaxSec)
	}
}
