package verdict

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/rdmasuite/rdmasuite/reports"
	"github.com/rdmasuite/rdmasuite/thresholds"
	"github.com/rdmasuite/rdmasuite/workloads/bw"
	"github.com/rdmasuite/rdmasuite/workloads/mr"
	"github.com/rdmasuite/rdmasuite/workloads/podenv"
	"github.com/rdmasuite/rdmasuite/workloads/probeout"
	"github.com/rdmasuite/rdmasuite/workloads/verbs"
)

func out(t *testing.T, probe string, v any) string {
	t.Helper()
	var b bytes.Buffer
	if err := probeout.Write(&b, probe, v); err != nil {
		t.Fatal(err)
	}
	return "rdmaprobe bw server: waiting\n" + b.String()
}

func sku(t *testing.T, name string) *thresholds.SKU {
	s, err := thresholds.Load("")
	if err != nil {
		t.Fatal(err)
	}
	k, err := s.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func report(op bw.Op, rate float64, gbps ...float64) bw.Report {
	r := bw.Report{Params: bw.Params{Op: op}, Device: bw.Device{Name: "mlx5_0", Port: 1, RateGbps: rate}}
	sizes := []int{65536, 1 << 20}
	for i, g := range gbps {
		r.Results = append(r.Results, bw.SizeResult{Local: bw.Figures{Bytes: sizes[i], AvgGbps: g}})
	}
	return r
}

func input(t *testing.T, cli, srv string) BWInput {
	return BWInput{Variant: "shared-dev", Resource: "rdma/rdma_shared_device_a", Ops: []string{"write", "read"},
		Client: Side{Node: "node-2", Pod: "bw-c", Logs: cli}, Server: Side{Node: "node-1", Pod: "bw-s", Logs: srv},
		SKU: sku(t, "A100/HDR-200")}
}

func TestBandwidthPassAndFloor(t *testing.T) {
	cli := out(t, "bw", BWOutput{Runs: []bw.Report{report("write", 200, 170, 190), report("read", 200, 160, 175)}})
	checks := Bandwidth(input(t, cli, out(t, "bw", BWOutput{})))
	if len(checks) != 2 || checks[0].Status != reports.Pass || checks[1].Status != reports.Fail {
		t.Fatalf("%+v", checks)
	}
	w := checks[0].Measured
	if len(w) != 2 || w[1].Name != "write_1MiB_avg" || w[1].Threshold == nil || w[1].Threshold.Value != 180 || w[0].Threshold != nil {
		t.Fatalf("write measurements %+v", w)
	}
	if !strings.Contains(checks[1].Diagnosis, "read_1MiB_avg = 175 Gb/s, threshold >= 180") {
		t.Fatalf("read diagnosis %q", checks[1].Diagnosis)
	}
}

func TestBandwidthLinkTrainedDown(t *testing.T) {
	cli := out(t, "bw", BWOutput{Runs: []bw.Report{report("write", 100, 90, 96)}})
	in := input(t, cli, "")
	in.Ops = []string{"write"}
	c := Bandwidth(in)[0]
	if c.Status != reports.Fail || !strings.Contains(c.Diagnosis, "runs at 100 Gb/s, the SKU expects 200 Gb/s") {
		t.Fatalf("%+v", c)
	}
}

func TestBandwidthNoDeviceIsExactDiagnosis(t *testing.T) {
	// What the bed's pods print: the client fails first-hand, the server
	// hears about it from its peer.
	cli := out(t, "bw", BWOutput{Runs: []bw.Report{{}}, Error: "write: " + verbs.ErrNoDevice.Error()})
	srv := out(t, "bw", BWOutput{Runs: []bw.Report{{}}, Error: "peer 10.244.2.7:40000 failed: " + verbs.ErrNoDevice.Error()})
	for _, c := range Bandwidth(input(t, cli, srv)) {
		want := "node node-2 advertises rdma/rdma_shared_device_a but no RDMA device is visible in pod bw-c: device plugin / MOFED not ready"
		if c.Status != reports.Fail || c.Diagnosis != want || c.Fix != FixNoDevice {
			t.Fatalf("%s: %+v", c.ID, c)
		}
	}
}

func TestBandwidthMissingMeasurementFailsClosed(t *testing.T) {
	// write ran, the client died before read: read must fail, not pass.
	cli := out(t, "bw", BWOutput{Runs: []bw.Report{report("write", 200, 190, 195)}, Error: "read: connection reset"})
	checks := Bandwidth(input(t, cli, ""))
	if checks[0].Status != reports.Pass || checks[1].Status != reports.Fail || !strings.Contains(checks[1].Diagnosis, "missing measurement") {
		t.Fatalf("%+v", checks)
	}
}

func TestBandwidthPodErrorAndNoOutput(t *testing.T) {
	in := input(t, "", "")
	in.Server.PodErr = errors.New("Unschedulable: 0/2 nodes are available: Insufficient rdma/rdma_shared_device_a")
	if c := Bandwidth(in)[0]; c.Status != reports.Error || !strings.Contains(c.Reason, "Insufficient") {
		t.Fatalf("%+v", c)
	}
	if c := Bandwidth(input(t, "segfault", ""))[0]; c.Status != reports.Error {
		t.Fatalf("garbage output: %+v", c)
	}
}

func TestBandwidthHostdevNoNetdev(t *testing.T) {
	cli := out(t, "bw", BWOutput{Error: "write: no RDMA device behind netdev net1 (rdmamap: Link not found): is it an RDMA-capable interface"})
	in := input(t, cli, "")
	in.Variant, in.Network = "hostdev", "sriov-rdma"
	if c := Bandwidth(in)[0]; c.Status != reports.Fail || c.Fix != FixNoNetdev || !strings.Contains(c.Diagnosis, `"sriov-rdma"`) {
		t.Fatalf("%+v", c)
	}
}

func TestMemlockSeed002AndBed(t *testing.T) {
	low := mr.Probe(nil, "", nil, 1<<20, podenv.Limits{Soft: 64 << 10, Hard: 64 << 10}, false, 0)
	checks := Memlock("shared-dev", Side{Node: "node-1", Pod: "mr-1", Logs: out(t, "mr", low)}, sku(t, "A100/HDR-200"), nil)
	if checks[0].ID != "memlock/rlimit" || checks[0].Status != reports.Fail || !strings.Contains(checks[0].Fix, "base_runtime_spec") {
		t.Fatalf("rlimit %+v", checks[0])
	}
	if checks[1].Status != reports.NotRun || checks[1].Reason == "" {
		t.Fatalf("registration without device must be not-run with a reason: %+v", checks[1])
	}
	high := mr.Probe(nil, "", nil, 1<<20, podenv.Limits{Soft: 8 << 20, Hard: 8 << 20}, false, 0)
	checks = Memlock("shared-dev", Side{Node: "node-2", Pod: "mr-2", Logs: out(t, "mr", high)}, sku(t, "A100/HDR-200"), nil)
	if checks[0].Status != reports.Pass || checks[0].Measured[0].Value != 8<<20 {
		t.Fatalf("8 MiB %+v", checks[0])
	}
}
