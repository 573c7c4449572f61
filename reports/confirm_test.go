package reports

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// confRing6 is a ring of six nodes, client → server.
var confRing6 = [][2]string{{"n0", "n1"}, {"n1", "n2"}, {"n2", "n3"}, {"n3", "n4"}, {"n4", "n5"}, {"n5", "n0"}}

func confNodes() []string { return []string{"n0", "n1", "n2", "n3", "n4", "n5"} }

// withFigure gives every check a write/read figure and its floor (100 Gb/s):
// a pass at 190, a failure at 60, as the bandwidth verdict records them.
func withFigure(cs []Check) []Check {
	for i := range cs {
		v := 190.0
		if cs[i].Status == Fail {
			v = 60
			cs[i].Diagnosis = "write_1MiB_avg = 60 Gb/s, threshold >= 100 Gb/s"
		}
		cs[i].Measured = []Measurement{{Name: strings.TrimPrefix(cs[i].ID, "bandwidth/") + "_1MiB_avg", Node: cs[i].Nodes[0],
			Value: v, Unit: "Gb/s", Threshold: &Threshold{Op: ">=", Value: 100, Source: "test"}}}
	}
	return cs
}

func TestPlanConfirmationPairsSuspectsWithCleanNodes(t *testing.T) {
	// n2's port 0 is bad: n1→n2 and n2→n3 fail on it.
	cs := locPairChecks("shared-dev", confRing6, locRails, func(c, s, port string) Status {
		if (c == "n2" || s == "n2") && port == "mlx5_0/1" {
			return Fail
		}
		return Pass
	})
	p := PlanConfirmation(cs, confNodes())
	if want := []string{"n1", "n2", "n3"}; !slices.Equal(p.Suspects, want) {
		t.Fatalf("suspects %v, want %v", p.Suspects, want)
	}
	if want := []string{"n0", "n4", "n5"}; !slices.Equal(p.Clean, want) {
		t.Fatalf("clean %v, want %v", p.Clean, want)
	}
	want := []ConfirmPair{{"n1", "n0"}, {"n2", "n4"}, {"n3", "n5"}}
	if !slices.Equal(p.Pairs, want) {
		t.Fatalf("pairs %v, want %v", p.Pairs, want)
	}
	if len(p.Unconfirmed) != 0 {
		t.Fatalf("unconfirmed %v", p.Unconfirmed)
	}
}

func TestPlanConfirmationSaysWhoIsLeftWithoutPartner(t *testing.T) {
	// Every node fails somewhere: nobody is clean, nobody can be confirmed.
	cs := locPairChecks("shared-dev", locRing4, locRails, func(c, s, port string) Status {
		if c == "n1" || c == "n3" {
			return Fail
		}
		return Pass
	})
	p := PlanConfirmation(cs, []string{"n1", "n2", "n3", "n4"})
	if len(p.Pairs) != 0 || len(p.Unconfirmed) != 4 {
		t.Fatalf("pairs %v unconfirmed %v: want none and 4", p.Pairs, p.Unconfirmed)
	}
	if !strings.Contains(p.Unconfirmed["n2"], "no partner that passed everything") {
		t.Fatalf("reason %q", p.Unconfirmed["n2"])
	}
}

func TestPlanConfirmationLeavesHostFaultsAndUnmeasuredNodesOut(t *testing.T) {
	cs := locPairChecks("shared-dev", confRing6, locRails, func(c, s, port string) Status {
		if c == "n5" || s == "n5" {
			return Fail
		}
		if c == "n2" && s == "n3" {
			return NotRun
		}
		return Pass
	})
	// n5's own probe saw no device: its failures are its own.
	for i := range cs {
		if cs[i].Status == Fail {
			cs[i].HostFaults = []HostFault{{Node: "n5", What: "the pod sees no RDMA device"}}
		}
	}
	p := PlanConfirmation(cs, confNodes())
	if len(p.Suspects) != 0 {
		t.Fatalf("suspects %v: a host fault needs no confirmation and makes its partner no suspect", p.Suspects)
	}
	// n2→n3 was not measured: no evidence either way; both passed elsewhere.
	if want := []string{"n0", "n1", "n2", "n3", "n4"}; !slices.Equal(p.Clean, want) {
		t.Fatalf("clean %v, want %v", p.Clean, want)
	}
}

