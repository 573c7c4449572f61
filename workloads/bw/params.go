package bw

import (
	"fmt"
	"github.com/rdmasuite/rdmasuite/workloads/lat"
	"time"
)

// Op is the RDMA operation under test.
type Op string

const (
	OpWrite Op = "write"
	OpRead  Op = "read"
	// OpSend is measured as latency only (ib_send_lat's ping-pong): a
	// SEND bandwidth test needs the receiver to keep up with receives,
	// which is not what the suite's bandwidth checks are about.
	OpSend Op = "send"
)

// PingPongs says whether op's latency is a ping-pong (write, send), whose
// samples are round trips that perftest halves, rather than one READ at a
// time.
func (op Op) PingPongs() bool { return op == OpWrite || op == OpSend }

// Params of one test; the client sends them to the server, so both sides
// size their resources the same way.
type Params struct {
	Op       Op            `json:"op"`
	Sizes    []int         `json:"sizes"`    // message sizes in bytes, in order
	Iters    int           `json:"iters"`    // operations per QP per size (iteration mode)
	Duration time.Duration `json:"duration"` // if > 0: run for this long per size instead of Iters
	Warmup   int           `json:"warmup"`   // operations per QP before measuring
	QPs      int           `json:"qps"`
	TxDepth  int           `json:"txDepth"` // outstanding operations per QP
	CQMod    int           `json:"cqMod"`   // signal one completion every CQMod posts
	// CQModUpTo8K limits CQMod to sizes up to 8 KiB; larger ones request a
	// completion per post, as perftest does when -Q is not given (its
	// MSG_SIZE_CQ_MOD_LIMIT, 8192 B: moderation is not needed there, and
	// at 1 MiB a group of 100 posts is longer than a short --bw-duration
	// window on a slow link, which then counts nothing).
	CQModUpTo8K   bool `json:"cqModUpTo8K,omitempty"`
	Bidirectional bool `json:"bidirectional"`
	MaxInline     int  `json:"maxInline"` // post payloads up to this size inline (write, send); -1 with Latency: perftest's default for the device
	// Latency measures latency as perftest does instead of bandwidth:
	// write is ib_write_lat's ping-pong (both sides write in turn, half
	// the round trip), send is ib_send_lat's (the same with SENDs into
	// posted receives), read is ib_read_lat's one READ at a time. One QP,
	// tx depth 1, cq-mod 1, iteration mode.
	Latency bool `json:"latency,omitempty"`
	// LoadSize, with Latency, measures each op twice on the rail pair:
	// alone (the baseline), then while a WRITE stream of LoadSize-byte
	// messages runs between the same two rails on QPs of its own (latency
	// under load, as operators measure tail latency on a congested
	// fabric). 0: once, alone.
	LoadSize int `json:"loadSize,omitempty"`
	// QPTimeout is the QPs' local ACK timeout exponent: a requester
	// resends what the responder has not acknowledged within 4.096 µs ×
	// 2^QPTimeout (IBTA; perftest's -u, default 14 ≈ 67 ms). 0 (an older
	// client) means 14; the IBTA's own 0, wait forever, is never used: a
	// lost packet would hang the run.
	QPTimeout int `json:"qpTimeout,omitempty"`
}

// DefaultQPTimeout is perftest's default -u (perftest's
// DEF_QP_TIME = 14): 4.096 µs × 2^14 ≈ 67 ms.
const DefaultQPTimeout = 14

// EffectiveQPTimeout is the exponent QPs use for a configured n: n, or
// the default where none was set (an older client's params, a runner
// Config built without one).
func EffectiveQPTimeout(n int) int {
	if n == 0 {
		return DefaultQPTimeout
	}
	return n
}

// QPTimeoutDuration is the ACK timeout an exponent stands for.
func QPTimeoutDuration(exp int) time.Duration {
	return time.Duration(4096<<uint(exp)) * time.Nanosecond
}

// Defaults mirror perftest's: 5000 iterations, tx depth 128, CQ moderation
// 100 up to 8 KiB (ib_write_bw -h, perftest 4.5/24.x), one QP.
func Defaults() Params {
	return Params{Op: OpWrite, Sizes: []int{65536}, Iters: 5000, QPs: 1, TxDepth: 128, CQMod: 100, CQModUpTo8K: true, Warmup: 0, QPTimeout: DefaultQPTimeout}
}

