package verdict

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/rdmasuite/rdmasuite/reports"
	"github.com/rdmasuite/rdmasuite/workloads/bw"
	"github.com/rdmasuite/rdmasuite/workloads/probeout"
)

const (
	k64 = 64 << 10
	m1  = 1 << 20
)

func rail(i int, dev string, rate float64) bw.Rail {
	return bw.Rail{Index: i, Device: dev, Port: 1, State: "ACTIVE", RateGbps: rate}
}

// run is one op's report holding the given sizes' averages, each a
// consistent set of figures (1000 operations, the elapsed time that gives
// the average) as the probe's Compute writes them.
func run(op string, sizes []int, gbps ...float64) bw.Report {
	r := bw.Report{Params: bw.Params{Op: bw.Op(op), Sizes: sizes}}
	for i, g := range gbps {
		f := bw.Figures{Bytes: sizes[i], Iterations: 1000}
		setGbps(&f, g)
		r.Results = append(r.Results, bw.SizeResult{Local: f})
	}
	return r
}

// setGbps gives f the average gbps, keeping its operation count: the
// elapsed time and message rate follow (perftest's arithmetic). 0 leaves a
// figure that measured nothing (no time, no rate).
func setGbps(f *bw.Figures, gbps float64) {
	f.AvgGbps, f.ElapsedSec, f.MsgRateMpps = gbps, 0, 0
	if gbps > 0 {
		f.ElapsedSec = float64(f.Bytes) * float64(f.Iterations) * 8 / (gbps * 1e9)
		f.MsgRateMpps = float64(f.Iterations) / f.ElapsedSec / 1e6
	}
}

// setMsgRate gives f n operations at mpps; the elapsed time and average
// bandwidth follow.
func setMsgRate(f *bw.Figures, n int, mpps float64) {
	f.Iterations, f.MsgRateMpps = n, mpps
	f.ElapsedSec = float64(n) / (mpps * 1e6)
	f.AvgGbps = float64(f.Bytes) * float64(n) * 8 / f.ElapsedSec / 1e9
}

func envelope(t *testing.T, o bw.ProbeOutput, perr *probeout.Error) string {
	t.Helper()
	var b bytes.Buffer
	if err := probeout.WriteError(&b, bw.ProbeName, o, perr); err != nil {
		t.Fatal(err)
	}
	return "rdmaprobe bw: starting\n" + b.String()
}

// pairOut builds client and server outputs for rails rails per side, every
// rail measuring every op at every size with value gbps unless changed by
// edit (which sees the client's rail results).
func pairOut(t *testing.T, ops []string, sizes []int, rails int, gbps float64, edit func(cli, srv *bw.ProbeOutput)) (string, string) {
	t.Helper()
	cli := bw.ProbeOutput{Role: "client", Requested: bw.Requested{Sizes: sizes, RailMode: bw.RailsSame}}
	srv := bw.ProbeOutput{Role: "server"}
	for i := 0; i < rails; i++ {
		l, p := rail(i, fmt.Sprintf("mlx5_%d", i), 200), rail(i, fmt.Sprintf("mlx5_%d", i), 200)
		cli.Found, srv.Found = append(cli.Found, l), append(srv.Found, p)
		rr := bw.RailResult{Local: l, Peer: &p}
		for _, op := range ops {
			vals := make([]float64, len(sizes))
			for j := range vals {
				vals[j] = gbps
			}
			rr.Runs = append(rr.Runs, run(op, sizes, vals...))
		}
		cli.Rails = append(cli.Rails, rr)
		srv.Rails = append(srv.Rails, bw.RailResult{Local: p, Peer: &l})
	}
	if edit != nil {
		edit(&cli, &srv)
	}
	return envelope(t, cli, nil), envelope(t, srv, nil)
}

