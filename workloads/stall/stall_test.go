package stall

import (
	"bytes"
	"context"
	"encoding/binary"
	"math"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rdmasuite/rdmasuite/workloads/probeout"
)

const testRB = 256

// opTime is one fault-free op on the fake clock: 1 ms pwrite, 2 ms fsync,
// then the 10 ms interval.
const (
	opLatency = 3 * time.Millisecond
	opPeriod  = 13 * time.Millisecond
)

func fakeConfig(t *testing.T, ffs *faultFS, records int) Config {
	t.Helper()
	return Config{
		Dir: t.TempDir(), WriterID: "w1", RecordBytes: testRB,
		Durability: Durability{Kind: DurabilityFsync, Every: 1},
		Interval:   10 * time.Millisecond, Duration: time.Duration(records) * opPeriod,
		StallThreshold: time.Second, Clock: ffs.clock, Open: ffs.open,
	}
}

func runWriter(t *testing.T, cfg Config) Result {
	t.Helper()
	res, perr := Write(context.Background(), cfg)
	if perr != nil {
		t.Fatalf("Write: %v", perr)
	}
	if res.Verification == nil {
		t.Fatal("no verification")
	}
	return res
}

func TestRecordRoundTrip(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	rec := make([]byte, 4096)
	EncodeRecord(rec, "node-a", 812, at)
	h, detail := decodeHeader(rec, make([]byte, 4096))
	if detail != "" {
		t.Fatal(detail)
	}
	if h.WriterID != "node-a" || h.Seq != 812 || !h.WrittenAt.Equal(at) || h.PayloadLen != 4096-HeaderBytes {
		t.Fatalf("%+v", h)
	}
	other := make([]byte, 4096)
	EncodeRecord(other, "node-a", 813, at)
	if bytes.Equal(rec[HeaderBytes:], other[HeaderBytes:]) {
		t.Fatal("seq 812 and 813 generate the same payload")
	}
	EncodeRecord(other, "node-b", 812, at)
	if bytes.Equal(rec[HeaderBytes:], other[HeaderBytes:]) {
		t.Fatal("node-a and node-b generate the same payload")
	}
	// A minimum-size record has no payload and still verifies.
	small := make([]byte, MinRecordBytes)
	EncodeRecord(small, "x", 1, at)
	if _, d := decodeHeader(small, nil); d != "" {
		t.Fatal(d)
	}
	// Any flipped bit is caught.
	for _, off := range []int{0, 5, 9, 41, 50, 57, 62, 100, 4095} {
		bad := append([]byte(nil), rec...)
		bad[off] ^= 0x10
		if _, d := decodeHeader(bad, make([]byte, 4096)); d == "" {
			t.Errorf("flip at byte %d not detected", off)
		}
	}
}

func TestCleanRunVerifies(t *testing.T) {
	ffs := newFaultFS(testRB, newFakeClock())
	res := runWriter(t, fakeConfig(t, ffs, 120))
	v := res.Verification
	if !v.OK || v.Checked != 120 || v.Valid != 120 || v.UnacknowledgedTail != 0 || v.FirstBad != nil {
		t.Fatalf("%+v", v)
	}
	if res.Acknowledged != 120 || res.Ops != 120 || res.StoppedBy != StoppedByDuration || res.IOErrorCount != 0 {
		t.Fatalf("ack %d ops %d stopped %s errors %d", res.Acknowledged, res.Ops, res.StoppedBy, res.IOErrorCount)
	}
	if res.SteadyAt.IsZero() || res.LongestGap == nil || res.LongestGap.Ms != 13 || len(res.Stalls) != 0 || res.StallOngoing {
		t.Fatalf("steady %v gap %+v stalls %v", res.SteadyAt, res.LongestGap, res.Stalls)
	}
	if res.Latency.P50 != 3 || res.Latency.P99 != 3 || res.Latency.Ops != 120 {
		t.Fatalf("latency %+v", res.Latency)
	}
	ack, err := ReadAck(res.Dir, "w1")
	if err != nil || ack.Acknowledged != 120 || ack.RecordBytes != testRB {
		t.Fatalf("sidecar %+v %v", ack, err)
	}
}

