package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/rdmasuite/rdmasuite/reports"
)

// confirmedFleet is a 256 × 8 ring with the confirmation round.
func confirmedFleet(t *testing.T, bad, flaky []string) reports.Run {
	t.Helper()
	f := &fixture{nodes: 256, rails: 8, prefix: "gpu-", skuFile: "../../../thresholds/skus.yaml",
		slowFrac: 0.74, slowPassFrac: 0.96, confirm: true, flakySpecs: flaky}
	if err := f.setup("H100/NDR-400", bad, nil); err != nil {
		t.Fatal(err)
	}
	r := f.build()
	if err := r.Validate(); err != nil {
		t.Fatal(err)
	}
	return r
}

// A port that fails once and passes when its nodes are measured again:
// its rows read warn (transient) with both measurements, the run passes,
// nothing is blamed and no node would be marked.
func TestPortFailingOnceIsTransient(t *testing.T) {
	r := confirmedFleet(t, nil, []string{"gpu-050/2"})
	s := r.Summary()
	if s[reports.Fail] != 0 || s[reports.Error] != 0 {
		t.Fatalf("summary %v: a failure that did not repeat must not fail", s)
	}
	transient, confirmRows := 0, 0
	for _, c := range r.Checks {
		if c.Round == reports.RoundConfirmation {
			confirmRows++
			continue
		}
		if c.Status == reports.Warn {
			if !onPort(c, "gpu-050", "mlx5_2/1") || !strings.HasPrefix(c.Diagnosis, "transient: ") || !strings.Contains(c.Diagnosis, "with gpu-") {
				t.Errorf("%s %v %s: %s", c.ID, c.Nodes, c.Rail, c.Diagnosis)
			}
			transient++
		}
	}
	// gpu-049→050 and gpu-050→051, write and read: 4 rows (their link
	// rows passed: the port was slow, not dirty).
	if transient != 4 || confirmRows == 0 {
		t.Fatalf("%d transient rows, %d confirmation rows", transient, confirmRows)
	}
	if fs := reports.Localize(r); len(fs) != 0 {
		t.Fatalf("a transient is blamed: %+v", fs)
	}
	if !r.Passed() {
		t.Fatal("the run must pass")
	}
}

// A port that fails twice (in the rounds and against a clean partner)
// stays failed, says it repeated, and is the one bad port: its partners
// in the ring are cleared by their own second measurement.
func TestPortFailingTwiceIsBlamed(t *testing.T) {
	r := confirmedFleet(t, []string{"gpu-017/3"}, nil)
	for _, c := range r.Checks {
		if c.Status == reports.Warn {
			t.Errorf("%s %v: warn though the port failed again", c.ID, c.Nodes)
		}
		if c.Status == reports.Fail && c.Round == "" && (c.Confirmation == nil || !c.Confirmation.Repeated) {
			t.Errorf("%s %v: failed without its repeated confirmation: %+v", c.ID, c.Nodes, c.Confirmation)
		}
	}
	fs := reports.Localize(r)
	if len(fs) != 1 || fs[0].Kind != reports.BadPort || fs[0].Nodes[0] != "gpu-017" || fs[0].Rail != "mlx5_3/1" {
		t.Fatalf("findings %+v: want one bad port gpu-017 mlx5_3/1", fs)
	}
	if !slices.Contains(fs[0].FailedWith, "gpu-016") || !slices.Contains(fs[0].FailedWith, "gpu-018") || fs[0].PartnersFailed != 3 {
		t.Fatalf("gpu-017 failed with %v: want its two ring partners and its confirmation partner", fs[0].FailedWith)
	}
	if v := reports.SummaryText(r); !strings.Contains(v, "port mlx5_3/1 on node gpu-017") || strings.Contains(v, "gpu-016 (") {
		t.Fatalf("verdict: %s", v)
	}
}

// Both at once: the bad port is blamed, the one-off is not.
func TestBadAndFlakyPortsApart(t *testing.T) {
	r := confirmedFleet(t, []string{"gpu-017/3"}, []string{"gpu-200/5"})
	fs := reports.Localize(r)
	if len(fs) != 1 || fs[0].Nodes[0] != "gpu-017" {
		t.Fatalf("findings %+v", fs)
	}
	for _, c := range r.Checks {
		if onPort(c, "gpu-200", "mlx5_5/1") && c.Round == "" && (c.ID == "bandwidth/write" || c.ID == "bandwidth/read") && c.Status != reports.Warn {
			t.Errorf("%s %v: %s, want warn (transient)", c.ID, c.Nodes, c.Status)
		}
	}
}
