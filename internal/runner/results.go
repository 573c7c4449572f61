package runner

import (
	"bytes"
	"context"
	"fmt"
	"github.com/rdmasuite/rdmasuite/internal/atomicfile"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/rdmasuite/rdmasuite/reports"
	"github.com/rdmasuite/rdmasuite/thresholds"
)

// nodeLabelKeys are the labels the report keeps per node.
var nodeLabelKeys = []string{thresholds.GPUProductLabel, "network.nvidia.com/operator.mofed.wait",
	"feature.node.kubernetes.io/pci-15b3.present", "nvidia.com/gpu.present"}

// Results is the run as the results model holds it: every recorded check,
// the selected nodes' facts, the phases and the not-runs the operator
// allowed (so `rdmasuite report` reaches the same verdict later).
func (r *Runner) Results(started time.Time, server, version string) reports.Run {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	return r.Snapshot(started, server, version, r.NodeFacts(ctx))
}

// NodeFacts are the facts of the nodes the run covers, however chosen
// (none when the API does not answer).
func (r *Runner) NodeFacts(ctx context.Context) []reports.Node {
	var facts []reports.Node
	if nodes, err := r.SelectedNodes(ctx); err == nil {
		for _, n := range nodes {
			facts = append(facts, r.nodeFacts(n))
		}
	}
	return facts
}

// Snapshot is Results with the node facts given: the checks recorded so
// far, judged as the final results are.
func (r *Runner) Snapshot(started time.Time, server, version string, nodes []reports.Node) reports.Run {
	run := reports.Run{RunID: r.RunID, Started: started, Finished: time.Now(),
		Cluster: reports.Cluster{Server: server, Version: version}, Checks: r.Checks(), Phases: r.Phases(),
		AllowNotRun: r.Cfg.AllowNotRun, Nodes: nodes}
	reports.AttachHostCauses(&run)
	reports.MarkPeerOutliers(&run) // a pass far below its SKU's peers reads warn
	run.Sort()
	return run
}

func (r *Runner) nodeFacts(n corev1.Node) reports.Node {
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
	if r.Cfg.Thresholds != nil {
		if k, err := r.Cfg.Thresholds.ForNode(n.Name, n.Labels, r.Cfg.SKU); err == nil {
			f.SKU, f.ThresholdsFile = k.Name, k.File()
		} else {
			f.SKU = "unknown: " + err.Error()
		}
	}
	return f
}

// WriteResults stores run as dir/results-<run>.json (atomically) and points
// dir/results.json at it, for scripts and `rdmasuite report`.
func WriteResults(dir string, run reports.Run) (string, error) {
	dir = ReportDir(dir)
	path, err := filepath.Abs(filepath.Join(dir, "results-"+run.RunID+".json"))
	if err != nil {
		return "", err
	}
	// The link goes first: if this write fails, no script may read an
	// older run's verdict as this one's.
	latest := filepath.Join(filepath.Dir(path), "results.json")
	_ = os.Remove(latest)
	if err := reports.Write(path, run); err != nil {
		return path, err
	}
	return path, os.Symlink(filepath.Base(path), latest)
}

// ReportDir is --report-dir, or its default.
func ReportDir(flag string) string {
	if flag == "" {
		return "rdmasuite-results"
	}
	return flag
}

// WritePage writes run's acceptance page (reports.HTML, no baseline)
// beside its results, dir/report-<run>.html, and points dir/report.html
// at it; it returns the page's path.
func WritePage(dir string, run reports.Run) (string, error) {
	var page bytes.Buffer
	if err := reports.HTML(&page, run, nil); err != nil {
		return "", fmt.Errorf("render the HTML report: %w", err)
	}
	path := filepath.Join(dir, "report-"+run.RunID+".html")
	latest := filepath.Join(dir, "report.html")
	_ = os.Remove(latest)
	if err := atomicfile.Write(path, page.Bytes()); err != nil {
		return path, err
	}
	return path, os.Symlink(filepath.Base(path), latest)
}

