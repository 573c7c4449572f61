package verdict

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/rdmasuite/rdmasuite/reports"
	"github.com/rdmasuite/rdmasuite/thresholds"
	"github.com/rdmasuite/rdmasuite/workloads/nccl"
	"github.com/rdmasuite/rdmasuite/workloads/ncclbench"
	"github.com/rdmasuite/rdmasuite/workloads/ncclrun"
	"github.com/rdmasuite/rdmasuite/workloads/probeout"
)

var allColls = []nccl.Collective{nccl.AllReduce, nccl.AllGather, nccl.ReduceScatter, nccl.AllToAll, nccl.SendRecv}

// sweep is min..max by ×2, as the runner computes it.
func sweep(lo, hi int64) []int64 {
	var out []int64
	for s := lo; s <= hi; s *= 2 {
		out = append(out, s)
	}
	return out
}

// benchResult is a clean combined result: every collective, every size,
// both variants, busbw(coll, size) GB/s, #wrong 0 (N/A where nccl-tests
// prints it).
func benchResult(t *testing.T, world int, colls []nccl.Collective, sizes []int64, busbw func(nccl.Collective, int64) float64) ncclbench.Result {
	t.Helper()
	res := ncclbench.Result{World: world}
	for _, c := range colls {
		cr := ncclbench.CollectiveResult{Collective: c}
		for _, s := range sizes {
			sh, err := ncclbench.ShapeOf(c, s, world)
			if err != nil {
				t.Fatal(err)
			}
			bb := busbw(c, s)
			inPlaceNA := c == nccl.AllToAll || c == nccl.SendRecv
			cr.Rows = append(cr.Rows, ncclbench.Row{Size: sh.Size, Count: sh.Count, Type: "float", RedOp: ncclbench.RedOp(c),
				OutOfPlace: &ncclbench.Half{TimeUS: 10, AlgBW: bb, BusBW: bb},
				InPlace:    &ncclbench.Half{TimeUS: 10, AlgBW: bb, BusBW: bb, NA: inPlaceNA}})
			cr.Measured += 2
		}
		res.Collectives = append(res.Collectives, cr)
	}
	return res
}

// rankLog is what NCCL_DEBUG=INFO prints on one rank (host h), over IB
// with GPUDirect RDMA, or over sockets with no RDMA device.
func rankLog(h string, rank int, ib bool) string {
	p := fmt.Sprintf("%s:100:100 [0] NCCL INFO ", h)
	if !ib {
		return "NCCL version 2.21.5+cuda12.4\n" + p + "NET/IB : No device found.\n" + p + "NET/Socket : Using [0]eth0:10.0.0.1<0>\n" +
			p + "Using network Socket\n" + p + fmt.Sprintf("Channel 00/0 : %d[0] -> %d[0] [send] via NET/Socket/0\n", rank, 1-rank) +
			p + fmt.Sprintf("comm 0x1 rank %d nranks 2 cudaDev 0 nvmlDev 0 busId 1b000 commId 0x2 - Init COMPLETE\n", rank)
	}
	return "NCCL version 2.21.5+cuda12.4\n" + p + "NET/IB : Using [0]mlx5_0:1/IB ; OOB eth0:10.0.0.1<0>\n" + p + "Using network IB\n" +
		p + fmt.Sprintf("Channel 00/0 : %d[0] -> %d[0] [send] via NET/IB/0/GDRDMA\n", rank, 1-rank) +
		p + fmt.Sprintf("comm 0x1 rank %d nranks 2 cudaDev 0 nvmlDev 0 busId 1b000 commId 0x2 - Init COMPLETE\n", rank)
}

