package ncclbench

import (
	"encoding/binary"
	"math"

	"github.com/rdmasuite/rdmasuite/workloads/nccl"
)

// The data check fills every send operand with small integers, so that a
// float32 sum over the ranks is exact in any order, and computes each
// rank's expected output on the host:
//
//	value(rank, i) = 1 + (17·rank + i + 31·rep) mod 251
//
// i is the element's index in the rank's send operand and rep numbers the
// check (a stale result of the previous check does not pass). Values are
// ≥ 1, so an output left at the zeros the check writes first is wrong.
// Ranks differ unless they are 251 apart, and a sum over the ranks stays
// below 2^24 (exact in float32) for up to 66,000 ranks.
//
// nccl-tests checks the same way in spirit (its own pattern, expected
// values computed on the device, outputs zeroed first): a dedicated check
// iteration after the timed ones, on freshly initialised buffers (BenchTime,
// "test validation in single iteration"). This engine does the same: the
// timed iterations' output is not what is checked.
const (
	patMod     = 251
	patRankMul = 17
	patRepMul  = 31
)

type pattern struct {
	rep   int64
	world int
	sums  [patMod]float32 // sums[k] = Σ_r value(r, i) for (i + 31·rep) mod 251 = k
}

func newPattern(rep int64, world int) *pattern {
	p := &pattern{rep: rep, world: world}
	for k := range patMod {
		s := 0.0
		for r := range world {
			s += float64(1 + (patRankMul*int64(r)+int64(k))%patMod)
		}
		p.sums[k] = float32(s)
	}
	return p
}

func (p *pattern) phase(i int64) int64 { return (i + patRepMul*p.rep) % patMod }

func (p *pattern) value(rank int, i int64) float32 {
	return float32(1 + (patRankMul*int64(rank)+i+patRepMul*p.rep)%patMod)
}

func (p *pattern) sum(i int64) float32 { return p.sums[p.phase(i)] }

// fill writes value(rank, i) for i in [0, n) into b as float32 LE.
func (p *pattern) fill(b []byte, rank int, n int64) {
	for i := range n {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(p.value(rank, i)))
	}
}

// expected is element i of rank's output of c with Shape sh.
func (p *pattern) expected(c nccl.Collective, sh Shape, rank int, i int64) float32 {
	w := int64(p.world)
	switch c {
	case nccl.AllReduce:
		return p.sum(i)
	case nccl.AllGather:
		return p.value(int(i/sh.Count), i%sh.Count)
	case nccl.ReduceScatter:
		return p.sum(int64(rank)*sh.Count + i)
	case nccl.AllToAll:
		return p.value(int(i/sh.Count), int64(rank)*sh.Count+i%sh.Count)
	case nccl.SendRecv:
		return p.value(int((int64(rank)-1+w)%w), i)
	}
	return float32(math.NaN())
}

// wrong counts the elements of out (float32 LE) that differ from the
// expected output, bit for bit.
func (p *pattern) wrong(c nccl.Collective, sh Shape, rank int, out []byte) int64 {
	var n int64
	for i := range int64(len(out) / 4) {
		if binary.LittleEndian.Uint32(out[4*i:]) != math.Float32bits(p.expected(c, sh, rank, i)) {
			n++
		}
	}
	return n
}
