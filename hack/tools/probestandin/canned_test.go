package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/rdmasuite/rdmasuite/internal/verdict"
	"github.com/rdmasuite/rdmasuite/reports"
	"github.com/rdmasuite/rdmasuite/thresholds"
	"github.com/rdmasuite/rdmasuite/workloads/bw"
	"github.com/rdmasuite/rdmasuite/workloads/probeout"
)

// The argv the runner exec's in a node pod for one bandwidth run (framed:
// --run-name), as internal/runner's pairCommands builds it.
var (
	serverArgs = []string{"--port", "18515", "--timeout", "2m", "--counters-root", "/host", "--run-name", "bandwidth"}
	clientArgs = []string{"--port", "18515", "--op", "write,read", "--size", "65536,1048576", "--rails", "same", "--timeout", "1m",
		"--qp-timeout", "14", "--counters-root", "/host", "--run-name", "bandwidth", "10.250.0.7"}
)

// pairVerdict runs both sides through the stand-in and judges the pair
// with the suite's verdict, as the runner does with an exec'd run's output.
func pairVerdict(t *testing.T, f fabric) verdict.BWResult {
	t.Helper()
	set, err := thresholds.Load("../../../thresholds/skus.yaml")
	if err != nil {
		t.Fatal(err)
	}
	sku, err := set.ForNode("n", nil, "A100/HDR-200")
	if err != nil {
		t.Fatal(err)
	}
	f.ports, f.rateGbps = int(*sku.PortsPerNode.Value), *sku.LinkRateGbps.Value
	side := func(role, node string, args []string) verdict.Side {
		var out, errOut bytes.Buffer
		if code := printRuns(&out, &errOut, f, role, args, time.Now()); code != 0 {
			t.Fatalf("%s exit %d: %s", role, code, errOut.String())
		}
		parts, err := probeout.SplitRuns(out.String(), []string{"bandwidth"})
		if err != nil || parts[0].Exit == nil || *parts[0].Exit != 0 {
			t.Fatalf("%s frames: %v %+v", role, err, parts)
		}
		return verdict.Side{Node: node, Pod: "pair-" + node, Logs: parts[0].Logs}
	}
	return verdict.Bandwidth(verdict.BWInput{Variant: "shared-dev", Resource: "rdma/x", Ops: []string{"write", "read"},
		Sizes: []int{65536, 1 << 20}, RailMode: bw.RailsSame, SKU: sku,
		Client: side("client", "node-a", clientArgs), Server: side("server", "node-b", serverArgs)})
}

func TestStandInPassesOpAndLinkChecks(t *testing.T) {
	res := pairVerdict(t, fabric{frac: 0.95})
	if len(res.Checks) != 2*8 || len(res.LinkChecks) != 8 {
		t.Fatalf("want 16 op rows and 8 link rows, got %d and %d", len(res.Checks), len(res.LinkChecks))
	}
	for _, c := range append(res.Checks, res.LinkChecks...) {
		if c.Status != reports.Pass {
			t.Errorf("%s %s: %s: %s", c.ID, c.Rail, c.Status, c.Diagnosis)
		}
	}
	for _, c := range res.Checks {
		if !strings.Contains(strings.Join(c.Evidence, " "), "port counters confirm the bytes") {
			t.Errorf("%s %s: the bytes were not confirmed by the port counters: %q", c.ID, c.Rail, c.Evidence)
		}
	}
}

// A probe that brackets another port than the rail's must not pass: the
// link rows are errors, so the test above can fail.
func TestStandInCountersOfAnotherPortDoNotPass(t *testing.T) {
	res := pairVerdict(t, fabric{frac: 0.95, otherPort: true})
	if len(res.LinkChecks) == 0 {
		t.Fatal("no link rows")
	}
	for _, c := range res.LinkChecks {
		if c.Status != reports.Error || !strings.Contains(c.Reason, "not the rail's own") {
			t.Errorf("%s %s: %s: %s", c.ID, c.Rail, c.Status, c.Reason)
		}
	}
}

// hold sleeps its --max; an unknown subcommand fails.
func TestStandInHoldAndUsage(t *testing.T) {
	var slept time.Duration
	if code := run1([]string{"hold", "--max", "3m"}, &bytes.Buffer{}, &bytes.Buffer{}, func(d time.Duration) { slept = d }); code != 0 || slept != 3*time.Minute {
		t.Fatalf("hold: exit %d, slept %s", code, slept)
	}
	if code := run1([]string{"devices"}, &bytes.Buffer{}, &bytes.Buffer{}, func(time.Duration) {}); code == 0 {
		t.Fatal("devices: exit 0")
	}
}
