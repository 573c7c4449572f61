package stall

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"sync"
	"time"

	"github.com/rdmasuite/rdmasuite/workloads/probeout"
)

// ValidateRead checks a reader's configuration (RecordBytes 0: from the
// file).
func ValidateRead(cfg Config) *probeout.Error {
	if cfg.Dir == "" {
		return probeout.Errorf(probeout.KindUsage, "--dir is required: the shared NFS volume's mount point in the pod")
	}
	if err := ValidateWriterID(cfg.WriterID); err != nil {
		return probeout.Errorf(probeout.KindUsage, "--writer-id (the writer to follow): %v", err)
	}
	if cfg.RecordBytes != 0 && cfg.RecordBytes < MinRecordBytes {
		return probeout.Errorf(probeout.KindUsage, "--record-bytes %d: at least %d, or 0 to take it from the file", cfg.RecordBytes, MinRecordBytes)
	}
	return validateTiming(cfg)
}

// Read follows writer cfg.WriterID's file while it grows, from any node:
// every poll it reopens the file (NFS close-to-open consistency: the open
// revalidates the cached size, which a long-lived descriptor would see
// only when the attribute cache expires, seconds later), reads the new
// complete records and verifies each as it lands: in order, CRC, seq ==
// slot. The ops of its timeline are those reads, so the gaps are the gaps
// between newly visible records: the stall as the peer node sees it.
//
// A record that looks torn or missing may still be landing; it is judged
// once the writer has written past it and it stayed bad for ReadSettle, or
// once the writer has finished (its sidecar exists). The reader stops like
// the writer, or when the writer has finished and every record it
// acknowledged was read (stoppedBy writer-done).
func Read(ctx context.Context, cfg Config) (Result, *probeout.Error) {
	cfg = cfg.withDefaults()
	path := RecordPath(cfg.Dir, cfg.WriterID)
	res := Result{Mode: ModeRead, WriterID: cfg.WriterID, Dir: cfg.Dir, File: path, StopFile: cfg.StopFile,
		RecordBytes: cfg.RecordBytes, IntervalMs: ms(cfg.Interval), StallThresholdMs: ms(cfg.StallThreshold),
		IOErrors: []IOError{}, Stalls: []Gap{}}
	if perr := ValidateRead(cfg); perr != nil {
		return res, perr
	}
	fsInfo := CollectFSInfo(cfg.Dir)
	res.FS = &fsInfo
	fmt.Fprintf(cfg.Log, "stall: following %s on %s %s (%s)\n", path, fsInfo.Type, fsInfo.Source, fsInfo.Options)
	r := &reader{cfg: &cfg, path: path, st: &runState{}}
	r.v = Verification{WriterID: cfg.WriterID, File: path, AcknowledgedFrom: AckFromReader}
	if cfg.RecordBytes > 0 {
		r.setRecordBytes(cfg.RecordBytes)
	}
	stopWatch := startWatch(&cfg)
	startedAt := cfg.Clock.Now()
	if cfg.Duration > 0 {
		r.deadline = startedAt.Add(cfg.Duration)
	}
	hung := supervise(ctx, &cfg, r.st, "read", func() { r.loop(ctx) })
	res.Watch = stopWatch()
	v := r.verification()
	res.RecordBytes = v.RecordBytes
	fillTimeline(&res, r.st.snapshot(), &cfg, startedAt)
	res.Verification = &v
	if hung {
		return res, probeout.Errorf(probeout.KindTimeout, "reading %s still hung %s after the stop (%s): the stall is ongoing on this node", path, cfg.StopGrace, res.StoppedBy)
	}
	return res, nil
}

type reader struct {
	cfg      *Config
	path     string
	st       *runState
	deadline time.Time

	// Loop goroutine only.
	chk          *checker
	buf          []byte
	next         uint64
	pending      bool
	pendingSlot  uint64
	pendingSince time.Time
	ack          *Ack
	ackPoll      int // the poll that found ack
	polls        int

	mu      sync.Mutex // v and visible: read by Read, perhaps while the loop hangs
	v       Verification
	visible uint64 // complete records in the file at the last poll
}

func (r *reader) setRecordBytes(rb int) {
	r.chk = newChecker(r.cfg.WriterID, rb)
	r.buf = make([]byte, rb)
	r.mu.Lock()
	r.v.RecordBytes = rb
	r.mu.Unlock()
}

