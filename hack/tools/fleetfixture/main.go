// Command fleetfixture writes the results.json of a bandwidth run over a
// fleet that does not exist: N nodes of R rails in a ring (every node the
// client of the next, write and read on every rail), with chosen ports
// slow. The checks are not imitated: each pair's probe outputs (client and
// server, as `rdmaprobe bw` prints them) go through internal/verdict's
// Bandwidth, the code the suite judges real pairs with, against the SKU's
// floors from the thresholds file. A slow port makes both pairs that use it
// fail on its rail, as a bad cable does. The results go through
// reports.MarkPeerOutliers, as the runner's do.
//
//	fleetfixture -nodes 256 -rails 8 -bad gpu-017/3 -o fleet.json
//
// -bad NODE/RAIL (repeatable): RAIL is the rail's index or its port name
// (gpu-017/mlx5_3/1). -slowpass NODE/RAIL (repeatable): a port below its
// peers and above the floor (-slowpass-frac of the link, 0.96: its pairs
// pass, the peer-outlier rule makes them warn). -sku-under FRAC: every
// port at FRAC of the link (0.90: 5 % under the 0.95 floor), the same
// tight spread around it: a SKU-wide shortfall.
//
// A healthy port measures 97.5-98.5 % of the link (NDR ports of one fleet
// agree within about 1 %: 390-394 Gb/s).
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/rdmasuite/rdmasuite/internal/verdict"
	"github.com/rdmasuite/rdmasuite/reports"
	"github.com/rdmasuite/rdmasuite/thresholds"
	"github.com/rdmasuite/rdmasuite/workloads/bw"
	"github.com/rdmasuite/rdmasuite/workloads/probeout"
)

const (
	variant  = "shared-dev"
	resource = "rdma/rdma_shared_device_a"
	// measureSec is the simulated time of one (rail, op, size) run.
	measureSec = 5
)

var sizes = []int{64 << 10, 1 << 20}

// port is one rail of one node.
type port struct{ node, rail int }

type fixture struct {
	nodes, rails int
	prefix       string
	sku          *thresholds.SKU
	skuFile      string
	bad          map[port]bool
	// slowFrac: a slow port's bandwidth as a fraction of the link rate.
	slowFrac float64
	// slowPass: ports below their peers but above the floor, at
	// slowPassFrac of the link.
	slowPass     map[port]bool
	slowPassFrac float64
	// skuUnder: when > 0, every healthy port measures about this
	// fraction of the link (a SKU-wide shortfall).
	skuUnder float64
	// flaky: ports slow in the rounds (as bad ones) that measure healthy
	// in the confirmation round (a one-off); confirm: run the
	// confirmation round as the suite's --confirm does (confirm.go).
	flaky      map[port]bool
	confirm    bool
	confirming bool // building the confirmation round's pairs
	flakySpecs []string
}

