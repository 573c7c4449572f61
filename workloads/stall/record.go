package stall

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"hash/fnv"
	"time"
)

// Record layout, little endian. Every record is RecordBytes long: this
// 64-byte header, then a payload that fills the rest.
//
//	0:4   magic "RSTL"
//	4:6   format version
//	6:8   writer id length (1..32)
//	8:40  writer id, zero padded
//	40:48 sequence number
//	48:56 write timestamp, unix ns (wall clock when the record was built)
//	56:60 payload length (RecordBytes - HeaderBytes)
//	60:64 CRC32C (Castagnoli) over bytes 0:60 and the payload
const (
	Magic            = "RSTL"
	FormatVersion    = 1
	HeaderBytes      = 64
	MaxWriterIDBytes = 32
	// MinRecordBytes is a header with an empty payload.
	MinRecordBytes = HeaderBytes
	// MaxRecordBytes bounds a record (and what a header may claim).
	MaxRecordBytes = 64 << 20
	// DirectAlign is the alignment O_DIRECT needs of buffers, offsets and
	// lengths (the page size; NFS and the usual local filesystems accept it).
	DirectAlign = 4096
	// DefaultRecordBytes is one page: one NFS WRITE per record, no record
	// straddling two pages.
	DefaultRecordBytes = 4096

	offVersion = 4
	offIDLen   = 6
	offID      = 8
	offSeq     = 40
	offTime    = 48
	offPayLen  = 56
	offCRC     = 60
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Header is a decoded record header.
type Header struct {
	WriterID   string
	Seq        uint64
	WrittenAt  time.Time
	PayloadLen int
}

// EncodeRecord fills buf (one whole record) with record seq of writerID,
// stamped at.
func EncodeRecord(buf []byte, writerID string, seq uint64, at time.Time) {
	clear(buf[:HeaderBytes])
	copy(buf, Magic)
	binary.LittleEndian.PutUint16(buf[offVersion:], FormatVersion)
	binary.LittleEndian.PutUint16(buf[offIDLen:], uint16(len(writerID)))
	copy(buf[offID:offID+MaxWriterIDBytes], writerID)
	binary.LittleEndian.PutUint64(buf[offSeq:], seq)
	binary.LittleEndian.PutUint64(buf[offTime:], uint64(at.UnixNano()))
	binary.LittleEndian.PutUint32(buf[offPayLen:], uint32(len(buf)-HeaderBytes))
	fillPayload(buf[HeaderBytes:], writerID, seq)
	binary.LittleEndian.PutUint32(buf[offCRC:], recordCRC(buf))
}

func recordCRC(rec []byte) uint32 {
	c := crc32.Update(0, castagnoli, rec[:offCRC])
	return crc32.Update(c, castagnoli, rec[HeaderBytes:])
}

// fillPayload writes the bytes (writerID, seq) generate: a splitmix64
// stream seeded from both, so a record carrying another record's payload,
// or a stale one, does not pass as valid even with a matching CRC.
func fillPayload(p []byte, writerID string, seq uint64) {
	h := fnv.New64a()
	h.Write([]byte(writerID))
	state := h.Sum64() ^ (seq+1)*0x9E3779B97F4A7C15
	var word [8]byte
	for i := 0; i < len(p); i += 8 {
		state += 0x9E3779B97F4A7C15
		z := state
		z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
		z = (z ^ (z >> 27)) * 0x94D049BB133111EB
		z ^= z >> 31
		if i+8 <= len(p) {
			binary.LittleEndian.PutUint64(p[i:], z)
			continue
		}
		binary.LittleEndian.PutUint64(word[:], z)
		copy(p[i:], word[:])
	}
}

// decodeHeader checks a whole record (len(rec) == record size) for
// everything that makes it torn: magic, version, lengths, CRC and the
// generated payload. scratch must be at least the payload length. It
// returns the header, or a non-empty detail naming the problem.
func decodeHeader(rec, scratch []byte) (Header, string) {
	if string(rec[:len(Magic)]) != Magic {
		return Header{}, fmt.Sprintf("bad magic %q where a record header should start (the slot holds other non-zero data)", rec[:len(Magic)])
	}
	if v := binary.LittleEndian.Uint16(rec[offVersion:]); v != FormatVersion {
		return Header{}, fmt.Sprintf("format version %d, this probe writes %d", v, FormatVersion)
	}
	idLen := int(binary.LittleEndian.Uint16(rec[offIDLen:]))
	if idLen == 0 || idLen > MaxWriterIDBytes {
		return Header{}, fmt.Sprintf("writer id length %d outside 1..%d", idLen, MaxWriterIDBytes)
	}
	payLen := int(binary.LittleEndian.Uint32(rec[offPayLen:]))
	if payLen != len(rec)-HeaderBytes {
		return Header{}, fmt.Sprintf("payload length %d, want %d for %d-byte records (was the file written with --record-bytes %d?)",
			payLen, len(rec)-HeaderBytes, len(rec), payLen+HeaderBytes)
	}
	if stored, got := binary.LittleEndian.Uint32(rec[offCRC:]), recordCRC(rec); stored != got {
		return Header{}, fmt.Sprintf("crc32c 0x%08x != 0x%08x stored in the header", got, stored)
	}
	h := Header{
		WriterID:   string(rec[offID : offID+idLen]),
		Seq:        binary.LittleEndian.Uint64(rec[offSeq:]),
		WrittenAt:  time.Unix(0, int64(binary.LittleEndian.Uint64(rec[offTime:]))).UTC(),
		PayloadLen: payLen,
	}
	want := scratch[:payLen]
	fillPayload(want, h.WriterID, h.Seq)
	if !bytes.Equal(want, rec[HeaderBytes:]) {
		i := 0
		for i < payLen && want[i] == rec[HeaderBytes+i] {
			i++
		}
		return h, fmt.Sprintf("payload differs from what (writer %q, seq %d) generates from payload byte %d on (CRC matches: a stale or forged record)", h.WriterID, h.Seq, i)
	}
	return h, ""
}

// RecordBytesFromHeader returns the record size a file was written with,
// read from the header at its start (0 when there is none).
func RecordBytesFromHeader(f File) int {
	var hdr [HeaderBytes]byte
	if n, _ := f.ReadAt(hdr[:], 0); n < HeaderBytes || string(hdr[:len(Magic)]) != Magic {
		return 0
	}
	n := int(binary.LittleEndian.Uint32(hdr[offPayLen:])) + HeaderBytes
	if n > MaxRecordBytes {
		return 0
	}
	return n
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}
