// Command rdmasuite is the operator CLI of the conformance suite:
//
//   - run: run the acceptance suite as a Job in the cluster
//     (suites/deploy), stream its log, bring its results back and render
//     them, and delete what it created; results: fetch and render the
//     results of a run started with --wait=false (--delete: then delete
//     what it created).
//   - report: render results files (table, Markdown, JUnit, Prometheus,
//     HTML), optionally against a baseline; push: PUT their metrics to a
//     Pushgateway.
//   - doctor: check the cluster for the known failure modes, from the
//     Kubernetes API only.
//   - cleanup: delete what earlier runs left behind, by label.
//   - thresholds check|list|calibrate: validate and list per-SKU
//     thresholds; calibrate bandwidth floors from runs that passed.
//   - completion, version.
//
// Exit codes (exitCode): 0 passed; 1 a check did not pass (doctor: a
// finding); 2 broken input, bad flags or an unreachable cluster; 3 passed
// but regressed against --baseline. The suite's features also run from a
// source tree with `go test ./suites -args --kubeconfig=…`.
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"slices"
	"strings"

	"github.com/rdmasuite/rdmasuite/internal/atomicfile"
	"github.com/rdmasuite/rdmasuite/internal/runner"
	"github.com/rdmasuite/rdmasuite/internal/suiteflags"
	"github.com/rdmasuite/rdmasuite/internal/termwidth"
	"github.com/rdmasuite/rdmasuite/reports"
	"github.com/rdmasuite/rdmasuite/thresholds"
	"github.com/rdmasuite/rdmasuite/workloads/probeout"
)

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

// stdin is what "rdmasuite report -" reads (tests replace it).
var stdin io.Reader = os.Stdin

