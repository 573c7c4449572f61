package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/rdmasuite/rdmasuite/workloads/probeout"
	"github.com/rdmasuite/rdmasuite/workloads/stall"
)

const stallUsage = "usage: rdmaprobe stall write|read|verify|stop --dir DIR --writer-id ID [flags]"

// runStall is `rdmaprobe stall`: the NFS I/O-stall writer, reader,
// verifier and stop command (see workloads/stall). Exit 0: ran (the stall
// itself is judged by the suite); 3: verification found lost, torn,
// reordered, duplicate or foreign records; 1: could not run, including I/O
// still hung at the stop.
func runStall(args []string) error {
	ctx, cancel := signalContext()
	defer cancel()
	return stallMain(ctx, args, os.Stdout, os.Stderr)
}

func stallMain(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return stallUsageError(stdout, "", errors.New(stallUsage))
	}
	mode, args := args[0], args[1:]
	switch mode {
	case stall.ModeWrite, stall.ModeRead:
		return stallRun(ctx, mode, args, stdout, stderr)
	case stall.ModeVerify:
		return stallVerify(args, stdout, stderr)
	case stall.ModeStop:
		return stallStop(args, stdout, stderr)
	}
	return stallUsageError(stdout, "", fmt.Errorf("unknown mode %q: %s", mode, stallUsage))
}

func stallUsageError(stdout io.Writer, mode string, err error) error {
	if errors.Is(err, flag.ErrHelp) {
		return err // --help: the flags went to stderr, no probe ran
	}
	perr := probeout.Errorf(probeout.KindUsage, "%v", err)
	_ = probeout.WriteError(stdout, stall.ProbeName, stall.Result{Mode: mode}, perr)
	return perr
}

func stallFlags(mode string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("stall "+mode, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return fs
}

// parseStallFlags parses and refuses positional arguments.
func parseStallFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q: %s", fs.Args(), stallUsage)
	}
	return nil
}

func stallRun(ctx context.Context, mode string, args []string, stdout, stderr io.Writer) error {
	fs := stallFlags(mode, stderr)
	cfg := stall.Config{Log: stderr}
	fs.StringVar(&cfg.Dir, "dir", "", "directory on the shared NFS volume")
	if mode == stall.ModeWrite {
		fs.StringVar(&cfg.WriterID, "writer-id", "", "this writer's id (≤ 32 bytes of [A-Za-z0-9._-]); its file is DIR/ID.rec")
		fs.IntVar(&cfg.RecordBytes, "record-bytes", stall.DefaultRecordBytes, "record size; a multiple of 4096 with --durability direct")
	} else {
		fs.StringVar(&cfg.WriterID, "writer-id", "", "the writer to follow (its file is DIR/ID.rec)")
		fs.IntVar(&cfg.RecordBytes, "record-bytes", 0, "record size; 0 takes it from the file's first header")
	}
	durability := fs.String("durability", stall.DurabilityFsync, "write: fsync (per record), fsync-every=N (N records, then one fsync: the measured op) or direct (O_DIRECT, fdatasync at the end)")
	fs.DurationVar(&cfg.Interval, "interval", stall.DefaultInterval, "pause between ops (the timeline's resolution)")
	fs.DurationVar(&cfg.Duration, "duration", stall.DefaultDuration, "safety cap on the run")
	fs.StringVar(&cfg.StopFile, "stop-file", "", "stop when this file exists (default DIR/ID.stop; create it with `rdmaprobe stall stop`)")
	fs.StringVar(&cfg.WatchFile, "watch-file", "", "record when this file appears and disappears (e.g. the host's /run/mellanox/drivers/.driver-ready)")
	fs.DurationVar(&cfg.StallThreshold, "stall-threshold", stall.DefaultStallThreshold, "gaps between op completions longer than this are listed as stalls")
	fs.DurationVar(&cfg.StopGrace, "stop-grace", stall.DefaultStopGrace, "after a stop, wait this long for an op in flight before reporting the stall as ongoing")
	if err := parseStallFlags(fs, args); err != nil {
		return stallUsageError(stdout, mode, err)
	}
	if mode == stall.ModeRead && *durability != stall.DurabilityFsync {
		return stallUsageError(stdout, mode, errors.New("--durability is the writer's: stall read takes none"))
	}
	d, err := stall.ParseDurability(*durability)
	if err != nil {
		return stallUsageError(stdout, mode, fmt.Errorf("--durability: %v", err))
	}
	var res stall.Result
	var perr *probeout.Error
	if mode == stall.ModeWrite {
		cfg.Durability = d
		res, perr = stall.Write(ctx, cfg)
	} else {
		res, perr = stall.Read(ctx, cfg)
	}
	if err := probeout.WriteError(stdout, stall.ProbeName, res, perr); err != nil {
		return err
	}
	if perr != nil {
		return perr
	}
	if res.FS != nil && res.FS.Magic != "" && res.FS.MagicName != "nfs" {
		fmt.Fprintf(stderr, "stall: warning: %s is on %s (%s), not NFS\n", cfg.Dir, res.FS.Type, res.FS.Magic)
	}
	if res.LongestGap != nil {
		fmt.Fprintf(stderr, "stall: %s done (%s): %d records, longest gap %.1f ms from %s (seq %d), %d stalls over %s\n",
			mode, res.StoppedBy, res.Acknowledged, res.LongestGap.Ms, res.LongestGap.Start.Format(time.RFC3339Nano),
			res.LongestGap.InFlightSeq, res.StallCount, cfg.StallThreshold)
	}
	return verificationError(res.Verifications, res.Verification)
}

