package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/rdmasuite/rdmasuite/internal/suiteflags"
	"github.com/rdmasuite/rdmasuite/internal/termwidth"
)

// commandHelp is what `rdmasuite CMD --help` prints besides the flags.
type commandHelp struct {
	summary, usage, description, examples string
}

// helps, by command path ("report", "thresholds check").
var helps = map[string]commandHelp{
	"report": {"render a results file: table, Markdown, JUnit, Prometheus or an HTML page; compare with a baseline",
		"rdmasuite report RESULTS.json [MORE.json ...] [flags]",
		"Render a results file the suite wrote (several are merged into one report). The exit code is the run's:\n" +
			"0 passed, 1 a check failed, errored or was not run without being allowed, 2 the input is broken,\n" +
			"3 passed but regressed against --baseline. On a terminal the table fits its width.",
		"  rdmasuite report rdmasuite-results/results.json\n" +
			"  rdmasuite report results.json --format junit -o junit.xml\n" +
			"  rdmasuite report after.json --baseline before-upgrade.json --tolerance 0.05\n" +
			"  rdmasuite report after.json --baseline before-upgrade.json --format html -o acceptance.html\n" +
			"  rdmasuite report results.json --format prometheus -o /var/lib/node_exporter/textfile/rdmasuite.prom"},
	"push": {"PUT a run's metrics to a Prometheus Pushgateway",
		"rdmasuite push --pushgateway URL [flags] RESULTS.json",
		"PUT the results as Prometheus metrics to a Pushgateway, replacing the group. Exit 2 if the push failed,\n" +
			"else the run's exit code.",
		"  rdmasuite push --pushgateway http://pushgateway.monitoring:9091 --grouping cluster=prod results.json"},
	"doctor": {"check the cluster for the known failure modes, from the API (exit 1 if any)",
		"rdmasuite doctor [flags]",
		"Look for the known failure modes (seeds: driver/device-plugin races, missing resources, MOFED settings)\n" +
			"through the Kubernetes API only. Host facts need the in-pod probe: the suite's suite=doctor runs both.\n" +
			"The cluster is found as kubectl finds it: --kubeconfig, $KUBECONFIG, ~/.kube/config, in-cluster.",
		"  rdmasuite doctor\n" +
			"  rdmasuite doctor --kubeconfig ~/.kube/prod --node-selector nvidia.com/gpu.present=true -o doctor.json"},
	"run": {"run the acceptance suite as a Job in the cluster: its log here, its results back, nothing left",
		"rdmasuite run [flags] [-- SUITE FLAGS]",
		"Apply the in-cluster acceptance run of suites/deploy (namespace, the runner's ServiceAccount and\n" +
			"least-privilege RBAC, thresholds ConfigMap, the acceptance Job with the runner image of this version),\n" +
			"stream the run's plan and progress from the Job's log, wait, bring results.json and the acceptance page\n" +
			"back from the run's ConfigMap, render the report, delete what the run created, and exit with the suite's\n" +
			"exit code. The suite's flags (as for go test ./suites -args) go after --, unchanged; without them the\n" +
			"Job's own (--labels suite=smoke,suite=rdma,suite=doctor,suite=gpu). Ctrl-C deletes the Job (the suite\n" +
			"deletes its probe pods first) and what the run created. --wait=false returns once the Job exists.",
		"  rdmasuite run\n" +
			"  rdmasuite run --context prod -- --labels suite=rdma --bw-sizes 1M\n" +
			"  rdmasuite run --wait=false -- --labels suite=doctor && rdmasuite results --delete"},
	"results": {"fetch and render the results of a run started with rdmasuite run --wait=false",
		"rdmasuite results [--job NAME] [--delete] [flags]",
		"Find the run's Job (the newest of rdmasuite run's in --namespace, or --job), wait for it (following\n" +
			"its log), bring its results back from the run's ConfigMap, render them and exit with the suite's exit\n" +
			"code. --delete then deletes the Job and what its run created.",
		"  rdmasuite results\n  rdmasuite results --job rdmasuite-run-1a2b3c4d --delete"},
	"cleanup": {"delete what earlier runs left behind (by label, never by name)",
		"rdmasuite cleanup [--namespace NS] [--older-than D | --run ID] [--dry-run] [flags]",
		"Delete leftover run namespaces (labelled by the suite), or with --namespace the runs' objects in that\n" +
			"existing namespace, never the namespace itself.",
		"  rdmasuite cleanup --older-than 2h --dry-run\n" +
			"  rdmasuite cleanup --run 1a2b3c4d\n" +
			"  rdmasuite cleanup --namespace rdmasuite --older-than 6h"},
	"thresholds": {"validate, list or calibrate per-SKU thresholds",
		"rdmasuite thresholds check|list [FILE] [--replace] [--overlay OVERLAY] | calibrate RESULTS.json... --out FILE",
		"Thresholds are per-SKU floors with their sources: the built-in thresholds/skus.yaml, FILE laid over\n" +
			"them (as the suite's --thresholds; --replace: FILE alone), and OVERLAY on top (--thresholds-overlay).\n\n" +
			"Commands:\n" +
			"  check   validate a thresholds file (default: the built-in one); errors name file:line and the fix\n" +
			"  list    list the SKUs and their floors in matching order (the overlay's first)\n" +
			"  calibrate  write an overlay whose bandwidth floors come from runs that passed (see its --help)\n\n" +
			"Flags (both commands):\n" +
			"  --replace           FILE alone, without the built-in SKUs\n" +
			"  --overlay OVERLAY   lay this file over the result",
		"  rdmasuite thresholds check my-skus.yaml\n" +
			"  rdmasuite thresholds check --overlay my-overlay.yaml\n" +
			"  rdmasuite thresholds list"},
	"thresholds check": {"validate a thresholds file",
		"rdmasuite thresholds check [FILE] [--replace] [--overlay OVERLAY]",
		"Validate thresholds as the suite would load them: the built-ins, FILE laid over them (--replace: FILE\n" +
			"alone), OVERLAY on top. Errors name the file, the line and the fix; exit 2 on any.",
		"  rdmasuite thresholds check my-skus.yaml\n  rdmasuite thresholds check --overlay my-overlay.yaml"},
	"thresholds list": {"list the SKUs and their floors",
		"rdmasuite thresholds list [FILE] [--replace] [--overlay OVERLAY]",
		"List the SKUs and their floors in matching order (the overlay's first).",
		"  rdmasuite thresholds list --overlay my-overlay.yaml"},
	"thresholds calibrate": {"write bandwidth floors per message size from the per-port figures of runs that passed",
		"rdmasuite thresholds calibrate RESULTS.json [MORE.json ...] --out overlay.yaml [--min-ports N] [--accept-below-floor] [--thresholds FILE]",
		"Read results files of runs that passed and write a thresholds overlay with, per SKU, floor (write, read,\n" +
			"gpuDirectWrite) and message size, a floor from the measured per-port distribution: each port's median\n" +
			"figure; over the ports floor = median − max(4·1.4826·MAD, 3 % of the median), rounded down, never above\n" +
			"the link rate (robust to a few bad ports; 4 robust standard deviations, at least one port's run-to-run\n" +
			"variation). Each floor's source names its ports, runs, dates, median and MAD. The overlay's SKUs are whole\n" +
			"copies of the SKUs that judged the runs (the built-ins, or --thresholds FILE) with the calibrated floors set\n" +
			"per size (bySize): load it with the suite's --thresholds-overlay FILE. Refused (exit 2, naming the fix):\n" +
			"a run that did not pass (--accept-below-floor: unless its only failures are bandwidth figures below their\n" +
			"floor), a node without a SKU, one SKU from two thresholds files, fewer than --min-ports ports, a figure\n" +
			"that is not a finite Gb/s. Loopback and gpudirect/read figures are not used.",
		"  rdmasuite thresholds calibrate results-*.json --out calibrated.yaml\n" +
			"  rdmasuite thresholds calibrate results.json --out calibrated.yaml --accept-below-floor --min-ports 4\n" +
			"  rdmasuite thresholds calibrate results.json --thresholds site.yaml --out calibrated.yaml"},
	"version": {"print the version and the commit", "rdmasuite version | rdmasuite --version", "Print the version and the commit it was built from.", "  rdmasuite --version"},
	"completion": {"print a shell completion script (bash, zsh, fish)", "rdmasuite completion bash|zsh|fish",
		"Print a completion script for bash, zsh or fish; it asks this binary for commands and flags as you type.",
		"  source <(rdmasuite completion bash)     # in ~/.bashrc\n  source <(rdmasuite completion zsh)      # in ~/.zshrc\n  rdmasuite completion fish | source      # in ~/.config/fish/config.fish"},
}