func TestVerifierCatchesInjectedFaults(t *testing.T) {
	u := func(v uint64) *uint64 { return &v }
	for _, tc := range []struct {
		name     string
		slot     uint64
		kind     string
		problem  Problem
		firstBad uint64
		foundSeq *uint64
		detail   string
		count    func(Verification) int64
		want     int64
	}{
		{"lost write", 37, faultLost, Lost, 37, nil, "all 256 bytes zero", func(v Verification) int64 { return v.Lost }, 1},
		{"lost last write", 59, faultLost, Lost, 59, nil, "beyond end of file", func(v Verification) int64 { return v.Lost }, 1},
		{"torn write", 37, faultTorn, Torn, 37, nil, "crc32c 0x", func(v Verification) int64 { return v.Torn }, 1},
		{"duplicate", 37, faultDuplicate, Duplicate, 38, u(37), "slot 37 already holds it", func(v Verification) int64 { return v.Duplicate }, 1},
		{"reordered", 37, faultReorder, Reordered, 37, u(38), "slot 37 holds seq 38", func(v Verification) int64 { return v.Reordered }, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ffs := newFaultFS(testRB, newFakeClock()).inject(tc.slot, fault{kind: tc.kind})
			v := runWriter(t, fakeConfig(t, ffs, 60)).Verification
			if v.OK {
				t.Fatalf("verified ok: %+v", v)
			}
			if got := tc.count(*v); got != tc.want {
				t.Errorf("%s count %d, want %d (%+v)", tc.problem, got, tc.want, v)
			}
			if bad := v.Lost + v.Torn + v.Reordered + v.Duplicate + v.Foreign; bad != tc.want {
				t.Errorf("%d bad slots, want %d: %+v", bad, tc.want, v)
			}
			fb := v.FirstBad
			if fb == nil || fb.Problem != tc.problem || fb.Slot != tc.firstBad || fb.Offset != int64(tc.firstBad)*testRB {
				t.Fatalf("first bad %+v", fb)
			}
			if (fb.FoundSeq == nil) != (tc.foundSeq == nil) || (fb.FoundSeq != nil && *fb.FoundSeq != *tc.foundSeq) {
				t.Errorf("found seq %v, want %v", fb.FoundSeq, tc.foundSeq)
			}
			if !strings.Contains(fb.Detail, tc.detail) {
				t.Errorf("detail %q lacks %q", fb.Detail, tc.detail)
			}
		})
	}
}

// handFile builds a file of n clean records of writer w1.
func handFile(n int) *memFile {
	m := &memFile{}
	rec := make([]byte, testRB)
	for i := range n {
		EncodeRecord(rec, "w1", uint64(i), time.Unix(1700000000, 0))
		m.WriteAt(rec, int64(i)*testRB)
	}
	return m
}

func TestVerifierForeignAndForged(t *testing.T) {
	m := handFile(20)
	rec := make([]byte, testRB)
	EncodeRecord(rec, "w2", 7, time.Unix(1700000000, 0))
	m.WriteAt(rec, 7*testRB)
	v := VerifyFile(m, "f", "w1", testRB, 20, AckFromFlag)
	if v.OK || v.Foreign != 1 || v.FirstBad.Slot != 7 || v.FirstBad.Problem != Foreign || !strings.Contains(v.FirstBad.Detail, `"w2"`) {
		t.Fatalf("foreign: %+v %+v", v, v.FirstBad)
	}

	// Record 11's header with record 12's payload and a recomputed CRC: the
	// CRC alone would pass it.
	m = handFile(20)
	EncodeRecord(rec, "w1", 12, time.Unix(1700000000, 0))
	binary.LittleEndian.PutUint64(rec[offSeq:], 11)
	binary.LittleEndian.PutUint32(rec[offCRC:], recordCRC(rec))
	m.WriteAt(rec, 11*testRB)
	v = VerifyFile(m, "f", "w1", testRB, 20, AckFromFlag)
	if v.OK || v.Torn != 1 || v.FirstBad.Slot != 11 || !strings.Contains(v.FirstBad.Detail, "payload differs") {
		t.Fatalf("forged: %+v %+v", v, v.FirstBad)
	}

	// Bad magic over data, and a wrong record size.
	m = handFile(20)
	m.WriteAt([]byte("XXXX"), 3*testRB)
	v = VerifyFile(m, "f", "w1", testRB, 20, AckFromFlag)
	if v.OK || v.Torn != 1 || v.FirstBad.Slot != 3 || !strings.Contains(v.FirstBad.Detail, "bad magic") {
		t.Fatalf("magic: %+v %+v", v, v.FirstBad)
	}
	v = VerifyFile(handFile(20), "f", "w1", 2*testRB, 10, AckFromFlag)
	if v.OK || !strings.Contains(v.FirstBad.Detail, "--record-bytes 256") {
		t.Fatalf("record size: %+v %+v", v, v.FirstBad)
	}
}

