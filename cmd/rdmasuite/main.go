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
  rdmasuite report RESULTS.json [--format table|markdown|junit] [--baseline OLDER.json] [--tolerance 0.05]
                   [--allow-not-run ID,PREFIX/] [-o FILE]
  rdmasuite doctor [--kubeconfig F] [--node-selector S] [-o results.json]   known failure modes, API level (exit 1 if any)
  rdmasuite cleanup [--kubeconfig F] [--older-than 2h | --run ID] [--dry-run]   delete leftover run namespaces
  rdmasuite thresholds check [FILE]     validate a thresholds file (default: the built-in one)
  rdmasuite thresholds list [FILE]      list SKUs and their floors
  rdmasuite version

exit codes: 0 passed; 1 a check failed, errored or was not run (unallowed), or nothing
was measured (doctor: findings); 2 the suite or its input broke (no checks, unreadable or
invalid results, bad flags); 3 the checks passed but regressed against --baseline`

// exitError is an error that stands for an exit code other than
// reports.ExitBroken (what any other error means).
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// exitCode maps a command's error to the exit code (README "Exit codes"):
// nil → 0; a run that did not pass → 1 (doctor's findings too); a baseline
// regression → 3; anything else (unreadable or invalid input, bad flags,
// an unreachable cluster) → 2.
func exitCode(err error) int {
	var e *exitError
	switch {
	case err == nil:
		return reports.ExitPassed
	case errors.As(err, &e):
		return e.code
	case errors.Is(err, errFindings):
		return reports.ExitChecksFailed
	}
	return reports.ExitBroken
}

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

// run is main without the exit, for tests.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) < 1 {
		fmt.Fprintln(stderr, usage)
		return reports.ExitBroken
	}
	var err error
	switch args[0] {
	case "report":
		err = runReport(args[1:], stdout)
	case "thresholds":
		err = runThresholds(args[1:], stdout)
	case "doctor":
		err = runDoctor(args[1:], stdout)
	case "cleanup":
		err = runCleanup(args[1:], stdout)
	case "version":
		fmt.Fprintln(stdout, "rdmasuite", probeout.Version)
	default:
		fmt.Fprintf(stderr, "rdmasuite: unknown command %q\n%s\n", args[0], usage)
		return reports.ExitBroken
	}
	if err != nil {
		fmt.Fprintf(stderr, "rdmasuite %s: %v\n", args[0], err)
	}
	return exitCode(err)
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

// listFlag is a repeatable, comma-separated flag.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error {
	for _, p := range strings.Split(v, ",") {
		if p = strings.TrimSpace(p); p != "" {
			*l = append(*l, p)
		}
	}
	return nil
}

// runReport renders a results file and returns nil only when the run
// passed (and, with --baseline, nothing regressed); the rendering is
// written whatever the verdict. See exitCode for what its errors mean.
func runReport(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("report", flag.ContinueOnError)
	format := fs.String("format", "table", "table, markdown or junit")
	baseline := fs.String("baseline", "", "older results to compare with (per node/port deltas, regressions)")
	tolerance := fs.Float64("tolerance", 0.05, "relative drop counted as a regression")
	out := fs.String("o", "", "write to this file instead of stdout")
	var allow listFlag
	fs.Var(&allow, "allow-not-run", "check ids (or prefixes ending in /) allowed to be not-run, besides those the run allowed; comma-separated, repeatable")
	pos, err := splitArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return errors.New("give a results file: rdmasuite report RESULTS.json [MORE.json ...] (several are merged into one report)")
	}
	switch *format {
	case "table", "markdown", "md", "junit":
	default:
		return fmt.Errorf("unknown --format %q: table, markdown or junit", *format)
	}
	if *tolerance < 0 || *tolerance >= 1 {
		return fmt.Errorf("--tolerance %g: want a fraction in [0, 1), e.g. 0.05", *tolerance)
	}
	var runs []reports.Run
	for _, p := range pos {
		r, err := reports.Read(p)
		if err != nil {
			return err
		}
		runs = append(runs, r)
	}
	run, err := reports.Merge(runs...)
	if err != nil {
		return err
	}
	run.AllowNotRun = append(run.AllowNotRun, allow...)
	var diff *reports.DiffResult
	var base reports.Run
	if *baseline != "" {
		if base, err = reports.Read(*baseline); err != nil {
			return fmt.Errorf("baseline: %w", err)
		}
		d := reports.Diff(base, run, *tolerance)
		diff = &d
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
		if diff != nil {
			err = reports.JUnitWithDiff(w, run, *diff)
		} else {
			err = reports.JUnit(w, run)
		}
	}
	if err != nil {
		return err
	}
	if diff != nil && *format != "junit" {
		fence := ""
		if *format != "table" {
			fence = "```\n"
			fmt.Fprintf(w, "\n## Baseline\n")
		}
		fmt.Fprintf(w, "\nBaseline %s (run %s) → this run %s:\n%s", *baseline, base.RunID, run.RunID, fence)
		if err := reports.DiffTable(w, *diff); err != nil {
			return err
		}
		fmt.Fprint(w, fence)
	}
	if code := run.ExitCode(); code != reports.ExitPassed {
		return &exitError{code, errors.New(reports.SummaryText(run))}
	}
	if diff != nil && diff.Regressions() > 0 {
		return &exitError{reports.ExitRegression, fmt.Errorf("%d regression(s) against the baseline %s", diff.Regressions(), *baseline)}
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
