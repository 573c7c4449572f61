// Package pairing schedules server/client node pairs for the bandwidth
// features: rounds of disjoint pairs, so every pair of a round can run at the
// same time without a node serving two tests at once.
package pairing

import "fmt"

// Pair is one bandwidth test: Client sends to Server.
type Pair struct{ Server, Client string }

func (p Pair) String() string { return p.Client + "->" + p.Server }

// Modes.
const (
	// Ring tests every node as client and as server against its neighbours
	// in a ring: N pairs in 2 rounds (3 when N is odd). Cheap, and every
	// node and every port is exercised in both directions.
	Ring = "ring"
	// All tests every unordered pair once (round-robin tournament):
	// N(N-1)/2 pairs in N-1 rounds (N when odd). Finds a bad link between
	// two otherwise good nodes.
	All = "all"
)

// Schedule returns rounds of disjoint pairs over nodes.
func Schedule(nodes []string, mode string) ([][]Pair, error) {
	n := len(nodes)
	if n < 2 {
		return nil, fmt.Errorf("bandwidth pairs need at least 2 nodes, have %d", n)
	}
	switch mode {
	case Ring:
		return ring(nodes), nil
	case All:
		return roundRobin(nodes), nil
	}
	return nil, fmt.Errorf("unknown pairing %q: want %s or %s", mode, Ring, All)
}

func ring(nodes []string) [][]Pair {
	n := len(nodes)
	if n == 2 {
		return [][]Pair{{{Server: nodes[0], Client: nodes[1]}}, {{Server: nodes[1], Client: nodes[0]}}}
	}
	// Pair i: client i → server i+1. Pairs i and i+1 share a node, so even
	// and odd i go to different rounds; with N odd the last pair shares a
	// node with pair 0 and goes alone into a third round.
	var even, odd, last []Pair
	for i := 0; i < n; i++ {
		p := Pair{Client: nodes[i], Server: nodes[(i+1)%n]}
		switch {
		case n%2 == 1 && i == n-1:
			last = append(last, p)
		case i%2 == 0:
			even = append(even, p)
		default:
			odd = append(odd, p)
		}
	}
	rounds := [][]Pair{even, odd}
	if len(last) > 0 {
		rounds = append(rounds, last)
	}
	return rounds
}

// roundRobin is the circle method: fix one node, rotate the others.
func roundRobin(nodes []string) [][]Pair {
	list := append([]string(nil), nodes...)
	if len(list)%2 == 1 {
		list = append(list, "") // bye
	}
	n := len(list)
	var rounds [][]Pair
	for r := 0; r < n-1; r++ {
		var round []Pair
		for i := 0; i < n/2; i++ {
			a, b := list[i], list[n-1-i]
			if a == "" || b == "" {
				continue
			}
			if r%2 == 1 { // alternate directions between rounds
				a, b = b, a
			}
			round = append(round, Pair{Server: a, Client: b})
		}
		rounds = append(rounds, round)
		// rotate all but the first
		last := list[n-1]
		copy(list[2:], list[1:n-1])
		list[1] = last
	}
	return rounds
}
