package runner

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/rdmasuite/rdmasuite/internal/jobrun"
	"github.com/rdmasuite/rdmasuite/internal/names"
	"github.com/rdmasuite/rdmasuite/internal/pairing"
	"github.com/rdmasuite/rdmasuite/internal/verdict"
	"github.com/rdmasuite/rdmasuite/reports"
	"github.com/rdmasuite/rdmasuite/thresholds"
	"github.com/rdmasuite/rdmasuite/workloads/nccl"
	"github.com/rdmasuite/rdmasuite/workloads/ncclbench"
	"github.com/rdmasuite/rdmasuite/workloads/ncclboot"
)

// GPUResource is the GPU Operator's extended resource.
const GPUResource = "nvidia.com/gpu"

// NCCLPort is rank 0's bootstrap port in every world.
const NCCLPort = ncclboot.DefaultPort

// PhaseNCCL is the time NCCL worlds took, from creating the Job to the
// ranks' logs.
const PhaseNCCL = "nccl world"

// ncclGPUsPerRank is what a rank drives: the probe runs one GPU per rank
// (ncclbench: nThread 1 nGpus 1), whatever else the pod was given. The
// all_reduce floor counts the ports such ranks can reach: one GPU gets
// the NIC(s) nearest it from NCCL, one rail on rail-optimised nodes.
const ncclGPUsPerRank = 1

// runWorld runs one world: jobrun.Run; unit tests replace it with canned
// worlds (a fake clientset has no Job controller and no pod logs).
var runWorld = jobrun.Run

// NCCL runs NCCL collectives over worlds of the variant's GPU nodes, one
// rank per node (an Indexed Job, internal/jobrun): every pair of --pairing
// and the whole set when it has more than 2 nodes (--nccl-worlds). Each
// world gives nccl/<collective> per requested collective and
// nccl/transport (verdict.NCCL). Every selected node ends with rows: a
// node without nvidia.com/gpu is not-run saying so, a GPU node without
// the variant's RDMA resource fails (NotAdvertising), and with fewer than
// 2 usable nodes nothing can be paired: not-run with the reason.
func (r *Runner) NCCL(ctx context.Context, v Variant) []reports.Check {
	cfg := r.Cfg.ncclSettings()
	colls := make([]nccl.Collective, len(cfg.NCCLCollectives))
	for i, c := range cfg.NCCLCollectives {
		colls[i] = nccl.Collective(c)
	}
	ids := verdict.NCCLCheckIDs(colls)
	usable, rows, done := r.gpuNodes(ctx, v, ids)
	if done {
		return rows
	}
	out := rows
	byName := map[string]corev1.Node{}
	for _, n := range usable {
		byName[n.Name] = n
	}
	nodes := nodeNames(usable)
	rounds, why := ncclWorlds(nodes, cfg)
	if why != "" {
		for _, id := range ids {
			out = append(out, NotRun(id, v.Label, fmt.Sprintf("%s: GPU nodes that advertise %s: %v", why, v.Resource, nodes), nodes...))
		}
		return out
	}
	sizes := ncclbench.Config{MinBytes: cfg.NCCLMinBytes, MaxBytes: cfg.NCCLMaxBytes, StepFactor: NCCLFactor}.Sizes()
	for _, round := range rounds {
		out = append(out, r.Collect(len(round), func(i int) []reports.Check {
			return r.ncclWorld(ctx, v, cfg, colls, sizes, round[i], byName)
		})...)
	}
	return out
}

