package ncclbench

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/rdmasuite/rdmasuite/workloads/nccl"
)

func handRank(rank, world int, rows ...Row) RankResult {
	return RankResult{
		Rank: rank, World: world, Params: fullConfig().Params(),
		Collectives: []RankCollective{{Collective: nccl.AllReduce, Rows: rows}},
	}
}

func handRow(size int64, oopUS, ipUS float64, oopWrong, ipWrong int64) Row {
	return Row{Size: size, Count: size / 4, Type: "float", RedOp: "sum",
		OutOfPlace: &Half{TimeUS: oopUS, Wrong: oopWrong}, InPlace: &Half{TimeUS: ipUS, Wrong: ipWrong}}
}

func TestCombineAveragesAndSums(t *testing.T) {
	// Ranks out of order; rank 1 found 2 wrong elements in-place at 1 MB,
	// rank 2 found 3 out-of-place at 1 MB.
	ranks := []RankResult{
		handRank(2, 3, handRow(1000, 30, 60, 0, 0), handRow(1e6, 300, 300, 3, 0)),
		handRank(0, 3, handRow(1000, 10, 20, 0, 0), handRow(1e6, 100, 100, 0, 0)),
		handRank(1, 3, handRow(1000, 20, 40, 0, 0), handRow(1e6, 200, 200, 0, 2)),
	}
	res, err := Combine(ranks)
	if err != nil {
		t.Fatal(err)
	}
	cr, ok := res.Collective(nccl.AllReduce)
	if !ok || len(cr.Rows) != 2 || res.World != 3 {
		t.Fatalf("%+v", res)
	}
	r0, r1 := cr.Rows[0], cr.Rows[1]
	if r0.OutOfPlace.TimeUS != 20 || r0.InPlace.TimeUS != 40 || r1.OutOfPlace.TimeUS != 200 {
		t.Errorf("times not averaged: %+v %+v %+v", *r0.OutOfPlace, *r0.InPlace, *r1.OutOfPlace)
	}
	// algbw from the mean time: 1000 B / 20 us = 0.05 GB/s; busbw × 2(3-1)/3
	if !approx(r0.OutOfPlace.AlgBW, 0.05) || !approx(r0.OutOfPlace.BusBW, 0.05*4/3) {
		t.Errorf("bandwidth not from the mean time: %+v", *r0.OutOfPlace)
	}
	if r1.OutOfPlace.Wrong != 3 || r1.InPlace.Wrong != 2 || r0.OutOfPlace.Wrong != 0 {
		t.Errorf("#wrong not summed: %+v %+v", *r1.OutOfPlace, *r1.InPlace)
	}
	if cr.OutOfBounds != 2 {
		t.Errorf("out of bounds %d, want 2 (two checks failed)", cr.OutOfBounds)
	}
	want := (r0.OutOfPlace.BusBW + r0.InPlace.BusBW + r1.OutOfPlace.BusBW + r1.InPlace.BusBW) / 4
	if !approx(cr.AvgBusBW, want) || cr.Measured != 4 {
		t.Errorf("avg busbw %g over %d, want %g over 4", cr.AvgBusBW, cr.Measured, want)
	}
	if res.OK() {
		t.Error("wrong data is OK")
	}
	// JSON round trip of both result kinds.
	for _, v := range []any{ranks[0], res} {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		switch v := v.(type) {
		case RankResult:
			var back RankResult
			if err := json.Unmarshal(b, &back); err != nil || back.Collectives[0].Rows[1].OutOfPlace.Wrong != v.Collectives[0].Rows[1].OutOfPlace.Wrong {
				t.Errorf("RankResult JSON: %v %s", err, b)
			}
		case Result:
			var back Result
			if err := json.Unmarshal(b, &back); err != nil || back.Collectives[0].AvgBusBW != v.Collectives[0].AvgBusBW || back.Collectives[0].OutOfBounds != 2 {
				t.Errorf("Result JSON: %v %s", err, b)
			}
		}
	}
}

