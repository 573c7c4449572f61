package verbs

/*
#include <stdint.h>
#include <string.h>
#include <infiniband/verbs.h>

#include "cycles.h"

// RS_SPIN_EXPIRED is a polling loop's timeout test: it reads the cycle
// counter only every 1024th spin, as perftest's latency loops read none
// while they poll (under emulation a counter read is a helper call on the
// path that notices the peer's message). SPINS is the loop's counter.
#define RS_SPIN_EXPIRED(spins, t0, timeout) ((++(spins) & 1023) == 0 && rs_cycles() - (t0) > (timeout))

// The wr_id of every receive the send ping-pong posts (sends carry their
// sequence number, far below it).
#define RS_RECV_WR_ID UINT64_MAX

struct rs_loop_params {
	struct ibv_cq *cq;
	int nqp, opcode, inl, tx_depth, cq_mod, ex;
	uint32_t lkey, size;
	uint64_t laddr, slot;
	int64_t iters;     // per QP; ignored when deadline > 0
	uint64_t deadline; // cycles after the start; 0 = iteration mode
	int nodrain;       // at the deadline return at once, work left in flight
	int64_t cap;       // room in posted/completed (0: do not record)
	int general;       // the general loop even for one operation at a time
};

struct rs_loop_out {
	int64_t done;
	uint64_t first_post, last_done;
	int err_kind; // 0 none, 1 post, 2 poll, 3 completion status, 4 unexpected wr_id
	int err_code, err_qp;
	int64_t err_seq;
};

// rs_post posts wr (one SGE; RDMA WRITE, RDMA READ or SEND) through the
// extended-QP API (ibv_wr_*) when ex, as perftest does on the devices it
// lists, else through ibv_post_send. Every loop posts through here.
static inline int rs_post(struct ibv_qp *qp, int ex, struct ibv_send_wr *wr) {
	if (!ex) {
		struct ibv_send_wr *bad = NULL;
		return ibv_post_send(qp, wr, &bad);
	}
	struct ibv_qp_ex *qx = ibv_qp_to_qp_ex(qp);
	ibv_wr_start(qx);
	qx->wr_id = wr->wr_id;
	qx->wr_flags = wr->send_flags;
	switch (wr->opcode) {
	case IBV_WR_SEND:
		ibv_wr_send(qx);
		break;
	case IBV_WR_RDMA_READ:
		ibv_wr_rdma_read(qx, wr->wr.rdma.rkey, wr->wr.rdma.remote_addr);
		break;
	default:
		ibv_wr_rdma_write(qx, wr->wr.rdma.rkey, wr->wr.rdma.remote_addr);
	}
	if (wr->send_flags & IBV_SEND_INLINE)
		ibv_wr_set_inline_data(qx, (void *)(uintptr_t)wr->sg_list->addr, wr->sg_list->length);
	else
		ibv_wr_set_sge(qx, wr->sg_list->lkey, wr->sg_list->addr, wr->sg_list->length);
	return ibv_wr_complete(qx);
}

// rs_loop is perftest's run_iter_bw, op for op, with bw.RunLoop's rules (the
// Go reference in workloads/bw/engine.go, which the unit tests pin down):
// keep up to tx_depth operations outstanding per QP, signal every cq_mod-th
// post and the last, poll 16 completions at a time, stamp each post and each
// completion with the cycle counter. Posts go through rs_post (ibv_wr_*
// on extended QPs, which the caller creates where perftest would). It is in C because a cgo call per post
// costs more than the post itself on a software device: the Go runtime takes
// the P away from a thread that stays in a C call longer than 20 µs and has
// to get it back afterwards, once per operation.
// rs_one_at_a_time is perftest's run_iter_lat (ib_read_lat) op for op: one
// QP, one operation outstanding, every one signaled; stamp, post, poll one
// completion at a time until it arrives. The general loop below did more
// per operation (a 16-entry poll, a stamp after each completion, its
// bookkeeping for many QPs), all of it inside the round trip that READ
// latency is. No stamp is taken after a completion: the next post's stamp
// follows it at once and stands for op i's completion (the last op's is
// one counter read after it).
static int rs_one_at_a_time(struct ibv_qp *qp, uint64_t raddr, uint32_t rkey, int64_t *scnt, int64_t *ccnt,
                   uint64_t *posted, uint64_t *completed, const struct rs_loop_params *p, struct rs_loop_out *o) {
	struct ibv_wc wc;
	struct ibv_sge sge = { .addr = p->laddr, .length = p->size, .lkey = p->lkey };
	struct ibv_send_wr wr;
	memset(&wr, 0, sizeof(wr));
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = p->opcode;
	wr.send_flags = IBV_SEND_SIGNALED | (p->inl ? IBV_SEND_INLINE : 0);
	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	memset(o, 0, sizeof(*o));
	for (int64_t i = 0; i < p->iters; i++) {
		wr.wr_id = (uint64_t)i;
		uint64_t t = rs_cycles();
		if (i == 0) o->first_post = t;
		if (i < p->cap) posted[i] = t;
		if (i > 0 && i - 1 < p->cap) completed[i - 1] = t;
		int rc = rs_post(qp, p->ex, &wr);
		if (rc) {
			o->err_kind = 1; o->err_code = rc; o->err_seq = i; o->done = i;
			return -1;
		}
		scnt[0] = i + 1;
		int n;
		while ((n = ibv_poll_cq(p->cq, 1, &wc)) == 0)
			;
		if (n < 0) {
			o->err_kind = 2; o->err_code = n; o->done = i;
			return -1;
		}
		if (wc.status != IBV_WC_SUCCESS) {
			o->err_kind = 3; o->err_code = wc.status; o->err_seq = i; o->done = i;
			return -1;
		}
		ccnt[0] = i + 1;
	}
	uint64_t t = rs_cycles();
	if (p->iters > 0 && p->iters - 1 < p->cap) completed[p->iters - 1] = t;
	o->last_done = t;
	o->done = p->iters;
	return 0;
}

static int rs_loop(struct ibv_qp **qps, uint64_t *raddr, uint32_t *rkey, int64_t *scnt, int64_t *ccnt,
                   uint64_t *posted, uint64_t *completed, const struct rs_loop_params *p, struct rs_loop_out *o) {
	if (!p->general && p->nqp == 1 && p->tx_depth == 1 && p->cq_mod == 1 && !p->deadline)
		return rs_one_at_a_time(qps[0], raddr[0], rkey[0], scnt, ccnt, posted, completed, p, o);
	struct ibv_wc wc[16];
	struct ibv_sge sge = { .length = p->size, .lkey = p->lkey };
	struct ibv_send_wr wr;
	memset(&wr, 0, sizeof(wr));
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = p->opcode;
	int64_t iters = p->deadline ? INT64_MAX / 4 : p->iters;
	int64_t total = 0, done = 0, np = 0, nc = 0;
	int stop = 0;
	memset(o, 0, sizeof(*o));
	uint64_t start = rs_cycles();
	for (;;) {
		if (p->deadline && !stop && rs_cycles() - start >= p->deadline) {
			stop = 1;
			// perftest -D: what completed by the deadline is the
			// measurement; the rest stays in flight for the caller to
			// discard with the QPs (a 4-QP × 128 × 1 MiB queue takes
			// seconds to drain on a slow link, minutes on Soft-RoCE).
			if (p->nodrain) break;
		}
		for (int q = 0; q < p->nqp; q++) {
			while (scnt[q] < iters && scnt[q] - ccnt[q] < p->tx_depth) {
				// After the deadline only finish the current moderation
				// group, so every posted op is covered by a completion.
				if (stop && scnt[q] % p->cq_mod == 0) break;
				int last = scnt[q] + 1 == iters;
				int sig = (scnt[q] + 1) % p->cq_mod == 0 || last;
				sge.addr = p->laddr + (uint64_t)q * p->slot;
				wr.wr_id = (uint64_t)q << 40 | (uint64_t)scnt[q];
				wr.send_flags = (sig ? IBV_SEND_SIGNALED : 0) | (p->inl ? IBV_SEND_INLINE : 0);
				wr.wr.rdma.remote_addr = raddr[q];
				wr.wr.rdma.rkey = rkey[q];
				uint64_t t = rs_cycles();
				int rc = rs_post(qps[q], p->ex, &wr);
				if (rc) {
					o->err_kind = 1; o->err_code = rc; o->err_qp = q; o->err_seq = scnt[q]; o->done = done;
					return -1;
				}
				if (total == 0) o->first_post = t;
				if (np < p->cap) posted[np++] = t;
				scnt[q]++;
				total++;
			}
		}
		if (done == total) {
			int all = 1;
			for (int q = 0; q < p->nqp; q++) all &= scnt[q] >= iters;
			if (stop || all) break;
		}
		int n = ibv_poll_cq(p->cq, 16, wc);
		if (n < 0) {
			o->err_kind = 2; o->err_code = n; o->done = done;
			return -1;
		}
		if (n == 0) continue;
		uint64_t t = rs_cycles();
		for (int i = 0; i < n; i++) {
			int q = (int)(wc[i].wr_id >> 40);
			int64_t seq = (int64_t)(wc[i].wr_id & ((1ull << 40) - 1));
			if (wc[i].status != IBV_WC_SUCCESS) {
				o->err_kind = 3; o->err_code = wc[i].status; o->err_qp = q; o->err_seq = seq; o->done = done;
				return -1;
			}
			if (q >= p->nqp || seq < ccnt[q]) {
				o->err_kind = 4; o->err_qp = q; o->err_seq = seq; o->done = done;
				return -1;
			}
			int64_t covered = seq + 1 - ccnt[q];
			ccnt[q] = seq + 1;
			done += covered;
			for (int64_t k = 0; k < covered && nc < p->cap; k++) completed[nc++] = t;
			o->last_done = t;
		}
	}
	o->done = done;
	return 0;
}

// rs_stamp_post is the latency loops' post: perftest's tposted[scnt] =
// get_cycles() right before it, then (write ping-pong) the next count into
// mark, the last byte of the send area, then the post with wr_id scnt
// (rs_post). 0, or -1 with o filled.
static int rs_stamp_post(struct ibv_qp *qp, int ex, struct ibv_send_wr *wr, volatile uint8_t *mark, uint64_t *posted, int64_t scnt, struct rs_loop_out *o) {
	uint64_t t = rs_cycles();
	posted[scnt] = t;
	if (scnt == 0) o->first_post = t;
	if (mark) *mark = (uint8_t)(scnt + 1);
	wr->wr_id = (uint64_t)scnt;
	int rc = rs_post(qp, ex, wr);
	if (rc) {
		o->err_kind = 1; o->err_code = rc; o->err_seq = scnt; o->done = scnt;
		return -1;
	}
	return 0;
}

// rs_pingpong is perftest's run_iter_lat_write: a memory-polling ping-pong
// of RDMA WRITEs on one QP. Each side waits until the last byte of its
// receive area holds the next count (the client skips the wait before its
// first post), stamps the post, puts its own next count into the last byte
// of its send area and writes that area into the peer's receive area,
// signaled, then waits for that one completion. A wait longer than
// p->timeout cycles for the peer stops the loop (err_kind 5).
struct rs_pp_params {
	struct ibv_qp *qp;
	struct ibv_cq *cq;
	uint32_t lkey, rkey, size;
	uint64_t send_addr, recv_addr, raddr;
	int inl, client, ex;
	int64_t iters;
	uint64_t timeout;
};

static int rs_pingpong(const struct rs_pp_params *p, uint64_t *posted, struct rs_loop_out *o) {
	volatile uint8_t *recv_last = (volatile uint8_t *)(uintptr_t)(p->recv_addr + p->size - 1);
	volatile uint8_t *send_last = (volatile uint8_t *)(uintptr_t)(p->send_addr + p->size - 1);
	struct ibv_sge sge = { .addr = p->send_addr, .length = p->size, .lkey = p->lkey };
	struct ibv_send_wr wr;
	struct ibv_wc wc;
	memset(&wr, 0, sizeof(wr));
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_RDMA_WRITE;
	wr.send_flags = IBV_SEND_SIGNALED | (p->inl ? IBV_SEND_INLINE : 0);
	wr.wr.rdma.remote_addr = p->raddr;
	wr.wr.rdma.rkey = p->rkey;
	int64_t scnt = 0, rcnt = 0;
	memset(o, 0, sizeof(*o));
	while (scnt < p->iters || rcnt < p->iters) {
		if (rcnt < p->iters && !(p->client && scnt == 0)) {
			rcnt++;
			uint64_t t0 = rs_cycles();
			uint32_t spins = 0;
			while (*recv_last != (uint8_t)rcnt) {
				if (RS_SPIN_EXPIRED(spins, t0, p->timeout)) {
					o->err_kind = 5; o->err_seq = rcnt; o->done = scnt;
					return -1;
				}
			}
		}
		if (scnt < p->iters) {
			if (rs_stamp_post(p->qp, p->ex, &wr, send_last, posted, scnt, o)) return -1;
			scnt++;
			int n;
			uint64_t t1 = rs_cycles();
			uint32_t spins = 0;
			while ((n = ibv_poll_cq(p->cq, 1, &wc)) == 0) {
				if (RS_SPIN_EXPIRED(spins, t1, p->timeout)) {
					o->err_kind = 5; o->err_seq = scnt; o->done = scnt;
					return -1;
				}
			}
			if (n < 0) {
				o->err_kind = 2; o->err_code = n; o->done = scnt;
				return -1;
			}
			if (wc.status != IBV_WC_SUCCESS) {
				o->err_kind = 3; o->err_code = wc.status; o->err_seq = (int64_t)wc.wr_id; o->done = scnt;
				return -1;
			}
			o->last_done = rs_cycles();
		}
	}
	o->done = scnt;
	return 0;
}

// rs_sendpong is perftest's run_iter_lat_send: a ping-pong of SENDs on one
// QP. Each side waits for the peer's next message (the client skips the
// wait before its first post), stamps the post, sends, signaled, and waits
// for that completion. Send and receive completions share one CQ, so each
// poll takes one completion of either kind; every receive that completes
// is posted again at once, so the caller's receives (p->rx_len bytes at
// recv_addr, posted before the peers connected) never run out and the
// peer never meets an empty receive queue. A wait longer than p->timeout
// cycles stops the loop (err_kind 5); a failed repost is err_kind 6.
struct rs_sp_params {
	struct ibv_qp *qp;
	struct ibv_cq *cq;
	uint32_t lkey, size, rx_len;
	uint64_t send_addr, recv_addr;
	int inl, client, ex;
	int64_t iters;
	uint64_t timeout;
};

// rs_sp_poll takes at most one completion: 1 when it took one, 0 when the
// CQ was empty, -1 on an error (recorded in o).
static int rs_sp_poll(const struct rs_sp_params *p, int64_t *arrived, int64_t *sent, int64_t scnt, struct rs_loop_out *o) {
	struct ibv_wc wc;
	int n = ibv_poll_cq(p->cq, 1, &wc);
	if (n == 0) return 0;
	if (n < 0) {
		o->err_kind = 2; o->err_code = n; o->done = scnt;
		return -1;
	}
	int recv = wc.wr_id == RS_RECV_WR_ID;
	if (wc.status != IBV_WC_SUCCESS) {
		o->err_kind = 3; o->err_code = wc.status; o->err_seq = recv ? *arrived + 1 : (int64_t)wc.wr_id; o->done = scnt;
		return -1;
	}
	if (!recv) {
		(*sent)++;
		return 1;
	}
	(*arrived)++;
	struct ibv_sge sge = { .addr = p->recv_addr, .length = p->rx_len, .lkey = p->lkey };
	struct ibv_recv_wr wr, *bad = NULL;
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = RS_RECV_WR_ID;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	int rc = ibv_post_recv(p->qp, &wr, &bad);
	if (rc) {
		o->err_kind = 6; o->err_code = rc; o->err_seq = *arrived; o->done = scnt;
		return -1;
	}
	return 1;
}

// rs_sp_wait polls until *count (arrived or sent, which rs_sp_poll
// advances) reaches want; a peer silent for p->timeout cycles is err_kind
// 5 naming message seq. 0, or -1 with o filled.
static int rs_sp_wait(const struct rs_sp_params *p, int64_t *arrived, int64_t *sent, const int64_t *count, int64_t want,
                      int64_t seq, int64_t scnt, struct rs_loop_out *o) {
	uint64_t t0 = rs_cycles();
	uint32_t spins = 0;
	while (*count < want) {
		int r = rs_sp_poll(p, arrived, sent, scnt, o);
		if (r < 0) return -1;
		if (r == 0 && RS_SPIN_EXPIRED(spins, t0, p->timeout)) {
			o->err_kind = 5; o->err_seq = seq; o->done = scnt;
			return -1;
		}
	}
	return 0;
}

static int rs_sendpong(const struct rs_sp_params *p, uint64_t *posted, struct rs_loop_out *o) {
	struct ibv_sge sge = { .addr = p->send_addr, .length = p->size, .lkey = p->lkey };
	struct ibv_send_wr wr;
	memset(&wr, 0, sizeof(wr));
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_SIGNALED | (p->inl ? IBV_SEND_INLINE : 0);
	int64_t scnt = 0, rcnt = 0, arrived = 0, sent = 0;
	memset(o, 0, sizeof(*o));
	while (scnt < p->iters || rcnt < p->iters) {
		if (rcnt < p->iters && !(p->client && scnt == 0)) {
			rcnt++;
			if (rs_sp_wait(p, &arrived, &sent, &arrived, rcnt, rcnt, scnt, o)) return -1;
		}
		if (scnt < p->iters) {
			if (rs_stamp_post(p->qp, p->ex, &wr, NULL, posted, scnt, o)) return -1;
			scnt++;
			if (rs_sp_wait(p, &arrived, &sent, &sent, scnt, scnt, scnt, o)) return -1;
			o->last_done = rs_cycles();
		}
	}
	o->done = scnt;
	return 0;
}
*/
import "C"

