// Package stall is the NFS I/O-stall probe (`rdmaprobe stall`). Seed
// incident: restarting the MOFED driver container on a GPU node stalled
// NFS-over-RDMA I/O for 27 s, and no data was lost. The suite reproduces
// that: writer pods on two nodes write to one shared NFS volume while the
// driver restarts on one node; this probe measures how long I/O stood still
// and proves afterwards that every acknowledged record is on the volume.
//
// Each writer owns one file, <dir>/<writer-id>.rec, of fixed-size records:
// record k at byte k*recordBytes, written with pwrite, so an NFS
// retransmission rewrites the same bytes and two nodes never share a file.
// A record carries magic, format version, writer id, sequence number, the
// wall-clock time it was built, its payload length and a CRC32C over all
// of that and the payload; the payload is generated from (writer id, seq),
// so a torn, stale or misplaced record cannot pass as valid.
//
// A record is acknowledged when its durability op returned without error:
// fsync after each record; with fsync-every=N, one fsync after N records
// written back to back (the measured op is that fsync-terminated batch);
// with direct, the O_DIRECT pwrite itself, with one fdatasync at the end.
// I/O errors (soft mounts return EIO where hard mounts block) are recorded
// and the same record is retried after a pause; after a failed fsync the
// whole batch is written again, since the kernel may have dropped the
// dirty pages.
//
// The timeline is the list of op completions: the longest gap between two
// of them is the stall, in the same wall clock as the node's logs and as
// the transitions of an optional watched file (the driver's readiness
// marker). When an op is still in flight at the stop, the gap to the stop
// counts and is marked ongoing; the file is then left alone (syncing or
// reading it would hang too) and verification is reported as not run.
//
// Modes: write (above), read (follow another writer's file from the peer
// node: the reader sees the stall as a gap between newly visible records),
// verify (check finished files, the acknowledged count taken from the
// writer's sidecar <dir>/<writer-id>.ack.json), stop (create the stop file;
// the probe image has no shell to do it with).
//
// Result is what the suite decodes from the envelope. Its JSON names are
// the brief's; additions: mode "stop"; stopFile; stallThresholdMs;
// stallCount and ioErrorCount (the stalls and ioErrors lists are capped at
// MaxListed); ioErrors[].op; throughput {recordsPerSec, bytesPerSec};
// fs.magicName, fs.mountOptions (fs.options are the superblock options),
// fs.rdma (proto=rdma), fs.error; verification.writerId, file, recordBytes,
// fileBytes, acknowledged, acknowledgedFrom, valid, error (set when the
// file could not be verified, e.g. I/O still hung), firstBad.foundSeq (the
// seq a misplaced record carries; firstBad.seq is the one the slot should
// hold); stoppedBy "writer-done" (a reader that saw the writer's sidecar
// and every record). Verify mode fills verifications (one per writer) and,
// for a single writer, verification too.
package stall

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// ProbeName is the envelope's probe name.
const ProbeName = "stall"

// Modes.
const (
	ModeWrite  = "write"
	ModeRead   = "read"
	ModeVerify = "verify"
	ModeStop   = "stop"
)

// Why a run stopped.
const (
	StoppedByStopFile   = "stop-file"
	StoppedBySignal     = "signal"
	StoppedByDuration   = "duration"
	StoppedByError      = "error"
	StoppedByWriterDone = "writer-done"
)

// SteadyRecords acknowledged records make a writer steady: it prints
// "stall: steady" and sets steadyAt.
const SteadyRecords = 50

// SteadyLine is the stderr line the suite may wait for.
const SteadyLine = "stall: steady"

// Result is the envelope's result for every mode.
type Result struct {
	Mode             string  `json:"mode"`
	WriterID         string  `json:"writerId,omitempty"`
	Dir              string  `json:"dir"`
	File             string  `json:"file,omitempty"`
	StopFile         string  `json:"stopFile,omitempty"`
	RecordBytes      int     `json:"recordBytes,omitempty"`
	Durability       string  `json:"durability,omitempty"`
	IntervalMs       float64 `json:"intervalMs"`
	StallThresholdMs float64 `json:"stallThresholdMs,omitempty"`
	FS               *FSInfo `json:"fs,omitempty"`

	StartedAt time.Time `json:"startedAt,omitzero"`
	SteadyAt  time.Time `json:"steadyAt,omitzero"`
	EndedAt   time.Time `json:"endedAt,omitzero"`
	StoppedBy string    `json:"stoppedBy,omitempty"`

	Ops          int        `json:"ops"`
	Acknowledged int64      `json:"acknowledged"`
	IOErrors     []IOError  `json:"ioErrors"`
	IOErrorCount int        `json:"ioErrorCount"`
	Latency      LatencyMs  `json:"latencyMs"`
	LongestGap   *Gap       `json:"longestGap,omitempty"`
	StallOngoing bool       `json:"stallOngoing"`
	Stalls       []Gap      `json:"stalls"`
	StallCount   int        `json:"stallCount"`
	Throughput   Throughput `json:"throughput"`
	Watch        *Watch     `json:"watch,omitempty"`

	Verification  *Verification  `json:"verification,omitempty"`
	Verifications []Verification `json:"verifications,omitempty"`
	// Removed lists the files verify --remove-on-ok deleted after every
	// writer verified (the data proved intact, nothing left on the
	// operator's share); RemoveError says what could not be deleted.
	Removed     []string `json:"removed,omitempty"`
	RemoveError string   `json:"removeError,omitempty"`
}

