package bwverbs

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmasuite/rdmasuite/workloads/bw"
	"github.com/rdmasuite/rdmasuite/workloads/verbs"
)

// Under auto the loop posts as perftest would: ibv_wr_* behind the drivers
// of perftest's list (a ConnectX VF on mlx5_core), ibv_post_send behind any
// other driver and on a software device with no driver at all (rxe); the
// flag overrides both ways. A wrong rule here is what made the README claim
// perftest used ibv_wr_* on rxe.
func TestPostAPIFollowsPerftest(t *testing.T) {
	root := t.TempDir()
	driver := func(dev, drv string) {
		d := filepath.Join(root, "sys/class/infiniband", dev, "device")
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if drv != "" {
			if err := os.Symlink("../../../bus/pci/drivers/"+drv, filepath.Join(d, "driver")); err != nil {
				t.Fatal(err)
			}
		}
	}
	driver("mlx5_3", "mlx5_core")
	driver("mlx4_0", "mlx4_core")
	driver("rxe0", "")
	for _, c := range []struct {
		api, dev string
		wr       bool
		why      string
	}{
		{PostAPIAuto, "mlx5_3", true, "as perftest on mlx5_core"},
		{PostAPIAuto, "mlx4_0", false, "as perftest on mlx4_core"},
		{PostAPIAuto, "rxe0", false, "no kernel driver"},
		{PostAPIWR, "rxe0", true, "--post-api wr"},
		{PostAPIOld, "mlx5_3", false, "--post-api old"},
	} {
		wr, why := usesWR(c.api, deviceDriver(root, c.dev))
		if wr != c.wr || !strings.Contains(why, c.why) {
			t.Errorf("%s on %s: %v %q, want %v and %q", c.api, c.dev, wr, why, c.wr, c.why)
		}
	}
	if _, err := ParsePostAPI("new"); err == nil || !strings.Contains(err.Error(), "auto") {
		t.Errorf("a bad --post-api: %v", err)
	}
	if a, err := ParsePostAPI(""); err != nil || a != PostAPIAuto {
		t.Errorf("empty is auto: %q %v", a, err)
	}
}

// --latency inlines what perftest's latency tests inline on the device:
// 220 B writes and 236 B sends behind mlx5_core (the 2.5 µs bars were
// measured so), 32 B on EFA, nothing for read, on GPU memory, or on a
// device perftest does not recognise (rxe).
func TestLatencyInlineFollowsPerftest(t *testing.T) {
	for _, c := range []struct {
		driver string
		op     bw.Op
		gpu    bool
		want   int
	}{
		{"mlx5_core", bw.OpWrite, false, 220},
		{"mlx5_core", bw.OpSend, false, 236},
		{"mlx5_core", bw.OpRead, false, 0},
		{"mlx5_core", bw.OpWrite, true, 0},
		{"efa", bw.OpSend, false, 32},
		{"", bw.OpWrite, false, 0},
		{"mlx4_core", bw.OpSend, false, 0},
	} {
		if got := perftestLatencyInline(c.driver, c.op, c.gpu); got != c.want {
			t.Errorf("%q %s gpu=%v: %d, want %d", c.driver, c.op, c.gpu, got, c.want)
		}
	}
}

// The ping-pongs run on host memory: write and send latency on GPU memory
// are usage errors named before any device is opened (read latency on a
// GPU buffer is allowed, as bandwidth is).
func TestPingPongsRefuseGPUMemory(t *testing.T) {
	for _, op := range []bw.Op{bw.OpWrite, bw.OpSend} {
		p := bw.Defaults()
		p.Op, p.Latency, p.TxDepth, p.CQMod, p.Iters, p.Sizes = op, true, 1, 1, 1000, []int{2}
		_, err := Factory(Config{Device: "nosuch0", Memory: "cuda:0"})(bw.Rail{Device: "nosuch0", Port: 1}, p)
		if !errors.Is(err, bw.ErrUsage) || !strings.Contains(err.Error(), string(op)+" latency with --mem cuda:0") {
			t.Errorf("%s latency on GPU memory: %v", op, err)
		}
	}
}

// A failed completion names the ACK timeout and retries it ran with and
// still matches as a completion error; other errors pass unchanged.
func TestCompletionErrorNamesTheAckTimeout(t *testing.T) {
	err := withAckTimeout(&verbs.CompletionError{QPIndex: 1, Seq: 55, Status: 9}, 14)
	if !errors.Is(err, verbs.ErrCompletion) || !strings.Contains(err.Error(), "completion error on QP index 1 op 55") ||
		!strings.Contains(err.Error(), "QP ACK timeout 67ms = 4.096 µs × 2^14, 7 retries") {
		t.Fatalf("%v", err)
	}
	if got := withAckTimeout(&verbs.CompletionError{Status: 12}, 18).Error(); !strings.Contains(got, "ACK timeout 1.074s = 4.096 µs × 2^18") {
		t.Fatalf("%s", got)
	}
	other := errors.New("ibv_post_send: ENOMEM")
	if withAckTimeout(other, 14) != other {
		t.Fatal("a non-completion error was changed")
	}
}
