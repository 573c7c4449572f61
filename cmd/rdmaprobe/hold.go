package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// runHold is the main process of a node's probe pod when the suite runs
// every round's server and client runs in it over pods/exec: it only
// keeps the container (its device, memlock and capabilities) alive. It
// ends on SIGTERM (the pod's deletion) or after --max, so a pod the runner
// could not delete (it was killed) does not hold its node's RDMA device
// and GPUs for ever.
func runHold(args []string) error {
	fs := flag.NewFlagSet("hold", flag.ContinueOnError)
	maxWait := fs.Duration("max", time.Hour, "end after this long even if nobody stops the pod")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q: hold takes only --max", fs.Args())
	}
	if *maxWait <= 0 {
		return fmt.Errorf("--max %s: want a positive duration", *maxWait)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	fmt.Fprintf(os.Stderr, "rdmaprobe hold: keeping this pod for the suite's runs (pods/exec), up to %s\n", *maxWait)
	select {
	case <-ctx.Done():
		fmt.Fprintln(os.Stderr, "rdmaprobe hold: stopped")
	case <-time.After(*maxWait):
		fmt.Fprintf(os.Stderr, "rdmaprobe hold: %s passed: ending\n", *maxWait)
	}
	return nil
}
