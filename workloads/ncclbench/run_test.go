package ncclbench

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rdmasuite/rdmasuite/workloads/nccl"
)

func parseTestdata(t *testing.T, name string) nccl.Table {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "nccl", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tb, err := nccl.ParseNCCLTests(f)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return tb
}

// realSweeps are real nccl-tests outputs (workloads/nccl/testdata) with the
// command line they came from: the sweep this package computes for the same
// -b/-e/-f (or -i) on the same number of ranks must print the same size,
// count, type and redop columns, row for row (the quotes hold the first
// rows only).
var realSweeps = []struct {
	file  string
	coll  nccl.Collective
	world int
	cfg   Config
}{
	// "# nThread 1 nGpus 1 minBytes 8192 maxBytes 8589934592 step: 2(factor)", two ranks
	{"allreduce_2.20.0_gb10_pr103.txt", nccl.AllReduce, 2, Config{MinBytes: 8192, MaxBytes: 8589934592, StepFactor: 2}},
	// "minBytes 17179869184 maxBytes 17179869184", two ranks
	{"allgather_2.17.6_gb10_25.txt", nccl.AllGather, 2, Config{MinBytes: 17179869184, MaxBytes: 17179869184, StepFactor: 2}},
	// "minBytes 256 maxBytes 1073741824 step: 2(factor)", two ranks
	{"sendrecv_2ranks_214.txt", nccl.SendRecv, 2, Config{MinBytes: 256, MaxBytes: 1073741824, StepFactor: 2}},
	// "minBytes 33554432 maxBytes 33554432 step: 1048576(bytes)", one rank
	{"alltoall_1rank_287.txt", nccl.AllToAll, 1, Config{MinBytes: 33554432, MaxBytes: 33554432, StepBytes: 1048576}},
	// 64 ranks; the quote has no parameter line: -b 256M -e 512M -f 2 from its rows
	{"alltoall_64ranks_78.txt", nccl.AllToAll, 64, Config{MinBytes: 268435456, MaxBytes: 536870912, StepFactor: 2}},
	{"allreduce_64ranks_78.txt", nccl.AllReduce, 64, Config{MinBytes: 268435456, MaxBytes: 536870912, StepFactor: 2}},
	// 8 ranks; no parameter line: five zero rows then 128 and 256 bytes is
	// -b 4 -f 2 (4..64 bytes are 1..16 elements, under 4 per rank)
	{"reducescatter_8ranks_128.txt", nccl.ReduceScatter, 8, Config{MinBytes: 4, MaxBytes: 256, StepFactor: 2}},
}

func TestShapeOfMatchesRealTables(t *testing.T) {
	for _, s := range realSweeps {
		t.Run(s.file, func(t *testing.T) {
			tb := parseTestdata(t, s.file)
			sizes := s.cfg.Sizes()
			if len(sizes) < len(tb.Rows) {
				t.Fatalf("sweep has %d sizes, the table %d rows", len(sizes), len(tb.Rows))
			}
			for i, row := range tb.Rows {
				sh, err := ShapeOf(s.coll, sizes[i], s.world)
				if err != nil {
					t.Fatal(err)
				}
				if sh.Size != row.Size || sh.Count != row.Count || row.Type != TypeName || (row.RedOp != "" && row.RedOp != RedOp(s.coll)) {
					t.Errorf("row %d: ours size %d count %d float %s, nccl-tests size %d count %d %s %s",
						i+1, sh.Size, sh.Count, RedOp(s.coll), row.Size, row.Count, row.Type, row.RedOp)
				}
			}
		})
	}
}