import (
	"errors"
	"fmt"
	"syscall"
	"unsafe"

	"github.com/rdmasuite/rdmasuite/workloads/units"
)

// LoopTarget is the peer buffer one QP writes to or reads from.
type LoopTarget struct {
	Addr uint64
	RKey uint32
}

// LoopSpec is one size's bandwidth loop: QP i works on bytes [i·Slot,
// i·Slot+Size) of MR and on Targets[i] at the peer.
type LoopSpec struct {
	QPs      []*QP
	CQ       *CQ
	MR       *MR
	Targets  []LoopTarget
	Op       Op
	Slot     int
	Size     int
	Inline   bool
	Iters    int    // per QP (iteration mode)
	Deadline uint64 // cycles; > 0 runs until then instead of Iters
	// NoDrain returns at the deadline without waiting for the work still
	// in flight (LoopResult.LeftInFlight); the QPs then hold it and must be
	// replaced before they carry another loop.
	NoDrain bool
	TxDepth int
	CQMod   int
	Record  bool // keep every post's and completion's cycle stamp
	// General runs the many-QP loop even for one operation at a time on
	// one QP, which otherwise runs in perftest's run_iter_lat shape (to
	// compare the two on the same QPs).
	General bool
}

// LoopResult holds cycle-counter stamps (see Cycles). Posted is in post
// order, Completed in completion order; both only with Record.
type LoopResult struct {
	Done int
	// LeftInFlight is what was posted and not covered by a completion when
	// a NoDrain loop stopped.
	LeftInFlight int
	FirstPost    uint64
	LastDone     uint64
	Posted       []uint64
	Completed    []uint64
	// Usage is what competed with the loop's thread while it ran (nil
	// when the kernel's counters could not be read).
	Usage *ThreadUsage
}