// Reconcile makes go test's exit code and the run's results tell one
// story before either is written:
//   - a failure outside the checks (a t.Fatal, an interrupt, the watchdog,
//     features that never started) becomes a run/incomplete error row, so
//     the results never read PASSED when go test did not;
//   - checks that did not pass never leave exit 0;
//   - a run that recorded no check at all (a --labels typo, nothing could
//     start) measured nothing: exit 2, never 0.
func Reconcile(res reports.Run, code int) (reports.Run, int) {
	if code != 0 && res.ExitCode() == reports.ExitPassed {
		why := fmt.Sprintf("go test failed (exit %d) outside the recorded checks: see its output", code)
		if code == 130 {
			why = "interrupted (SIGINT/SIGTERM/SIGHUP) before every feature finished"
		}
		res.Checks = append(res.Checks, reports.Check{ID: "run/incomplete", Title: "the run finished every feature it was asked for",
			Status: reports.Error, Reason: why})
	}
	if len(res.Checks) == 0 {
		return res, max(code, reports.ExitBroken)
	}
	if rc := res.ExitCode(); code == 0 {
		code = rc
	}
	return res, code
}

// Deadline is when the run stops starting work so that teardown (pod and
// namespace deletion, the results file) finishes before `go test
// -timeout` panics the binary, which would skip every cleanup. It keeps a
// tenth of the timeout, at least 1 minute and at most 5, for teardown; a
// timeout under 3 minutes keeps a third. ok is false without a timeout.
func Deadline(start time.Time, testTimeout time.Duration) (deadline time.Time, reserve time.Duration, ok bool) {
	if testTimeout <= 0 {
		return time.Time{}, 0, false
	}
	reserve = min(max(testTimeout/10, time.Minute), 5*time.Minute)
	if testTimeout < 3*time.Minute {
		reserve = testTimeout / 3
	}
	return start.Add(testTimeout - reserve), reserve, true
}

// ThresholdsHeader is the run header's account of who judges whom: one
// line per SKU naming its file and its nodes (cut at fleet scale; the
// results file names every node's SKU and file), followed, for a SKU with
// calibrated floors (rdmasuite thresholds calibrate), by one naming them
// with their values; and one per node that no SKU matches, with why. Nothing when the nodes cannot be listed: the
// features say so in their rows.
func (r *Runner) ThresholdsHeader(ctx context.Context) []string {
	if r.Cfg.Thresholds == nil {
		return nil
	}
	nodes, err := r.SelectedNodes(ctx)
	if err != nil {
		return []string{"thresholds: the selected nodes could not be listed, so which SKU judges them is not known yet: " + err.Error()}
	}
	labels := make(map[string]map[string]string, len(nodes))
	for _, n := range nodes {
		labels[n.Name] = n.Labels
	}
	groups, unjudged := r.Cfg.Thresholds.Judges(labels, r.Cfg.SKU)
	var out []string
	for _, g := range groups {
		out = append(out, "thresholds: "+g.String())
		// Floors rdmasuite thresholds calibrate wrote are named with their
		// values: a bar from the fleet's own figures, not a public one.
		if k, err := r.Cfg.Thresholds.Lookup(g.SKU); err == nil {
			if cal := k.CalibratedFloors(); len(cal) > 0 {
				out = append(out, fmt.Sprintf("thresholds: calibrated floors of %s (%s): %s", g.SKU, g.File, strings.Join(cal, ", ")))
			}
		}
	}
	names := make([]string, 0, len(unjudged))
	for n := range unjudged {
		names = append(names, n)
	}
	sort.Strings(names)
	for i, n := range names {
		if i == 5 {
			out = append(out, fmt.Sprintf("thresholds: …and %d more node(s) without a SKU (the results file names each)", len(names)-5))
			break
		}
		out = append(out, "thresholds: no SKU for "+n+": "+unjudged[n])
	}
	return out
}
