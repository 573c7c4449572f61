package ncclbench

import (
	"bufio"
	"fmt"
	"io"
	"strings"

	"github.com/rdmasuite/rdmasuite/workloads/nccl"
)

// Columns is the column header of nccl-tests since August 2022 (#wrong,
// redop and root columns), which Table and Render use.
var Columns = []string{"size", "count", "type", "redop", "root",
	"time", "algbw", "busbw", "#wrong", "time", "algbw", "busbw", "#wrong"}

// Table is the nccl.Table of collective c: what nccl-tests' rank 0 would
// have printed for the same run, and what Render prints. Rows hold the
// sizes whose two variants were both measured (nccl-tests always runs
// both; a row with one is kept in the Result and rendered as a comment),
// Program is c's binary name, OutOfBounds and AvgBusBW come from the
// CollectiveResult (HasAvgBusBW only when something was measured), and
// every failure, the run's and the collective's, is a Failures line ("Test
// failure: rank 1: ...") so a verdict that fails on failure lines fails on
// them.
func (r Result) Table(c nccl.Collective) (nccl.Table, bool) {
	cr, ok := r.Collective(c)
	if !ok {
		return nccl.Table{}, false
	}
	return r.table(cr), true
}

func (r Result) table(cr CollectiveResult) nccl.Table {
	t := nccl.Table{
		Program:        cr.Collective.Binary(),
		Params:         r.Params,
		Devices:        append([]nccl.Device(nil), r.Devices...),
		Columns:        append([]string(nil), Columns...),
		OutOfBounds:    cr.OutOfBounds,
		OutOfBoundsOK:  cr.OutOfBounds == 0,
		HasOutOfBounds: true,
		AvgBusBW:       cr.AvgBusBW,
		HasAvgBusBW:    cr.Measured > 0,
	}
	for _, row := range cr.Rows {
		if row.OutOfPlace == nil || row.InPlace == nil {
			continue
		}
		t.Rows = append(t.Rows, nccl.Row{
			Size: row.Size, Count: row.Count, Type: row.Type, RedOp: row.RedOp, Root: -1,
			OutOfPlace: tableResult(*row.OutOfPlace), InPlace: tableResult(*row.InPlace),
		})
	}
	for _, e := range append(append([]string(nil), r.Errors...), cr.Errors...) {
		t.Failures = append(t.Failures, failureLine(e))
	}
	return t
}

func tableResult(h Half) nccl.Result {
	return nccl.Result{TimeUS: h.TimeUS, AlgBW: h.AlgBW, BusBW: h.BusBW, Wrong: float64(h.Wrong), WrongNA: h.NA}
}

// failureLine makes an error one line that nccl.ParseNCCLTests counts as a
// failure.
func failureLine(e string) string {
	return "Test failure: " + strings.Join(strings.Fields(e), " ")
}

// Render prints the result as nccl-tests prints a run, one block per
// collective (every collective of r when none is named): parameter line,
// device lines, column header, rows, failure lines and the "Out of bounds
// values" and "Avg bus bandwidth" footers. Numbers are formatted as
// nccl-tests formats them (util.cu getFloatStr: as many decimals as fit
// the column). A row with only one variant measured is printed as a
// comment, with N/A for the missing variant, so that nccl.ParseNCCLTests
// reads a block back as exactly Table(c) (to the printed precision).
// A collective not in r is an error.
func Render(w io.Writer, r Result, collectives ...nccl.Collective) error {
	bw := bufio.NewWriter(w)
	if len(collectives) == 0 {
		for _, cr := range r.Collectives {
			collectives = append(collectives, cr.Collective)
		}
	}
	for i, c := range collectives {
		cr, ok := r.Collective(c)
		if !ok {
			return fmt.Errorf("ncclbench: render: no %s in the result", c)
		}
		if i > 0 {
			fmt.Fprintln(bw)
		}
		renderCollective(bw, r, cr)
	}
	return bw.Flush()
}