func TestCombineNAInPlace(t *testing.T) {
	na := func(rank int) RankResult {
		rr := handRank(rank, 2, handRow(4096, 10, 10, 0, 0))
		rr.Collectives[0].Collective = nccl.SendRecv
		rr.Collectives[0].Rows[0].InPlace.NA = true
		rr.Collectives[0].Rows[0].InPlace.Wrong = 7 // ignored where N/A
		return rr
	}
	res, err := Combine([]RankResult{na(0), na(1)})
	if err != nil {
		t.Fatal(err)
	}
	row := res.Collectives[0].Rows[0]
	if !row.InPlace.NA || row.InPlace.Wrong != 0 || res.Collectives[0].OutOfBounds != 0 {
		t.Errorf("N/A in-place: %+v, out of bounds %d", *row.InPlace, res.Collectives[0].OutOfBounds)
	}
	// sendrecv busbw = algbw: 4096 B / 10 us
	if !approx(row.OutOfPlace.BusBW, 4096/1e9/10e-6) {
		t.Errorf("sendrecv busbw %g", row.OutOfPlace.BusBW)
	}
}

func TestCombineErrors(t *testing.T) {
	good := func(rank, world int) RankResult {
		return handRank(rank, world, handRow(1000, 1, 1, 0, 0), handRow(2000, 1, 1, 0, 0))
	}
	cases := []struct {
		name  string
		ranks []RankResult
		want  string
	}{
		{"none", nil, "no rank results"},
		{"missing rank", []RankResult{good(0, 3), good(2, 3)}, "rank(s) [1]"},
		{"duplicate rank", []RankResult{good(0, 2), good(0, 2)}, "rank 0 reported twice"},
		{"world mismatch", []RankResult{good(0, 2), good(1, 3)}, "rank 1 reports world 3"},
		{"rank outside world", []RankResult{good(0, 2), good(5, 2)}, "rank 5 is outside world 2"},
		{"size mismatch", []RankResult{good(0, 2), handRank(1, 2, handRow(1000, 1, 1, 0, 0), handRow(4000, 1, 1, 0, 0))}, "rank 1 measured size 4000"},
		{"truncated", []RankResult{good(0, 2), handRank(1, 2, handRow(1000, 1, 1, 0, 0))}, "rank 1 has 1 all_reduce rows"},
		{"params mismatch", []RankResult{good(0, 2), func() RankResult { r := good(1, 2); r.Params.Iters = 99; return r }()}, "rank 1 ran with"},
		{"collective mismatch", []RankResult{good(0, 2), func() RankResult { r := good(1, 2); r.Collectives[0].Collective = nccl.AllGather; return r }()}, "rank 1 ran all_gather"},
	}
	for _, tc := range cases {
		_, err := Combine(tc.ranks)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error containing %q", tc.name, err, tc.want)
		}
	}
}

// A rank that failed is not a Combine error: the rows every rank measured
// are merged and the failure is listed.
func TestCombineKeepsFailedRank(t *testing.T) {
	r0 := handRank(0, 2, handRow(1000, 1, 1, 0, 0), handRow(2000, 1, 1, 0, 0))
	failed := handRow(2000, 3, 0, 0, 0)
	failed.InPlace, failed.Error = nil, "all_reduce size 2000 in-place: timed iteration 0: unhandled system error"
	r1 := handRank(1, 2, handRow(1000, 3, 3, 0, 0), failed)
	r1.Error = "ncclbench: rank 1: " + failed.Error
	res, err := Combine([]RankResult{r0, r1})
	if err != nil {
		t.Fatal(err)
	}
	cr := res.Collectives[0]
	if len(cr.Rows) != 2 || cr.Rows[1].InPlace != nil || cr.Rows[1].OutOfPlace.TimeUS != 2 || !strings.Contains(cr.Rows[1].Error, "rank 1: all_reduce size 2000") {
		t.Errorf("rows: %+v", cr.Rows)
	}
	if cr.Measured != 3 || len(cr.Errors) == 0 || res.OK() {
		t.Errorf("measured %d, errors %q, OK %v", cr.Measured, cr.Errors, res.OK())
	}
	if len(res.Errors) != 0 {
		t.Errorf("a failure held by a row listed again: %q", res.Errors)
	}
}
