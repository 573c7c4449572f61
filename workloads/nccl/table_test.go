package nccl

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func parseTableFile(t *testing.T, name string) Table {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tb, err := ParseNCCLTests(f)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return tb
}

// realTables are the nccl-tests outputs of testdata/ with what each must
// parse to. nRanks comes from the device lines where the output has them,
// else from the size and count columns (all_gather, reduce_scatter,
// alltoall), else from the text.
var realTables = []struct {
	file   string
	coll   Collective
	nRanks int
	rows   int
}{
	{"allreduce_2.20.0_gb10_pr103.txt", AllReduce, 2, 4},
	{"allgather_2.17.6_gb10_25.txt", AllGather, 2, 1},
	{"allreduce_64ranks_78.txt", AllReduce, 64, 2}, // "8nodes which node have 8v100"
	{"alltoall_64ranks_78.txt", AllToAll, 64, 2},
	{"alltoall_1rank_287.txt", AllToAll, 1, 1},
	{"sendrecv_2ranks_214.txt", SendRecv, 2, 5},
	{"reducescatter_8ranks_128.txt", ReduceScatter, 8, 7},
	{"broadcast_2ranks_82.txt", Broadcast, 2, 1},
	{"allreduce_tail_1706.txt", AllReduce, 2, 1}, // "-g 2"
	{"allgather_bf16_2ranks_1435.txt", AllGather, 2, 7},
}

// Every row of every real table reproduces its printed algbw from size and
// time, and its busbw from algbw, collective and rank count.
func TestRealTablesMatchBandwidthDefinitions(t *testing.T) {
	for _, tc := range realTables {
		tb := parseTableFile(t, tc.file)
		if len(tb.Rows) != tc.rows {
			t.Errorf("%s: %d rows, want %d", tc.file, len(tb.Rows), tc.rows)
		}
		if n := tb.NRanks(); n != 0 && n != tc.nRanks {
			t.Errorf("%s: device lines list %d ranks, want %d", tc.file, n, tc.nRanks)
		}
		for _, r := range tb.Rows {
			if err := CheckRow(tc.coll, r, tc.nRanks); err != nil {
				t.Errorf("%s: %v", tc.file, err)
			}
			if n := tc.coll.RanksFromSize(r.Size, r.Count, r.Type); n != 0 && n != tc.nRanks {
				t.Errorf("%s line %d: size/count give %d ranks, want %d", tc.file, r.Line, n, tc.nRanks)
			}
		}
	}
	// The mpirun-tagged EKS rows are too small to show a bandwidth (algbw
	// 0.00): they hold for any rank count.
	tb := parseTableFile(t, "allreduce_mpitag_eks_503.txt")
	if len(tb.Rows) != 3 || len(tb.Columns) != 13 {
		t.Fatalf("mpirun-tagged table: %d rows, %d columns", len(tb.Rows), len(tb.Columns))
	}
	for _, n := range []int{2, 16, 64} {
		for _, r := range tb.Rows {
			if err := CheckRow(AllReduce, r, n); err != nil {
				t.Error(err)
			}
		}
	}
}

// The check fails where it must: a wrong collective, a wrong rank count,
// an edited number, a table from before nccl-tests' June 2020 all_gather
// fix.
func TestCheckRowRejects(t *testing.T) {
	ar := parseTableFile(t, "allreduce_64ranks_78.txt").Rows[0]
	if err := CheckRow(AllReduce, ar, 32); err == nil {
		t.Error("64-rank all_reduce row passed as 32 ranks")
	}
	if err := CheckRow(Broadcast, ar, 64); err == nil {
		t.Error("all_reduce row passed as broadcast")
	}
	edited := ar
	edited.InPlace.BusBW = 4.35
	if err := CheckRow(AllReduce, edited, 64); err == nil || !strings.Contains(err.Error(), "in-place") || !strings.Contains(err.Error(), "busbw") {
		t.Errorf("edited busbw: %v", err)
	}
	edited = ar
	edited.OutOfPlace.TimeUS = 100000
	if err := CheckRow(AllReduce, edited, 64); err == nil || !strings.Contains(err.Error(), "algbw") {
		t.Errorf("edited time: %v", err)
	}
	// nccl-tests#37 (February 2020): all_gather's algbw then carried the
	// (n-1)/n factor itself, so today's definition rejects the row.
	old := parseTableFile(t, "allgather_pre2020_37.txt").Rows[0]
	err := CheckRow(AllGather, old, 8)
	if err == nil || !strings.Contains(err.Error(), "algbw 129.05") {
		t.Errorf("pre-2020 all_gather row: %v", err)
	}
	if n := AllGather.RanksFromSize(old.Size, old.Count, old.Type); n != 8 {
		t.Errorf("pre-2020 all_gather: %d ranks from size/count, want 8", n)
	}
}