func TestVerifierTail(t *testing.T) {
	// 12 slots written, 10 acknowledged; slot 10 torn, slot 11 a hole: the
	// unacknowledged tail, no failure.
	m := handFile(12)
	m.WriteAt(make([]byte, testRB), 11*testRB)
	m.WriteAt(make([]byte, testRB/2), 10*testRB+testRB/2)
	m.WriteAt(make([]byte, 10), 12*testRB) // and a short partial 13th
	v := VerifyFile(m, "f", "w1", testRB, 10, AckFromSidecar)
	if !v.OK || v.Checked != 13 || v.UnacknowledgedTail != 3 || v.Valid != 10 {
		t.Fatalf("%+v", v)
	}
	// A file cut inside an acknowledged record: torn, however short.
	for _, cut := range []int64{9*testRB + 10, 9*testRB + 100} {
		m = handFile(10)
		m.data = m.data[:cut]
		v = VerifyFile(m, "f", "w1", testRB, 10, AckFromFlag)
		if v.OK || v.Torn != 1 || v.FirstBad.Slot != 9 || !strings.Contains(v.FirstBad.Detail, "short record") {
			t.Fatalf("cut at %d: %+v %+v", cut, v, v.FirstBad)
		}
	}
	// Acknowledged records beyond the end of file are lost.
	v = VerifyFile(handFile(5), "f", "w1", testRB, 8, AckFromFlag)
	if v.OK || v.Lost != 3 || v.Checked != 8 || v.FirstBad.Slot != 5 || !strings.Contains(v.FirstBad.Detail, "beyond end of file") {
		t.Fatalf("%+v %+v", v, v.FirstBad)
	}
	// Unknown count: a hole before the last valid record is lost, a
	// trailing hole is tail.
	m = handFile(10)
	m.WriteAt(make([]byte, testRB), 4*testRB)
	m.WriteAt(make([]byte, testRB), 9*testRB)
	v = VerifyFile(m, "f", "w1", testRB, -1, "")
	if v.OK || v.Acknowledged != 9 || v.AcknowledgedFrom != AckFromInferred || v.Lost != 1 || v.FirstBad.Slot != 4 || v.UnacknowledgedTail != 1 {
		t.Fatalf("%+v %+v", v, v.FirstBad)
	}
	// A misplaced record in the tail still fails.
	m = handFile(10)
	rec := make([]byte, testRB)
	EncodeRecord(rec, "w1", 3, time.Unix(1700000000, 0))
	m.WriteAt(rec, 9*testRB)
	if v = VerifyFile(m, "f", "w1", testRB, 8, AckFromFlag); v.OK || v.Duplicate != 1 || v.FirstBad.Slot != 9 {
		t.Fatalf("%+v %+v", v, v.FirstBad)
	}
}

func TestWriterFindsInjectedStall(t *testing.T) {
	clock := newFakeClock()
	t0 := clock.Now()
	ffs := newFaultFS(testRB, clock).inject(100, fault{kind: faultStall, stall: 27 * time.Second})
	cfg := fakeConfig(t, ffs, 200)
	cfg.Duration += 27 * time.Second
	res := runWriter(t, cfg)
	if !res.Verification.OK || res.Acknowledged != 200 {
		t.Fatalf("ack %d verification %+v", res.Acknowledged, res.Verification)
	}
	g := res.LongestGap
	// Op 99 ended at 99 periods + its latency; op 100 started a period
	// after op 99 did, stalled 27 s and ended a latency later.
	wantStart := t0.Add(99*opPeriod + opLatency)
	wantEnd := t0.Add(100*opPeriod + 27*time.Second + opLatency)
	if g == nil || g.Ms != 27013 || !g.Start.Equal(wantStart) || !g.End.Equal(wantEnd) || g.InFlightSeq != 100 || g.Ongoing {
		t.Fatalf("longest gap %+v, want 27013 ms from %s to %s seq 100", g, wantStart, wantEnd)
	}
	if len(res.Stalls) != 1 || res.Stalls[0] != *g || res.StallCount != 1 || res.StallOngoing {
		t.Fatalf("stalls %+v", res.Stalls)
	}
	// The stalled op is not in the steady-state latency.
	if res.Latency.Max != 3 || res.Latency.P99 != 3 || res.Latency.Ops != 199 {
		t.Fatalf("latency %+v", res.Latency)
	}
}