// commandOrder is the order of the root help.
var commandOrder = []string{"run", "results", "report", "push", "doctor", "cleanup", "thresholds", "completion", "version"}

// rootHelp is `rdmasuite --help`.
func rootHelp(w io.Writer) {
	fmt.Fprintln(w, "rdmasuite: the operator CLI of the RDMA/GPUDirect conformance suite: render and push results,")
	fmt.Fprintln(w, "check the cluster for known failure modes from the API, clean up, check thresholds.")
	fmt.Fprintln(w, "The conformance features run with: go test ./suites -args --kubeconfig=FILE (README.md).")
	fmt.Fprintln(w, "\nUsage:\n  rdmasuite COMMAND [flags]\n\nCommands:")
	for _, c := range commandOrder {
		fmt.Fprintf(w, "  %-11s %s\n", c, helps[c].summary)
	}
	fmt.Fprintln(w, "\nExamples:\n  rdmasuite report rdmasuite-results/results.json\n  rdmasuite doctor\n  rdmasuite thresholds check my-skus.yaml\n  rdmasuite cleanup --older-than 2h --dry-run")
	fmt.Fprintln(w, "\nExit codes: 0 passed; 1 a check failed, errored or was not run (unallowed), or nothing was measured\n"+
		"(doctor: findings); 2 the suite or its input broke; 3 passed but regressed against --baseline.")
	fmt.Fprintln(w, "\nUse \"rdmasuite help COMMAND\" or \"rdmasuite COMMAND --help\" for more about a command.")
}

