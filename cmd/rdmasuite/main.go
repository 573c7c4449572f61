// Command rdmasuite is the operator CLI: rendering reports and checking
// threshold files. The conformance features themselves run with
// `go test ./suites -args --kubeconfig=…`.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/rdmasuite/rdmasuite/reports"
	"github.com/rdmasuite/rdmasuite/thresholds"
	"github.com/rdmasuite/rdmasuite/workloads/probeout"
)

const usage = `usage:
  rdmasuite report RESULTS.json [--format table|markdown|junit] [--baseline OLDER.json] [--tolerance 0.05] [-o FILE]
  rdmasuite doctor [--kubeconfig F] [--node-selector S] [-o results.json]   known failure modes, API level (exit 3 if any)
  rdmasuite thresholds check [FILE]     validate a thresholds file (default: the built-in one)
  rdmasuite thresholds list [FILE]      list SKUs and their floors
  rdmasuite version`

// errRegression makes `report --baseline` exit 3, so CI can gate on it.
var errRegression = errors.New("regressions against the baseline")

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, usage)
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "report":
		err = runReport(os.Args[2:], os.Stdout)
	case "thresholds":
		err = runThresholds(os.Args[2:], os.Stdout)
	case "doctor":
		err = runDoctor(os.Args[2:], os.Stdout)
	case "version":
		fmt.Println("rdmasuite", probeout.Version)
	default:
		fmt.Fprintf(os.Stderr, "rdmasuite: unknown command %q\n%s\n", os.Args[1], usage)
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "rdmasuite %s: %v\n", os.Args[1], err)
		if errors.Is(err, errRegression) || errors.Is(err, errFindings) {
			os.Exit(3)
		}
		os.Exit(1)
	}
}

// splitArgs lets flags follow positional arguments (rdmasuite report x.json --format markdown).
func splitArgs(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for len(args) > 0 {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			break
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
	return pos, nil
}

func runReport(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("report", flag.ContinueOnError)
	format := fs.String("format", "table", "table, markdown or junit")
	baseline := fs.String("baseline", "", "older results to compare with (per node/port deltas, regressions)")
	tolerance := fs.Float64("tolerance", 0.05, "relative drop counted as a regression")
	out := fs.String("o", "", "write to this file instead of stdout")
	pos, err := splitArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return errors.New("give one results file: rdmasuite report RESULTS.json")
	}
	run, err := reports.Read(pos[0])
	if err != nil {
		return err
	}
	w := stdout
	if *out != "" {
		f, err := os.Create(*out)
		if err != nil {
			return err
		}
		defer f.Close()
		w = f
	}
	switch *format {
	case "table":
		err = reports.Table(w, run)
	case "markdown", "md":
		err = reports.Markdown(w, run)
	case "junit":
		err = reports.JUnit(w, run)
	default:
		return fmt.Errorf("unknown --format %q: table, markdown or junit", *format)
	}
	if err != nil || *baseline == "" {
		return err
	}
	base, err := reports.Read(*baseline)
	if err != nil {
		return fmt.Errorf("baseline: %w", err)
	}
	fmt.Fprintf(w, "\nBaseline %s (run %s) → this run %s:\n", *baseline, base.RunID, run.RunID)
	deltas := reports.Diff(base, run, *tolerance)
	if err := reports.DiffTable(w, deltas); err != nil {
		return err
	}
	for _, d := range deltas {
		if d.Regression {
			return errRegression
		}
	}
	return nil
}

func runThresholds(args []string, stdout io.Writer) error {
	if len(args) == 0 || (args[0] != "check" && args[0] != "list") {
		return errors.New("usage: rdmasuite thresholds check|list [FILE]")
	}
	file := ""
	if len(args) > 1 {
		file = args[1]
	}
	set, err := thresholds.Load(file)
	if err != nil {
		return err
	}
	if args[0] == "check" {
		fmt.Fprintf(stdout, "%s: ok, %d SKUs: %s\n", set.File, len(set.SKUs), strings.Join(set.Names(), ", "))
		return nil
	}
	for i := range set.SKUs {
		k := &set.SKUs[i]
		w, _ := k.BandwidthFloor("write")
		r, _ := k.BandwidthFloor("read")
		fmt.Fprintf(stdout, "%-16s link %4g Gb/s × %g ports  write ≥ %g Gb/s  read ≥ %g Gb/s  memlock ≥ %.0f B  NFS stall ≤ %g s\n",
			k.Name, *k.LinkRateGbps.Value, *k.PortsPerNode.Value, w.Value, r.Value, *k.MinMemlockBytes.Value, *k.MaxNFSStallSec.Value)
	}
	return nil
}
