package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/rdmasuite/rdmasuite/workloads/bw"
	"github.com/rdmasuite/rdmasuite/workloads/bwverbs"
	"github.com/rdmasuite/rdmasuite/workloads/mr"
	"github.com/rdmasuite/rdmasuite/workloads/podenv"
	"github.com/rdmasuite/rdmasuite/workloads/portcounters"
	"github.com/rdmasuite/rdmasuite/workloads/probeout"
	"github.com/rdmasuite/rdmasuite/workloads/units"
	"github.com/rdmasuite/rdmasuite/workloads/verbs"
)

// deviceReport is `rdmaprobe devices`: what ibv_devinfo -v would show.
type deviceReport struct {
	Devices []deviceInfo `json:"devices"`
	Error   string       `json:"error,omitempty"`
}

type deviceInfo struct {
	Name  string           `json:"name"`
	Attr  verbs.DeviceAttr `json:"attr"`
	Ports []portInfo       `json:"ports"`
}

type portInfo struct {
	Port int `json:"port"`
	verbs.PortAttr
	GIDs []verbs.GID `json:"gids"`
}

func runDevices(args []string) error {
	fs := flag.NewFlagSet("devices", flag.ContinueOnError)
	if err := fs.Parse(args); err != nil {
		return err
	}
	names, err := verbs.DeviceNames()
	if err != nil {
		// No device is a result, not a crash: the suite reads it.
		_ = probeout.Write(os.Stdout, "devices", deviceReport{Devices: []deviceInfo{}, Error: err.Error()})
		return err
	}
	rep := deviceReport{}
	for _, n := range names {
		info, err := describeDevice(n)
		if err != nil {
			return err
		}
		rep.Devices = append(rep.Devices, info)
	}
	return probeout.Write(os.Stdout, "devices", rep)
}

func describeDevice(name string) (deviceInfo, error) {
	ctx, err := verbs.Open(name)
	if err != nil {
		return deviceInfo{}, err
	}
	defer ctx.Close()
	attr, err := ctx.QueryDevice()
	if err != nil {
		return deviceInfo{}, err
	}
	gids, err := ctx.GIDs()
	if err != nil {
		return deviceInfo{}, err
	}
	info := deviceInfo{Name: name, Attr: attr}
	for p := 1; p <= attr.PhysPorts; p++ {
		pa, err := ctx.QueryPort(p)
		if err != nil {
			return deviceInfo{}, err
		}
		pi := portInfo{Port: p, PortAttr: pa, GIDs: []verbs.GID{}}
		for _, g := range gids {
			if g.Port == p {
				pi.GIDs = append(pi.GIDs, g)
			}
		}
		info.Ports = append(info.Ports, pi)
	}
	return info, nil
}

// bwFlags are shared by `bw server` and `bw client`.
type bwFlags struct {
	dev                       bwverbs.Config
	port                      int
	sizes, op, rails          string
	sweep, bidir, table, gbit bool
	railParallel              bool
	portCounters              bool
	countersRoot              string
	sessions                  int
	params                    bw.Params
	ops                       []bw.Op
	timeout                   time.Duration
	mem                       bwverbs.MemorySpec
}

