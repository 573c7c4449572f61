package ncclbench

import (
	"errors"
	"fmt"
	"strings"

	"github.com/rdmasuite/rdmasuite/workloads/nccl"
)

// Combine merges every rank's result as nccl-tests' rank 0 does in
// multi-process mode: per size and variant the time is the mean over the
// ranks (nccl-tests' default -a 1), algbw and busbw are recomputed from
// that mean, #wrong is the sum over the ranks, and per collective the
// "Out of bounds values" and "Avg bus bandwidth" footers are computed.
//
// ranks may come in any order. It is an error, naming the rank, when a
// rank is missing or duplicated, reports another world size or other
// parameters, runs other collectives, or measured other sizes; or when a
// rank has fewer rows than another without having recorded a failure (a
// truncated result). A rank that failed is not an error here: the rows
// every rank measured are merged, the failures are listed in the result's
// Errors, and a row or variant some rank did not measure is left out.
func Combine(ranks []RankResult) (Result, error) {
	if len(ranks) == 0 {
		return Result{}, errors.New("ncclbench: combine: no rank results")
	}
	world := ranks[0].World
	if world < 1 {
		return Result{}, fmt.Errorf("ncclbench: combine: rank %d reports world %d", ranks[0].Rank, world)
	}
	byRank := make([]*RankResult, world)
	for i := range ranks {
		rr := &ranks[i]
		switch {
		case rr.World != world:
			return Result{}, fmt.Errorf("ncclbench: combine: rank %d reports world %d, rank %d reports %d", rr.Rank, rr.World, ranks[0].Rank, world)
		case rr.Rank < 0 || rr.Rank >= world:
			return Result{}, fmt.Errorf("ncclbench: combine: rank %d is outside world %d", rr.Rank, world)
		case byRank[rr.Rank] != nil:
			return Result{}, fmt.Errorf("ncclbench: combine: rank %d reported twice", rr.Rank)
		}
		byRank[rr.Rank] = rr
	}
	var missing []int
	for r, rr := range byRank {
		if rr == nil {
			missing = append(missing, r)
		}
	}
	if len(missing) > 0 {
		return Result{}, fmt.Errorf("ncclbench: combine: no result from rank(s) %v of %d", missing, world)
	}
	r0 := byRank[0]
	res := Result{World: world, Params: r0.Params}
	for _, rr := range byRank {
		if rr.Params != r0.Params {
			return Result{}, fmt.Errorf("ncclbench: combine: rank %d ran with %+v, rank 0 with %+v", rr.Rank, rr.Params, r0.Params)
		}
		if rr.Device != nil {
			d := *rr.Device
			d.Rank = rr.Rank
			res.Devices = append(res.Devices, d)
		}
	}

	// Collectives: the longest list is the reference; a rank with fewer
	// must have failed, and every rank lists them in the same order.
	ref := r0
	for _, rr := range byRank {
		if len(rr.Collectives) > len(ref.Collectives) {
			ref = rr
		}
	}
	for _, rr := range byRank {
		for i, rc := range rr.Collectives {
			if want := ref.Collectives[i].Collective; rc.Collective != want {
				return Result{}, fmt.Errorf("ncclbench: combine: rank %d ran %s as collective %d, rank %d ran %s", rr.Rank, rc.Collective, i+1, ref.Rank, want)
			}
		}
		if len(rr.Collectives) < len(ref.Collectives) && rr.Error == "" {
			return Result{}, fmt.Errorf("ncclbench: combine: rank %d reports %d collectives, rank %d reports %d, and rank %d recorded no failure: its result is truncated",
				rr.Rank, len(rr.Collectives), ref.Rank, len(ref.Collectives), rr.Rank)
		}
	}
	for ci, refColl := range ref.Collectives {
		cr, err := combineCollective(byRank, ci, refColl.Collective)
		if err != nil {
			return Result{}, err
		}
		res.Collectives = append(res.Collectives, cr)
	}
	// Failures that no collective holds (configuration, allocation).
	for _, rr := range byRank {
		if rr.Error == "" {
			continue
		}
		held := false
		for _, rc := range rr.Collectives {
			if rc.Error != "" {
				held = true
			}
			for _, row := range rc.Rows {
				if row.Error != "" {
					held = true
				}
			}
		}
		if !held {
			res.Errors = append(res.Errors, fmt.Sprintf("rank %d: %s", rr.Rank, rr.Error))
		}
	}
	return res, nil
}

