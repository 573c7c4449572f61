package runner

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"

	"github.com/rdmasuite/rdmasuite/internal/podrun"
	"github.com/rdmasuite/rdmasuite/internal/verdict"
	"github.com/rdmasuite/rdmasuite/reports"
	"github.com/rdmasuite/rdmasuite/thresholds"
)

// Memlock runs `rdmaprobe mr` on every selected node. The pod has no
// IPC_LOCK unless MemlockIPCLock: it judges the limit the container runtime
// gives every pod (seed 002), which IPC_LOCK would hide. Nodes that do not
// advertise the variant's resource get failing rows, never silence. Nodes
// whose node pod already measured it (memlockInNodePods) keep those rows.
func (r *Runner) Memlock(ctx context.Context, v Variant) []reports.Check {
	ids := []string{"memlock/rlimit", "memlock/registration"}
	nodes, err := r.SelectedNodes(ctx)
	if err != nil {
		var cs []reports.Check
		for _, id := range ids {
			cs = append(cs, reports.Check{ID: id, Variant: v.Label, Status: reports.Error, Reason: err.Error()})
		}
		return cs
	}
	with, without := SplitAdvertising(nodes, v.Resource)
	var out []reports.Check
	for _, n := range without {
		for _, id := range ids {
			out = append(out, NotAdvertising(id, v.Label, n, v.Resource))
		}
	}
	r.mu.Lock()
	rode := r.memlockRode[v.Label]
	r.mu.Unlock()
	var own []corev1.Node
	for _, n := range with {
		if cs, ok := rode[n.Name]; ok {
			out = append(out, cs...)
		} else {
			own = append(own, n)
		}
	}
	return append(out, r.Collect(len(own), func(i int) []reports.Check {
		n := own[i]
		args, sku, skuErr := r.memlockArgs(v, n, false)
		spec := r.Spec(v, r.Object("mr-"+v.Name, n.Name, v.Resource), n.Name, args, r.Cfg.MemlockIPCLock)
		res, err := podrun.Run(ctx, r.Kube, spec, r.Cfg.PodTimeout)
		r.AddPhase(PhasePodStart, res.StartLatency)
		r.AddPhase(PhaseCollection, res.Collect)
		side := verdict.Side{Node: n.Name, Pod: spec.Name, Logs: res.Logs, Exit: res.ExitCode,
			Command: "rdmaprobe " + strings.Join(args, " "), PodErr: err}
		return verdict.Memlock(v.Label, side, sku, skuErr)
	})...)
}

// memlockArgs are the mr probe's arguments on node n. inNodePod: the run
// is exec'd in the node's probe pod, which holds IPC_LOCK for the paired
// features; unless the memlock pods are to hold it too (MemlockIPCLock),
// the probe drops CAP_IPC_LOCK on its registering thread first, which is
// what a pod without IPC_LOCK gets (the runtime's RLIMIT_MEMLOCK is the
// same for every container; the capability only lifts the kernel's pin
// check for the thread that registers).
func (r *Runner) memlockArgs(v Variant, n corev1.Node, inNodePod bool) ([]string, *thresholds.SKU, error) {
	sku, skuErr := r.Cfg.Thresholds.ForNode(n.Name, n.Labels, r.Cfg.SKU)
	required := r.Cfg.MemlockRequired
	if skuErr == nil && required == "" {
		required = fmt.Sprintf("%.0f", *sku.MinMemlockBytes.Value)
	}
	if required == "" {
		required = "1M"
	}
	args := []string{"mr", "--required", required, "--max", r.Cfg.MemlockMax}
	if inNodePod && !r.Cfg.MemlockIPCLock {
		args = append(args, "--drop-ipc-lock")
	}
	return append(args, r.DeviceArgs(v)...), sku, skuErr
}

// memlockInNodePods runs the memlock probe in each node's main probe pod
// of the variant (the plan's, when the run selected memlock), and keeps
// the rows for Memlock. A node whose pod did not start or is busy gets no
// row here: Memlock then starts a pod of its own there.
func (r *Runner) memlockInNodePods(ctx context.Context, v Variant, np *nodePods, byName map[string]corev1.Node) {
	if np == nil || ctx.Err() != nil {
		return
	}
	if r.Cfg.MemlockIPCLock && !v.NeedsCaps {
		return // memlock pods are to hold IPC_LOCK, and these pods do not
	}
	var pods []*nodePod
	for _, n := range slices.Sorted(maps.Keys(np.main)) {
		if p := np.main[n]; p.err == nil && p.busyErr() == nil {
			pods = append(pods, p)
		}
	}
	rode := map[string][]reports.Check{}
	var mu sync.Mutex
	r.Collect(len(pods), func(i int) []reports.Check {
		p := pods[i]
		n, ok := byName[p.node]
		if !ok {
			return nil
		}
		args, sku, skuErr := r.memlockArgs(v, n, true)
		res, err := r.Exec.Exec(ctx, r.Namespace(), p.name, podrun.ContainerName, append([]string{probeBinary}, args...))
		if err == nil && !res.Exited {
			err = fmt.Errorf("its run in pod %s ended without an exit status", p.name)
		}
		if err != nil {
			return nil // not kept: Memlock measures this node in a pod of its own
		}
		side := verdict.Side{Node: p.node, Pod: p.name, Logs: res.Output, Exit: int32(res.Exit),
			Command: "rdmaprobe " + strings.Join(args, " ") + " (exec'd in the node's probe pod)"}
		cs := verdict.Memlock(v.Label, side, sku, skuErr)
		mu.Lock()
		rode[p.node] = cs
		mu.Unlock()
		return cs // for the progress line; Memlock reports them
	})
	r.mu.Lock()
	if r.memlockRode == nil {
		r.memlockRode = map[string]map[string][]reports.Check{}
	}
	r.memlockRode[v.Label] = rode
	r.mu.Unlock()
}