func TestShapeOfInPlaceLayout(t *testing.T) {
	// all_gather: the rank's input is its slot of the output; reduce_scatter:
	// its output is its slot of the input (nccl-tests *GetCollByteCount).
	ag, _ := ShapeOf(nccl.AllGather, 1000, 3) // 250 elements, 83 per rank, 80 after rounding
	if ag.Count != 80 || ag.SendBytes != 320 || ag.RecvBytes != 960 || ag.SendInPlaceOffset != 320 || ag.RecvInPlaceOffset != 0 || ag.Size != 960 {
		t.Errorf("all_gather: %+v", ag)
	}
	rs, _ := ShapeOf(nccl.ReduceScatter, 1000, 3)
	if rs.Count != 80 || rs.SendBytes != 960 || rs.RecvBytes != 320 || rs.SendInPlaceOffset != 0 || rs.RecvInPlaceOffset != 320 || rs.Size != 960 {
		t.Errorf("reduce_scatter: %+v", rs)
	}
	ar, _ := ShapeOf(nccl.AllReduce, 1001, 3)
	if ar.Count != 250 || ar.Size != 1000 || ar.SendInPlaceOffset != 0 || ar.RecvInPlaceOffset != 0 {
		t.Errorf("all_reduce: %+v", ar)
	}
	if _, err := ShapeOf(nccl.Broadcast, 8, 2); err == nil || !strings.Contains(err.Error(), "broadcast_perf") {
		t.Errorf("broadcast: %v, want an error naming broadcast_perf", err)
	}
}

func TestConfigSizesAndValidation(t *testing.T) {
	c := Config{MinBytes: 8, MaxBytes: 100, StepFactor: 3}
	if got, want := c.Sizes(), []int64{8, 24, 72}; !equalInts(got, want) {
		t.Errorf("-f 3: %v, want %v", got, want)
	}
	c = Config{MinBytes: 10, MaxBytes: 40, StepBytes: 10}
	if got, want := c.Sizes(), []int64{10, 20, 30, 40}; !equalInts(got, want) {
		t.Errorf("-i 10: %v, want %v", got, want)
	}
	if got, want := c.warmupSizes(), []int64{10, 20, 40}; !equalInts(got, want) {
		t.Errorf("warm-up sizes: %v, want %v (doubling whatever the step)", got, want)
	}
	c = Config{MinBytes: 1 << 62, MaxBytes: math.MaxInt64, StepFactor: 4}
	if got := c.Sizes(); len(got) != 1 {
		t.Errorf("overflowing sweep: %v", got)
	}
	d, err := DefaultConfig().normalized()
	if err != nil {
		t.Fatal(err)
	}
	want := nccl.Params{NThreads: 1, NGpus: 1, MinBytes: 8, MaxBytes: 128 << 20, StepFactor: 2, WarmupIters: 1, Iters: 20, AggIters: 1, Validation: 1}
	if d.Params() != want || len(d.Sizes()) != 25 || len(d.Collectives) != len(Supported) {
		t.Errorf("default: %+v, %d sizes", d.Params(), len(d.Sizes()))
	}
	// Neither variant selected means both, as nccl-tests always runs.
	if c, _ := (Config{Collectives: Supported, MinBytes: 8, MaxBytes: 8, Iters: 1}).normalized(); !c.InPlace || !c.OutOfPlace || c.Now == nil {
		t.Errorf("zero variants: %+v", c)
	}
	bad := []struct {
		cfg  Config
		want string
	}{
		{Config{Collectives: []nccl.Collective{nccl.AllReduce}, MinBytes: 0, MaxBytes: 8, StepFactor: 2, Iters: 1}, "MinBytes 0"},
		{Config{Collectives: []nccl.Collective{nccl.AllReduce}, MinBytes: 16, MaxBytes: 8, StepFactor: 2, Iters: 1}, "MinBytes 16 > MaxBytes 8"},
		{Config{Collectives: []nccl.Collective{nccl.AllReduce}, MinBytes: 8, MaxBytes: 16, Iters: 1}, "never grows"},
		{Config{Collectives: []nccl.Collective{nccl.AllReduce}, MinBytes: 8, MaxBytes: 16, StepFactor: 2}, "Iters 0"},
		{Config{Collectives: []nccl.Collective{nccl.Reduce}, MinBytes: 8, MaxBytes: 16, StepFactor: 2, Iters: 1}, "reduce_perf with RunBinary"},
		{Config{Collectives: []nccl.Collective{"gather"}, MinBytes: 8, MaxBytes: 16, StepFactor: 2, Iters: 1}, `unknown collective "gather"`},
		{Config{MinBytes: 8, MaxBytes: 16, StepFactor: 2, Iters: 1}, "no collectives"},
	}
	for _, b := range bad {
		w := newFakeWorld(1)
		_, err := Run(context.Background(), w.comm(0), w.mems[0], b.cfg)
		if err == nil || !strings.Contains(err.Error(), b.want) {
			t.Errorf("%+v: error %v, want one containing %q", b.cfg, err, b.want)
		}
		if len(w.calls[0]) != 0 || len(w.mems[0].allocs) != 0 {
			t.Errorf("%+v: a bad config still called or allocated", b.cfg)
		}
	}
}

