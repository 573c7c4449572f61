package nccl

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"
)

// Table is what one run of an nccl-tests binary printed (stdout of rank 0,
// which prints the header, every rank's device line and the result rows).
// Fields the output did not carry stay zero; the Has* flags tell a missing
// footer from a zero one.
type Table struct {
	// Program is the binary ("all_reduce_perf") from the
	// "# Collective test starting:" line that nccl-tests prints since June 2025.
	Program string
	// TestsVersion ("2.20.0") and the NCCL version codes the binary was
	// built against and runs with (23102 is NCCL 2.31.2), from the
	// "# nccl-tests version" line that nccl-tests prints since 2.17.3.
	TestsVersion             string
	NCCLHeaders, NCCLLibrary int
	Params                   Params
	Devices                  []Device
	// Columns are the names of the column header line
	// ("size count type redop root time algbw busbw #wrong time ...").
	Columns []string
	Rows    []Row
	// OutOfBounds is the "# Out of bounds values : N OK|FAILED" footer:
	// the number of result checks that found wrong data.
	OutOfBounds    int
	OutOfBoundsOK  bool
	HasOutOfBounds bool
	// AvgBusBW is the "# Avg bus bandwidth : X" footer: the mean busbw of
	// every out-of-place and in-place result (common.cu: bw[0] += busBw per
	// BenchTime call, divided by their number), in GB/s.
	AvgBusBW    float64
	HasAvgBusBW bool
	// Failures are the lines where the binary reported a failed call
	// ("Test NCCL failure common.cu:1057 'internal error / '",
	// " .. host pid 739791: Test failure common.cu:893").
	Failures []string
}

// Params is the "# nThread 1 nGpus 1 minBytes 8 maxBytes 134217728 step:
// 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0"
// line. Fields a version does not print stay zero.
type Params struct {
	NThreads, NGpus    int
	MinBytes, MaxBytes int64
	// StepFactor is set for -f (sizes multiply), StepBytes for -i.
	StepFactor, StepBytes int64
	WarmupIters, Iters    int
	AggIters              int
	// Validation is -c: 0 means results were not checked (#wrong is N/A).
	Validation int
	Graph      int
}

// Device is one "#  Rank  0 Group  0 Pid 1666603 on spark-d708 device  0
// [000f:01:00] NVIDIA GB10" line (Group and Pid are missing in old
// versions and stay 0).
type Device struct {
	Rank, Group, Pid int
	Host             string
	CUDADevice       int
	PCI              string // "000f:01:00" (bus id), "0x01" in versions before 2.14
	Name             string
}

// Row is one size of the result table.
type Row struct {
	Line int // 1-based line number in the output
	// Size is the size column in bytes and Count the count column in
	// elements; see Collective.SizeBytes for what they mean per collective.
	Size, Count int64
	Type        string
	// RedOp is "" where the column is missing (all_gather and alltoall of
	// 2021 versions print it blank, broadcast of those versions has none);
	// Root is -1 where the column is missing or holds -1.
	RedOp               string
	Root                int
	OutOfPlace, InPlace Result
}

// Result is one half (out-of-place or in-place) of a row.
type Result struct {
	TimeUS float64 // average time of one operation, µs
	AlgBW  float64 // GB/s
	BusBW  float64 // GB/s
	// Wrong is the #wrong column: elements with a wrong value (0 when the
	// data checked out). Versions before August 2022 print an "error"
	// column there instead, the largest deviation found (2e-06); it lands
	// here too.
	Wrong float64
	// WrongNA is set where the column reads N/A: -c 0 (no check), or
	// the in-place half of alltoall and sendrecv.
	WrongNA bool

	// half of the last printed digit of time, algbw and busbw, from the text
	// (nccl-tests narrows the precision as numbers grow, util.cu
	// getFloatStr); used by CheckRow.
	timeHalf, algHalf, busHalf float64
}