// gpuNodes selects the nodes a GPU feature can run on: GPU nodes that
// advertise the variant's RDMA resource. rows are what the others get,
// one per check id each: not-run for a node without nvidia.com/gpu (it
// has nothing to test, and says so), a failing NotAdvertising row for a
// GPU node without the RDMA resource. done: rows are the whole answer
// (the nodes could not be listed, the variant cannot run here).
func (r *Runner) gpuNodes(ctx context.Context, v Variant, ids []string) (usable []corev1.Node, rows []reports.Check, done bool) {
	nodes, err := r.SelectedNodes(ctx)
	if err != nil {
		for _, id := range ids {
			rows = append(rows, reports.Check{ID: id, Variant: v.Label, Status: reports.Error, Reason: err.Error()})
		}
		return nil, rows, true
	}
	if why := Prerequisite(r.Kube, v); why != "" {
		for _, id := range ids {
			rows = append(rows, NotRun(id, v.Label, why, nodeNames(nodes)...))
		}
		return nil, rows, true
	}
	gpu, noGPU := SplitAdvertising(nodes, GPUResource)
	for _, n := range noGPU {
		q := "absent"
		if qty, ok := n.Status.Allocatable[GPUResource]; ok {
			q = qty.String()
		}
		for _, id := range ids {
			rows = append(rows, NotRun(id, v.Label, fmt.Sprintf("node %s advertises no %s (allocatable: %s): there is no GPU to test on it "+
				"(leave it out with --node-selector, or allow it with --allow-not-run=%s)", n.Name, GPUResource, q, strings.SplitN(id, "/", 2)[0]+"/"), n.Name))
		}
	}
	usable, without := SplitAdvertising(gpu, v.Resource)
	for _, n := range without {
		for _, id := range ids {
			rows = append(rows, NotAdvertising(id, v.Label, n, v.Resource))
		}
	}
	return usable, rows, false
}

// ncclWorlds are the worlds to run, in rounds whose worlds share no node
// (they run at the same time): each unordered pair of the --pairing
// schedule once, then every node together when there are more than 2 (or
// when pairs were not asked for). why is set when no world can be formed.
func ncclWorlds(nodes []string, cfg Config) (rounds [][][]string, why string) {
	if len(nodes) < 2 {
		return nil, fmt.Sprintf("an NCCL world needs at least 2 GPU nodes, have %d", len(nodes))
	}
	pairs := slices.Contains(cfg.NCCLWorlds, NCCLWorldPairs)
	if pairs {
		sched, err := pairing.Schedule(nodes, cfg.Pairing)
		if err != nil {
			return nil, err.Error()
		}
		seen := map[string]bool{}
		for _, round := range sched {
			var worlds [][]string
			for _, p := range round {
				w := []string{p.Client, p.Server}
				slices.Sort(w)
				if k := strings.Join(w, "\x00"); !seen[k] {
					seen[k] = true
					worlds = append(worlds, w)
				}
			}
			if len(worlds) > 0 {
				rounds = append(rounds, worlds)
			}
		}
	}
	if slices.Contains(cfg.NCCLWorlds, NCCLWorldAll) && (len(nodes) > 2 || !pairs) {
		rounds = append(rounds, [][]string{append([]string(nil), nodes...)})
	}
	return rounds, ""
}

