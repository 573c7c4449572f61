package runner

import (
	"bytes"
	"strings"
	"testing"

	"k8s.io/client-go/kubernetes/fake"

	"github.com/rdmasuite/rdmasuite/internal/pairing"
	"github.com/rdmasuite/rdmasuite/internal/verdict"
	"github.com/rdmasuite/rdmasuite/reports"
	"github.com/rdmasuite/rdmasuite/workloads/bw"
	"github.com/rdmasuite/rdmasuite/workloads/probeout"
)

var hostdev = Variant{Name: VariantHostdev, Label: VariantHostdev, Resource: "nvidia.com/hostdev", Network: "default/sriov-rdma", Netdev: "net1", NeedsCaps: true}

// probeLogs is what a bw probe pod prints: a log line, then its envelope.
func probeLogs(t *testing.T, o bw.ProbeOutput) string {
	t.Helper()
	var b bytes.Buffer
	if err := probeout.Write(&b, bw.ProbeName, o); err != nil {
		t.Fatal(err)
	}
	return "rdmaprobe bw: RDMA netns mode shared\n" + b.String()
}

func hostdevView(mode string, devs ...bw.VisibleDevice) *bw.PodView {
	return &bw.PodView{NetnsMode: mode, Devices: append([]bw.VisibleDevice{}, devs...)}
}

// rowsAfterPair judges one hostdev pair whose client (on node-2) and server
// (on node-1) printed views cli and srv ("garbage" logs when nil and bad),
// records it as Bandwidth does, and returns node-1's and node-2's rows.
func rowsAfterPair(t *testing.T, v Variant, cliLogs, srvLogs string) (n1, n2 []reports.Check) {
	t.Helper()
	r := New(fake.NewClientset(), testConfig(t), "iso")
	in := verdict.BWInput{Variant: v.Label, Resource: v.Resource, Network: v.Network, Ops: []string{"write"}, Sizes: []int{65536},
		RailMode: bw.RailsSame, OneRail: v.Netdev != "",
		Client: verdict.Side{Node: "node-2", Pod: "bw-c", Logs: cliLogs}, Server: verdict.Side{Node: "node-1", Pod: "bw-s", Logs: srvLogs}}
	seen := newRailsSeen()
	seen.record(pairing.Pair{Server: "node-1", Client: "node-2"}, verdict.Bandwidth(in))
	return r.nodeRows(v, *testNode("node-1", 1), &seen), r.nodeRows(v, *testNode("node-2", 1), &seen)
}

func isolationRow(t *testing.T, rows []reports.Check) reports.Check {
	t.Helper()
	for _, c := range rows {
		if c.ID == "bandwidth/isolation" {
			return c
		}
	}
	t.Fatalf("no bandwidth/isolation row in %+v", rows)
	return reports.Check{}
}

// The per-node isolation row comes from the outputs the pairs collected,
// through the probe's JSON: own device only passes, foreign devices fail,
// a node without a readable output is not-run.
func TestHostdevIsolationRowsFromPairOutputs(t *testing.T) {
	own := bw.VisibleDevice{Name: "rxehd0", Netdev: "net1", Openable: true}
	foreign := []bw.VisibleDevice{{Name: "rxe0", Netdev: "eth1", OpenError: "ibv_open_device(rxe0): No such file or directory"},
		{Name: "rxe1", Netdev: "eth2", OpenError: "ibv_open_device(rxe1): No such file or directory"}}
	ownRail := bw.Rail{Device: "rxehd0", Port: 1, State: "ACTIVE", Netdev: "net1"}
	exclusive := probeLogs(t, bw.ProbeOutput{Role: "client", Found: []bw.Rail{ownRail}, PodView: hostdevView(bw.NetnsExclusive, own)})
	shared := probeLogs(t, bw.ProbeOutput{Role: "server", Found: []bw.Rail{ownRail},
		PodView: hostdevView(bw.NetnsShared, foreign[0], foreign[1], own)})

	n1, n2 := rowsAfterPair(t, hostdev, exclusive, shared)
	if c := isolationRow(t, n2); c.Status != reports.Pass || c.Evidence[0] != "pod bw-c: RDMA netns mode exclusive; devices visible in the pod: rxehd0 (net1)" {
		t.Fatalf("node-2 (own device only): %+v", c)
	}
	c := isolationRow(t, n1)
	want := "hostdev pods on node-1 see rxe0, rxe1 besides their own rxehd0 (on net1): the node's RDMA subsystem is in shared netns mode"
	if c.Status != reports.Fail || c.Diagnosis != want || c.Fix != verdict.FixIsolation {
		t.Fatalf("node-1 (shared mode): %+v", c)
	}
	// The server printed nothing readable: node-1's view is unknown.
	n1, _ = rowsAfterPair(t, hostdev, exclusive, "Segmentation fault")
	if c := isolationRow(t, n1); c.Status != reports.NotRun || !strings.Contains(c.Reason, "no readable bandwidth probe output from node-1") {
		t.Fatalf("node-1 unreadable: %+v", c)
	}
	// A probe without a pod view (older image): not-run, never a pass.
	old := probeLogs(t, bw.ProbeOutput{Role: "server", Found: []bw.Rail{ownRail}})
	n1, _ = rowsAfterPair(t, hostdev, exclusive, old)
	if c := isolationRow(t, n1); c.Status != reports.NotRun {
		t.Fatalf("node-1 old probe: %+v", c)
	}
}

// shared-dev gets no isolation row; its ports row names the mode.
func TestSharedDevPortsRowNamesTheMode(t *testing.T) {
	v := testConfigVariant(t)
	logs := func(role string) string {
		return probeLogs(t, bw.ProbeOutput{Role: role, Found: []bw.Rail{{Device: "mlx5_0", Port: 1, State: "ACTIVE"}},
			PodView: hostdevView(bw.NetnsShared, bw.VisibleDevice{Name: "mlx5_0", Netdev: "eth0", Openable: true})})
	}
	n1, _ := rowsAfterPair(t, v, logs("client"), logs("server"))
	if len(n1) != 1 || n1[0].ID != "bandwidth/ports" {
		t.Fatalf("rows %+v", n1)
	}
	if ev := strings.Join(n1[0].Evidence, "\n"); !strings.Contains(ev, "RDMA netns mode in the pods: shared") {
		t.Fatalf("evidence %q", ev)
	}
}

func testConfigVariant(t *testing.T) Variant {
	return New(fake.NewClientset(), testConfig(t), "iso").Cfg.VariantList()[0]
}
