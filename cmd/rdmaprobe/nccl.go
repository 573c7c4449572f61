package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"syscall"
	"time"

	"github.com/rdmasuite/rdmasuite/workloads/cuda"
	"github.com/rdmasuite/rdmasuite/workloads/nccl"
	"github.com/rdmasuite/rdmasuite/workloads/ncclbench"
	"github.com/rdmasuite/rdmasuite/workloads/ncclboot"
	"github.com/rdmasuite/rdmasuite/workloads/ncclrt"
	"github.com/rdmasuite/rdmasuite/workloads/ncclrun"
	"github.com/rdmasuite/rdmasuite/workloads/probeout"
	"github.com/rdmasuite/rdmasuite/workloads/units"
)

// runNCCL is one rank of a multi-node NCCL world (an Indexed Job pod; see
// workloads/ncclrun): CUDA and NCCL are loaded from the pod image at run
// time, rank 0 hands out the unique id over the probe's own channel, and
// rank 0 prints every rank's facts and the combined sweep.
func runNCCL(args []string) error {
	fs := flag.NewFlagSet("nccl", flag.ContinueOnError)
	world := fs.Int("world", 0, "number of ranks (the Job's completions)")
	token := fs.String("token", "", "run token every rank must present (unique per world)")
	colls := fs.String("collectives", "all_reduce,all_gather,reduce_scatter,alltoall,sendrecv", "collectives to sweep")
	minB := fs.String("min-bytes", "8", "smallest size (nccl-tests -b)")
	maxB := fs.String("max-bytes", "128M", "largest size (nccl-tests -e)")
	factor := fs.Int("factor", 2, "size step factor (nccl-tests -f)")
	warmup := fs.Int("warmup", 5, "warm-up iterations (nccl-tests -w)")
	iters := fs.Int("iters", 20, "timed iterations per size (nccl-tests -n)")
	check := fs.Bool("check", true, "check the results like nccl-tests -c 1 (#wrong)")
	gpu := fs.Int("gpu", 0, "CUDA ordinal of this rank's GPU among the pod's visible GPUs")
	timeout := fs.Duration("timeout", 5*time.Minute, "bound on the rendezvous and on the gather")
	if err := fs.Parse(args); err != nil {
		return ncclUsage(err)
	}
	cfg := ncclbench.DefaultConfig()
	cfg.Warmup, cfg.Iters, cfg.Check, cfg.StepFactor = *warmup, *iters, *check, *factor
	for _, b := range []struct {
		flag, val string
		to        *int64
	}{{"--min-bytes", *minB, &cfg.MinBytes}, {"--max-bytes", *maxB, &cfg.MaxBytes}} {
		n, err := units.ParseSizes(b.val)
		if err != nil || len(n) != 1 {
			return ncclUsage(fmt.Errorf("%s %q: want one size such as 8, 64K or 128M", b.flag, b.val))
		}
		*b.to = int64(n[0])
	}
	cfg.Collectives = nil
	for _, s := range units.SplitList(*colls) {
		c, err := nccl.ParseCollective(s)
		if err != nil {
			return ncclUsage(err)
		}
		cfg.Collectives = append(cfg.Collectives, c)
	}
	self, err := ncclboot.FromEnv(os.Getenv, *world)
	if err != nil {
		return ncclUsage(err)
	}
	if *token == "" {
		return ncclUsage(errors.New("--token is required (the same value on every rank of the world)"))
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	facts, starter := lookAtPod(*gpu, cfg)
	facts.Pod, facts.Node = os.Getenv("POD_NAME"), os.Getenv("NODE_NAME")
	logf := func(format string, a ...any) { fmt.Fprintf(os.Stderr, format+"\n", a...) }
	var st ncclrun.Starter
	if starter != nil {
		st = starter
	}
	out, perr := ncclrun.Run(ctx, ncclrun.Config{Self: self, Token: *token, Timeout: *timeout, Logf: logf}, facts, st, combineBench)
	if self.Rank == 0 && out.Result != nil {
		var res ncclbench.Result
		if json.Unmarshal(out.Result, &res) == nil {
			_ = ncclbench.Render(os.Stderr, res)
		}
	}
	if err := probeout.WriteError(os.Stdout, ncclrun.ProbeName, out, perr); err != nil {
		return err
	}
	if perr != nil {
		return perr
	}
	return nil
}

// ncclUsage prints the envelope of a rank that could not start for bad
// flags or environment, so the runner reads why from the pod's log.
func ncclUsage(err error) error {
	perr := probeout.Errorf(probeout.KindUsage, "%v", err)
	_ = probeout.WriteError(os.Stdout, ncclrun.ProbeName, ncclrun.Output{}, perr)
	return perr
}

// lookAtPod loads the CUDA driver and NCCL and describes them; on any
// failure the facts say why (a no-gpu not-run) and the starter is nil.
func lookAtPod(ordinal int, cfg ncclbench.Config) (ncclrun.Facts, *ncclStarter) {
	var f ncclrun.Facts
	notReady := func(kind probeout.Kind, format string, a ...any) (ncclrun.Facts, *ncclStarter) {
		f.NotReady, f.NotReadyKind = fmt.Sprintf(format, a...), kind
		return f, nil
	}
	drv, err := cuda.Load()
	if err != nil {
		return notReady(probeout.KindNoGPU, "%v", err)
	}
	if err := drv.Init(); err != nil {
		if errors.Is(err, cuda.ErrNoDevice) {
			return notReady(probeout.KindNoGPU, "the CUDA driver sees no GPU (%v): request nvidia.com/gpu for the pod", err)
		}
		return notReady(probeout.KindInternal, "cuInit: %v", err)
	}
	if v, err := drv.Version(); err == nil {
		f.CUDADriver = cuda.VersionString(v)
	}
	devs, err := drv.Devices()
	if err != nil {
		return notReady(probeout.KindInternal, "list GPUs: %v", err)
	}
	for _, d := range devs {
		f.GPUs = append(f.GPUs, ncclrun.GPU{Ordinal: d.Ordinal, Name: d.Name, PCIBusID: d.PCIBusID})
	}
	if ordinal < 0 || ordinal >= len(devs) {
		return notReady(probeout.KindNoGPU, "GPU %d requested, the pod sees %d: request as many nvidia.com/gpu as ranks use", ordinal, len(devs))
	}
	lib, err := ncclrt.Load()
	if err != nil {
		return notReady(probeout.KindNoGPU, "%v", err)
	}
	if v, err := lib.Version(); err == nil {
		f.NCCL = ncclrt.VersionString(v)
	}
	return f, &ncclStarter{drv: drv, dev: devs[ordinal], lib: lib, cfg: cfg}
}

// ncclStarter runs the sweep on one GPU through NCCL.
type ncclStarter struct {
	drv *cuda.Driver
	dev cuda.Device
	lib *ncclrt.Lib
	cfg ncclbench.Config
}

func (s *ncclStarter) NewID() ([]byte, error) {
	id, err := s.lib.GetUniqueID()
	if err != nil {
		return nil, err
	}
	return id[:], nil
}

func (s *ncclStarter) Run(ctx context.Context, id []byte, world, rank int) (json.RawMessage, error) {
	// CUDA's current context is per OS thread, and NCCL's calls use it.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cc, err := s.drv.Activate(s.dev)
	if err != nil {
		return nil, err
	}
	defer cc.Close()
	stream, err := cc.StreamCreate()
	if err != nil {
		return nil, err
	}
	defer cc.StreamDestroy(stream)
	var uid ncclrt.UniqueID
	copy(uid[:], id)
	comm, err := s.lib.CommInitRank(world, rank, uid)
	if err != nil {
		return nil, err
	}
	a := &ncclAdapter{cc: cc, lib: s.lib, comm: comm, stream: stream, rank: rank, world: world}
	// A rank that stops early must not leave its peers inside a
	// collective forever: abort the communicator on error or cancel.
	stopAbort := context.AfterFunc(ctx, func() { _ = comm.Abort() })
	res, err := ncclbench.Run(ctx, a, a, s.cfg)
	stopAbort()
	if err != nil {
		_ = comm.Abort()
	} else {
		_ = comm.Destroy()
	}
	blob, jerr := json.Marshal(res)
	if jerr != nil {
		return nil, jerr
	}
	return blob, err
}

func combineBench(ranks []json.RawMessage) (json.RawMessage, error) {
	rs := make([]ncclbench.RankResult, len(ranks))
	for i, b := range ranks {
		if err := json.Unmarshal(b, &rs[i]); err != nil {
			return nil, fmt.Errorf("rank %d's result: %w", i, err)
		}
	}
	res, err := ncclbench.Combine(rs)
	if err != nil {
		return nil, err
	}
	return json.Marshal(res)
}

// ncclAdapter is ncclbench's Comm and Memory over one GPU and NCCL
// communicator; float32 sums on one stream.
type ncclAdapter struct {
	cc          *cuda.Context
	lib         *ncclrt.Lib
	comm        *ncclrt.Comm
	stream      cuda.Stream
	rank, world int
}

func (a *ncclAdapter) Rank() int  { return a.rank }
func (a *ncclAdapter) World() int { return a.world }

func (a *ncclAdapter) Alloc(n int) (ncclbench.Buffer, error) {
	p, err := a.cc.Alloc(n)
	return ncclbench.Buffer(p), err
}
func (a *ncclAdapter) Free(b ncclbench.Buffer) error { return a.cc.Free(cuda.DevicePtr(b)) }
func (a *ncclAdapter) Upload(dst ncclbench.Buffer, src []byte) error {
	if err := a.Sync(); err != nil {
		return err
	}
	return a.cc.CopyHtoD(cuda.DevicePtr(dst), src)
}
func (a *ncclAdapter) Download(dst []byte, src ncclbench.Buffer) error {
	if err := a.Sync(); err != nil {
		return err
	}
	return a.cc.CopyDtoH(dst, cuda.DevicePtr(src))
}
func (a *ncclAdapter) Sync() error { return a.cc.StreamSync(a.stream) }

func (a *ncclAdapter) AllReduce(send, recv ncclbench.Buffer, count int) error {
	return a.comm.AllReduce(uintptr(send), uintptr(recv), count, ncclrt.Float32, ncclrt.Sum, uintptr(a.stream))
}
func (a *ncclAdapter) AllGather(send, recv ncclbench.Buffer, n int) error {
	return a.comm.AllGather(uintptr(send), uintptr(recv), n, ncclrt.Float32, uintptr(a.stream))
}
func (a *ncclAdapter) ReduceScatter(send, recv ncclbench.Buffer, n int) error {
	return a.comm.ReduceScatter(uintptr(send), uintptr(recv), n, ncclrt.Float32, ncclrt.Sum, uintptr(a.stream))
}

// AllToAll is grouped point-to-point calls, as nccl-tests does.
func (a *ncclAdapter) AllToAll(send, recv ncclbench.Buffer, n int) error {
	if err := a.lib.GroupStart(); err != nil {
		return err
	}
	var first error
	for p := 0; p < a.world; p++ {
		off := ncclbench.Buffer(p * n * 4)
		if err := a.comm.Send(uintptr(send+off), n, ncclrt.Float32, p, uintptr(a.stream)); err != nil && first == nil {
			first = err
		}
		if err := a.comm.Recv(uintptr(recv+off), n, ncclrt.Float32, p, uintptr(a.stream)); err != nil && first == nil {
			first = err
		}
	}
	if err := a.lib.GroupEnd(); err != nil && first == nil {
		first = err
	}
	return first
}

func (a *ncclAdapter) SendRecv(send, recv ncclbench.Buffer, n, to, from int) error {
	if err := a.lib.GroupStart(); err != nil {
		return err
	}
	var first error
	if err := a.comm.Send(uintptr(send), n, ncclrt.Float32, to, uintptr(a.stream)); err != nil {
		first = err
	}
	if err := a.comm.Recv(uintptr(recv), n, ncclrt.Float32, from, uintptr(a.stream)); err != nil && first == nil {
		first = err
	}
	if err := a.lib.GroupEnd(); err != nil && first == nil {
		first = err
	}
	return first
}
