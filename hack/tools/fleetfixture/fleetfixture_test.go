package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/rdmasuite/rdmasuite/reports"
)

// fleet builds a 256 × 8 ring through the suite's own verdicts (and
// MarkPeerOutliers, as the runner does).
func fleet(t *testing.T, skuUnder float64, bad, slowPass []string) reports.Run {
	t.Helper()
	f := &fixture{nodes: 256, rails: 8, prefix: "gpu-", skuFile: "../../../thresholds/skus.yaml",
		slowFrac: 0.74, slowPassFrac: 0.96, skuUnder: skuUnder}
	if err := f.setup("H100/NDR-400", bad, slowPass); err != nil {
		t.Fatal(err)
	}
	r := f.build()
	if err := r.Validate(); err != nil {
		t.Fatal(err)
	}
	return r
}

// onPort: the check uses port mlx5_<rail>/1 of node at either end.
func onPort(c reports.Check, node, port string) bool {
	return c.Rail == port+"→"+port && (c.Nodes[0] == node || c.Nodes[1] == node)
}

// One port at 96 % of the link among ports at 97.5-98.5 %: above the 95 %
// floor, so its pairs pass the floor; the peer-outlier rule makes exactly
// that port's rows warn (its two pairs, write and read) and names that
// port, not its partners; the run passes, exit 0, JUnit green.
func TestSlowPassingPortWarns(t *testing.T) {
	r := fleet(t, 0, nil, []string{"gpu-017/3"})
	s := r.Summary()
	if s[reports.Fail] != 0 || s[reports.Warn] != 4 {
		t.Fatalf("summary %v, want 4 warn (gpu-016→017 and gpu-017→018, write and read, on mlx5_3/1) and no fail", s)
	}
	for _, c := range r.Checks {
		if (c.Status == reports.Warn) != onPort(c, "gpu-017", "mlx5_3/1") {
			t.Errorf("%s %v %s: %s", c.ID, c.Nodes, c.Rail, c.Status)
		}
		if c.Status == reports.Warn && (c.Peers == nil || c.Peers.Count != 2048 || !strings.Contains(c.Diagnosis, "of 2048 ports of SKU H100/NDR-400 [shared-dev]")) {
			t.Errorf("warn row without its peers: %+v %s", c.Peers, c.Diagnosis)
		}
	}
	ws := reports.VerdictWarnings(r)
	if len(ws) != 1 || ws[0].Nodes[0] != "gpu-017" || ws[0].Port != "mlx5_3/1" || strings.Join(ws[0].Checks, ",") != "bandwidth/read,bandwidth/write" {
		t.Fatalf("warnings %+v, want port mlx5_3/1 on gpu-017 (read, write)", ws)
	}
	v := reports.SummaryText(r)
	if !strings.HasPrefix(v, "PASSED — warning: port mlx5_3/1 on node gpu-017 (peer outlier in bandwidth/read, bandwidth/write: ") ||
		!strings.Contains(v, "2048 ports) — 4348 pass, 4 warn, 0 fail") {
		t.Errorf("verdict: %s", v)
	}
	if !r.Passed() || r.ExitCode() != reports.ExitPassed {
		t.Errorf("a warn fails the run: exit %d", r.ExitCode())
	}
	var b bytes.Buffer
	if err := reports.JUnit(&b, r); err != nil {
		t.Fatal(err)
	}
	if x := b.String(); strings.Contains(x, "<failure") || strings.Count(x, `name="rdmasuite.status" value="warn"`) != 4 {
		t.Error("JUnit does not tell the same story: a failure, or not 4 warn cases")
	}
}

// A healthy fleet raises no warn, whatever its (tight) spread.
func TestHealthyFleetNoWarn(t *testing.T) {
	r := fleet(t, 0, nil, nil)
	if s := r.Summary(); s[reports.Warn] != 0 || s[reports.Fail] != 0 {
		t.Fatalf("healthy fleet: %v", s)
	}
	if v := reports.SummaryText(r); !strings.HasPrefix(v, "PASSED — 4352 pass, 0 fail") {
		t.Errorf("verdict: %s", v)
	}
}

// Every port 5 % under the floor: the verdict says the SKU as a whole
// measures its median against the floor (write and read), and names no
// culprit, not 2048 of them; each row still fails.
func TestSKUUnderIsOneVerdict(t *testing.T) {
	r := fleet(t, 0.90, nil, nil)
	if s := r.Summary(); s[reports.Fail] != 4096 {
		t.Fatalf("summary %v, want every one of 4096 pair rows failing", s)
	}
	v := reports.SummaryText(r)
	if !strings.HasPrefix(v, "NOT PASSED — SKU-wide: SKU H100/NDR-400 as a whole measures read_1MiB_avg 360 Gb/s (median of 2048 ports, 2048 below the floor) against its floor >= 380 Gb/s in bandwidth/read [shared-dev]: the floor or a fabric-wide cause, not each port; SKU H100/NDR-400 as a whole measures write_1MiB_avg 360 Gb/s") {
		t.Errorf("verdict: %s", v)
	}
	if strings.Contains(v, "culprit") || len(v) > 700 {
		t.Errorf("the verdict lists culprits: %s", v)
	}
	if len(reports.VerdictWarnings(r)) != 0 {
		t.Error("a SKU-wide shortfall warns")
	}
}

// A bad port still fails and is the culprit; a slow-but-passing port on
// another node warns beside it; neither hides the other.
func TestBadPortAndSlowPassTogether(t *testing.T) {
	r := fleet(t, 0, []string{"gpu-100/5"}, []string{"gpu-017/3"})
	v := reports.SummaryText(r)
	if !strings.HasPrefix(v, "NOT PASSED — culprit: port mlx5_5/1 on node gpu-100 (bad port, 2 partners) — warning: port mlx5_3/1 on node gpu-017 (peer outlier") {
		t.Errorf("verdict: %s", v)
	}
	if s := r.Summary(); s[reports.Warn] != 4 || s[reports.Fail] != 4 {
		t.Errorf("summary %v, want 4 warn and 4 fail", s)
	}
	if len(reports.SKUShortfalls(r)) != 0 {
		t.Error("4 failing ports read as SKU-wide")
	}
}