// verificationError is errCheckFailed naming the first bad record of each
// failed verification.
func verificationError(vs []stall.Verification, one *stall.Verification) error {
	if len(vs) == 0 && one != nil {
		vs = []stall.Verification{*one}
	}
	var failed []string
	for _, v := range vs {
		if v.OK {
			continue
		}
		msg := fmt.Sprintf("%s: lost %d, torn %d, reordered %d, duplicate %d, foreign %d", v.File, v.Lost, v.Torn, v.Reordered, v.Duplicate, v.Foreign)
		if v.FirstBad != nil {
			msg += fmt.Sprintf("; first bad: slot %d (byte %d) %s: %s", v.FirstBad.Slot, v.FirstBad.Offset, v.FirstBad.Problem, v.FirstBad.Detail)
		}
		if v.Error != "" {
			msg += "; " + v.Error
		}
		failed = append(failed, msg)
	}
	if len(failed) == 0 {
		return nil
	}
	return fmt.Errorf("%w: verification: %s", errCheckFailed, strings.Join(failed, " | "))
}

func stallVerify(args []string, stdout, stderr io.Writer) error {
	fs := stallFlags(stall.ModeVerify, stderr)
	dir := fs.String("dir", "", "directory on the shared volume")
	ids := fs.String("writer-id", "", "writer id, or a comma-separated list")
	recordBytes := fs.Int("record-bytes", 0, "record size; 0 takes it from the writer's sidecar or file")
	acked := fs.Int64("acknowledged", -1, "records the writer acknowledged (one writer); default: its sidecar DIR/ID.ack.json, else inferred")
	removeOnOK := fs.Bool("remove-on-ok", false, "when every writer verifies, delete their files (and DIR if then empty); failed data stays for inspection")
	if err := parseStallFlags(fs, args); err != nil {
		return stallUsageError(stdout, stall.ModeVerify, err)
	}
	var list []string
	for _, id := range strings.Split(*ids, ",") {
		if id = strings.TrimSpace(id); id != "" {
			list = append(list, id)
		}
	}
	res, perr := stall.VerifyWriters(*dir, list, *recordBytes, *acked, nil)
	if *removeOnOK && perr == nil && verificationError(res.Verifications, res.Verification) == nil {
		removed, err := stall.RemoveFiles(*dir, list)
		res.Removed = removed
		if err != nil {
			res.RemoveError = err.Error()
		}
	}
	if err := probeout.WriteError(stdout, stall.ProbeName, res, perr); err != nil {
		return err
	}
	if perr != nil {
		return perr
	}
	return verificationError(res.Verifications, res.Verification)
}

func stallStop(args []string, stdout, stderr io.Writer) error {
	fs := stallFlags(stall.ModeStop, stderr)
	dir := fs.String("dir", "", "directory on the shared volume")
	id := fs.String("writer-id", "", "the writer to stop")
	stopFile := fs.String("stop-file", "", "the stop file (default DIR/ID.stop)")
	signalPID := fs.Int("signal-pid", 0, "send SIGTERM to this process (the writer: PID 1 in its container) instead of creating the stop file; "+
		"needs no I/O on the volume, so it stops a writer whose mount is hung")
	if err := parseStallFlags(fs, args); err != nil {
		return stallUsageError(stdout, stall.ModeStop, err)
	}
	if *signalPID > 0 {
		res := stall.Result{Mode: stall.ModeStop, Dir: *dir, WriterID: *id}
		if err := syscall.Kill(*signalPID, syscall.SIGTERM); err != nil {
			perr := probeout.Errorf(probeout.KindInternal, "SIGTERM to pid %d: %v (run this inside the writer's container)", *signalPID, err)
			_ = probeout.WriteError(stdout, stall.ProbeName, res, perr)
			return perr
		}
		return probeout.Write(stdout, stall.ProbeName, res)
	}
	path := *stopFile
	if path == "" {
		if *dir == "" {
			return stallUsageError(stdout, stall.ModeStop, errors.New("give --dir and --writer-id, or --stop-file"))
		}
		if err := stall.ValidateWriterID(*id); err != nil {
			return stallUsageError(stdout, stall.ModeStop, fmt.Errorf("--writer-id: %v", err))
		}
		path = stall.StopPath(*dir, *id)
	}
	res := stall.Result{Mode: stall.ModeStop, Dir: *dir, WriterID: *id, StopFile: path}
	if err := stall.Stop(path); err != nil {
		perr := probeout.Errorf(probeout.KindInternal, "create stop file %s: %v (is the volume mounted at --dir and writable?)", path, err)
		_ = probeout.WriteError(stdout, stall.ProbeName, res, perr)
		return perr
	}
	return probeout.Write(stdout, stall.ProbeName, res)
}
