package stall

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func realConfig(dir, id string) Config {
	return Config{Dir: dir, WriterID: id, RecordBytes: DefaultRecordBytes,
		Durability: Durability{Kind: DurabilityFsync, Every: 1}, Interval: 2 * time.Millisecond,
		Duration: time.Minute, StallThreshold: time.Second}
}

// TestRealFileWriteStopVerify writes on the real filesystem with fsync
// for about 300 ms, stops through the stop file, verifies from the
// sidecar, then corrupts one byte in the middle and expects that slot
// named.
func TestRealFileWriteStopVerify(t *testing.T) {
	dir := t.TempDir()
	var log strings.Builder
	cfg := realConfig(dir, "node-a")
	cfg.Log = &syncWriter{w: &log}
	go func() {
		time.Sleep(300 * time.Millisecond)
		if err := Stop(StopPath(dir, "node-a")); err != nil {
			t.Error(err)
		}
	}()
	res, perr := Write(context.Background(), cfg)
	if perr != nil {
		t.Fatal(perr)
	}
	if res.StoppedBy != StoppedByStopFile || res.Acknowledged < 2 || !res.Verification.OK || res.FS == nil || res.FS.Magic == "" {
		t.Fatalf("stopped %s ack %d verification %+v fs %+v", res.StoppedBy, res.Acknowledged, res.Verification, res.FS)
	}
	if res.Acknowledged >= SteadyRecords && (res.SteadyAt.IsZero() || !strings.Contains(log.String(), SteadyLine+"\n")) {
		t.Errorf("no steady line after %d records: %q", res.Acknowledged, log.String())
	}
	vr, perr := VerifyWriters(dir, []string{"node-a"}, 0, -1, nil)
	if perr != nil {
		t.Fatal(perr)
	}
	v := vr.Verification
	if !v.OK || v.AcknowledgedFrom != AckFromSidecar || v.Acknowledged != res.Acknowledged || v.Checked != res.Acknowledged || v.RecordBytes != DefaultRecordBytes {
		t.Fatalf("%+v", v)
	}

	slot := res.Acknowledged / 2
	path := RecordPath(dir, "node-a")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	data[slot*DefaultRecordBytes+1000] ^= 0xFF
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	vr, _ = VerifyWriters(dir, []string{"node-a"}, 0, -1, nil)
	v = vr.Verification
	if v.OK || v.Torn != 1 || v.FirstBad == nil || v.FirstBad.Slot != uint64(slot) || v.FirstBad.Offset != slot*DefaultRecordBytes ||
		!strings.Contains(v.FirstBad.Detail, "crc32c") {
		t.Fatalf("%+v first bad %+v", v, v.FirstBad)
	}
}

