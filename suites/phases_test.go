package suites

import (
	"fmt"
	"io"
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
	if len(m) > 0 {
		fmt.Fprint(w, "rdmasuite: ")
	}
	reports.PhasesText(w, m)
}