func combineCollective(byRank []*RankResult, ci int, c nccl.Collective) (CollectiveResult, error) {
	cr := CollectiveResult{Collective: c}
	world := len(byRank)
	var colls []*RankCollective
	longest := -1
	for _, rr := range byRank {
		if ci >= len(rr.Collectives) {
			cr.Errors = append(cr.Errors, fmt.Sprintf("rank %d: stopped before %s: %s", rr.Rank, c, rr.Error))
			colls = append(colls, nil)
			continue
		}
		rc := &rr.Collectives[ci]
		colls = append(colls, rc)
		if rc.Error != "" {
			cr.Errors = append(cr.Errors, fmt.Sprintf("rank %d: %s", rr.Rank, rc.Error))
		}
		if longest < 0 || len(rc.Rows) > len(colls[longest].Rows) {
			longest = len(colls) - 1
		}
	}
	if longest < 0 {
		return cr, nil
	}
	refRows := colls[longest].Rows
	for r, rc := range colls {
		if rc == nil {
			continue
		}
		for i, row := range rc.Rows {
			if row.Error != "" {
				cr.Errors = append(cr.Errors, fmt.Sprintf("rank %d: %s", r, row.Error))
			}
			ref := refRows[i]
			if row.Size != ref.Size || row.Count != ref.Count || row.Type != ref.Type || row.RedOp != ref.RedOp {
				return cr, fmt.Errorf("ncclbench: combine: %s row %d: rank %d measured size %d count %d %s %s, rank %d size %d count %d %s %s",
					c, i+1, r, row.Size, row.Count, row.Type, row.RedOp, longest, ref.Size, ref.Count, ref.Type, ref.RedOp)
			}
		}
		if len(rc.Rows) < len(refRows) && rc.Error == "" && !rowsFailed(rc.Rows) {
			return cr, fmt.Errorf("ncclbench: combine: rank %d has %d %s rows, rank %d has %d, and rank %d recorded no failure: its result is truncated",
				r, len(rc.Rows), c, longest, len(refRows), r)
		}
	}
	for i, ref := range refRows {
		row := Row{Size: ref.Size, Count: ref.Count, Type: ref.Type, RedOp: ref.RedOp}
		var oop, ip []*Half
		complete := true
		for _, rc := range colls {
			if rc == nil || i >= len(rc.Rows) {
				complete = false
				break
			}
			oop = append(oop, rc.Rows[i].OutOfPlace)
			ip = append(ip, rc.Rows[i].InPlace)
		}
		if !complete {
			continue // not measured on every rank; the failures are in cr.Errors
		}
		row.OutOfPlace = combineHalf(c, ref.Size, world, oop, &cr.OutOfBounds)
		row.InPlace = combineHalf(c, ref.Size, world, ip, &cr.OutOfBounds)
		var rowErrs []string
		for r, rc := range colls {
			if e := rc.Rows[i].Error; e != "" {
				rowErrs = append(rowErrs, fmt.Sprintf("rank %d: %s", r, e))
			}
		}
		row.Error = strings.Join(rowErrs, "; ")
		if row.OutOfPlace == nil && row.InPlace == nil && row.Error == "" {
			continue
		}
		cr.Rows = append(cr.Rows, row)
	}
	sum := 0.0
	for _, row := range cr.Rows {
		for _, h := range []*Half{row.OutOfPlace, row.InPlace} {
			if h != nil {
				sum += h.BusBW
				cr.Measured++
			}
		}
	}
	if cr.Measured > 0 {
		cr.AvgBusBW = sum / float64(cr.Measured)
	}
	return cr, nil
}

func rowsFailed(rows []Row) bool {
	for _, r := range rows {
		if r.Error != "" {
			return true
		}
	}
	return false
}

// combineHalf merges one variant over the ranks: nil unless every rank
// measured it. checks counts the ranks whose check found wrong data.
func combineHalf(c nccl.Collective, size int64, world int, hs []*Half, checks *int) *Half {
	var out Half
	sumUS := 0.0
	for _, h := range hs {
		if h == nil {
			return nil
		}
	}
	for _, h := range hs {
		sumUS += h.TimeUS
		out.Wrong += h.Wrong
		out.NA = out.NA || h.NA
		if !h.NA && h.Wrong > 0 {
			*checks++
		}
	}
	out.TimeUS = sumUS / float64(len(hs))
	out.AlgBW = nccl.AlgBandwidth(size, out.TimeUS/1e6)
	out.BusBW = nccl.BusBandwidth(c, out.AlgBW, world)
	if out.NA {
		out.Wrong = 0
	}
	return &out
}
