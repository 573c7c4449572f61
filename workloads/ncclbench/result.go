package ncclbench

import (
	"github.com/rdmasuite/rdmasuite/workloads/nccl"
)

// Half is one variant (out-of-place or in-place) of a row.
type Half struct {
	// TimeUS is the time of one operation in µs: the wall time of Iters
	// calls and the Sync after them, divided by Iters (nccl-tests
	// BenchTime without CUDA graphs).
	TimeUS float64 `json:"time_us"`
	// AlgBW = Size / time and BusBW = AlgBW × the collective's bus factor
	// on World ranks, in GB/s (1e9 B/s).
	AlgBW float64 `json:"algbw_gbs"`
	BusBW float64 `json:"busbw_gbs"`
	// Wrong is #wrong: elements that did not hold the expected value.
	Wrong int64 `json:"wrong"`
	// NA is set where #wrong is N/A: Check was off, or the in-place
	// variant of alltoall and sendrecv, which nccl-tests times but does not
	// check.
	NA bool `json:"wrong_na,omitempty"`
}

// Row is one size of a collective's sweep.
type Row struct {
	Size  int64  `json:"size"`  // the size column, bytes (Shape.Size)
	Count int64  `json:"count"` // the count column, elements (Shape.Count)
	Type  string `json:"type"`  // "float"
	RedOp string `json:"redop"`
	// OutOfPlace and InPlace are nil where the variant was not measured
	// (not selected, or the run stopped before it).
	OutOfPlace *Half `json:"out_of_place,omitempty"`
	InPlace    *Half `json:"in_place,omitempty"`
	// Error is the failure that stopped the sweep at this row.
	Error string `json:"error,omitempty"`
}

// RankCollective is one rank's sweep of one collective.
type RankCollective struct {
	Collective nccl.Collective `json:"collective"`
	Rows       []Row           `json:"rows"`
	// Error is the failure that stopped the run in this collective outside
	// a row (its warm-up, or a cancelled context between sizes). A failure
	// inside a row is on the row.
	Error string `json:"error,omitempty"`
}

// RankResult is what Run measured on one rank. Rows measured before a
// failure are kept; the failure is on the row or collective where it
// happened and in Error.
type RankResult struct {
	Rank   int         `json:"rank"`
	World  int         `json:"world"`
	Params nccl.Params `json:"params"`
	// Device is the GPU this rank ran on, for the device lines of a
	// rendered table; Run leaves it nil, the caller fills it.
	Device      *nccl.Device     `json:"device,omitempty"`
	Collectives []RankCollective `json:"collectives"`
	// Error is the failure that stopped this rank's run.
	Error string `json:"error,omitempty"`
}

// CollectiveResult is one collective merged over every rank.
type CollectiveResult struct {
	Collective nccl.Collective `json:"collective"`
	// Rows holds every size that every rank measured: time averaged over
	// the ranks, algbw and busbw recomputed from that time, #wrong summed.
	// A variant missing on any rank is nil.
	Rows []Row `json:"rows"`
	// AvgBusBW is nccl-tests' "# Avg bus bandwidth": the mean busbw of
	// every out-of-place and in-place result in Rows; 0 when there is none.
	AvgBusBW float64 `json:"avg_busbw_gbs"`
	// Measured is the number of results AvgBusBW averages.
	Measured int `json:"measured"`
	// OutOfBounds is nccl-tests' "# Out of bounds values": the number of
	// checks (rank × size × checked variant) that found wrong elements.
	OutOfBounds int `json:"out_of_bounds"`
	// Errors are the ranks' failures in this collective, "rank N: ...".
	Errors []string `json:"errors,omitempty"`
}

// Result is the merge of every rank's RankResult (Combine).
type Result struct {
	World       int                `json:"world"`
	Params      nccl.Params        `json:"params"`
	Devices     []nccl.Device      `json:"devices,omitempty"`
	Collectives []CollectiveResult `json:"collectives"`
	// Errors are the ranks' failures outside any collective ("rank N: ...").
	Errors []string `json:"errors,omitempty"`
}

// Collective returns the merged result of c.
func (r Result) Collective(c nccl.Collective) (CollectiveResult, bool) {
	for _, cr := range r.Collectives {
		if cr.Collective == c {
			return cr, true
		}
	}
	return CollectiveResult{}, false
}

// OK tells whether the run is clean: no rank failed, and no check found
// wrong data.
func (r Result) OK() bool {
	if len(r.Errors) > 0 {
		return false
	}
	for _, cr := range r.Collectives {
		if len(cr.Errors) > 0 || cr.OutOfBounds > 0 {
			return false
		}
	}
	return true
}
