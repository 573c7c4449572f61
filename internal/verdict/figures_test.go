package verdict

import (
	"strings"
	"testing"

	"github.com/rdmasuite/rdmasuite/reports"
	"github.com/rdmasuite/rdmasuite/workloads/bw"
	"github.com/rdmasuite/rdmasuite/workloads/lat"
	"github.com/rdmasuite/rdmasuite/workloads/probeout"
)

// judgeOne judges a one-rail write pair at 64 KiB on 200 Gb/s ports (the
// A100/HDR-200 floor is well under 195) after edit changed rail 0's
// figures, and returns its only check.
func judgeOne(t *testing.T, metric *metric, edit func(f *bw.Figures, c, s *bw.ProbeOutput)) reports.Check {
	t.Helper()
	cli, srv := pairOut(t, []string{"write"}, []int{k64}, 1, 195, func(c, s *bw.ProbeOutput) {
		if edit != nil {
			edit(&c.Rails[0].Runs[0].Results[0].Local, c, s)
		}
	})
	in := bwInput(t, []string{"write"}, []int{k64}, cli, srv)
	in.metric = metric
	cs := Bandwidth(in).Checks
	if len(cs) != 1 {
		t.Fatalf("want one check, got %s", statuses(cs))
	}
	return cs[0]
}

// expectFigures: want "" means the check passes; otherwise it is an error
// whose reason names want.
func expectFigures(t *testing.T, name string, c reports.Check, want string) {
	t.Helper()
	switch {
	case want == "" && c.Status != reports.Pass:
		t.Errorf("%s: %s %s", name, c.Status, c.Reason+c.Diagnosis)
	case want != "" && (c.Status != reports.Error || !strings.Contains(c.Reason, want)):
		t.Errorf("%s: want error naming %q, got %s %q", name, want, c.Status, c.Reason+c.Diagnosis)
	}
}

// A figure the facts beside it contradict is refused (an
// error naming the contradiction), never judged against the floor.
func TestImpossibleBandwidthFiguresAreErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(f *bw.Figures, c, s *bw.ProbeOutput)
		want string // in the reason; "" : passes
	}{
		{"consistent", nil, ""},
		{"zero iterations", func(f *bw.Figures, _, _ *bw.ProbeOutput) { f.Iterations = 0 }, "0 operations"},
		{"negative iterations", func(f *bw.Figures, _, _ *bw.ProbeOutput) { f.Iterations = -3 }, "operations"},
		{"no elapsed time", func(f *bw.Figures, _, _ *bw.ProbeOutput) { f.ElapsedSec = 0 }, "elapsed"},
		{"negative elapsed time", func(f *bw.Figures, _, _ *bw.ProbeOutput) { f.ElapsedSec = -f.ElapsedSec }, "elapsed"},
		{"average not given by bytes × operations / elapsed", func(f *bw.Figures, _, _ *bw.ProbeOutput) { f.ElapsedSec *= 2 }, "bytes × operations / elapsed"},
		{"message rate not given by operations / elapsed", func(f *bw.Figures, _, _ *bw.ProbeOutput) { f.MsgRateMpps *= 3 }, "operations / elapsed"},
		{"negative average", func(f *bw.Figures, _, _ *bw.ProbeOutput) { f.AvgGbps = -195 }, "negative"},
		{"23 000 Gb/s on a 200 Gb/s port (MiB/s in the Gb/s field)", func(f *bw.Figures, _, _ *bw.ProbeOutput) { setGbps(f, 23000) }, "line rate"},
		{"above the peer's slower port", func(f *bw.Figures, c, s *bw.ProbeOutput) {
			setGbps(f, 150)
			c.Rails[0].Peer.RateGbps, s.Rails[0].Local.RateGbps, s.Found[0].RateGbps = 100, 100, 100
		}, "line rate"},
		{"within the tolerance of line rate", func(f *bw.Figures, _, _ *bw.ProbeOutput) { setGbps(f, 203) }, ""},
		{"line rate unknown", func(f *bw.Figures, c, _ *bw.ProbeOutput) {
			setGbps(f, 23000)
			c.Rails[0].Local.RateGbps, c.Found[0].RateGbps, c.Rails[0].Peer.RateGbps = 0, 0, 0
		}, ""},
		{"size measured twice with different figures", func(_ *bw.Figures, c, _ *bw.ProbeOutput) {
			r := &c.Rails[0].Runs[0]
			again := r.Results[0]
			setGbps(&again.Local, 120)
			r.Results = append(r.Results, again)
		}, "measured twice"},
		{"op run twice", func(_ *bw.Figures, c, _ *bw.ProbeOutput) {
			again := run("write", []int{k64}, 150)
			c.Rails[0].Runs = append(c.Rails[0].Runs, again)
		}, "measured twice"},
		{"rail pair reported twice", func(_ *bw.Figures, c, _ *bw.ProbeOutput) {
			again := c.Rails[0]
			again.Runs = []bw.Report{run("write", []int{k64}, 150)}
			c.Rails = append(c.Rails, again)
		}, "measured twice"},
	} {
		expectFigures(t, tc.name, judgeOne(t, nil, tc.edit), tc.want)
	}
}

