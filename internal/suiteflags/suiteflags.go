// Package suiteflags prints the conformance suite's --help (and the flag
// lines of rdmasuite's): the suite's
// own flags first, then the few framework flags that choose what runs,
// then a pointer to go test's and klog's. The flag package's default
// usage lists all ~200 of them alphabetically and panics on
// e2e-framework's feature-gates flag (its String method on a zero value).
package suiteflags

import (
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"
)

// Framework are the e2e-framework flags worth listing: what runs, where.
var Framework = []string{"kubeconfig", "context", "labels", "skip-labels", "feature", "skip-features", "assess",
	"skip-assessment", "fail-fast", "dry-run", "disable-graceful-teardown"}

// Names lists the flags fs holds now: call it from the suite's init(),
// when the suite's flags are registered and no framework's are yet
// (testing, e2e-framework and klog register theirs later).
func Names(fs *flag.FlagSet) []string {
	var out []string
	fs.VisitAll(func(f *flag.Flag) { out = append(out, f.Name) })
	return out
}

// Usage writes the suite's help for fs: ours (the names Names returned)
// first, then those of Framework that fs has. It never calls a flag's
// String method beyond DefValue, so a broken flag cannot panic it.
func Usage(w io.Writer, fs *flag.FlagSet, ours []string) { UsageWidth(w, fs, ours, 0) }

// UsageWidth is Usage with flag descriptions wrapped at width (0: none).
func UsageWidth(w io.Writer, fs *flag.FlagSet, ours []string, width int) {
	fmt.Fprintln(w, "rdmasuite conformance suite. Usage:")
	fmt.Fprintln(w, "  go test ./suites [-timeout 2h] [-v] -args --kubeconfig=FILE [--labels suite=rdma] [FLAGS]")
	fmt.Fprintln(w, "  (or the compiled suite: rdmasuite-suite [FLAGS]); README.md explains the suites and exit codes.")
	fmt.Fprintln(w, "\nExamples:")
	fmt.Fprintln(w, "  go test ./suites -args --kubeconfig=$HOME/.kube/config --labels suite=smoke")
	fmt.Fprintln(w, "  go test ./suites -timeout 2h -args --labels suite=rdma --node-selector nvidia.com/gpu.present=true --report-dir out")
	fmt.Fprintln(w, "\nSuite flags:")
	sorted := append([]string(nil), ours...)
	sort.Strings(sorted)
	for _, n := range sorted {
		if f := fs.Lookup(n); f != nil {
			fmt.Fprintln(w, LineWidth(f, width))
		}
	}
	fmt.Fprintln(w, "\nWhich features run, and where (e2e-framework):")
	for _, n := range Framework {
		if f := fs.Lookup(n); f != nil {
			fmt.Fprintln(w, LineWidth(f, width))
		}
	}
	fmt.Fprintln(w, "\ngo test's own flags (-test.run, -test.v, -test.timeout, ...): go help testflag. klog's (-v, -vmodule): klog.")
}

// Line is one flag as both --help texts print it (the suite's and
// rdmasuite's): --name TYPE (-x for a one-letter flag), then its usage
// and a default worth saying.
func Line(f *flag.Flag) string { return LineWidth(f, 0) }

// LineWidth is Line with the description wrapped at width columns (0: one
// line), continuation lines under its first, so help reads in a terminal.
func LineWidth(f *flag.Flag, width int) string {
	name, usage := flag.UnquoteUsage(f)
	if name == "value" {
		name = "LIST"
	}
	s := "  --" + f.Name
	if len(f.Name) == 1 {
		s = "  -" + f.Name
	}
	if name != "" {
		s += " " + name
	}
	desc := strings.ReplaceAll(usage, "\n", " ")
	if f.DefValue != "" && f.DefValue != "false" && f.DefValue != "0" && f.DefValue != "[]" {
		desc += fmt.Sprintf(" (default %s)", f.DefValue)
	}
	const indent = "      "
	return s + "\n" + indent + wrap(desc, width-len(indent), "\n"+indent)
}

// wrap breaks s at spaces into lines of at most width runes (a word
// longer than width stays whole), joined by sep; width <= 0 keeps one line.
func wrap(s string, width int, sep string) string {
	if width <= 0 {
		return s
	}
	var lines []string
	line := ""
	for _, w := range strings.Fields(s) {
		switch {
		case line == "":
			line = w
		case len([]rune(line))+1+len([]rune(w)) <= width:
			line += " " + w
		default:
			lines = append(lines, line)
			line = w
		}
	}
	if line != "" {
		lines = append(lines, line)
	}
	return strings.Join(lines, sep)
}

// WantsHelp says args ask for help (-h, -help, --help), as the flag
// package reads them; both CLIs check it before running anything.
func WantsHelp(args []string) bool {
	for _, a := range args {
		if a == "-h" || a == "-help" || a == "--help" {
			return true
		}
	}
	return false
}
