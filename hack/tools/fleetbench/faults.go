package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/rdmasuite/rdmasuite/internal/pairing"
	"github.com/rdmasuite/rdmasuite/internal/runner"
)

// notReadyLabel marks a node this bench turned NotReady: kwok's
// node-initialize stage (hack/fleet-bench.sh) skips nodes that carry it,
// or it would set their Ready condition back to True at once.
const notReadyLabel = "fleetbench.rdmasuite.io/notready"

// faultOpts are the faults injected into a default-path run, half a pair
// time after its first exec (round 1's runs are under way then).
type faultOpts struct {
	deletePct float64 // share of the node pods deleted (grace 0)
	notReady  int     // nodes whose Ready condition turns False
	pairTime  time.Duration
}

func (f faultOpts) any() bool { return f.deletePct > 0 || f.notReady > 0 }

// each is one faultOpts per fault asked.
func (f faultOpts) each() []faultOpts {
	var out []faultOpts
	if f.deletePct > 0 {
		out = append(out, faultOpts{deletePct: f.deletePct, pairTime: f.pairTime})
	}
	if f.notReady > 0 {
		out = append(out, faultOpts{notReady: f.notReady, pairTime: f.pairTime})
	}
	return out
}

// faultRun is what was injected, and when.
type faultRun struct {
	mu               sync.Mutex
	deleted          []string // nodes whose pod was deleted
	notReady         []string
	at               time.Time
	errs             []string
	done             chan struct{}
	cancel           context.CancelFunc
	deleteN, notRdyN int
}

// startFaults picks the nodes (spread over the fleet: deleted pods from the
// front, NotReady nodes from the back, never the same node) and injects
// the faults from a goroutine once round 1 is half a pair time old.
func startFaults(ctx context.Context, setup kubernetes.Interface, r *runner.Runner, v runner.Variant, s scenario, sched [][]pairing.Pair,
	xs *execStats, fo faultOpts) *faultRun {
	_ = sched
	fr := &faultRun{done: make(chan struct{})}
	ctx, fr.cancel = context.WithCancel(ctx)
	names := make([]string, s.n)
	for i := range names {
		names[i] = fmt.Sprintf("fleet-%04d", i)
	}
	var del, nr []string
	if fo.deletePct > 0 {
		k := max(1, int(math.Round(fo.deletePct/100*float64(s.n))))
		step := max(1, s.n/k)
		for i := 0; i < s.n && len(del) < k; i += step {
			del = append(del, names[i])
		}
	}
	for i := s.n - 1; i >= 0 && len(nr) < fo.notReady; i -= max(1, s.n/max(fo.notReady, 1)) {
		if !slices.Contains(del, names[i]) {
			nr = append(nr, names[i])
		}
	}
	fr.deleteN, fr.notRdyN = len(del), len(nr)
	go func() {
		defer close(fr.done)
		// Wait for the first exec: the node pods run and round 1 began.
		for xs == nil || xs.current() < 0 {
			select {
			case <-ctx.Done():
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(fo.pairTime / 2):
		}
		fr.mu.Lock()
		defer fr.mu.Unlock()
		fr.at = time.Now()
		zero := int64(0)
		for _, n := range del {
			pod := r.Object("pair-"+v.Name+"-n", n, v.Resource)
			if err := setup.CoreV1().Pods(r.Namespace()).Delete(ctx, pod, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
				fr.errs = append(fr.errs, fmt.Sprintf("delete %s: %v", pod, err))
				continue
			}
			fr.deleted = append(fr.deleted, n)
		}
		for _, n := range nr {
			if err := setNotReady(ctx, setup, n); err != nil {
				fr.errs = append(fr.errs, fmt.Sprintf("NotReady %s: %v", n, err))
				continue
			}
			fr.notReady = append(fr.notReady, n)
		}
	}()
	return fr
}

// setNotReady labels the node (so kwok leaves it alone) and sets its
// Ready condition False, as a node controller would after its kubelet
// stopped posting status.
func setNotReady(ctx context.Context, cs kubernetes.Interface, node string) error {
	label, _ := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]string{notReadyLabel: "true"}}})
	if _, err := cs.CoreV1().Nodes().Patch(ctx, node, types.StrategicMergePatchType, label, metav1.PatchOptions{}); err != nil {
		return err
	}
	now := metav1.Now()
	cond, _ := json.Marshal(map[string]any{"status": map[string]any{"conditions": []map[string]any{{
		"type": "Ready", "status": "False", "reason": "NodeStatusUnknown", "message": "fleet bench fault: Kubelet stopped posting node status.",
		"lastHeartbeatTime": now, "lastTransitionTime": now}}}})
	_, err := cs.CoreV1().Nodes().Patch(ctx, node, types.StrategicMergePatchType, cond, metav1.PatchOptions{}, "status")
	return err
}