// RunLoop runs the whole post/poll loop of one size in a single C call.
func RunLoop(s LoopSpec) (LoopResult, error) {
	n := len(s.QPs)
	if n == 0 || len(s.Targets) != n || s.CQ == nil || s.MR == nil || s.TxDepth < 1 || s.CQMod < 1 {
		return LoopResult{}, fmt.Errorf("verbs loop: incomplete spec (%d QPs, %d targets, depth %d, cq-mod %d)", n, len(s.Targets), s.TxDepth, s.CQMod)
	}
	if s.Slot*(n-1)+s.Size > s.MR.Size {
		return LoopResult{}, fmt.Errorf("verbs loop: %d QPs × %d B slots exceed the %s MR", n, s.Slot, units.Bytes(int64(s.MR.Size)))
	}
	if s.Inline && s.MR.External() {
		return LoopResult{}, errInlineExternal(s.MR)
	}
	qps := make([]*C.struct_ibv_qp, n)
	raddr := make([]C.uint64_t, n)
	rkey := make([]C.uint32_t, n)
	for i, q := range s.QPs {
		qps[i], raddr[i], rkey[i] = q.qp, C.uint64_t(s.Targets[i].Addr), C.uint32_t(s.Targets[i].RKey)
	}
	scnt := make([]C.int64_t, n)
	ccnt := make([]C.int64_t, n)
	var res LoopResult
	var cp C.int64_t
	if s.Record && s.Deadline == 0 {
		res.Posted = make([]uint64, s.Iters*n)
		res.Completed = make([]uint64, s.Iters*n)
		cp = C.int64_t(s.Iters * n)
	}
	p := C.struct_rs_loop_params{
		cq: s.CQ.cq, nqp: C.int(n), opcode: C.int(s.Op), inl: cbool(s.Inline),
		tx_depth: C.int(s.TxDepth), cq_mod: C.int(s.CQMod), ex: cbool(allEx(s.QPs)),
		lkey: s.MR.mr.lkey, size: C.uint32_t(s.Size),
		laddr: C.uint64_t(s.MR.addr), slot: C.uint64_t(s.Slot),
		iters: C.int64_t(s.Iters), deadline: C.uint64_t(s.Deadline), nodrain: cbool(s.NoDrain), cap: cp, general: cbool(s.General),
	}
	var o C.struct_rs_loop_out
	var posted, completed *C.uint64_t
	if cp > 0 {
		posted = (*C.uint64_t)(unsafe.Pointer(&res.Posted[0]))
		completed = (*C.uint64_t)(unsafe.Pointer(&res.Completed[0]))
	}
	defer quietRuntime()()
	mark := startUsage()
	rc := C.rs_loop(&qps[0], &raddr[0], &rkey[0], &scnt[0], &ccnt[0], posted, completed, &p, &o)
	if u, ok := mark.end(); ok {
		res.Usage = &u
	}
	res.Done, res.FirstPost, res.LastDone = int(o.done), uint64(o.first_post), uint64(o.last_done)
	nposted := int(sum(scnt))
	res.LeftInFlight = nposted - res.Done
	if cp > 0 {
		res.Posted, res.Completed = res.Posted[:min(int(cp), nposted)], res.Completed[:min(int(cp), res.Done)]
	}
	if rc == 0 {
		return res, nil
	}
	qpn := uint32(0)
	if q := int(o.err_qp); q >= 0 && q < n {
		qpn = s.QPs[q].QPN()
	}
	switch o.err_kind {
	case 1:
		return res, fmt.Errorf("post %s on QP index %d (op %d): %w", units.Bytes(int64(s.Size)), int(o.err_qp), int64(o.err_seq),
			&Error{Call: fmt.Sprintf("ibv_post_send(QP %d, %s)", qpn, units.Bytes(int64(s.Size))), Errno: syscall.Errno(o.err_code)})
	case 2:
		return res, &Error{Call: "ibv_poll_cq", Errno: syscall.EIO}
	case 3:
		return res, &CompletionError{QPIndex: int(o.err_qp), Seq: int64(o.err_seq), Status: int(o.err_code)}
	default:
		return res, fmt.Errorf("unexpected completion wr_id (QP index %d, op %d)", int(o.err_qp), int64(o.err_seq))
	}
}

