package ncclbench

import (
	"context"
	"errors"
	"fmt"

	"github.com/rdmasuite/rdmasuite/workloads/nccl"
)

// Run measures every collective of cfg on one rank, as one rank of an
// nccl-tests run does. Every rank of the communicator must call Run with
// the same cfg; the result of each goes to Combine.
//
// Per collective: a warm-up (Warmup out-of-place calls at every size from
// MinBytes doubling to MaxBytes, a Sync per size), then per size, the
// out-of-place then the in-place variant, each as nccl-tests' BenchTime:
// with Check, the operands are initialised; one untimed call and a Sync
// (nccl-tests' "Sync" call; its barrier is left to the collective itself);
// Iters timed calls and a Sync, timed by the wall clock; with Check, a
// dedicated check: operands re-initialised, one call, Sync, the output
// downloaded and compared. Iteration i uses the buffers shifted by
// Size × (i mod (MaxBytes/Size)) bytes, as nccl-tests does against cache
// effects; the check uses shift 0. Send and receive buffers of MaxBytes
// each are allocated once per Run.
//
// Run stops at the first error (a failed call, upload, download or Sync,
// or ctx ending between sizes): the rows measured so far are kept, the
// error is recorded on the row (or collective) where it happened and in
// RankResult.Error, and returned.
func Run(ctx context.Context, comm Comm, mem Memory, cfg Config) (RankResult, error) {
	if comm == nil || mem == nil {
		return RankResult{Error: "ncclbench: nil Comm or Memory"}, errors.New("ncclbench: nil Comm or Memory")
	}
	res := RankResult{Rank: comm.Rank(), World: comm.World()}
	fail := func(err error) (RankResult, error) {
		err = fmt.Errorf("ncclbench: rank %d: %w", res.Rank, err)
		res.Error = err.Error()
		return res, err
	}
	cfg, err := cfg.normalized()
	res.Params = cfg.Params()
	if err != nil {
		res.Error = err.Error()
		return res, err
	}
	if res.World < 1 || res.Rank < 0 || res.Rank >= res.World {
		return fail(fmt.Errorf("rank %d of world %d", res.Rank, res.World))
	}
	r := &runner{ctx: ctx, comm: comm, mem: mem, cfg: cfg, rank: res.Rank, world: res.World}
	if r.send, err = mem.Alloc(int(cfg.MaxBytes)); err != nil {
		return fail(fmt.Errorf("allocating the %d-byte send buffer: %w", cfg.MaxBytes, err))
	}
	if r.recv, err = mem.Alloc(int(cfg.MaxBytes)); err != nil {
		err = fmt.Errorf("allocating the %d-byte receive buffer: %w", cfg.MaxBytes, err)
		if ferr := mem.Free(r.send); ferr != nil {
			err = errors.Join(err, fmt.Errorf("freeing the send buffer: %w", ferr))
		}
		return fail(err)
	}
	for _, c := range cfg.Collectives {
		rc, err := r.collective(c)
		res.Collectives = append(res.Collectives, rc)
		if err != nil {
			err = errors.Join(err, r.free())
			return fail(err)
		}
	}
	if err := r.free(); err != nil {
		return fail(err)
	}
	return res, nil
}

type runner struct {
	ctx        context.Context
	comm       Comm
	mem        Memory
	cfg        Config
	rank       int
	world      int
	send, recv Buffer
	scratch    []byte
	rep        int64
}

func (r *runner) free() error {
	var errs []error
	if err := r.mem.Free(r.send); err != nil {
		errs = append(errs, fmt.Errorf("freeing the send buffer: %w", err))
	}
	if err := r.mem.Free(r.recv); err != nil {
		errs = append(errs, fmt.Errorf("freeing the receive buffer: %w", err))
	}
	return errors.Join(errs...)
}

func variantName(inPlace bool) string {
	if inPlace {
		return "in-place"
	}
	return "out-of-place"
}

func (r *runner) collective(c nccl.Collective) (RankCollective, error) {
	rc := RankCollective{Collective: c}
	failColl := func(err error) (RankCollective, error) {
		rc.Error = err.Error()
		return rc, err
	}
	if err := r.ctx.Err(); err != nil {
		return failColl(fmt.Errorf("%s: not started: %w", c, err))
	}
	if r.cfg.Warmup > 0 {
		for _, size := range r.cfg.warmupSizes() {
			sh, err := ShapeOf(c, size, r.world)
			if err != nil {
				return failColl(err)
			}
			for it := range r.cfg.Warmup {
				if err := r.call(c, sh, false, it); err != nil {
					return failColl(fmt.Errorf("%s warm-up size %d iteration %d: %w", c, sh.Size, it, err))
				}
			}
			if err := r.comm.Sync(); err != nil {
				return failColl(fmt.Errorf("%s warm-up size %d: Sync: %w", c, sh.Size, err))
			}
		}
	}
	var variants []bool
	if r.cfg.OutOfPlace {
		variants = append(variants, false)
	}
	if r.cfg.InPlace {
		variants = append(variants, true)
	}
	for _, size := range r.cfg.Sizes() {
		if err := r.ctx.Err(); err != nil {
			return failColl(fmt.Errorf("%s: stopped before size %d: %w", c, size, err))
		}
		sh, err := ShapeOf(c, size, r.world)
		if err != nil {
			return failColl(err)
		}
		row := Row{Size: sh.Size, Count: sh.Count, Type: TypeName, RedOp: RedOp(c)}
		for _, inPlace := range variants {
			h, err := r.half(c, sh, inPlace)
			if err != nil {
				err = fmt.Errorf("%s size %d %s: %w", c, sh.Size, variantName(inPlace), err)
				row.Error = err.Error()
				rc.Rows = append(rc.Rows, row)
				return rc, err
			}
			if inPlace {
				row.InPlace = &h
			} else {
				row.OutOfPlace = &h
			}
		}
		rc.Rows = append(rc.Rows, row)
	}
	return rc, nil
}