func parseBWFlags(name string, args []string) (*bwFlags, *flag.FlagSet, error) {
	f := &bwFlags{params: bw.Defaults()}
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.StringVar(&f.dev.Device, "device", "", "measure only this RDMA device's port (--ib-port); default: every device × port the pod sees")
	fs.StringVar(&f.dev.Netdev, "netdev", "", "measure only the RDMA port behind this network interface (e.g. the SR-IOV VF net1)")
	fs.IntVar(&f.dev.Port, "ib-port", 1, "device port, with --device")
	fs.IntVar(&f.dev.GIDIndex, "gid-index", -1, "source GID index; -1 picks each port's RoCE v2 IPv4 GID")
	fs.IntVar(&f.port, "port", 18515, "TCP port of the out-of-band exchange (perftest's default)")
	fs.StringVar(&f.op, "op", "write", "client: write, read, send (with --latency only), or a list (write,read): measured in order on every rail pair")
	fs.String("run-name", "", "names this run on the frame lines of a multi-run invocation (runs joined by --then; the suite's shared pair pods)")
	fs.IntVar(&f.sessions, "sessions", 1, "ignored (the server serves until the client sends finish); kept for old callers")
	fs.StringVar(&f.rails, "rails", bw.RailsSame, "client: rail pairing: same (client rail i ↔ server rail i) or cross (every client rail × every server rail)")
	fs.BoolVar(&f.railParallel, "rail-parallel", false, "client: measure rails at the same time (default: one after another; ops are always sequential per rail)")
	fs.StringVar(&f.sizes, "size", "65536", "message size(s), comma-separated, bytes or with K/M suffix")
	fs.BoolVar(&f.sweep, "sweep", false, "all sizes 2 B .. 8 MiB (perftest -a)")
	fs.IntVar(&f.params.Iters, "iters", f.params.Iters, "iterations per QP per size")
	fs.DurationVar(&f.params.Duration, "duration", 0, "run each size this long instead of --iters (perftest -D)")
	fs.IntVar(&f.params.Warmup, "warmup", f.params.Warmup, "warm-up operations per QP before each size")
	fs.IntVar(&f.params.QPs, "qps", f.params.QPs, "queue pairs")
	fs.IntVar(&f.params.TxDepth, "tx-depth", f.params.TxDepth, "outstanding operations per QP")
	fs.IntVar(&f.params.CQMod, "cq-mod", f.params.CQMod, "request a completion every N posts (default: 100 up to 8 KiB, every post above, as perftest without -Q; given, it applies to every size)")
	fs.IntVar(&f.params.QPTimeout, "qp-timeout", f.params.QPTimeout, "client: local ACK timeout exponent of every QP, both sides (4.096 µs × 2^N before a resend; perftest's -u): raise it where a busy or software device acknowledges late")
	fs.IntVar(&f.params.MaxInline, "inline", 0, "post writes (and, with --latency, sends) up to this many bytes inline; with --latency the default is what perftest's latency test inlines on the device")
	fs.StringVar(&f.dev.Memory, "mem", bw.MemoryHost, "where the registered buffer lives: host, cuda (= cuda:auto: on each rail the GPU nearest its NIC), or cuda:N (CUDA ordinal N): GPUDirect RDMA, perftest's --use_cuda; dma-buf first, then nvidia_peermem")
	fs.StringVar(&f.dev.PostAPI, "post-api", bwverbs.PostAPIAuto, "how the loop posts: auto (as perftest would on the device: ibv_wr_* on mlx5, EFA and HNS, ibv_post_send elsewhere, rxe included), wr (ibv_wr_*) or old (ibv_post_send, perftest's --use_old_post_send)")
	fs.BoolVar(&f.dev.GoLoop, "go-loop", false, "post and poll from Go, one cgo call per operation (the reference loop; slower on software devices)")
	fs.BoolVar(&f.bidir, "bidirectional", false, "both sides send (perftest -b)")
	fs.BoolVar(&f.params.Latency, "latency", false, "measure latency as perftest does instead of bandwidth: write is ib_write_lat's ping-pong (half the round trip), "+
		"send is ib_send_lat's (SENDs into posted receives, half the round trip), read is ib_read_lat (one READ at a time); one QP, tx depth and cq-mod 1, default size 2 B and 1000 iterations (perftest's)")
	fs.IntVar(&f.params.LoadSize, "load-size", 0, "client, with --latency: measure each op's latency twice on every rail pair, alone and then while a WRITE stream of this many bytes "+
		"runs between the same rails on QPs of its own (latency under load); the loaded run carries the baseline and the stream")
	fs.BoolVar(&f.portCounters, "port-counters", true, "read each rail's port counters (sysfs counters/ and hw_counters/) right before and after every size, on both sides, and report the deltas")
	fs.StringVar(&f.countersRoot, "counters-root", "", "a host root mounted in the pod (its /sys under ROOT/sys): read a port's counters there when the pod's own sysfs has none (a pod's view of a device in shared RDMA netns mode lacks counters/ and hw_counters/)")
	fs.BoolVar(&f.table, "table", false, "also print a perftest-like table per rail and op on stderr")
	fs.BoolVar(&f.gbit, "report-gbits", true, "table in Gb/s (else MB/s)")
	fs.DurationVar(&f.timeout, "timeout", 2*time.Minute, "client: how long to keep trying to reach the server; server: how long to wait for a client (none yet, or none since the last session without a finish)")
	if err := fs.Parse(args); err != nil {
		return nil, fs, err
	}
	for _, op := range strings.Split(f.op, ",") {
		op = strings.TrimSpace(op)
		switch {
		case op != string(bw.OpWrite) && op != string(bw.OpRead) && op != string(bw.OpSend):
			return nil, fs, fmt.Errorf("--op %q: want write, read, send (with --latency) or a list of them", op)
		case op == string(bw.OpSend) && !f.params.Latency:
			return nil, fs, fmt.Errorf("--op send is measured as latency only (ib_send_lat): add --latency, or measure bandwidth with write or read")
		}
		f.ops = append(f.ops, bw.Op(op))
	}
	if f.params.QPTimeout < 1 || f.params.QPTimeout > 31 {
		return nil, fs, fmt.Errorf("--qp-timeout %d: want 1..31 (4.096 µs × 2^N; 0 is the IBTA's wait forever, which would hang on a lost packet)", f.params.QPTimeout)
	}
	if f.rails != bw.RailsSame && f.rails != bw.RailsCross {
		return nil, fs, fmt.Errorf("--rails %q: want %s or %s", f.rails, bw.RailsSame, bw.RailsCross)
	}
	if f.dev.Device != "" && f.dev.Netdev != "" {
		return nil, fs, errors.New("give --device or --netdev, not both")
	}
	if _, err := bwverbs.ParsePostAPI(f.dev.PostAPI); err != nil {
		return nil, fs, fmt.Errorf("--post-api: %w", err)
	}
	mem, err := bwverbs.ParseMemory(f.dev.Memory)
	if err != nil {
		return nil, fs, fmt.Errorf("--mem: %w", err)
	}
	if mem.Kind == bw.MemoryCUDA && f.params.MaxInline > 0 {
		return nil, fs, fmt.Errorf("--inline %d with --mem %s: an inline post copies the payload with the CPU, which must not touch GPU memory; use --inline 0 (the default)", f.params.MaxInline, mem)
	}
	f.mem = mem
	f.params.Op, f.params.Bidirectional = f.ops[0], f.bidir
	set := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	if set["cq-mod"] { // asked for: every size, as perftest's -Q
		f.params.CQModUpTo8K = false
	}
	if f.params.Latency {
		if !set["size"] {
			f.sizes = "2"
		}
		if !set["iters"] {
			f.params.Iters = 1000
		}
		if !set["tx-depth"] {
			f.params.TxDepth = 1
		}
		if !set["cq-mod"] {
			f.params.CQMod = 1
		}
		if !set["inline"] {
			// What perftest's latency test inlines on the device (220 B
			// writes, 236 B sends on ConnectX; none on rxe).
			f.params.MaxInline = -1
		}
	}
	if f.sweep {
		f.params.Sizes = bw.SweepSizes()
	} else {
		sizes, err := parseSizes(f.sizes)
		if err != nil {
			return nil, fs, err
		}
		f.params.Sizes = sizes
	}
	return f, fs, nil
}