// IOError is one failed I/O call; the op was retried.
type IOError struct {
	At    time.Time `json:"at"`
	Seq   uint64    `json:"seq"`
	Op    string    `json:"op"` // write, fsync, final-sync, open, stat, read, sidecar
	Error string    `json:"error"`
}

// Watch is the watched file's presence over the run, polled every 100 ms.
type Watch struct {
	Path string `json:"path"`
	// Transitions start with the state at the first poll.
	Transitions []Transition `json:"transitions"`
}

// Transition is the watched file appearing or disappearing.
type Transition struct {
	At      time.Time `json:"at"`
	Present bool      `json:"present"`
}

// Ack is the writer's sidecar, <dir>/<writer-id>.ack.json: what it
// promised, for a verifier in another pod.
type Ack struct {
	WriterID     string    `json:"writerId"`
	File         string    `json:"file"`
	Acknowledged int64     `json:"acknowledged"`
	RecordBytes  int       `json:"recordBytes"`
	Durability   string    `json:"durability"`
	EndedAt      time.Time `json:"endedAt"`
}

// RecordPath is a writer's record file.
func RecordPath(dir, writerID string) string { return filepath.Join(dir, writerID+".rec") }

// AckPath is a writer's sidecar.
func AckPath(dir, writerID string) string { return filepath.Join(dir, writerID+".ack.json") }

// StopPath is a writer's default stop file.
func StopPath(dir, writerID string) string { return filepath.Join(dir, writerID+".stop") }

// RemoveFiles deletes the writers' record, sidecar and stop files in dir,
// and dir itself when that leaves it empty (best effort: a directory still
// mounted somewhere stays). It returns what it removed and the first error.
func RemoveFiles(dir string, writerIDs []string) ([]string, error) {
	var removed []string
	var first error
	for _, id := range writerIDs {
		for _, p := range []string{RecordPath(dir, id), AckPath(dir, id), StopPath(dir, id)} {
			switch err := os.Remove(p); {
			case err == nil:
				removed = append(removed, p)
			case !errors.Is(err, os.ErrNotExist) && first == nil:
				first = err
			}
		}
	}
	if first == nil && os.Remove(dir) == nil {
		removed = append(removed, dir)
	}
	return removed, first
}

// ValidateWriterID accepts 1..32 bytes of [A-Za-z0-9._-], not starting
// with a dot: the id names files and fits the header's field.
func ValidateWriterID(id string) error {
	if id == "" || len(id) > MaxWriterIDBytes {
		return fmt.Errorf("writer id %q: want 1 to %d bytes (e.g. the node name, shortened)", id, MaxWriterIDBytes)
	}
	if id[0] == '.' {
		return fmt.Errorf("writer id %q: must not start with a dot", id)
	}
	for _, c := range id {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return fmt.Errorf("writer id %q: only letters, digits, '.', '_' and '-' (it names files)", id)
		}
	}
	return nil
}

// Durability is how records are made durable.
type Durability struct {
	Kind  string // DurabilityFsync, DurabilityFsyncEvery or DurabilityDirect
	Every int    // records per fsync with DurabilityFsyncEvery
}

// Durability kinds.
const (
	DurabilityFsync      = "fsync"
	DurabilityFsyncEvery = "fsync-every"
	DurabilityDirect     = "direct"
)

// ParseDurability reads fsync, fsync-every=N or direct.
func ParseDurability(s string) (Durability, error) {
	switch {
	case s == DurabilityFsync:
		return Durability{Kind: DurabilityFsync, Every: 1}, nil
	case s == DurabilityDirect:
		return Durability{Kind: DurabilityDirect, Every: 1}, nil
	case strings.HasPrefix(s, DurabilityFsyncEvery+"="):
		n, err := strconv.Atoi(strings.TrimPrefix(s, DurabilityFsyncEvery+"="))
		if err != nil || n < 1 {
			return Durability{}, fmt.Errorf("durability %q: fsync-every=N needs a whole number N ≥ 1", s)
		}
		return Durability{Kind: DurabilityFsyncEvery, Every: n}, nil
	}
	return Durability{}, fmt.Errorf("durability %q: want fsync, fsync-every=N or direct", s)
}