// run is main without the exit, for tests.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "help" && len(args) == 1 || args[0] == "-h" || args[0] == "--help" || args[0] == "-help" {
		rootHelp(stdout)
		return reports.ExitPassed
	}
	if args[0] == "help" {
		// help CMD [SUB] is CMD [SUB] --help.
		return run(append(args[1:], "--help"), stdout, stderr)
	}
	var err error
	switch args[0] {
	case "report":
		err = runReport(args[1:], stdout)
	case "push":
		err = runPush(args[1:], stdout)
	case "thresholds":
		err = runThresholds(args[1:], stdout)
	case "doctor":
		err = runDoctor(args[1:], stdout)
	case "cleanup":
		err = runCleanup(args[1:], stdout)
	case "run":
		err = runJob(args[1:], stdout, stderr)
	case "results":
		err = runResults(args[1:], stdout, stderr)
	case "completion":
		err = runCompletion(args[1:], stdout)
	case "__complete": // the completion scripts' helper: candidates, one per line
		complete(args[1:], stdout)
		return reports.ExitPassed
	case "version", "--version", "-version":
		if suiteflags.WantsHelp(args[1:]) {
			err = &helpError{command: "version"}
		} else {
			fmt.Fprintln(stdout, versionLine())
		}
	default:
		fmt.Fprintf(stderr, "rdmasuite: unknown command %q: run 'rdmasuite --help' for the commands\n", args[0])
		return reports.ExitBroken
	}
	var help *helpError
	if errors.As(err, &help) {
		printHelp(stdout, help.command, help.fs)
		return reports.ExitPassed
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
	fs := newFlagSet("report")
	format := fs.String("format", "table", "table, markdown, junit, prometheus (text exposition format 0.0.4) or html "+
		"(one self-contained page: the baseline delta, a per-node/port heat map against the floors, memlock, doctor findings, NCCL and NFS stall charts; write it with -o)")
	baseline := fs.String("baseline", "", "older results to compare with (per node/port deltas, regressions)")
	tolerance := fs.Float64("tolerance", 0.05, "relative drop counted as a regression")
	out := fs.String("o", "", "write to this file instead of stdout; with --format prometheus it is replaced atomically "+
		"(temp file + rename), so node_exporter's textfile collector can read e.g. /var/lib/node_exporter/textfile/rdmasuite.prom")
	all := fs.Bool("all", false, "table and markdown: show every row and node (by default passing rows and all-pass nodes are folded into a line each)")
	widthFlag := fs.Int("width", -1, "table: columns to fit (default: the terminal's width, else 80; 0: one line per row, for grep)")
	var allow listFlag
	fs.Var(&allow, "allow-not-run", "check ids (or prefixes ending in /) allowed to be not-run, besides those the run allowed; comma-separated, repeatable")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return errors.New("give a results file: rdmasuite report RESULTS.json [MORE.json ...] (several are merged into one report)")
	}
	switch *format {
	case "table", "markdown", "md", "junit", "prometheus", "html":
	default:
		return fmt.Errorf("unknown --format %q: table, markdown, junit, prometheus or html", *format)
	}
	if *tolerance < 0 || *tolerance >= 1 {
		return fmt.Errorf("--tolerance %g: want a fraction in [0, 1), e.g. 0.05", *tolerance)
	}
	widthGiven := false
	fs.Visit(func(f *flag.Flag) { widthGiven = widthGiven || f.Name == "width" })
	if widthGiven && *widthFlag < 0 {
		return fmt.Errorf("--width %d: want the columns to fit (e.g. 120), or 0 for one line per row", *widthFlag)
	}
	if err := outputIsAFile(*out); err != nil {
		return err
	}
	run, err := readRun(pos, allow)
	if err != nil {
		return err
	}
	var diff *reports.DiffResult
	var base reports.Run
	var baseWarn []string
	if *baseline != "" {
		if base, err = reports.Read(*baseline); err != nil {
			return fmt.Errorf("baseline: %w", err)
		}
		var refuse string
		if refuse, baseWarn = reports.CheckBaseline(base, run); refuse != "" {
			return fmt.Errorf("baseline %s: %s", *baseline, refuse)
		}
		d := reports.Diff(base, run, *tolerance)
		d.Warnings = baseWarn
		diff = &d
	}
	w := stdout
	var whole *bytes.Buffer // the prometheus file, written at once at the end
	switch {
	case *out != "" && *format == "prometheus":
		whole = new(bytes.Buffer)
		w = whole
	case *out != "":
		f, err := os.Create(*out)
		if err != nil {
			return err
		}
		defer f.Close()
		w = f
	}
	width := *widthFlag
	if width < 0 {
		width = termwidth.Fit(w)
	}
	switch *format {
	case "table":
		err = reports.TableWith(w, run, reports.TableOptions{Width: width, All: *all})
	case "markdown", "md":
		err = reports.MarkdownWith(w, run, reports.MarkdownOptions{All: *all})
	case "junit":
		if diff != nil {
			err = reports.JUnitWithDiff(w, run, *diff)
		} else {
			err = reports.JUnit(w, run)
		}
	case "prometheus":
		err = reports.Prometheus(w, run)
	case "html":
		err = reports.HTML(w, run, diff)
	}
	if err != nil {
		return err
	}
	// Metrics carry no text: the baseline's verdict is the exit code.
	if diff != nil && *format != "junit" && *format != "prometheus" && *format != "html" {
		fence := ""
		if *format != "table" {
			fence = "```\n"
			fmt.Fprintf(w, "\n## Baseline\n")
		}
		o := reports.DiffOptions{Title: fmt.Sprintf("baseline %s (run %s) → this run %s", *baseline, base.RunID, run.RunID),
			Width: width, All: *all}
		if fence != "" {
			o.Width = 0 // a fenced block is read at any width: one line per row
		}
		fmt.Fprintf(w, "\n%s", fence)
		if err := reports.DiffTableWith(w, *diff, o); err != nil {
			return err
		}
		fmt.Fprint(w, fence)
	}
	if whole != nil {
		if err := atomicfile.Write(*out, whole.Bytes()); err != nil {
			return err
		}
	}
	return reportVerdict(run, diff, *baseline)
}

// reportVerdict is report's outcome as an error (nil: the run passed and
// nothing regressed), its message the one line a script's log keeps: the
// run's summary and, with a baseline, the comparison and its warnings.
func reportVerdict(run reports.Run, diff *reports.DiffResult, baseline string) error {
	err := verdict(run)
	if diff == nil {
		return err
	}
	cmp := fmt.Sprintf("baseline %s: %s", baseline, diff.Headline())
	for _, w := range diff.Warnings {
		cmp += "; warning: " + w
	}
	var e *exitError
	switch {
	case errors.As(err, &e):
		return &exitError{e.code, fmt.Errorf("%s; %s", e.err, cmp)}
	case diff.Regressions() > 0 || diff.NothingCompared() != "":
		return &exitError{reports.ExitRegression, errors.New(cmp)}
	}
	return nil
}

// readRun reads and merges the results files and adds the allowances.
func readRun(paths []string, allow []string) (reports.Run, error) {
	var runs []reports.Run
	for _, p := range paths {
		var r reports.Run
		var err error
		if p == "-" { // the results on standard input (e.g. from kubectl get configmap … | base64 -d)
			var b []byte
			if b, err = io.ReadAll(stdin); err == nil {
				r, err = reports.Decode("standard input", b)
			}
		} else {
			r, err = reports.Read(p)
		}
		if err != nil {
			return reports.Run{}, err
		}
		runs = append(runs, r)
	}
	run, err := reports.Merge(runs...)
	if err != nil {
		return reports.Run{}, err
	}
	run.AllowNotRun = append(run.AllowNotRun, allow...)
	return run, nil
}