var (
	mpiTagRE     = regexp.MustCompile(`^\[\d+,\d+\]<std(?:out|err)>:`)
	nccLogLineRE = regexp.MustCompile(`\bNCCL (?:INFO|WARN|TRACE|CALL)\b|^NCCL version `)
	testsVerRE   = regexp.MustCompile(`^nccl-tests version (\S+)(?: \([^)]*\))? nccl-headers=(\d+) nccl-library=(\d+)`)
	startingRE   = regexp.MustCompile(`^Collective test starting: (\S+)`)
	deviceRE     = regexp.MustCompile(`^Rank\s+(\d+)\s+(?:Group\s+(\d+)\s+)?(?:Pid\s+(\d+)\s+)?on\s+(\S+)\s+device\s+(\d+)\s+\[([^\]]*)\]\s*(.*)$`)
	oobRE        = regexp.MustCompile(`^Out of bounds values\s*:\s*(\S+)\s+(OK|FAILED)\b`)
	avgRE        = regexp.MustCompile(`^Avg bus bandwidth\s*:\s*(\S+)`)
	paramRE      = map[string]*regexp.Regexp{
		"nThread":    regexp.MustCompile(`\bnThread (\d+)`),
		"nGpus":      regexp.MustCompile(`\bnGpus (\d+)`),
		"minBytes":   regexp.MustCompile(`\bminBytes (\d+)`),
		"maxBytes":   regexp.MustCompile(`\bmaxBytes (\d+)`),
		"step":       regexp.MustCompile(`\bstep: (\d+)\((factor|bytes)\)`),
		"warmup":     regexp.MustCompile(`\bwarmup iters: (\d+)`),
		"iters":      regexp.MustCompile(`\d iters: (\d+)`), // not "warmup iters:" nor "agg iters:"
		"agg":        regexp.MustCompile(`\bagg iters: (\d+)`),
		"validation": regexp.MustCompile(`\bvalidation: (\d+)`),
		"graph":      regexp.MustCompile(`\bgraph: (\d+)`),
	}
	failureRE = regexp.MustCompile(`Test (?:NCCL |CUDA )?failure`)
)

// ParseNCCLTests reads the output of an nccl-tests binary. It accepts the
// layouts of nccl-tests from 2019 on (redop and root columns present,
// missing or blank; the #wrong or the older error column; per-iteration
// and timestamp columns), footers with or without the leading '#', mpirun
// --tag-output prefixes ("[1,0]<stdout>:"), and NCCL_DEBUG log lines mixed
// into the table. A line that starts like a result row but does not parse,
// or a header line whose numbers do not parse, is an error naming the
// line; any other line is ignored.
func ParseNCCLTests(r io.Reader) (Table, error) {
	var t Table
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 4*1024*1024)
	layout := rowLayout{perSide: 4}
	n := 0
	for sc.Scan() {
		n++
		line := mpiTagRE.ReplaceAllString(strings.TrimRight(sc.Text(), "\r"), "")
		trimmed := strings.TrimSpace(line)
		if trimmed == "" || nccLogLineRE.MatchString(trimmed) {
			continue
		}
		if failureRE.MatchString(trimmed) {
			t.Failures = append(t.Failures, trimmed)
			continue
		}
		hash := strings.HasPrefix(trimmed, "#")
		body := strings.TrimSpace(strings.TrimPrefix(trimmed, "#"))
		fields := strings.Fields(body)
		if err := t.parseLine(body, fields, hash, n, &layout); err != nil {
			return t, fmt.Errorf("nccl-tests output line %d: %w: %q", n, err, trimmed)
		}
	}
	if err := sc.Err(); err != nil {
		return t, fmt.Errorf("nccl-tests output after line %d: %w", n, err)
	}
	return t, nil
}

func (t *Table) parseLine(body string, fields []string, hash bool, n int, layout *rowLayout) error {
	if m := testsVerRE.FindStringSubmatch(body); m != nil {
		t.TestsVersion = m[1]
		t.NCCLHeaders, _ = strconv.Atoi(m[2])
		t.NCCLLibrary, _ = strconv.Atoi(m[3])
		return nil
	}
	if m := startingRE.FindStringSubmatch(body); m != nil {
		t.Program = m[1]
		return nil
	}
	if strings.HasPrefix(body, "nThread ") {
		return t.parseParams(body)
	}
	if m := deviceRE.FindStringSubmatch(body); m != nil {
		d := Device{Host: m[4], PCI: m[6], Name: strings.TrimSpace(m[7])}
		d.Rank, _ = strconv.Atoi(m[1])
		d.Group, _ = strconv.Atoi(m[2])
		d.Pid, _ = strconv.Atoi(m[3])
		d.CUDADevice, _ = strconv.Atoi(m[5])
		t.Devices = append(t.Devices, d)
		return nil
	}
	if isColumnHeader(fields) {
		t.Columns = fields
		*layout = newRowLayout(fields)
		return nil
	}
	if m := oobRE.FindStringSubmatch(body); m != nil {
		v, err := strconv.Atoi(m[1])
		if err != nil {
			return fmt.Errorf("out-of-bounds count %q", m[1])
		}
		t.OutOfBounds, t.OutOfBoundsOK, t.HasOutOfBounds = v, m[2] == "OK", true
		return nil
	}
	if m := avgRE.FindStringSubmatch(body); m != nil {
		v, err := strconv.ParseFloat(m[1], 64)
		if err != nil {
			return fmt.Errorf("average bus bandwidth %q", m[1])
		}
		t.AvgBusBW, t.HasAvgBusBW = v, true
		return nil
	}
	if hash || len(fields) == 0 || !allDigits(fields[0]) {
		return nil // a comment, a command line, mpirun's or the shell's noise
	}
	row, err := layout.parse(fields)
	if err != nil {
		return err
	}
	row.Line = n
	t.Rows = append(t.Rows, row)
	return nil
}