func main() {
	f := fixture{bad: map[port]bool{}, slowPass: map[port]bool{}, flaky: map[port]bool{}}
	var badSpecs, slowPassSpecs []string
	flag.IntVar(&f.nodes, "nodes", 256, "nodes in the ring")
	flag.IntVar(&f.rails, "rails", 8, "rails (ports) per node: mlx5_0/1 … mlx5_R-1/1")
	flag.StringVar(&f.prefix, "prefix", "gpu-", "node name prefix (names are PREFIX + zero-padded index)")
	skuName := flag.String("sku", "H100/NDR-400", "SKU whose link rate and floors judge the fleet")
	flag.StringVar(&f.skuFile, "thresholds", "thresholds/skus.yaml", "thresholds file")
	flag.Float64Var(&f.slowFrac, "slow", 0.74, "a bad port's average bandwidth as a fraction of the link rate")
	flag.Func("bad", "NODE/RAIL: a slow port (repeatable); RAIL an index or a port name", func(s string) error {
		badSpecs = append(badSpecs, s)
		return nil
	})
	flag.Func("slowpass", "NODE/RAIL: a port below its peers but above the floor (repeatable): a peer outlier", func(s string) error {
		slowPassSpecs = append(slowPassSpecs, s)
		return nil
	})
	flag.Float64Var(&f.slowPassFrac, "slowpass-frac", 0.96, "a -slowpass port's average bandwidth as a fraction of the link rate")
	flag.Float64Var(&f.skuUnder, "sku-under", 0, "FRAC: every port at about FRAC of the link (a SKU-wide shortfall when under the floor); 0: healthy")
	flag.Func("flaky", "NODE/RAIL: a port slow in the rounds that measures healthy when measured again (repeatable; with -confirm: transient)", func(s string) error {
		f.flakySpecs = append(f.flakySpecs, s)
		return nil
	})
	flag.BoolVar(&f.confirm, "confirm", false, "run the confirmation round as the suite's --confirm does: each node of a failed pair measured again against a clean node")
	out := flag.String("o", "", "results file to write (required)")
	flag.Parse()
	if err := run(&f, *skuName, badSpecs, slowPassSpecs, *out); err != nil {
		fmt.Fprintln(os.Stderr, "fleetfixture:", err)
		os.Exit(1)
	}
}

func run(f *fixture, skuName string, badSpecs, slowPassSpecs []string, out string) error {
	if out == "" {
		return errors.New("need -o")
	}
	if err := f.setup(skuName, badSpecs, slowPassSpecs); err != nil {
		return err
	}
	r := f.build()
	if err := reports.Write(out, r); err != nil {
		return err
	}
	s := r.Summary()
	fmt.Printf("fleetfixture: %s: %d nodes × %d rails, %d checks (%d pass, %d warn, %d fail), %d slow port(s), %d slow but passing\n",
		out, f.nodes, f.rails, len(r.Checks), s[reports.Pass], s[reports.Warn], s[reports.Fail], len(f.bad), len(f.slowPass))
	return nil
}

// setup loads the SKU and reads the port specs.
func (f *fixture) setup(skuName string, badSpecs, slowPassSpecs []string) error {
	if f.nodes < 3 || f.rails < 1 {
		return errors.New("need -nodes >= 3 (a ring of at least three: one bad port is then localised) and -rails >= 1")
	}
	if f.bad == nil {
		f.bad = map[port]bool{}
	}
	if f.slowPass == nil {
		f.slowPass = map[port]bool{}
	}
	if f.flaky == nil {
		f.flaky = map[port]bool{}
	}
	set, err := thresholds.Load(f.skuFile)
	if err != nil {
		return err
	}
	if f.sku, err = set.ForNode("fleet", nil, skuName); err != nil {
		return err
	}
	if f.sku.LinkRateGbps.Value == nil {
		return fmt.Errorf("SKU %s has no link rate", skuName)
	}
	for _, s := range badSpecs {
		p, err := f.parsePort(s)
		if err != nil {
			return err
		}
		f.bad[p] = true
	}
	for _, s := range slowPassSpecs {
		p, err := f.parsePort(s)
		if err != nil {
			return err
		}
		f.slowPass[p] = true
	}
	for _, s := range f.flakySpecs {
		p, err := f.parsePort(s)
		if err != nil {
			return err
		}
		f.flaky[p] = true
	}
	return nil
}

func (f *fixture) name(i int) string {
	digits := len(strconv.Itoa(f.nodes - 1))
	return fmt.Sprintf("%s%0*d", f.prefix, max(digits, 3), i)
}

func railName(r int) string { return fmt.Sprintf("mlx5_%d/1", r) }

// parsePort reads NODE/RAIL: RAIL an index or a port name.
func (f *fixture) parsePort(s string) (port, error) {
	node, rail, ok := strings.Cut(s, "/")
	if !ok {
		return port{}, fmt.Errorf("port %q: want NODE/RAIL", s)
	}
	p := port{node: -1, rail: -1}
	for i := range f.nodes {
		if f.name(i) == node {
			p.node = i
		}
	}
	for r := range f.rails {
		if rail == strconv.Itoa(r) || rail == railName(r) {
			p.rail = r
		}
	}
	if p.node < 0 || p.rail < 0 {
		return port{}, fmt.Errorf("port %q: no node %q or rail %q in %s000…, %d rails", s, node, rail, f.prefix, f.rails)
	}
	return p, nil
}

