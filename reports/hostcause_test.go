package reports

import (
	"strings"
	"testing"
)

var floor190 = &Threshold{Op: ">=", Value: 190, Source: "0.95 of 200 Gb/s"}

func figureRow(id, client, server, rail string, v float64, st Status) Check {
	return Check{ID: id, Variant: "shared-dev", Nodes: []string{client, server}, Rail: rail, Status: st,
		Diagnosis: "below the floor", Traits: &Traits{Localize: true, HeatUnit: "Gb/s"},
		Measured: []Measurement{{Name: "write_1MiB_bw", Node: client, Value: v, Unit: "Gb/s", Threshold: floor190}}}
}

// pcieCapped is the doctor's finding on gpu-003: mlx5_1 trained x8, 126
// Gb/s allowed, as its rule writes it (evidence and host_cap).
func pcieCapped() Check {
	return Check{ID: "doctor/pcie-link-capped", Nodes: []string{"gpu-003"}, Status: Fail,
		Evidence: []string{"host: mlx5_1 (0000:c3:00.0): narrowest PCIe link 0000:c3:00.0: 16GT/s x8 (max 16GT/s x16) allows 126.0 Gb/s"},
		Measured: []Measurement{{Name: HostCapName, Node: "gpu-003", Port: "mlx5_1/1", Value: 126, Unit: "Gb/s"}}}
}

// A bandwidth pair fails near the cap of the port whose PCIe link the
// doctor found capped below the floor: the row names the host cause,
// localisation blames the host's configuration (no bad port, no bad
// link), and without the finding the same rows blame the port.
func TestHostCauseExplainsBeforeBlame(t *testing.T) {
	run := Run{Checks: []Check{
		pcieCapped(),
		figureRow("bandwidth/write", "gpu-003", "gpu-004", "mlx5_1/1→mlx5_1/1", 118, Fail),
		figureRow("bandwidth/write", "gpu-003", "gpu-005", "mlx5_1/1→mlx5_1/1", 117, Fail),
		figureRow("bandwidth/write", "gpu-003", "gpu-004", "mlx5_0/1→mlx5_0/1", 196, Pass),
		figureRow("bandwidth/write", "gpu-003", "gpu-005", "mlx5_0/1→mlx5_0/1", 196, Pass),
		figureRow("bandwidth/write", "gpu-004", "gpu-005", "mlx5_1/1→mlx5_1/1", 196, Pass),
	}}
	AttachHostCauses(&run)
	AttachHostCauses(&run) // idempotent
	c := run.Checks[1]
	if len(c.HostCauses) != 1 || c.HostCauses[0].Finding != "doctor/pcie-link-capped" || c.HostCauses[0].Port != "mlx5_1/1" ||
		!strings.Contains(c.Diagnosis, "The host explains it before the fabric: doctor/pcie-link-capped on gpu-003: mlx5_1 (0000:c3:00.0)") ||
		!strings.Contains(c.Diagnosis, "(it allows 126.0 Gb/s, below the floor 190.0 Gb/s)") || strings.Count(c.Diagnosis, "host explains") != 1 {
		t.Fatalf("check %+v", c)
	}
	if len(run.Checks[3].HostCauses) != 0 {
		t.Fatal("a passing row got a host cause")
	}
	fs := Localize(run)
	if len(fs) != 1 || fs[0].Kind != HostConfig || fs[0].Nodes[0] != "gpu-003" || fs[0].Rail != "mlx5_1/1" || fs[0].PartnersFailed != 2 {
		t.Fatalf("findings %+v, want one host-config finding on gpu-003 mlx5_1/1", fs)
	}
	if txt := Culprits(fs)[0].Text(false); txt != "port mlx5_1/1 on node gpu-003 (host configuration, not the fabric)" {
		t.Fatalf("culprit %q", txt)
	}
	run2 := Run{Checks: append([]Check(nil), run.Checks[1:]...)}
	for i := range run2.Checks {
		run2.Checks[i].HostCauses = nil
	}
	if fs := Localize(run2); len(fs) != 1 || fs[0].Kind != BadPort {
		t.Fatalf("without the host finding: %+v, want a bad port", fs)
	}
}

