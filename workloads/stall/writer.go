package stall

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/rdmasuite/rdmasuite/workloads/probeout"
)

// finalSyncTries bounds the fsync/fdatasync at the end of a write run.
const finalSyncTries = 3

// ValidateWrite checks a writer's configuration; the error is a usage
// error naming the fix.
func ValidateWrite(cfg Config) *probeout.Error {
	if cfg.Dir == "" {
		return probeout.Errorf(probeout.KindUsage, "--dir is required: the shared NFS volume's mount point in the pod")
	}
	if err := ValidateWriterID(cfg.WriterID); err != nil {
		return probeout.Errorf(probeout.KindUsage, "--writer-id: %v", err)
	}
	if cfg.RecordBytes < MinRecordBytes {
		return probeout.Errorf(probeout.KindUsage, "--record-bytes %d: at least %d (the header)", cfg.RecordBytes, MinRecordBytes)
	}
	if cfg.RecordBytes > MaxRecordBytes {
		return probeout.Errorf(probeout.KindUsage, "--record-bytes %d: at most %d (64 MiB)", cfg.RecordBytes, MaxRecordBytes)
	}
	if cfg.Durability.Kind == DurabilityDirect && cfg.RecordBytes%DirectAlign != 0 {
		return probeout.Errorf(probeout.KindUsage, "--record-bytes %d with --durability direct: O_DIRECT needs a multiple of %d (use --record-bytes %d, or --durability fsync)",
			cfg.RecordBytes, DirectAlign, (cfg.RecordBytes+DirectAlign-1)/DirectAlign*DirectAlign)
	}
	return validateTiming(cfg)
}

func validateTiming(cfg Config) *probeout.Error {
	if cfg.Interval < 0 || cfg.Duration < 0 {
		return probeout.Errorf(probeout.KindUsage, "--interval and --duration must not be negative")
	}
	if cfg.StallThreshold <= cfg.Interval {
		return probeout.Errorf(probeout.KindUsage, "--stall-threshold %s must be longer than --interval %s: every gap between ops includes the interval",
			cfg.StallThreshold, cfg.Interval)
	}
	return nil
}

// Write runs the writer until the stop file appears, ctx is cancelled (a
// signal) or cfg.Duration elapses, then analyses the timeline, writes the
// sidecar and verifies its own file. The error is set when the probe could
// not do its job (bad configuration, directory not writable, I/O still
// hung at the stop); a failed verification is in the result, not an error.
func Write(ctx context.Context, cfg Config) (Result, *probeout.Error) {
	cfg = cfg.withDefaults()
	path := RecordPath(cfg.Dir, cfg.WriterID)
	res := Result{Mode: ModeWrite, WriterID: cfg.WriterID, Dir: cfg.Dir, File: path, StopFile: cfg.StopFile,
		RecordBytes: cfg.RecordBytes, Durability: cfg.Durability.String(), IntervalMs: ms(cfg.Interval),
		StallThresholdMs: ms(cfg.StallThreshold), IOErrors: []IOError{}, Stalls: []Gap{}}
	if perr := ValidateWrite(cfg); perr != nil {
		return res, perr
	}
	fsInfo := CollectFSInfo(cfg.Dir)
	res.FS = &fsInfo
	if cfg.Exists(cfg.StopFile) {
		return res, probeout.Errorf(probeout.KindUsage, "stop file %s already exists: remove it (a previous run's) before starting a writer", cfg.StopFile)
	}
	mode := OpenWrite
	if cfg.Durability.Kind == DurabilityDirect {
		mode = OpenWriteDirect
	}
	f, err := cfg.Open(path, mode)
	if err != nil {
		res.StoppedBy = StoppedByError
		fix := "--dir must be a writable directory on the shared volume (is the PVC mounted there, and may this uid write to it? set fsGroup or runAsUser)"
		if mode == OpenWriteDirect {
			fix += "; a filesystem without O_DIRECT (tmpfs) needs --durability fsync"
		}
		return res, probeout.Errorf(probeout.KindInternal, "cannot create %s: %v: %s", path, err, fix)
	}
	fmt.Fprintf(cfg.Log, "stall: writing %s on %s %s (%s), %d-byte records, %s, every %s; stop: rdmaprobe stall stop --stop-file %s\n",
		path, fsInfo.Type, fsInfo.Source, fsInfo.Options, cfg.RecordBytes, cfg.Durability, cfg.Interval, cfg.StopFile)

	w := &writer{cfg: &cfg, f: f, st: &runState{}}
	w.buf = make([]byte, cfg.Durability.batch()*cfg.RecordBytes)
	if mode == OpenWriteDirect {
		w.buf = alignedBuffer(cfg.RecordBytes, DirectAlign)
	}
	stopWatch := startWatch(&cfg)
	startedAt := cfg.Clock.Now()
	if cfg.Duration > 0 {
		w.deadline = startedAt.Add(cfg.Duration)
	}
	hung := supervise(ctx, &cfg, w.st, "write", func() { w.loop(ctx) })
	res.Watch = stopWatch()
	snap := w.st.snapshot()
	fillTimeline(&res, snap, &cfg, startedAt)
	if hung {
		// The file is left alone: fsync, close and read would block too.
		res.Verification = &Verification{WriterID: cfg.WriterID, File: path, RecordBytes: cfg.RecordBytes,
			Acknowledged: snap.acked, AcknowledgedFrom: AckFromWriter,
			Error: fmt.Sprintf("not run: I/O still hung at the stop (seq %d in flight); run `rdmaprobe stall verify --dir %s --writer-id %s --acknowledged %d` once the mount recovers",
				inFlightSeq(snap), cfg.Dir, cfg.WriterID, snap.acked)}
		return res, probeout.Errorf(probeout.KindTimeout, "I/O on %s still hung %s after the stop (%s): the stall is ongoing; verification not run", path, cfg.StopGrace, snap.stoppedBy)
	}

	w.finalSync()
	if err := f.Close(); err != nil {
		w.st.fail(IOError{At: cfg.Clock.Now().UTC(), Seq: uint64(snap.acked), Op: "close", Error: err.Error()})
	}
	if err := writeAck(cfg.Dir, Ack{WriterID: cfg.WriterID, File: path, Acknowledged: snap.acked, RecordBytes: cfg.RecordBytes,
		Durability: cfg.Durability.String(), EndedAt: snap.stoppedAt.UTC()}); err != nil {
		w.st.fail(IOError{At: cfg.Clock.Now().UTC(), Seq: uint64(snap.acked), Op: "sidecar", Error: err.Error()})
	}
	end := w.st.snapshot()
	res.IOErrors, res.IOErrorCount = end.ioErrors, end.ioErrorCount

	v := verifyPath(cfg.Open, path, cfg.WriterID, cfg.RecordBytes, snap.acked, AckFromWriter)
	res.Verification = &v
	return res, nil
}