// A duplicate names both values, so the operator sees what disagreed.
func TestDuplicateMeasurementNamesBothValues(t *testing.T) {
	c := judgeOne(t, nil, func(_ *bw.Figures, c, _ *bw.ProbeOutput) {
		r := &c.Rails[0].Runs[0]
		again := r.Results[0]
		setGbps(&again.Local, 120)
		r.Results = append(r.Results, again)
	})
	if !strings.Contains(c.Reason, "195") || !strings.Contains(c.Reason, "120") {
		t.Fatalf("%q", c.Reason)
	}
}

// A same-node pair on one device never crosses the wire (the HCA loops it
// back, Soft-RoCE copies memory): its figure is not bounded by line rate,
// and the evidence says the bound was not applied.
func TestLoopbackOnOneDeviceIsNotBoundByLineRate(t *testing.T) {
	cli, srv := pairOut(t, []string{"write"}, []int{k64}, 1, 195, func(c, _ *bw.ProbeOutput) {
		setGbps(&c.Rails[0].Runs[0].Results[0].Local, 260)
	})
	in := bwInput(t, []string{"write"}, []int{k64}, cli, srv)
	in.Server.Node = in.Client.Node
	c := Bandwidth(in).Checks[0]
	if c.Status != reports.Pass || !strings.Contains(strings.Join(c.Evidence, "\n"), "line rate not applied") {
		t.Fatalf("%s %q %v", c.Status, c.Reason, c.Evidence)
	}
}

// Latency: positive, with samples, min ≤ average ≤ max; anything else is
// an error naming the figure.
func TestImpossibleLatencyFiguresAreErrors(t *testing.T) {
	summary := func(f *bw.Figures) *lat.Summary {
		f.Latency = &lat.Summary{Samples: 997, Min: 1.8, Typical: 2, Avg: 2, P99: 3, P999: 3.5, Max: 4, Halved: true}
		setGbps(f, 0)
		return f.Latency
	}
	for _, tc := range []struct {
		name string
		edit func(l *lat.Summary, f *bw.Figures)
		want string
	}{
		{"consistent", func(*lat.Summary, *bw.Figures) {}, ""},
		{"no samples", func(l *lat.Summary, _ *bw.Figures) { l.Samples = 0 }, "samples"},
		{"zero average", func(l *lat.Summary, _ *bw.Figures) { l.Avg, l.Min, l.Typical = 0, 0, 0 }, "not positive"},
		{"negative average", func(l *lat.Summary, _ *bw.Figures) { l.Avg = -2 }, "not positive"},
		{"average under the minimum", func(l *lat.Summary, _ *bw.Figures) { l.Min = 2.5 }, "minimum"},
		{"average over the maximum", func(l *lat.Summary, _ *bw.Figures) { l.Max = 1.9 }, "maximum"},
		{"p99 over the maximum", func(l *lat.Summary, _ *bw.Figures) { l.P99 = 9 }, "maximum"},
		{"zero operations", func(_ *lat.Summary, f *bw.Figures) { f.Iterations = 0 }, "0 operations"},
	} {
		cli, srv := pairOut(t, []string{"write"}, []int{2}, 1, 0, func(c, _ *bw.ProbeOutput) {
			f := &c.Rails[0].Runs[0].Results[0].Local
			c.Rails[0].Runs[0].Params.Latency = true
			tc.edit(summary(f), f)
		})
		in := latInput(t, []string{"write"}, cli, srv)
		expectFigures(t, tc.name, Latency(in).Checks[0], tc.want)
	}
}