func (f *fixture) build() reports.Run {
	t0 := time.Date(2026, 11, 24, 2, 0, 0, 0, time.UTC)
	r := reports.Run{RunID: fmt.Sprintf("fleet-%dx%d", f.nodes, f.rails), Started: t0,
		Cluster: reports.Cluster{Server: "https://10.0.0.1:6443", Version: "v1.35.4"}}
	for i := range f.nodes {
		r.Nodes = append(r.Nodes, reports.Node{Name: f.name(i), SKU: f.sku.Name, ThresholdsFile: f.skuFile,
			Kubelet: "v1.35.4", Kernel: "6.8.0-49-generic",
			Labels:      map[string]string{"feature.node.kubernetes.io/rdma.available": "true", "nvidia.com/gpu.present": "true"},
			Allocatable: map[string]string{resource: "63", "nvidia.com/gpu": "8"}})
		r.Checks = append(r.Checks, f.portsCheck(i))
	}
	for i := range f.nodes {
		res := verdict.Bandwidth(f.pair(i, (i+1)%f.nodes))
		for _, c := range res.Checks {
			c.Duration = float64(len(sizes) * measureSec)
			r.Checks = append(r.Checks, c)
		}
	}
	if f.confirm {
		r.Checks = f.confirmRound(r.Checks)
	}
	// Two rounds of the ring, every rail and op one after another.
	perPair := float64(f.rails * 2 * len(sizes) * measureSec)
	r.Finished = t0.Add(time.Duration(2*perPair+60) * time.Second)
	r.Phases = map[string]reports.Phase{
		"pod start":   {Count: 2 * f.nodes, TotalSec: 4.1 * float64(2*f.nodes), MaxSec: 9.3},
		"measurement": {Count: f.nodes, TotalSec: perPair * float64(f.nodes), MaxSec: perPair + 2},
	}
	reports.MarkPeerOutliers(&r) // as the runner's Results does
	return r
}

// rail is the node's i-th port as the probe lists it.
func (f *fixture) rail(i int) bw.Rail {
	return bw.Rail{Index: i, Device: fmt.Sprintf("mlx5_%d", i), Port: 1, State: "ACTIVE", LinkLayer: "InfiniBand",
		RateGbps: *f.sku.LinkRateGbps.Value, Netdev: fmt.Sprintf("ibp%ds0", 24+i)}
}

// gbps is what the pair measures on a rail: a healthy port 97.5-98.5 %
// of the link (NDR ports of one fleet, 390-394 Gb/s; -sku-under moves
// that band to FRAC ± 0.5 %), a slow one at either end f.slowFrac of it,
// a slow-but-passing one f.slowPassFrac. Deterministic, so two fixtures
// of the same flags are the same file.
func (f *fixture) gbps(client, server, rail, op, size int) float64 {
	rate := *f.sku.LinkRateGbps.Value
	flaky := !f.confirming && (f.flaky[port{client, rail}] || f.flaky[port{server, rail}])
	if f.bad[port{client, rail}] || f.bad[port{server, rail}] || flaky {
		return rate * f.slowFrac * (1 - 0.002*float64(size))
	}
	if f.slowPass[port{client, rail}] || f.slowPass[port{server, rail}] {
		return rate * f.slowPassFrac
	}
	centre := 0.98
	if f.skuUnder > 0 {
		centre = f.skuUnder
	}
	return rate * (centre + 0.00125*float64((client*7+rail*3+op+size)%9-4))
}

