package suites

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/rdmasuite/rdmasuite/reports"
	"github.com/rdmasuite/rdmasuite/internal/pairing"
	"github.com/rdmasuite/rdmasuite/internal/podrun"
	"github.com/rdmasuite/rdmasuite/internal/verdict"
	"github.com/rdmasuite/rdmasuite/workloads/probeout"
)

const bwPort = 18515

func TestBandwidth(t *testing.T) {
	// Not-run fails here too: a variant that was asked for and could not
	// run (no Multus, fewer than two nodes) is not a passed bandwidth test.
	testenv.Test(t, variantFeatures("RDMA bandwidth between paired pods", "bandwidth",
		"every node reaches its SKU's write and read floor to its peers", bandwidthVariant,
		reports.Fail, reports.Error, reports.NotRun)...)
}

func bandwidthVariant(ctx context.Context, t *testing.T, v variant) []reports.Check {
	ops := splitList(*flagBWOps)
	if why := v.prerequisite(ctx); why != "" {
		var cs []reports.Check
		for _, op := range ops {
			cs = append(cs, notRun("bandwidth/"+op, v.Name, why))
		}
		return cs
	}
	nodes := advertising(selectedNodes(ctx, t), v.Resource)
	names := make([]string, len(nodes))
	byName := map[string]corev1.Node{}
	for i, n := range nodes {
		names[i] = n.Name
		byName[n.Name] = n
	}
	rounds, err := pairing.Schedule(names, *flagPairing)
	if err != nil && *flagLoopback && len(names) == 1 {
		// One node and --loopback: the same-node pair is the whole test.
		rounds, err = nil, nil
	}
	if err != nil {
		var cs []reports.Check
		for _, op := range ops {
			cs = append(cs, notRun("bandwidth/"+op, v.Name, fmt.Sprintf("%v: nodes advertising %s: %v", err, v.Resource, names), names...))
		}
		return cs
	}
	set, setErr := loadThresholds()
	if setErr != nil {
		t.Fatalf("thresholds: %v", setErr)
	}
	var out []reports.Check
	for ri, round := range rounds {
		out = append(out, collectChecks(len(round), func(pi int) []reports.Check {
			p := round[pi]
			in := runPair(ctx, v, p, fmt.Sprintf("%d-%d", ri, pi), ops)
			in.SKU, in.SKUErr = set.ForNode(p.Client, byName[p.Client].Labels, *flagSKU)
			return verdict.Bandwidth(in)
		})...)
	}
	if *flagLoopback {
		for _, n := range names {
			in := runPair(ctx, v, pairing.Pair{Server: n, Client: n}, "lo-"+shortName(n), ops)
			in.SKU, in.SKUErr = set.ForNode(n, byName[n].Labels, *flagSKU)
			cs := verdict.Bandwidth(in)
			for i := range cs {
				cs[i].ID += "/loopback"
			}
			out = append(out, cs...)
		}
	}
	return out
}

// runPair runs one server pod and one client pod and returns what they left.
// Both pods are deleted before it returns.
func runPair(ctx context.Context, v variant, p pairing.Pair, tag string, ops []string) verdict.BWInput {
	in := verdict.BWInput{Variant: v.Name, Resource: v.Resource, Network: v.Network, Ops: ops}
	base := "bw-" + v.Name + "-" + tag
	srvArgs := append([]string{"bw", "server", "--port", strconv.Itoa(bwPort), "--sessions", strconv.Itoa(len(ops)),
		"--timeout", "2m"}, v.deviceArgs()...)
	srvSpec := v.spec(base+"-s", p.Server, srvArgs, v.NeedsCaps)
	in.Server = verdict.Side{Node: p.Server, Pod: srvSpec.Name, Command: "rdmaprobe " + strings.Join(srvArgs, " ")}
	in.Client = verdict.Side{Node: p.Client, Pod: base + "-c"}

	srv, srvStart, err := podrun.Start(ctx, kube, srvSpec, *flagPodTimeout)
	if srv != nil {
		defer podrun.Delete(kube, srvSpec.Namespace, srvSpec.Name)
	}
	if err != nil {
		in.Server.PodErr = err
		return in
	}
	addPhase(phasePodStart, srvStart)
	cliArgs := append([]string{"bw", "client", "--port", strconv.Itoa(bwPort), "--op", strings.Join(ops, ","),
		"--size", *flagBWSizes, "--qps", strconv.Itoa(*flagBWQPs), "--timeout", "1m"}, v.deviceArgs()...)
	if *flagBWIters > 0 {
		cliArgs = append(cliArgs, "--iters", strconv.Itoa(*flagBWIters))
	} else {
		cliArgs = append(cliArgs, "--duration", flagBWDuration.String())
	}
	cliArgs = append(cliArgs, srv.Status.PodIP)
	in.Client.Command = "rdmaprobe " + strings.Join(cliArgs, " ")
	// The client may run ops × sizes × duration, plus pod start.
	budget := *flagPodTimeout + time.Duration(len(ops)*len(splitList(*flagBWSizes)))*(*flagBWDuration+30*time.Second)
	cres, err := podrun.Run(ctx, kube, v.spec(in.Client.Pod, p.Client, cliArgs, v.NeedsCaps), budget)
	in.Client.Logs, in.Client.Exit = cres.Logs, cres.ExitCode
	if err != nil {
		in.Client.PodErr = err
	}
	addPhase(phasePodStart, cres.StartLatency)
	addPhase(phaseCollection, cres.Collect)
	collectStart := time.Now()
	sres, err := podrun.Wait(ctx, kube, srv, time.Minute)
	in.Server.Logs, in.Server.Exit = sres.Logs, sres.ExitCode
	if err != nil && in.Client.PodErr == nil {
		in.Server.PodErr = err
	}
	addPhase(phaseCollection, time.Since(collectStart))
	recordBWPhases(in.Client.Logs)
	return in
}

// recordBWPhases adds the client's exchange and measurement time.
func recordBWPhases(logs string) {
	var o verdict.BWOutput
	if probeout.Parse(logs, "bw", &o) != nil {
		return
	}
	for _, r := range o.Runs {
		addPhase(phaseExchange, time.Duration(r.SetupSec*float64(time.Second)))
		var m float64
		for _, sr := range r.Results {
			m += sr.Local.ElapsedSec
		}
		addPhase(phaseMeasure, time.Duration(m*float64(time.Second)))
	}
}

// shortName keeps pod names within 63 characters.
func shortName(n string) string {
	if len(n) > 20 {
		return n[len(n)-20:]
	}
	return n
}
