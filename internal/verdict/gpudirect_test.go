package verdict

import (
	"strings"
	"testing"

	"github.com/rdmasuite/rdmasuite/reports"
	"github.com/rdmasuite/rdmasuite/thresholds"
	"github.com/rdmasuite/rdmasuite/workloads/bw"
	"github.com/rdmasuite/rdmasuite/workloads/probeout"
)

func gpuMem(gpu int, pci, nic string, cross bool) *bw.Memory {
	m := &bw.Memory{Kind: bw.MemoryCUDA, GPU: gpu, GPUName: "NVIDIA A100-SXM4-80GB", GPUPCI: pci, Selected: "nearest",
		Path: bw.PathDmabuf, Why: "peermem: not tried (dma-buf worked)", Topology: "PIX", NICPCI: nic, NUMANIC: 0, NUMAGPU: 0}
	if cross {
		m.Topology, m.CrossSocket, m.NUMAGPU = "SYS", true, 1
	}
	return m
}

// gdPair is a one-rail gpudirect pair whose sides measured gbps from GPU
// memory; edit changes the outputs.
func gdPair(t *testing.T, ops []string, gbps float64, edit func(cli, srv *bw.ProbeOutput)) BWInput {
	t.Helper()
	cli, srv := pairOut(t, ops, []int{k64, m1}, 1, gbps, func(cli, srv *bw.ProbeOutput) {
		cli.Rails[0].Memory = gpuMem(0, "0000:07:00.0", "0000:0c:00.0", false)
		srv.Rails[0].Memory = gpuMem(1, "0000:0f:00.0", "0000:12:00.0", false)
		if edit != nil {
			edit(cli, srv)
		}
	})
	in := bwInput(t, ops, []int{k64, m1}, cli, srv)
	in.Client.Command, in.Server.Command = "rdmaprobe bw client --mem cuda:auto", "rdmaprobe bw server --mem cuda:auto"
	return in
}

func onlyCheck(t *testing.T, res BWResult) reports.Check {
	t.Helper()
	if len(res.Checks) != 1 {
		t.Fatalf("want one check, got %s", statuses(res.Checks))
	}
	return res.Checks[0]
}

// A pod without a usable GPU: nothing was measured, a not-run with the
// probe's own message, under the gpudirect ids.
func TestGPUDirectNoGPUIsNotRun(t *testing.T) {
	msg := "no usable GPU in the pod: load libcuda.so.1: libcuda.so.1: cannot open shared object file"
	cli := envelope(t, bw.ProbeOutput{Role: "client"}, probeout.Errorf(probeout.KindNoGPU, "%s", msg))
	srv := envelope(t, bw.ProbeOutput{Role: "server"}, probeout.Errorf(probeout.KindPeer, "client failed"))
	res := GPUDirect(bwInput(t, []string{"write", "read"}, []int{m1}, cli, srv))
	if statuses(res.Checks) != "gpudirect/write{}=not-run gpudirect/read{}=not-run" {
		t.Fatal(statuses(res.Checks))
	}
	for _, c := range res.Checks {
		if !strings.Contains(c.Reason, msg) || !strings.Contains(c.Reason, "pod bw-c on node-2") {
			t.Errorf("%+v", c)
		}
	}
	// One rail without a GPU (cuda:N beyond the pod's GPUs): that rail.
	in := gdPair(t, []string{"write"}, 185, func(cli, srv *bw.ProbeOutput) {
		cli.Rails[0].Runs, cli.Rails[0].Memory = nil, nil
		cli.Rails[0].Error = probeout.Errorf(probeout.KindNoGPU, "GPU 3 requested, the pod sees 1")
	})
	if c := onlyCheck(t, GPUDirect(in)); c.Status != reports.NotRun || !strings.Contains(c.Reason, "GPU 3 requested") {
		t.Fatalf("%+v", c)
	}
}