func ncclEnvelope(t *testing.T, out ncclrun.Output, perr *probeout.Error) string {
	t.Helper()
	var b bytes.Buffer
	if err := probeout.WriteError(&b, ncclrun.ProbeName, out, perr); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func facts(nodes []string) []ncclrun.Facts {
	var fs []ncclrun.Facts
	for i, n := range nodes {
		fs = append(fs, ncclrun.Facts{Rank: i, Pod: fmt.Sprintf("w-%d-x", i), Node: n, CUDADriver: "12.4", NCCL: "2.21.5",
			GPUs: []ncclrun.GPU{{Ordinal: 0, Name: "NVIDIA H100 80GB HBM3", PCIBusID: "0000:1b:00.0"}}})
	}
	return fs
}

var ncclFloor = thresholds.Bound{Op: ">=", Value: 40, Source: "H100/NDR-400: 0.8 × 1 of 8 port(s) × 400 Gb/s / 8"}

// world is a clean 2-rank world on node-a, node-b measuring busbw 45 GB/s
// at every size, over IB; edit it per test.
type worldCase struct {
	in   NCCLInput
	out  ncclrun.Output
	perr *probeout.Error
	res  ncclbench.Result
	ib   bool
}

func cleanWorld(t *testing.T) *worldCase {
	nodes := []string{"node-a", "node-b"}
	sizes := sweep(8, 128<<20)
	w := &worldCase{ib: true,
		in: NCCLInput{Variant: "shared-dev", Resource: "rdma/rdma_shared_device_a", Nodes: nodes, Collectives: allColls, Sizes: sizes,
			Command: "rdmaprobe nccl --world 2 --token <redacted>", Env: map[string]string{"NCCL_ALGO": "Ring"}, Floor: ncclFloor},
		out: ncclrun.Output{World: 2, Rank: 0, Ranks: facts(nodes), Joined: 2},
		res: benchResult(t, 2, allColls, sizes, func(nccl.Collective, int64) float64 { return 45 }),
	}
	return w
}

func (w *worldCase) judge(t *testing.T) map[string]reports.Check {
	t.Helper()
	if w.out.Result == nil && w.res.Collectives != nil {
		raw, err := json.Marshal(w.res)
		if err != nil {
			t.Fatal(err)
		}
		w.out.Result = raw
	}
	if w.in.Ranks == nil {
		for i, n := range w.in.Nodes {
			rk := NCCLRank{Index: i, Node: n, Pod: fmt.Sprintf("w-%d-x", i), Phase: "Succeeded", Logs: rankLog(n, i, w.ib)}
			if i == 0 {
				rk.Logs += ncclEnvelope(t, w.out, w.perr)
			}
			w.in.Ranks = append(w.in.Ranks, rk)
		}
	}
	cs := NCCL(w.in)
	if len(cs) != len(w.in.Collectives)+1 {
		t.Fatalf("%d checks for %d collectives + transport: %+v", len(cs), len(w.in.Collectives), cs)
	}
	m := map[string]reports.Check{}
	for _, c := range cs {
		if strings.Join(c.Nodes, ",") != strings.Join(w.in.Nodes, ",") || c.Variant != w.in.Variant {
			t.Errorf("%s: nodes %v variant %q", c.ID, c.Nodes, c.Variant)
		}
		if c.Status == reports.Fail && (c.Diagnosis == "" || c.Fix == "") {
			t.Errorf("%s fails without diagnosis and fix: %+v", c.ID, c)
		}
		if (c.Status == reports.Error || c.Status == reports.NotRun) && c.Reason == "" {
			t.Errorf("%s is %s without a reason", c.ID, c.Status)
		}
		// Every world's check is localisation evidence; a collective's
		// op is its name (the metrics' op label).
		if want := (reports.Traits{Localize: true, Op: strings.TrimPrefix(c.ID, NCCLPrefix)}); c.ID == NCCLTransportID && (c.Traits == nil || *c.Traits != reports.Traits{Localize: true}) ||
			c.ID != NCCLTransportID && (c.Traits == nil || *c.Traits != want) {
			t.Errorf("%s traits %+v", c.ID, c.Traits)
		}
		m[c.ID] = c
	}
	return m
}

// The no-GPU bed: rank 0 called the world off because no pod has a CUDA
// driver. Every check of the world is not-run with the probe's message,
// and the evidence says who joined.
func TestNCCLNoGPUAbortIsNotRun(t *testing.T) {
	w := cleanWorld(t)
	w.res = ncclbench.Result{}
	msg := "rank 0 (pod w-0-x on node node-a): no CUDA driver: libcuda.so.1: cannot open shared object file; rank 1 (pod w-1-x on node node-b): no CUDA driver: libcuda.so.1: cannot open shared object file"
	for i := range w.out.Ranks {
		w.out.Ranks[i].CUDADriver, w.out.Ranks[i].NCCL, w.out.Ranks[i].GPUs = "", "", nil
		w.out.Ranks[i].NotReady, w.out.Ranks[i].NotReadyKind = "no CUDA driver: libcuda.so.1: cannot open shared object file", probeout.KindNoGPU
	}
	w.out.Abort = msg
	w.perr = probeout.Errorf(probeout.KindNoGPU, "%s", msg)
	w.in.Ranks = []NCCLRank{
		{Index: 0, Node: "node-a", Pod: "w-0-x", Phase: "Failed", Exit: 3, Logs: ncclEnvelope(t, w.out, w.perr)},
		{Index: 1, Node: "node-b", Pod: "w-1-x", Phase: "Failed", Exit: 3, Logs: "rdmaprobe nccl: called off by rank 0\n"},
	}
	for id, c := range w.judge(t) {
		if c.Status != reports.NotRun || c.Reason != msg {
			t.Errorf("%s: want not-run with the probe's message, got %s %q", id, c.Status, c.Reason)
		}
		if !strings.HasPrefix(c.Evidence[0], "ranks joined 2/2: rank 0 → pod w-0-x → node node-a: not ready (no-gpu): no CUDA driver") {
			t.Errorf("%s: evidence %q", id, c.Evidence[0])
		}
	}
}

// Defect guard: a world whose rank 0 printed nothing (crashed, never
// started) is an error naming the world's state, never a pass.
func TestNCCLMissingOutputIsNeverAPass(t *testing.T) {
	w := cleanWorld(t)
	w.in.RunErr = errors.New("world nccl-x (2 ranks on node-a, node-b): probe pod did not finish in time: rank 1 (w-1-x on node-b): Pending — PodScheduled=Unschedulable")
	w.in.Ranks = []NCCLRank{{Index: 0, Node: "node-a", Pod: "w-0-x", Phase: "Failed", Exit: 139, Logs: "Segmentation fault (core dumped)\n"},
		{Index: 1, Node: "", Pod: "w-1-x", Phase: "Pending", State: "PodScheduled=Unschedulable"}}
	for id, c := range w.judge(t) {
		if c.Status != reports.Error {
			t.Errorf("%s: want error, got %s", id, c.Status)
		}
		for _, want := range []string{"rank 0 (pod w-0-x on node-a, exit 139) printed no nccl result", "Unschedulable"} {
			if !strings.Contains(c.Reason, want) {
				t.Errorf("%s: reason %q lacks %q", id, c.Reason, want)
			}
		}
		if ev := strings.Join(c.Evidence, "\n"); !strings.Contains(ev, "Segmentation fault") {
			t.Errorf("%s: evidence lacks rank 0's log tail: %s", id, ev)
		}
	}
	// Without a jobrun error the ranks' states are the reason.
	w = cleanWorld(t)
	w.in.Ranks = []NCCLRank{{Index: 0, Node: "node-a", Pod: "w-0-x", Phase: "Succeeded", Logs: ""},
		{Index: 1, Node: "node-b", Pod: "w-1-x", Phase: "Succeeded"}}
	if c := w.judge(t)["nccl/all_reduce"]; c.Status != reports.Error || !strings.Contains(c.Reason, "rank 1 (pod w-1-x on node-b): Succeeded") {
		t.Fatalf("%+v", c)
	}
	// A rank that failed says why in its own envelope: that message is in
	// the reason (CI of 00fd87d showed only "container probe exited 1").
	w = cleanWorld(t)
	w.in.Ranks = []NCCLRank{{Index: 0, Node: "node-a", Pod: "w-0-x", Phase: "Running", State: "its pod was deleted while phase Running"},
		{Index: 1, Node: "node-b", Pod: "w-1-x", Phase: "Failed", Exit: 1,
			Logs: ncclEnvelope(t, ncclrun.Output{World: 2, Rank: 1}, probeout.Errorf(probeout.KindTimeout, "ncclboot: rank 1 got no decision from rank 0"))}}
	if c := w.judge(t)["nccl/all_reduce"]; c.Status != reports.Error ||
		!strings.Contains(c.Reason, "rank 1 (pod w-1-x on node-b): Failed, exit 1, said (timeout): ncclboot: rank 1 got no decision from rank 0") {
		t.Fatalf("%+v", c)
	}
	// Rank 0's pod never ran (run N: stuck ContainerCreating): the reason
	// gives its phase, not an "exit 0" that no container returned.
	w = cleanWorld(t)
	w.in.RunErr = errors.New("probe pod did not finish in time: not every rank started within 2m0s")
	w.in.Ranks = []NCCLRank{{Index: 0, Node: "node-a", Pod: "w-0-x", Phase: "Pending", State: "container probe waiting: ContainerCreating"},
		{Index: 1, Node: "node-b", Pod: "w-1-x", Phase: "Pending", State: "container probe waiting: ContainerCreating"}}
	if c := w.judge(t)["nccl/all_reduce"]; c.Status != reports.Error || strings.Contains(c.Reason, "exit 0") ||
		!strings.Contains(c.Reason, "rank 0 (pod w-0-x on node-a, Pending) printed no nccl result: rank 0 never ran") ||
		!strings.Contains(strings.Join(c.Evidence, "\n"), "rank 1 (pod w-1-x on node-b): Pending — container probe waiting") {
		t.Fatalf("%+v", c)
	}
	// Rank 0 never got a pod.
	w = cleanWorld(t)
	w.in.Ranks = []NCCLRank{{Index: 1, Node: "node-b", Pod: "w-1-x", Phase: "Failed", Exit: 1}}
	if c := w.judge(t)["nccl/sendrecv"]; c.Status != reports.Error || !strings.Contains(c.Reason, "rank 0 never got a pod") {
		t.Fatalf("%+v", c)
	}
	// Rank 0 was pending when the Job controller deleted it: its last
	// state (the scheduler's reason) is the reason, never a pass.
	w = cleanWorld(t)
	w.in.Ranks = []NCCLRank{{Index: 0, Pod: "w-0-y", Phase: "Pending",
		State: "its pod was deleted while phase Pending; PodScheduled=Unschedulable: 0/2 nodes are available: 2 Insufficient nvidia.com/gpu."},
		{Index: 1, Node: "node-b", Pod: "w-1-x", Phase: "Failed", Exit: 1}}
	for id, c := range w.judge(t) {
		if c.Status == reports.Pass || !strings.Contains(c.Reason, "Insufficient nvidia.com/gpu") {
			t.Errorf("%s: %s %q", id, c.Status, c.Reason)
		}
	}
}

func TestNCCLCleanWorldPasses(t *testing.T) {
	w := cleanWorld(t)
	got := w.judge(t)
	for id, c := range got {
		if c.Status != reports.Pass {
			t.Errorf("%s: %s %s%s", id, c.Status, c.Diagnosis, c.Reason)
		}
	}
	ar := got["nccl/all_reduce"]
	if len(ar.Measured) != len(w.in.Sizes) {
		t.Fatalf("want one busbw per size, got %d: %+v", len(ar.Measured), ar.Measured)
	}
	last := ar.Measured[len(ar.Measured)-1]
	if last.Name != "busbw 128MiB" || last.Unit != "GB/s" || last.Value != 45 || last.Threshold == nil || last.Threshold.Value != 40 {
		t.Fatalf("judged measurement %+v", last)
	}
	if ar.Measured[0].Name != "busbw 8B" || ar.Measured[0].Threshold != nil {
		t.Fatalf("first measurement %+v", ar.Measured[0])
	}
	if ev := strings.Join(ar.Evidence, "\n"); !strings.Contains(ev, "rank 1 → pod w-1-x → node node-b: GPU 0 NVIDIA H100 80GB HBM3 (0000:1b:00.0); CUDA driver 12.4, NCCL 2.21.5") ||
		!strings.Contains(ev, "ranks joined 2/2") || !strings.Contains(ev, "NCCL_ALGO=Ring rdmaprobe nccl") {
		t.Fatalf("evidence: %s", ev)
	}
	if c := got["nccl/all_gather"]; len(c.Measured) != len(w.in.Sizes) || c.Measured[len(c.Measured)-1].Threshold != nil {
		t.Fatalf("all_gather is recorded, not judged against the all_reduce floor: %+v", c.Measured)
	}
}

func TestNCCLAllReduceBelowTheFloorFails(t *testing.T) {
	w := cleanWorld(t)
	w.res = benchResult(t, 2, allColls, w.in.Sizes, func(c nccl.Collective, s int64) float64 {
		if c == nccl.AllReduce && s == 128<<20 {
			return 12.5
		}
		return 45
	})
	got := w.judge(t)
	c := got["nccl/all_reduce"]
	if c.Status != reports.Fail || !strings.Contains(c.Diagnosis, "all_reduce bus bandwidth 12.5 GB/s at 128MiB (out-of-place), floor 40 GB/s") ||
		!strings.Contains(c.Diagnosis, ncclFloor.Source) || c.Fix != FixNCCLSlow {
		t.Fatalf("%+v", c)
	}
	if m := c.Measured[len(c.Measured)-1]; m.Value != 12.5 || m.Threshold == nil {
		t.Fatalf("the judged value is recorded with its threshold: %+v", m)
	}
	if got["nccl/all_gather"].Status != reports.Pass {
		t.Fatal("the floor is all_reduce's only")
	}
	// No SKU: all_reduce cannot be judged, an error; the others still are.
	w = cleanWorld(t)
	w.in.FloorErr = errors.New("node node-a has no nvidia.com/gpu.product label")
	got = w.judge(t)
	if c := got["nccl/all_reduce"]; c.Status != reports.Error || !strings.Contains(c.Reason, "no nvidia.com/gpu.product label") {
		t.Fatalf("%+v", c)
	}
	if got["nccl/alltoall"].Status != reports.Pass {
		t.Fatal("alltoall needs no floor")
	}
	// A SKU that leaves the NCCL floor out: all_reduce is measured and
	// not-run naming the key, never a pass against no floor.
	w = cleanWorld(t)
	w.in.FloorErr = noGPUDirectSKU(t).Given("ncclAllReduceBusBw")
	got = w.judge(t)
	if c := got["nccl/all_reduce"]; c.Status != reports.NotRun || !strings.Contains(c.Reason, "has no ncclAllReduceBusBw") || len(c.Measured) == 0 ||
		c.Measured[len(c.Measured)-1].Threshold != nil {
		t.Fatalf("%+v", c)
	}
}

func TestNCCLWrongDataFails(t *testing.T) {
	w := cleanWorld(t)
	cr := &w.res.Collectives[2] // reduce_scatter
	cr.Rows[20].InPlace.Wrong = 7
	cr.OutOfBounds = 1
	c := w.judge(t)["nccl/reduce_scatter"]
	if c.Status != reports.Fail || !strings.Contains(c.Diagnosis, "#wrong > 0") || !strings.Contains(c.Diagnosis, "8MiB: 7") || c.Fix != FixNCCLWrong {
		t.Fatalf("%+v", c)
	}
	// An unchecked variant that should have been checked is not a pass.
	w = cleanWorld(t)
	w.res.Collectives[0].Rows[3].OutOfPlace.NA = true
	if c := w.judge(t)["nccl/all_reduce"]; c.Status != reports.Error || !strings.Contains(c.Reason, "64B out-of-place") {
		t.Fatalf("%+v", c)
	}
	// alltoall's in-place N/A is nccl-tests' own: a pass.
	if c := cleanWorld(t).judge(t)["nccl/alltoall"]; c.Status != reports.Pass {
		t.Fatalf("%+v", c)
	}
}

// Every requested collective and size appears, or the check says which
// are missing.
func TestNCCLMissingSizesAndCollectivesAreNamed(t *testing.T) {
	w := cleanWorld(t)
	ag := &w.res.Collectives[1]
	ag.Rows = ag.Rows[:len(ag.Rows)-2]                                                                  // stopped before 64MiB
	w.res.Collectives[0].Rows = append(w.res.Collectives[0].Rows[:5], w.res.Collectives[0].Rows[6:]...) // 256B missing
	w.res.Collectives[3].Rows[24].InPlace = nil                                                         // alltoall 128MiB in-place not measured
	w.res.Collectives = w.res.Collectives[:4]                                                           // no sendrecv at all
	got := w.judge(t)
	for id, want := range map[string]string{
		"nccl/all_gather":     "requested size(s) not measured: 64MiB, 128MiB",
		"nccl/all_reduce":     "requested size(s) not measured: 256B",
		"nccl/alltoall":       "128MiB (in-place)",
		"nccl/sendrecv":       "the result has no sendrecv",
		"nccl/transport":      "",
		"nccl/reduce_scatter": "",
	} {
		c := got[id]
		if want == "" {
			if c.Status != reports.Pass {
				t.Errorf("%s: %+v", id, c)
			}
			continue
		}
		if c.Status != reports.Fail || !strings.Contains(c.Diagnosis, want) {
			t.Errorf("%s: want a fail naming %q, got %s %q", id, want, c.Status, c.Diagnosis)
		}
	}
	if m := got["nccl/all_gather"].Measured; len(m) != len(w.in.Sizes)-2 {
		t.Errorf("what was measured is still recorded: %d", len(m))
	}
}

// A rank that failed after the rendezvous: what was measured before is
// judged, the collective it failed in fails with its error.
func TestNCCLRankFailureMidRun(t *testing.T) {
	w := cleanWorld(t)
	w.res.Collectives = w.res.Collectives[:3]
	w.res.Collectives[2].Rows = w.res.Collectives[2].Rows[:10]
	w.res.Collectives[2].Errors = []string{"rank 1: ncclReduceScatter: remote process exited or there was a network error"}
	raw, _ := json.Marshal(w.res)
	w.out.Result = raw
	w.out.Errors = map[int]string{1: "ncclReduceScatter: remote process exited or there was a network error"}
	w.perr = probeout.Errorf(probeout.KindInternal, "rank 1: ncclReduceScatter: remote process exited or there was a network error")
	w.in.Ranks = nil
	got := w.judge(t)
	if c := got["nccl/all_reduce"]; c.Status != reports.Pass {
		t.Errorf("all_reduce was fully measured before the failure: %+v", c)
	}
	c := got["nccl/reduce_scatter"]
	if c.Status != reports.Fail || !strings.Contains(c.Diagnosis, "network error") || !strings.Contains(c.Diagnosis, "not measured: 8KiB") {
		t.Errorf("%+v", c)
	}
	if c := got["nccl/alltoall"]; c.Status != reports.Fail || !strings.Contains(c.Diagnosis, "no alltoall") {
		t.Errorf("%+v", c)
	}
}

func TestNCCLTransport(t *testing.T) {
	w := cleanWorld(t)
	w.ib = false
	got := w.judge(t)
	c := got["nccl/transport"]
	if c.Status != reports.Fail || !strings.Contains(c.Diagnosis, "no-rdma-device") || !strings.Contains(c.Diagnosis, "rank 1 on node-b") || c.Fix != FixNoDevice {
		t.Fatalf("socket fallback: %+v", c)
	}
	// No NCCL line at all although the world measured: the transport
	// cannot be vouched for, an error (an operator cannot allow it away).
	w = cleanWorld(t)
	w.in.Ranks = []NCCLRank{{Index: 0, Node: "node-a", Pod: "w-0-x", Phase: "Succeeded", Logs: ncclEnvelope(t, w.out, nil)},
		{Index: 1, Node: "node-b", Pod: "w-1-x", Phase: "Succeeded"}}
	raw, _ := json.Marshal(w.res)
	w.in.Ranks[0].Logs = ncclEnvelope(t, ncclrun.Output{World: 2, Ranks: w.out.Ranks, Joined: 2, Result: raw}, nil)
	if c := w.judge(t)["nccl/transport"]; c.Status != reports.Error || !strings.Contains(c.Reason, "cannot tell") {
		t.Fatalf("no log: %+v", c)
	}
}

func TestNCCLRanksNeverJoinedIsAnError(t *testing.T) {
	w := cleanWorld(t)
	w.res = ncclbench.Result{}
	w.out = ncclrun.Output{World: 2, Ranks: facts([]string{"node-a"}), Joined: 1}
	w.perr = probeout.Errorf(probeout.KindTimeout, "rendezvous: 1 of 2 ranks joined after 5m0s")
	w.in.Ranks = []NCCLRank{{Index: 0, Node: "node-a", Pod: "w-0-x", Phase: "Failed", Exit: 1, Logs: ncclEnvelope(t, w.out, w.perr)},
		{Index: 1, Node: "node-b", Pod: "w-1-x", Phase: "Failed", Exit: 1, Logs: "dial tcp: lookup w-0.w: no such host\n"}}
	for id, c := range w.judge(t) {
		if c.Status != reports.Error || !strings.Contains(c.Reason, "only 1 of 2 ranks joined") {
			t.Errorf("%s: %s %q", id, c.Status, c.Reason)
		}
	}
}

func TestNCCLNonZeroExitDemotesAPass(t *testing.T) {
	w := cleanWorld(t)
	w.judge(t) // builds the ranks
	w.in.Ranks[1].Exit, w.in.Ranks[1].Phase = 1, "Failed"
	for id, c := range w.judge(t) {
		if c.Status != reports.Error || !strings.Contains(c.Reason, "rank 1 (pod w-1-x on node-b) ended Failed with exit 1") {
			t.Errorf("%s: %s %q", id, c.Status, c.Reason)
		}
	}
}

func TestNCCLAbortForAnotherReasonFails(t *testing.T) {
	w := cleanWorld(t)
	w.res = ncclbench.Result{}
	w.out.Ranks[1].NCCL = "2.18.1"
	w.out.Abort = "the ranks load different NCCL versions (2.18.1 on ranks [1], 2.21.5 on ranks [0]): NCCL needs one version on every rank; use one image for all ranks"
	w.perr = probeout.Errorf(probeout.KindInternal, "%s", w.out.Abort)
	got := w.judge(t)
	if c := got["nccl/all_reduce"]; c.Status != reports.Fail || !strings.Contains(c.Diagnosis, "different NCCL versions") {
		t.Fatalf("%+v", c)
	}
	if c := got["nccl/transport"]; c.Status != reports.NotRun {
		t.Fatalf("%+v", c)
	}
}