func parseSizes(s string) ([]int, error) { return units.ParseSizes(s) }

func signalContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

// runBW is `rdmaprobe bw server|client`. Both print one bw envelope with a
// bw.ProbeOutput; the envelope's error is set for probe-wide failures (no
// device, bad flags, no peer). The exit status is 0 only when every
// requested rail × op × size was measured.
func runBW(args []string) error {
	if len(args) == 0 || (args[0] != "server" && args[0] != "client") {
		perr := probeout.Errorf(probeout.KindUsage, "%s", bwUsage)
		_ = probeout.WriteError(os.Stdout, bw.ProbeName, bw.ProbeOutput{Rails: []bw.RailResult{}}, perr)
		return perr
	}
	role := args[0]
	runs := splitThen(args[1:])
	if len(runs) == 1 && !hasRunName(runs[0]) {
		return runBWOnce(role, runs[0])
	}
	// Several runs in one process (the suite's shared pair pods), or one
	// named run (a run exec'd in a node's pod, where the end frame is the
	// only proof that the process ended: an exec stream that breaks reads
	// like an exit 0): each is framed with its own exit status, in order;
	// the server serves them in the same order, one client finish each.
	// The process fails with the first run that failed, after every run
	// had its turn.
	var first error
	for k, run := range runs {
		name := runName(run, k+1)
		_ = probeout.WriteRunBegin(os.Stdout, k+1, len(runs), name)
		err := runBWOnce(role, run)
		if err != nil {
			fmt.Fprintf(os.Stderr, "rdmaprobe bw %s: run %d/%d (%s): %v\n", role, k+1, len(runs), name, err)
		}
		_ = probeout.WriteRunEnd(os.Stdout, k+1, len(runs), name, exitCode(err))
		if err != nil && first == nil && !errors.Is(err, flag.ErrHelp) {
			first = fmt.Errorf("run %d/%d (%s): %w", k+1, len(runs), name, err)
		}
	}
	return first
}

