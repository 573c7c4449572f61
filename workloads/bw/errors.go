package bw

import (
	"context"
	"errors"
	"os"

	"github.com/rdmasuite/rdmasuite/workloads/probeout"
)

// Sentinels for the typed errors a bandwidth run can end with. Endpoints
// (workloads/bwverbs) tag their errors with them (Tag), the session code
// tags its own, and Classify maps them to probeout kinds with errors.Is:
// never by message text.
var (
	ErrNoDevice  = errors.New("no RDMA device")
	ErrNoNetdev  = errors.New("no RDMA device behind the network interface")
	ErrLinkDown  = errors.New("port not ACTIVE")
	ErrMemlock   = errors.New("memory registration refused")
	ErrTransport = errors.New("work completion failed")
	ErrTimeout   = errors.New("timed out")
	ErrPeer      = errors.New("peer failed")
	ErrUsage     = errors.New("bad parameters")
)

var sentinelKinds = []struct {
	err  error
	kind probeout.Kind
}{
	{ErrNoDevice, probeout.KindNoDevice},
	{ErrNoNetdev, probeout.KindNoNetdev},
	{ErrLinkDown, probeout.KindLinkDown},
	{ErrMemlock, probeout.KindMemlock},
	{ErrTransport, probeout.KindTransport},
	{ErrPeer, probeout.KindPeer},
	{ErrTimeout, probeout.KindTimeout},
	{ErrUsage, probeout.KindUsage},
}

// tagged is an error that also matches a sentinel, without changing the
// error's own message (which names the call, its inputs and errno).
type tagged struct {
	sentinel, err error
}

func (t *tagged) Error() string   { return t.err.Error() }
func (t *tagged) Unwrap() []error { return []error{t.sentinel, t.err} }

// Tag makes err match sentinel under errors.Is, keeping its message and
// its own chain (errors.Is(err, syscall.ENOMEM) still holds). Nil stays nil.
func Tag(sentinel, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, sentinel) {
		return err
	}
	return &tagged{sentinel: sentinel, err: err}
}

// PeerError is what the other side reported about its failure: its kind
// and message, as received over the out-of-band connection.
type PeerError struct {
	Role string // "server" or "client": who failed
	Rail string // the peer's rail (device/port), if known
	Err  *probeout.Error
}

func (e *PeerError) Error() string {
	who := e.Role
	if e.Rail != "" {
		who += " rail " + e.Rail
	}
	return who + " failed: " + e.Err.Error()
}

// Unwrap makes a PeerError match ErrPeer (and only that): the local side's
// kind is "peer"; the peer's own kind is in Err and in the message.
func (e *PeerError) Unwrap() error { return ErrPeer }

// Classify turns any error from a run into a typed probe error: an error
// that already is a *probeout.Error keeps its kind, one that matches a
// sentinel gets that sentinel's kind, deadlines are timeouts, and the rest
// is internal.
func Classify(err error) *probeout.Error {
	if err == nil {
		return nil
	}
	var pe *probeout.Error
	if errors.As(err, &pe) && !errors.Is(err, ErrPeer) {
		return &probeout.Error{Kind: pe.Kind, Message: err.Error()}
	}
	for _, s := range sentinelKinds {
		if errors.Is(err, s.err) {
			return &probeout.Error{Kind: s.kind, Message: err.Error()}
		}
	}
	if errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, context.DeadlineExceeded) {
		return &probeout.Error{Kind: probeout.KindTimeout, Message: err.Error()}
	}
	return &probeout.Error{Kind: probeout.KindInternal, Message: err.Error()}
}
