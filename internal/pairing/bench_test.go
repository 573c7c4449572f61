package pairing

import (
	"fmt"
	"testing"
)

// BenchmarkSchedule times building the schedule, and reports its shape:
// rounds, pairs and pods (2 per pair) per schedule.
func BenchmarkSchedule(b *testing.B) {
	for _, mode := range []string{Ring, All} {
		for _, n := range []int{16, 64, 256, 1024} {
			b.Run(fmt.Sprintf("%s/%d", mode, n), func(b *testing.B) {
				ns := nodes(n)
				var rounds [][]Pair
				for b.Loop() {
					var err error
					if rounds, err = Schedule(ns, mode); err != nil {
						b.Fatal(err)
					}
				}
				pairs := 0
				for _, r := range rounds {
					pairs += len(r)
				}
				b.ReportMetric(float64(len(rounds)), "rounds")
				b.ReportMetric(float64(pairs), "pairs")
				b.ReportMetric(float64(2*pairs), "pods")
			})
		}
	}
}