// verdict is the run's own outcome as an error: nil when it passed, else
// an exitError with its exit code and summary.
func verdict(run reports.Run) error {
	if code := run.ExitCode(); code != reports.ExitPassed {
		return &exitError{code, errors.New(reports.SummaryText(run))}
	}
	return nil
}

func runThresholds(args []string, stdout io.Writer) error {
	if len(args) > 0 && suiteflags.WantsHelp(args[:1]) {
		return &helpError{command: "thresholds"}
	}
	if len(args) > 0 && args[0] == "calibrate" {
		return runCalibrate(args[1:], stdout)
	}
	if len(args) == 0 || (args[0] != "check" && args[0] != "list") {
		return errors.New("usage: rdmasuite thresholds check|list [FILE] [--overlay OVERLAY] | calibrate RESULTS.json... --out FILE (see: rdmasuite thresholds --help)")
	}
	fs := newFlagSet("thresholds " + args[0])
	overlay := fs.String("overlay", "", "lay this thresholds file over the result, as the suite's --thresholds-overlay does: its SKUs replace those of the same name whole, or are added")
	replace := fs.Bool("replace", false, "FILE alone, without the built-in SKUs (the suite's --thresholds-replace); by default FILE is laid over the built-ins, as the suite's --thresholds does")
	pos, err := parseArgs(fs, args[1:])
	if err != nil {
		return err
	}
	if len(pos) > 1 {
		return fmt.Errorf("one thresholds file at most (have %s): lay a second one over it with --overlay", strings.Join(pos, ", "))
	}
	file := ""
	if len(pos) == 1 {
		file = pos[0]
	}
	set, err := thresholds.LoadSuite(file, *replace, *overlay)
	if err != nil {
		return err
	}
	if args[0] == "check" {
		fmt.Fprintf(stdout, "%s: ok, %d SKUs: %s\n", set.File, len(set.SKUs), strings.Join(set.Names(), ", "))
		for _, n := range set.MatchAll() {
			fmt.Fprintf(stdout, "note: %s\n", n)
		}
		// The last layer's changes: the overlay's, else FILE's when it
		// was laid over the built-ins.
		last := *overlay
		if last == "" && !*replace {
			last = file
		}
		if last != "" {
			replaced, added := set.OverlayChanges()
			fmt.Fprintf(stdout, "overlay %s replaces %s; adds %s\n", last, orNone(replaced), orNone(added))
			for _, t := range set.TakeOvers() {
				fmt.Fprintf(stdout, "note: %s: it is matched first, so nodes whose %s matches get its thresholds\n", t, thresholds.GPUProductLabel)
			}
			for i := range set.SKUs {
				if d := set.SKUs[i].Dropped(); len(d) > 0 {
					fmt.Fprintf(stdout, "note: overlay SKU %s leaves out %s, which the SKU it replaces had: those checks will be not-run; copy them to keep them\n",
						set.SKUs[i].Name, strings.Join(d, ", "))
				}
			}
		}
		return nil
	}
	for i := range set.SKUs {
		k := &set.SKUs[i]
		w, _ := k.BandwidthFloor("write")
		r, _ := k.BandwidthFloor("read")
		from := ""
		if k.FromOverlay() {
			from = "  (overlay " + k.File() + ")"
		}
		// The optional bounds, when the SKU has them.
		opt := k.OptionalSummary()
		if opt != "" {
			opt = "  " + opt
		}
		if k.Given("maxNFSStallSec") == nil {
			opt = fmt.Sprintf("  NFS stall ≤ %g s", *k.MaxNFSStallSec.Value) + opt
		}
		fmt.Fprintf(stdout, "%-18s link %4g Gb/s × %g ports  write ≥ %g Gb/s%s  read ≥ %g Gb/s%s  memlock ≥ %.0f B%s  match %s%s\n",
			k.Name, *k.LinkRateGbps.Value, *k.PortsPerNode.Value, w.Value, sizeFloors(k, "write"), r.Value, sizeFloors(k, "read"), *k.MinMemlockBytes.Value, opt,
			strings.Join(k.Match.GPUProduct, ","), from)
	}
	for _, l := range unsetOptional(set) {
		fmt.Fprintln(stdout, l)
	}
	return nil
}

