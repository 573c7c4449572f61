package runner

import (
	"context"
	"strings"
	"testing"

	"k8s.io/client-go/kubernetes/fake"

	"github.com/rdmasuite/rdmasuite/reports"
)

// An exec stream that closed without its run's end frame, with the exit 0
// client-go reports for a stream cut without a status (a kubelet restart,
// an idle timeout), does not prove its process ended: it may still run and
// hold the probe's port or share the rails. Its pod takes part in no later
// pair, whose checks are errors naming the earlier run instead of passing;
// the pair that does not touch that pod still passes. Either side: the
// client's stream cut after a run that measured, or the server's cut while
// its client succeeded.
func TestStreamClosedWithoutItsEndFrameRetiresItsPod(t *testing.T) {
	for _, side := range []string{"client", "server"} {
		t.Run(side, func(t *testing.T) { streamCutRetiresPod(t, side) })
	}
}

func streamCutRetiresPod(t *testing.T, side string) {
	kube := fake.NewClientset(testNode("a", 8), testNode("b", 8), testNode("c", 8))
	mayCreateSub(kube, "exec")
	nodePodsCluster(kube)
	cfg := testConfig(t)
	cfg.Selected = map[string][]string{VariantSharedDev: {PairedBandwidth}}
	r := New(kube, cfg, "t-nodepod-cut-"+side)
	cli, srv := passingPair(t, cfg.BWOps, cfg.BWSizes, 8, 200, 196)
	ex := &fakeExec{kube: kube, out: cli, srvOut: srv}
	if side == "client" {
		ex.cutClients = 1
	} else {
		ex.cutServers = 1
	}
	r.Exec = ex
	executePlan(r)
	cs := r.Paired(context.Background(), r.Cfg.VariantList()[0], PairedBandwidth)

	// The ring of 3 runs one pair per round; the first round's is cut.
	var first string
	for _, c := range ex.commands() {
		if strings.Contains(c, " bw client ") {
			first = c
			break
		}
	}
	byPair := map[string][]reports.Check{}
	for _, c := range cs {
		if c.ID != "bandwidth/write" && c.ID != "bandwidth/read" {
			continue
		}
		byPair[c.Nodes[0]+"->"+c.Nodes[1]] = append(byPair[c.Nodes[0]+"->"+c.Nodes[1]], c)
	}
	if len(byPair) != 3 || first == "" {
		t.Fatalf("want 3 pairs and a first client run, got %d pairs: %q", len(byPair), ex.commands())
	}
	// The cut pod's node: the first run's client (its pod's name holds it)
	// or its server.
	var cutPair, cutNode string
	for p := range byPair {
		cl, sv, _ := strings.Cut(p, "->")
		if strings.HasPrefix(first, "pair-shared-dev-n-"+cl+"-") {
			cutPair, cutNode = p, cl
			if side == "server" {
				cutNode = sv
			}
		}
	}
	retired, passed := 0, 0
	for p, checks := range byPair {
		cl, sv, _ := strings.Cut(p, "->")
		later := p != cutPair && (cl == cutNode || sv == cutNode)
		for _, c := range checks {
			switch {
			case p == cutPair:
				if c.Status == reports.Pass {
					t.Errorf("the cut pair %s passed: %s", p, c.ID)
				}
			case later:
				if c.Status != reports.Error || !strings.Contains(c.Reason, "is still busy: its "+side+" run for "+cutPair+" closed its stream with exit 0 but without the end frame of run 1 of 1 (bandwidth)") ||
					!strings.Contains(c.Reason, "takes part in no later pair") {
					t.Errorf("%s after the cut %s run of %s: %s %s: %s", p, side, cutPair, c.ID, c.Status, c.Reason)
				} else {
					retired++
				}
			default:
				if c.Status != reports.Pass {
					t.Errorf("%s, clear of the cut pod, did not pass: %s %s: %s", p, c.ID, c.Status, c.Reason)
				} else {
					passed++
				}
			}
		}
	}
	if retired == 0 || passed == 0 {
		t.Errorf("cut %s run of %s (pod on %s): %d checks retired, %d passed; want both", side, cutPair, cutNode, retired, passed)
	}
}