func inFlightSeq(s snapshot) uint64 {
	if s.inFlight != nil {
		return s.inFlight.Seq
	}
	return uint64(s.acked)
}

type writer struct {
	cfg      *Config
	f        File
	st       *runState
	buf      []byte
	deadline time.Time
}

func (w *writer) record(i int) []byte {
	rb := w.cfg.RecordBytes
	return w.buf[i*rb : (i+1)*rb]
}

func (w *writer) loop(ctx context.Context) {
	clk := w.cfg.Clock
	batch := w.cfg.Durability.batch()
	var seq uint64
	for {
		// The stop-file stat is I/O on the same mount: while it hangs, the
		// next record counts as in flight.
		w.st.begin(seq, clk.Now())
		if r := stopReason(ctx, w.cfg, w.st, w.deadline); r != "" {
			w.st.idle()
			w.st.finish(r, clk.Now())
			return
		}
		start := clk.Now()
		w.st.begin(seq, start)
		if r := w.writeBatch(ctx, seq, batch); r != "" {
			// Stopped while retrying: the op stays in flight.
			w.st.finish(r, clk.Now())
			return
		}
		if w.st.complete(Op{Seq: seq, Records: batch, Start: start, End: clk.Now()}) {
			fmt.Fprintln(w.cfg.Log, SteadyLine)
		}
		seq += uint64(batch)
		clk.Sleep(w.cfg.Interval)
	}
}

// writeBatch writes records seq..seq+n-1 and makes them durable, retrying
// every failed call after a pause. It returns a stop reason when asked to
// stop before it succeeded, "" once the records are acknowledged.
func (w *writer) writeBatch(ctx context.Context, seq uint64, n int) string {
	clk := w.cfg.Clock
	rb := int64(w.cfg.RecordBytes)
	for i := range n {
		EncodeRecord(w.record(i), w.cfg.WriterID, seq+uint64(i), clk.Now())
	}
	retry := func(e IOError) string {
		w.st.fail(e)
		clk.Sleep(w.cfg.RetryPause)
		return stopReason(ctx, w.cfg, w.st, w.deadline)
	}
	for {
		for i := 0; i < n; {
			k := seq + uint64(i)
			written, err := w.f.WriteAt(w.record(i), int64(k)*rb)
			if err == nil && written < int(rb) {
				err = fmt.Errorf("%w: %d of %d bytes", io.ErrShortWrite, written, rb)
			}
			if err != nil {
				if r := retry(IOError{At: clk.Now().UTC(), Seq: k, Op: "write", Error: err.Error()}); r != "" {
					return r
				}
				continue // the same record again
			}
			i++
		}
		if w.cfg.Durability.Kind == DurabilityDirect {
			return ""
		}
		err := w.f.Sync()
		if err == nil {
			return ""
		}
		// After a failed fsync the kernel may have dropped the dirty
		// pages: write the whole batch again, then fsync again.
		if r := retry(IOError{At: clk.Now().UTC(), Seq: seq, Op: "fsync", Error: err.Error()}); r != "" {
			return r
		}
	}
}

// finalSync is the fdatasync that ends a direct run (and a last fsync
// otherwise), tried a few times; failures are I/O errors in the result.
func (w *writer) finalSync() {
	clk := w.cfg.Clock
	for try := 0; try < finalSyncTries; try++ {
		err := w.f.Sync()
		if err == nil {
			return
		}
		w.st.fail(IOError{At: clk.Now().UTC(), Seq: uint64(w.st.snapshot().acked), Op: "final-sync", Error: err.Error()})
		clk.Sleep(w.cfg.RetryPause)
	}
}

// verifyPath opens and verifies one writer's file.
func verifyPath(open Opener, path, writerID string, recordBytes int, acked int64, ackFrom string) Verification {
	f, err := open(path, OpenRead)
	if err != nil {
		v := Verification{WriterID: writerID, File: path, RecordBytes: recordBytes, Acknowledged: acked, AcknowledgedFrom: ackFrom}
		v.Error = fmt.Sprintf("%v (has writer %s run, on the volume mounted at this --dir?)", err, writerID)
		if errors.Is(err, os.ErrNotExist) && acked > 0 {
			v.Lost, v.Checked = acked, acked
			v.FirstBad = &BadRecord{Problem: Lost, Detail: fmt.Sprintf("the file does not exist: %d acknowledged records missing", acked)}
		}
		v.finish()
		return v
	}
	defer f.Close()
	return VerifyFile(f, path, writerID, recordBytes, acked, ackFrom)
}