func renderCollective(w io.Writer, r Result, cr CollectiveResult) {
	t := r.table(cr)
	p := t.Params
	step, unit := p.StepFactor, "factor"
	if step <= 1 {
		step, unit = p.StepBytes, "bytes"
	}
	fmt.Fprintf(w, "# ncclbench (rdmasuite): nccl-tests semantics, %d ranks\n", r.World)
	fmt.Fprintf(w, "# Collective test starting: %s\n", t.Program)
	fmt.Fprintf(w, "# nThread %d nGpus %d minBytes %d maxBytes %d step: %d(%s) warmup iters: %d iters: %d agg iters: %d validation: %d graph: %d\n",
		p.NThreads, p.NGpus, p.MinBytes, p.MaxBytes, step, unit, p.WarmupIters, p.Iters, p.AggIters, p.Validation, p.Graph)
	fmt.Fprintf(w, "#\n# Using devices\n")
	for _, d := range t.Devices {
		if d.Host == "" {
			continue
		}
		fmt.Fprintf(w, "#  Rank %2d Group %2d Pid %6d on %10s device %2d [%s] %s\n", d.Rank, d.Group, d.Pid, d.Host, d.CUDADevice, d.PCI, d.Name)
	}
	fmt.Fprintf(w, "#\n")
	fmt.Fprintf(w, "# %10s  %12s  %8s  %6s  %6s           out-of-place                       in-place          \n", "", "", "", "", "")
	fmt.Fprintf(w, "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s\n", "size", "count", "type", "redop", "root",
		"time", "algbw", "busbw", "#wrong", "time", "algbw", "busbw", "#wrong")
	fmt.Fprintf(w, "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s\n", "(B)", "(elements)", "", "", "",
		"(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "")
	for _, row := range cr.Rows {
		line := fmt.Sprintf("%12d  %12d  %8s  %6s  %6d", row.Size, row.Count, row.Type, row.RedOp, -1) +
			halfText(row.OutOfPlace) + halfText(row.InPlace)
		if row.OutOfPlace == nil || row.InPlace == nil {
			reason := "not measured"
			if row.Error != "" {
				reason = strings.Join(strings.Fields(row.Error), " ")
			}
			line = "#" + line + "   (" + reason + ")"
		}
		fmt.Fprintln(w, line)
	}
	for _, f := range t.Failures {
		fmt.Fprintln(w, f)
	}
	status := "OK"
	if t.OutOfBounds > 0 {
		status = "FAILED"
	}
	fmt.Fprintf(w, "# %-20s : %d %s\n", "Out of bounds values", t.OutOfBounds, status)
	if t.HasAvgBusBW {
		fmt.Fprintf(w, "# %-20s : %s \n", "Avg bus bandwidth", fmt.Sprintf("%.6g", t.AvgBusBW))
	}
	fmt.Fprintf(w, "#\n# Collective test concluded: %s\n", t.Program)
}

func halfText(h *Half) string {
	if h == nil {
		return fmt.Sprintf("  %7s  %6s  %6s  %6s", "N/A", "N/A", "N/A", "N/A")
	}
	if h.NA {
		return fmt.Sprintf("  %7s  %6s  %6s    N/A", floatStr(h.TimeUS, 7), floatStr(h.AlgBW, 6), floatStr(h.BusBW, 6))
	}
	return fmt.Sprintf("  %7s  %6s  %6s  %6s", floatStr(h.TimeUS, 7), floatStr(h.AlgBW, 6), floatStr(h.BusBW, 6), fmt.Sprintf("%.6g", float64(h.Wrong)))
}

// floatStr is nccl-tests' getFloatStr: %.2f, %.1f or %.0f, whichever
// fits width, else %.1e (width ≥ 7) or %.0e.
func floatStr(v float64, width int) string {
	for _, prec := range []int{2, 1, 0} {
		if s := fmt.Sprintf("%*.*f", width, prec, v); len(s) <= width {
			return s
		}
	}
	if width >= 7 {
		return fmt.Sprintf("%*.1e", width, v)
	}
	return fmt.Sprintf("%*.0e", width, v)
}