func sum(v []C.int64_t) int64 {
	var t int64
	for _, x := range v {
		t += int64(x)
	}
	return t
}

func allEx(qps []*QP) bool {
	for _, q := range qps {
		if !q.ex {
			return false
		}
	}
	return true
}

// PingPongSpec is one size of a ping-pong on one QP. Op OpWrite (the zero
// value) is ib_write_lat's: the peer writes into [RecvOff, RecvOff+Size) of
// MR, we write from [SendOff, SendOff+Size) into Target. Op OpSend is
// ib_send_lat's: we send from SendOff; the peer's messages land in the
// receives the caller posted before the peers connected (PostRecv with
// PingPongRecvID, RecvLen bytes at RecvOff), which the loop posts again
// as they complete.
type PingPongSpec struct {
	QP      *QP
	CQ      *CQ
	MR      *MR
	Op      Op
	Target  LoopTarget
	RecvOff int
	RecvLen int // OpSend: the length of each posted receive (≥ Size)
	SendOff int
	Size    int
	Inline  bool
	Client  bool   // the client posts first; the server answers
	Iters   int    // messages each side sends
	Timeout uint64 // cycles to wait for the peer (one message, or one completion)
	// Usage, when set, receives what competed with the loop's thread
	// while it ran (left zero when the kernel's counters could not be read).
	Usage *ThreadUsage
}