// cqModLimit is perftest's MSG_SIZE_CQ_MOD_LIMIT.
const cqModLimit = 8192

// ForSize is p as one size's loop runs it: CQMod 1 above 8 KiB when
// CQModUpTo8K.
func (p Params) ForSize(size int) Params {
	if p.CQModUpTo8K && size > cqModLimit {
		p.CQMod = 1
	}
	return p
}

// SweepSizes is perftest's -a: every power of two from 2 bytes to 8 MiB.
func SweepSizes() []int {
	var s []int
	for n := 2; n <= 8<<20; n <<= 1 {
		s = append(s, n)
	}
	return s
}

// MaxSize is the largest message size of the run.
func (p Params) MaxSize() int {
	m := 0
	for _, s := range p.Sizes {
		m = max(m, s)
	}
	return m
}

// Validate rejects parameters that would hang or mis-measure, naming the fix.
func (p Params) Validate() error {
	switch {
	case p.Op != OpWrite && p.Op != OpRead && p.Op != OpSend:
		return fmt.Errorf("op %q: want write, read or send", p.Op)
	case p.Op == OpSend && !p.Latency:
		return fmt.Errorf("op send is measured as latency only (ib_send_lat): add --latency, or measure bandwidth with write or read")
	case len(p.Sizes) == 0:
		return fmt.Errorf("no message sizes: give --size or --sweep")
	case p.QPs < 1 || p.QPs > 1024:
		return fmt.Errorf("qps %d: want 1..1024", p.QPs)
	case p.TxDepth < 1:
		return fmt.Errorf("tx depth %d: want ≥ 1", p.TxDepth)
	case p.CQMod < 1 || p.CQMod > p.TxDepth:
		return fmt.Errorf("cq moderation %d: want 1..tx depth (%d), or the send queue fills before a completion is requested", p.CQMod, p.TxDepth)
	case p.Duration <= 0 && p.Iters < 1:
		return fmt.Errorf("iterations %d: want ≥ 1 (or a duration)", p.Iters)
	case p.MaxInline < -1 || (p.MaxInline == -1 && !p.Latency):
		return fmt.Errorf("inline %d: want ≥ 0 (-1, the device's perftest default, only for latency)", p.MaxInline)
	case p.Warmup < 0:
		return fmt.Errorf("warm-up %d: want ≥ 0", p.Warmup)
	case p.QPTimeout < 0 || p.QPTimeout > 31:
		return fmt.Errorf("qp timeout %d: want 1..31 (4.096 µs × 2^N; perftest's -u, default %d)", p.QPTimeout, DefaultQPTimeout)
	case p.Latency && (p.QPs != 1 || p.TxDepth != 1 || p.CQMod != 1):
		return fmt.Errorf("latency: one operation at a time on one QP (qps 1, tx depth 1, cq-mod 1), got qps %d, tx depth %d, cq-mod %d", p.QPs, p.TxDepth, p.CQMod)
	case p.Latency && (p.Duration > 0 || p.Bidirectional):
		return fmt.Errorf("latency: iteration mode, one direction (perftest's t_typical and percentiles need every sample)")
	case p.LoadSize < 0 || p.LoadSize > 1<<30:
		return fmt.Errorf("load size %d: want 1 B .. 1 GiB (0: no load)", p.LoadSize)
	case p.LoadSize != 0 && !p.Latency:
		return fmt.Errorf("load size %d: latency under load needs --latency (the stream is the load, the latency is the measurement)", p.LoadSize)
	case p.Latency && p.Iters < lat.Tail+2:
		return fmt.Errorf("latency: %d iterations: want at least %d (perftest drops the %d largest samples)", p.Iters, lat.Tail+2, lat.Tail)
	}
	for _, s := range p.Sizes {
		if s < 1 || s > 1<<30 {
			return fmt.Errorf("message size %d: want 1 B .. 1 GiB", s)
		}
	}
	return nil
}