// sizeFloors is " (64KiB ≥ 180)": the floors of metric per message size
// (bySize), which judge those sizes instead of the general one.
func sizeFloors(k *thresholds.SKU, metric string) string {
	var parts []string
	for _, size := range k.FloorSizes(metric) {
		if b, err := k.BandwidthFloorAt(metric, size); err == nil {
			parts = append(parts, fmt.Sprintf("%s ≥ %g", thresholds.SizeName(size), b.Value))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

// unsetOptional says, per paired feature judged against an optional key,
// on which SKUs its checks will be not-run because the key is unset.
func unsetOptional(set *thresholds.Set) []string {
	var out []string
	claimed := map[string]bool{}
	for _, spec := range runner.PairedSpecs() {
		for _, key := range spec.Thresholds {
			if !slices.Contains(thresholds.OptionalKeys(), key) && !slices.Contains(thresholds.SkippableKeys(), key) {
				continue
			}
			claimed[key] = true
			if l := unsetLine(set, key, fmt.Sprintf("%s/%s checks", spec.Name, opOf(key))); l != "" {
				out = append(out, l)
			}
		}
	}
	// The floors of the features that are not paired (NCCL, the
	// disruptive round).
	for _, key := range thresholds.SkippableKeys() {
		if !claimed[key] {
			if l := unsetLine(set, key, "the checks judged against it"); l != "" {
				out = append(out, l)
			}
		}
	}
	return out
}

// unsetLine says on which SKUs key is unset ("" when on none), and that
// the checks are then not-run there.
func unsetLine(set *thresholds.Set, key, checks string) string {
	var lacking, having []string
	for i := range set.SKUs {
		if err := set.SKUs[i].Given(key); err != nil {
			lacking = append(lacking, set.SKUs[i].Name)
		} else {
			having = append(having, set.SKUs[i].Name)
		}
	}
	checks += " are not-run there (set it in an overlay: --overlay)"
	switch {
	case len(lacking) == 0:
		return ""
	case len(having) == 0:
		return fmt.Sprintf("not set: %s on any SKU: %s", key, checks)
	case len(lacking) > len(having):
		return fmt.Sprintf("not set: %s on %d of %d SKUs (all but %s): %s", key, len(lacking), len(set.SKUs), strings.Join(having, ", "), checks)
	}
	return fmt.Sprintf("not set: %s on %d of %d SKUs (%s): %s", key, len(lacking), len(set.SKUs), strings.Join(lacking, ", "), checks)
}

// orNone lists names, or says there are none.
func orNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// versionLine is "rdmasuite VERSION (commit C[, modified], GOVERSION)": the
// version make stamps (probeout.Version; a go install of a tagged module
// says its tag) and the commit the Go toolchain embedded, so a binary built
// without make still says what it was built from.
func versionLine() string {
	version, commit, modified, goVersion := probeout.Version, probeout.Commit, false, ""
	if bi, ok := debug.ReadBuildInfo(); ok {
		goVersion = bi.GoVersion
		if version == "dev" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				if commit == "" {
					commit = s.Value
				}
			case "vcs.modified":
				modified = s.Value == "true" && probeout.Commit == ""
			}
		}
	}
	if commit == "" {
		commit = "unknown: built without make and without Go's VCS stamping"
	}
	if len(commit) > 12 && !strings.Contains(commit, " ") {
		commit = commit[:12]
	}
	if modified {
		commit += ", modified"
	}
	s := fmt.Sprintf("rdmasuite %s (commit %s", version, commit)
	if goVersion != "" {
		s += ", " + goVersion
	}
	return s + ")"
}

// opOf is the op an optional key bounds (writeLatencyUs: write), or "*"
// when it bounds every op of its feature.
func opOf(key string) string {
	for _, op := range []string{"write", "read", "send"} {
		if strings.HasPrefix(key, op) {
			return op
		}
	}
	return "*"
}

// outputIsAFile refuses an -o that names a format (kubectl's -o json
// habit): report would write the table into a file called json.
func outputIsAFile(out string) error {
	switch strings.ToLower(out) {
	case "json", "yaml", "wide", "table", "markdown", "md", "junit", "prometheus", "html", "text":
	default:
		return nil
	}
	if _, err := os.Stat(out); err == nil {
		return nil // an existing file of that name: written as asked
	}
	return fmt.Errorf("-o %s names the output FILE here, not a format (it would write a file called %q): the format is --format "+
		"(table, markdown, junit, prometheus, html) and -o FILE where to write it; the results are JSON already (the results file itself)", out, out)
}
