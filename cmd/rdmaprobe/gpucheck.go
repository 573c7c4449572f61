package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"runtime"

	"github.com/rdmasuite/rdmasuite/workloads/cuda"
	"github.com/rdmasuite/rdmasuite/workloads/gpucheck"
	"github.com/rdmasuite/rdmasuite/workloads/gputopo"
	"github.com/rdmasuite/rdmasuite/workloads/nccl"
	"github.com/rdmasuite/rdmasuite/workloads/probeout"
	"github.com/rdmasuite/rdmasuite/workloads/units"
)

// runGPU is `rdmaprobe gpu`: the GPU path's proofs on a machine with a
// CUDA driver and no RDMA device (workloads/gpucheck), for
// hack/gpu-device-check.sh. One line per proof on stderr, the report on
// stdout; exit 3 when a proof failed, 1 when there is no GPU to prove on.
func runGPU(args []string) error {
	fs := flag.NewFlagSet("gpu", flag.ContinueOnError)
	size := fs.String("size", "64M", "device memory to allocate, check and export per GPU")
	sysRoot := fs.String("sysfs-root", "/", "root under which /sys is read for the PCI topology")
	ncclLog := fs.String("nccl-log", "", "only read this NCCL_DEBUG=INFO log (of rdmaprobe nccl) with the suite's parser: no CUDA proof runs")
	ncclVersion := fs.String("nccl-version", "", "with --nccl-log: the NCCL version the log must name")
	if err := fs.Parse(args); err != nil {
		return err
	}
	n, err := units.ParseSizes(*size)
	if err != nil || len(n) != 1 || n[0] <= 0 || n[0]%os.Getpagesize() != 0 {
		return probeout.Errorf(probeout.KindUsage, "--size %q: want one size that is a multiple of the %d-byte page, e.g. 64M", *size, os.Getpagesize())
	}
	var rep gpucheck.Report
	if *ncclLog != "" {
		// The CUDA proofs ran before the NCCL worlds that wrote the log.
		rep = gpucheck.Report{GPUs: []gpucheck.GPU{}, Proofs: []gpucheck.Proof{ncclLogProof(*ncclLog, *ncclVersion)}}
	} else {
		cfg := gpucheck.Config{Bytes: n[0]}
		if s, err := gputopo.New(*sysRoot); err != nil {
			cfg.PCIErr = err
		} else {
			cfg.PCIGPUs, cfg.PCIErr = s.GPUs()
		}
		// A CUDA context is current per OS thread.
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		rep, err = gpucheck.Run(loadCUDA, cfg)
	}
	for _, p := range rep.Proofs {
		fmt.Fprintf(os.Stderr, "%-8s %s: %s\n", p.Status, p.Name, p.Detail)
	}
	var perr *probeout.Error
	switch {
	case errors.Is(err, gpucheck.ErrNoGPU):
		perr = probeout.Errorf(probeout.KindNoGPU, "%v", err)
	case err != nil:
		perr = probeout.Errorf(probeout.KindInternal, "%v", err)
	}
	if werr := probeout.WriteError(os.Stdout, "gpu", rep, perr); werr != nil {
		return werr
	}
	switch {
	case perr != nil:
		return perr
	case rep.Failed():
		return errCheckFailed
	}
	return nil
}

func ncclLogProof(path, version string) gpucheck.Proof {
	f, err := os.Open(path)
	if err != nil {
		return gpucheck.Proof{Name: "nccl-log", Status: gpucheck.Fail, Detail: err.Error()}
	}
	defer f.Close()
	facts, err := nccl.ParseNCCLLog(f)
	if err != nil {
		return gpucheck.Proof{Name: "nccl-log", Status: gpucheck.Fail, Detail: fmt.Sprintf("reading %s: %v", path, err)}
	}
	return gpucheck.NCCLLogProof(facts, version)
}

// loadCUDA loads and initialises libcuda through the probe's own loader.
func loadCUDA() (gpucheck.Driver, error) {
	d, err := cuda.Load()
	if err != nil {
		return nil, err
	}
	if err := d.Init(); err != nil {
		return nil, err
	}
	return cudaDriver{d}, nil
}

// cudaDriver adapts cuda.Driver to gpucheck.Driver.
type cudaDriver struct{ *cuda.Driver }

func (d cudaDriver) Open(dev cuda.Device) (gpucheck.Context, error) { return d.Activate(dev) }
