package runner

import (
	"context"
	"fmt"
	"strings"

	"github.com/rdmasuite/rdmasuite/internal/podrun"
	"github.com/rdmasuite/rdmasuite/internal/verdict"
	"github.com/rdmasuite/rdmasuite/reports"
)

// Memlock runs `rdmaprobe mr` on every selected node. The pod has no
// IPC_LOCK unless MemlockIPCLock: it judges the limit the container runtime
// gives every pod (seed 002), which IPC_LOCK would hide. Nodes that do not
// advertise the variant's resource get failing rows, never silence.
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
	return append(out, r.Collect(len(with), func(i int) []reports.Check {
		n := with[i]
		sku, skuErr := r.Cfg.Thresholds.ForNode(n.Name, n.Labels, r.Cfg.SKU)
		required := r.Cfg.MemlockRequired
		if skuErr == nil && required == "" {
			required = fmt.Sprintf("%.0f", *sku.MinMemlockBytes.Value)
		}
		if required == "" {
			required = "1M"
		}
		args := append([]string{"mr", "--required", required, "--max", r.Cfg.MemlockMax}, r.DeviceArgs(v)...)
		spec := r.Spec(v, r.Object("mr-"+v.Name, n.Name, v.Resource), n.Name, args, r.Cfg.MemlockIPCLock)
		res, err := podrun.Run(ctx, r.Kube, spec, r.Cfg.PodTimeout)
		r.AddPhase(PhasePodStart, res.StartLatency)
		r.AddPhase(PhaseCollection, res.Collect)
		side := verdict.Side{Node: n.Name, Pod: spec.Name, Logs: res.Logs, Exit: res.ExitCode,
			Command: "rdmaprobe " + strings.Join(args, " "), PodErr: err}
		return verdict.Memlock(v.Label, side, sku, skuErr)
	})...)
}
