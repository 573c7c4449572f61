package verdict

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/rdmasuite/rdmasuite/reports"
	"github.com/rdmasuite/rdmasuite/thresholds"
	"github.com/rdmasuite/rdmasuite/workloads/mr"
	"github.com/rdmasuite/rdmasuite/workloads/podenv"
	"github.com/rdmasuite/rdmasuite/workloads/probeout"
)

func out(t *testing.T, probe string, v any) string {
	t.Helper()
	var b bytes.Buffer
	if err := probeout.Write(&b, probe, v); err != nil {
		t.Fatal(err)
	}
	return "rdmaprobe bw server: waiting\n" + b.String()
}

func sku(t *testing.T, name string) *thresholds.SKU {
	s, err := thresholds.Load("")
	if err != nil {
		t.Fatal(err)
	}
	k, err := s.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestMemlockSeed002AndBed(t *testing.T) {
	low := mr.Probe(nil, "", nil, 1<<20, podenv.Limits{Soft: 64 << 10, Hard: 64 << 10}, false, 0)
	checks := Memlock("shared-dev", Side{Node: "node-1", Pod: "mr-1", Logs: out(t, "mr", low), Exit: 3}, sku(t, "A100/HDR-200"), nil)
	if checks[0].ID != "memlock/rlimit" || checks[0].Status != reports.Fail || !strings.Contains(checks[0].Fix, "base_runtime_spec") {
		t.Fatalf("rlimit %+v", checks[0])
	}
	if checks[1].Status != reports.NotRun || checks[1].Reason == "" {
		t.Fatalf("registration without device must be not-run with a reason: %+v", checks[1])
	}
	high := mr.Probe(nil, "", nil, 1<<20, podenv.Limits{Soft: 8 << 20, Hard: 8 << 20}, false, 0)
	checks = Memlock("shared-dev", Side{Node: "node-2", Pod: "mr-2", Logs: out(t, "mr", high)}, sku(t, "A100/HDR-200"), nil)
	if checks[0].Status != reports.Pass || checks[0].Measured[0].Value != 8<<20 {
		t.Fatalf("8 MiB %+v", checks[0])
	}
}

// Defect: a probe envelope without a status field yielded status "", which
// is neither fail nor error, so the feature passed. Statuses are validated,
// and they must agree with the probe's exit code.
func TestMemlockStatusValidatedAndExitAgrees(t *testing.T) {
	high := mr.Probe(nil, "", nil, 1<<20, podenv.Limits{Soft: 8 << 20, Hard: 8 << 20}, false, 0)
	noStatus := strings.Replace(out(t, "mr", high), `"rlimitStatus":"pass"`, `"rlimitStatus":""`, 1)
	for name, side := range map[string]Side{
		"empty status":          {Node: "n", Logs: noStatus},
		"unknown status":        {Node: "n", Logs: strings.Replace(out(t, "mr", high), `"rlimitStatus":"pass"`, `"rlimitStatus":"ok"`, 1)},
		"pass with exit 1":      {Node: "n", Logs: out(t, "mr", high), Exit: 1},
		"no envelope, exit 0":   {Node: "n", Logs: "Segmentation fault"},
		"pod never ran (error)": {Node: "n", PodErr: errors.New("ImagePullBackOff")},
	} {
		for _, c := range Memlock("shared-dev", side, sku(t, "A100/HDR-200"), nil) {
			if c.Status != reports.Error || c.Reason == "" {
				t.Errorf("%s: %s = %s (%s)", name, c.ID, c.Status, c.Reason)
			}
		}
	}
	if c := Memlock("shared-dev", Side{Node: "n", Logs: out(t, "mr", high)}, sku(t, "A100/HDR-200"), nil)[0]; c.Status != reports.Pass {
		t.Errorf("the clean case must still pass: %+v", c)
	}
}
