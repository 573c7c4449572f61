package main

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/rdmasuite/rdmasuite/reports"
	"github.com/rdmasuite/rdmasuite/reports/pushgateway"
)

// runPush sends a run's metrics (reports.Prometheus) to a Pushgateway with
// PUT, which replaces every metric of the group (job plus --grouping), so a
// check that is gone from this run is gone there too. A push that fails is
// ExitBroken whatever the run; else the run's verdict, as report gives it.
// The push itself is package pushgateway's, which the suite's --pushgateway
// uses too.
func runPush(args []string, stdout io.Writer) error {
	fs := newFlagSet("push")
	gateway := fs.String("pushgateway", "", "the Pushgateway's base URL, e.g. http://pushgateway.monitoring:9091 (user:password@ for basic auth)")
	job := fs.String("job", "rdmasuite", "the job label of the group")
	timeout := fs.Duration("timeout", 30*time.Second, "how long the push may take")
	var grouping, allow listFlag
	fs.Var(&grouping, "grouping", "more grouping labels, NAME=VALUE, comma-separated, repeatable (e.g. cluster=prod): one group per distinct set")
	fs.Var(&allow, "allow-not-run", "check ids (or prefixes ending in /) allowed to be not-run, besides those the run allowed; comma-separated, repeatable")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return errors.New("give a results file: rdmasuite push --pushgateway URL RESULTS.json [MORE.json ...] (several are merged into one group)")
	}
	group, err := pushgateway.New(pushgateway.Config{Gateway: *gateway, Job: *job, Grouping: grouping, Timeout: *timeout, Flags: pushgateway.CLIFlags})
	if err != nil {
		return err
	}
	run, err := readRun(pos, allow)
	if err != nil {
		return err
	}
	series, err := group.Push(run)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "pushed %d series of run %s to %s\n%s\n", series, run.RunID, group, reports.SummaryText(run))
	return verdict(run)
}