func TestWriterRetriesIOErrors(t *testing.T) {
	ffs := newFaultFS(testRB, newFakeClock()).inject(20, fault{kind: faultEIO, times: 3})
	cfg := fakeConfig(t, ffs, 60)
	cfg.RetryPause = 400 * time.Millisecond
	cfg.Duration += 3 * cfg.RetryPause
	res := runWriter(t, cfg)
	if res.IOErrorCount != 3 || len(res.IOErrors) != 3 || res.IOErrors[0].Seq != 20 || res.IOErrors[0].Op != "write" ||
		!strings.Contains(res.IOErrors[0].Error, "input/output error") {
		t.Fatalf("io errors %d %+v", res.IOErrorCount, res.IOErrors)
	}
	if !res.Verification.OK || res.Acknowledged != 60 {
		t.Fatalf("ack %d %+v", res.Acknowledged, res.Verification)
	}
	// Three retries of 400 ms make one 1.2 s gap: a stall over 1 s.
	if res.StallCount != 1 || res.LongestGap.InFlightSeq != 20 || res.LongestGap.Ms < 1200 {
		t.Fatalf("gap %+v stalls %d", res.LongestGap, res.StallCount)
	}
}

// failSyncAfter makes the fsync of record slot fail once, dropping the
// record's dirty data.
type failSyncAfter struct {
	*faultFS
	slot uint64
}

func (f failSyncAfter) open(path string, mode OpenMode) (File, error) {
	h, err := f.faultFS.open(path, mode)
	if mode == OpenRead {
		return h, err
	}
	return &syncTrigger{File: h, f: f}, err
}

type syncTrigger struct {
	File
	f     failSyncAfter
	last  int64
	fired bool
}

func (s *syncTrigger) WriteAt(p []byte, off int64) (int, error) {
	s.last = off
	return s.File.WriteAt(p, off)
}

func (s *syncTrigger) Sync() error {
	if !s.fired && s.last == int64(s.f.slot)*testRB {
		s.f.mu.Lock()
		s.f.syncErrs, s.f.dropOnSyncErr = 1, true
		s.f.mu.Unlock()
		s.fired = true
	}
	return s.File.Sync()
}

func TestWriterRewritesAfterFailedFsync(t *testing.T) {
	ffs := newFaultFS(testRB, newFakeClock())
	cfg := fakeConfig(t, ffs, 60)
	cfg.Open = failSyncAfter{faultFS: ffs, slot: 20}.open
	cfg.Duration += DefaultRetryPause + 3*time.Millisecond // one failed fsync, a pause, the batch again
	res := runWriter(t, cfg)
	if res.IOErrorCount != 1 || res.IOErrors[0].Op != "fsync" || res.IOErrors[0].Seq != 20 {
		t.Fatalf("%+v", res.IOErrors)
	}
	// Record 20's data was dropped with the failed fsync: only writing it
	// again keeps it.
	if !res.Verification.OK || res.Acknowledged != 60 {
		t.Fatalf("ack %d %+v %+v", res.Acknowledged, res.Verification, res.Verification.FirstBad)
	}
}