// The floor is the SKU's gpuDirectWrite (A100: 0.9 × 200 = 180 Gb/s),
// not the host-memory write floor (180).
func TestGPUDirectJudgedAgainstTheGPUDirectFloor(t *testing.T) {
	res := GPUDirect(gdPair(t, []string{"write"}, 185, nil))
	c := onlyCheck(t, res)
	if c.ID != "gpudirect/write" || c.Status != reports.Pass || !strings.HasPrefix(c.Title, "GPUDirect RDMA write bandwidth, GPU memory on both sides,") ||
		c.Traits == nil || *c.Traits != (reports.Traits{Pair: true, Op: "write", HeatUnit: "Gb/s", Localize: true}) {
		t.Fatalf("%+v", c)
	}
	for _, l := range res.LinkChecks {
		if l.ID != "gpudirect/link" || !strings.HasPrefix(l.Title, "the GPUDirect rails' port counters") || l.Traits == nil || !l.Traits.Link {
			t.Errorf("link check %s %q %+v", l.ID, l.Title, l.Traits)
		}
	}
	if len(res.LinkChecks) == 0 {
		t.Error("no link check")
	}
	m := c.Measured[len(c.Measured)-1]
	if m.Threshold == nil || m.Threshold.Value != 180 || !strings.Contains(m.Threshold.Source, "check_ib_bw_gdr 180") {
		t.Fatalf("threshold %+v", m.Threshold)
	}
	ev := strings.Join(c.Evidence, "\n")
	for _, want := range []string{
		"node-2 client (pod bw-c) rail mlx5_0/1 memory: GPU 0 NVIDIA A100-SXM4-80GB (0000:07:00.0), chosen nearest; GPUDirect RDMA via dmabuf (peermem: not tried (dma-buf worked)); PIX to NIC 0000:0c:00.0",
		"node-1 server (pod bw-s) rail mlx5_0/1 memory: GPU 1 NVIDIA A100-SXM4-80GB (0000:0f:00.0)",
	} {
		if !strings.Contains(ev, want) {
			t.Errorf("evidence lacks %q:\n%s", want, ev)
		}
	}
	c = onlyCheck(t, GPUDirect(gdPair(t, []string{"write"}, 150, nil)))
	if c.Status != reports.Fail || c.Fix != FixSlow || !strings.Contains(c.Diagnosis, "threshold >= 180") {
		t.Fatalf("%+v", c)
	}
	// read has no floor of its own: the gpuDirectWrite floor, said so.
	res = GPUDirect(gdPair(t, []string{"write", "read"}, 185, nil))
	for _, c := range res.Checks {
		m := c.Measured[len(c.Measured)-1]
		if c.Status != reports.Pass || m.Threshold.Value != 180 {
			t.Errorf("%s: %+v %+v", c.ID, c, m.Threshold)
		}
		if c.ID == "gpudirect/read" && !strings.Contains(m.Threshold.Source, "no GPUDirect read floor") {
			t.Errorf("read threshold source %q", m.Threshold.Source)
		}
	}
}

func TestGPUDirectCrossSocketIsFlagged(t *testing.T) {
	cross := func(cli, srv *bw.ProbeOutput) { srv.Rails[0].Memory = gpuMem(1, "0000:8a:00.0", "0000:12:00.0", true) }
	c := onlyCheck(t, GPUDirect(gdPair(t, []string{"write"}, 185, cross)))
	want := "cross-socket pair: on node-1, GPU 1 (0000:8a:00.0) and NIC 0000:12:00.0 (rail mlx5_0/1) sit on different sockets (SYS, NUMA node 1 vs 0)"
	if c.Status != reports.Pass || !strings.Contains(c.Diagnosis, want) || !c.ShowEvidence {
		t.Fatalf("pass: %+v", c)
	}
	c = onlyCheck(t, GPUDirect(gdPair(t, []string{"write"}, 120, cross)))
	if c.Status != reports.Fail || !strings.Contains(c.Diagnosis, "threshold >= 180") || !strings.Contains(c.Diagnosis, want) || c.Fix != FixCrossSocket {
		t.Fatalf("fail: %+v", c)
	}
}

// A measurement that was not of GPU memory is never a GPUDirect pass.
func TestGPUDirectHostMemoryIsNotAPass(t *testing.T) {
	for name, edit := range map[string]func(cli, srv *bw.ProbeOutput){
		"no memory record": func(cli, srv *bw.ProbeOutput) { cli.Rails[0].Memory = nil },
		"host memory":      func(cli, srv *bw.ProbeOutput) { srv.Rails[0].Memory = &bw.Memory{Kind: bw.MemoryHost} },
	} {
		c := onlyCheck(t, GPUDirect(gdPair(t, []string{"write"}, 185, edit)))
		if c.Status != reports.Error || !strings.Contains(c.Reason, "not a GPUDirect measurement") {
			t.Errorf("%s: %+v", name, c)
		}
	}
}