func bwInput(t *testing.T, ops []string, sizes []int, cli, srv string) BWInput {
	return BWInput{Variant: "shared-dev", Resource: "rdma/rdma_shared_device_a", Ops: ops, Sizes: sizes, RailMode: bw.RailsSame,
		Client: Side{Node: "node-2", Pod: "bw-c", Logs: cli}, Server: Side{Node: "node-1", Pod: "bw-s", Logs: srv},
		SKU: sku(t, "A100/HDR-200")}
}

func statuses(cs []reports.Check) string {
	var s []string
	for _, c := range cs {
		s = append(s, fmt.Sprintf("%s{%s}=%s", c.ID, c.Rail, c.Status))
	}
	return strings.Join(s, " ")
}

// The contract over ops × sizes × client error × exit code × missing rail:
// one check per (rail, op), pass only when everything requested was
// measured, the largest requested size meets the floor, and nothing failed.
func TestBandwidthContractTable(t *testing.T) {
	for _, ops := range [][]string{{"write"}, {"write", "read"}} {
		for _, sizes := range [][]int{{k64}, {k64, m1}, {m1, k64}} {
			for _, tc := range []struct {
				name  string
				edit  func(cli, srv *bw.ProbeOutput)
				exit  int32
				want  reports.Status // for the rail the edit touches (rail 0), every op
				other reports.Status // rail 1
			}{
				{name: "all measured", want: reports.Pass, other: reports.Pass},
				{name: "client error on rail 0 after measuring everything", want: reports.Fail, other: reports.Pass,
					edit: func(c, _ *bw.ProbeOutput) {
						c.Rails[0].Error = probeout.Errorf(probeout.KindTransport, "transport retry counter exceeded")
					}},
				{name: "largest requested size missing", want: reports.Fail, other: reports.Pass,
					edit: func(c, _ *bw.ProbeOutput) {
						for i := range c.Rails[0].Runs {
							keep := c.Rails[0].Runs[i].Results[:0]
							for _, r := range c.Rails[0].Runs[i].Results {
								if r.Local.Bytes != max(sizes[0], sizes[len(sizes)-1]) {
									keep = append(keep, r)
								}
							}
							c.Rails[0].Runs[i].Results = keep
						}
					}},
				{name: "rail 0 has no result at all", want: reports.Fail, other: reports.Pass,
					edit: func(c, _ *bw.ProbeOutput) { c.Rails = c.Rails[1:] }},
				{name: "rail 0 op runs missing", want: reports.Fail, other: reports.Pass,
					edit: func(c, _ *bw.ProbeOutput) { c.Rails[0].Runs = nil }},
				{name: "non-zero client exit with clean output", exit: 1, want: reports.Error, other: reports.Error},
				{name: "under the floor", want: reports.Fail, other: reports.Pass,
					edit: func(c, _ *bw.ProbeOutput) {
						for i := range c.Rails[0].Runs {
							for j := range c.Rails[0].Runs[i].Results {
								setGbps(&c.Rails[0].Runs[i].Results[j].Local, 100)
							}
						}
					}},
			} {
				t.Run(fmt.Sprintf("%v/%v/%s", ops, sizes, tc.name), func(t *testing.T) {
					cli, srv := pairOut(t, ops, sizes, 2, 195, tc.edit)
					in := bwInput(t, ops, sizes, cli, srv)
					in.Client.Exit = tc.exit
					cs := Bandwidth(in).Checks
					if len(cs) != 2*len(ops) {
						t.Fatalf("want one check per rail × op (%d), got %s", 2*len(ops), statuses(cs))
					}
					for _, c := range cs {
						want := tc.other
						if strings.HasPrefix(c.Rail, "mlx5_0/1") {
							want = tc.want
						}
						if c.Status != want {
							t.Errorf("%s{%s} = %s, want %s: %s%s", c.ID, c.Rail, c.Status, want, c.Diagnosis, c.Reason)
						}
						if c.Status != reports.Pass && c.Diagnosis+c.Reason == "" {
							t.Errorf("%s{%s}: %s without a reason", c.ID, c.Rail, c.Status)
						}
					}
				})
			}
		}
	}
}