func TestDirectFinalSyncErrorsRecorded(t *testing.T) {
	ffs := newFaultFS(testRB*16, newFakeClock())
	ffs.syncErrs = 2
	cfg := fakeConfig(t, ffs, 30)
	cfg.RecordBytes = testRB * 16
	cfg.Durability = Durability{Kind: DurabilityDirect, Every: 1}
	cfg.Duration = 30 * 11 * time.Millisecond // 1 ms pwrite + 10 ms, no fsync per record
	res := runWriter(t, cfg)
	if res.Acknowledged != 30 || res.IOErrorCount != 2 || res.IOErrors[0].Op != "final-sync" || res.IOErrors[1].Op != "final-sync" || !res.Verification.OK {
		t.Fatalf("ack %d errors %+v %+v", res.Acknowledged, res.IOErrors, res.Verification)
	}
	if res.Latency.Max != 1 {
		t.Fatalf("direct op latency %+v", res.Latency)
	}
}

func TestWriterRetriesShortWrite(t *testing.T) {
	ffs := newFaultFS(testRB, newFakeClock()).inject(7, fault{kind: faultShort})
	cfg := fakeConfig(t, ffs, 20)
	cfg.Duration += DefaultRetryPause + time.Millisecond
	res := runWriter(t, cfg)
	if res.IOErrorCount != 1 || !strings.Contains(res.IOErrors[0].Error, "short write") || res.IOErrors[0].Seq != 7 || !res.Verification.OK || res.Acknowledged != 20 {
		t.Fatalf("%+v %+v", res.IOErrors, res.Verification)
	}
}

func TestWriterStoppedWhileFailing(t *testing.T) {
	// A soft mount that fails every write from record 30 on: the run
	// stops at the cap with record 30 in flight: the stall is ongoing, and
	// the 30 acknowledged records verify.
	ffs := newFaultFS(testRB, newFakeClock()).inject(30, fault{kind: faultEIO, times: -1})
	cfg := fakeConfig(t, ffs, 30)
	cfg.Duration += 15 * time.Second
	res := runWriter(t, cfg)
	if res.Acknowledged != 30 || !res.StallOngoing || res.LongestGap == nil || !res.LongestGap.Ongoing || res.LongestGap.InFlightSeq != 30 {
		t.Fatalf("ack %d ongoing %v gap %+v", res.Acknowledged, res.StallOngoing, res.LongestGap)
	}
	// ~148 failed attempts, 100 ms apart; the list is capped, the count is not.
	if res.LongestGap.Ms < 15000 || res.IOErrorCount < 140 || len(res.IOErrors) != MaxListed {
		t.Fatalf("gap %+v errors %d listed %d", res.LongestGap, res.IOErrorCount, len(res.IOErrors))
	}
	if !res.Verification.OK || res.Verification.Checked != 30 {
		t.Fatalf("%+v", res.Verification)
	}
}

func TestWriterHungAtStop(t *testing.T) {
	ffs := newFaultFS(testRB, nil)
	hang := fault{kind: faultHang, release: make(chan struct{}), reached: make(chan struct{})}
	ffs.inject(30, hang)
	defer close(hang.release)
	ctx, cancel := context.WithCancel(context.Background())
	cfg := Config{Dir: t.TempDir(), WriterID: "w1", RecordBytes: testRB, Interval: time.Millisecond,
		Duration: time.Minute, StallThreshold: 50 * time.Millisecond, StopGrace: 100 * time.Millisecond, Open: ffs.open}
	go func() {
		<-hang.reached
		time.Sleep(150 * time.Millisecond)
		cancel()
	}()
	res, perr := Write(ctx, cfg)
	if perr == nil || perr.Kind != probeout.KindTimeout {
		t.Fatalf("error %v", perr)
	}
	if res.StoppedBy != StoppedBySignal || res.Acknowledged != 30 || !res.StallOngoing {
		t.Fatalf("stopped %s ack %d ongoing %v", res.StoppedBy, res.Acknowledged, res.StallOngoing)
	}
	if g := res.LongestGap; g == nil || !g.Ongoing || g.InFlightSeq != 30 || g.Ms < 250 || !g.End.Equal(res.EndedAt) {
		t.Fatalf("gap %+v ended %s", g, res.EndedAt)
	}
	if v := res.Verification; v == nil || v.OK || !strings.Contains(v.Error, "not run") || ffs.readOpen != 0 {
		t.Fatalf("verification %+v (file opened for reading %d times)", v, ffs.readOpen)
	}
}

