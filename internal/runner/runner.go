package runner

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/rdmasuite/rdmasuite/internal/cluster"
	"github.com/rdmasuite/rdmasuite/internal/names"
	"github.com/rdmasuite/rdmasuite/internal/podrun"
	"github.com/rdmasuite/rdmasuite/reports"
)

// Phase names of the per-phase time breakdown.
const (
	PhasePodStart   = "pod start"
	PhaseExchange   = "exchange"
	PhaseMeasure    = "measurement"
	PhaseCollection = "collection"
	// PhasePodTeardown is the wait for the run's deleted pods to go
	// before its next pods start (awaitTerminated).
	PhasePodTeardown = "pod teardown"
)

// Runner runs one suite run's probes against a cluster and keeps its checks.
type Runner struct {
	Kube  kubernetes.Interface
	Cfg   Config
	RunID string
	// Progress, when set, gets one line per finished item of a feature
	// (a pair, a node, a world): what ran where, its outcome, k/n. It is
	// called from the items' goroutines, one call at a time.
	Progress func(line string)
	// Status, when set, gets the clean items (every check passed) instead
	// of Progress: a terminal shows them on one refreshing line, while an
	// item with any other outcome stays on Progress, a line of its own.
	Status func(line string)
	// Attach, when set, hands a client pod its server's address over
	// pods/attach, so that a pair's server and client pods start together
	// (handoff.go). Nil starts each client after its server has an IP.
	Attach podrun.Attacher
	// Exec, when set, runs every round's server and client runs of a
	// variant's paired features in one probe pod per node over pods/exec
	// (nodepods.go): one pod start per node instead of two per pair and
	// round. Nil (or no right to exec) falls back to Attach.
	Exec podrun.Execer

	handoffOnce sync.Once
	handoff     handoffMode
	handoffSaid atomic.Bool

	mu      sync.Mutex
	checks  []reports.Check
	phases  map[string]reports.Phase
	running map[int]runningFeature
	nextRun int
	// generation counts the changes a results snapshot would show.
	generation int
	// plan is the run's schedule of paired work (BuildPlan, Execute).
	plan *Plan
	// memlockRode are the memlock checks measured in a variant's node
	// pods by the run's plan, by variant label and node (Memlock
	// reads them instead of starting a pod of its own).
	memlockRode map[string]map[string][]reports.Check
}

// runningFeature is a feature that started and has not recorded its
// checks yet (Begin … end).
type runningFeature struct {
	check, variant string
	started        time.Time
}

// New returns a runner for run id on the cluster behind kube.
func New(kube kubernetes.Interface, cfg Config, runID string) *Runner {
	return &Runner{Kube: kube, Cfg: cfg, RunID: runID, phases: map[string]reports.Phase{}}
}

// Namespace is where every object of the run lives: the run's own
// namespace, or the existing one given with --namespace.
func (r *Runner) Namespace() string {
	if r.Cfg.Namespace != "" {
		return r.Cfg.Namespace
	}
	return cluster.RunNamespace(r.RunID)
}

// SharedNamespace says the run lives in an existing namespace
// (--namespace), where other runs' objects may be too: a kept failure's
// pods, or a run in progress.
func (r *Runner) SharedNamespace() bool { return r.Cfg.Namespace != "" }

// Object names one of the run's objects (names.Object). In a shared
// namespace the run id is part of the name's identity, so this run's
// names never clash with another run's there; in the run's own namespace
// names are as they always were.
func (r *Runner) Object(prefix string, parts ...string) string {
	return names.Object(prefix, r.scoped(parts)...)
}

// Name is a fixed object name, with the run id added in a shared
// namespace (see Object).
func (r *Runner) Name(name string) string {
	if r.SharedNamespace() {
		return name + "-" + r.RunID
	}
	return name
}

// scoped is parts, with the run id last in a shared namespace.
func (r *Runner) scoped(parts []string) []string {
	if !r.SharedNamespace() {
		return parts
	}
	return append(append([]string(nil), parts...), r.RunID)
}

// Begin marks a feature (its check label, e.g. "bandwidth", and variant)
// as running until end is called; Unfinished reports the ones a forced
// stop cut short, so their absence never reads as nothing to report.
func (r *Runner) Begin(check, variant string) (end func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.running == nil {
		r.running = map[int]runningFeature{}
	}
	id := r.nextRun
	r.nextRun++
	r.generation++
	r.running[id] = runningFeature{check: check, variant: variant, started: time.Now()}
	return func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		delete(r.running, id)
		r.generation++
	}
}