// confRound is the confirmation round's checks: each suspect (client)
// against its partner, with verdict v.
func confRound(p ConfirmPlan, v locVerdict) []Check {
	var pairs [][2]string
	for _, cp := range p.Pairs {
		pairs = append(pairs, [2]string{cp.Suspect, cp.Partner})
	}
	cs := withFigure(locPairChecks("shared-dev", pairs, locRails, v))
	for i := range cs {
		cs[i].Round = RoundConfirmation
	}
	return cs
}

func TestApplyConfirmationTransientBecomesWarn(t *testing.T) {
	// n1→n2 failed once on port 0; everything passes the second time.
	cs := withFigure(locPairChecks("shared-dev", confRing6, locRails, func(c, s, port string) Status {
		if c == "n1" && s == "n2" && port == "mlx5_0/1" {
			return Fail
		}
		return Pass
	}))
	p := PlanConfirmation(cs, confNodes())
	conf := confRound(p, locAllPass)
	ApplyConfirmation(cs, conf, p)
	run := Run{Schema: Schema, RunID: "t", Checks: append(cs, conf...)}
	for _, c := range cs {
		failedOnce := slices.Equal(c.Nodes, []string{"n1", "n2"}) && c.Rail == "mlx5_0/1→mlx5_0/1"
		switch {
		case failedOnce && c.Status != Warn:
			t.Fatalf("%s %v %s: %s, want warn (transient)", c.ID, c.Nodes, c.Rail, c.Status)
		case failedOnce:
			if !strings.HasPrefix(c.Diagnosis, "transient: ") || !strings.Contains(c.Diagnosis, "n1 mlx5_0/1 with n0: pass (190 Gb/s)") ||
				!strings.Contains(c.Diagnosis, "60 Gb/s") {
				t.Fatalf("diagnosis %q: want both measurements named", c.Diagnosis)
			}
		case c.Status != Pass:
			t.Fatalf("%s %v: %s", c.ID, c.Nodes, c.Status)
		}
	}
	if err := run.Validate(); err != nil {
		t.Fatalf("a transient warn with its confirmation must validate: %v", err)
	}
	if !run.Passed() {
		t.Fatal("a run whose only failure did not repeat must pass (warn)")
	}
	for _, f := range Localize(run) {
		t.Fatalf("nothing to blame after a transient, got %s %v: %s", f.Kind, f.Nodes, f.Explanation)
	}
}

func TestApplyConfirmationRepeatedFailureStaysAndIsLocalised(t *testing.T) {
	bad := func(c, s, port string) Status {
		if (c == "n2" || s == "n2") && port == "mlx5_0/1" {
			return Fail
		}
		return Pass
	}
	cs := withFigure(locPairChecks("shared-dev", confRing6, locRails, bad))
	p := PlanConfirmation(cs, confNodes())
	conf := confRound(p, bad) // n2 fails again with n4
	ApplyConfirmation(cs, conf, p)
	for _, c := range cs {
		if c.Status == Warn {
			t.Fatalf("%s %v %s became warn though n2 failed again", c.ID, c.Nodes, c.Rail)
		}
		if c.Status == Fail {
			ev := strings.Join(c.Evidence, "\n")
			if c.Confirmation == nil || !c.Confirmation.Repeated || !strings.Contains(ev, "n2 mlx5_0/1 with n4: fail") {
				t.Fatalf("%s %v: evidence %q: want the repeated failure named", c.ID, c.Nodes, ev)
			}
		}
	}
	run := Run{Schema: Schema, RunID: "t", Checks: append(cs, conf...)}
	if err := run.Validate(); err != nil {
		t.Fatal(err)
	}
	fs := Localize(run)
	if len(fs) != 1 || fs[0].Kind != BadPort || fs[0].Nodes[0] != "n2" || fs[0].Rail != "mlx5_0/1" {
		t.Fatalf("findings %+v: want one bad port n2 mlx5_0/1", fs)
	}
	if fs[0].PartnersFailed != 3 {
		t.Fatalf("n2 failed with %v: want n1, n3 and its confirmation partner n4", fs[0].FailedWith)
	}
}

