package bw

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// latencyUnderLoad is a client asking for write latency under a 1 MiB
// write stream, with the stream's length shrunk for the fake clock.
func latencyUnderLoad(t *testing.T, min time.Duration) ClientConfig {
	t.Helper()
	old := loadStreamMin
	loadStreamMin = min
	t.Cleanup(func() { loadStreamMin = old })
	p := testParams(2)
	p.Latency, p.QPs, p.TxDepth, p.CQMod, p.Iters, p.LoadSize = true, 1, 1, 1, 50, 1<<20
	return ClientConfig{Rails: testRails("mlx5_0"), Params: p, Ops: []Op{OpWrite}}
}

// Each op is one run: measured under the stream, with the baseline alone
// and the stream that covered it inside; the server served all three.
func TestLatencyUnderLoadCarriesBaselineAndStream(t *testing.T) {
	cli, srv := runBoth(t, testRails("mlx5_0"), &fakeSide{}, latencyUnderLoad(t, 30*time.Millisecond), &fakeSide{})
	if cli.perr != nil || srv.perr != nil {
		t.Fatalf("client %v server %v", cli.perr, srv.perr)
	}
	rr := cli.out.Rails[0]
	measured(t, "client", rr, []Op{OpWrite}, 1)
	run := rr.Runs[0]
	if run.Params.LoadSize != 1<<20 || run.Results[0].Local.Latency == nil {
		t.Fatalf("loaded run %+v", run)
	}
	if b := run.Baseline; b == nil || b.Params.LoadSize != 0 || len(b.Results) != 1 || b.Results[0].Local.Latency == nil || b.Error != nil {
		t.Fatalf("baseline %+v", b)
	}
	l := run.Load
	if l == nil || !l.Covered || l.Why != "" || l.Report.Params.Op != OpWrite || l.Report.Params.Latency || l.Report.Params.Duration < 30*time.Millisecond ||
		len(l.Report.Results) != 1 || l.Report.Results[0].Local.Bytes != 1<<20 || l.Report.Results[0].Local.AvgGbps <= 0 {
		t.Fatalf("load %+v", l)
	}
	if n := len(srv.out.Rails[0].Runs); n != 3 {
		t.Errorf("the server served %d sessions, want 3 (baseline, stream, loaded)", n)
	}
}

// A stream that ended before the latency measurement did is measured
// again beside a stream long enough for the loaded run it saw; one that
// cannot be made long enough leaves a run that was partly measured alone,
// and the run says so.
func TestLatencyUnderLoadStreamTooShort(t *testing.T) {
	cfg := latencyUnderLoad(t, 10*time.Millisecond)
	old := loadStreamPerAlone
	loadStreamPerAlone = 0
	t.Cleanup(func() { loadStreamPerAlone = old })
	// The loaded ping-pong takes 1 s: the first stream (2 s, from a start
	// of 0 × alone + 2 s) would cover it, so make the first too short by
	// capping streams at 0.5 s; lifting the cap, the retry covers.
	oldMax := loadStreamMax
	loadStreamMax = 500 * time.Millisecond
	t.Cleanup(func() { loadStreamMax = oldMax })
	cli, _ := runBoth(t, testRails("mlx5_0"), &fakeSide{}, cfg, &fakeSide{pongDelay: time.Second})
	l := cli.out.Rails[0].Runs[0].Load
	if l == nil || l.Covered || !strings.Contains(l.Why, "ended") || !strings.Contains(l.Why, "before the latency measurement") ||
		!strings.Contains(l.Retried, "measured again beside a 500ms stream") {
		t.Fatalf("capped: load %+v", l)
	}
	loadStreamMax = oldMax
	// Streams that last as long as they say: the wall clock.
	cfg.Clock = RealClock()
	// The first stream 2 s is longer than the 1 s ping-pong: no retry.
	cli, _ = runBoth(t, testRails("mlx5_0"), &fakeSide{}, cfg, &fakeSide{pongDelay: time.Second})
	if l := cli.out.Rails[0].Runs[0].Load; l == nil || !l.Covered || l.Retried != "" {
		t.Fatalf("covered at once: load %+v", l)
	}
	// A ping-pong of 2.5 s outlasts the first 2 s stream; the retry's
	// 1.5 × 2.5 + 2 s covers it.
	cli, _ = runBoth(t, testRails("mlx5_0"), &fakeSide{}, cfg, &fakeSide{pongDelay: 2500 * time.Millisecond})
	run := cli.out.Rails[0].Runs[0]
	if l := run.Load; l == nil || !l.Covered || !strings.Contains(l.Retried, "before the latency measurement") ||
		run.Baseline == nil || len(run.Results) != 1 {
		t.Fatalf("retried: %+v", run)
	}
}

// A stream that cannot start fails the run with the stream's reason; the
// baseline is kept. A baseline that fails fails the run before any stream.
func TestLatencyUnderLoadFailures(t *testing.T) {
	cfg := latencyUnderLoad(t, 30*time.Millisecond)
	noStream := &fakeSide{fail: func(_ Rail, p Params) error {
		if !p.Latency {
			return errors.New("ibv_reg_mr: Cannot allocate memory")
		}
		return nil
	}}
	cli, _ := runBoth(t, testRails("mlx5_0"), &fakeSide{}, cfg, noStream)
	run := cli.out.Rails[0].Runs[0]
	if run.Error == nil || !strings.Contains(run.Error.Message, "the load stream (write 1 MiB)") || run.Baseline == nil || len(run.Baseline.Results) != 1 ||
		run.Load == nil || run.Load.Covered || len(run.Results) != 0 {
		t.Fatalf("no stream: %+v", run)
	}
	noBase := &fakeSide{fail: func(_ Rail, p Params) error {
		if p.Latency {
			return errors.New("ibv_create_qp: Invalid argument")
		}
		return nil
	}}
	cli, _ = runBoth(t, testRails("mlx5_0"), &fakeSide{}, latencyUnderLoad(t, 30*time.Millisecond), noBase)
	run = cli.out.Rails[0].Runs[0]
	if run.Error == nil || !strings.Contains(run.Error.Message, "the baseline (the latency alone)") || run.Baseline == nil || run.Load != nil {
		t.Fatalf("no baseline: %+v", run)
	}
	if cli.out.Rails[0].Error == nil {
		t.Error("the rail does not carry the op's error")
	}
}

func TestLoadSizeNeedsLatency(t *testing.T) {
	p := Defaults()
	p.LoadSize = 1 << 20
	if err := p.Validate(); err == nil || !strings.Contains(err.Error(), "needs --latency") {
		t.Errorf("load without latency: %v", err)
	}
	p.Latency, p.QPs, p.TxDepth, p.CQMod, p.Iters, p.LoadSize = true, 1, 1, 1, 1000, -1
	if err := p.Validate(); err == nil || !strings.Contains(err.Error(), "load size -1") {
		t.Errorf("negative load: %v", err)
	}
}