// A host fact that names the port but cannot be why the figure failed is
// no explanation: a figure far below the cap (something else held it), a
// cap above the floor, a dirty link on the same rail (its counters are the
// evidence), a fact that caps nothing (a GID index), a latency, a link
// check. GPU-path causes explain GPUDirect and NCCL figures only.
func TestHostCauseOnlyWhereItExplains(t *testing.T) {
	gidLine := Check{ID: "doctor/host-config-differs", Nodes: []string{"gpu-003"}, Status: Fail,
		Evidence: []string{"host: port mlx5_1/1 RoCE v2 GID indices of its IPv4 addresses 3 5; 7 other MT4125 Ethernet ports of SKU h: 3"}}
	wideCap := pcieCapped()
	wideCap.Measured[0].Value = 252.1
	crossSocket := Check{ID: "doctor/nic-gpu-cross-socket", Nodes: []string{"gpu-003"}, Status: Fail,
		Evidence: []string{"host: mlx5_1 (0000:c3:00.0, NUMA node 1): nearest GPU 0000:18:00.0 (NUMA node 0) is SYS"}}
	lat := figureRow("latency/write", "gpu-003", "gpu-004", "mlx5_1/1→mlx5_1/1", 9, Fail)
	lat.Measured = []Measurement{{Name: "write_2B_typical", Value: 9, Unit: UnitMicroseconds, Threshold: &Threshold{Op: "<=", Value: 5}}}
	link := figureRow("bandwidth/link", "gpu-003", "gpu-005", "mlx5_1/1→mlx5_1/1", 0, Fail)
	link.Traits.Link, link.Measured = true, []Measurement{{Name: "symbol_error", Value: 12}}
	gpu := figureRow("gpudirect/write", "gpu-003", "gpu-004", "mlx5_1/1→mlx5_1/1", 90, Fail)
	for _, tc := range []struct {
		name  string
		doc   Check
		check Check
		extra []Check
		want  bool
	}{
		{"far below the cap", pcieCapped(), figureRow("bandwidth/write", "gpu-003", "gpu-004", "mlx5_1/1→mlx5_1/1", 20, Fail), nil, false},
		{"cap above the floor", wideCap, figureRow("bandwidth/write", "gpu-003", "gpu-004", "mlx5_1/1→mlx5_1/1", 118, Fail), nil, false},
		{"dirty link on the rail", pcieCapped(), figureRow("bandwidth/write", "gpu-003", "gpu-005", "mlx5_1/1→mlx5_1/1", 118, Fail), []Check{link}, false},
		{"a GID index caps nothing", gidLine, figureRow("bandwidth/write", "gpu-003", "gpu-004", "mlx5_1/1→mlx5_1/1", 118, Fail), nil, false},
		{"latency", pcieCapped(), lat, nil, false},
		{"link check", pcieCapped(), link, nil, false},
		{"cross-socket, host-memory bandwidth", crossSocket, figureRow("bandwidth/write", "gpu-003", "gpu-004", "mlx5_1/1→mlx5_1/1", 118, Fail), nil, false},
		{"cross-socket, GPUDirect", crossSocket, gpu, nil, true},
		{"near the cap", pcieCapped(), figureRow("bandwidth/write", "gpu-003", "gpu-004", "mlx5_1/1→mlx5_1/1", 118, Fail), nil, true},
	} {
		run := Run{Checks: append([]Check{tc.doc, tc.check}, tc.extra...)}
		AttachHostCauses(&run)
		if got := len(run.Checks[1].HostCauses) > 0; got != tc.want {
			t.Errorf("%s: explained = %v, want %v (%s)", tc.name, got, tc.want, run.Checks[1].Diagnosis)
		}
	}
}

// The fleet view draws a port its host explains in its own colour, and its
// partners as partners (their failures are the capped port's).
func TestFleetDrawsHostCappedApart(t *testing.T) {
	run := Run{Checks: []Check{
		pcieCapped(),
		figureRow("bandwidth/write", "gpu-003", "gpu-004", "mlx5_1/1→mlx5_1/1", 118, Fail),
		figureRow("bandwidth/write", "gpu-005", "gpu-003", "mlx5_1/1→mlx5_1/1", 117, Fail),
		figureRow("bandwidth/write", "gpu-004", "gpu-005", "mlx5_1/1→mlx5_1/1", 196, Pass),
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