func TestCheckRowFactorAtTwoRanks(t *testing.T) {
	// On 2 ranks all_gather's busbw is half its algbw; all_reduce's equals
	// it. The all_gather row of dgx-spark-playbooks#25 (37.87 / 18.94) must
	// fail as all_reduce.
	ag := parseTableFile(t, "allgather_2.17.6_gb10_25.txt").Rows[0]
	if err := CheckRow(AllReduce, ag, 2); err == nil {
		t.Error("all_gather row passed as all_reduce")
	}
	if err := CheckRow(AllGather, ag, 4); err == nil {
		t.Error("2-rank all_gather row passed as 4 ranks")
	}
}

// The footer's average is the mean of every printed busbw, to the printed
// precision (plus %g's six significant digits).
func TestAvgBusBandwidthFooter(t *testing.T) {
	for _, name := range []string{"allreduce_64ranks_78.txt", "alltoall_64ranks_78.txt", "alltoall_1rank_287.txt", "allgather_pre2020_37.txt"} {
		tb := parseTableFile(t, name)
		if !tb.HasAvgBusBW || !tb.HasOutOfBounds {
			t.Fatalf("%s: footer not parsed: %+v", name, tb)
		}
		tol := tb.MaxBusRounding() + 5e-6*math.Abs(tb.AvgBusBW)
		if d := math.Abs(tb.MeanBusBW() - tb.AvgBusBW); d > tol {
			t.Errorf("%s: mean busbw %v vs footer %v (off by %v > %v)", name, tb.MeanBusBW(), tb.AvgBusBW, d, tol)
		}
	}
	// The tail of nccl#1706 lacks the smaller sizes: its one row cannot
	// reproduce the footer's 8.62002, and the comparison shows it.
	tail := parseTableFile(t, "allreduce_tail_1706.txt")
	if math.Abs(tail.MeanBusBW()-tail.AvgBusBW) < 1 {
		t.Errorf("partial table matched its footer: %v vs %v", tail.MeanBusBW(), tail.AvgBusBW)
	}
}

func TestParseHeaderAndFooter(t *testing.T) {
	tb := parseTableFile(t, "allreduce_2.20.0_gb10_pr103.txt")
	if tb.TestsVersion != "2.20.0" || tb.NCCLHeaders != 23102 || tb.NCCLLibrary != 23102 || tb.Program != "all_reduce_perf" {
		t.Errorf("version line: %q %d %d %q", tb.TestsVersion, tb.NCCLHeaders, tb.NCCLLibrary, tb.Program)
	}
	if c, ok := tb.Collective(); !ok || c != AllReduce {
		t.Errorf("Collective() = %q, %v", c, ok)
	}
	wantP := Params{NThreads: 1, NGpus: 1, MinBytes: 8192, MaxBytes: 8589934592, StepFactor: 2, WarmupIters: 10, Iters: 100, AggIters: 1, Validation: 1}
	if tb.Params != wantP {
		t.Errorf("params %+v, want %+v", tb.Params, wantP)
	}
	wantD := Device{Rank: 1, Group: 0, Pid: 1669515, Host: "spark-dbf4", CUDADevice: 0, PCI: "000f:01:00", Name: "NVIDIA GB10"}
	if len(tb.Devices) != 2 || tb.Devices[1] != wantD {
		t.Errorf("devices %+v", tb.Devices)
	}
	r := tb.Rows[3]
	if r.Line != 16 || r.Size != 65536 || r.Count != 16384 || r.Type != "float" || r.RedOp != "sum" || r.Root != -1 ||
		r.OutOfPlace.TimeUS != 67.93 || r.InPlace.AlgBW != 1.01 || r.InPlace.Wrong != 0 || r.InPlace.WrongNA {
		t.Errorf("row %+v", r)
	}
	if tb.HasOutOfBounds || tb.HasAvgBusBW {
		t.Error("footer reported for a table quoted without one")
	}

	// 2021 broadcast: root but no redop column, old device lines, -c 0.
	bc := parseTableFile(t, "broadcast_2ranks_82.txt")
	if bc.Params.Validation != 0 || bc.Params.Iters != 100 || bc.Params.AggIters != 0 {
		t.Errorf("broadcast params %+v", bc.Params)
	}
	if d := bc.Devices[1]; d.Rank != 1 || d.Pid != 9210 || d.Host != "v100-gpu-5" || d.PCI != "0x00" || d.Name != "Tesla V100-PCIE-16GB" {
		t.Errorf("old device line %+v", d)
	}
	if r := bc.Rows[0]; r.Root != 0 || r.RedOp != "" || !r.OutOfPlace.WrongNA || !r.InPlace.WrongNA || r.Line != 16 {
		t.Errorf("broadcast row %+v", r)
	}

	// 2021 alltoall: the redop column printed blank; "error" column.
	at := parseTableFile(t, "alltoall_64ranks_78.txt")
	if r := at.Rows[1]; r.RedOp != "" || r.Root != -1 || r.OutOfPlace.TimeUS != 1041974 || r.InPlace.Wrong != 1 || r.OutOfPlace.Wrong != 0 {
		t.Errorf("alltoall row %+v", r)
	}
	if !at.OutOfBoundsOK || at.OutOfBounds != 0 || at.AvgBusBW != 0.507636 {
		t.Errorf("alltoall footer %v %v %v", at.OutOfBounds, at.OutOfBoundsOK, at.AvgBusBW)
	}

	// one rank: the in-place #wrong is N/A, step in bytes.
	one := parseTableFile(t, "alltoall_1rank_287.txt")
	if one.NRanks() != 1 || one.Params.StepBytes != 1048576 || one.Params.StepFactor != 0 || !one.Rows[0].InPlace.WrongNA || one.Rows[0].InPlace.AlgBW != 43046.10 {
		t.Errorf("1-rank alltoall %+v", one)
	}

	// sendrecv's in-place #wrong is N/A on every row.
	for _, r := range parseTableFile(t, "sendrecv_2ranks_214.txt").Rows {
		if r.OutOfPlace.WrongNA || !r.InPlace.WrongNA {
			t.Errorf("sendrecv row %d: %+v", r.Line, r)
		}
	}

	// Footer without '#' and a FAILED count (nccl-tests#37).
	old := parseTableFile(t, "allgather_pre2020_37.txt")
	if !old.HasOutOfBounds || old.OutOfBounds != 2 || old.OutOfBoundsOK || old.AvgBusBW != 128.942 || len(old.Columns) != 11 {
		t.Errorf("old footer %+v", old)
	}

	// NCCL INFO lines inside the table are skipped.
	tail := parseTableFile(t, "allreduce_tail_1706.txt")
	if len(tail.Rows) != 1 || tail.Rows[0].Line != 2 || !tail.OutOfBoundsOK || tail.AvgBusBW != 8.62002 {
		t.Errorf("tail %+v", tail)
	}
}