// TestRealWritersReaderAndVerify runs two writers and a reader following
// one of them at the same time, then verifies both files together and
// plants one writer's record in the other's file.
func TestRealWritersReaderAndVerify(t *testing.T) {
	dir := t.TempDir()
	var wg sync.WaitGroup
	results := map[string]Result{}
	var mu sync.Mutex
	for _, id := range []string{"node-a", "node-b"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, perr := Write(context.Background(), realConfig(dir, id))
			if perr != nil {
				t.Error(perr)
			}
			mu.Lock()
			results[id] = res
			mu.Unlock()
		}()
	}
	rcfg := realConfig(dir, "node-a")
	rcfg.RecordBytes = 0
	rcfg.StopFile = filepath.Join(dir, "reader.stop") // not the writer's: the reader ends when the writer is done
	var rres Result
	wg.Add(1)
	go func() {
		defer wg.Done()
		var perr error
		if r, e := Read(context.Background(), rcfg); e != nil {
			perr = e
		} else {
			rres = r
		}
		if perr != nil {
			t.Error(perr)
		}
	}()
	time.Sleep(300 * time.Millisecond)
	for _, id := range []string{"node-a", "node-b"} {
		if err := Stop(StopPath(dir, id)); err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
	a := results["node-a"]
	if !a.Verification.OK || !results["node-b"].Verification.OK {
		t.Fatalf("writers: %+v %+v", a.Verification, results["node-b"].Verification)
	}
	if rres.StoppedBy != StoppedByWriterDone || rres.Acknowledged != a.Acknowledged || !rres.Verification.OK || rres.RecordBytes != DefaultRecordBytes || rres.StallOngoing {
		t.Fatalf("reader stopped %s ack %d (writer %d) %+v", rres.StoppedBy, rres.Acknowledged, a.Acknowledged, rres.Verification)
	}

	vr, perr := VerifyWriters(dir, []string{"node-a", "node-b"}, 0, -1, nil)
	if perr != nil || len(vr.Verifications) != 2 || vr.Verification != nil || !vr.Verifications[0].OK || !vr.Verifications[1].OK {
		t.Fatalf("%v %+v", perr, vr)
	}
	// node-b's record 3 lands in node-a's slot 3.
	b, _ := os.ReadFile(RecordPath(dir, "node-b"))
	f, err := os.OpenFile(RecordPath(dir, "node-a"), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(b[3*DefaultRecordBytes:4*DefaultRecordBytes], 3*DefaultRecordBytes); err != nil {
		t.Fatal(err)
	}
	f.Close()
	vr, _ = VerifyWriters(dir, []string{"node-a", "node-b"}, 0, -1, nil)
	if va := vr.Verifications[0]; va.OK || va.Foreign != 1 || va.FirstBad.Slot != 3 || !vr.Verifications[1].OK {
		t.Fatalf("%+v", vr.Verifications)
	}
	if _, perr := VerifyWriters(dir, []string{"node-a", "node-b"}, 0, 5, nil); perr == nil {
		t.Error("--acknowledged with two writers accepted")
	}
}

func TestRealDirect(t *testing.T) {
	dir := t.TempDir()
	probe := filepath.Join(dir, "probe")
	fd, err := unix.Open(probe, unix.O_CREAT|unix.O_WRONLY|unix.O_DIRECT, 0o644)
	if errors.Is(err, unix.EINVAL) {
		t.Skipf("%s has no O_DIRECT", dir)
	}
	if err != nil {
		t.Fatal(err)
	}
	unix.Close(fd)
	cfg := realConfig(dir, "d1")
	cfg.Durability = Durability{Kind: DurabilityDirect, Every: 1}
	cfg.Duration = 200 * time.Millisecond
	res, perr := Write(context.Background(), cfg)
	if perr != nil {
		t.Fatal(perr)
	}
	if res.StoppedBy != StoppedByDuration || res.Acknowledged < 1 || !res.Verification.OK || res.Durability != "direct" || res.IOErrorCount != 0 {
		t.Fatalf("stopped %s ack %d %+v errors %+v", res.StoppedBy, res.Acknowledged, res.Verification, res.IOErrors)
	}
	if buf := alignedBuffer(4096, DirectAlign); len(buf) != 4096 || cap(buf) != 4096 {
		t.Fatal("aligned buffer size")
	}
}

func TestStopFileLeftOverRefused(t *testing.T) {
	dir := t.TempDir()
	if err := Stop(StopPath(dir, "w1")); err != nil {
		t.Fatal(err)
	}
	_, perr := Write(context.Background(), realConfig(dir, "w1"))
	if perr == nil || !strings.Contains(perr.Message, "already exists") {
		t.Fatalf("%v", perr)
	}
}

func TestWatchTransitions(t *testing.T) {
	marker := filepath.Join(t.TempDir(), ".driver-ready")
	cfg := Config{WatchFile: marker, WatchPoll: 5 * time.Millisecond}.withDefaults()
	stop := startWatch(&cfg)
	time.Sleep(40 * time.Millisecond)
	os.WriteFile(marker, nil, 0o644)
	time.Sleep(40 * time.Millisecond)
	os.Remove(marker)
	time.Sleep(40 * time.Millisecond)
	w := stop()
	var seen []bool
	for _, tr := range w.Transitions {
		seen = append(seen, tr.Present)
	}
	if w.Path != marker || len(seen) != 3 || seen[0] || !seen[1] || seen[2] || !w.Transitions[1].At.After(w.Transitions[0].At) {
		t.Fatalf("%+v", w)
	}
	none := Config{}.withDefaults()
	if startWatch(&none)() != nil {
		t.Fatal("watch without a file")
	}
}

type syncWriter struct {
	mu sync.Mutex
	w  *strings.Builder
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}