const bwUsage = "usage: rdmaprobe bw server [flags] [--then [flags]]... | rdmaprobe bw client [flags] HOST [--then [flags] HOST]... (HOST - : the server's address is the first line of standard input)"

// splitThen cuts bw's arguments into runs at each --then.
func splitThen(args []string) [][]string {
	runs := [][]string{{}}
	for _, a := range args {
		if a == "--then" {
			runs = append(runs, []string{})
			continue
		}
		runs[len(runs)-1] = append(runs[len(runs)-1], a)
	}
	return runs
}

// hasRunName says the run was given a --run-name.
func hasRunName(args []string) bool {
	_, ok := runNameFlag(args)
	return ok
}

// runName is a run's --run-name (what its frame lines say), or run-K.
func runName(args []string, k int) string {
	if name, ok := runNameFlag(args); ok {
		return name
	}
	return fmt.Sprintf("run-%d", k)
}

func runNameFlag(args []string) (string, bool) {
	for i, a := range args {
		switch {
		case (a == "--run-name" || a == "-run-name") && i+1 < len(args):
			return args[i+1], true
		case strings.HasPrefix(a, "--run-name="), strings.HasPrefix(a, "-run-name="):
			return a[strings.Index(a, "=")+1:], true
		}
	}
	return "", false
}

