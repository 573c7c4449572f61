package verdict

import "testing"

// BenchmarkBandwidthVerdict8Rails judges one pair of an 8-rail node, two
// ops at two sizes: the per-pair cost the figure checks add to a run
// (256 pairs on a 256-node ring).
func BenchmarkBandwidthVerdict8Rails(b *testing.B) {
	t := &testing.T{}
	ops, sizes := []string{"write", "read"}, []int{k64, m1}
	cli, srv := pairOut(t, ops, sizes, 8, 195, nil)
	in := bwInput(t, ops, sizes, cli, srv)
	b.ResetTimer()
	for range b.N {
		if cs := Bandwidth(in).Checks; len(cs) != 16 {
			b.Fatalf("%d checks", len(cs))
		}
	}
}