func (t *Table) parseParams(body string) error {
	p := &t.Params
	ints := []struct {
		key string
		dst *int
	}{
		{"nThread", &p.NThreads}, {"nGpus", &p.NGpus}, {"warmup", &p.WarmupIters},
		{"iters", &p.Iters}, {"agg", &p.AggIters}, {"validation", &p.Validation}, {"graph", &p.Graph},
	}
	for _, f := range ints {
		if m := paramRE[f.key].FindStringSubmatch(body); m != nil {
			v, err := strconv.Atoi(m[1])
			if err != nil {
				return fmt.Errorf("parameter %s %q", f.key, m[1])
			}
			*f.dst = v
		}
	}
	for key, dst := range map[string]*int64{"minBytes": &p.MinBytes, "maxBytes": &p.MaxBytes} {
		if m := paramRE[key].FindStringSubmatch(body); m != nil {
			v, err := strconv.ParseInt(m[1], 10, 64)
			if err != nil {
				return fmt.Errorf("parameter %s %q", key, m[1])
			}
			*dst = v
		}
	}
	if m := paramRE["step"].FindStringSubmatch(body); m != nil {
		v, err := strconv.ParseInt(m[1], 10, 64)
		if err != nil {
			return fmt.Errorf("parameter step %q", m[1])
		}
		if m[2] == "factor" {
			p.StepFactor = v
		} else {
			p.StepBytes = v
		}
	}
	if p.NThreads == 0 || p.NGpus == 0 {
		return fmt.Errorf("parameter line without nThread/nGpus")
	}
	return nil
}

// NRanks is the number of distinct ranks the device lines list (rank 0
// prints every rank's line when the binary was built with MPI=1 and launched
// by mpirun), 0 when the output has none.
func (t Table) NRanks() int {
	seen := map[int]bool{}
	for _, d := range t.Devices {
		seen[d.Rank] = true
	}
	return len(seen)
}

// Collective is the collective named by the "# Collective test starting:"
// line, false when the output does not name it (versions before June 2025).
func (t Table) Collective() (Collective, bool) {
	c, err := ParseCollective(t.Program)
	return c, err == nil
}

// MeanBusBW is what nccl-tests averages into its "Avg bus bandwidth"
// footer: the mean busbw over both halves of every row, computed from the
// printed (rounded) values. 0 for a table without rows.
func (t Table) MeanBusBW() float64 {
	if len(t.Rows) == 0 {
		return 0
	}
	sum := 0.0
	for _, r := range t.Rows {
		sum += r.OutOfPlace.BusBW + r.InPlace.BusBW
	}
	return sum / float64(2*len(t.Rows))
}

// MaxBusRounding is the largest rounding of a printed busbw in the table:
// half its last printed digit (0.005 for "12.34").
func (t Table) MaxBusRounding() float64 {
	m := 0.0
	for _, r := range t.Rows {
		m = math.Max(m, math.Max(r.OutOfPlace.busHalf, r.InPlace.busHalf))
	}
	return m
}

// CheckRow verifies a parsed row against nccl-tests' definitions, to the
// precision the row was printed with: each half's algbw must be
// AlgBandwidth(Size, time) and its busbw BusBandwidth(c, algbw, nRanks).
// It is how a table is tied to its collective and rank count: a wrong
// collective or rank count, a table of nccl-tests before June 2020
// (all_gather, reduce_scatter) or an edited row fails it. Rows built by hand
// (not parsed) are checked as if exact.
func CheckRow(c Collective, r Row, nRanks int) error {
	for _, h := range []struct {
		name string
		res  Result
	}{{"out-of-place", r.OutOfPlace}, {"in-place", r.InPlace}} {
		if err := checkResult(c, r.Size, h.res, nRanks); err != nil {
			return fmt.Errorf("line %d (size %d) %s: %w", r.Line, r.Size, h.name, err)
		}
	}
	return nil
}

func checkResult(c Collective, size int64, res Result, nRanks int) error {
	const rel = 1e-9 // float slack
	lo, hi := 0.0, 0.0
	if size > 0 {
		t := res.TimeUS * 1e-6
		ht := res.timeHalf * 1e-6
		lo = AlgBandwidth(size, t+ht)
		hi = math.Inf(1)
		if t-ht > 0 {
			hi = AlgBandwidth(size, t-ht)
		}
	}
	// The exact algbw lies where the time interval and the printed algbw's
	// rounding interval meet.
	alo := math.Max(lo, res.AlgBW-res.algHalf) * (1 - rel)
	ahi := math.Min(hi, res.AlgBW+res.algHalf) * (1 + rel)
	if alo > ahi+rel {
		return fmt.Errorf("algbw %g GB/s is not %d B / %g us (%.6g..%.6g GB/s)", res.AlgBW, size, res.TimeUS, lo, hi)
	}
	f := c.BusFactor(nRanks)
	blo, bhi := f*alo, f*ahi
	if blo > res.BusBW+res.busHalf+rel || bhi < res.BusBW-res.busHalf-rel {
		return fmt.Errorf("busbw %g GB/s is not %s's %.4g × algbw on %d ranks (%.6g..%.6g GB/s)", res.BusBW, c, f, nRanks, blo, bhi)
	}
	return nil
}

