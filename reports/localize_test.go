package reports

import (
	"encoding/json"
	"math/rand"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// Pair schedules written out by hand: client → server.
var (
	locRing4 = [][2]string{{"n1", "n2"}, {"n2", "n3"}, {"n3", "n4"}, {"n4", "n1"}}
	locAll5  = [][2]string{
		{"n1", "n2"}, {"n1", "n3"}, {"n1", "n4"}, {"n1", "n5"},
		{"n2", "n3"}, {"n2", "n4"}, {"n2", "n5"},
		{"n3", "n4"}, {"n3", "n5"},
		{"n4", "n5"},
	}
	locRails = []string{"mlx5_0/1", "mlx5_1/1"}
)

// locVerdict decides one check: client, server and the client's/server's
// port (same-rail pairing, so both ports have the same name).
type locVerdict func(client, server, port string) Status

func locAllPass(string, string, string) Status { return Pass }

// locPairChecks builds bandwidth/write and bandwidth/read per pair and rail,
// as the bandwidth feature does (Nodes: client, server; Rail
// "client port→server port").
func locPairChecks(variant string, pairs [][2]string, rails []string, v locVerdict) []Check {
	var cs []Check
	for _, p := range pairs {
		for _, r := range rails {
			for _, op := range []string{"write", "read"} {
				st := v(p[0], p[1], r)
				c := Check{ID: "bandwidth/" + op, Variant: variant, Nodes: []string{p[0], p[1]}, Status: st}
				if r != "" {
					c.Rail = r + "→" + r
				}
				if st == NotRun {
					c.Reason = "peer pod never started"
				}
				cs = append(cs, c)
			}
		}
	}
	return cs
}

// locInvolves: the pair (client, server) touches node n.
func locInvolves(n string) func(c, s string) bool {
	return func(c, s string) bool { return c == n || s == n }
}

func locLink(a, b string) func(c, s string) bool {
	return func(c, s string) bool { return (c == a && s == b) || (c == b && s == a) }
}

// locFailWhen fails the checks of the pairs sel picks, on port (any port when
// empty).
func locFailWhen(sel func(c, s string) bool, port string) locVerdict {
	return func(c, s, r string) Status {
		if sel(c, s) && (port == "" || r == port) {
			return Fail
		}
		return Pass
	}
}

func locRun(cs ...[]Check) Run {
	r := Run{Schema: Schema, RunID: "loc"}
	for _, c := range cs {
		r.Checks = append(r.Checks, c...)
	}
	// Node rows are no pair evidence: one node each.
	r.Checks = append(r.Checks, Check{ID: "bandwidth/ports", Variant: "shared-dev", Nodes: []string{"n2"}, Status: Fail})
	return r
}

var locBW = []string{"bandwidth/read", "bandwidth/write"}

func assertLocalize(t *testing.T, r Run, want []Finding) {
	t.Helper()
	got := Localize(r)
	if !reflect.DeepEqual(got, want) {
		gj, _ := json.MarshalIndent(got, "", "  ")
		wj, _ := json.MarshalIndent(want, "", "  ")
		t.Fatalf("findings:\n%s\nwant:\n%s", gj, wj)
	}
	// The order does not depend on the order of the checks.
	shuffled := r
	shuffled.Checks = append([]Check(nil), r.Checks...)
	rand.New(rand.NewSource(1)).Shuffle(len(shuffled.Checks), func(i, j int) {
		shuffled.Checks[i], shuffled.Checks[j] = shuffled.Checks[j], shuffled.Checks[i]
	})
	if again := Localize(shuffled); !reflect.DeepEqual(again, got) {
		t.Fatalf("shuffled checks give other findings: %+v", again)
	}
}

func TestLocalizeAllPassHasNoFindings(t *testing.T) {
	for name, pairs := range map[string][][2]string{"ring4": locRing4, "all5": locAll5} {
		t.Run(name, func(t *testing.T) {
			r := locRun(locPairChecks("shared-dev", pairs, locRails, locAllPass))
			r.Checks[len(r.Checks)-1].Status = Pass
			assertLocalize(t, r, nil)
		})
	}
}

func TestLocalizeBadNodeAllRails(t *testing.T) {
	t.Run("ring4", func(t *testing.T) {
		assertLocalize(t, locRun(locPairChecks("shared-dev", locRing4, locRails, locFailWhen(locInvolves("n2"), ""))), []Finding{{
			Kind: BadNode, Variant: "shared-dev", Nodes: []string{"n2"}, PartnersFailed: 2, FailedWith: []string{"n1", "n3"}, Checks: locBW,
			Explanation: "n2 failed with all 2 partners (n1, n3) on every rail (mlx5_0/1, mlx5_1/1): suspect the node (HCA, driver, configuration, cabling), not the fabric",
		}})
	})
	t.Run("all5", func(t *testing.T) {
		assertLocalize(t, locRun(locPairChecks("shared-dev", locAll5, locRails, locFailWhen(locInvolves("n3"), ""))), []Finding{{
			Kind: BadNode, Variant: "shared-dev", Nodes: []string{"n3"}, PartnersFailed: 4, FailedWith: []string{"n1", "n2", "n4", "n5"}, Checks: locBW,
			Explanation: "n3 failed with all 4 partners (n1, n2, n4, n5) on every rail (mlx5_0/1, mlx5_1/1): suspect the node (HCA, driver, configuration, cabling), not the fabric",
		}})
	})
	t.Run("no rails, error counts as failing", func(t *testing.T) {
		v := func(c, s, _ string) Status {
			if c == "n2" || s == "n2" {
				return Error
			}
			return Pass
		}
		assertLocalize(t, locRun(locPairChecks("shared-dev", locRing4, []string{""}, v)), []Finding{{
			Kind: BadNode, Variant: "shared-dev", Nodes: []string{"n2"}, PartnersFailed: 2, FailedWith: []string{"n1", "n3"}, Checks: locBW,
			Explanation: "n2 failed with all 2 partners (n1, n3): suspect the node (HCA, driver, configuration, cabling), not the fabric",
		}})
	})
}

func TestLocalizeBadNodeWithoutRails(t *testing.T) {
	var cs []Check
	for _, p := range locAll5 {
		st := Pass
		if p[0] == "n5" || p[1] == "n5" {
			st = Error
		}
		cs = append(cs, Check{ID: "nccl/all_reduce_perf", Variant: "shared-dev", Nodes: []string{p[0], p[1]}, Status: st})
	}
	assertLocalize(t, locRun(cs), []Finding{{
		Kind: BadNode, Variant: "shared-dev", Nodes: []string{"n5"}, PartnersFailed: 4, FailedWith: []string{"n1", "n2", "n3", "n4"},
		Checks:      []string{"nccl/all_reduce_perf"},
		Explanation: "n5 failed with all 4 partners (n1, n2, n3, n4): suspect the node (HCA, driver, configuration, cabling), not the fabric",
	}})
}

func TestLocalizeBadPort(t *testing.T) {
	t.Run("ring4", func(t *testing.T) {
		assertLocalize(t, locRun(locPairChecks("shared-dev", locRing4, locRails, locFailWhen(locInvolves("n2"), "mlx5_1/1"))), []Finding{{
			Kind: BadPort, Variant: "shared-dev", Nodes: []string{"n2"}, Rail: "mlx5_1/1",
			PartnersFailed: 2, PartnersPassed: 2, FailedWith: []string{"n1", "n3"}, PassedWith: []string{"n1", "n3"}, Checks: locBW,
			Explanation: "n2 failed with all 2 partners on rail mlx5_1/1 and passed on mlx5_0/1 with 2 partners (n1, n3): suspect its mlx5_1/1 port/cable/switch port, not the fabric",
		}})
	})
	t.Run("all5", func(t *testing.T) {
		assertLocalize(t, locRun(locPairChecks("shared-dev", locAll5, locRails, locFailWhen(locInvolves("n4"), "mlx5_0/1"))), []Finding{{
			Kind: BadPort, Variant: "shared-dev", Nodes: []string{"n4"}, Rail: "mlx5_0/1",
			PartnersFailed: 4, PartnersPassed: 4, FailedWith: []string{"n1", "n2", "n3", "n5"}, PassedWith: []string{"n1", "n2", "n3", "n5"}, Checks: locBW,
			Explanation: "n4 failed with all 4 partners on rail mlx5_0/1 and passed on mlx5_1/1 with 4 partners (n1, n2, n3, n5): suspect its mlx5_0/1 port/cable/switch port, not the fabric",
		}})
	})
	// Cross rails: the node's port is its own side of the label, the left
	// as client and the right as server.
	t.Run("cross rails, own side", func(t *testing.T) {
		var cs []Check
		for _, p := range locRing4 {
			for _, l := range locRails {
				for _, r := range locRails {
					st := Pass
					if (p[0] == "n3" && l == "mlx5_1/1") || (p[1] == "n3" && r == "mlx5_1/1") {
						st = Fail
					}
					cs = append(cs, Check{ID: "bandwidth/write", Variant: "hostdev", Nodes: []string{p[0], p[1]}, Rail: l + "→" + r, Status: st})
				}
			}
		}
		assertLocalize(t, locRun(cs), []Finding{{
			Kind: BadPort, Variant: "hostdev", Nodes: []string{"n3"}, Rail: "mlx5_1/1",
			PartnersFailed: 2, PartnersPassed: 2, FailedWith: []string{"n2", "n4"}, PassedWith: []string{"n2", "n4"}, Checks: []string{"bandwidth/write"},
			Explanation: "n3 failed with all 2 partners on rail mlx5_1/1 and passed on mlx5_0/1 with 2 partners (n2, n4): suspect its mlx5_1/1 port/cable/switch port, not the fabric",
		}})
	})
}

// A node failing on one rail with one partner and on the other with
// another: no single port explains it, the node is named with its rails.
func TestLocalizeBadNodeMixedRails(t *testing.T) {
	v := func(c, s, r string) Status {
		if (locLink("n1", "n2")(c, s) && r == "mlx5_0/1") || (locLink("n2", "n3")(c, s) && r == "mlx5_1/1") {
			return Fail
		}
		return Pass
	}
	assertLocalize(t, locRun(locPairChecks("shared-dev", locRing4, locRails, v)), []Finding{{
		Kind: BadNode, Variant: "shared-dev", Nodes: []string{"n2"}, Rail: "mlx5_0/1, mlx5_1/1", PartnersFailed: 2, FailedWith: []string{"n1", "n3"}, Checks: locBW,
		Explanation: "n2 failed with all 2 partners (n1, n3), on mlx5_0/1 with 1 of 2, mlx5_1/1 with 1 of 2: suspect the node (HCA, driver, configuration, cabling), not the fabric",
	}})
}

// Two ports of a node each failing with the one partner they were measured
// with: one partner per port cannot single a port out.
func TestLocalizeOnePartnerPerPortIsNoBadPort(t *testing.T) {
	c := func(client, server, rail string, st Status) Check {
		return Check{ID: "bandwidth/write", Variant: "shared-dev", Nodes: []string{client, server}, Rail: rail, Status: st}
	}
	r := locRun([]Check{
		c("n1", "n2", "mlx5_0/1→mlx5_0/1", Pass), c("n1", "n2", "mlx5_1/1→mlx5_1/1", Fail),
		c("n2", "n3", "mlx5_0/1→mlx5_0/1", Pass), c("n2", "n3", "mlx5_2/1→mlx5_2/1", Fail),
		c("n3", "n4", "mlx5_0/1→mlx5_0/1", Pass), c("n4", "n1", "mlx5_0/1→mlx5_0/1", Pass),
	})
	assertLocalize(t, r, []Finding{{
		Kind: BadNode, Variant: "shared-dev", Nodes: []string{"n2"}, Rail: "mlx5_1/1, mlx5_2/1", PartnersFailed: 2, FailedWith: []string{"n1", "n3"},
		Checks:      []string{"bandwidth/write"},
		Explanation: "n2 failed with all 2 partners (n1, n3), on mlx5_1/1 with 1 of 1, mlx5_2/1 with 1 of 1; passed on mlx5_0/1: suspect the node (HCA, driver, configuration, cabling), not the fabric",
	}})
}

func TestLocalizeBadLink(t *testing.T) {
	t.Run("ring4", func(t *testing.T) {
		assertLocalize(t, locRun(locPairChecks("shared-dev", locRing4, locRails, locFailWhen(locLink("n1", "n2"), "mlx5_1/1"))), []Finding{{
			Kind: BadLink, Variant: "shared-dev", Nodes: []string{"n1", "n2"}, Rail: "mlx5_1/1→mlx5_1/1",
			PartnersPassed: 2, PassedWith: []string{"n3", "n4"}, Checks: locBW,
			Explanation: "n1↔n2 failed on rail mlx5_1/1→mlx5_1/1 while n1 passed with 1 partner (n4) and n2 with 1 partner (n3): suspect the link between them (cables, switch ports, route), not either node",
		}})
	})
	t.Run("all5", func(t *testing.T) {
		assertLocalize(t, locRun(locPairChecks("shared-dev", locAll5, locRails, locFailWhen(locLink("n2", "n4"), ""))), []Finding{{
			Kind: BadLink, Variant: "shared-dev", Nodes: []string{"n2", "n4"}, Rail: "mlx5_0/1→mlx5_0/1, mlx5_1/1→mlx5_1/1",
			PartnersPassed: 3, PassedWith: []string{"n1", "n3", "n5"}, Checks: locBW,
			Explanation: "n2↔n4 failed on rails mlx5_0/1→mlx5_0/1, mlx5_1/1→mlx5_1/1 while n2 passed with 3 partners (n1, n3, n5) and n4 with 3 partners (n1, n3, n5): suspect the link between them (cables, switch ports, route), not either node",
		}})
	})
}

func TestLocalizeTwoBadLinks(t *testing.T) {
	either := func(a, b func(c, s string) bool) func(c, s string) bool {
		return func(c, s string) bool { return a(c, s) || b(c, s) }
	}
	t.Run("ring4", func(t *testing.T) {
		assertLocalize(t, locRun(locPairChecks("shared-dev", locRing4, locRails, locFailWhen(either(locLink("n1", "n2"), locLink("n3", "n4")), ""))), []Finding{
			{
				Kind: BadLink, Variant: "shared-dev", Nodes: []string{"n1", "n2"}, Rail: "mlx5_0/1→mlx5_0/1, mlx5_1/1→mlx5_1/1",
				PartnersPassed: 2, PassedWith: []string{"n3", "n4"}, Checks: locBW,
				Explanation: "n1↔n2 failed on rails mlx5_0/1→mlx5_0/1, mlx5_1/1→mlx5_1/1 while n1 passed with 1 partner (n4) and n2 with 1 partner (n3): suspect the link between them (cables, switch ports, route), not either node",
			},
			{
				Kind: BadLink, Variant: "shared-dev", Nodes: []string{"n3", "n4"}, Rail: "mlx5_0/1→mlx5_0/1, mlx5_1/1→mlx5_1/1",
				PartnersPassed: 2, PassedWith: []string{"n1", "n2"}, Checks: locBW,
				Explanation: "n3↔n4 failed on rails mlx5_0/1→mlx5_0/1, mlx5_1/1→mlx5_1/1 while n3 passed with 1 partner (n2) and n4 with 1 partner (n1): suspect the link between them (cables, switch ports, route), not either node",
			},
		})
	})
	t.Run("all5, sharing a node", func(t *testing.T) {
		assertLocalize(t, locRun(locPairChecks("shared-dev", locAll5, locRails, locFailWhen(either(locLink("n1", "n5"), locLink("n5", "n3")), "mlx5_0/1"))), []Finding{
			{
				Kind: BadLink, Variant: "shared-dev", Nodes: []string{"n1", "n5"}, Rail: "mlx5_0/1→mlx5_0/1",
				PartnersFailed: 1, PartnersPassed: 3, FailedWith: []string{"n3"}, PassedWith: []string{"n2", "n3", "n4"}, Checks: locBW,
				Explanation: "n1↔n5 failed on rail mlx5_0/1→mlx5_0/1 while n1 passed with 3 partners (n2, n3, n4) and n5 with 2 partners (n2, n4): suspect the link between them (cables, switch ports, route), not either node",
			},
			{
				Kind: BadLink, Variant: "shared-dev", Nodes: []string{"n3", "n5"}, Rail: "mlx5_0/1→mlx5_0/1",
				PartnersFailed: 1, PartnersPassed: 3, FailedWith: []string{"n1"}, PassedWith: []string{"n1", "n2", "n4"}, Checks: locBW,
				Explanation: "n3↔n5 failed on rail mlx5_0/1→mlx5_0/1 while n3 passed with 3 partners (n1, n2, n4) and n5 with 2 partners (n2, n4): suspect the link between them (cables, switch ports, route), not either node",
			},
		})
	})
}

func TestLocalizeOnePartnerIsInconclusive(t *testing.T) {
	// n5 was measured with n1 only (its other pairs not run), and failed.
	t.Run("all5, one node with one partner", func(t *testing.T) {
		v := func(c, s, _ string) Status {
			switch {
			case locLink("n1", "n5")(c, s):
				return Fail
			case locInvolves("n5")(c, s):
				return NotRun
			}
			return Pass
		}
		assertLocalize(t, locRun(locPairChecks("shared-dev", locAll5, locRails, v)), []Finding{{
			Kind: Inconclusive, Variant: "shared-dev", Nodes: []string{"n5"}, Rail: "mlx5_0/1→mlx5_0/1, mlx5_1/1→mlx5_1/1",
			PartnersFailed: 1, FailedWith: []string{"n1"}, Checks: locBW,
			Explanation: "inconclusive: one partner: n5 was measured with n1 only and failed on rails mlx5_0/1→mlx5_0/1, mlx5_1/1→mlx5_1/1, while n1 passed with 3 partners (n2, n3, n4): suspect n5 or the n1↔n5 link; measure n5 against another node (--pairing=all)",
		}})
	})
	// Two nodes (a ring of 2: both directions): each is the other's only
	// partner. Loopback rows are no partner, only a note.
	t.Run("two nodes", func(t *testing.T) {
		pairs := [][2]string{{"a", "b"}, {"b", "a"}}
		r := locRun(locPairChecks("shared-dev", pairs, []string{"mlx5_0/1"}, locFailWhen(locLink("a", "b"), "")))
		r.Checks = append(r.Checks,
			Check{ID: "bandwidth/write/loopback", Variant: "shared-dev", Nodes: []string{"a", "a"}, Rail: "mlx5_0/1→mlx5_0/1", Status: Pass},
			Check{ID: "bandwidth/write/loopback", Variant: "shared-dev", Nodes: []string{"b", "b"}, Rail: "mlx5_0/1→mlx5_0/1", Status: Fail})
		assertLocalize(t, r, []Finding{{
			Kind: Inconclusive, Variant: "shared-dev", Nodes: []string{"a", "b"}, Rail: "mlx5_0/1→mlx5_0/1", Checks: locBW,
			Explanation: "inconclusive: one partner: a↔b failed on rail mlx5_0/1→mlx5_0/1 and neither node was measured with another partner; a's loopback passed; b's loopback failed too: a bad node and a bad link read the same; measure against more nodes (--pairing=all)",
		}})
	})
}

// Not-run checks are no measurement: a pair that did not run is neither a
// pass nor a fail, so a node failing with one partner and not run with
// the other has one partner.
func TestLocalizeIgnoresNotRun(t *testing.T) {
	t.Run("ring4: the other pair did not run", func(t *testing.T) {
		v := func(c, s, _ string) Status {
			switch {
			case locLink("n1", "n2")(c, s):
				return Fail
			case locLink("n2", "n3")(c, s):
				return NotRun
			}
			return Pass
		}
		assertLocalize(t, locRun(locPairChecks("shared-dev", locRing4, locRails, v)), []Finding{{
			Kind: Inconclusive, Variant: "shared-dev", Nodes: []string{"n2"}, Rail: "mlx5_0/1→mlx5_0/1, mlx5_1/1→mlx5_1/1",
			PartnersFailed: 1, FailedWith: []string{"n1"}, Checks: locBW,
			Explanation: "inconclusive: one partner: n2 was measured with n1 only and failed on rails mlx5_0/1→mlx5_0/1, mlx5_1/1→mlx5_1/1, while n1 passed with 1 partner (n4): suspect n2 or the n1↔n2 link; measure n2 against another node (--pairing=all)",
		}})
	})
	t.Run("all5: not-run pairs beside passes", func(t *testing.T) {
		v := func(c, s, _ string) Status {
			if locInvolves("n3")(c, s) {
				return NotRun
			}
			return Pass
		}
		r := locRun(locPairChecks("shared-dev", locAll5, locRails, v))
		r.Checks[len(r.Checks)-1].Status = NotRun
		assertLocalize(t, r, nil)
	})
	t.Run("all5: a bad node with one pair not run", func(t *testing.T) {
		v := func(c, s, _ string) Status {
			switch {
			case locLink("n3", "n5")(c, s):
				return NotRun
			case locInvolves("n3")(c, s):
				return Fail
			}
			return Pass
		}
		assertLocalize(t, locRun(locPairChecks("shared-dev", locAll5, locRails, v)), []Finding{{
			Kind: BadNode, Variant: "shared-dev", Nodes: []string{"n3"}, PartnersFailed: 3, FailedWith: []string{"n1", "n2", "n4"}, Checks: locBW,
			Explanation: "n3 failed with all 3 partners (n1, n2, n4) on every rail (mlx5_0/1, mlx5_1/1): suspect the node (HCA, driver, configuration, cabling), not the fabric",
		}})
	})
}

// Loopback rows say whether the node works on its own; they are never a
// partner. Variants are judged apart.
func TestLocalizeLoopbackAndVariants(t *testing.T) {
	r := locRun(
		locPairChecks("shared-dev", locRing4, locRails, locFailWhen(locInvolves("n2"), "")),
		locPairChecks("hostdev", locRing4, locRails, locFailWhen(locInvolves("n4"), "mlx5_1/1")),
		[]Check{
			{ID: "bandwidth/write/loopback", Variant: "shared-dev", Nodes: []string{"n2", "n2"}, Rail: "mlx5_0/1→mlx5_0/1", Status: Fail},
			{ID: "bandwidth/write/loopback", Variant: "hostdev", Nodes: []string{"n4", "n4"}, Rail: "mlx5_0/1→mlx5_0/1", Status: Fail},
			{ID: "bandwidth/write/loopback", Variant: "hostdev", Nodes: []string{"n4", "n4"}, Rail: "mlx5_1/1→mlx5_1/1", Status: Pass},
		})
	assertLocalize(t, r, []Finding{
		{
			Kind: BadPort, Variant: "hostdev", Nodes: []string{"n4"}, Rail: "mlx5_1/1",
			PartnersFailed: 2, PartnersPassed: 2, FailedWith: []string{"n1", "n3"}, PassedWith: []string{"n1", "n3"}, Checks: locBW,
			Explanation: "n4 failed with all 2 partners on rail mlx5_1/1 and passed on mlx5_0/1 with 2 partners (n1, n3): its loopback on mlx5_1/1 passed: suspect its mlx5_1/1 cable or switch port, not the fabric",
		},
		{
			Kind: BadNode, Variant: "shared-dev", Nodes: []string{"n2"}, PartnersFailed: 2, FailedWith: []string{"n1", "n3"}, Checks: locBW,
			Explanation: "n2 failed with all 2 partners (n1, n3) on every rail (mlx5_0/1, mlx5_1/1): its loopback failed too: suspect the node itself (HCA, driver, configuration), not the fabric",
		},
	})
}

// The other two loopback readings: a bad node whose loopback passed (its
// cables or switch ports), a bad port whose loopback failed too (the port).
func TestLocalizeLoopbackOtherWay(t *testing.T) {
	r := locRun(
		locPairChecks("shared-dev", locRing4, locRails, locFailWhen(locInvolves("n2"), "")),
		locPairChecks("hostdev", locRing4, locRails, locFailWhen(locInvolves("n4"), "mlx5_1/1")),
		[]Check{
			{ID: "bandwidth/write/loopback", Variant: "shared-dev", Nodes: []string{"n2", "n2"}, Rail: "mlx5_0/1→mlx5_0/1", Status: Pass},
			{ID: "bandwidth/read", Variant: "shared-dev", Nodes: []string{"n2", "n2"}, Rail: "mlx5_1/1→mlx5_1/1", Status: Pass}, // same node: loopback
			{ID: "bandwidth/write/loopback", Variant: "hostdev", Nodes: []string{"n4", "n4"}, Rail: "mlx5_1/1→mlx5_1/1", Status: Error},
		})
	assertLocalize(t, r, []Finding{
		{
			Kind: BadPort, Variant: "hostdev", Nodes: []string{"n4"}, Rail: "mlx5_1/1",
			PartnersFailed: 2, PartnersPassed: 2, FailedWith: []string{"n1", "n3"}, PassedWith: []string{"n1", "n3"}, Checks: locBW,
			Explanation: "n4 failed with all 2 partners on rail mlx5_1/1 and passed on mlx5_0/1 with 2 partners (n1, n3): its loopback on mlx5_1/1 failed too: suspect its mlx5_1/1 port (HCA side), not the fabric",
		},
		{
			Kind: BadNode, Variant: "shared-dev", Nodes: []string{"n2"}, PartnersFailed: 2, FailedWith: []string{"n1", "n3"}, Checks: locBW,
			Explanation: "n2 failed with all 2 partners (n1, n3) on every rail (mlx5_0/1, mlx5_1/1): its loopback passed: suspect its cables or switch ports, not its HCA or the rest of the fabric",
		},
	})
}

// A port its own probe read as DOWN is a culprit in the verdict line and
// in localisation even when the pairing alone is inconclusive (two nodes,
// one partner each); a node whose pod saw no RDMA device too. A passing
// check's host facts blame nothing.
func TestHostFaultsAreCulpritsWhateverThePairing(t *testing.T) {
	pair := func(id, client, server, rail string, st Status, hf ...HostFault) Check {
		return Check{ID: id, Variant: "shared-dev", Nodes: []string{client, server}, Rail: rail, Status: st, HostFaults: hf,
			Traits: &Traits{Pair: true, Localize: true, Op: "write"}}
	}
	down := HostFault{Node: "rxe-node-2", Port: "rxe1/1", What: "port not ACTIVE (rxe1/1 is DOWN)"}
	r := Run{RunID: "r", Checks: []Check{
		pair("bandwidth/write", "rxe-node-1", "rxe-node-2", "rxe1/1→rxe1/1", Fail, down),
		pair("bandwidth/write", "rxe-node-2", "rxe-node-1", "rxe1/1→rxe1/1", Fail, down),
		pair("bandwidth/write", "rxe-node-1", "rxe-node-2", "rxe0/1→rxe0/1", Pass),
	}}
	fs := Localize(r)
	var port *Finding
	for i := range fs {
		if fs[i].Kind == BadPort {
			port = &fs[i]
		}
	}
	if port == nil || port.Nodes[0] != "rxe-node-2" || port.Rail != "rxe1/1" || !strings.Contains(port.Explanation, "rxe1/1 is DOWN") ||
		port.PartnersFailed != 1 {
		t.Fatalf("no bad-port finding for the port read DOWN: %+v", fs)
	}
	if s := SummaryText(r); !strings.Contains(s, "port rxe1/1 on node rxe-node-2 (bad port") {
		t.Errorf("the verdict line names no culprit: %s", s)
	}
	nodev := HostFault{Node: "rxe-node-3", What: "no RDMA device visible in pod p"}
	r.Checks = append(r.Checks, pair("bandwidth/write", "rxe-node-3", "rxe-node-1", "", Fail, nodev),
		pair("latency/write", "rxe-node-3", "rxe-node-1", "", Pass, nodev))
	cs := Culprits(Localize(r))
	if len(cs) != 2 || cs[0].Kind != BadNode || cs[0].Nodes[0] != "rxe-node-3" {
		t.Errorf("culprits: %+v", cs)
	}
	for _, f := range Localize(r) {
		if f.Kind == BadNode && slices.Contains(f.Checks, "latency/write") {
			t.Errorf("a passing check blamed a node: %+v", f)
		}
	}
}
