package suites

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rdmasuite/rdmasuite/reports"
	"github.com/rdmasuite/rdmasuite/thresholds"
)

// collected holds every check the features recorded; TestMain writes it.
var collected struct {
	sync.Mutex
	checks []reports.Check
}

func record(cs ...reports.Check) {
	collected.Lock()
	defer collected.Unlock()
	collected.checks = append(collected.checks, cs...)
}

// nodeLabelKeys are the labels the report keeps per node.
var nodeLabelKeys = []string{thresholds.GPUProductLabel, "network.nvidia.com/operator.mofed.wait",
	"feature.node.kubernetes.io/pci-15b3.present", "nvidia.com/gpu.present"}

// writeResults stores the run's results (even when no check ran, so a
// nightly job always finds a file) and prints the table.
func writeResults(started time.Time, server, version string) (string, error) {
	collected.Lock()
	checks := append([]reports.Check(nil), collected.checks...)
	collected.Unlock()
	run := reports.Run{RunID: runID, Started: started, Finished: time.Now(),
		Cluster: reports.Cluster{Server: server, Version: version}, Checks: checks, Phases: phaseSnapshot()}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if list, err := kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: *flagNodeLabels}); err == nil {
		set, _ := loadThresholds()
		for _, n := range list.Items {
			run.Nodes = append(run.Nodes, nodeFacts(n, set))
		}
	}
	dir := *flagReportDir
	if dir == "" {
		dir = "rdmasuite-results"
	}
	path, err := filepath.Abs(filepath.Join(dir, "results-"+runID+".json"))
	if err != nil {
		return "", err
	}
	if err := reports.Write(path, run); err != nil {
		return path, err
	}
	// A stable name for the latest run, for scripts and `rdmasuite report`.
	latest := filepath.Join(filepath.Dir(path), "results.json")
	_ = os.Remove(latest)
	if err := os.Symlink(filepath.Base(path), latest); err != nil {
		return path, err
	}
	run.Sort()
	if len(run.Checks) > 0 {
		_ = reports.Table(os.Stdout, run)
	}
	printPhases(os.Stdout, run.Phases)
	return path, nil
}

func nodeFacts(n corev1.Node, set *thresholds.Set) reports.Node {
	f := reports.Node{Name: n.Name, Labels: map[string]string{}, Allocatable: map[string]string{},
		Kubelet: n.Status.NodeInfo.KubeletVersion, Kernel: n.Status.NodeInfo.KernelVersion}
	for _, k := range nodeLabelKeys {
		if v, ok := n.Labels[k]; ok {
			f.Labels[k] = v
		}
	}
	for name, q := range n.Status.Allocatable {
		if strings.Contains(string(name), "/") {
			f.Allocatable[string(name)] = q.String()
		}
	}
	if set != nil {
		if k, err := set.ForNode(n.Name, n.Labels, *flagSKU); err == nil {
			f.SKU = k.Name
		} else {
			f.SKU = "unknown: " + err.Error()
		}
	}
	return f
}

var thresholdsOnce struct {
	sync.Once
	set *thresholds.Set
	err error
}

// loadThresholds loads --thresholds (or the built-in file) once.
func loadThresholds() (*thresholds.Set, error) {
	thresholdsOnce.Do(func() { thresholdsOnce.set, thresholdsOnce.err = thresholds.Load(*flagThresholds) })
	return thresholdsOnce.set, thresholdsOnce.err
}

// advertising returns the selected nodes that advertise resource (allocatable > 0), sorted.
func advertising(nodes []corev1.Node, resource string) []corev1.Node {
	var out []corev1.Node
	for _, n := range nodes {
		if q, ok := n.Status.Allocatable[corev1.ResourceName(resource)]; ok && !q.IsZero() {
			out = append(out, n)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func notRun(id, variant, reason string, nodes ...string) reports.Check {
	return reports.Check{ID: id, Variant: variant, Nodes: nodes, Status: reports.NotRun, Reason: reason}
}

func describeChecks(cs []reports.Check) string {
	var b strings.Builder
	for _, c := range cs {
		if c.Status == reports.Pass {
			continue
		}
		fmt.Fprintf(&b, "\n  %s %s [%s] %s: %s%s", strings.ToUpper(string(c.Status)), c.ID, c.Variant,
			strings.Join(c.Nodes, ","), c.Diagnosis+c.Reason, map[bool]string{true: " — fix: " + c.Fix, false: ""}[c.Fix != ""])
	}
	return b.String()
}
