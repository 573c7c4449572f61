package verdict

import (
	"testing"

	"github.com/rdmasuite/rdmasuite/reports"
)

// Every check a pair verdict makes carries its traits, so the reports read
// them instead of the id: pair rows client → server for every metric, the
// heat map and localisation for bandwidth (and GPUDirect, its copy) only,
// link checks marked as such, failures included.
func TestPairVerdictsCarryTheirTraits(t *testing.T) {
	ops, sizes := []string{"write", "read"}, []int{k64}
	cli, srv := pairOut(t, ops, sizes, 2, 190, nil)
	bwRes := Bandwidth(bwInput(t, ops, sizes, cli, srv))
	lcli, lsrv := latencyOut(t, ops, 1, 2.0, nil)
	latRes := Latency(latInput(t, ops, lcli, lsrv))
	mcli, msrv := msgRateOut(t, 1, 3.2, nil)
	mrRes := MsgRate(msgRateInput(t, mcli, msrv, 8))
	for _, tc := range []struct {
		name      string
		res       BWResult
		heat      string
		localize  bool
		wantFails bool
	}{
		{"bandwidth", bwRes, "Gb/s", true, false},
		{"latency", latRes, "", false, false},
		{"msgrate", mrRes, "", false, true},
	} {
		if len(tc.res.Checks) == 0 || len(tc.res.LinkChecks) == 0 {
			t.Fatalf("%s: no checks: %s", tc.name, statuses(tc.res.Checks))
		}
		failed := false
		for _, c := range tc.res.Checks {
			failed = failed || c.Status == reports.Fail
			want := reports.Traits{Pair: true, Op: c.ID[len(tc.name)+1:], HeatUnit: tc.heat, Localize: tc.localize}
			if c.Traits == nil || *c.Traits != want {
				t.Errorf("%s %s traits %+v, want %+v", tc.name, c.ID, c.Traits, want)
			}
		}
		if failed != tc.wantFails {
			t.Errorf("%s: a failing check is judged too: %s", tc.name, statuses(tc.res.Checks))
		}
		for _, c := range tc.res.LinkChecks {
			want := reports.Traits{Pair: true, Link: true, Localize: tc.localize}
			if c.Traits == nil || *c.Traits != want {
				t.Errorf("%s %s traits %+v, want %+v", tc.name, c.ID, c.Traits, want)
			}
		}
	}
}