func TestApplyConfirmationWithoutPartnerKeepsTheFailureAndSaysWhy(t *testing.T) {
	cs := withFigure(locPairChecks("shared-dev", locRing4, locRails, func(c, s, port string) Status {
		if c == "n1" || c == "n3" {
			return Fail
		}
		return Pass
	}))
	p := PlanConfirmation(cs, []string{"n1", "n2", "n3", "n4"})
	ApplyConfirmation(cs, nil, p)
	for _, c := range cs {
		if c.Status == Fail && !strings.Contains(strings.Join(c.Evidence, " "), "no partner that passed everything") {
			t.Fatalf("%s %v: %q", c.ID, c.Nodes, c.Evidence)
		}
		if c.Status == Warn {
			t.Fatal("an unconfirmed failure must not become warn")
		}
	}
}

func TestWarnWithMissedBoundNeedsItsConfirmation(t *testing.T) {
	c := withFigure(locPairChecks("shared-dev", [][2]string{{"a", "b"}}, []string{"mlx5_0/1"}, func(string, string, string) Status { return Fail }))[0]
	c.Status = Warn
	run := Run{Schema: Schema, RunID: "t", Checks: []Check{c}}
	if err := run.Validate(); err == nil || !strings.Contains(err.Error(), "contradicts") {
		t.Fatalf("a warn below its bound without a passed confirmation must not validate: %v", err)
	}
	c.Confirmation = &Confirmation{Ends: []ConfirmedEnd{{Node: "a", Status: Pass}, {Node: "b", Status: NotRun}}}
	run.Checks[0] = c
	if err := run.Validate(); err == nil {
		t.Fatal("an end not measured again is no confirmation")
	}
}

// The two-guest bed with every flag at its default: four nodes in a ring,
// node-2 advertises the resource but has no device, rxe-node-2 has a port
// down. rxe-node-1 fails with both, on checks its own probe did not trace:
// no evidence against rxe-node-1.
func TestPartnerThatIsACulpritOfItsOwnIsNoEvidence(t *testing.T) {
	ring := [][2]string{{"node-1", "node-2"}, {"node-2", "rxe-node-1"}, {"rxe-node-1", "rxe-node-2"}, {"rxe-node-2", "node-1"}}
	var cs []Check
	for _, p := range ring {
		for _, id := range []string{"bandwidth/write", "bandwidth/link"} {
			c := Check{ID: id, Variant: "shared-dev", Nodes: []string{p[0], p[1]}, Status: Pass, Rail: "rxe0/1→rxe0/1"}
			switch {
			case slices.Contains(p[:], "node-2") && id == "bandwidth/write":
				c.Status = Error
				c.HostFaults = []HostFault{{Node: "node-2", What: "the pod sees no RDMA device"}}
			case slices.Contains(p[:], "node-2"):
				c.Status = Error // the link check has no counters to read, and no fault of its own
			case slices.Contains(p[:], "rxe-node-2") && id == "bandwidth/write":
				c.Status = Fail
				c.HostFaults = []HostFault{{Node: "rxe-node-2", Port: "rxe1/1", What: "port not ACTIVE"}}
			case slices.Contains(p[:], "rxe-node-2"):
				c.Status = Fail // counters rose
			}
			cs = append(cs, c)
		}
	}
	fs := Localize(Run{Checks: cs})
	for _, f := range fs {
		if slices.Contains(f.Nodes, "rxe-node-1") && (f.Kind == BadNode || f.Kind == BadPort) {
			t.Fatalf("rxe-node-1 blamed (%s) for failing with culprits of their own: %s", f.Kind, f.Explanation)
		}
		if slices.Contains(f.Nodes, "node-1") && (f.Kind == BadNode || f.Kind == BadPort) {
			t.Fatalf("node-1 blamed: %s", f.Explanation)
		}
	}
	var said []string
	for _, f := range fs {
		if f.Kind == Inconclusive && f.Nodes[0] == "rxe-node-1" {
			said = append(said, f.Explanation)
		}
	}
	if len(said) != 2 || !strings.Contains(strings.Join(said, "\n"), "is a culprit of its own (the pod sees no RDMA device)") {
		t.Fatalf("want rxe-node-1's two set-apart pairs said, got %q", said)
	}
	// Without the partner's own fault, the same failures do blame it.
	for i := range cs {
		cs[i].HostFaults = nil
	}
	blamed := false
	for _, f := range Localize(Run{Checks: cs}) {
		blamed = blamed || (f.Kind == BadNode && slices.Contains(f.Nodes, "rxe-node-1"))
	}
	if !blamed {
		t.Fatal("control: with no host faults rxe-node-1 fails with both partners and is a bad node")
	}
}