// rowLayout says how the fields of a result row map to columns.
type rowLayout struct {
	hasRedop, hasRoot bool
	known             bool // a column header was seen
	perSide           int  // 4, or 8 with per-iteration columns
	timestamp         bool
}

func isColumnHeader(fields []string) bool {
	has := map[string]bool{}
	for _, f := range fields {
		has[f] = true
	}
	return has["size"] && has["count"] && has["type"] && has["algbw"] && has["busbw"]
}

func newRowLayout(fields []string) rowLayout {
	l := rowLayout{known: true, perSide: 4}
	firstTime, secondTime := -1, -1
	for i, f := range fields {
		switch f {
		case "redop":
			l.hasRedop = true
		case "root":
			l.hasRoot = true
		case "time", "cputime":
			if firstTime < 0 {
				firstTime = i
			} else if secondTime < 0 {
				secondTime = i
			}
		case "timestamp":
			l.timestamp = true
		}
	}
	if firstTime >= 0 && secondTime > firstTime {
		l.perSide = secondTime - firstTime
	}
	return l
}

func (l rowLayout) parse(f []string) (Row, error) {
	n := len(f)
	if l.timestamp && n >= 2 && strings.Count(f[n-2], "-") == 2 && strings.Count(f[n-1], ":") == 2 {
		n -= 2 // "2025-10-28 12:34:56"
	}
	lead := n - 2*l.perSide
	if lead < 3 || lead > 5 {
		return Row{}, fmt.Errorf("result row with %d fields", len(f))
	}
	row := Row{Type: f[2], Root: -1}
	var err error
	if row.Size, err = strconv.ParseInt(f[0], 10, 64); err != nil {
		return Row{}, fmt.Errorf("size %q", f[0])
	}
	if row.Count, err = strconv.ParseInt(f[1], 10, 64); err != nil {
		return Row{}, fmt.Errorf("count %q", f[1])
	}
	extra := f[3:lead]
	switch len(extra) {
	case 2:
		row.RedOp = extra[0]
		if row.Root, err = strconv.Atoi(extra[1]); err != nil {
			return Row{}, fmt.Errorf("root %q", extra[1])
		}
	case 1:
		_, intErr := strconv.Atoi(extra[0])
		if (l.hasRoot && !l.hasRedop) || (l.hasRoot == l.hasRedop && intErr == nil) {
			if row.Root, err = strconv.Atoi(extra[0]); err != nil {
				return Row{}, fmt.Errorf("root %q", extra[0])
			}
		} else {
			row.RedOp = extra[0]
		}
	}
	if row.OutOfPlace, err = parseResult(f[lead : lead+4]); err != nil {
		return Row{}, fmt.Errorf("out-of-place %w", err)
	}
	if row.InPlace, err = parseResult(f[lead+l.perSide : lead+l.perSide+4]); err != nil {
		return Row{}, fmt.Errorf("in-place %w", err)
	}
	return row, nil
}

func parseResult(f []string) (Result, error) {
	var r Result
	var err error
	for i, dst := range []*float64{&r.TimeUS, &r.AlgBW, &r.BusBW} {
		if *dst, err = strconv.ParseFloat(f[i], 64); err != nil {
			return r, fmt.Errorf("%s %q", []string{"time", "algbw", "busbw"}[i], f[i])
		}
	}
	r.timeHalf, r.algHalf, r.busHalf = halfDigit(f[0]), halfDigit(f[1]), halfDigit(f[2])
	if f[3] == "N/A" {
		r.WrongNA = true
	} else if r.Wrong, err = strconv.ParseFloat(f[3], 64); err != nil {
		return r, fmt.Errorf("#wrong %q", f[3])
	}
	return r, nil
}

// halfDigit is half of the last digit a number was printed with:
// "12.34" → 0.005, "5190.8" → 0.05, "453650" → 0.5, "1.2e+03" → 50.
func halfDigit(s string) float64 {
	mant, exp := s, 0
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		mant = s[:i]
		exp, _ = strconv.Atoi(s[i+1:])
	}
	dec := 0
	if i := strings.IndexByte(mant, '.'); i >= 0 {
		dec = len(mant) - i - 1
	}
	return 0.5 * math.Pow10(exp-dec)
}

func allDigits(s string) bool {
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return s != ""
}