// PingPongRecvID is the wr_id of the receives a send ping-pong consumes.
const PingPongRecvID = uint64(C.RS_RECV_WR_ID)

// ErrPeerSilent is a ping-pong whose peer stopped answering.
var ErrPeerSilent = errors.New("the peer stopped answering the ping-pong")

// PingPong runs the ping-pong of one size in a single C call and returns
// the cycle stamp of every post.
func PingPong(s PingPongSpec) ([]uint64, error) {
	if s.QP == nil || s.CQ == nil || s.MR == nil || s.Size < 1 || s.Iters < 1 || s.Timeout == 0 {
		return nil, fmt.Errorf("verbs ping-pong: incomplete spec (size %d, iters %d, timeout %d)", s.Size, s.Iters, s.Timeout)
	}
	if s.MR.External() || s.MR.buf == nil {
		return nil, errors.New("verbs ping-pong: the CPU polls the receive area, so the MR must be host memory this package allocated")
	}
	if s.Op != OpWrite && s.Op != OpSend {
		return nil, fmt.Errorf("verbs ping-pong: op %d: want write or send", int(s.Op))
	}
	if s.Op == OpSend {
		return sendPingPong(s)
	}
	if s.RecvOff+s.Size > s.MR.Size || s.SendOff+s.Size > s.MR.Size || (s.RecvOff < s.SendOff+s.Size && s.SendOff < s.RecvOff+s.Size) {
		return nil, fmt.Errorf("verbs ping-pong: receive [%d,+%d) and send [%d,+%d) areas must be apart inside the %d B MR", s.RecvOff, s.Size, s.SendOff, s.Size, s.MR.Size)
	}
	// Both areas must hold zeros when the peer's first write can arrive
	// (the first count expected is 1), which is before this call on the
	// answering side: the caller zeroes the MR before the peers connect
	// (MR.Zero), and every ping-pong leaves its areas zeroed for the next.
	defer func() {
		C.memset(unsafe.Add(s.MR.buf, s.RecvOff), 0, C.size_t(s.Size))
		C.memset(unsafe.Add(s.MR.buf, s.SendOff), 0, C.size_t(s.Size))
	}()
	posted := make([]uint64, s.Iters)
	p := C.struct_rs_pp_params{qp: s.QP.qp, cq: s.CQ.cq, lkey: s.MR.mr.lkey, rkey: C.uint32_t(s.Target.RKey), size: C.uint32_t(s.Size),
		send_addr: C.uint64_t(uint64(s.MR.addr) + uint64(s.SendOff)), recv_addr: C.uint64_t(uint64(s.MR.addr) + uint64(s.RecvOff)),
		raddr: C.uint64_t(s.Target.Addr), inl: cbool(s.Inline), client: cbool(s.Client), ex: cbool(s.QP.ex), iters: C.int64_t(s.Iters), timeout: C.uint64_t(s.Timeout)}
	var o C.struct_rs_loop_out
	defer quietRuntime()()
	mark := startUsage()
	rc := C.rs_pingpong(&p, (*C.uint64_t)(unsafe.Pointer(&posted[0])), &o)
	s.keepUsage(mark)
	return pingPongResult(s, posted, rc, &o)
}