// RecordUnfinished records an error check for every feature still running
// (Begin without end): the run is being stopped (a deadline the feature
// did not honour in time, an interrupt), so its checks were never judged.
// why says what stopped it. It returns how many it recorded.
func (r *Runner) RecordUnfinished(why string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	running := r.runningInOrder()
	for _, f := range running {
		r.checks = append(r.checks, reports.Check{ID: f.check, Variant: f.variant, Status: reports.Error,
			Reason: fmt.Sprintf("the %s feature was still running after %s when the run stopped (%s): its checks were never judged",
				f.check, time.Since(f.started).Round(time.Second), why)})
	}
	return len(running)
}

// runningInOrder is the features still running, in the order they
// began; the caller holds r.mu.
func (r *Runner) runningInOrder() []runningFeature {
	ids := make([]int, 0, len(r.running))
	for id := range r.running {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	out := make([]runningFeature, len(ids))
	for i, id := range ids {
		out[i] = r.running[id]
	}
	return out
}

// Running says which features are still running and for how long
// ("bandwidth [shared-dev] for 3m10s"), in the order they started.
func (r *Runner) Running() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, f := range r.runningInOrder() {
		out = append(out, fmt.Sprintf("%s [%s] for %s", f.check, f.variant, time.Since(f.started).Round(time.Second)))
	}
	return out
}

// Generation changes whenever a check is recorded or a feature begins or
// ends: what a snapshot of the run would say has changed.
func (r *Runner) Generation() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.generation
}

// Record keeps checks for the results file.
func (r *Runner) Record(cs ...reports.Check) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.checks = append(r.checks, cs...)
	r.generation++
}

// Checks returns what was recorded so far.
func (r *Runner) Checks() []reports.Check {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]reports.Check(nil), r.checks...)
}

// AddPhase adds d to a phase of the time breakdown.
func (r *Runner) AddPhase(name string, d time.Duration) {
	if d <= 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	p := r.phases[name]
	p.Count++
	p.TotalSec += d.Seconds()
	p.MaxSec = max(p.MaxSec, d.Seconds())
	r.phases[name] = p
}

// Phases returns a copy of the time breakdown.
func (r *Runner) Phases() map[string]reports.Phase {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]reports.Phase{}
	for k, v := range r.phases {
		out[k] = v
	}
	return out
}

// Failing returns the checks that fail the run: fail, error, and not-run
// unless the operator allowed it (a warn passed its bar: not failing).
func (r *Runner) Failing(cs []reports.Check) []reports.Check {
	run := reports.Run{AllowNotRun: r.Cfg.AllowNotRun}
	var out []reports.Check
	for _, c := range cs {
		if c.Status.Passing() || run.Allowed(c) {
			continue
		}
		out = append(out, c)
	}
	return out
}

// advertises says whether n advertises resource (allocatable > 0).
func advertises(n corev1.Node, resource string) bool {
	q, ok := n.Status.Allocatable[corev1.ResourceName(resource)]
	return ok && !q.IsZero()
}

// SplitAdvertising separates the nodes that advertise resource
// (allocatable > 0) from those that do not. Both keep their order.
func SplitAdvertising(nodes []corev1.Node, resource string) (with, without []corev1.Node) {
	for _, n := range nodes {
		if advertises(n, resource) {
			with = append(with, n)
		} else {
			without = append(without, n)
		}
	}
	return with, without
}

// NotAdvertising is the failing row a selected node gets in a feature that
// needs a resource it does not advertise: nodes never vanish from a report.
func NotAdvertising(id, variant string, n corev1.Node, resource string) reports.Check {
	q := "absent"
	if v, ok := n.Status.Allocatable[corev1.ResourceName(resource)]; ok {
		q = v.String()
	}
	return reports.Check{ID: id, Variant: variant, Nodes: []string{n.Name}, Status: reports.Fail,
		Title: "the node advertises the resource the feature needs",
		Diagnosis: fmt.Sprintf("node %s is selected but does not advertise %s (allocatable: %s), so nothing could be measured on it",
			n.Name, resource, q),
		Fix: fmt.Sprintf("check the device plugin and driver pods on %s (kubectl describe node %s: allocatable, taints); "+
			"or leave the node out with --node-selector if it is not an RDMA node", n.Name, n.Name)}
}

// NotRun is a check that could not run, with the reason.
func NotRun(id, variant, reason string, nodes ...string) reports.Check {
	return reports.Check{ID: id, Variant: variant, Nodes: nodes, Status: reports.NotRun, Reason: reason}
}

