package stall

import (
	"context"
	"io/fs"
	"strings"
	"testing"
	"time"
)

// scriptedFile is a writer's file as another node sees it: record k
// becomes visible at land[k] (fake time), and reads as half written until
// whole[k].
type scriptedFile struct {
	afterSize func(visible int) // called by Size after it counted
	clock     *fakeClock
	rb        int
	land      []time.Time
	whole     []time.Time
	recs      [][]byte
}

func newScriptedFile(clock *fakeClock, rb, n int, landAt func(k int) time.Duration) *scriptedFile {
	s := &scriptedFile{clock: clock, rb: rb}
	t0 := clock.Now()
	for k := range n {
		rec := make([]byte, rb)
		EncodeRecord(rec, "w1", uint64(k), t0)
		s.recs = append(s.recs, rec)
		s.land = append(s.land, t0.Add(landAt(k)))
		s.whole = append(s.whole, t0.Add(landAt(k)))
	}
	return s
}

func (s *scriptedFile) open(path string, mode OpenMode) (File, error) {
	if mode != OpenRead {
		panic("scripted files are read only")
	}
	if len(s.land) == 0 || s.clock.Now().Before(s.land[0]) {
		return nil, &fs.PathError{Op: "open", Path: path, Err: fs.ErrNotExist}
	}
	return s, nil
}

func (s *scriptedFile) visible() int {
	now, n := s.clock.Now(), 0
	for n < len(s.land) && !now.Before(s.land[n]) {
		n++
	}
	return n
}

func (s *scriptedFile) ReadAt(p []byte, off int64) (int, error) {
	end := int64(s.visible() * s.rb)
	if off >= end {
		return 0, nil
	}
	n := 0
	for n < len(p) && off+int64(n) < end {
		k := int(off+int64(n)) / s.rb
		in := int(off+int64(n)) % s.rb
		b := s.recs[k][in]
		if s.clock.Now().Before(s.whole[k]) && in >= s.rb/2 {
			b = 0
		}
		p[n] = b
		n++
	}
	return n, nil
}

func (s *scriptedFile) Size() (int64, error) {
	n := s.visible()
	if s.afterSize != nil {
		s.afterSize(n)
	}
	return int64(n * s.rb), nil
}

func (s *scriptedFile) Sync() error                              { return nil }
func (s *scriptedFile) Close() error                             { return nil }
func (s *scriptedFile) WriteAt(p []byte, off int64) (int, error) { panic("read only") }

// Records land every 10 ms, except that record 100 lands 27 s late.
func stalledLanding(k int) time.Duration {
	d := time.Duration(k) * 10 * time.Millisecond
	if k >= 100 {
		d += 27 * time.Second
	}
	return d
}

func readerConfig(t *testing.T, clock *fakeClock, s *scriptedFile, d time.Duration) Config {
	return Config{Dir: t.TempDir(), WriterID: "w1", Interval: 10 * time.Millisecond, Duration: d,
		StallThreshold: time.Second, Clock: clock, Open: s.open}
}

func TestReaderSeesStall(t *testing.T) {
	clock := newFakeClock()
	t0 := clock.Now()
	s := newScriptedFile(clock, testRB, 300, stalledLanding)
	// Record 150 is visible half written for 30 ms: still landing, not torn.
	s.whole[150] = s.land[150].Add(30 * time.Millisecond)
	res, perr := Read(context.Background(), readerConfig(t, clock, s, 30*time.Second))
	if perr != nil {
		t.Fatal(perr)
	}
	if res.Mode != ModeRead || res.RecordBytes != testRB || res.StoppedBy != StoppedByDuration || res.Acknowledged != 300 || res.Ops != 300 {
		t.Fatalf("mode %s rb %d stopped %s ack %d ops %d", res.Mode, res.RecordBytes, res.StoppedBy, res.Acknowledged, res.Ops)
	}
	g := res.LongestGap
	if g == nil || g.Ms != 27010 || g.InFlightSeq != 100 || !g.Start.Equal(t0.Add(990*time.Millisecond)) || !g.End.Equal(t0.Add(28*time.Second)) || g.Ongoing {
		t.Fatalf("longest gap %+v", g)
	}
	if res.StallCount != 1 || res.StallOngoing {
		t.Fatalf("stalls %+v", res.Stalls)
	}
	v := res.Verification
	if !v.OK || v.Checked != 300 || v.Valid != 300 || v.AcknowledgedFrom != AckFromReader {
		t.Fatalf("%+v", v)
	}
}

