package nodemark

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	authv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"github.com/rdmasuite/rdmasuite/reports"
)

// Options of Apply: what to write on the nodes.
type Options struct {
	// Annotate writes the annotations (--node-annotations).
	Annotate bool
	// ValidFor is how long a mark is valid (--node-mark-valid-for).
	ValidFor time.Duration
	// Taint adds TaintKey to nodes whose failure is their own and removes
	// it from nodes that pass (--taint-failed-nodes).
	Taint bool
	// Effect of the taint (--taint-effect): NoSchedule or PreferNoSchedule.
	Effect corev1.TaintEffect
	// Concurrency: nodes written at the same time (default 8).
	Concurrency int
}

// Enabled reports whether Apply has anything to do.
func (o Options) Enabled() bool { return o.Annotate || o.Taint }

// ParseEffect checks --taint-effect. NoExecute is refused: a suite run
// must not evict workloads.
func ParseEffect(s string) (corev1.TaintEffect, error) {
	switch e := corev1.TaintEffect(s); e {
	case corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule:
		return e, nil
	}
	return "", fmt.Errorf("--taint-effect %q: want NoSchedule or PreferNoSchedule (NoExecute is refused: the suite never evicts workloads)", s)
}

// Validate checks the options before the run.
func (o Options) Validate() error {
	if o.Annotate && o.ValidFor <= 0 {
		return fmt.Errorf("--node-mark-valid-for %s: give a positive duration, e.g. 36h", o.ValidFor)
	}
	if o.Taint {
		if _, err := ParseEffect(string(o.Effect)); err != nil {
			return err
		}
	}
	return nil
}

// Summary is what Apply did.
type Summary struct {
	Annotated []string // nodes whose annotations were written
	Tainted   []string // nodes the suite's taint was added to (or updated on)
	Untainted []string // nodes the suite's taint was removed from
}

func (s Summary) String() string {
	return fmt.Sprintf("annotated %d node(s), tainted %s, untainted %s", len(s.Annotated), list(s.Tainted), list(s.Untainted))
}

func list(ns []string) string {
	if len(ns) == 0 {
		return "none"
	}
	return strings.Join(ns, ", ")
}

// Apply writes run's marks on the nodes: the annotations with a JSON merge
// patch of metadata.annotations alone (other annotations, labels and the
// rest of the node untouched), and the taint with a merge patch of
// spec.taints guarded by the node's resourceVersion (retried on conflict),
// which changes no taint but the suite's own. Every node is tried; the
// error joins every node's error, with a hint when RBAC forbade it.
func Apply(ctx context.Context, cs kubernetes.Interface, run reports.Run, o Options) (Summary, error) {
	var s Summary
	if !o.Enabled() {
		return s, nil
	}
	if o.Effect == "" {
		o.Effect = corev1.TaintEffectNoSchedule
	}
	if err := o.Validate(); err != nil {
		return s, err
	}
	marks := Compute(run)
	n := o.Concurrency
	if n < 1 {
		n = 8
	}
	var (
		mu   sync.Mutex
		errs []error
		wg   sync.WaitGroup
		sem  = make(chan struct{}, n)
	)
	fail := func(err error) {
		mu.Lock()
		errs = append(errs, err)
		mu.Unlock()
	}
	for _, m := range marks {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			if o.Annotate {
				if err := annotate(ctx, cs, m.Node, m.Annotations(run, o.ValidFor)); err != nil {
					fail(explain(m.Node, "annotating", err))
				} else {
					mu.Lock()
					s.Annotated = append(s.Annotated, m.Node)
					mu.Unlock()
				}
			}
			if !o.Taint {
				return
			}
			var want *corev1.Taint
			switch {
			case m.Attributable():
				want = &corev1.Taint{Key: TaintKey, Value: taintValue(run.RunID), Effect: o.Effect}
			case m.Outcome == Pass:
			default:
				return // failed without blame, or not measured: keep what it had
			}
			changed, err := setTaint(ctx, cs, m.Node, want)
			if err != nil {
				fail(explain(m.Node, "tainting", err))
				return
			}
			if changed {
				mu.Lock()
				if want != nil {
					s.Tainted = append(s.Tainted, m.Node)
				} else {
					s.Untainted = append(s.Untainted, m.Node)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	for _, l := range [][]string{s.Annotated, s.Tainted, s.Untainted} {
		slices.Sort(l)
	}
	slices.SortFunc(errs, func(a, b error) int { return strings.Compare(a.Error(), b.Error()) })
	return s, errors.Join(errs...)
}

// annotate merge-patches metadata.annotations of node with a (a nil value
// deletes the key).
func annotate(ctx context.Context, cs kubernetes.Interface, node string, a map[string]*string) error {
	body, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": a}})
	if err != nil {
		return err
	}
	_, err = cs.CoreV1().Nodes().Patch(ctx, node, types.MergePatchType, body, metav1.PatchOptions{FieldManager: "rdmasuite"})
	return err
}

// setTaint makes the suite's taint on node want (nil: absent), leaving
// every other taint as it is. spec.taints is a list a patch replaces
// whole, so the patch carries the node's resourceVersion: a taint added by
// someone else in between is a conflict, and the read-modify-write is
// retried, never lost. changed: the node was written.
func setTaint(ctx context.Context, cs kubernetes.Interface, node string, want *corev1.Taint) (bool, error) {
	changed := false
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := cs.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return err
		}
		var taints, ours []corev1.Taint
		for _, t := range cur.Spec.Taints {
			if t.Key == TaintKey {
				ours = append(ours, t)
			} else {
				taints = append(taints, t)
			}
		}
		if (want == nil && len(ours) == 0) ||
			(want != nil && len(ours) == 1 && ours[0].Value == want.Value && ours[0].Effect == want.Effect) {
			changed = false
			return nil // as wanted already
		}
		if want != nil {
			taints = append(taints, *want)
		}
		if taints == nil {
			taints = []corev1.Taint{}
		}
		body, err := json.Marshal(map[string]any{
			"metadata": map[string]any{"resourceVersion": cur.ResourceVersion},
			"spec":     map[string]any{"taints": taints},
		})
		if err != nil {
			return err
		}
		if _, err := cs.CoreV1().Nodes().Patch(ctx, node, types.MergePatchType, body, metav1.PatchOptions{FieldManager: "rdmasuite"}); err != nil {
			return err
		}
		changed = true
		return nil
	})
	return changed, err
}

