package stall

import (
	"fmt"
	"strings"

	"github.com/rdmasuite/rdmasuite/workloads/probeout"
)

// Problem classifies a bad slot.
type Problem string

const (
	// Lost: an acknowledged slot is all zeros or lies beyond end of file.
	Lost Problem = "lost"
	// Torn: short record, bad magic or version over non-zero data, CRC
	// mismatch, or a payload that (writer, seq) does not generate.
	Torn Problem = "torn"
	// Reordered: a valid record whose seq is not its slot and was not seen
	// in an earlier slot.
	Reordered Problem = "reordered"
	// Duplicate: a valid record whose seq was already seen in another slot.
	Duplicate Problem = "duplicate"
	// Foreign: a valid record of another writer.
	Foreign Problem = "foreign"
)

// Where the verifier took the acknowledged count from.
const (
	AckFromWriter   = "writer"   // the writer's own count, at the end of `stall write`
	AckFromFlag     = "flag"     // --acknowledged
	AckFromSidecar  = "sidecar"  // <dir>/<writer-id>.ack.json
	AckFromInferred = "inferred" // none known: every slot before the last valid record
	AckFromReader   = "reader"   // `stall read`: the records it saw land
)

// BadRecord names one bad slot.
type BadRecord struct {
	Slot uint64 `json:"slot"`
	// Seq is the sequence number the slot should hold (== Slot).
	Seq uint64 `json:"seq"`
	// FoundSeq is what a valid but misplaced record there carries.
	FoundSeq *uint64 `json:"foundSeq,omitempty"`
	Offset   int64   `json:"offset"`
	Problem  Problem `json:"problem"`
	Detail   string  `json:"detail"`
}

// Verification is the verdict over one writer's file.
type Verification struct {
	OK               bool   `json:"ok"`
	WriterID         string `json:"writerId"`
	File             string `json:"file"`
	RecordBytes      int    `json:"recordBytes"`
	FileBytes        int64  `json:"fileBytes"`
	Acknowledged     int64  `json:"acknowledged"`
	AcknowledgedFrom string `json:"acknowledgedFrom"`
	// Checked counts every slot examined: 0..max(acknowledged, slots in
	// the file)-1.
	Checked int64 `json:"checked"`
	Valid   int64 `json:"valid"`
	// UnacknowledgedTail counts examined slots at or after the
	// acknowledged count: missing or partial there is no failure.
	UnacknowledgedTail int64      `json:"unacknowledgedTail"`
	Lost               int64      `json:"lost"`
	Torn               int64      `json:"torn"`
	Reordered          int64      `json:"reordered"`
	Duplicate          int64      `json:"duplicate"`
	Foreign            int64      `json:"foreign"`
	FirstBad           *BadRecord `json:"firstBad,omitempty"`
	// Error: the file could not be verified at all (ok is false).
	Error string `json:"error,omitempty"`
}

// checker classifies slots in order, remembering which sequence numbers it
// has seen and where.
type checker struct {
	writerID string
	rb       int
	seen     map[uint64]uint64 // seq -> first slot holding it
	scratch  []byte
}

func newChecker(writerID string, recordBytes int) *checker {
	return &checker{writerID: writerID, rb: recordBytes, seen: map[uint64]uint64{}, scratch: make([]byte, recordBytes)}
}