func TestReaderJudgesPersistentlyTornRecord(t *testing.T) {
	clock := newFakeClock()
	s := newScriptedFile(clock, testRB, 300, stalledLanding)
	s.whole[200] = s.land[200].Add(time.Hour)
	res, perr := Read(context.Background(), readerConfig(t, clock, s, 40*time.Second))
	if perr != nil {
		t.Fatal(perr)
	}
	v := res.Verification
	if v.OK || v.Torn != 1 || v.FirstBad == nil || v.FirstBad.Slot != 200 || !strings.Contains(v.FirstBad.Detail, "crc32c") || v.Valid != 299 {
		t.Fatalf("%+v %+v", v, v.FirstBad)
	}
	// The writer's 27 s stall; then the reader held back ReadSettle (5 s)
	// behind record 200, a stall of its own; then no record after 299 and
	// no sidecar until the stop: ongoing.
	type stall struct {
		ms      float64
		seq     uint64
		ongoing bool
	}
	var got []stall
	for _, g := range res.Stalls {
		got = append(got, stall{g.Ms, g.InFlightSeq, g.Ongoing})
	}
	want := []stall{{27010, 100, false}, {5010, 201, false}, {6000, 300, true}}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] || !res.StallOngoing {
		t.Fatalf("stalls %+v, want %+v", got, want)
	}
}

func TestReaderStopsWhenWriterDone(t *testing.T) {
	clock := newFakeClock()
	s := newScriptedFile(clock, testRB, 50, func(k int) time.Duration { return time.Duration(k) * 10 * time.Millisecond })
	cfg := readerConfig(t, clock, s, time.Hour)
	// The writer finishes after its last record reached the file, having
	// acknowledged 52: the last two never did.
	finished := false
	cfg.Open = func(path string, mode OpenMode) (File, error) {
		if !finished && clock.Now().After(s.land[49]) {
			if err := writeAck(cfg.Dir, Ack{WriterID: "w1", Acknowledged: 52, RecordBytes: testRB}); err != nil {
				t.Error(err)
			}
			finished = true
		}
		return s.open(path, mode)
	}
	res, perr := Read(context.Background(), cfg)
	if perr != nil {
		t.Fatal(perr)
	}
	v := res.Verification
	if res.StoppedBy != StoppedByWriterDone || res.StallOngoing || v.OK || v.Lost != 2 || v.FirstBad.Slot != 50 || v.Checked != 52 {
		t.Fatalf("stopped %s ongoing %v %+v %+v", res.StoppedBy, res.StallOngoing, v, v.FirstBad)
	}
}

// TestReaderSidecarRace: the writer finishes between the reader's stat of
// the file and its look at the sidecar. The stat was stale; only the next
// poll, opened after the sidecar was seen, may conclude.
func TestReaderSidecarRace(t *testing.T) {
	clock := newFakeClock()
	s := newScriptedFile(clock, testRB, 50, func(k int) time.Duration { return time.Duration(k) * 10 * time.Millisecond })
	cfg := readerConfig(t, clock, s, time.Hour)
	s.afterSize = func(visible int) {
		if visible == 49 {
			if err := writeAck(cfg.Dir, Ack{WriterID: "w1", Acknowledged: 50, RecordBytes: testRB}); err != nil {
				t.Error(err)
			}
		}
	}
	res, perr := Read(context.Background(), cfg)
	if perr != nil {
		t.Fatal(perr)
	}
	if v := res.Verification; res.StoppedBy != StoppedByWriterDone || !v.OK || v.Valid != 50 || res.Acknowledged != 50 {
		t.Fatalf("stopped %s %+v %+v", res.StoppedBy, v, v.FirstBad)
	}
}