func equalInts(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func fullConfig() Config {
	return Config{
		Collectives: append([]nccl.Collective(nil), Supported...),
		MinBytes:    4, MaxBytes: 4096, StepFactor: 2,
		Warmup: 2, Iters: 3, Check: true,
	}
}

// TestRunCorrectOnFakeRanks: on a correct fake, every collective and
// variant checks out on 1 to 4 ranks, the rows are nccl-tests' sizes and
// counts, and each rank makes the calls nccl-tests makes.
func TestRunCorrectOnFakeRanks(t *testing.T) {
	for n := 1; n <= 4; n++ {
		t.Run(string(rune('0'+n))+"ranks", func(t *testing.T) {
			cfg := fullConfig()
			w := newFakeWorld(n)
			res, errs := runFake(t, w, cfg, nil)
			sizes, warm := cfg.Sizes(), cfg.warmupSizes()
			for r := range n {
				if errs[r] != nil {
					t.Fatalf("rank %d: %v", r, errs[r])
				}
				rr := res[r]
				wantSyncs := 0
				if rr.Rank != r || rr.World != n || rr.Error != "" || len(rr.Collectives) != len(Supported) {
					t.Fatalf("rank %d: %+v", r, rr)
				}
				for ci, rc := range rr.Collectives {
					c := Supported[ci]
					if rc.Collective != c || len(rc.Rows) != len(sizes) {
						t.Fatalf("rank %d %s: %d rows, want %d", r, rc.Collective, len(rc.Rows), len(sizes))
					}
					nonZero := 0
					for i, row := range rc.Rows {
						sh, _ := ShapeOf(c, sizes[i], n)
						if row.Size != sh.Size || row.Count != sh.Count || row.Type != "float" || row.RedOp != RedOp(c) || row.Error != "" {
							t.Errorf("rank %d %s row %d: %+v, want shape %+v", r, c, i, row, sh)
						}
						if row.OutOfPlace == nil || row.InPlace == nil {
							t.Fatalf("rank %d %s row %d: a variant is missing", r, c, i)
						}
						if row.OutOfPlace.NA || row.OutOfPlace.Wrong != 0 {
							t.Errorf("rank %d %s size %d out-of-place: %+v", r, c, row.Size, *row.OutOfPlace)
						}
						wantNA := c == nccl.AllToAll || c == nccl.SendRecv
						if row.InPlace.NA != wantNA || row.InPlace.Wrong != 0 {
							t.Errorf("rank %d %s size %d in-place: %+v, want NA %v and 0 wrong", r, c, row.Size, *row.InPlace, wantNA)
						}
						if row.Count > 0 {
							nonZero++
						}
					}
					if nonZero < 5 {
						t.Errorf("rank %d %s: only %d sizes moved data", r, c, nonZero)
					}
					// nccl-tests: Warmup calls per warm-up size; per size and
					// variant one untimed call, Iters timed calls, one check
					// call (none for the unchecked in-place alltoall and
					// sendrecv). A Sync per warm-up size, and after the
					// untimed call, the timed calls and the check call.
					checks := 2
					if c == nccl.AllToAll || c == nccl.SendRecv {
						checks = 1
					}
					want := cfg.Warmup*len(warm) + len(sizes)*(2*(1+cfg.Iters)+checks)
					if got := w.calls[r][c]; got != want {
						t.Errorf("rank %d %s: %d calls, want %d", r, c, got, want)
					}
					wantSyncs += len(warm) + len(sizes)*(2*2+checks)
				}
				// nccl-tests shifts the operands by Size × (iteration mod
				// MaxBytes/Size): all_reduce of 4 bytes uses offsets 0, 4
				// and 8 (3 timed iterations); of MaxBytes, offset 0 only.
				if got := len(w.recvAddrs[r]["all_reduce/1"]); got != 3 {
					t.Errorf("rank %d: all_reduce of 4 bytes used %d receive addresses, want 3", r, got)
				}
				if got := len(w.recvAddrs[r]["all_reduce/1024"]); got != 1 {
					t.Errorf("rank %d: all_reduce of MaxBytes used %d receive addresses, want 1", r, got)
				}
				if w.syncs[r] != wantSyncs {
					t.Errorf("rank %d: %d Syncs, want %d", r, w.syncs[r], wantSyncs)
				}
			}
			comb, err := Combine(res)
			if err != nil {
				t.Fatal(err)
			}
			if !comb.OK() {
				t.Errorf("combined result not OK: %+v", comb)
			}
			for _, cr := range comb.Collectives {
				if cr.OutOfBounds != 0 || len(cr.Rows) != len(sizes) || cr.Measured != 2*len(sizes) {
					t.Errorf("%s: out of bounds %d, %d rows, %d measured", cr.Collective, cr.OutOfBounds, len(cr.Rows), cr.Measured)
				}
			}
		})
	}
}

// TestRunSweepMatchesRealTable: the rows Run measures for an nccl-tests
// command line are the rows nccl-tests printed for it.
func TestRunSweepMatchesRealTable(t *testing.T) {
	cases := []struct {
		file  string
		coll  nccl.Collective
		world int
		min   int64
		max   int64
	}{
		{"allreduce_2.20.0_gb10_pr103.txt", nccl.AllReduce, 2, 8192, 65536},
		{"sendrecv_2ranks_214.txt", nccl.SendRecv, 2, 256, 4096},
		{"reducescatter_8ranks_128.txt", nccl.ReduceScatter, 8, 4, 256},
	}
	for _, tc := range cases {
		t.Run(tc.file, func(t *testing.T) {
			tb := parseTestdata(t, tc.file)
			cfg := Config{Collectives: []nccl.Collective{tc.coll}, MinBytes: tc.min, MaxBytes: tc.max, StepFactor: 2, Warmup: 1, Iters: 2, Check: true}
			res, errs := runFake(t, newFakeWorld(tc.world), cfg, nil)
			for r, err := range errs {
				if err != nil {
					t.Fatalf("rank %d: %v", r, err)
				}
			}
			comb, err := Combine(res)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := comb.Table(tc.coll)
			if len(got.Rows) != len(tb.Rows) {
				t.Fatalf("%d rows, nccl-tests printed %d", len(got.Rows), len(tb.Rows))
			}
			for i := range tb.Rows {
				g, w := got.Rows[i], tb.Rows[i]
				if g.Size != w.Size || g.Count != w.Count || g.Type != w.Type || g.RedOp != w.RedOp || g.Root != w.Root ||
					g.OutOfPlace.WrongNA != w.OutOfPlace.WrongNA || g.InPlace.WrongNA != w.InPlace.WrongNA ||
					g.OutOfPlace.Wrong != 0 || g.InPlace.Wrong != 0 {
					t.Errorf("row %d: ours %+v, nccl-tests %+v", i+1, g, w)
				}
			}
		})
	}
}

func flipFirst(out []byte) {
	if len(out) >= 4 {
		put32(out, 0, f32(out, 0)+1)
	}
}

// TestRunDetectsWrongData: a fake that gets one collective wrong on one
// rank gives #wrong > 0 on exactly that collective.
func TestRunDetectsWrongData(t *testing.T) {
	cases := []struct {
		name      string
		coll      nccl.Collective
		rank      int
		corrupt   func(out []byte)
		perCheck  func(row Row) int64 // wrong elements per checked variant
		inPlaceNA bool
	}{
		{"all_gather drops one element on rank 1", nccl.AllGather, 1, flipFirst,
			func(Row) int64 { return 1 }, false},
		{"reduce_scatter reduces wrongly on rank 2", nccl.ReduceScatter, 2,
			func(out []byte) {
				for i := range len(out) / 4 {
					put32(out, i, f32(out, i)*2)
				}
			},
			func(r Row) int64 { return r.Count }, false},
		{"all_reduce off by one on rank 0", nccl.AllReduce, 0, flipFirst, func(Row) int64 { return 1 }, false},
		{"alltoall wrong on rank 2 (in-place not checked)", nccl.AllToAll, 2, flipFirst, func(Row) int64 { return 1 }, true},
		{"sendrecv wrong on rank 1 (in-place not checked)", nccl.SendRecv, 1, flipFirst, func(Row) int64 { return 1 }, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := newFakeWorld(3)
			w.corrupt = func(rank int, kind nccl.Collective, out []byte) {
				if rank == tc.rank && kind == tc.coll {
					tc.corrupt(out)
				}
			}
			cfg := fullConfig()
			res, errs := runFake(t, w, cfg, nil)
			for r, err := range errs {
				if err != nil {
					t.Fatalf("rank %d: %v", r, err)
				}
			}
			wantOOB := 0
			for r, rr := range res {
				for _, rc := range rr.Collectives {
					for _, row := range rc.Rows {
						var wantO, wantI int64
						if r == tc.rank && rc.Collective == tc.coll && row.Count > 0 {
							wantO = tc.perCheck(row)
							if !tc.inPlaceNA {
								wantI = wantO
							}
						}
						if row.OutOfPlace.Wrong != wantO || row.InPlace.Wrong != wantI {
							t.Errorf("rank %d %s size %d: #wrong %d/%d, want %d/%d", r, rc.Collective, row.Size,
								row.OutOfPlace.Wrong, row.InPlace.Wrong, wantO, wantI)
						}
						if wantO > 0 {
							wantOOB++
						}
						if wantI > 0 {
							wantOOB++
						}
					}
				}
			}
			if wantOOB == 0 {
				t.Fatal("the corruption never reached a check")
			}
			comb, err := Combine(res)
			if err != nil {
				t.Fatal(err)
			}
			for _, cr := range comb.Collectives {
				want := 0
				if cr.Collective == tc.coll {
					want = wantOOB
				}
				if cr.OutOfBounds != want {
					t.Errorf("%s: out of bounds %d, want %d", cr.Collective, cr.OutOfBounds, want)
				}
			}
			if comb.OK() {
				t.Error("a run with wrong data is OK")
			}
		})
	}
}