// stop waits for the injection (or ends it when the run ended first).
func (fr *faultRun) stop() {
	fr.cancel()
	<-fr.done
}

// restore makes the NotReady nodes Ready again for the next scenario:
// without the label, kwok's node-initialize stage sets Ready at once.
func (fr *faultRun) restore(ctx context.Context, cs kubernetes.Interface) {
	patch := []byte(`{"metadata":{"labels":{"` + notReadyLabel + `":null}}}`)
	for _, n := range fr.notReady {
		if _, err := cs.CoreV1().Nodes().Patch(ctx, n, types.StrategicMergePatchType, patch, metav1.PatchOptions{}); err != nil {
			fmt.Printf("fleetbench: could not unlabel %s: %v\n", n, err)
		}
	}
	for t0 := time.Now(); time.Since(t0) < time.Minute; time.Sleep(250 * time.Millisecond) {
		ready := 0
		for _, n := range fr.notReady {
			node, err := cs.CoreV1().Nodes().Get(ctx, n, metav1.GetOptions{})
			if err != nil {
				continue
			}
			for _, c := range node.Status.Conditions {
				if c.Type == "Ready" && c.Status == "True" {
					ready++
				}
			}
		}
		if ready == len(fr.notReady) {
			return
		}
	}
	fmt.Printf("fleetbench: nodes %s did not turn Ready again within a minute\n", strings.Join(fr.notReady, ", "))
}

// printFaults says, per fault, which nodes it hit, what the runner made of
// those nodes (their checks' status and reason, the first 3 of each),
// the run's wall time against the same run without faults, and the pods
// left behind.
func (m *measurement) printFaults(s scenario, clean *measurement) {
	fr := m.faults
	fmt.Printf("\nfaults, %s pairing, %d nodes: injected %.2f s after the run began (half a pair time into round 1); wall %.1f s against %.1f s without; checks %s; pods left %d (gone after %.1f s)\n",
		s.mode, s.n, fr.at.Sub(m.start).Seconds(), m.wall.Seconds(), clean.wall.Seconds(), statusCounts(m), m.podsLeft, m.goneAfter.Seconds())
	for _, e := range fr.errs {
		fmt.Println("  could not inject: " + e)
	}
	for _, line := range m.progress {
		fmt.Println("  runner: " + line)
	}
	if x := m.exec; x != nil {
		fmt.Printf("  exec: %d streams, %d errors, %d non-zero exits; first failure: %s\n", x.total, x.errs, x.nonZero, x.firstErr)
	}
	show := func(what string, nodes []string) {
		if len(nodes) == 0 {
			return
		}
		fmt.Printf("  %s (%d): %s\n", what, len(nodes), strings.Join(nodes, ", "))
		for _, n := range nodes {
			var rows []string
			for _, c := range m.all {
				if !slices.Contains(c.Nodes, n) {
					continue
				}
				why := c.Reason
				if why == "" {
					why = c.Diagnosis
				}
				if len(why) > 300 {
					why = why[:300] + "…"
				}
				rows = append(rows, fmt.Sprintf("%s %s [%s]: %s", c.ID, c.Rail, c.Status, why))
			}
			fmt.Printf("    %s: %d check(s)\n", n, len(rows))
			for _, row := range rows[:min(3, len(rows))] {
				fmt.Println("      " + row)
			}
		}
	}
	show(fmt.Sprintf("node pods deleted (-fault-delete-pct, %d asked)", fr.deleteN), fr.deleted)
	show(fmt.Sprintf("nodes NotReady (-fault-notready, %d asked)", fr.notRdyN), fr.notReady)
}

func statusCounts(m *measurement) string {
	var parts []string
	for st, n := range m.status {
		parts = append(parts, fmt.Sprintf("%s %d", st, n))
	}
	slices.Sort(parts)
	return strings.Join(parts, ", ")
}
