package runner

import (
	"context"
	"fmt"
	"path"
	"slices"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/rdmasuite/rdmasuite/internal/disrupt"
	"github.com/rdmasuite/rdmasuite/reports"
)

// Disruptive runs the disruptive feature (internal/disrupt) on
// Cfg.DisruptNodes, one node at a time; exec runs `rdmaprobe stall stop`
// in the writer pods. The suites call it only when the gate
// (disrupt.Gate) said so.
func (r *Runner) Disruptive(ctx context.Context, exec disrupt.Execer) []reports.Check {
	var selected []string
	if nodes, err := r.SelectedNodes(ctx); err == nil {
		for _, n := range nodes {
			if !n.Spec.Unschedulable {
				selected = append(selected, n.Name)
			}
		}
	}
	return disrupt.Run(ctx, r.disruptEnv(exec), r.DisruptOptions(selected))
}

// disruptEnv sends the feature's lines through the run's Progress, which
// stamps them with the clock time and writes the progress log: a round's
// minutes (writers steady, driver back, writers stopped, verification)
// can then be split from the log alone.
func (r *Runner) disruptEnv(exec disrupt.Execer) disrupt.Env {
	env := disrupt.Env{Kube: r.Kube, Exec: exec}
	if r.Progress != nil {
		env.Printf = func(format string, a ...any) { r.Progress("disruptive: " + fmt.Sprintf(format, a...)) }
	}
	return env
}

// DisruptOptions maps the run's settings onto the feature's; selected are
// the run's schedulable nodes (the peer fallback).
func (r *Runner) DisruptOptions(selected []string) disrupt.Options {
	c := r.Cfg
	return disrupt.Options{Namespace: r.Namespace(), RunID: r.RunID, Image: c.Image, PodTimeout: c.PodTimeout, Keep: c.KeepOnFailure,
		Targets: c.DisruptNodes, Peer: c.StallPeer, Selected: selected,
		PVCNamespace: c.StallPVCNamespace, PVCName: c.StallPVC,
		MOFEDNamespace: c.MOFEDNamespace, MOFEDSelector: c.MOFEDSelector, MOFEDContainer: c.MOFEDContainer,
		DriverReadyFile: c.DriverReadyFile, DriverTimeout: c.DriverTimeout, Steady: c.StallSteady, After: c.StallAfter,
		Durability: c.StallDurability, Force: c.StallForce, Thresholds: c.Thresholds, SKU: c.SKU}
}

// validateDisruptive checks the disruptive feature's flags (only with
// --allow-disruptive: without it they are never used).
func (c Config) validateDisruptive() error {
	if len(c.DisruptNodes) == 0 {
		return fmt.Errorf("--allow-disruptive needs --disrupt-nodes=NODE[,NODE]: the nodes whose MOFED driver may be restarted")
	}
	for i, n := range c.DisruptNodes {
		if slices.Contains(c.DisruptNodes[:i], n) {
			return fmt.Errorf("--disrupt-nodes: %s given twice", n)
		}
	}
	if c.DriverTimeout <= 0 {
		return fmt.Errorf("--driver-timeout %s: give how long the MOFED driver pod may take to come back Ready, e.g. 10m", c.DriverTimeout)
	}
	if c.StallSteady < 0 || c.StallAfter < 0 {
		return fmt.Errorf("--stall-steady %s / --stall-after %s: durations must not be negative", c.StallSteady, c.StallAfter)
	}
	if err := disrupt.ValidDurability(c.StallDurability); err != nil {
		return fmt.Errorf("--stall-durability: %w", err)
	}
	if !path.IsAbs(c.DriverReadyFile) || path.Dir(c.DriverReadyFile) == "/" || path.Clean(c.DriverReadyFile) != c.DriverReadyFile {
		return fmt.Errorf("--driver-ready-file %q: give the absolute host path of the driver's readiness file, e.g. /run/mellanox/drivers/.driver-ready (its directory is mounted read-only into the writer)", c.DriverReadyFile)
	}
	if c.MOFEDSelector == "" {
		return fmt.Errorf("--mofed-selector is empty: give the MOFED driver pods' label selector, e.g. nvidia.com/ofed-driver")
	}
	if _, err := labels.Parse(c.MOFEDSelector); err != nil {
		return fmt.Errorf("--mofed-selector %q: %w", c.MOFEDSelector, err)
	}
	for _, f := range [][2]string{{"--mofed-namespace", c.MOFEDNamespace}, {"--mofed-container", c.MOFEDContainer},
		{"--stall-pvc", c.StallPVC}, {"--stall-pvc-namespace", c.StallPVCNamespace}} {
		if f[1] == "" {
			return fmt.Errorf("%s is empty", f[0])
		}
	}
	return nil
}