// helpError is a request for a command's help (-h, --help): not an
// error, exit 0 with the help on stdout.
type helpError struct {
	command string
	fs      *flag.FlagSet
}

func (e *helpError) Error() string { return "help requested" }

// newFlagSet is a command's flag set: errors come back to run, which says
// them once and points at --help; nothing is printed here.
func newFlagSet(command string) *flag.FlagSet {
	fs := flag.NewFlagSet(command, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return fs
}

// parseArgs parses flags anywhere among the positional arguments
// (rdmasuite report x.json --format markdown); -h/--help becomes a
// helpError, a bad flag an error that points at the command's help.
func parseArgs(fs *flag.FlagSet, args []string) ([]string, error) {
	pos, err := splitArgs(fs, args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		return nil, &helpError{command: fs.Name(), fs: fs}
	case err != nil:
		return nil, fmt.Errorf("%w (see: rdmasuite %s --help)", err, fs.Name())
	}
	return pos, nil
}

// printHelp prints one command's help: description, usage, examples and
// its flags as --name TYPE with their defaults.
func printHelp(w io.Writer, command string, fs *flag.FlagSet) {
	h := helps[command]
	fmt.Fprintf(w, "%s\n\nUsage:\n  %s\n\nExamples:\n%s\n", h.description, h.usage, h.examples)
	if fs == nil {
		return
	}
	var flags []string
	width := termwidth.Default
	if f, ok := w.(*os.File); ok && termwidth.Of(f) > 0 {
		width = termwidth.Of(f)
	}
	fs.VisitAll(func(f *flag.Flag) { flags = append(flags, suiteflags.LineWidth(f, width)) })
	if len(flags) > 0 {
		fmt.Fprintf(w, "\nFlags:\n%s\n", strings.Join(flags, "\n"))
	}
}