// taintValue is the run id when it is a valid label value (taint values
// are), else empty.
func taintValue(runID string) string {
	if len(validation.IsValidLabelValue(runID)) == 0 {
		return runID
	}
	return ""
}

// explain names the node and, when RBAC forbade the write, the fix.
func explain(node, what string, err error) error {
	if apierrors.IsForbidden(err) {
		return fmt.Errorf("%s node %s: %w (the runner needs patch on nodes: kubectl apply -k an overlay with the suites/deploy/components/node-marks component)", what, node, err)
	}
	return fmt.Errorf("%s node %s: %w", what, node, err)
}

// Check asks the API server, before the run, whether the suite may do what
// o asks at the run's end (get and patch nodes), so that missing RBAC fails
// in seconds, not after the run. A review that cannot be made is a warning.
func Check(ctx context.Context, cs kubernetes.Interface, o Options, warn func(string)) error {
	if !o.Enabled() {
		return nil
	}
	verbs := []string{"patch"}
	if o.Taint {
		verbs = []string{"get", "patch"}
	}
	var denied []string
	for _, verb := range verbs {
		r, err := cs.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authv1.SelfSubjectAccessReview{Spec: authv1.SelfSubjectAccessReviewSpec{
			ResourceAttributes: &authv1.ResourceAttributes{Verb: verb, Resource: "nodes"}}}, metav1.CreateOptions{})
		if err != nil {
			warn(fmt.Sprintf("--node-annotations/--taint-failed-nodes: could not ask the API server whether the suite may %s nodes (%v); the run's end will tell", verb, err))
			continue
		}
		if !r.Status.Allowed {
			denied = append(denied, verb)
		}
	}
	if len(denied) > 0 {
		return fmt.Errorf("--node-annotations/--taint-failed-nodes: the suite may not %s nodes, so the run's end could not mark them: "+
			"grant it (in-cluster: add the suites/deploy/components/node-marks component to the overlay) or leave the flags off", strings.Join(denied, " or "))
	}
	return nil
}

// Finish is the run's end for the nodes: Apply with a timeout, what it did
// said on out, an error said on errw and folded into the exit code the way
// the suite's other publishers (--pushgateway, --results-configmap) do: it
// never hides the run's verdict, so a run that did not pass keeps its exit
// code and only a passing run's 0 becomes reports.ExitBroken (a pass whose
// nodes were not marked is not taken for one that was).
func Finish(ctx context.Context, cs kubernetes.Interface, run reports.Run, o Options, timeout time.Duration, code int, out, errw io.Writer) int {
	if !o.Enabled() {
		return code
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	s, err := Apply(ctx, cs, run, o)
	what := "--node-annotations"
	if o.Taint {
		what = "--taint-failed-nodes"
		if o.Annotate {
			what = "--node-annotations/--taint-failed-nodes"
		}
	}
	if len(s.Annotated)+len(s.Tainted)+len(s.Untainted) > 0 || err == nil {
		fmt.Fprintf(out, "rdmasuite: %s: %s\n", what, s)
	}
	if err == nil {
		return code
	}
	fmt.Fprintf(errw, "rdmasuite: %s: %v\n", what, err)
	if code == reports.ExitPassed {
		fmt.Fprintf(errw, "rdmasuite: exit %d, not 0: the checks passed, but %s failed (see above)\n", reports.ExitBroken, what)
		return reports.ExitBroken
	}
	fmt.Fprintf(errw, "rdmasuite: the run's own exit %d stands\n", code)
	return code
}
