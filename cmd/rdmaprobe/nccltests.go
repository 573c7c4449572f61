package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/rdmasuite/rdmasuite/workloads/nccl"
	"github.com/rdmasuite/rdmasuite/workloads/ncclbench"
	"github.com/rdmasuite/rdmasuite/workloads/probeout"
)

// ncclTestsProbe names the nccl-tests envelope.
const ncclTestsProbe = "nccl-tests"

// ncclTestsResult is what `rdmaprobe nccl-tests` prints: the binary's
// parsed table (every size row, the footers) and, when the run does not
// count, why (ncclbench.BinaryCause) and the fix.
type ncclTestsResult struct {
	Binary  string      `json:"binary"`
	Command string      `json:"command"`
	Table   nccl.Table  `json:"table"`
	Failure *ncclFailed `json:"failure,omitempty"`
}

type ncclFailed struct {
	Cause    ncclbench.BinaryCause `json:"cause"`
	Detail   string                `json:"detail"`
	Fix      string                `json:"fix"`
	ExitCode int                   `json:"exitCode"`
}

// runNCCLTests runs one of the operator's nccl-tests binaries from the pod
// image (single node, multi-GPU, e.g. all_reduce_perf -b 8 -e 128M -f 2
// -g 8) and prints its table as the probe's envelope; the binary's own
// output goes to stderr unchanged. Exit 0: every row parsed, footers
// present, no failed call, no wrong data; 3: it ran and that is not so;
// 1: it could not be run (not in the image, cancelled).
func runNCCLTests(args []string) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return ncclTests(ctx, args, os.Stdout, os.Stderr)
}

func ncclTests(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("nccl-tests", flag.ContinueOnError)
	fs.SetOutput(stderr)
	timeout := fs.Duration("timeout", 30*time.Minute, "stop the binary after this long")
	debug := fs.Bool("nccl-debug", true, "run it with NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET,ENV (the transport in the log, and the NCCL_ variables NCCL read)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: rdmaprobe nccl-tests [--timeout D] [--nccl-debug=false] BINARY [ARGS...]\n"+
			"  e.g. rdmaprobe nccl-tests /opt/nccl-tests/build/all_reduce_perf -b 8 -e 128M -f 2 -g 8")
		fs.PrintDefaults()
	}
	usageErr := func(err error) error {
		perr := probeout.Errorf(probeout.KindUsage, "%v", err)
		_ = probeout.WriteError(stdout, ncclTestsProbe, ncclTestsResult{}, perr)
		return perr
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err // --help: the usage went to stderr, no probe ran
		}
		return usageErr(err)
	}
	if fs.NArg() == 0 {
		return usageErr(errors.New("give the nccl-tests binary to run, e.g. all_reduce_perf -b 8 -e 128M -f 2 -g 8"))
	}
	if *timeout <= 0 {
		return usageErr(fmt.Errorf("--timeout %s: give a positive duration", *timeout))
	}
	var env []string
	if *debug {
		env = []string{"NCCL_DEBUG=INFO", "NCCL_DEBUG_SUBSYS=INIT,NET,ENV"}
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	bin := fs.Arg(0)
	table, raw, err := ncclbench.RunBinary(ctx, bin, fs.Args()[1:], env)
	_, _ = io.WriteString(stderr, raw)
	res := ncclTestsResult{Binary: bin, Table: table}
	var be *ncclbench.BinaryError
	if err != nil && !errors.As(err, &be) {
		perr := probeout.Errorf(probeout.KindInternal, "%v", err)
		_ = probeout.WriteError(stdout, ncclTestsProbe, res, perr)
		return perr
	}
	if be == nil {
		return probeout.Write(stdout, ncclTestsProbe, res)
	}
	res.Command = be.Command
	var kind probeout.Kind
	switch be.Cause {
	case ncclbench.CauseNotFound, ncclbench.CauseStart:
		kind = probeout.KindUsage // the image lacks a runnable binary: nothing ran
	case ncclbench.CauseCancelled:
		kind = probeout.KindTimeout
	default:
		// It ran and its result does not count: a failed check.
		res.Failure = &ncclFailed{Cause: be.Cause, Detail: be.Detail, Fix: be.Fix, ExitCode: be.ExitCode}
		if werr := probeout.Write(stdout, ncclTestsProbe, res); werr != nil {
			return werr
		}
		return fmt.Errorf("%w: %v", errCheckFailed, be)
	}
	perr := probeout.Errorf(kind, "%v", be)
	_ = probeout.WriteError(stdout, ncclTestsProbe, res, perr)
	return perr
}