// Defect: with --bw-sizes 64K,1M a client that measured 64 KiB and died on
// 1 MiB ("transport retry counter exceeded", exit 1) got pass, judged on
// the 64 KiB value. The same with 1M,64K.
func TestPartialSweepIsNotAPass(t *testing.T) {
	for _, sizes := range [][]int{{k64, m1}, {m1, k64}} {
		cli, srv := pairOut(t, []string{"write"}, sizes, 1, 195, func(c, _ *bw.ProbeOutput) {
			r := &c.Rails[0].Runs[0]
			for i, res := range r.Results {
				if res.Local.Bytes == k64 {
					r.Results = r.Results[i : i+1]
					break
				}
			}
			c.Rails[0].Error = probeout.Errorf(probeout.KindTransport, "write 1 MiB: work completion: transport retry counter exceeded")
		})
		in := bwInput(t, []string{"write"}, sizes, cli, srv)
		in.Client.Exit = 1
		// The SKU without floors per size (the built-in A100 has one for
		// 64 KiB, which would judge it: bysize_test.go).
		k := *in.SKU
		k.Write.BySize = nil
		in.SKU = &k
		c := Bandwidth(in).Checks[0]
		if c.Status != reports.Fail || !strings.Contains(c.Diagnosis, "retry counter") || !strings.Contains(c.Diagnosis, "1MiB") {
			t.Fatalf("sizes %v: %+v", sizes, c)
		}
		// The 64 KiB value is recorded but never judged; the judged size
		// (1 MiB, the largest requested) has no value, and the diagnosis
		// says it was not measured.
		for _, m := range c.Measured {
			if m.Threshold != nil || m.Name != "write_64KiB_avg" {
				t.Fatalf("sizes %v: only the unjudged 64 KiB value may be recorded: %+v", sizes, c.Measured)
			}
		}
		if !strings.Contains(c.Diagnosis, "not measured: 1MiB") {
			t.Fatalf("sizes %v: %q", sizes, c.Diagnosis)
		}
	}
}

// Defect: only one rail was tested; a down-trained or down mlx5_5 passed.
// Every rail the pod sees is a check with its port in the evidence, and a
// down rail on the server fails that rail only, attributed to the server.
func TestEveryRailIsACheckAndADownRailFailsAlone(t *testing.T) {
	cli, srv := pairOut(t, []string{"write", "read"}, []int{m1}, 8, 195, func(c, s *bw.ProbeOutput) {
		c.Rails[5].Runs = nil
		c.Rails[5].Error = probeout.Errorf(probeout.KindPeer, "server rail mlx5_5/1: link-down")
		s.Found[5].State = "DOWN"
		s.Rails[5].Error = probeout.Errorf(probeout.KindLinkDown, "mlx5_5 port 1 is DOWN (phys Disabled)")
	})
	cs := Bandwidth(bwInput(t, []string{"write", "read"}, []int{m1}, cli, srv)).Checks
	if len(cs) != 16 {
		t.Fatalf("8 rails × 2 ops = 16 checks, got %s", statuses(cs))
	}
	for _, c := range cs {
		down := strings.HasPrefix(c.Rail, "mlx5_5/1")
		if down != (c.Status == reports.Fail) {
			t.Errorf("%s{%s} = %s", c.ID, c.Rail, c.Status)
		}
		if down && (!strings.Contains(c.Diagnosis, "on node-1, port mlx5_5/1: link down") || c.Fix != FixLinkDown) {
			t.Errorf("down rail diagnosis: %q fix %q", c.Diagnosis, c.Fix)
		}
		if !down && c.Measured[len(c.Measured)-1].Port != c.Rail[:strings.Index(c.Rail, "→")] {
			t.Errorf("port missing from the evidence: %+v", c.Measured)
		}
	}
}