func (r *reader) loop(ctx context.Context) {
	clk := r.cfg.Clock
	r.st.begin(0, clk.Now())
	for {
		if reason := stopReason(ctx, r.cfg, r.st, r.deadline); reason != "" {
			r.st.finish(reason, clk.Now())
			return
		}
		if r.poll() {
			r.st.idle()
			r.st.finish(StoppedByWriterDone, clk.Now())
			return
		}
		clk.Sleep(r.cfg.Interval)
	}
}

// poll reads and judges what became visible; true when the writer has
// finished and everything it acknowledged has been judged.
func (r *reader) poll() (done bool) {
	clk := r.cfg.Clock
	r.polls++
	f, err := r.cfg.Open(r.path, OpenRead)
	if err != nil {
		if !errors.Is(err, os.ErrNotExist) { // not yet created is no error
			r.st.fail(IOError{At: clk.Now().UTC(), Seq: r.next, Op: "open", Error: err.Error()})
		}
		return false
	}
	defer f.Close()
	if r.chk == nil {
		rb := RecordBytesFromHeader(f)
		if rb < MinRecordBytes {
			return false // no complete header yet
		}
		r.setRecordBytes(rb)
	}
	size, err := f.Size()
	if err != nil {
		r.st.fail(IOError{At: clk.Now().UTC(), Seq: r.next, Op: "stat", Error: err.Error()})
		return false
	}
	rb := int64(len(r.buf))
	visible := uint64(size / rb)
	r.mu.Lock()
	r.visible, r.v.FileBytes = visible, size
	r.mu.Unlock()
	for r.next < visible {
		start := clk.Now()
		n, err := f.ReadAt(r.buf, int64(r.next)*rb)
		end := clk.Now()
		if err != nil {
			r.st.fail(IOError{At: end.UTC(), Seq: r.next, Op: "read", Error: err.Error()})
			return false
		}
		b := r.chk.classify(r.next, r.buf[:n])
		if b.Problem == Lost || b.Problem == Torn {
			if !r.pending || r.pendingSlot != r.next {
				r.pending, r.pendingSlot, r.pendingSince = true, r.next, end
			}
			movedOn := visible > r.next+1 && end.Sub(r.pendingSince) >= r.cfg.ReadSettle
			if !movedOn && !r.writerDone() {
				break // may still be landing: look again next poll
			}
		}
		r.pending = false
		r.mu.Lock()
		r.v.tally(b, math.MaxInt64)
		r.mu.Unlock()
		if b.Problem == "" && r.st.complete(Op{Seq: r.next, Records: 1, Start: start, End: end}) {
			fmt.Fprintln(r.cfg.Log, SteadyLine)
		}
		r.next++
		r.st.begin(r.next, end)
	}
	if r.next < visible || !r.writerDone() {
		return false
	}
	if acked := uint64(r.ack.Acknowledged); r.next < acked {
		// The writer acknowledged records past the end of the file.
		r.mu.Lock()
		r.v.Checked += int64(acked - r.next)
		r.v.Lost += int64(acked - r.next)
		if r.v.FirstBad == nil {
			r.v.FirstBad = &BadRecord{Slot: r.next, Seq: r.next, Offset: int64(r.next) * rb, Problem: Lost,
				Detail: fmt.Sprintf("beyond end of file (%d bytes): the writer acknowledged %d records", size, acked)}
		}
		r.mu.Unlock()
		r.next = acked
	}
	return true
}

// writerDone reads the writer's sidecar until it exists. It counts from
// the poll after the one that found it: only a file opened after the
// sidecar was seen is sure to show everything the writer acknowledged.
func (r *reader) writerDone() bool {
	if r.ack == nil {
		if a, err := ReadAck(r.cfg.Dir, r.cfg.WriterID); err == nil {
			r.ack, r.ackPoll = &a, r.polls
		}
	}
	return r.ack != nil && r.ackPoll < r.polls
}

// verification is what the reader judged; records visible but not yet
// judged at the stop are the unacknowledged tail.
func (r *reader) verification() Verification {
	r.mu.Lock()
	defer r.mu.Unlock()
	v := r.v
	v.Acknowledged = v.Checked
	if r.visible > uint64(v.Checked) {
		tail := int64(r.visible) - v.Checked
		v.Checked += tail
		v.UnacknowledgedTail += tail
	}
	v.finish()
	return v
}
