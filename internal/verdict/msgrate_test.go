package verdict

import (
	"strings"
	"testing"

	"github.com/rdmasuite/rdmasuite/reports"
	"github.com/rdmasuite/rdmasuite/thresholds"
	"github.com/rdmasuite/rdmasuite/workloads/bw"
)

// msgRateOut is a pair's outputs where every rail wrote 2 B messages at
// mpps unless edit changes it.
func msgRateOut(t *testing.T, rails int, mpps float64, edit func(cli, srv *bw.ProbeOutput)) (string, string) {
	return pairOut(t, []string{"write"}, []int{2}, rails, 0.1, func(cli, srv *bw.ProbeOutput) {
		for i := range cli.Rails {
			for j := range cli.Rails[i].Runs {
				r := &cli.Rails[i].Runs[j]
				r.Params.QPs = 4
				for k := range r.Results {
					setMsgRate(&r.Results[k].Local, 20000, mpps)
				}
			}
		}
		if edit != nil {
			edit(cli, srv)
		}
	})
}

// msgRateInput judges against a copy of the H100 SKU given a floor of
// floor Mpps (0: none, as the built-in hardware SKUs have).
func msgRateInput(t *testing.T, cli, srv string, floor float64) BWInput {
	in := bwInput(t, []string{"write"}, []int{2}, cli, srv)
	k := *sku(t, "H100/NDR-400")
	if floor > 0 {
		k.WriteMsgRateMpps = thresholds.Value{Value: &floor, Source: "test baseline"}
	}
	in.SKU = &k
	return in
}

// Each rail pair is one msgrate/write check, judged on MsgRate (Mpps, the
// client's) against the floor: above passes, under fails with the fix.
func TestMsgRatePassAndFail(t *testing.T) {
	cli, srv := msgRateOut(t, 2, 9.5, nil)
	res := MsgRate(msgRateInput(t, cli, srv, 8))
	if got := statuses(res.Checks); got != "msgrate/write{mlx5_0/1→mlx5_0/1}=pass msgrate/write{mlx5_1/1→mlx5_1/1}=pass" {
		t.Fatalf("statuses: %s", got)
	}
	m := res.Checks[0].Measured[0]
	if m.Name != "write_2B_msgrate" || m.Unit != reports.UnitMpps || m.Value != 9.5 || m.Threshold == nil || m.Threshold.Op != ">=" || m.Threshold.Value != 8 {
		t.Fatalf("measured %+v", res.Checks[0].Measured)
	}
	cli, srv = msgRateOut(t, 1, 3.2, nil)
	res = MsgRate(msgRateInput(t, cli, srv, 8))
	if c := res.Checks[0]; c.Status != reports.Fail || c.Fix != FixSlowMsgRate || !strings.Contains(c.Diagnosis, "write_2B_msgrate = 3.2 Mpps") {
		t.Fatalf("%+v", c)
	}
}

// Defect guards: a rail whose run holds no operation is an error (a figure
// that cannot be true), one without a result at the size fails as not
// measured, never passes on a zero; a SKU without a
// floor is not-run naming writeMsgRateMpps, with the value kept.
func TestMsgRateMissingIsNeverAPass(t *testing.T) {
	cli, srv := msgRateOut(t, 1, 9.5, func(cli, _ *bw.ProbeOutput) {
		cli.Rails[0].Runs[0].Results[0].Local.Iterations = 0
	})
	res := MsgRate(msgRateInput(t, cli, srv, 8))
	if len(res.Checks) != 1 || res.Checks[0].Status != reports.Error || !strings.Contains(res.Checks[0].Reason, "0 operations: nothing was measured") {
		t.Fatalf("%+v", res.Checks)
	}
	cli, srv = msgRateOut(t, 1, 9.5, func(cli, _ *bw.ProbeOutput) {
		cli.Rails[0].Runs[0].Results = nil
	})
	if res = MsgRate(msgRateInput(t, cli, srv, 8)); res.Checks[0].Status != reports.Fail {
		t.Fatalf("no result: %+v", res.Checks)
	}
	cli, srv = msgRateOut(t, 1, 9.5, nil)
	res = MsgRate(msgRateInput(t, cli, srv, 0))
	if c := res.Checks[0]; c.Status != reports.NotRun || !strings.Contains(c.Reason, "writeMsgRateMpps") || len(c.Measured) != 1 || c.Measured[0].Threshold != nil {
		t.Fatalf("no floor: %+v", c)
	}
}

// Message rate is a small-message figure: with several sizes the smallest
// is judged (64 KiB writes are bandwidth-bound), the others recorded.
func TestMsgRateJudgesTheSmallestSize(t *testing.T) {
	cli, srv := pairOut(t, []string{"write"}, []int{2, 65536}, 1, 0.1, func(cli, _ *bw.ProbeOutput) {
		r := &cli.Rails[0].Runs[0]
		setMsgRate(&r.Results[0].Local, 20000, 9)
		setMsgRate(&r.Results[1].Local, 20000, 0.3) // 157 Gb/s: under the 200 Gb/s line rate
	})
	in := msgRateInput(t, cli, srv, 8)
	in.Sizes = []int{2, 65536}
	res := MsgRate(in)
	c := res.Checks[0]
	if c.Status != reports.Pass || len(c.Measured) != 2 || c.Measured[1].Name != "write_2B_msgrate" || c.Measured[1].Threshold == nil ||
		c.Measured[0].Name != "write_64KiB_msgrate" || c.Measured[0].Threshold != nil {
		t.Fatalf("%+v", c)
	}
}
