package doctor

import (
	"fmt"
	"sort"
	"strings"

	"github.com/montanaflynn/stats"
)

// Seed 004: one node of several on the same shared storage shows sustained
// I/O pressure while its peers are clean.
//
// The verdict uses PSI's 60 s and 300 s averages, both of which must stand
// out: a node that was quiet for the last 10 s still carries a sustained
// problem in them, and a burst of a few seconds (a backup, an image pull)
// moves avg10 but not avg300 (a 10 s stall at 100 % adds about 3 points to
// avg300). iowait over the probe's short window is shown, not judged.
//
// Outliers use the modified z-score (Iglewicz & Hoaglin):
// 0.6745·(x − median)/MAD > 3.5, with an absolute floor so that idle nodes
// near 0 do not flag noise, and a spread floor of max(1 point, 10 % of the
// median) so identical peers (MAD 0) do not turn a small difference on a
// busy cluster into an infinite score.
const (
	outlierZ         = 3.5
	outlierFloorPct  = 10.0
	madFloorPoints   = 1.0
	madFloorOfMedian = 0.10
)

const IOPressureOutlier = "io-pressure-outlier"

type psiWindow struct {
	name string
	get  func(PSIAverages) float64
}

var sustainedWindows = []psiWindow{
	{"avg60", func(a PSIAverages) float64 { return a.Avg60 }},
	{"avg300", func(a PSIAverages) float64 { return a.Avg300 }},
}

// peerSpread is the median of vals and the spread a modified z-score
// divides by (the MAD, floored).
func peerSpread(vals []float64) (med, spread float64) {
	med, _ = stats.Median(vals)
	mad, _ := stats.MedianAbsoluteDeviation(vals)
	return med, max(mad, madFloorPoints, madFloorOfMedian*med)
}

// outlierScore returns the modified z-score of x against the peers'
// median and spread, and whether x is an outlier.
func outlierScore(x, med, spread float64) (z float64, out bool) {
	z = 0.6745 * (x - med) / spread
	return z, x >= outlierFloorPct && x > med && z > outlierZ
}

var _ = register(Rule{ID: IOPressureOutlier, Severity: Warning, Seed: "004",
	Cause:  "this node alone shows sustained I/O pressure (PSI) while its peers on the same shared storage are clean: a per-node problem below the VM (e.g. a hypervisor hardware-offload failure on its storage traffic path), not the shared disk",
	Fix:    "compare nfsstat -m on this node and a healthy peer; if identical, report the node (VM id) and the disk to the infrastructure provider with the PSI evidence",
	Raises: "PSI io some avg60 and avg300 both ≥ 10 % and both modified z-score > 3.5 against at least 3 nodes with PSI (spread floor max(1 point, 10 % of the median))",
	Silent: []string{"a burst that moves avg10 only (avg60/avg300 like the peers')", "a whole cluster busy alike (small differences around a high median)",
		"fewer than 3 nodes with PSI (no peer majority)", "a node without PSI (the node check is not-run, I/O pressure not judged)"},
	Eval: func(v *View) []Hit {
		var names []string
		var avgs []PSIAverages
		for _, n := range v.Nodes {
			if n.Host != nil && n.Host.IO != nil {
				names = append(names, n.Name)
				avgs = append(avgs, *n.Host.IO)
			}
		}
		if len(avgs) < 3 {
			return nil
		}
		// Every node is held against the same peers (all nodes with PSI):
		// their median and spread per window, computed once.
		meds, spreads := make([]float64, len(sustainedWindows)), make([]float64, len(sustainedWindows))
		for k, w := range sustainedWindows {
			vals := make([]float64, len(avgs))
			for j := range avgs {
				vals[j] = w.get(avgs[j])
			}
			meds[k], spreads[k] = peerSpread(vals)
		}
		var out []Hit
		for i, a := range avgs {
			var ev []string
			sustained := true
			for k, w := range sustainedWindows {
				med, spread := meds[k], spreads[k]
				z, is := outlierScore(w.get(a), med, spread)
				sustained = sustained && is
				ev = append(ev, fmt.Sprintf("PSI io some %s = %.1f%%; peers' median %.1f%%, spread %.2f, modified z-score %.1f (limit %.1f)", w.name, w.get(a), med, spread, z, outlierZ))
			}
			if !sustained {
				continue
			}
			ev = append(ev, "all nodes (avg10/avg60/avg300): "+valuesText(names, avgs))
			if h := v.Node(names[i]).Host; h.IOWaitPct != nil {
				ev = append(ev, fmt.Sprintf("iowait over the probe window: %.1f%%", *h.IOWaitPct))
			}
			out = append(out, hit(names[i], ev...))
		}
		return out
	}})

func valuesText(names []string, avgs []PSIAverages) string {
	idx := make([]int, len(names))
	for i := range idx {
		idx[i] = i
	}
	sort.Slice(idx, func(a, b int) bool { return names[idx[a]] < names[idx[b]] })
	var parts []string
	for _, i := range idx {
		parts = append(parts, fmt.Sprintf("%s=%.1f/%.1f/%.1f", names[i], avgs[i].Avg10, avgs[i].Avg60, avgs[i].Avg300))
	}
	return strings.Join(parts, " ")
}
