package ncclbench

import (
	"bytes"
	"errors"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rdmasuite/rdmasuite/workloads/nccl"
)

func TestFloatStr(t *testing.T) {
	// util.cu getFloatStr: as many decimals as fit the width.
	cases := []struct {
		v     float64
		width int
		want  string
	}{
		{35.15, 7, "  35.15"},
		{5190.8, 7, "5190.80"},
		{12345.67, 7, "12345.7"},
		{453650.2, 7, " 453650"},
		{12345678, 7, "1.2e+07"},
		{1715.44, 6, "1715.4"},
		{43046.1, 6, " 43046"},
		{1234567, 6, " 1e+06"},
		{0.001, 6, "  0.00"},
	}
	for _, c := range cases {
		if got := floatStr(c.v, c.width); got != c.want {
			t.Errorf("floatStr(%g, %d) = %q, want %q", c.v, c.width, got, c.want)
		}
	}
}

// fakeRun measures every supported collective on n fake ranks with
// per-rank clocks of different speeds (so times and bandwidths take
// several printed forms) and a device per rank.
func fakeRun(t *testing.T, n int, w *fakeWorld) ([]RankResult, []error) {
	t.Helper()
	cfg := fullConfig()
	cfg.MaxBytes = 1 << 16
	res, errs := runFake(t, w, cfg, func(r int) func() time.Time {
		return stepClock(time.Duration(r+1) * 12345 * time.Nanosecond)
	})
	for r := range res {
		res[r].Device = &nccl.Device{Host: "node-" + strconv.Itoa(r/2), Pid: 1000 + r, CUDADevice: r % 2, PCI: "0000:1" + strconv.Itoa(r) + ":00", Name: "NVIDIA H100 80GB HBM3"}
	}
	return res, errs
}

func parseRendered(t *testing.T, r Result, c nccl.Collective) (nccl.Table, string) {
	t.Helper()
	var buf bytes.Buffer
	if err := Render(&buf, r, c); err != nil {
		t.Fatal(err)
	}
	got, err := nccl.ParseNCCLTests(strings.NewReader(buf.String()))
	if err != nil {
		t.Fatalf("%s: rendered table does not parse: %v\n%s", c, err, buf.String())
	}
	return got, buf.String()
}