// TestWriterHungInStopFileStat: the stop file lives on the stalled mount,
// so the loop's stat of it hangs too; that counts as the next record in
// flight.
func TestWriterHungInStopFileStat(t *testing.T) {
	ffs := newFaultFS(testRB, nil)
	release := make(chan struct{})
	defer close(release)
	var calls atomic.Int32
	ctx, cancel := context.WithCancel(context.Background())
	cfg := Config{Dir: t.TempDir(), WriterID: "w1", RecordBytes: testRB, Interval: time.Millisecond,
		Duration: time.Minute, StallThreshold: 50 * time.Millisecond, StopGrace: 100 * time.Millisecond, Open: ffs.open}
	cfg.Exists = func(string) bool {
		if calls.Add(1) == 20 {
			time.AfterFunc(150*time.Millisecond, cancel)
		}
		if calls.Load() >= 20 {
			<-release
		}
		return false
	}
	res, perr := Write(ctx, cfg)
	if perr == nil || perr.Kind != probeout.KindTimeout {
		t.Fatalf("error %v", perr)
	}
	if g := res.LongestGap; !res.StallOngoing || g == nil || !g.Ongoing || g.InFlightSeq != uint64(res.Acknowledged) || g.Ms < 250 {
		t.Fatalf("ack %d gap %+v", res.Acknowledged, g)
	}
}

func TestFsyncEveryMeasuresBatches(t *testing.T) {
	ffs := newFaultFS(testRB, newFakeClock()).inject(52, fault{kind: faultStall, stall: 3 * time.Second})
	cfg := fakeConfig(t, ffs, 0)
	cfg.Durability = Durability{Kind: DurabilityFsyncEvery, Every: 5}
	// A batch: 5 × 1 ms writes + 2 ms fsync, then 10 ms.
	cfg.Duration = 20*17*time.Millisecond + 3*time.Second
	res := runWriter(t, cfg)
	if res.Acknowledged != 100 || res.Ops != 20 || res.Durability != "fsync-every=5" || !res.Verification.OK {
		t.Fatalf("ack %d ops %d %s %+v", res.Acknowledged, res.Ops, res.Durability, res.Verification)
	}
	if g := res.LongestGap; g.InFlightSeq != 50 || g.Ms != 3017 || res.Latency.Max != 7 {
		t.Fatalf("gap %+v latency %+v", g, res.Latency)
	}
}

