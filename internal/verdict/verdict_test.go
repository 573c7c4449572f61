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

// Memlock: the probe's own status is evidence, not the
// verdict. The runner judges the limit and the largest registration
// against the SKU's floor (1 MiB for A100/HDR-200) itself.
func TestMemlockRejudgedAgainstTheSKU(t *testing.T) {
	mut := func(f func(r *mr.Result)) string {
		r := mr.Probe(nil, "", nil, 1<<20, podenv.Limits{Soft: 8 << 20, Hard: 8 << 20}, false, 0)
		r.Device, r.RegStatus, r.LargestOK = "mlx5_0", "pass", 4<<20
		f(&r)
		return out(t, "mr", r)
	}
	for _, c := range []struct {
		name     string
		logs     string
		rl, reg  reports.Status
		contains string
	}{
		{"the probe says pass at 64 KiB without IPC_LOCK", mut(func(r *mr.Result) { r.Memlock.Soft = 64 << 10 }), reports.Fail, reports.Pass,
			"memlock_soft = 64 KiB is below the SKU's floor of 1 MiB"},
		{"the probe asked for less than the SKU's floor", mut(func(r *mr.Result) { r.RequiredBytes, r.Memlock.Soft, r.LargestOK = 256<<10, 512<<10, 512<<10 }),
			reports.Fail, reports.Fail, "below the SKU's floor of 1 MiB"},
		{"a registration that reached 512 KiB passes nothing", mut(func(r *mr.Result) { r.LargestOK = 512 << 10 }), reports.Pass, reports.Fail,
			"largest_mr = 512 KiB is below the SKU's floor of 1 MiB"},
		{"a negative limit is not unlimited", mut(func(r *mr.Result) { r.Memlock.Soft = -65536 }), reports.Error, reports.Pass,
			"memlock soft limit -65536, which is not a limit"},
		{"unlimited is unlimited", mut(func(r *mr.Result) { r.Memlock.Soft = podenv.Unlimited }), reports.Pass, reports.Pass, ""},
		{"IPC_LOCK exempts a low limit", mut(func(r *mr.Result) { r.Memlock.Soft, r.IPCLock = 64<<10, true }), reports.Pass, reports.Pass, ""},
	} {
		checks := Memlock("shared-dev", Side{Node: "n", Pod: "p", Logs: c.logs}, sku(t, "A100/HDR-200"), nil)
		rl, reg := checks[0], checks[1]
		if rl.Status != c.rl || reg.Status != c.reg {
			t.Errorf("%s: rlimit %s (%s%s), registration %s (%s%s); want %s, %s", c.name, rl.Status, rl.Diagnosis, rl.Reason, reg.Status, reg.Diagnosis, reg.Reason, c.rl, c.reg)
			continue
		}
		all := rl.Diagnosis + rl.Reason + reg.Diagnosis + reg.Reason
		if !strings.Contains(all, c.contains) {
			t.Errorf("%s: %q lacks %q", c.name, all, c.contains)
		}
		// Whatever the verdict, the results file it makes is consistent.
		if err := (reports.Run{Checks: checks}).Validate(); err != nil {
			t.Errorf("%s: %v", c.name, err)
		}
	}
}
