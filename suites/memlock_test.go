package suites

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/rdmasuite/rdmasuite/reports"
	"github.com/rdmasuite/rdmasuite/internal/podrun"
	"github.com/rdmasuite/rdmasuite/internal/verdict"
)

func TestMemlock(t *testing.T) {
	// Registration is not-run without a device; the rlimit is still judged.
	testenv.Test(t, variantFeatures("memory registration against the pod memlock limit", "memlock",
		"pods on every node can register the required region size", memlockVariant,
		reports.Fail, reports.Error)...)
}

// memlockVariant runs `rdmaprobe mr` on every node advertising the variant's
// resource. The pod has no IPC_LOCK unless --memlock-ipc-lock: it judges the
// limit the container runtime gives every pod (seed 002), which IPC_LOCK
// would hide.
func memlockVariant(ctx context.Context, t *testing.T, v variant) []reports.Check {
	nodes := advertising(selectedNodes(ctx, t), v.Resource)
	if len(nodes) == 0 {
		return []reports.Check{notRun("memlock/rlimit", v.Name, "no selected node advertises "+v.Resource)}
	}
	set, err := loadThresholds()
	if err != nil {
		t.Fatalf("thresholds: %v", err)
	}
	return collectChecks(len(nodes), func(i int) []reports.Check {
		n := nodes[i]
		sku, skuErr := set.ForNode(n.Name, n.Labels, *flagSKU)
		required := *flagMemlockRequired
		if skuErr == nil && required == "" {
			required = fmt.Sprintf("%.0f", *sku.MinMemlockBytes.Value)
		}
		if required == "" {
			required = "1M"
		}
		args := append([]string{"mr", "--required", required, "--max", *flagMemlockMax}, v.deviceArgs()...)
		spec := v.spec("mr-"+v.Name+"-"+shortName(n.Name), n.Name, args, *flagMemlockIPCLock)
		res, err := podrun.Run(ctx, kube, spec, *flagPodTimeout)
		addPhase(phasePodStart, res.StartLatency)
		addPhase(phaseCollection, res.Collect)
		side := verdict.Side{Node: n.Name, Pod: spec.Name, Logs: res.Logs, Exit: res.ExitCode,
			Command: "rdmaprobe " + strings.Join(args, " "), PodErr: err}
		return verdict.Memlock(v.Name, side, sku, skuErr)
	})
}
