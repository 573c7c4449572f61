package ncclboot

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"time"
)

// Wire format: every frame is
//
//	magic "NCB" + version byte (4 bytes) | type (1 byte) | length (uint32 BE) | payload
//
// A client sends frameHello (JSON hello), the server answers frameOK (payload:
// the id for "id", empty for "report") or frameRefuse (UTF-8 reason), and the
// client confirms receipt with frameAck. Only after the ack does rank 0 count
// the rank as checked in.
const (
	protoVersion = 1
	maxFrame     = 4 << 20
)

var magic = [4]byte{'N', 'C', 'B', protoVersion}

const (
	frameHello  byte = 1
	frameOK     byte = 2
	frameRefuse byte = 3
	frameAck    byte = 4
)

const (
	kindID     = "id"
	kindReport = "report"
)

type hello struct {
	Kind  string          `json:"kind"`
	Rank  int             `json:"rank"`
	World int             `json:"world,omitempty"` // 0: client does not know / check
	Token string          `json:"token"`
	Data  json.RawMessage `json:"data,omitempty"` // report blob
}

// protocolError is a peer speaking something other than this protocol
// version; retrying will not help.
type protocolError struct{ msg string }

func (e *protocolError) Error() string { return "ncclboot: protocol error: " + e.msg }

func writeFrame(c net.Conn, typ byte, payload []byte, timeout time.Duration) error {
	if len(payload) > maxFrame {
		return fmt.Errorf("ncclboot: frame of %d bytes exceeds %d", len(payload), maxFrame)
	}
	if err := c.SetWriteDeadline(time.Now().Add(timeout)); err != nil {
		return err
	}
	buf := make([]byte, 9+len(payload))
	copy(buf, magic[:])
	buf[4] = typ
	binary.BigEndian.PutUint32(buf[5:9], uint32(len(payload)))
	copy(buf[9:], payload)
	_, err := c.Write(buf)
	return err
}

func readFrame(c net.Conn, timeout time.Duration) (byte, []byte, error) {
	if err := c.SetReadDeadline(time.Now().Add(timeout)); err != nil {
		return 0, nil, err
	}
	var hdr [9]byte
	if _, err := io.ReadFull(c, hdr[:]); err != nil {
		return 0, nil, err
	}
	if hdr[0] != magic[0] || hdr[1] != magic[1] || hdr[2] != magic[2] {
		return 0, nil, &protocolError{fmt.Sprintf("bad magic %q from %s: the peer is not an ncclboot endpoint (wrong port?)", hdr[:4], c.RemoteAddr())}
	}
	if hdr[3] != protoVersion {
		return 0, nil, &protocolError{fmt.Sprintf("peer %s speaks version %d, this binary speaks %d: run the same probe image on all ranks", c.RemoteAddr(), hdr[3], protoVersion)}
	}
	n := binary.BigEndian.Uint32(hdr[5:9])
	if n > maxFrame {
		return 0, nil, &protocolError{fmt.Sprintf("frame length %d from %s exceeds %d", n, c.RemoteAddr(), maxFrame)}
	}
	p := make([]byte, n)
	if _, err := io.ReadFull(c, p); err != nil {
		return 0, nil, err
	}
	return hdr[4], p, nil
}

// RefusedError is rank 0 refusing a rank's hello (token mismatch, duplicate
// or out-of-range rank, ...). It is permanent: Fetch and Report do not retry.
type RefusedError struct {
	Addr   string
	Rank   int
	Reason string
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("ncclboot: rank 0 at %s refused rank %d: %s", e.Addr, e.Rank, e.Reason)
}

func permanent(err error) bool {
	var r *RefusedError
	var p *protocolError
	var l *lengthError
	return errors.As(err, &r) || errors.As(err, &p) || errors.As(err, &l)
}

type lengthError struct{ got, want int }

func (e *lengthError) Error() string {
	return fmt.Sprintf("ncclboot: got a %d-byte id from rank 0, want %d: rank 0 and this rank disagree on the id length", e.got, e.want)
}
