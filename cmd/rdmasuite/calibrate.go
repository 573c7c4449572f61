package main

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/tw"
	"github.com/rdmasuite/rdmasuite/internal/atomicfile"
	"github.com/rdmasuite/rdmasuite/reports"
	"github.com/rdmasuite/rdmasuite/thresholds"
	"github.com/rdmasuite/rdmasuite/thresholds/calibrate"
)

// runCalibrate is rdmasuite thresholds calibrate: a thresholds overlay
// whose bandwidth floors come from the per-port figures of runs that
// passed (thresholds/calibrate). Every refusal exits 2, naming the fix.
func runCalibrate(args []string, stdout io.Writer) error {
	fs := newFlagSet("thresholds calibrate")
	out := fs.String("out", "", "write the overlay to this FILE (required); lay it over the runs' thresholds with the suite's --thresholds-overlay FILE")
	minPorts := fs.Int("min-ports", calibrate.DefaultMinPorts, "the fewest distinct ports a floor (SKU, op, message size) is computed from")
	accept := fs.Bool("accept-below-floor", false, "use runs whose only non-passing checks are bandwidth figures that were measured and missed their floor "+
		"(errors, not-run, link and port checks and a port trained below its rate still refuse the run)")
	mads := fs.Float64("mads", calibrate.K, "how many robust standard deviations (1.4826·MAD over the ports) the floor lies below the median")
	margin := fs.Float64("min-margin", calibrate.MinMargin, "the least margin below the median, as a fraction of it: the run-to-run variation of one port, which one run does not show "+
		"(raise it for a fabric whose figures vary more, such as an emulated or shared one)")
	file := fs.String("thresholds", "", "the thresholds FILE the runs used (laid over the built-ins, as the suite's --thresholds): the calibrated SKUs' "+
		"other fields are copied from it (default: the built-in SKUs)")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return errors.New("no results file: usage: rdmasuite thresholds calibrate RESULTS.json [MORE.json ...] --out overlay.yaml (see: rdmasuite thresholds calibrate --help)")
	}
	if *out == "" {
		return errors.New("--out FILE is required: where to write the calibrated overlay (see: rdmasuite thresholds calibrate --help)")
	}
	var in []calibrate.Input
	for _, p := range pos {
		run, err := reports.Read(p)
		if err != nil {
			return err
		}
		in = append(in, calibrate.Input{Name: p, Run: run})
	}
	res, err := calibrate.Calibrate(in, calibrate.Options{MinPorts: *minPorts, AcceptBelowFloor: *accept, Thresholds: *file, MADs: *mads, MinMargin: *margin})
	if err != nil {
		return err
	}
	if err := atomicfile.Write(*out, res.Overlay); err != nil {
		return err
	}
	t := tablewriter.NewTable(stdout, tablewriter.WithConfig(
		tablewriter.NewConfigBuilder().WithHeaderAutoFormat(tw.Off).WithHeaderAutoWrap(tw.WrapNone).WithRowAutoWrap(tw.WrapNone).Build()))
	t.Header([]string{"SKU", "FLOOR", "SIZE", "PORTS", "MEDIAN Gb/s", "MAD", "NEW FLOOR Gb/s", "WAS", "PORTS BELOW"})
	for _, r := range res.Rows {
		below := fmt.Sprint(len(r.Below))
		if len(r.Below) > 0 {
			names := r.Below
			if len(names) > 3 {
				names = append(names[:3:3], "…")
			}
			below += ": " + strings.Join(names, ", ")
		}
		floor := fmt.Sprintf("%g", r.Value)
		if r.Capped {
			floor += " (link rate)"
		}
		if err := t.Append([]string{r.SKU, r.Floor, thresholds.SizeName(r.Size), fmt.Sprint(r.Ports), fmt.Sprintf("%.4g", r.Median),
			fmt.Sprintf("%.3g", r.MAD), floor, cmp.Or(r.Was, "none (not judged)"), below}); err != nil {
			return err
		}
	}
	if err := t.Render(); err != nil {
		return err
	}
	for _, n := range res.Notes {
		fmt.Fprintf(stdout, "note: %s\n", n)
	}
	fmt.Fprintf(stdout, "wrote %s: floor = median − max(%g·%g·MAD, %g %%) per SKU, op and size; lay it over the thresholds the runs used with "+
		"--thresholds-overlay %s (rdmasuite thresholds check --overlay %s shows what it replaces)\n",
		*out, cmp.Or(*mads, calibrate.K), calibrate.MADScale, cmp.Or(*margin, calibrate.MinMargin)*100, *out, *out)
	return nil
}