// runBWOnce is one bw run: one envelope on stdout, its error returned.
func runBWOnce(role string, args []string) error {
	usageLine := bwUsage
	out := bw.ProbeOutput{Role: role, Found: []bw.Rail{}, Rails: []bw.RailResult{}}
	f, fs, err := parseBWFlags("bw "+role, args)
	if errors.Is(err, flag.ErrHelp) {
		return err // the flags went to stderr; help is no probe run
	}
	if err == nil && role == "client" && fs.NArg() != 1 {
		err = errors.New("bw client needs the server's address: " + usageLine)
	}
	if err == nil && role == "server" && fs.NArg() != 0 {
		err = fmt.Errorf("bw server takes no arguments (got %q): %s", fs.Args(), usageLine)
	}
	if err != nil {
		perr := probeout.Errorf(probeout.KindUsage, "%v", err)
		_ = probeout.WriteError(os.Stdout, bw.ProbeName, out, perr)
		return perr
	}
	ctx, cancel := signalContext()
	defer cancel()
	logf := func(format string, a ...any) { fmt.Fprintf(os.Stderr, "rdmaprobe bw "+role+": "+format+"\n", a...) }

	// Rails: every device × port, or the one --device/--netdev names. A
	// failure here is probe-wide, but the server still answers so that the
	// client learns why, and the client still tells the server to finish.
	// With --device/--netdev, devices the pod sees but was not given (a
	// hostdev pod in shared RDMA netns mode) are skipped; what the pod saw
	// is in the output either way.
	disc, derr := bwverbs.Discover(f.dev)
	found := disc.Rails
	var rails []bw.Rail
	if derr == nil {
		rails, derr = disc.Select(f.dev)
	}
	view := bwverbs.View(disc)
	mode := view.NetnsMode
	if mode == "" {
		mode = "unknown (" + view.NetnsModeError + ")"
	}
	logf("RDMA netns mode %s; devices visible: %s", mode, describeView(view))
	var setupErr *probeout.Error
	if derr != nil {
		setupErr = bw.Classify(derr)
		logf("%v", setupErr)
	}
	for _, r := range rails {
		logf("rail %d: %s %s %s %.0f Gb/s netdev %s", r.Index, r.Name(), r.State, r.LinkLayer, r.RateGbps, r.Netdev)
	}
	// GPU memory: the CUDA driver is loaded on the first rail that opens;
	// each rail's memory (GPU, topology, GPUDirect path) lands in its result.
	mems := newMemoryLog(logf)
	f.dev.OnMemory = mems.record
	if f.mem.Kind == bw.MemoryCUDA {
		f.dev.GPU = newCUDAAllocator()
	}
	factory, clock := bwverbs.Factory(f.dev), bwverbs.Clock()
	var counters bw.CounterReader
	if f.portCounters {
		roots := []string{"/"}
		if f.countersRoot != "" {
			roots = append(roots, f.countersRoot)
		}
		counters = func(r bw.Rail) (portcounters.Snapshot, error) { return portcounters.ReadFirst(roots, r.Device, r.Port) }
	}
	// failBeforePeer ends a run that never reached its peer (no listener,
	// no server address): what the pod saw, and why.
	failBeforePeer := func(perr *probeout.Error) error {
		if found != nil {
			out.Found = found
		}
		out.PodView = view
		_ = probeout.WriteError(os.Stdout, bw.ProbeName, out, perr)
		return perr
	}
	var perr *probeout.Error
	if role == "server" {
		ln, err := net.Listen("tcp", fmt.Sprintf(":%d", f.port))
		if err != nil {
			return failBeforePeer(probeout.Errorf(probeout.KindInternal, "listen on :%d: %v", f.port, err))
		}
		logf("waiting on %s for a client (up to %s)", ln.Addr(), f.timeout)
		out, perr = bw.Serve(ctx, ln, bw.ServerConfig{Found: found, Rails: rails, Open: factory, Clock: clock,
			Counters: counters, Timeout: f.timeout, Err: setupErr, Logf: logf})
	} else {
		host, herr := serverHost(fs.Arg(0))
		if herr != nil {
			return failBeforePeer(herr)
		}
		var mu sync.Mutex
		cfg := bw.ClientConfig{Addr: net.JoinHostPort(host, strconv.Itoa(f.port)), Found: found, Rails: rails,
			Open: factory, Clock: clock, Params: f.params, Ops: f.ops, Mode: f.rails, Parallel: f.railParallel,
			Counters: counters, Timeout: f.timeout, Err: setupErr, Logf: logf}
		if f.table {
			cfg.OnReport = func(local bw.Rail, peer *bw.Rail, rep bw.Report) {
				if len(rep.Results) == 0 {
					return
				}
				mu.Lock()
				defer mu.Unlock()
				fmt.Fprintf(os.Stderr, " rail %s ↔ server rail %s\n", local.Name(), peer.Name())
				bw.WriteTable(os.Stderr, rep, f.gbit)
			}
		}
		out, perr = bw.RunClient(ctx, cfg)
	}
	mems.fill(&out)
	out.PodView = view
	if err := probeout.WriteError(os.Stdout, bw.ProbeName, out, perr); err != nil {
		return err
	}
	if perr != nil {
		return perr
	}
	if miss := out.Incomplete(); len(miss) > 0 {
		return fmt.Errorf("not everything requested was measured:\n  %s", strings.Join(miss, "\n  "))
	}
	return nil
}