// A collective that writes nothing fails the check: outputs are zeroed
// before the check call, so neither stale data nor the input passes, even
// for all_reduce on one rank, whose output equals its input.
func TestRunDetectsMissingOutput(t *testing.T) {
	for _, n := range []int{1, 2} {
		w := newFakeWorld(n)
		w.noop = func(rank int, kind nccl.Collective) bool { return kind == nccl.AllReduce && rank == n-1 }
		cfg := fullConfig()
		cfg.Collectives = []nccl.Collective{nccl.AllReduce}
		res, _ := runFake(t, w, cfg, nil)
		for _, row := range res[n-1].Collectives[0].Rows {
			if row.OutOfPlace.Wrong != row.Count || row.InPlace.Wrong != 0 && n == 1 {
				t.Errorf("%d ranks, size %d: #wrong %d/%d, want %d out-of-place", n, row.Size, row.OutOfPlace.Wrong, row.InPlace.Wrong, row.Count)
			}
			// in place, the untouched buffer holds the input: right only on one rank
			if n > 1 && row.InPlace.Wrong != row.Count {
				t.Errorf("%d ranks, size %d: in-place #wrong %d, want %d", n, row.Size, row.InPlace.Wrong, row.Count)
			}
		}
	}
}

// Without Check nothing is checked: every #wrong is N/A, even on a broken fake.
func TestRunWithoutCheck(t *testing.T) {
	w := newFakeWorld(2)
	w.corrupt = func(_ int, _ nccl.Collective, out []byte) { flipFirst(out) }
	cfg := fullConfig()
	cfg.Check = false
	res, errs := runFake(t, w, cfg, nil)
	for r, rr := range res {
		if errs[r] != nil {
			t.Fatal(errs[r])
		}
		if rr.Params.Validation != 0 {
			t.Errorf("validation %d", rr.Params.Validation)
		}
		for _, rc := range rr.Collectives {
			for _, row := range rc.Rows {
				if !row.OutOfPlace.NA || !row.InPlace.NA || row.OutOfPlace.Wrong != 0 || row.InPlace.Wrong != 0 {
					t.Errorf("rank %d %s size %d: %+v %+v", r, rc.Collective, row.Size, *row.OutOfPlace, *row.InPlace)
				}
			}
		}
		// no check calls: one untimed call and Iters timed per variant
		want := cfg.Warmup*len(cfg.warmupSizes()) + len(cfg.Sizes())*2*(1+cfg.Iters)
		if got := w.calls[r][nccl.AllReduce]; got != want {
			t.Errorf("rank %d: %d all_reduce calls, want %d", r, got, want)
		}
	}
}