func (d Durability) String() string {
	if d.Kind == DurabilityFsyncEvery {
		return fmt.Sprintf("%s=%d", d.Kind, d.Every)
	}
	return d.Kind
}

// batch is the number of records in one measured op.
func (d Durability) batch() int {
	if d.Kind == DurabilityFsyncEvery {
		return d.Every
	}
	return 1
}

// Clock is the time source of the I/O loops; tests replace it so that a
// stalled write advances time without sleeping.
type Clock interface {
	Now() time.Time
	Sleep(time.Duration)
}

// RealClock is the wall clock with its monotonic reading.
var RealClock Clock = realClock{}

type realClock struct{}

func (realClock) Now() time.Time        { return time.Now() }
func (realClock) Sleep(d time.Duration) { time.Sleep(d) }

// Config drives Write and Read.
type Config struct {
	Dir      string
	WriterID string
	// RecordBytes: Read takes 0 as "from the file's first header".
	RecordBytes    int
	Durability     Durability
	Interval       time.Duration // pause between ops
	Duration       time.Duration // safety cap; 0 runs until stopped
	StopFile       string        // default StopPath(Dir, WriterID)
	WatchFile      string        // optional
	StallThreshold time.Duration
	// StopGrace is how long a stop waits for an op in flight before the
	// run is reported with the stall ongoing.
	StopGrace time.Duration
	// RetryPause is the pause before retrying a failed I/O call.
	RetryPause time.Duration
	// WatchPoll is the watched file's poll period.
	WatchPoll time.Duration
	// ReadSettle is how long a reader waits for a torn-looking record that
	// the writer has already written past before it judges it.
	ReadSettle time.Duration
	Log        io.Writer
	Clock      Clock
	Open       Opener
	// Exists tells whether a path exists (stop and watch files).
	Exists func(path string) bool
}

// Defaults for Config's zero fields.
const (
	DefaultInterval       = 10 * time.Millisecond
	DefaultDuration       = 10 * time.Minute
	DefaultStallThreshold = time.Second
	DefaultStopGrace      = 30 * time.Second
	DefaultRetryPause     = 100 * time.Millisecond
	DefaultWatchPoll      = 100 * time.Millisecond
	DefaultReadSettle     = 5 * time.Second
)

func (c Config) withDefaults() Config {
	if c.StopFile == "" {
		c.StopFile = StopPath(c.Dir, c.WriterID)
	}
	if c.Durability.Kind == "" {
		c.Durability = Durability{Kind: DurabilityFsync, Every: 1}
	}
	if c.StallThreshold == 0 {
		c.StallThreshold = DefaultStallThreshold
	}
	if c.StopGrace == 0 {
		c.StopGrace = DefaultStopGrace
	}
	if c.RetryPause == 0 {
		c.RetryPause = DefaultRetryPause
	}
	if c.WatchPoll == 0 {
		c.WatchPoll = DefaultWatchPoll
	}
	if c.ReadSettle == 0 {
		c.ReadSettle = DefaultReadSettle
	}
	if c.Log == nil {
		c.Log = io.Discard
	}
	if c.Clock == nil {
		c.Clock = RealClock
	}
	if c.Open == nil {
		c.Open = OpenOS
	}
	if c.Exists == nil {
		c.Exists = pathExists
	}
	return c
}

func pathExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// Stop creates a stop file, fsynced: the writer polls for it on every loop
// (and, while an op is hung, every 100 ms from a separate goroutine).
func Stop(path string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	_, werr := fmt.Fprintf(f, "stop %s\n", time.Now().UTC().Format(time.RFC3339Nano))
	serr := f.Sync()
	cerr := f.Close()
	for _, e := range []error{werr, serr, cerr} {
		if e != nil {
			return e
		}
	}
	return nil
}

// ReadAck reads a writer's sidecar.
func ReadAck(dir, writerID string) (Ack, error) {
	var a Ack
	data, err := os.ReadFile(AckPath(dir, writerID))
	if err != nil {
		return a, err
	}
	if err := json.Unmarshal(data, &a); err != nil {
		return a, fmt.Errorf("%s: %w", AckPath(dir, writerID), err)
	}
	return a, nil
}

// writeAck writes the sidecar durably: a temporary file, fsynced, renamed
// into place, so a reader never sees half of it.
func writeAck(dir string, a Ack) error {
	data, err := json.Marshal(a)
	if err != nil {
		return err
	}
	final := AckPath(dir, a.WriterID)
	tmp := final + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(append(data, '\n')); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, final)
}
