//go:build verbsbed

// Bandwidth runs on real Soft-RoCE devices, inside the guest
// (hack/verbs-test.sh): loopback on one device, and across rxe0 ↔ rxe1.
package bwverbs

import (
	"context"
	"net"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/montanaflynn/stats"

	"github.com/rdmasuite/rdmasuite/workloads/bw"
	"github.com/rdmasuite/rdmasuite/workloads/probeout"
)

func runPair(t *testing.T, serverDev, clientDev string, p bw.Params) bw.Report {
	t.Helper()
	return runPairWith(t, serverDev, Config{Device: clientDev, Port: 1, GIDIndex: -1}, p)
}

// rail is the one rail of dev (port 1), as discovery reports it.
func rail(t *testing.T, dev string) []bw.Rail {
	t.Helper()
	d, err := Discover(Config{})
	if err != nil {
		t.Fatal(err)
	}
	r, err := d.Select(Config{Device: dev, Port: 1})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// pairRun runs a server on serverDev and a client with cfg's device over
// loopback TCP, and returns both outputs.
func pairRun(t *testing.T, serverDev string, client Config, p bw.Params) (cli, srv bw.ProbeOutput, cerr, serr *probeout.Error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	type out struct {
		o    bw.ProbeOutput
		perr *probeout.Error
	}
	done := make(chan out, 1)
	srvRails := rail(t, serverDev)
	go func() {
		o, perr := bw.Serve(context.Background(), ln, bw.ServerConfig{Rails: srvRails, Open: Factory(Config{GIDIndex: -1}), Clock: bw.RealClock(), Timeout: 30 * time.Second})
		done <- out{o, perr}
	}()
	cli, cerr = bw.RunClient(context.Background(), bw.ClientConfig{Addr: ln.Addr().String(), Rails: rail(t, client.Device), Open: Factory(client),
		Clock: bw.RealClock(), Params: p, Ops: []bw.Op{p.Op}, Timeout: 10 * time.Second})
	s := <-done
	return cli, s.o, cerr, s.perr
}

func runPairWith(t *testing.T, serverDev string, client Config, p bw.Params) bw.Report {
	t.Helper()
	clientDev := client.Device
	cli, srv, cerr, serr := pairRun(t, serverDev, client, p)
	if cerr != nil || serr != nil {
		t.Fatalf("client %v, server %v", cerr, serr)
	}
	if miss := append(cli.Incomplete(), srv.Incomplete()...); len(miss) > 0 {
		t.Fatalf("incomplete: %v", miss)
	}
	rep := cli.Rails[0].Runs[0]
	if len(rep.Results) != len(p.Sizes) {
		t.Fatalf("%d results for %d sizes", len(rep.Results), len(p.Sizes))
	}
	for i, r := range rep.Results {
		f := r.Local
		// Duration mode: the op count is whatever fit, and no peak.
		iterMode := p.Duration <= 0
		if f.Bytes != p.Sizes[i] || iterMode && f.Iterations != p.Iters*p.QPs || f.AvgGbps <= 0 || f.MsgRateMpps <= 0 {
			t.Fatalf("size %d: %+v", p.Sizes[i], f)
		}
		if iterMode && f.PeakGbps < f.AvgGbps*0.999 {
			t.Fatalf("size %d: peak %.3f below average %.3f", f.Bytes, f.PeakGbps, f.AvgGbps)
		}
		t.Logf("%s→%s %s %d B × %d qps: avg %.3f Gb/s (%.1f MB/s) peak %.3f Gb/s", clientDev, serverDev, p.Op, f.Bytes, p.QPs, f.AvgGbps, f.AvgMBps, f.PeakGbps)
	}
	if rep.Device.Name != clientDev || rep.Device.LinkLayer != "Ethernet" || rep.Device.GID == "" {
		t.Fatalf("device %+v", rep.Device)
	}
	return rep
}

func params(op bw.Op, qps int, sizes ...int) bw.Params {
	p := bw.Defaults()
	p.Op, p.QPs, p.Sizes, p.Iters = op, qps, sizes, 200
	return p
}

func TestWriteLoopback(t *testing.T) { runPair(t, "rxe0", "rxe0", params(bw.OpWrite, 1, 4096, 65536)) }
func TestReadLoopback(t *testing.T)  { runPair(t, "rxe0", "rxe0", params(bw.OpRead, 1, 65536)) }
func TestWriteAcrossDevices(t *testing.T) {
	runPair(t, "rxe0", "rxe1", params(bw.OpWrite, 1, 65536, 1<<20))
}
func TestReadAcrossDevices(t *testing.T) { runPair(t, "rxe0", "rxe1", params(bw.OpRead, 1, 65536)) }

// One operation at a time (tx depth 1, every one signaled) runs perftest's
// run_iter_lat shape, whose completion stamps are the next post's: every
// operation is counted and the peak still bounds the average.
func TestOneAtATimeBandwidth(t *testing.T) {
	for _, op := range []bw.Op{bw.OpRead, bw.OpWrite} {
		p := params(op, 1, 4096, 65536)
		p.TxDepth, p.CQMod = 1, 1
		runPair(t, "rxe0", "rxe1", p)
	}
}
func TestMultiQPAcrossDevices(t *testing.T) {
	runPair(t, "rxe0", "rxe1", params(bw.OpWrite, 4, 65536))
}
func TestBidirectional(t *testing.T) {
	p := params(bw.OpWrite, 2, 65536)
	p.Bidirectional = true
	rep := runPair(t, "rxe0", "rxe1", p)
	if r := rep.Results[0]; r.Remote == nil || r.Total.AvgGbps <= r.Local.AvgGbps {
		t.Fatalf("bidirectional total %+v", r)
	}
}

// The C loop and the Go reference loop do the same work: same operation
// count per size and QP count, with and without moderation, and both move
// real data (the numbers differ: that is what the bench measures).
func TestCLoopMatchesGoLoop(t *testing.T) {
	for _, cqMod := range []int{1, 7} {
		p := params(bw.OpWrite, 3, 4096, 65536)
		p.Iters, p.CQMod, p.Warmup = 100, cqMod, 10 // 100 is not a multiple of 7: the last op must be signalled
		for _, goLoop := range []bool{false, true} {
			rep := runPairWith(t, "rxe0", Config{Device: "rxe1", Port: 1, GIDIndex: -1, GoLoop: goLoop}, p)
			t.Logf("cq-mod %d go-loop %v: %.3f Gb/s at 64 KiB", cqMod, goLoop, rep.Results[1].Local.AvgGbps)
		}
	}
}

// On rxe the loop posts as perftest does there (ibv_post_send: rxe is not
// on perftest's ibv_wr_* list), says so in the report, and --post-api wr
// still works: both post APIs move every operation of a READ and a WRITE.
func TestPostAPIOnRxe(t *testing.T) {
	for _, api := range []string{PostAPIAuto, PostAPIWR, PostAPIOld} {
		for _, op := range []bw.Op{bw.OpRead, bw.OpWrite} {
			p := params(op, 1, 65536)
			p.Iters, p.CQMod = 200, 1
			rep := runPairWith(t, "rxe0", Config{Device: "rxe1", Port: 1, GIDIndex: -1, PostAPI: api}, p)
			want := "ibv_post_send"
			if api == PostAPIWR {
				want = "ibv_wr_*"
			}
			if !strings.HasPrefix(rep.Device.PostAPI, want) || rep.Results[0].Local.Iterations != 200 {
				t.Fatalf("%s %s: posted with %q, %d operations", api, op, rep.Device.PostAPI, rep.Results[0].Local.Iterations)
			}
			t.Logf("%s %s: %s, %.1f MB/s at 64 KiB", api, op, rep.Device.PostAPI, rep.Results[0].Local.AvgMBps)
		}
	}
}

// Duration mode in the C loop: whole moderation groups, no peak.
func TestCLoopDuration(t *testing.T) {
	p := params(bw.OpRead, 2, 65536)
	p.Duration, p.CQMod, p.CQModUpTo8K = 500*time.Millisecond, 10, false
	start := time.Now()
	f := runPairWith(t, "rxe0", Config{Device: "rxe1", Port: 1, GIDIndex: -1}, p).Results[0].Local
	if f.Iterations == 0 || f.Iterations%p.CQMod != 0 || f.PeakGbps != 0 || f.AvgGbps <= 0 {
		t.Fatalf("duration run: %+v", f)
	}
	if f.ElapsedSec < 0.45 || time.Since(start) > 20*time.Second {
		t.Fatalf("ran %.3f s of a 0.5 s duration (wall %s)", f.ElapsedSec, time.Since(start))
	}
}

// A duration run stops at its deadline with work in flight (perftest -D)
// and both sides renew their QPs before the next size: with 4 QPs × 128 ×
// 1 MiB queued, every size after the first is measured on the new QPs
// (a stale completion or a half-renewed pair would fail it), and the last
// size's loop left work in flight instead of draining it.
func TestDurationStopsWithWorkInFlightAndRenews(t *testing.T) {
	p := params(bw.OpWrite, 4, 1<<20, 65536, 1<<20)
	p.Duration = 300 * time.Millisecond
	var mu sync.Mutex
	var opened []*resources
	open := Factory(Config{Device: "rxe1", Port: 1, GIDIndex: -1})
	keep := func(r bw.Rail, p bw.Params) (bw.Resources, error) {
		res, err := open(r, p)
		if err == nil {
			mu.Lock()
			opened = append(opened, res.(*resources))
			mu.Unlock()
		}
		return res, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srvDone := make(chan *probeout.Error, 1)
	go func() {
		_, perr := bw.Serve(context.Background(), ln, bw.ServerConfig{Rails: rail(t, "rxe0"), Open: Factory(Config{GIDIndex: -1}), Clock: bw.RealClock(), Timeout: 60 * time.Second})
		srvDone <- perr
	}()
	cli, cerr := bw.RunClient(context.Background(), bw.ClientConfig{Addr: ln.Addr().String(), Rails: rail(t, "rxe1"), Open: keep,
		Clock: bw.RealClock(), Params: p, Ops: []bw.Op{p.Op}, Timeout: 10 * time.Second})
	if serr := <-srvDone; cerr != nil || serr != nil {
		t.Fatalf("client %v, server %v", cerr, serr)
	}
	if miss := cli.Incomplete(); len(miss) > 0 {
		t.Fatalf("incomplete: %v (%+v)", miss, cli.Rails[0].Runs[0].Error)
	}
	for i, r := range cli.Rails[0].Runs[0].Results {
		if f := r.Local; f.Iterations == 0 || f.AvgGbps <= 0 || f.ElapsedSec > p.Duration.Seconds()+0.5 {
			t.Fatalf("size %d: %+v (want completions within the %s window)", p.Sizes[i], f, p.Duration)
		}
	}
	if len(opened) != 1 || opened[0].LeftInFlight() == 0 {
		t.Fatalf("the last 1 MiB loop left nothing in flight: it drained instead of stopping at the deadline")
	}
	t.Logf("last size left %d ops in flight; sizes measured on renewed QPs", opened[0].LeftInFlight())
}

// Discovery sees both rxe devices, sorted, port 1, ACTIVE, on their veths.
func TestDiscoverRails(t *testing.T) {
	d, err := Discover(Config{})
	if err != nil {
		t.Fatal(err)
	}
	found := d.Rails
	if len(found) < 2 || found[0].Device != "rxe0" || found[1].Device != "rxe1" {
		t.Fatalf("rails %+v", found)
	}
	for i, r := range found[:2] {
		if r.Index != i || r.Port != 1 || r.LinkLayer != "Ethernet" || r.Netdev == "" {
			t.Fatalf("rail %+v", r)
		}
		t.Logf("rail %d: %s state %s netdev %s rate %.1f Gb/s", r.Index, r.Name(), r.State, r.Netdev, r.RateGbps)
	}
}

func TestPortDownOrMissingDeviceIsClear(t *testing.T) {
	_, err := Factory(Config{GIDIndex: -1})(bw.Rail{Device: "nosuch0", Port: 1}, params(bw.OpWrite, 1, 64))
	if err == nil || bw.Classify(err).Kind != probeout.KindNoDevice {
		t.Fatalf("missing device: %v", err)
	}
	_, err = Factory(Config{GIDIndex: 77})(bw.Rail{Device: "rxe0", Port: 1}, params(bw.OpWrite, 1, 64))
	if err == nil {
		t.Fatal("invalid GID index accepted")
	}
	t.Log(err)
}

// The cycle clock must agree with the monotonic clock over a measured span.
// A TCG guest on a loaded host gets descheduled between the two reads of
// one sample, so one of three samples must agree within 2 % (a wrong
// calibration fails all three).
func TestCycleClockCalibrated(t *testing.T) {
	c := Clock()
	var ratios []float64
	for range 3 {
		t0, c0 := time.Now(), c()
		time.Sleep(300 * time.Millisecond)
		wall, cyc := time.Since(t0), c()-c0
		ratio := float64(cyc) / float64(wall)
		if ratio >= 0.98 && ratio <= 1.02 {
			t.Logf("cycle clock %v vs monotonic %v (ratio %.4f)", cyc, wall, ratio)
			return
		}
		ratios = append(ratios, ratio)
	}
	t.Fatalf("cycle clock vs monotonic ratios %.4f: none within 2 %%", ratios)
}

// Run as uid 1000 under a 64 KiB memlock limit (guest-tests.sh): opening a
// 1 MiB rail fails as memlock, by kind.
func TestMemlockKind(t *testing.T) {
	res, err := Factory(Config{GIDIndex: -1})(bw.Rail{Device: "rxe1", Port: 1}, params(bw.OpWrite, 1, 1<<20))
	if err == nil {
		res.Close()
		if os.Getenv("RDMASUITE_EXPECT_MR_FAIL") == "1" {
			t.Fatal("1 MiB registered under a 64 KiB memlock limit")
		}
		t.Skip("memlock is high enough here")
	}
	if k := bw.Classify(err).Kind; k != probeout.KindMemlock {
		t.Fatalf("kind %s for %v, want memlock", k, err)
	}
	t.Logf("as expected: %v", err)
}

// hostStandIn plays a GPU with host memory, so that the GPU memory path
// (choice, dma-buf attempt, peer-memory registration of a pointer bwverbs
// did not allocate, a run over it, teardown) runs on rxe: rxe has no
// dma-buf support, and pins the stand-in's pages as ordinary memory where
// nvidia_peermem would resolve a GPU pointer.
type hostStandIn struct{ dmabuf bool }

func (h hostStandIn) GPUs() ([]GPUInfo, error) {
	return []GPUInfo{{Ordinal: 0, Name: "host stand-in", PCIBusID: "0000:00:00.0", DmaBufSupported: h.dmabuf}}, nil
}

func (h hostStandIn) Alloc(_ int, size int) (GPUBuffer, error) {
	mem, err := syscall.Mmap(-1, 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		return nil, err
	}
	return &mmapBuf{mem: mem}, nil
}

type mmapBuf struct {
	mem []byte
	fd  *os.File
}

func (b *mmapBuf) Ptr() uintptr { return uintptr(unsafe.Pointer(&b.mem[0])) }
func (b *mmapBuf) DmaBufFD() (int, error) {
	if b.fd == nil {
		f, err := os.Open("/dev/null") // not a dma-buf: rxe refuses before looking
		if err != nil {
			return -1, err
		}
		b.fd = f
	}
	return int(b.fd.Fd()), nil
}
func (b *mmapBuf) Close() error {
	if b.fd != nil {
		b.fd.Close()
	}
	return syscall.Munmap(b.mem)
}

func TestGPUMemoryPathWithHostStandIn(t *testing.T) {
	for _, op := range []bw.Op{bw.OpWrite, bw.OpRead} {
		var mu sync.Mutex
		var got []bw.Memory
		cfg := Config{Device: "rxe1", Port: 1, GIDIndex: -1, Memory: "cuda:auto", GPU: hostStandIn{dmabuf: true},
			OnMemory: func(r bw.Rail, m bw.Memory) {
				mu.Lock()
				defer mu.Unlock()
				if r.Device != "rxe1" {
					t.Errorf("memory reported for rail %s", r.Name())
				}
				got = append(got, m)
			}}
		runPairWith(t, "rxe0", cfg, params(op, 2, 4096, 65536))
		if len(got) == 0 {
			t.Fatal("no memory reported")
		}
		m := got[0]
		if m.Kind != bw.MemoryCUDA || m.Path != bw.PathPeermem ||
			!strings.Contains(m.Why, "dma-buf: ibv_reg_dmabuf_mr(") || !strings.Contains(m.Why, "Operation not supported") {
			t.Fatalf("%s: memory %+v", op, m)
		}
		// rxe on a dummy or veth netdev has no PCI device: no nearest GPU.
		if m.Selected == "first" && (m.Topology != "" || !strings.Contains(m.TopologyWhy, "rxe1 has no PCI device")) {
			t.Fatalf("%s: topology %q (%s)", op, m.Topology, m.TopologyWhy)
		}
		t.Logf("%s: %+v", op, m)
	}
	// No allocator: the rail is a no-gpu not-run, naming the fix.
	cli, _, _, _ := pairRun(t, "rxe0", Config{Device: "rxe1", Port: 1, GIDIndex: -1, Memory: "cuda"}, params(bw.OpWrite, 1, 65536))
	if len(cli.Rails) != 1 || cli.Rails[0].Error == nil || cli.Rails[0].Error.Kind != probeout.KindNoGPU ||
		!strings.Contains(cli.Rails[0].Error.Message, "request nvidia.com/gpu") {
		t.Fatalf("no allocator: %+v", cli.Rails)
	}
}

// Latency on real devices, across rxe1 → rxe0: write is the ping-pong
// (the server answers every size, sizes descending so a stale byte of a
// larger size would stop it), read is one READ at a time. Every size has
// perftest's figures, ordered min ≤ typical ≤ p99 ≤ max.
func TestLatencyAcrossDevices(t *testing.T) {
	// auto posts with ibv_post_send on rxe (as perftest); wr takes the
	// ping-pongs' ibv_wr_* path, which perftest uses on ConnectX.
	for _, api := range []string{PostAPIAuto, PostAPIWR} {
		for _, op := range []bw.Op{bw.OpWrite, bw.OpRead, bw.OpSend} {
			latencyAcrossDevices(t, api, op, -1)
		}
	}
	// Inline payloads through both post paths (perftest inlines 220 B
	// writes and 236 B sends on ConnectX).
	for _, api := range []string{PostAPIOld, PostAPIWR} {
		for _, op := range []bw.Op{bw.OpWrite, bw.OpSend} {
			latencyAcrossDevices(t, api, op, 64)
		}
	}
}

// latencyAcrossDevices measures op latency rxe1 → rxe0 posting with api,
// inlining up to inline bytes (-1: perftest's default, none on rxe).
func latencyAcrossDevices(t *testing.T, api string, op bw.Op, inline int) {
	p := bw.Defaults()
	p.Op, p.Latency, p.TxDepth, p.CQMod, p.Iters, p.Sizes, p.MaxInline = op, true, 1, 1, 300, []int{4096, 64, 2}, inline
	cli, srv, cerr, serr := pairRun(t, "rxe0", Config{Device: "rxe1", Port: 1, GIDIndex: -1, PostAPI: api}, p)
	if cerr != nil || serr != nil {
		t.Fatalf("%s %s: client %v, server %v", api, op, cerr, serr)
	}
	if d := cli.Rails[0].Runs[0].Device; d.InlineBytes != max(inline, 0) || !strings.HasPrefix(d.PostAPI, map[string]string{PostAPIAuto: "ibv_post_send", PostAPIOld: "ibv_post_send", PostAPIWR: "ibv_wr_*"}[api]) {
		t.Fatalf("%s %s inline %d (rxe is no device perftest inlines on): device %+v", api, op, inline, d)
	}
	if miss := append(cli.Incomplete(), srv.Incomplete()...); len(miss) > 0 {
		t.Fatalf("%s: incomplete: %v", op, miss)
	}
	for _, r := range cli.Rails[0].Runs[0].Results {
		l := r.Local.Latency
		if l == nil || l.Samples != p.Iters-1-2 || l.Halved != op.PingPongs() ||
			!(0 < l.Min && l.Min <= l.Typical && l.Typical <= l.P99 && l.P99 <= l.P999 && l.P999 <= l.Max) {
			t.Fatalf("%s %d B: latency %+v", op, r.Local.Bytes, l)
		}
		// The kernel's counts for the measuring thread over the timed
		// loop: it ran about as long as the samples say, its CPU share is
		// a share, and every count is a count.
		d := r.Local.Disturbance
		loopMs := l.Avg * float64(l.Samples) / 1000
		if l.Halved {
			loopMs *= 2
		}
		if d == nil || d.Blocks < 0 || d.WallMs < loopMs*0.9 || d.ThreadCPUShare <= 0 || d.ThreadCPUShare > 1.1 || d.Preemptions < 0 || d.OtherThreadsCPUMs < 0 {
			t.Fatalf("%s %d B: disturbance %+v of a %.1f ms loop: want the measuring thread's counts", op, r.Local.Bytes, d, loopMs)
		}
		t.Logf("%s %s latency %d B: typical %.1f µs, p99 %.1f µs, max %.1f µs; thread %.2f of a CPU, %d preemptions, other threads %.1f ms",
			api, op, r.Local.Bytes, l.Typical, l.P99, l.Max, d.ThreadCPUShare, d.Preemptions, d.OtherThreadsCPUMs)
	}
}

// connected opens p's resources on rxe1 (the client) and rxe0 (the
// server) in this process and connects their QPs to each other.
func connected(tb testing.TB, p bw.Params) (cli, srv *resources) {
	tb.Helper()
	d, err := Discover(Config{})
	if err != nil {
		tb.Fatal(err)
	}
	open := func(dev string) *resources {
		rs, err := d.Select(Config{Device: dev, Port: 1})
		if err != nil {
			tb.Fatal(err)
		}
		res, err := Factory(Config{Device: dev, Port: 1, GIDIndex: -1})(rs[0], p)
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { _ = res.Close() })
		return res.(*resources)
	}
	srv, cli = open("rxe0"), open("rxe1")
	if err := srv.Connect(cli.Local()); err != nil {
		tb.Fatal(err)
	}
	if err := cli.Connect(srv.Local()); err != nil {
		tb.Fatal(err)
	}
	return cli, srv
}

// BenchmarkReadLatencyLoopShapes measures READ latency (2 B, one operation
// at a time, rxe1 → rxe0) in blocks of 200, alternating between perftest's
// run_iter_lat shape (what the probe runs) and the general many-QP loop on
// the same QPs, so whatever drifts on the bed over seconds falls on both
// shapes alike: what remains is what the loop itself does per operation.
// -test.benchtime=Nx runs N block pairs; it reports each shape's median
// typical latency and the median ratio general / one-at-a-time, and logs
// every pair (hack/tools/benchtable -blocks puts an interval on them).
func BenchmarkReadLatencyLoopShapes(b *testing.B) {
	p := bw.Defaults()
	p.Op, p.Latency, p.TxDepth, p.CQMod, p.Iters, p.Sizes = bw.OpRead, true, 1, 1, 200, []int{2}
	cli, _ := connected(b, p)
	typical := func(general bool) float64 {
		cli.generalLoop = general
		posted, _, n, err := cli.Loop(p, 2, true)
		if err != nil || n != p.Iters || len(posted) != p.Iters {
			b.Fatalf("general %v: %d of %d READs, %d stamps: %v", general, n, p.Iters, len(posted), err)
		}
		gaps := make([]float64, len(posted)-1)
		for i := range gaps {
			gaps[i] = float64(posted[i+1]-posted[i]) / 1e3
		}
		m, _ := stats.Median(gaps)
		return m
	}
	var one, gen, ratio []float64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var v [2]float64 // one at a time, general
		for _, general := range []bool{i%2 == 1, i%2 == 0} {
			if general {
				v[1] = typical(true)
			} else {
				v[0] = typical(false)
			}
		}
		one, gen, ratio = append(one, v[0]), append(gen, v[1]), append(ratio, v[1]/v[0])
		b.Logf("block pair %d: one at a time %.1f µs, general %.1f µs, ratio %.3f", i+1, v[0], v[1], v[1]/v[0])
	}
	mo, _ := stats.Median(one)
	mg, _ := stats.Median(gen)
	mr, _ := stats.Median(ratio)
	b.ReportMetric(mo, "µs-one-at-a-time")
	b.ReportMetric(mg, "µs-general")
	b.ReportMetric(mr, "general/one-at-a-time")
}
