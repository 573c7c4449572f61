package reports

import (
	"strings"
	"testing"
)

// A bandwidth pair fails on the port whose PCIe link the doctor found
// capped: the row names the host cause, localisation blames the host's
// configuration (no bad port, no bad link), and the clean rail's failure
// elsewhere is still localised as before.
func TestHostCauseExplainsBeforeBlame(t *testing.T) {
	bw := func(client, server, rail string, st Status) Check {
		return Check{ID: "bandwidth/write", Variant: "shared-dev", Nodes: []string{client, server}, Rail: rail, Status: st,
			Diagnosis: "below the floor", Traits: &Traits{Localize: true}, Measured: []Measurement{{Name: "write 1MiB"}}}
	}
	run := Run{Checks: []Check{
		{ID: "doctor/pcie-link-capped", Nodes: []string{"gpu-003"}, Status: Fail,
			Evidence: []string{"host: mlx5_1 (0000:c3:00.0): narrowest PCIe link 0000:c3:00.0: 16GT/s x8 (max 16GT/s x16) allows 126.0 Gb/s"}},
		{ID: "doctor/roce-mtu-low", Nodes: []string{"gpu-009"}, Status: Fail, Evidence: []string{"host: port mlx5_10/1: netdev x MTU 1500 gives RoCE active MTU 1024"}},
		bw("gpu-003", "gpu-004", "mlx5_1/1→mlx5_1/1", Fail),
		bw("gpu-003", "gpu-005", "mlx5_1/1→mlx5_1/1", Fail),
		bw("gpu-003", "gpu-004", "mlx5_0/1→mlx5_0/1", Pass),
		bw("gpu-003", "gpu-005", "mlx5_0/1→mlx5_0/1", Pass),
		bw("gpu-004", "gpu-005", "mlx5_1/1→mlx5_1/1", Pass),
	}}
	AttachHostCauses(&run)
	AttachHostCauses(&run) // idempotent
	c := run.Checks[2]
	if len(c.HostCauses) != 1 || c.HostCauses[0].Finding != "doctor/pcie-link-capped" || c.HostCauses[0].Port != "mlx5_1/1" ||
		!strings.Contains(c.Diagnosis, "The host explains it before the fabric: doctor/pcie-link-capped on gpu-003: mlx5_1 (0000:c3:00.0)") ||
		strings.Count(c.Diagnosis, "host explains") != 1 {
		t.Fatalf("check %+v", c)
	}
	if len(run.Checks[4].HostCauses) != 0 {
		t.Fatal("a passing row got a host cause")
	}
	// A link check failing on its counters on the same port is not
	// explained by the host's configuration.
	link := Run{Checks: []Check{run.Checks[0], {ID: "bandwidth/link", Variant: "shared-dev", Nodes: []string{"gpu-003", "gpu-004"}, Rail: "mlx5_1/1→mlx5_1/1",
		Status: Fail, Traits: &Traits{Localize: true}, Measured: []Measurement{{Name: "symbol_error"}}}}}
	if AttachHostCauses(&link); len(link.Checks[1].HostCauses) != 0 {
		t.Fatal("a link check failing on counters got a host cause")
	}
	fs := Localize(run)
	if len(fs) != 1 || fs[0].Kind != HostConfig || fs[0].Nodes[0] != "gpu-003" || fs[0].Rail != "mlx5_1/1" || fs[0].PartnersFailed != 2 {
		t.Fatalf("findings %+v, want one host-config finding on gpu-003 mlx5_1/1", fs)
	}
	if txt := Culprits(fs)[0].Text(false); txt != "port mlx5_1/1 on node gpu-003 (host configuration, not the fabric)" {
		t.Fatalf("culprit %q", txt)
	}
	// Without the doctor's finding the same rows blame the port.
	run2 := Run{Checks: append([]Check(nil), run.Checks[2:]...)}
	for i := range run2.Checks {
		run2.Checks[i].HostCauses = nil
	}
	if fs := Localize(run2); len(fs) != 1 || fs[0].Kind != BadPort {
		t.Fatalf("without the host finding: %+v, want a bad port", fs)
	}
}

// The fleet view draws a port its host explains in its own colour, and its
// partners as partners (their failures are the capped port's).
func TestFleetDrawsHostCappedApart(t *testing.T) {
	floor := &Threshold{Op: ">=", Value: 190}
	bw := func(client, server, rail string, v float64, st Status) Check {
		return Check{ID: "bandwidth/write", Variant: "shared-dev", Nodes: []string{client, server}, Rail: rail, Status: st,
			Traits: &Traits{Localize: true, HeatUnit: "Gb/s"}, Measured: []Measurement{{Name: "write_1MiB_bw", Value: v, Unit: "Gb/s", Threshold: floor}}}
	}
	run := Run{Checks: []Check{
		{ID: "doctor/pcie-link-capped", Nodes: []string{"gpu-003"}, Status: Fail,
			Evidence: []string{"host: mlx5_1 (0000:c3:00.0): narrowest PCIe link 0000:c3:00.0: 16GT/s x8 (max 16GT/s x16) allows 126.0 Gb/s"}},
		bw("gpu-003", "gpu-004", "mlx5_1/1→mlx5_1/1", 118, Fail),
		bw("gpu-005", "gpu-003", "mlx5_1/1→mlx5_1/1", 117, Fail),
		bw("gpu-004", "gpu-005", "mlx5_1/1→mlx5_1/1", 196, Pass),
	}}
	AttachHostCauses(&run)
	fs := Localize(run)
	cells := portCells(run, newCulpritEnds(run, fs))
	if st := cells[portEnd{"gpu-003", "mlx5_1/1"}].state(); st != stateHostCapped {
		t.Fatalf("capped port drawn as %q", stateText[st])
	}
	if st := cells[portEnd{"gpu-004", "mlx5_1/1"}].state(); st != statePartner {
		t.Fatalf("its partner drawn as %q", stateText[st])
	}
	for st := range nStates {
		if st != stateHostCapped && stateColor[st] == ColorHostCapped {
			t.Fatalf("host-capped shares its colour with %q", stateText[st])
		}
	}
}