// classify judges slot's bytes (short when the file ends inside the slot).
// An empty problem is a valid record in its place.
func (c *checker) classify(slot uint64, data []byte) BadRecord {
	bad := BadRecord{Slot: slot, Seq: slot, Offset: int64(slot) * int64(c.rb)}
	switch {
	case len(data) == 0:
		bad.Problem, bad.Detail = Lost, "beyond end of file"
		return bad
	case allZero(data):
		bad.Problem, bad.Detail = Lost, fmt.Sprintf("all %d bytes zero: the write never reached the file", len(data))
		return bad
	case len(data) < c.rb:
		bad.Problem, bad.Detail = Torn, fmt.Sprintf("short record: %d of %d bytes before end of file", len(data), c.rb)
		return bad
	}
	h, detail := decodeHeader(data, c.scratch)
	if detail != "" {
		bad.Problem, bad.Detail = Torn, detail
		return bad
	}
	found := h.Seq
	switch prev, dup := c.seen[h.Seq]; {
	case h.WriterID != c.writerID:
		bad.Problem, bad.FoundSeq = Foreign, &found
		bad.Detail = fmt.Sprintf("valid record of writer %q (seq %d) in %q's file", h.WriterID, h.Seq, c.writerID)
	case dup:
		bad.Problem, bad.FoundSeq = Duplicate, &found
		bad.Detail = fmt.Sprintf("seq %d again: slot %d already holds it", h.Seq, prev)
	case h.Seq != slot:
		c.seen[h.Seq] = slot
		bad.Problem, bad.FoundSeq = Reordered, &found
		bad.Detail = fmt.Sprintf("slot %d holds seq %d", slot, h.Seq)
	default:
		c.seen[h.Seq] = slot
	}
	return bad
}

// tally adds one classified slot to v. Missing or partial slots at or after
// acked are the unacknowledged tail, not failures; a misplaced or foreign
// record is wrong wherever it is.
func (v *Verification) tally(b BadRecord, acked int64) {
	v.Checked++
	tail := int64(b.Slot) >= acked
	if tail {
		v.UnacknowledgedTail++
	}
	switch b.Problem {
	case "":
		v.Valid++
		return
	case Lost, Torn:
		if tail {
			return
		}
		if b.Problem == Lost {
			v.Lost++
		} else {
			v.Torn++
		}
	case Reordered:
		v.Reordered++
	case Duplicate:
		v.Duplicate++
	case Foreign:
		v.Foreign++
	}
	if v.FirstBad == nil {
		v.FirstBad = &b
	}
}

func (v *Verification) finish() {
	v.OK = v.Error == "" && v.Lost+v.Torn+v.Reordered+v.Duplicate+v.Foreign == 0
}

// VerifyFile checks every slot of f, a finished file of writerID's
// records. acked is the acknowledged record count, or negative when
// unknown: then every slot before the last valid record counts as
// acknowledged.
func VerifyFile(f File, path, writerID string, recordBytes int, acked int64, ackFrom string) Verification {
	v := Verification{WriterID: writerID, File: path, RecordBytes: recordBytes, Acknowledged: acked, AcknowledgedFrom: ackFrom}
	size, err := f.Size()
	if err != nil {
		v.Error = fmt.Sprintf("stat %s: %v", path, err)
		v.finish()
		return v
	}
	v.FileBytes = size
	rb := int64(recordBytes)
	slots := (size + rb - 1) / rb
	c := newChecker(writerID, recordBytes)
	// Classify first, judge against the acknowledged count after: without
	// one, it is inferred from the last valid record.
	var bad []BadRecord
	lastValid := int64(-1)
	perRead := max(1, (1<<20)/recordBytes)
	buf := make([]byte, perRead*recordBytes)
	for first := int64(0); first < slots; first += int64(perRead) {
		n, err := f.ReadAt(buf, first*rb)
		if err != nil {
			v.Error = fmt.Sprintf("read %s at byte %d: %v", path, first*rb, err)
			v.finish()
			return v
		}
		for i := 0; i < perRead && first+int64(i) < slots; i++ {
			lo := min(i*recordBytes, n)
			hi := min((i+1)*recordBytes, n)
			b := c.classify(uint64(first)+uint64(i), buf[lo:hi])
			switch b.Problem {
			case "", Reordered, Duplicate:
				lastValid = first + int64(i)
			}
			if b.Problem != "" {
				bad = append(bad, b)
			}
		}
	}
	if acked < 0 {
		acked = lastValid + 1
		v.Acknowledged, v.AcknowledgedFrom = acked, AckFromInferred
	}
	next := 0
	for slot := int64(0); slot < slots; slot++ {
		if next < len(bad) && int64(bad[next].Slot) == slot {
			v.tally(bad[next], acked)
			next++
			continue
		}
		v.tally(BadRecord{Slot: uint64(slot)}, acked)
	}
	if acked > slots {
		// Acknowledged records past end of file: all lost. Counted, not
		// classified one by one (the count may be large).
		v.Checked += acked - slots
		v.Lost += acked - slots
		if v.FirstBad == nil {
			v.FirstBad = &BadRecord{Slot: uint64(slots), Seq: uint64(slots), Offset: slots * rb, Problem: Lost,
				Detail: fmt.Sprintf("beyond end of file (%d bytes): %d acknowledged records from here on are missing", size, acked-slots)}
		}
	}
	v.finish()
	return v
}

