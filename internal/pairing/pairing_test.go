package pairing

import (
	"fmt"
	"testing"
)

func nodes(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("n%d", i)
	}
	return out
}

// Invariants for every mode and size: pairs of a round are disjoint, no
// self-pairs, every node appears as client and as server (ring) or every
// unordered pair appears exactly once (all).
func TestScheduleInvariants(t *testing.T) {
	for n := 2; n <= 9; n++ {
		for _, mode := range []string{Ring, All} {
			rounds, err := Schedule(nodes(n), mode)
			if err != nil {
				t.Fatal(err)
			}
			asClient, asServer := map[string]bool{}, map[string]bool{}
			unordered := map[string]int{}
			for ri, round := range rounds {
				busy := map[string]bool{}
				for _, p := range round {
					if p.Client == p.Server {
						t.Fatalf("n=%d %s: self pair %v", n, mode, p)
					}
					if busy[p.Client] || busy[p.Server] {
						t.Fatalf("n=%d %s round %d: node in two pairs: %v", n, mode, ri, round)
					}
					busy[p.Client], busy[p.Server] = true, true
					asClient[p.Client], asServer[p.Server] = true, true
					a, b := p.Client, p.Server
					if a > b {
						a, b = b, a
					}
					unordered[a+"|"+b]++
				}
			}
			if mode == Ring && (len(asClient) != n || len(asServer) != n) {
				t.Fatalf("n=%d ring: clients %d servers %d", n, len(asClient), len(asServer))
			}
			if mode == All {
				if len(unordered) != n*(n-1)/2 {
					t.Fatalf("n=%d all: %d distinct pairs, want %d", n, len(unordered), n*(n-1)/2)
				}
				for k, c := range unordered {
					if c != 1 {
						t.Fatalf("n=%d all: pair %s tested %d times", n, k, c)
					}
				}
			}
		}
	}
}

func TestScheduleErrors(t *testing.T) {
	if _, err := Schedule(nodes(1), Ring); err == nil {
		t.Fatal("one node accepted")
	}
	if _, err := Schedule(nodes(4), "star"); err == nil {
		t.Fatal("unknown mode accepted")
	}
}