// A fleet-size confirmation plan: 256 nodes, one bad port and one
// transient: three rounds' worth of suspects, all confirmed.
func TestPlanConfirmationAtFleetSize(t *testing.T) {
	var nodes []string
	for i := range 256 {
		nodes = append(nodes, fmt.Sprintf("gpu-%03d", i))
	}
	var ring [][2]string
	for i := range nodes {
		ring = append(ring, [2]string{nodes[i], nodes[(i+1)%len(nodes)]})
	}
	cs := locPairChecks("shared-dev", ring, locRails, func(c, s, port string) Status {
		if (c == "gpu-017" || s == "gpu-017") && port == "mlx5_1/1" || c == "gpu-100" && s == "gpu-101" {
			return Fail
		}
		return Pass
	})
	p := PlanConfirmation(cs, nodes)
	if want := []string{"gpu-016", "gpu-017", "gpu-018", "gpu-100", "gpu-101"}; !slices.Equal(p.Suspects, want) {
		t.Fatalf("suspects %v", p.Suspects)
	}
	seen := map[string]bool{}
	for _, cp := range p.Pairs {
		if seen[cp.Suspect] || seen[cp.Partner] || slices.Contains(p.Suspects, cp.Partner) {
			t.Fatalf("pairs %v: not disjoint or a suspect partner", p.Pairs)
		}
		seen[cp.Suspect], seen[cp.Partner] = true, true
	}
	if len(p.Pairs) != 5 {
		t.Fatalf("pairs %v", p.Pairs)
	}
}

// A confirmation that broke again (its probe errored on the suspect, as
// in the rounds) is a repeat: the failure stands and says how.
func TestConfirmationThatErroredRepeats(t *testing.T) {
	cs := withFigure(locPairChecks("shared-dev", confRing6, locRails, func(c, s, port string) Status {
		if c == "n1" && s == "n2" && port == "mlx5_0/1" {
			return Fail
		}
		return Pass
	}))
	p := PlanConfirmation(cs, confNodes())
	conf := confRound(p, func(c, s, port string) Status {
		if c == "n1" {
			return Error
		}
		return Pass
	})
	for i := range conf {
		if conf[i].Status == Error {
			conf[i].Reason = "pod exited 1"
		}
	}
	ApplyConfirmation(cs, conf, p)
	for _, c := range cs {
		if c.Status == Fail && (c.Confirmation == nil || !c.Confirmation.Repeated || !strings.Contains(strings.Join(c.Evidence, " "), "n1 mlx5_0/1 with n0: error (pod exited 1)")) {
			t.Fatalf("%s %v: %+v %q", c.ID, c.Nodes, c.Confirmation, c.Evidence)
		}
		if c.Status == Warn {
			t.Fatal("an errored confirmation is no pass")
		}
	}
}

// A pod or node the run lost (n2's pod evicted: its pairs cut or never
// started) is no evidence against its partners: nobody is measured again,
// nothing is localised, and n2 is no clean partner either.
func TestALostNodeIsNoEvidenceForConfirmationOrLocalisation(t *testing.T) {
	cs := locPairChecks("shared-dev", confRing6, locRails, func(c, s, port string) Status {
		if c == "n2" || s == "n2" {
			return Error
		}
		return Pass
	})
	for i := range cs {
		if cs[i].Nodes[0] == "n2" || cs[i].Nodes[1] == "n2" {
			cs[i].Lost = &Loss{Node: "n2", What: "pod p on n2 was evicted through the Eviction API"}
		}
	}
	p := PlanConfirmation(cs, confNodes())
	if len(p.Suspects) != 0 || slices.Contains(p.Clean, "n2") {
		t.Errorf("suspects %v, clean %v: a lost node's pairs are evidence of nothing", p.Suspects, p.Clean)
	}
	for _, f := range Localize(Run{Checks: cs}) {
		t.Errorf("a finding from a lost node's pairs: %+v", f)
	}
	// The control: the same errors without the loss make suspects.
	for i := range cs {
		cs[i].Lost = nil
	}
	if p := PlanConfirmation(cs, confNodes()); len(p.Suspects) == 0 {
		t.Error("errored pairs without a loss made no suspect: the test proves nothing")
	}
}