func TestAnalyze(t *testing.T) {
	t0 := time.Date(2026, 3, 14, 9, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	op := func(seq uint64, start, end int) Op { return Op{Seq: seq, Records: 1, Start: at(start), End: at(end)} }
	ops := []Op{
		op(0, 0, 2), op(1, 12, 14), op(2, 24, 30), op(3, 40, 42),
		op(4, 52, 2052), // stalled 2 s
		op(5, 2062, 2064), op(6, 2074, 2077),
	}
	tl := Analyze(ops, nil, at(0), at(2080), time.Second, 4096)
	if tl.LongestGap == nil || tl.LongestGap.Ms != 2010 || !tl.LongestGap.Start.Equal(at(42)) || !tl.LongestGap.End.Equal(at(2052)) ||
		tl.LongestGap.InFlightSeq != 4 || tl.LongestGap.Ongoing {
		t.Fatalf("longest %+v", tl.LongestGap)
	}
	if len(tl.Stalls) != 1 || tl.StallOngoing || tl.Records != 7 || tl.Ops != 7 {
		t.Fatalf("%+v", tl)
	}
	// Latencies outside the stall: 2 2 6 2 2 3 → p50 2, max 6.
	if tl.Latency.Ops != 6 || tl.Latency.P50 != 2 || tl.Latency.P99 != 6 || tl.Latency.Max != 6 {
		t.Fatalf("latency %+v", tl.Latency)
	}
	if math.Abs(tl.Throughput.RecordsPerSec-7/2.08) > 1e-9 || math.Abs(tl.Throughput.BytesPerSec-7*4096/2.08) > 1e-6 {
		t.Fatalf("throughput %+v", tl.Throughput)
	}

	// The last op never returned: the gap runs from the last completion
	// to the stop, ongoing, and is the longest.
	tl = Analyze(ops[:4], &InFlight{Seq: 4, Start: at(52)}, at(0), at(5042), time.Second, 4096)
	if g := tl.LongestGap; g == nil || !g.Ongoing || g.Ms != 5000 || g.InFlightSeq != 4 || !g.End.Equal(at(5042)) || !tl.StallOngoing || len(tl.Stalls) != 1 {
		t.Fatalf("ongoing %+v %+v", tl.LongestGap, tl)
	}
	// In flight but short: no stall, not ongoing overall.
	if tl = Analyze(ops[:4], &InFlight{Seq: 4, Start: at(52)}, at(0), at(60), time.Second, 4096); tl.StallOngoing || len(tl.Stalls) != 0 {
		t.Fatalf("%+v", tl)
	}
	// Hung from the first op.
	tl = Analyze(nil, &InFlight{Seq: 0, Start: at(5)}, at(0), at(3005), time.Second, 4096)
	if g := tl.LongestGap; g == nil || g.Ms != 3000 || !g.Ongoing || tl.Latency.Ops != 0 {
		t.Fatalf("%+v", tl)
	}
	// The very first op stalled: its gap counts from its own start.
	tl = Analyze([]Op{op(0, 5, 2005), op(1, 2015, 2017)}, nil, at(0), at(2020), time.Second, 4096)
	if g := tl.LongestGap; g == nil || g.Ms != 2000 || g.InFlightSeq != 0 || len(tl.Stalls) != 1 || tl.Latency.Ops != 1 {
		t.Fatalf("first op: %+v %+v", tl.LongestGap, tl)
	}
	if tl = Analyze(nil, nil, at(0), at(10), time.Second, 4096); tl.LongestGap != nil || tl.Stalls == nil {
		t.Fatalf("empty: %+v", tl)
	}
}

func TestValidateAndDurability(t *testing.T) {
	for s, want := range map[string]string{"fsync": "fsync", "direct": "direct", "fsync-every=8": "fsync-every=8"} {
		d, err := ParseDurability(s)
		if err != nil || d.String() != want {
			t.Errorf("%s: %v %v", s, d, err)
		}
	}
	for _, s := range []string{"", "fsync-every=0", "fsync-every=x", "sync"} {
		if _, err := ParseDurability(s); err == nil {
			t.Errorf("%q accepted", s)
		}
	}
	ok := Config{Dir: "/d", WriterID: "w1", RecordBytes: 4096, Durability: Durability{Kind: DurabilityDirect, Every: 1},
		Interval: 10 * time.Millisecond, StallThreshold: time.Second}
	if perr := ValidateWrite(ok); perr != nil {
		t.Fatal(perr)
	}
	for name, mut := range map[string]func(*Config){
		"unaligned direct": func(c *Config) { c.RecordBytes = 4000 },
		"tiny record":      func(c *Config) { c.RecordBytes = 63; c.Durability.Kind = DurabilityFsync },
		"no dir":           func(c *Config) { c.Dir = "" },
		"long id":          func(c *Config) { c.WriterID = strings.Repeat("n", 33) },
		"slash in id":      func(c *Config) { c.WriterID = "a/b" },
		"threshold":        func(c *Config) { c.StallThreshold = 5 * time.Millisecond },
	} {
		c := ok
		mut(&c)
		if perr := ValidateWrite(c); perr == nil || perr.Kind != probeout.KindUsage {
			t.Errorf("%s: %v", name, perr)
		}
	}
	if perr := ValidateWrite(Config{Dir: "/d", WriterID: "w1", RecordBytes: 4000, Durability: Durability{Kind: DurabilityDirect}, StallThreshold: time.Second}); !strings.Contains(perr.Message, "--record-bytes 4096") {
		t.Errorf("fix not named: %v", perr)
	}
}

func TestWriteDirectoryNotWritable(t *testing.T) {
	cfg := Config{Dir: "/nonexistent/stall", WriterID: "w1", RecordBytes: 4096, Interval: 10 * time.Millisecond, StallThreshold: time.Second}
	res, perr := Write(context.Background(), cfg)
	if perr == nil || perr.Kind != probeout.KindInternal || !strings.Contains(perr.Message, "writable directory") || res.StoppedBy != StoppedByError {
		t.Fatalf("%v %+v", perr, res)
	}
}