// half is nccl-tests' BenchTime for one variant of one size.
func (r *runner) half(c nccl.Collective, sh Shape, inPlace bool) (Half, error) {
	if r.cfg.Check {
		if err := r.initData(c, sh, inPlace, newPattern(0, r.world)); err != nil {
			return Half{}, err
		}
	}
	if err := r.call(c, sh, inPlace, 0); err != nil {
		return Half{}, fmt.Errorf("untimed first call: %w", err)
	}
	if err := r.comm.Sync(); err != nil {
		return Half{}, fmt.Errorf("Sync after the untimed first call: %w", err)
	}
	start := r.cfg.Now()
	for it := range r.cfg.Iters {
		if err := r.call(c, sh, inPlace, it); err != nil {
			return Half{}, fmt.Errorf("timed iteration %d: %w", it, err)
		}
	}
	if err := r.comm.Sync(); err != nil {
		return Half{}, fmt.Errorf("Sync after %d timed iterations: %w", r.cfg.Iters, err)
	}
	elapsed := r.cfg.Now().Sub(start)
	sec := elapsed.Seconds() / float64(r.cfg.Iters)
	h := Half{TimeUS: float64(elapsed) / 1e3 / float64(r.cfg.Iters)}
	h.AlgBW = nccl.AlgBandwidth(sh.Size, sec)
	h.BusBW = nccl.BusBandwidth(c, h.AlgBW, r.world)

	if !r.cfg.Check || (inPlace && !inPlaceChecked(c)) {
		h.NA = true
		return h, nil
	}
	r.rep++
	p := newPattern(r.rep, r.world)
	if err := r.initData(c, sh, inPlace, p); err != nil {
		return Half{}, fmt.Errorf("check: %w", err)
	}
	if err := r.call(c, sh, inPlace, 0); err != nil {
		return Half{}, fmt.Errorf("check call: %w", err)
	}
	if err := r.comm.Sync(); err != nil {
		return Half{}, fmt.Errorf("Sync after the check call: %w", err)
	}
	out := r.buf(sh.RecvBytes)
	if len(out) > 0 {
		at := r.recv
		if inPlace {
			at += Buffer(sh.RecvInPlaceOffset * int64(r.rank))
		}
		if err := r.mem.Download(out, at); err != nil {
			return Half{}, fmt.Errorf("check: downloading %d bytes: %w", len(out), err)
		}
	}
	h.Wrong = p.wrong(c, sh, r.rank, out)
	return h, nil
}

// buf is the host scratch buffer, n bytes long.
func (r *runner) buf(n int64) []byte {
	if int64(cap(r.scratch)) < n {
		r.scratch = make([]byte, n)
	}
	return r.scratch[:n]
}

// initData writes the pattern into the operands of the call at shift 0
// and zeroes the output, as nccl-tests' *InitData does.
func (r *runner) initData(c nccl.Collective, sh Shape, inPlace bool, p *pattern) error {
	rank := int64(r.rank)
	if inPlace {
		sendAt := sh.SendInPlaceOffset * rank
		n := max(sh.RecvBytes+sh.RecvInPlaceOffset*rank, sh.SendBytes+sendAt)
		b := r.buf(n)
		clear(b)
		p.fill(b[sendAt:], r.rank, sh.SendBytes/ElemSize)
		return r.upload(r.recv, b, "the in-place operands")
	}
	b := r.buf(sh.SendBytes)
	p.fill(b, r.rank, sh.SendBytes/ElemSize)
	if err := r.upload(r.send, b, "the send operand"); err != nil {
		return err
	}
	b = r.buf(sh.RecvBytes)
	clear(b)
	return r.upload(r.recv, b, "zeros to the receive operand")
}

func (r *runner) upload(dst Buffer, b []byte, what string) error {
	if len(b) == 0 {
		return nil
	}
	if err := r.mem.Upload(dst, b); err != nil {
		return fmt.Errorf("uploading %s (%d bytes): %w", what, len(b), err)
	}
	return nil
}

// call issues iteration iter of c, as nccl-tests' startColl: operands
// shifted by Size × (iter mod (MaxBytes/Size)); in place, the send operand
// is recv + SendInPlaceOffset×rank and the receive operand
// recv + RecvInPlaceOffset×rank.
func (r *runner) call(c nccl.Collective, sh Shape, inPlace bool, iter int) error {
	var shift int64
	if sh.Size > 0 {
		steps := max(r.cfg.MaxBytes/sh.Size, 1)
		shift = sh.Size * (int64(iter) % steps)
	}
	send, recv := r.send+Buffer(shift), r.recv+Buffer(shift)
	if inPlace {
		rank := int64(r.rank)
		send = recv + Buffer(sh.SendInPlaceOffset*rank)
		recv += Buffer(sh.RecvInPlaceOffset * rank)
	}
	n := int(sh.Count)
	switch c {
	case nccl.AllReduce:
		return r.comm.AllReduce(send, recv, n)
	case nccl.AllGather:
		return r.comm.AllGather(send, recv, n)
	case nccl.ReduceScatter:
		return r.comm.ReduceScatter(send, recv, n)
	case nccl.AllToAll:
		return r.comm.AllToAll(send, recv, n)
	case nccl.SendRecv:
		return r.comm.SendRecv(send, recv, n, (r.rank+1)%r.world, (r.rank-1+r.world)%r.world)
	}
	return errUnsupported(c)
}