func TestRailCountMismatchAndCrossMode(t *testing.T) {
	// Same mode: the client has 2 rails, the server 1: rail 1 owes a result.
	cli, srv := pairOut(t, []string{"write"}, []int{k64}, 2, 195, func(c, s *bw.ProbeOutput) {
		s.Found, s.Rails = s.Found[:1], s.Rails[:1]
		c.Rails[1].Peer, c.Rails[1].Runs = nil, nil
		c.Rails[1].Error = probeout.Errorf(probeout.KindPeer, "the server has no rail 1")
	})
	cs := Bandwidth(bwInput(t, []string{"write"}, []int{k64}, cli, srv)).Checks
	if len(cs) != 2 || cs[0].Status != reports.Pass || cs[1].Status != reports.Fail || !strings.Contains(cs[1].Rail, "no peer rail") {
		t.Fatalf("%s", statuses(cs))
	}
	// Same mode, the other way: the server has a rail the client lacks.
	cli, srv = pairOut(t, []string{"write"}, []int{k64}, 2, 195, func(c, s *bw.ProbeOutput) {
		c.Found, c.Rails = c.Found[:1], c.Rails[:1]
		s.Rails[1].Peer = nil
		s.Rails[1].Error = probeout.Errorf(probeout.KindNoDevice, "no client rail pairs with server rail mlx5_1/1")
	})
	cs = Bandwidth(bwInput(t, []string{"write"}, []int{k64}, cli, srv)).Checks
	if len(cs) != 2 || cs[0].Status != reports.Pass || cs[1].Status != reports.Fail || !strings.Contains(cs[1].Diagnosis, "server rail mlx5_1/1 on node-1 has no client rail") {
		t.Fatalf("server's extra rail: %s %+v", statuses(cs), cs)
	}
	// Cross mode expects every client rail × every server rail.
	cli, srv = pairOut(t, []string{"write"}, []int{k64}, 2, 195, nil)
	in := bwInput(t, []string{"write"}, []int{k64}, cli, srv)
	in.RailMode = bw.RailsCross
	cs = Bandwidth(in).Checks
	if len(cs) != 4 || cs[1].Status != reports.Fail || cs[1].Rail != "mlx5_0/1→mlx5_1/1" {
		t.Fatalf("cross: %s", statuses(cs))
	}
}

func TestBandwidthNoDeviceIsExactDiagnosis(t *testing.T) {
	// What the bed's host nodes print: the client fails first-hand, the
	// server hears about it from its peer.
	cli := envelope(t, bw.ProbeOutput{Role: "client"}, probeout.Errorf(probeout.KindNoDevice, "no RDMA device found"))
	srv := envelope(t, bw.ProbeOutput{Role: "server"}, probeout.Errorf(probeout.KindPeer, "peer 10.244.2.7:40000 failed: no-device"))
	for _, c := range Bandwidth(bwInput(t, []string{"write", "read"}, []int{k64}, cli, srv)).Checks {
		want := "node node-2 advertises rdma/rdma_shared_device_a but no RDMA device is visible in pod bw-c: device plugin / MOFED not ready"
		if c.Status != reports.Fail || !strings.HasPrefix(c.Diagnosis, want) || c.Fix != FixNoDevice {
			t.Fatalf("%s: %+v", c.ID, c)
		}
	}
}

func TestBandwidthLinkTrainedDown(t *testing.T) {
	cli, srv := pairOut(t, []string{"write"}, []int{m1}, 1, 96, func(c, _ *bw.ProbeOutput) { c.Rails[0].Local.RateGbps = 100 })
	c := Bandwidth(bwInput(t, []string{"write"}, []int{m1}, cli, srv)).Checks[0]
	if c.Status != reports.Fail || !strings.Contains(c.Diagnosis, "runs at 100 Gb/s, the SKU expects 200 Gb/s") {
		t.Fatalf("%+v", c)
	}
}