// Collect runs fn(0..n-1) concurrently, at most Concurrency at a time
// (0: all at once),
// stamps each call's checks with how long it took, and returns them in index
// order (stable reports, whatever order the calls finish in).
func (r *Runner) Collect(n int, fn func(i int) []reports.Check) []reports.Check {
	return r.collect(n, fn, nil)
}

// roundProgress is where a paired run is: its round, the pairs of every
// round and how many finished, and when it started (for the ETA).
type roundProgress struct {
	round, rounds, done, total int
	start                      time.Time
}

// text is "round r/R, pairs d/T, E elapsed, ETA X" (no ETA once done; the
// ETA assumes the pairs still to run take as long as those that ran).
func (p *roundProgress) text() string {
	el := time.Since(p.start)
	s := fmt.Sprintf("round %d/%d, pairs %d/%d, %s elapsed", p.round, p.rounds, p.done, p.total, el.Round(time.Second))
	if p.done > 0 && p.done < p.total {
		s += ", ETA " + (el / time.Duration(p.done) * time.Duration(p.total-p.done)).Round(time.Second).String()
	}
	return s
}

// collect is Collect with, for paired runs, rp's round and pair counts in
// each progress line.
func (r *Runner) collect(n int, fn func(i int) []reports.Check, rp *roundProgress) []reports.Check {
	results := make([][]reports.Check, n)
	var pmu sync.Mutex
	done := 0
	parallel(n, r.Cfg.Concurrency, func(i int) {
		start := time.Now()
		cs := fn(i)
		for j := range cs {
			cs[j].Duration = time.Since(start).Seconds()
		}
		results[i] = cs
		if r.Progress != nil {
			pmu.Lock()
			done++
			where := fmt.Sprintf("%d/%d", done, n)
			if rp != nil {
				rp.done++
				where = rp.text()
			}
			line := progressLine(cs, where, time.Since(start))
			if r.Status != nil && allPass(cs) {
				r.Status(line)
			} else {
				r.Progress(line)
			}
			pmu.Unlock()
		}
	})
	var out []reports.Check
	for _, cs := range results {
		out = append(out, cs...)
	}
	return out
}

func allPass(cs []reports.Check) bool {
	for _, c := range cs {
		if !c.Status.Passing() {
			return false
		}
	}
	return len(cs) > 0
}

// progressLine is one finished item: its checks' id and variant, where
// it ran (client → server for a pair), the outcome counted by status, its
// time and how far the feature is.
func progressLine(cs []reports.Check, where string, took time.Duration) string {
	if len(cs) == 0 {
		return fmt.Sprintf("%s: no check (%.1f s)", where, took.Seconds())
	}
	c := cs[0]
	nodes := reports.NodesText(c)
	count := map[reports.Status]int{}
	for _, x := range cs {
		count[x.Status]++
	}
	var parts []string
	for _, st := range []reports.Status{reports.Fail, reports.Error, reports.NotRun, reports.Warn, reports.Pass} {
		if count[st] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", count[st], st))
		}
	}
	id := c.ID
	if len(cs) > 1 && cs[len(cs)-1].ID != c.ID {
		id += " …"
	}
	return fmt.Sprintf("[%s %s] %s: %s: %s (%.1f s)", id, c.Variant, where, nodes, strings.Join(parts, ", "), took.Seconds())
}

// parallel runs fn(0..n-1), at most limit at a time, and waits for all.
func parallel(n, limit int, fn func(i int)) {
	if limit <= 0 {
		limit = n // unlimited: every item at once (a round's pairs share no node)
	}
	sem := make(chan struct{}, max(limit, 1))
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			fn(i)
		}()
	}
	wg.Wait()
}

// Describe is the one-line-per-check text an assertion prints.
func Describe(cs []reports.Check) string {
	var b strings.Builder
	for _, c := range cs {
		if c.Status == reports.Pass {
			continue
		}
		rail := ""
		if c.Rail != "" {
			rail = " {" + c.Rail + "}"
		}
		fmt.Fprintf(&b, "\n  %s %s [%s]%s %s: %s", strings.ToUpper(string(c.Status)), c.ID, c.Variant, rail,
			strings.Join(c.Nodes, ","), c.Diagnosis+c.Reason)
		if c.Fix != "" {
			b.WriteString(" — fix: " + c.Fix)
		}
	}
	return b.String()
}