// sendPingPong is PingPong for OpSend (rs_sendpong).
func sendPingPong(s PingPongSpec) ([]uint64, error) {
	if s.RecvLen < s.Size || s.RecvOff+s.RecvLen > s.MR.Size || s.SendOff+s.Size > s.MR.Size {
		return nil, fmt.Errorf("verbs send ping-pong: %d B messages need receives of at least that length (%d B posted at %d) and a send area inside the %d B MR", s.Size, s.RecvLen, s.RecvOff, s.MR.Size)
	}
	posted := make([]uint64, s.Iters)
	p := C.struct_rs_sp_params{qp: s.QP.qp, cq: s.CQ.cq, lkey: s.MR.mr.lkey, size: C.uint32_t(s.Size), rx_len: C.uint32_t(s.RecvLen),
		send_addr: C.uint64_t(uint64(s.MR.addr) + uint64(s.SendOff)), recv_addr: C.uint64_t(uint64(s.MR.addr) + uint64(s.RecvOff)),
		inl: cbool(s.Inline), client: cbool(s.Client), ex: cbool(s.QP.ex), iters: C.int64_t(s.Iters), timeout: C.uint64_t(s.Timeout)}
	var o C.struct_rs_loop_out
	defer quietRuntime()()
	mark := startUsage()
	rc := C.rs_sendpong(&p, (*C.uint64_t)(unsafe.Pointer(&posted[0])), &o)
	s.keepUsage(mark)
	return pingPongResult(s, posted, rc, &o)
}