func TestParseTestFailures(t *testing.T) {
	// Lines of nccl-tests#294 (all_reduce_perf aborting on one host).
	in := "h100-4: Test NCCL failure common.cu:1057 'internal error / '\n" +
		" .. h100-4 pid 739787: Test failure common.cu:893\n"
	tb, err := ParseNCCLTests(strings.NewReader(in))
	if err != nil || len(tb.Failures) != 2 || len(tb.Rows) != 0 {
		t.Fatalf("failures %q, err %v", tb.Failures, err)
	}
}

// Synthetic: the per-iteration (-I 1) and timestamp columns of today's
// util.cu writeResultHeader, with numbers of the first 2.20.0 row.
func TestParsePerIterationLayout(t *testing.T) {
	in := "#       size         count      type   redop    root     time   algbw   busbw  #wrong    i_min    i_max    i_p99    i_cv%     time   algbw   busbw  #wrong    i_min    i_max    i_p99    i_cv%           timestamp\n" +
		"        8192          2048     float     sum      -1    35.15    0.23    0.23       0    34.00    36.00    36.00     1.50    30.33    0.27    0.27       0    30.00    31.00    31.00     1.00  2025-10-28 12:34:56\n"
	tb, err := ParseNCCLTests(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	r := tb.Rows[0]
	if r.InPlace.TimeUS != 30.33 || r.InPlace.BusBW != 0.27 || r.OutOfPlace.AlgBW != 0.23 {
		t.Errorf("per-iteration row %+v", r)
	}
	if err := CheckRow(AllReduce, r, 2); err != nil {
		t.Error(err)
	}
}

// Synthetic: broken lines are errors that name the line.
func TestParseErrorsNameTheLine(t *testing.T) {
	cases := map[string]string{
		"# nThread 1 nGpus 1 minBytes 8 maxBytes 8 step: 2(factor) warmup iters: 1 iters: 1\n" +
			"#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong\n" +
			"        8192          2048     float     sum      -1    35.15    0.23    x.yz       0    30.33    0.27    0.27       0\n": "line 3: out-of-place busbw",
		"        8192          2048     float     sum\n":           "line 1: result row with 4 fields",
		"\n# Avg bus bandwidth    : fast\n":                        "line 2: average bus bandwidth",
		"# Out of bounds values : many OK\n":                       "line 1: out-of-bounds count",
		"# nThread x nGpus 1\n":                                    "line 1: parameter line without nThread/nGpus",
		"  99999999999999999999  2 float sum -1 1 1 1 0 1 1 1 0\n": "line 1: size",
	}
	for in, want := range cases {
		_, err := ParseNCCLTests(strings.NewReader(in))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v, want one containing %q", in, err, want)
		}
	}
}

func TestHalfDigit(t *testing.T) {
	for s, want := range map[string]float64{"12.34": 0.005, "5190.8": 0.05, "453650": 0.5, "1.2e+03": 50, "2e-06": 5e-07, "0.00": 0.005} {
		if got := halfDigit(s); math.Abs(got-want) > want*1e-12 {
			t.Errorf("halfDigit(%q) = %v, want %v", s, got, want)
		}
	}
}