// Message rate: MsgRate must be operations / elapsed, with operations.
func TestImpossibleMessageRateIsAnError(t *testing.T) {
	cli, srv := msgRateOut(t, 1, 9.5, func(cli, _ *bw.ProbeOutput) {
		cli.Rails[0].Runs[0].Results[0].Local.MsgRateMpps = 95
	})
	if c := MsgRate(msgRateInput(t, cli, srv, 8)).Checks[0]; c.Status != reports.Error || !strings.Contains(c.Reason, "operations / elapsed") {
		t.Fatalf("%s %q", c.Status, c.Reason+c.Diagnosis)
	}
}

// --device named a device: a rail of another device is not what was asked
// (an error), and the named device without a result is a failing row.
func TestNamedDeviceNotMeasuredFails(t *testing.T) {
	cli, srv := pairOut(t, []string{"write"}, []int{k64}, 2, 195, func(c, s *bw.ProbeOutput) {
		c.Rails, s.Rails = c.Rails[:1], s.Rails[:1] // the probe measured mlx5_0, the run named mlx5_1
	})
	in := bwInput(t, []string{"write"}, []int{k64}, cli, srv)
	in.OneRail, in.Device = true, "mlx5_1"
	cs := Bandwidth(in).Checks
	var other, named *reports.Check
	for i := range cs {
		switch {
		case strings.HasPrefix(cs[i].Rail, "mlx5_0"):
			other = &cs[i]
		case strings.HasPrefix(cs[i].Rail, "mlx5_1"):
			named = &cs[i]
		}
	}
	if other == nil || other.Status != reports.Error || !strings.Contains(other.Reason, "mlx5_1") {
		t.Fatalf("the unasked rail: %s", statuses(cs))
	}
	if named == nil || named.Status != reports.Fail || !strings.Contains(named.Diagnosis, "named") {
		t.Fatalf("the named device: %s", statuses(cs))
	}
	// Measured as named: one passing row.
	cli, srv = pairOut(t, []string{"write"}, []int{k64}, 2, 195, func(c, s *bw.ProbeOutput) {
		c.Rails, s.Rails = c.Rails[1:], s.Rails[1:]
	})
	in = bwInput(t, []string{"write"}, []int{k64}, cli, srv)
	in.OneRail, in.Device = true, "mlx5_1"
	if cs := Bandwidth(in).Checks; len(cs) != 1 || cs[0].Status != reports.Pass {
		t.Fatalf("%s", statuses(cs))
	}
}

// An error on either side of a pair is never dropped: the client's clean
// measurement is not a pass while the server says something went wrong or
// its output cannot be read; the reason states the rule.
func TestServerSideTroubleIsNeverDropped(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(c, s *bw.ProbeOutput)
		srv  string // replaces the server's output when set
		want string
	}{
		{name: "server output unreadable", srv: "rdmaprobe bw server: waiting\n", want: "server's output"},
		{name: "server output truncated", srv: `{"schema":2,"probe":"bw","version":"x","result":{"role":"ser`, want: "truncated"},
		{name: "server says its peer failed, the client saw nothing", want: "peer failed", edit: func(_, s *bw.ProbeOutput) {
			s.Rails[0].Error = probeout.Errorf(probeout.KindPeer, "client closed the connection mid-run: peer failed")
		}},
		{name: "server error on a rail pair the client did not measure", want: "mlx5_9/1", edit: func(_, s *bw.ProbeOutput) {
			odd := rail(9, "mlx5_9", 200)
			s.Rails = append(s.Rails, bw.RailResult{Local: odd, Peer: &s.Rails[0].Local, Error: probeout.Errorf(probeout.KindTransport, "retry exceeded")})
		}},
	} {
		cli, srv := pairOut(t, []string{"write"}, []int{k64}, 1, 195, tc.edit)
		if tc.srv != "" {
			srv = tc.srv
		}
		c := Bandwidth(bwInput(t, []string{"write"}, []int{k64}, cli, srv)).Checks[0]
		if c.Status != reports.Error || !strings.Contains(c.Reason, tc.want) || !strings.Contains(c.Reason, "either side") {
			t.Errorf("%s: %s %q", tc.name, c.Status, c.Reason+c.Diagnosis)
		}
	}
}
