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
	"syscall"
	"time"

	"github.com/rdmasuite/rdmasuite/workloads/bw"
	"github.com/rdmasuite/rdmasuite/workloads/bwverbs"
	"github.com/rdmasuite/rdmasuite/workloads/mr"
	"github.com/rdmasuite/rdmasuite/workloads/podenv"
	"github.com/rdmasuite/rdmasuite/workloads/probeout"
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
	sizes, op                 string
	sweep, bidir, table, gbit bool
	sessions                  int
	params                    bw.Params
	timeout                   time.Duration
}

func parseBWFlags(name string, args []string) (*bwFlags, *flag.FlagSet, error) {
	f := &bwFlags{params: bw.Defaults()}
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.StringVar(&f.dev.Device, "device", "", "RDMA device (ibv_devices name); default: --netdev's device or the first one")
	fs.StringVar(&f.dev.Netdev, "netdev", "", "pick the RDMA device behind this network interface (e.g. the SR-IOV VF net1)")
	fs.IntVar(&f.dev.Port, "ib-port", 1, "device port")
	fs.IntVar(&f.dev.GIDIndex, "gid-index", -1, "source GID index; -1 picks the port's RoCE v2 IPv4 GID")
	fs.IntVar(&f.port, "port", 18515, "TCP port of the out-of-band exchange (perftest's default)")
	fs.StringVar(&f.op, "op", "write", "write, read, or a list (write,read): one session per op, in order")
	fs.IntVar(&f.sessions, "sessions", 1, "server: how many client sessions to serve before exiting (one per client op)")
	fs.StringVar(&f.sizes, "size", "65536", "message size(s), comma-separated, bytes or with K/M suffix")
	fs.BoolVar(&f.sweep, "sweep", false, "all sizes 2 B .. 8 MiB (perftest -a)")
	fs.IntVar(&f.params.Iters, "iters", f.params.Iters, "iterations per QP per size")
	fs.DurationVar(&f.params.Duration, "duration", 0, "run each size this long instead of --iters (perftest -D)")
	fs.IntVar(&f.params.Warmup, "warmup", f.params.Warmup, "warm-up operations per QP before each size")
	fs.IntVar(&f.params.QPs, "qps", f.params.QPs, "queue pairs")
	fs.IntVar(&f.params.TxDepth, "tx-depth", f.params.TxDepth, "outstanding operations per QP")
	fs.IntVar(&f.params.CQMod, "cq-mod", f.params.CQMod, "request a completion every N posts")
	fs.IntVar(&f.params.MaxInline, "inline", 0, "post writes up to this many bytes inline")
	fs.BoolVar(&f.dev.GoLoop, "go-loop", false, "post and poll from Go, one cgo call per operation (the reference loop; slower on software devices)")
	fs.BoolVar(&f.bidir, "bidirectional", false, "both sides send (perftest -b)")
	fs.BoolVar(&f.table, "table", false, "also print a perftest-like table on stderr")
	fs.BoolVar(&f.gbit, "report-gbits", true, "table in Gb/s (else MB/s)")
	fs.DurationVar(&f.timeout, "timeout", 2*time.Minute, "how long to wait for the peer to connect")
	if err := fs.Parse(args); err != nil {
		return nil, fs, err
	}
	f.params.Op, f.params.Bidirectional = bw.Op(strings.Split(f.op, ",")[0]), f.bidir
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

func parseSizes(s string) ([]int, error) {
	var out []int
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		mult := 1
		switch {
		case strings.HasSuffix(part, "K"):
			mult, part = 1<<10, strings.TrimSuffix(part, "K")
		case strings.HasSuffix(part, "M"):
			mult, part = 1<<20, strings.TrimSuffix(part, "M")
		case strings.HasSuffix(part, "G"):
			mult, part = 1<<30, strings.TrimSuffix(part, "G")
		}
		n, err := strconv.Atoi(part)
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("bad size %q: want e.g. 65536, 64K, 1M", part)
		}
		out = append(out, n*mult)
	}
	return out, nil
}

func signalContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

// BWOutput is what `rdmaprobe bw` prints: one report per session (op).
type BWOutput struct {
	Runs  []bw.Report `json:"runs"`
	Error string      `json:"error,omitempty"`
}

func runBW(args []string) error {
	if len(args) == 0 || (args[0] != "server" && args[0] != "client") {
		return errors.New("usage: rdmaprobe bw server [flags] | rdmaprobe bw client [flags] HOST")
	}
	role := args[0]
	f, fs, err := parseBWFlags("bw "+role, args[1:])
	if err != nil {
		return err
	}
	ops := strings.Split(f.op, ",")
	ctx, cancel := signalContext()
	defer cancel()
	factory := bwverbs.Factory(f.dev)
	var out BWOutput
	var runErr error
	if role == "server" {
		ln, err := net.Listen("tcp", fmt.Sprintf(":%d", f.port))
		if err != nil {
			return err
		}
		defer ln.Close()
		fmt.Fprintf(os.Stderr, "rdmaprobe bw server: waiting on %s for %d session(s)\n", ln.Addr(), f.sessions)
		for i := 0; i < f.sessions && runErr == nil; i++ {
			var rep bw.Report
			rep, runErr = bw.Serve(ctx, ln, factory, f.timeout, bwverbs.Clock())
			out.Runs = append(out.Runs, rep)
		}
	} else {
		if fs.NArg() != 1 {
			return errors.New("bw client needs the server's address: rdmaprobe bw client [flags] HOST")
		}
		addr := net.JoinHostPort(fs.Arg(0), strconv.Itoa(f.port))
		for _, op := range ops {
			p := f.params
			p.Op = bw.Op(op)
			rep, err := bw.Run(ctx, addr, p, factory, f.timeout, bwverbs.Clock())
			out.Runs = append(out.Runs, rep)
			if f.table && len(rep.Results) > 0 {
				bw.WriteTable(os.Stderr, rep, f.gbit)
			}
			if err != nil {
				runErr = fmt.Errorf("%s: %w", op, err)
				break
			}
		}
	}
	if runErr != nil {
		out.Error = runErr.Error()
	}
	if err := probeout.Write(os.Stdout, "bw", out); err != nil {
		return err
	}
	return runErr
}

func runMR(args []string) error {
	fs := flag.NewFlagSet("mr", flag.ContinueOnError)
	var cfg bwverbs.Config
	fs.StringVar(&cfg.Device, "device", "", "RDMA device; default: --netdev's device or the first one")
	fs.StringVar(&cfg.Netdev, "netdev", "", "pick the RDMA device behind this network interface")
	minSize := fs.String("min", "4K", "smallest region to register")
	maxSize := fs.String("max", "1G", "largest region to register")
	required := fs.String("required", "1M", "registration size that must succeed")
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
	_, ipcLock, _ := podenv.EffectiveCaps("/proc/self/status")
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