// pair is the verdict's input for client → server: both sides' probe
// output, as the runner reads them from the pods' logs.
func (f *fixture) pair(client, server int) verdict.BWInput {
	ops := []bw.Op{"write", "read"}
	req := bw.Requested{Ops: ops, Sizes: sizes, RailMode: bw.RailsSame}
	cli := bw.ProbeOutput{Role: "client", Requested: req}
	srv := bw.ProbeOutput{Role: "server", Requested: req}
	for i := range f.rails {
		local, peer := f.rail(i), f.rail(i)
		cli.Found, srv.Found = append(cli.Found, local), append(srv.Found, peer)
		rr := bw.RailResult{Local: local, Peer: &peer, Memory: &bw.Memory{Kind: bw.MemoryHost}}
		srr := bw.RailResult{Local: peer, Peer: &local, Memory: &bw.Memory{Kind: bw.MemoryHost}}
		for k, op := range ops {
			p := bw.Params{Op: op, Sizes: sizes, Duration: measureSec * time.Second, Warmup: 100, QPs: 1, TxDepth: 128, CQMod: 16}
			rep := bw.Report{Role: "client", Params: p, Peer: f.name(server)}
			for j, size := range sizes {
				rep.Results = append(rep.Results, bw.SizeResult{Local: figures(size, f.gbps(client, server, i, k, j))})
			}
			rr.Runs = append(rr.Runs, rep)
			srr.Runs = append(srr.Runs, bw.Report{Role: "server", Params: p, Peer: f.name(client)})
		}
		cli.Rails, srv.Rails = append(cli.Rails, rr), append(srv.Rails, srr)
	}
	side := func(n int, role string, out bw.ProbeOutput) verdict.Side {
		var b bytes.Buffer
		if err := probeout.Write(&b, bw.ProbeName, out); err != nil {
			panic(err) // a ProbeOutput always encodes
		}
		return verdict.Side{Node: f.name(n), Pod: fmt.Sprintf("rdmasuite-bw-%s-%s-%s", variant, role[:1], f.name(n)),
			Logs: b.String(), Command: "rdmaprobe bw " + role + " --ops write,read --sizes 65536,1048576 --duration 5s"}
	}
	return verdict.BWInput{Variant: variant, Resource: resource, Ops: []string{"write", "read"}, Sizes: sizes, RailMode: bw.RailsSame,
		Client: side(client, "client", cli), Server: side(server, "server", srv), SKU: f.sku}
}

// figures are a run's figures at gbps, consistent with each other as
// perftest's formulas make them (the verdict checks that they are).
func figures(size int, gbps float64) bw.Figures {
	n := int(gbps * 1e9 / 8 * measureSec / float64(size))
	elapsed := time.Duration(float64(size) * float64(n) * 8 / (gbps * 1e9) * float64(time.Second))
	return bw.Compute(size, n, elapsed, elapsed/time.Duration(n)*99/100)
}

// portsCheck is the node's bandwidth/ports row: the pods saw every port.
func (f *fixture) portsCheck(i int) reports.Check {
	var found []string
	for r := range f.rails {
		rl := f.rail(r)
		found = append(found, fmt.Sprintf("%s %s %gGb/s", rl.Name(), rl.State, rl.RateGbps))
	}
	c := reports.Check{ID: "bandwidth/ports", Title: "the pods see as many RDMA ports as the SKU has", Variant: variant,
		Nodes: []string{f.name(i)}, Status: reports.Pass, Evidence: []string{"rails in the pod: " + strings.Join(found, ", ")},
		Measured: []reports.Measurement{{Name: "ports", Node: f.name(i), Value: float64(f.rails), Unit: "ports"}}}
	if v := f.sku.PortsPerNode.Value; v != nil {
		c.Measured[0].Threshold = &reports.Threshold{Op: ">=", Value: *v, Source: f.sku.Name + ": " + f.sku.PortsPerNode.Source}
		if float64(f.rails) < *v {
			c.Status = reports.Fail
			c.Diagnosis = fmt.Sprintf("pods on %s see %d RDMA port(s), SKU %s expects %g", f.name(i), f.rails, f.sku.Name, *v)
		}
	}
	return c
}