// TestRunKeepsRowsOnError: a call that fails mid-sweep keeps every row
// measured before it, records the error on the row, and stops the run on
// every rank (the failing rank aborts the communicator).
func TestRunKeepsRowsOnError(t *testing.T) {
	w := newFakeWorld(3)
	injected := errors.New("injected NCCL error: unhandled system error")
	// all_reduce at size 1024 (count 256): calls 0 warm-up, 1-5 out-of-place
	// (untimed, 3 timed, check), 6 in-place untimed, 7 in-place timed 0.
	w.fail = func(rank int, kind nccl.Collective, count, nth int) error {
		if rank == 1 && kind == nccl.AllReduce && count == 256 && nth == 7 {
			return injected
		}
		return nil
	}
	cfg := fullConfig()
	cfg.Warmup = 1
	res, errs := runFake(t, w, cfg, nil)
	if !errors.Is(errs[1], injected) {
		t.Fatalf("rank 1: %v, want the injected error", errs[1])
	}
	for r := range 3 {
		if errs[r] == nil || res[r].Error == "" {
			t.Fatalf("rank %d: no error after the communicator was aborted", r)
		}
		if len(res[r].Collectives) != 1 {
			t.Fatalf("rank %d went on to %d collectives", r, len(res[r].Collectives))
		}
	}
	rc := res[1].Collectives[0]
	// sizes 4..512 complete, 1024 with its out-of-place half only
	if len(rc.Rows) != 9 {
		t.Fatalf("rank 1: %d rows, want 9", len(rc.Rows))
	}
	for _, row := range rc.Rows[:8] {
		if row.OutOfPlace == nil || row.InPlace == nil || row.Error != "" {
			t.Errorf("rank 1 size %d lost: %+v", row.Size, row)
		}
	}
	last := rc.Rows[8]
	if last.Size != 1024 || last.OutOfPlace == nil || last.InPlace != nil ||
		!strings.Contains(last.Error, "in-place") || !strings.Contains(last.Error, "timed iteration 0") || !strings.Contains(last.Error, "injected") {
		t.Errorf("rank 1 failing row: %+v", last)
	}
	comb, err := Combine(res)
	if err != nil {
		t.Fatal(err)
	}
	cr, _ := comb.Collective(nccl.AllReduce)
	if comb.OK() || len(cr.Errors) == 0 || !strings.Contains(strings.Join(cr.Errors, "\n"), "rank 1: all_reduce size 1024 in-place") {
		t.Errorf("combined errors: %q", cr.Errors)
	}
	if len(cr.Rows) < 8 {
		t.Errorf("combined: %d rows kept, want the 8 complete ones at least", len(cr.Rows))
	}
	tb, _ := comb.Table(nccl.AllReduce)
	if len(tb.Rows) != 8 || len(tb.Failures) == 0 {
		t.Errorf("table: %d rows, failures %q", len(tb.Rows), tb.Failures)
	}
}