// keepUsage ends the usage count begun before the loop and stores it
// where the spec asked.
func (s PingPongSpec) keepUsage(m *usageMark) {
	u, ok := m.end()
	if ok && s.Usage != nil {
		*s.Usage = u
	}
}

// pingPongResult turns a ping-pong's outcome into the posts it made and
// an error naming what stopped it.
func pingPongResult(s PingPongSpec, posted []uint64, rc C.int, o *C.struct_rs_loop_out) ([]uint64, error) {
	done := int(o.done)
	if rc == 0 {
		return posted[:done], nil
	}
	switch o.err_kind {
	case 1:
		return posted[:done], &Error{Call: fmt.Sprintf("ibv_post_send(QP %d, ping %d)", s.QP.QPN(), int64(o.err_seq)), Errno: syscall.Errno(o.err_code)}
	case 2:
		return posted[:done], &Error{Call: "ibv_poll_cq", Errno: syscall.EIO}
	case 3:
		return posted[:done], &CompletionError{QPIndex: 0, Seq: int64(o.err_seq), Status: int(o.err_code)}
	case 6:
		return posted[:done], &Error{Call: fmt.Sprintf("ibv_post_recv(QP %d, after message %d)", s.QP.QPN(), int64(o.err_seq)), Errno: syscall.Errno(o.err_code)}
	default:
		return posted[:done], fmt.Errorf("%w: message %d never arrived (or its completion), after %d sent", ErrPeerSilent, int64(o.err_seq), done)
	}
}