func TestGPUDirectRegistrationFailureNamesTheFix(t *testing.T) {
	in := gdPair(t, []string{"write"}, 185, func(cli, srv *bw.ProbeOutput) {
		m := gpuMem(0, "0000:07:00.0", "0000:0c:00.0", false)
		m.Path, m.Why = "", "dma-buf: ibv_reg_dmabuf_mr(…): Operation not supported; peermem: ibv_reg_mr(…): Bad address (nvidia_peermem not loaded)"
		cli.Rails[0].Memory, cli.Rails[0].Runs = m, nil
		cli.Rails[0].Error = probeout.Errorf(probeout.KindGPUDirect, "GPUDirect RDMA: neither path registers GPU 0 memory")
	})
	c := onlyCheck(t, GPUDirect(in))
	if c.Status != reports.Fail || c.Fix != FixGPUDirect || !strings.Contains(c.Diagnosis, "nvidia_peermem not loaded") ||
		!strings.Contains(c.Fix, "Invalid argument") {
		t.Fatalf("%+v", c)
	}
	// The kind decides, not the memory record: a probe that failed before
	// recording the GPU (or an older one) still fails with the fix.
	in = gdPair(t, []string{"write"}, 185, func(cli, srv *bw.ProbeOutput) {
		cli.Rails[0].Memory, cli.Rails[0].Runs = nil, nil
		cli.Rails[0].Error = probeout.Errorf(probeout.KindGPUDirect, "GPUDirect RDMA: neither path registers GPU 0 memory: peer memory: Bad address")
	})
	c = onlyCheck(t, GPUDirect(in))
	if c.Status != reports.Fail || c.Fix != FixGPUDirect || !strings.Contains(c.Diagnosis, "peer memory: Bad address") {
		t.Fatalf("no memory record: %+v", c)
	}
}

// A side without a GPU cannot run the check, but when the other side's
// port on the same rail is down, that is a fault found, not a check that
// could not run: the rail fails naming the link, and the missing GPU is
// said beside it (a side that checks its port before its GPU reports the
// fault; one that stopped at its GPU first says nothing of the port).
func TestGPUDirectDownPeerRailFailsDespiteNoGPU(t *testing.T) {
	in := gdPair(t, []string{"write"}, 185, func(cli, srv *bw.ProbeOutput) {
		cli.Rails[0].Runs, cli.Rails[0].Memory = nil, nil
		cli.Rails[0].Error = probeout.Errorf(probeout.KindNoGPU, "no CUDA driver: libcuda.so.1 could not be loaded")
		srv.Rails[0].Runs, srv.Rails[0].Memory = nil, nil
		srv.Rails[0].Error = probeout.Errorf(probeout.KindLinkDown, "mlx5_0/1 is DOWN, not ACTIVE")
	})
	c := onlyCheck(t, GPUDirect(in))
	if c.Status != reports.Fail || c.Fix != FixLinkDown || !strings.Contains(c.Diagnosis, "on node-1, port mlx5_0/1: link down") ||
		!strings.Contains(c.Diagnosis, "no CUDA driver") {
		t.Fatalf("%s %q fix %q", c.Status, c.Diagnosis+c.Reason, c.Fix)
	}
	// The server's peer echo of the client's missing GPU is no fault.
	in = gdPair(t, []string{"write"}, 185, func(cli, srv *bw.ProbeOutput) {
		cli.Rails[0].Runs, cli.Rails[0].Memory = nil, nil
		cli.Rails[0].Error = probeout.Errorf(probeout.KindNoGPU, "no CUDA driver")
		srv.Rails[0].Runs = nil
		srv.Rails[0].Error = probeout.Errorf(probeout.KindPeer, "the client failed")
	})
	if c = onlyCheck(t, GPUDirect(in)); c.Status != reports.NotRun {
		t.Fatalf("peer echo: %s %q", c.Status, c.Diagnosis+c.Reason)
	}
}

// noGPUDirectSKU is a SKU of a site that does not judge GPUDirect, NCCL
// or the NFS stall: it leaves those floors out.
func noGPUDirectSKU(t *testing.T) *thresholds.SKU {
	t.Helper()
	set, err := thresholds.Parse("site.yaml", []byte(`schema: rdmasuite.io/thresholds/v1
skus:
  - name: SITE/HDR-200
    match: {gpuProduct: ["NVIDIA-A100-*"]}
    linkRateGbps: {value: 200, source: site}
    portsPerNode: {value: 1, source: site}
    write: {fractionOfLink: 0.9, source: site}
    read: {fractionOfLink: 0.9, source: site}
    minMemlockBytes: {value: 1048576, source: site}
`))
	if err != nil {
		t.Fatal(err)
	}
	return &set.SKUs[0]
}

// A SKU without gpuDirectWrite: a GPUDirect pair that measured is
// not-run naming the key, never a pass against no floor or an error.
func TestGPUDirectWithoutAFloorIsNotRun(t *testing.T) {
	in := gdPair(t, []string{"write"}, 185, nil)
	in.SKU = noGPUDirectSKU(t)
	c := onlyCheck(t, GPUDirect(in))
	if c.Status != reports.NotRun || !strings.Contains(c.Reason, "has no gpuDirectWrite") {
		t.Fatalf("%+v", c)
	}
}