// TestRenderParsesBack: nccl.ParseNCCLTests reads a rendered block back as
// the collective's Table, to the printed precision, and the parsed rows
// pass nccl.CheckRow for the collective and rank count.
func TestRenderParsesBack(t *testing.T) {
	const n = 4
	w := newFakeWorld(n)
	w.corrupt = func(rank int, kind nccl.Collective, out []byte) {
		if rank == 3 && kind == nccl.ReduceScatter {
			flipFirst(out)
		}
	}
	ranks, errs := fakeRun(t, n, w)
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	res, err := Combine(ranks)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range Supported {
		want, _ := res.Table(c)
		got, text := parseRendered(t, res, c)
		if got.Program != want.Program || got.Params != want.Params || strings.Join(got.Columns, " ") != strings.Join(want.Columns, " ") {
			t.Errorf("%s header: %q %+v %q, want %q %+v %q", c, got.Program, got.Params, got.Columns, want.Program, want.Params, want.Columns)
		}
		if gc, ok := got.Collective(); !ok || gc != c || got.NRanks() != n || len(got.Devices) != n || got.Devices[3] != want.Devices[3] {
			t.Errorf("%s: collective %s, %d ranks, devices %+v", c, gc, got.NRanks(), got.Devices)
		}
		if got.OutOfBounds != want.OutOfBounds || got.OutOfBoundsOK != want.OutOfBoundsOK || !got.HasOutOfBounds || !got.HasAvgBusBW ||
			math.Abs(got.AvgBusBW-want.AvgBusBW) > 1e-5*want.AvgBusBW {
			t.Errorf("%s footers: %d %v %g, want %d %v %g", c, got.OutOfBounds, got.OutOfBoundsOK, got.AvgBusBW, want.OutOfBounds, want.OutOfBoundsOK, want.AvgBusBW)
		}
		if c == nccl.ReduceScatter && (got.OutOfBounds == 0 || !strings.Contains(text, "FAILED")) {
			t.Errorf("reduce_scatter: the corrupted rank's checks are not in the footer:\n%s", text)
		}
		if len(got.Rows) != len(want.Rows) || len(got.Rows) == 0 {
			t.Fatalf("%s: %d rows parsed, %d rendered", c, len(got.Rows), len(want.Rows))
		}
		for i, g := range got.Rows {
			wr := want.Rows[i]
			if g.Size != wr.Size || g.Count != wr.Count || g.Type != wr.Type || g.RedOp != wr.RedOp || g.Root != wr.Root {
				t.Errorf("%s row %d: %+v, want %+v", c, i, g, wr)
			}
			for _, h := range []struct{ got, want nccl.Result }{{g.OutOfPlace, wr.OutOfPlace}, {g.InPlace, wr.InPlace}} {
				printed := func(v float64, width int) float64 {
					f, _ := strconv.ParseFloat(strings.TrimSpace(floatStr(v, width)), 64)
					return f
				}
				if h.got.TimeUS != printed(h.want.TimeUS, 7) || h.got.AlgBW != printed(h.want.AlgBW, 6) || h.got.BusBW != printed(h.want.BusBW, 6) ||
					h.got.Wrong != h.want.Wrong || h.got.WrongNA != h.want.WrongNA {
					t.Errorf("%s size %d: parsed %+v, rendered %+v", c, g.Size, h.got, h.want)
				}
			}
			if err := nccl.CheckRow(c, g, n); err != nil {
				t.Errorf("%s: %v", c, err)
			}
			if c != nccl.SendRecv && nccl.CheckRow(nccl.SendRecv, g, n) == nil && g.OutOfPlace.BusBW >= 1 {
				t.Errorf("%s size %d: the row also passes as sendrecv; CheckRow cannot tell", c, g.Size)
			}
		}
	}
	// All collectives in one call: one block each.
	var buf bytes.Buffer
	if err := Render(&buf, res); err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(buf.String(), "# Collective test starting:"); got != len(Supported) {
		t.Errorf("%d blocks, want %d", got, len(Supported))
	}
	if err := Render(&buf, res, nccl.Broadcast); err == nil {
		t.Error("rendering a collective the result lacks is not an error")
	}
}

// A run that failed mid-sweep renders the complete rows as rows, the
// partial one as a comment, and the failure as a line the parser counts.
func TestRenderFailedRun(t *testing.T) {
	w := newFakeWorld(2)
	w.fail = func(rank int, kind nccl.Collective, count, nth int) error {
		// all_gather size 512 (count 64 per rank): calls 0-1 warm-up, 2
		// untimed, 3-5 timed, 6 the out-of-place check call
		if rank == 0 && kind == nccl.AllGather && count == 64 && nth == 6 {
			return errors.New("injected: Cuda failure 'an illegal memory access was encountered'")
		}
		return nil
	}
	ranks, _ := fakeRun(t, 2, w)
	res, err := Combine(ranks)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := res.Table(nccl.AllGather)
	got, text := parseRendered(t, res, nccl.AllGather)
	if len(got.Rows) != len(want.Rows) || len(got.Failures) == 0 || len(got.Failures) != len(want.Failures) {
		t.Fatalf("parsed %d rows, failures %q; table %d rows, failures %q\n%s", len(got.Rows), got.Failures, len(want.Rows), want.Failures, text)
	}
	if !strings.Contains(text, "#         512            64") || !strings.Contains(text, "N/A     N/A     N/A     N/A   (rank 0: all_gather size 512 out-of-place: check call: injected") {
		t.Errorf("the partial row is not shown as a comment:\n%s", text)
	}
	if _, ok := res.Table(nccl.AllToAll); ok {
		t.Error("a collective that never ran has a table")
	}
}