// VerifyWriters verifies finished files in dir, one verification per
// writer. recordBytes 0 takes each writer's record size from its sidecar,
// else from its file's first header, else DefaultRecordBytes. acked ≥ 0
// (one writer only) overrides the sidecar's acknowledged count; without
// either, it is inferred (see VerifyFile).
func VerifyWriters(dir string, writerIDs []string, recordBytes int, acked int64, open Opener) (Result, *probeout.Error) {
	if open == nil {
		open = OpenOS
	}
	res := Result{Mode: ModeVerify, WriterID: strings.Join(writerIDs, ","), Dir: dir, RecordBytes: recordBytes}
	if dir == "" {
		return res, probeout.Errorf(probeout.KindUsage, "--dir is required: the shared volume holding <writer-id>.rec")
	}
	if len(writerIDs) == 0 {
		return res, probeout.Errorf(probeout.KindUsage, "--writer-id is required: one id or a comma-separated list")
	}
	for _, id := range writerIDs {
		if err := ValidateWriterID(id); err != nil {
			return res, probeout.Errorf(probeout.KindUsage, "--writer-id: %v", err)
		}
	}
	if acked >= 0 && len(writerIDs) > 1 {
		return res, probeout.Errorf(probeout.KindUsage, "--acknowledged applies to one writer; with several, each writer's sidecar (<id>.ack.json) gives its count")
	}
	if recordBytes != 0 && recordBytes < MinRecordBytes {
		return res, probeout.Errorf(probeout.KindUsage, "--record-bytes %d: at least %d, or 0 to take it from the sidecar or the file", recordBytes, MinRecordBytes)
	}
	fsInfo := CollectFSInfo(dir)
	res.FS = &fsInfo
	res.Verifications = []Verification{}
	for _, id := range writerIDs {
		res.Verifications = append(res.Verifications, verifyWriter(dir, id, recordBytes, acked, open))
	}
	if len(writerIDs) == 1 {
		res.File = RecordPath(dir, writerIDs[0])
		v := res.Verifications[0]
		res.Verification = &v
		res.RecordBytes = v.RecordBytes
	}
	return res, nil
}

func verifyWriter(dir, id string, recordBytes int, acked int64, open Opener) Verification {
	path := RecordPath(dir, id)
	from := AckFromFlag
	sidecar, serr := ReadAck(dir, id)
	if serr == nil && sidecar.RecordBytes != 0 && recordBytes != 0 && sidecar.RecordBytes != recordBytes {
		v := Verification{WriterID: id, File: path, RecordBytes: recordBytes, Acknowledged: acked, AcknowledgedFrom: from,
			Error: fmt.Sprintf("--record-bytes %d, but the writer's sidecar %s says %d: leave --record-bytes out", recordBytes, AckPath(dir, id), sidecar.RecordBytes)}
		v.finish()
		return v
	}
	if acked < 0 {
		from = AckFromInferred
		if serr == nil {
			acked, from = sidecar.Acknowledged, AckFromSidecar
		}
	}
	if recordBytes == 0 && serr == nil {
		recordBytes = sidecar.RecordBytes
	}
	if recordBytes == 0 {
		if f, err := open(path, OpenRead); err == nil {
			recordBytes = RecordBytesFromHeader(f)
			f.Close()
		}
		if recordBytes < MinRecordBytes {
			recordBytes = DefaultRecordBytes
		}
	}
	return verifyPath(open, path, id, recordBytes, acked, from)
}
