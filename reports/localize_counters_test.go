package reports

import (
	"strings"
	"testing"
)

// locLinkChecks adds a bandwidth/link check per pair and rail: passing, or
// failing with its judged counters over allowance on the sides count says
// (node → counters; a node not in the map counted nothing).
func locLinkChecks(pairs [][2]string, rails []string, count func(client, server, port string) map[string]int) []Check {
	var cs []Check
	for _, p := range pairs {
		for _, r := range rails {
			c := Check{ID: "bandwidth/link", Variant: "shared-dev", Nodes: []string{p[0], p[1]}, Rail: r + "→" + r, Status: Pass}
			over := count(p[0], p[1], r)
			for i, side := range []string{"client", "server"} {
				n := p[i]
				c.Measured = append(c.Measured, Measurement{Name: side + overAllowanceSuffix, Node: n, Port: r, Value: float64(over[n])})
				if over[n] > 0 {
					c.Status = Fail
				}
			}
			cs = append(cs, c)
		}
	}
	return cs
}

func locFindingOf(t *testing.T, fs []Finding, kind FindingKind, node string) Finding {
	t.Helper()
	for _, f := range fs {
		if f.Kind == kind && f.Nodes[0] == node {
			return f
		}
	}
	t.Fatalf("no %s finding on %s in %+v", kind, node, fs)
	return Finding{}
}

// Which end of a dirty link: a rail whose own port counts errors with every partner is
// that port or its cable; one whose partners count them (not it) is what it
// sends; a pair whose errors one end counts says which; the culprits line
// and the Markdown localisation carry it. Bandwidth passes everywhere: the
// link checks alone localise.
func TestLocalizeByTheSideWhoseCountersRose(t *testing.T) {
	// n3's mlx5_1/1 receives errors from every partner (all-pairs, 4 nodes).
	all4 := [][2]string{{"n1", "n2"}, {"n1", "n3"}, {"n1", "n4"}, {"n2", "n3"}, {"n2", "n4"}, {"n3", "n4"}}
	own := func(c, s, port string) map[string]int {
		if port == "mlx5_1/1" && (c == "n3" || s == "n3") {
			return map[string]int{"n3": 2}
		}
		return nil
	}
	run := Run{Checks: append(locPairChecks("shared-dev", all4, locRails, locAllPass), locLinkChecks(all4, locRails, own)...)}
	f := locFindingOf(t, Localize(run), BadPort, "n3")
	if f.Rail != "mlx5_1/1" || !strings.Contains(f.Explanation, "its port counters rose on mlx5_1/1 itself with every partner (3 of 3 link checks)") ||
		len(f.Counters) != 3 || f.Counters[0].Node != "n3" || f.Counters[0].Counters != 2 {
		t.Fatalf("own port: %+v", f)
	}
	cul := Culprits(Localize(run))
	if len(cul) != 1 || !strings.Contains(cul[0].Explanation, "counted at this port") {
		t.Fatalf("culprits: %+v", cul)
	}
	var md strings.Builder
	if err := Markdown(&md, run); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md.String(), "its port counters rose on mlx5_1/1 itself") {
		t.Fatalf("markdown lacks the counter evidence:\n%s", md.String())
	}

	// The partners count what n3's mlx5_1/1 sends.
	theirs := func(c, s, port string) map[string]int {
		if port != "mlx5_1/1" {
			return nil
		}
		switch "n3" {
		case c:
			return map[string]int{s: 1}
		case s:
			return map[string]int{c: 1}
		}
		return nil
	}
	run = Run{Checks: append(locPairChecks("shared-dev", all4, locRails, locAllPass), locLinkChecks(all4, locRails, theirs)...)}
	f = locFindingOf(t, Localize(run), BadPort, "n3")
	if !strings.Contains(f.Explanation, "counted by its partners' ports (3 of 3), not by mlx5_1/1: what mlx5_1/1 sends arrives damaged") {
		t.Fatalf("partners count: %+v", f)
	}

	// One link: n1↔n2 on mlx5_0/1, errors counted by n2's port only; both
	// pass with their other partners.
	link := func(c, s, port string) map[string]int {
		if port == "mlx5_0/1" && locKey(c, s) == locKey("n1", "n2") {
			return map[string]int{"n2": 4}
		}
		return nil
	}
	run = Run{Checks: append(locPairChecks("shared-dev", all4, locRails, locAllPass), locLinkChecks(all4, locRails, link)...)}
	f = locFindingOf(t, Localize(run), BadLink, "n1")
	if !strings.Contains(f.Explanation, "the port counters rose at one end only: n2 mlx5_0/1 (with n1)") || len(f.Counters) != 1 {
		t.Fatalf("one link: %+v", f)
	}

	// A fleet-sized bad node lists a bounded number of ends and counts the rest.
	var ring [][2]string
	for i := 0; i < 40; i++ {
		ring = append(ring, [2]string{"hub", "p" + string(rune('A'+i%26)) + string(rune('a'+i/26))})
	}
	hub := func(c, s, port string) map[string]int { return map[string]int{"hub": 1} }
	run = Run{Checks: append(locPairChecks("shared-dev", ring, locRails, locAllPass), locLinkChecks(ring, locRails, hub)...)}
	f = locFindingOf(t, Localize(run), BadNode, "hub")
	if len(f.Counters) != maxCounterSides || f.CountersMore != 80-maxCounterSides || !strings.Contains(f.Explanation, "port counters rose on: hub mlx5_0/1 (with pAa, pAb, pBa, pBb and 36 more)") {
		t.Fatalf("bad node: %d sides, %d more: %s", len(f.Counters), f.CountersMore, f.Explanation)
	}
}