// describeView lists the visible devices for the log: name, netdev, and
// whether they opened.
func describeView(v *bw.PodView) string {
	if v.DevicesError != "" {
		return "unknown (" + v.DevicesError + ")"
	}
	if len(v.Devices) == 0 {
		return "none"
	}
	var parts []string
	for _, d := range v.Devices {
		p := d.Name
		if d.Netdev != "" {
			p += " (" + d.Netdev + ")"
		}
		if !d.Openable {
			p += " not openable: " + d.OpenError
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, ", ")
}

func runMR(args []string) error {
	fs := flag.NewFlagSet("mr", flag.ContinueOnError)
	var cfg bwverbs.Config
	fs.StringVar(&cfg.Device, "device", "", "RDMA device; default: --netdev's device or the first one")
	fs.StringVar(&cfg.Netdev, "netdev", "", "pick the RDMA device behind this network interface")
	minSize := fs.String("min", "4K", "smallest region to register")
	maxSize := fs.String("max", "1G", "largest region to register")
	required := fs.String("required", "1M", "registration size that must succeed")
	dropIPCLock := fs.Bool("drop-ipc-lock", false, "drop CAP_IPC_LOCK (on the registering thread) first: measure what a pod without IPC_LOCK gets, from a pod that has it")
	if err := fs.Parse(args); err != nil {
		return err
	}
	sizes, err := parseSizes(*minSize + "," + *maxSize + "," + *required)
	if err != nil {
		return err
	}
	lim, err := podenv.MemlockLimits()
	if err != nil {
		return err
	}
	if *dropIPCLock {
		// From here this goroutine stays on the thread without the
		// capability, and every registration below is made from it.
		if err := podenv.DropIPCLock(); err != nil {
			return fmt.Errorf("--drop-ipc-lock: %w", err)
		}
	}
	_, ipcLock, _ := podenv.EffectiveCaps(podenv.ThreadStatus)
	var reg mr.Registrar
	name, derr := bwverbs.ResolveDevice(cfg)
	var ctx *verbs.Context
	if derr == nil {
		ctx, derr = verbs.Open(name)
	}
	var pd *verbs.PD
	if derr == nil {
		defer ctx.Close()
		name = ctx.Name
		if pd, derr = ctx.AllocPD(); derr == nil {
			defer pd.Close()
			reg = func(size int64) error {
				m, err := pd.RegMR(int(size), verbs.AccessLocalWrite|verbs.AccessRemoteWrite|verbs.AccessRemoteRead)
				if err != nil {
					return err
				}
				return m.Close()
			}
		}
	}
	res := mr.Probe(reg, name, mr.Sizes(int64(sizes[0]), int64(sizes[1])), int64(sizes[2]), lim, ipcLock, os.Getuid())
	res.DroppedIPCLock = *dropIPCLock
	if derr != nil {
		res.NotRunWhy = derr.Error()
	}
	if err := probeout.Write(os.Stdout, "mr", res); err != nil {
		return err
	}
	if res.Status == mr.Fail {
		return fmt.Errorf("%w: %s\nfix: %s", errCheckFailed, res.Diagnosis, res.Fix)
	}
	return nil
}
