package lifecycle

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"

	"k8s.io/klog/v2"
	e2eflags "sigs.k8s.io/e2e-framework/pkg/flags"
)

// e2eStringFlags and e2eBoolFlags are e2e-framework's own flags
// (pkg/flags), which it registers on the runner binary's command line
// when the suite has not (the suite registers --namespace, --kubeconfig,
// --dry-run itself).
var (
	e2eStringFlags = []string{"feature", "assess", "skip-features", "skip-assessment", "context", "feature-gates", "namespace", "kubeconfig"}
	e2eBoolFlags   = []string{"parallel", "dry-run", "fail-fast", "disable-graceful-teardown"}
)

// goTestBoolFlags and goTestValueFlags are go test's flags that a test
// binary accepts (-test.NAME).
var (
	goTestBoolFlags  = []string{"v", "short", "failfast", "fullpath", "benchmem", "paniconexit0"}
	goTestValueFlags = []string{"run", "skip", "list", "timeout", "count", "cpu", "parallel", "shuffle", "bench", "benchtime",
		"coverprofile", "cpuprofile", "memprofile", "blockprofile", "mutexprofile", "outputdir", "trace", "testlogfile", "gocoverdir"}
)

// CheckArgs parses a run's suite flags as the runner binary will (the
// suite's own, e2e-framework's, klog's and go test's), without a cluster,
// and checks what their values say without reading a file (the
// thresholds files it names are read where the suite runs): an unknown
// flag (with the closest known one), a value of the wrong type, and every
// value the suite itself refuses before its first API call (RunnerConfig,
// Publishing: sizes, variants, pairing, the QP timeout, the NCCL figures,
// the node marks, the disruptive gate). rdmasuite run calls it before it
// applies anything.
func CheckArgs(args []string) error {
	fs := flag.NewFlagSet("suite", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	f := Register(fs)
	for _, n := range e2eStringFlags {
		if fs.Lookup(n) == nil {
			fs.String(n, "", "")
		}
	}
	for _, n := range e2eBoolFlags {
		if fs.Lookup(n) == nil {
			fs.Bool(n, false, "")
		}
	}
	fs.Var(&e2eflags.LabelsMap{}, "labels", "")
	fs.Var(&e2eflags.LabelsMap{}, "skip-labels", "")
	klog.InitFlags(fs)
	for _, n := range goTestBoolFlags {
		fs.Bool("test."+n, false, "")
	}
	for _, n := range goTestValueFlags {
		fs.String("test."+n, "", "")
	}
	if err := fs.Parse(args); err != nil {
		return explainFlagError(fs, err)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q among the suite flags: each flag takes its value as --flag=value or --flag value", fs.Arg(0))
	}
	// The thresholds files are read where the suite runs: the rest is
	// checked against the built-ins, and --sku only when no file given
	// could define it.
	if *f.Thresholds != "" || *f.ThresholdsOver != "" {
		*f.Thresholds, *f.ThresholdsOver, *f.ThresholdsRepl, *f.SKU = "", "", false, ""
	}
	if _, err := f.RunnerConfig(io.Discard, func() error {
		_, err := f.DisruptiveGate(fs)
		return err
	}); err != nil {
		return err
	}
	_, err := f.Publishing()
	return err
}

// explainFlagError names the closest known flag when err is an unknown
// one (a typo such as --lables).
func explainFlagError(fs *flag.FlagSet, err error) error {
	msg := err.Error()
	const prefix = "flag provided but not defined: -"
	if !strings.HasPrefix(msg, prefix) {
		return errors.New("suite flags: " + msg)
	}
	name := strings.TrimPrefix(msg, prefix)
	var names []string
	fs.VisitAll(func(fl *flag.Flag) { names = append(names, fl.Name) })
	sort.Strings(names)
	best, bestD := "", 4 // a suggestion only within 3 edits
	for _, n := range names {
		if d := editDistance(name, n); d < bestD {
			best, bestD = n, d
		}
	}
	if best != "" {
		return fmt.Errorf("unknown suite flag --%s: did you mean --%s? (go test ./suites -args --help lists them)", name, best)
	}
	return fmt.Errorf("unknown suite flag --%s (go test ./suites -args --help lists them)", name)
}

// editDistance is the Levenshtein distance of a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}