func TestRunAllocFailure(t *testing.T) {
	w := newFakeWorld(1)
	w.allocFail = func(int) error { return errors.New("out of memory") }
	res, err := Run(context.Background(), w.comm(0), w.mems[0], fullConfig())
	if err == nil || !strings.Contains(err.Error(), "send buffer") || !strings.Contains(res.Error, "out of memory") || len(res.Collectives) != 0 {
		t.Errorf("alloc failure: %v, %+v", err, res)
	}
	comb, cerr := Combine([]RankResult{res})
	if cerr != nil || comb.OK() || len(comb.Errors) != 1 {
		t.Errorf("combine of a failed rank: %v, %+v", cerr, comb)
	}
}

func TestRunCancelled(t *testing.T) {
	w := newFakeWorld(1)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res, err := Run(ctx, w.comm(0), w.mems[0], fullConfig())
	if !errors.Is(err, context.Canceled) || len(res.Collectives) != 1 || res.Collectives[0].Error == "" {
		t.Errorf("cancelled: %v, %+v", err, res)
	}
	if len(w.calls[0]) != 0 {
		t.Errorf("calls after cancel: %v", w.calls[0])
	}
}

// TestBandwidthArithmetic: with an injected clock (every reading 1 ms after
// the previous, so each variant's timed loop takes exactly 1 ms), time,
// algbw and busbw are nccl-tests' for every collective on 2 and 8 ranks.
func TestBandwidthArithmetic(t *testing.T) {
	factors := map[int]map[nccl.Collective]float64{
		2: {nccl.AllReduce: 1, nccl.AllGather: 0.5, nccl.ReduceScatter: 0.5, nccl.AllToAll: 0.5, nccl.SendRecv: 1},
		8: {nccl.AllReduce: 1.75, nccl.AllGather: 0.875, nccl.ReduceScatter: 0.875, nccl.AllToAll: 0.875, nccl.SendRecv: 1},
	}
	for _, n := range []int{2, 8} {
		cfg := fullConfig()
		cfg.MinBytes, cfg.MaxBytes, cfg.Iters = 1024, 1<<16, 4
		res, errs := runFake(t, newFakeWorld(n), cfg, func(int) func() time.Time { return stepClock(time.Millisecond) })
		for r := range n {
			if errs[r] != nil {
				t.Fatal(errs[r])
			}
			for _, rc := range res[r].Collectives {
				for _, row := range rc.Rows {
					for _, h := range []*Half{row.OutOfPlace, row.InPlace} {
						const us = 250.0 // 1 ms / 4 iterations
						alg := float64(row.Size) / 1e9 / (us * 1e-6)
						bus := alg * factors[n][rc.Collective]
						if h.TimeUS != us || !approx(h.AlgBW, alg) || !approx(h.BusBW, bus) {
							t.Errorf("%d ranks %s size %d: %g us %g GB/s %g GB/s, want %g us %g %g",
								n, rc.Collective, row.Size, h.TimeUS, h.AlgBW, h.BusBW, us, alg, bus)
						}
					}
				}
			}
		}
		// Ranks timed at 1, 2, ..., n ms: Combine averages the time and
		// recomputes the bandwidths from the average.
		res, _ = runFake(t, newFakeWorld(n), cfg, func(r int) func() time.Time { return stepClock(time.Duration(r+1) * time.Millisecond) })
		comb, err := Combine(res)
		if err != nil {
			t.Fatal(err)
		}
		meanUS := float64(n+1) / 2 * 1000 / 4
		for _, cr := range comb.Collectives {
			sum := 0.0
			for _, row := range cr.Rows {
				h := row.OutOfPlace
				alg := float64(row.Size) / 1e9 / (meanUS * 1e-6)
				if !approx(h.TimeUS, meanUS) || !approx(h.AlgBW, alg) || !approx(h.BusBW, alg*factors[n][cr.Collective]) {
					t.Errorf("%d ranks combined %s size %d: %+v, want %g us %g GB/s", n, cr.Collective, row.Size, *h, meanUS, alg)
				}
				sum += row.OutOfPlace.BusBW + row.InPlace.BusBW
			}
			if !approx(cr.AvgBusBW, sum/float64(2*len(cr.Rows))) {
				t.Errorf("%s avg busbw %g, want %g", cr.Collective, cr.AvgBusBW, sum/float64(2*len(cr.Rows)))
			}
		}
	}
}

func approx(a, b float64) bool {
	return math.Abs(a-b) <= 1e-12*math.Max(math.Abs(a), math.Abs(b))
}