func TestBandwidthPodErrorGarbageAndUnknownKind(t *testing.T) {
	in := bwInput(t, []string{"write"}, []int{k64}, "", "")
	in.Server.PodErr = errors.New("Unschedulable: 0/2 nodes are available: Insufficient rdma/rdma_shared_device_a")
	if c := Bandwidth(in).Checks[0]; c.Status != reports.Error || !strings.Contains(c.Reason, "Insufficient") {
		t.Fatalf("%+v", c)
	}
	if c := Bandwidth(bwInput(t, []string{"write"}, []int{k64}, "segfault", "")).Checks[0]; c.Status != reports.Error {
		t.Fatalf("garbage output: %+v", c)
	}
	// An error kind this reader does not know is not judged as anything
	// but an error: the runner never guesses from substrings.
	odd := strings.Replace(envelope(t, bw.ProbeOutput{}, probeout.Errorf(probeout.KindTransport, "x")), `"transport"`, `"cosmic-ray"`, 1)
	if c := Bandwidth(bwInput(t, []string{"write"}, []int{k64}, odd, "")).Checks[0]; c.Status != reports.Error {
		t.Fatalf("unknown kind: %+v", c)
	}
}

func TestBandwidthHostdevNoNetdev(t *testing.T) {
	cli := envelope(t, bw.ProbeOutput{Role: "client"}, probeout.Errorf(probeout.KindNoNetdev, "no RDMA device behind netdev net1"))
	in := bwInput(t, []string{"write"}, []int{k64}, cli, "")
	in.Variant, in.Network = "hostdev", "sriov-rdma"
	if c := Bandwidth(in).Checks[0]; c.Status != reports.Fail || c.Fix != FixNoNetdev || !strings.Contains(c.Diagnosis, `"sriov-rdma"`) {
		t.Fatalf("%+v", c)
	}
}

// A client that failed fast (here: a probe too old for the flags, no
// envelope) is what the check reports, not the server that then waited:
// the server's wait is evidence, and it can only demote a pass.
func TestClientFailureIsNotMaskedByTheWaitingServer(t *testing.T) {
	in := bwInput(t, []string{"write"}, []int{k64}, "rdmaprobe bw: flag provided but not defined: -rails", "rdmaprobe bw server: waiting")
	in.Client.Exit = 1
	in.Server.WaitErr = errors.New("probe pod did not finish in time: phase Running")
	c := Bandwidth(in).Checks[0]
	if c.Status != reports.Error || !strings.Contains(c.Reason, "flag provided but not defined") {
		t.Fatalf("%+v", c)
	}
	cli, srv := pairOut(t, []string{"write"}, []int{k64}, 1, 195, nil)
	in = bwInput(t, []string{"write"}, []int{k64}, cli, srv)
	in.Server.WaitErr = errors.New("probe pod did not finish in time")
	if c := Bandwidth(in).Checks[0]; c.Status != reports.Error || !strings.Contains(c.Reason, "did not end") {
		t.Fatalf("a server that never ended cannot leave a pass: %+v", c)
	}
}

// A staged link-down on one rail fails that rail only: the probe exits 1
// because of it, and that exit, explained by the rail's error in the
// output, must not demote the rails that were measured.
func TestExplainedExitKeepsTheMeasuredRails(t *testing.T) {
	cli, srv := pairOut(t, []string{"write"}, []int{k64}, 2, 195, func(c, s *bw.ProbeOutput) {
		c.Requested.Ops, s.Requested.Ops = []bw.Op{"write"}, []bw.Op{"write"}
		c.Rails[1].Runs = nil
		c.Rails[1].Error = probeout.Errorf(probeout.KindLinkDown, "rxe1/1 is DOWN")
	})
	in := bwInput(t, []string{"write"}, []int{k64}, cli, srv)
	in.Client.Exit = 1
	cs := Bandwidth(in).Checks
	if len(cs) != 2 || cs[0].Status != reports.Pass || cs[1].Status != reports.Fail {
		t.Fatalf("%s", statuses(cs))
	}
	for _, m := range cs[1].Measured {
		if m.Threshold != nil {
			t.Errorf("an unmeasured rail shows a judged value: %+v", m)
		}
	}
	// The rail's own probe read its port DOWN: the check says which port
	// on which node, so the report blames it whatever the pairing; the
	// measured rail blames nothing.
	if hf := cs[1].HostFaults; len(hf) != 1 || hf[0].Node != in.Client.Node || hf[0].Port == "" || !strings.Contains(hf[0].What, "rxe1/1 is DOWN") {
		t.Errorf("host faults of the DOWN rail: %+v", hf)
	}
	if len(cs[0].HostFaults) != 0 {
		t.Errorf("a measured rail blames %+v", cs[0].HostFaults)
	}
}