// ncclWorld runs one world and judges it.
func (r *Runner) ncclWorld(ctx context.Context, v Variant, cfg Config, colls []nccl.Collective, sizes []int64, nodes []string,
	byName map[string]corev1.Node) []reports.Check {
	world := strconv.Itoa(len(nodes))
	token := newToken()
	args := []string{"nccl", "--world", world, "--token", token, "--collectives", strings.Join(cfg.NCCLCollectives, ","),
		"--min-bytes", strconv.FormatInt(cfg.NCCLMinBytes, 10), "--max-bytes", strconv.FormatInt(cfg.NCCLMaxBytes, 10),
		"--factor", strconv.Itoa(NCCLFactor), "--warmup", strconv.Itoa(cfg.NCCLWarmup), "--iters", strconv.Itoa(cfg.NCCLIters),
		"--check", "--timeout", cfg.NCCLTimeout.String()}
	// ENV: "NCCL_IB_DISABLE set by environment to 1." is an ENV line
	// only (misc/param.cc), and setting NCCL_DEBUG_SUBSYS replaces NCCL's
	// default INIT,BOOTSTRAP,ENV: without it a disabled IB reads as an
	// unexplained socket fallback.
	env := map[string]string{"NCCL_DEBUG": "INFO", "NCCL_DEBUG_SUBSYS": "INIT,NET,ENV"}
	if len(nodes) == 2 {
		// Tree on two nodes can report busbw above the network rate
		// (nccl-tests#196): Ring measures the link.
		env["NCCL_ALGO"] = "Ring"
	}
	name := worldName(v, nodes, r.scoped(nil)...)
	pod := r.Spec(v, name, "", args, v.NeedsCaps)
	pod.Resources[GPUResource] = int64(max(cfg.GPUs, ncclGPUsPerRank))
	shown := slices.Clone(args)
	shown[slices.Index(shown, token)] = "<redacted>"
	in := verdict.NCCLInput{Variant: v.Label, Resource: v.Resource, Network: v.Network, Nodes: nodes, Collectives: colls, Sizes: sizes,
		Command: "rdmaprobe " + strings.Join(shown, " "), Env: env}
	in.Floor, in.FloorErr = r.ncclFloor(nodes, byName)
	r.awaitTerminated(ctx, "NCCL world "+name)
	res, err := runWorld(ctx, r.Kube, jobrun.Spec{Name: name, Nodes: nodes, Pod: pod, Port: NCCLPort, Env: env,
		StartTimeout: r.Cfg.PodTimeout, Timeout: r.Cfg.PodTimeout + 2*cfg.NCCLTimeout + time.Minute})
	r.AddPhase(PhaseNCCL, res.Elapsed)
	in.RunErr = err
	for _, rk := range res.Ranks {
		in.Ranks = append(in.Ranks, verdict.NCCLRank{Index: rk.Index, Node: rk.Node, Pod: rk.Pod, Phase: string(rk.Phase),
			Exit: rk.ExitCode, Logs: rk.Logs, State: rk.State})
	}
	return verdict.NCCL(in)
}

// ncclFloor is the world's all_reduce floor: the lowest of its nodes'
// SKUs (a ring runs at its slowest member's pace), for ranks of
// ncclGPUsPerRank GPUs.
func (r *Runner) ncclFloor(nodes []string, byName map[string]corev1.Node) (thresholds.Bound, error) {
	var floor thresholds.Bound
	skus := map[string]bool{}
	for i, n := range nodes {
		sku, err := r.Cfg.Thresholds.ForNode(n, byName[n].Labels, r.Cfg.SKU)
		if err != nil {
			return floor, err
		}
		if err := sku.Given("ncclAllReduceBusBw"); err != nil {
			return floor, err // thresholds.ErrNotSet: the all_reduce check is not-run
		}
		b, err := sku.NCCLAllReduceFloor(ncclGPUsPerRank)
		if err != nil {
			return floor, err
		}
		skus[sku.Name] = true
		if i == 0 || b.Value < floor.Value {
			floor = b
		}
	}
	if len(skus) > 1 {
		floor.Source = "the lowest of the world's SKUs — " + floor.Source
	}
	return floor, nil
}

// worldName is the Job and Service name of a world: unique per variant
// and node set (names.Object's hash covers them in full), short enough
// for the ranks' hostnames (<job>-<index>) and the pods' generated names.
// scope is the run id in a shared namespace (Runner.Object), else empty.
func worldName(v Variant, nodes []string, scope ...string) string {
	const room = 48
	n := names.Object("nccl-"+v.Name, append(append([]string{v.Resource, strconv.Itoa(len(nodes))}, nodes...), scope...)...)
	if len(n) <= room {
		return n
	}
	hash := n[strings.LastIndex(n, "-"):]
	return strings.TrimRight(n[:room-len(hash)], "-") + hash
}

// newToken is a world's bootstrap secret: ranks outside it cannot join.
func newToken() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