// --device: the pods see two ports but the run measured one; the port the
// run did not ask for owes nothing.
func TestNamedDeviceOwesOnlyItsRail(t *testing.T) {
	cli, srv := pairOut(t, []string{"write"}, []int{k64}, 2, 195, func(c, s *bw.ProbeOutput) {
		c.Rails, s.Rails = c.Rails[1:], s.Rails[1:]
	})
	in := bwInput(t, []string{"write"}, []int{k64}, cli, srv)
	in.OneRail = true
	cs := Bandwidth(in).Checks
	if len(cs) != 1 || cs[0].Status != reports.Pass || cs[0].Rail != "mlx5_1/1→mlx5_1/1" {
		t.Fatalf("%s", statuses(cs))
	}
}

// The server's own error for a pair the client measured is not a pass;
// in cross mode it is matched per (server rail, client rail).
func TestServerSideErrorForAMeasuredPair(t *testing.T) {
	cli, srv := pairOut(t, []string{"write"}, []int{k64}, 2, 195, func(c, s *bw.ProbeOutput) {
		s.Rails[1].Error = probeout.Errorf(probeout.KindTransport, "server: work completion: local protection error")
	})
	cs := Bandwidth(bwInput(t, []string{"write"}, []int{k64}, cli, srv)).Checks
	if cs[0].Status != reports.Pass || cs[1].Status != reports.Error || !strings.Contains(cs[1].Reason, "local protection") {
		t.Fatalf("%s %+v", statuses(cs), cs[1])
	}
}

// A pair whose outputs leave nothing to judge still gets a row per op.
func TestNoPairVanishes(t *testing.T) {
	cli := envelope(t, bw.ProbeOutput{Role: "client", Found: []bw.Rail{rail(0, "mlx5_0", 200)}}, nil)
	in := bwInput(t, []string{"write", "read"}, []int{k64}, cli, "garbage")
	in.RailMode, in.Client.Exit = bw.RailsCross, 1
	cs := Bandwidth(in).Checks
	if len(cs) != 2 || cs[0].Status == reports.Pass || cs[1].Status == reports.Pass {
		t.Fatalf("%s", statuses(cs))
	}
}

// Every error kind the envelope schema defines is read (the
// probe's own "gpudirect" was "unknown kind") and explained with a
// diagnosis that carries the probe's message and a fix.
func TestEveryErrorKindHasDiagnosisAndFix(t *testing.T) {
	if !slices.Contains(probeout.Kinds, probeout.KindGPUDirect) {
		t.Fatalf("probeout.Kinds lacks %q: the probe's own GPUDirect failure reads as an unknown kind", probeout.KindGPUDirect)
	}
	for _, k := range probeout.Kinds {
		msg := "message-of-" + string(k)
		cli := envelope(t, bw.ProbeOutput{Role: "client"}, probeout.Errorf(k, "%s", msg))
		c := Bandwidth(bwInput(t, []string{"write"}, []int{k64}, cli, "")).Checks[0]
		text := c.Diagnosis + c.Reason
		if c.Status == reports.Pass || !strings.Contains(text, msg) || c.Fix == "" || strings.Contains(text, "probe error (") {
			t.Errorf("kind %s: %s: %q, fix %q", k, c.Status, text, c.Fix)
		}
	}
}
