package cluster

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
)

// A run in a shared namespace (--namespace NS) lives in a namespace the
// operator created (with the Pod Security labels the probes need) beside
// other runs' objects and objects that are not the suite's. The suite never
// creates or deletes that namespace: it finds the run's objects by the run
// label and deletes exactly those, so its RBAC can be a Role in NS plus
// read-only cluster access to nodes.

// RunSelector is the label selector of one run's objects.
func RunSelector(runID string) string {
	return ManagedByLabel + "=" + ManagedBy + "," + RunLabel + "=" + runID
}

// ofRun says whether an object's labels are exactly the run's (a second
// check behind the label selector: a run's cleanup never deletes anything
// else, whatever a list returned).
func ofRun(m metav1.Object, runID string) bool {
	l := m.GetLabels()
	return runID != "" && l[RunLabel] == runID && l[ManagedByLabel] == ManagedBy
}

// CheckNamespace proves the existing namespace a run was given exists and
// is usable, before any test runs.
func CheckNamespace(ctx context.Context, cs kubernetes.Interface, ns string) error {
	fix := fmt.Sprintf("create it (kubectl create ns %s) or drop --namespace", ns)
	got, err := cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return fmt.Errorf("--namespace %s: the namespace does not exist (the suite never creates it in this mode): %s", ns, fix)
	case apierrors.IsForbidden(err):
		return fmt.Errorf("--namespace %s: not allowed to read the namespace (%v): if it does not exist, %s; if it does, grant the suite get on namespaces named %s (a Role in %s is enough)",
			ns, err, fix, ns, ns)
	case err != nil:
		return fmt.Errorf("--namespace %s: reading the namespace: %w", ns, err)
	case got.Status.Phase == corev1.NamespaceTerminating:
		return fmt.Errorf("--namespace %s: the namespace is being deleted (Terminating): %s once it is gone", ns, fix)
	}
	return nil
}

// RunObjects are the names of one run's objects in a shared namespace,
// and its cluster-scoped PVs.
type RunObjects struct {
	Namespace, RunID string
	Pods, Services   []string
	Jobs, PVCs, PVs  []string
	// Skipped names the kinds the suite may not list (forbidden): a run
	// without RBAC for a kind created none of it.
	Skipped []string
}

// Empty says the run has no object left.
func (o RunObjects) Empty() bool {
	return len(o.Pods)+len(o.Services)+len(o.Jobs)+len(o.PVCs)+len(o.PVs) == 0
}

// String is a one-line account: "2 pods, 1 service, 1 job".
func (o RunObjects) String() string {
	var parts []string
	for _, k := range []struct {
		n    int
		kind string
	}{{len(o.Pods), "pod"}, {len(o.Services), "service"}, {len(o.Jobs), "job"}, {len(o.PVCs), "PVC"}, {len(o.PVs), "PV"}} {
		if k.n == 0 {
			continue
		}
		s := fmt.Sprintf("%d %s", k.n, k.kind)
		if k.n > 1 {
			s += "s"
		}
		parts = append(parts, s)
	}
	if len(parts) == 0 {
		return "no object"
	}
	return strings.Join(parts, ", ")
}

// ListRunObjects finds one run's objects in ns by the run label: pods,
// services, jobs, PVCs, and the run's cluster-scoped PVs. Pods must be
// listable; a kind the suite may not list is recorded in Skipped.
func ListRunObjects(ctx context.Context, cs kubernetes.Interface, ns, runID string) (RunObjects, error) {
	out := RunObjects{Namespace: ns, RunID: runID}
	if runID == "" {
		return out, errors.New("no run id: refusing to select objects without one")
	}
	opts := metav1.ListOptions{LabelSelector: RunSelector(runID)}
	skip := func(kind string, err error) error {
		if apierrors.IsForbidden(err) {
			out.Skipped = append(out.Skipped, kind)
			return nil
		}
		return fmt.Errorf("list run %s's %s in %s (%s): %w", runID, kind, ns, opts.LabelSelector, err)
	}
	pods, err := cs.CoreV1().Pods(ns).List(ctx, opts)
	if err != nil {
		return out, fmt.Errorf("list run %s's pods in %s (%s): %w", runID, ns, opts.LabelSelector, err)
	}
	for _, p := range pods.Items {
		if ofRun(&p, runID) {
			out.Pods = append(out.Pods, p.Name)
		}
	}
	var errs []error
	if l, err := cs.CoreV1().Services(ns).List(ctx, opts); err != nil {
		errs = append(errs, skip("services", err))
	} else {
		for _, s := range l.Items {
			if ofRun(&s, runID) {
				out.Services = append(out.Services, s.Name)
			}
		}
	}
	if l, err := cs.BatchV1().Jobs(ns).List(ctx, opts); err != nil {
		errs = append(errs, skip("jobs", err))
	} else {
		for _, j := range l.Items {
			if ofRun(&j, runID) {
				out.Jobs = append(out.Jobs, j.Name)
			}
		}
	}
	if l, err := cs.CoreV1().PersistentVolumeClaims(ns).List(ctx, opts); err != nil {
		errs = append(errs, skip("persistentvolumeclaims", err))
	} else {
		for _, c := range l.Items {
			if ofRun(&c, runID) {
				out.PVCs = append(out.PVCs, c.Name)
			}
		}
	}
	if l, err := cs.CoreV1().PersistentVolumes().List(ctx, opts); err != nil {
		errs = append(errs, skip("persistentvolumes", err))
	} else {
		for _, v := range l.Items {
			if ofRun(&v, runID) {
				out.PVs = append(out.PVs, v.Name)
			}
		}
	}
	return out, errors.Join(errs...)
}

// DeleteRunObjects deletes exactly one run's objects in the shared
// namespace ns, found by the run label: its jobs (background propagation),
// pods (grace 0, so a node that stopped answering cannot hold them),
// services, PVCs and the run's PVs. It then waits, at most timeout, until
// the run's pods are gone. Other runs' objects and objects without the
// run's labels are never touched, and ns itself stays.
func DeleteRunObjects(ctx context.Context, cs kubernetes.Interface, ns, runID string, timeout time.Duration) (RunObjects, error) {
	objs, err := ListRunObjects(ctx, cs, ns, runID)
	if err != nil {
		return objs, err
	}
	var errs []error
	del := func(kind, name string, err error) {
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("delete run %s's %s %s/%s: %w", runID, kind, ns, name, err))
		}
	}
	zero := int64(0)
	bg := metav1.DeletePropagationBackground
	// Jobs first: their controller would replace a pod deleted under it.
	for _, n := range objs.Jobs {
		del("job", n, cs.BatchV1().Jobs(ns).Delete(ctx, n, metav1.DeleteOptions{PropagationPolicy: &bg}))
	}
	for _, n := range objs.Pods {
		del("pod", n, cs.CoreV1().Pods(ns).Delete(ctx, n, metav1.DeleteOptions{GracePeriodSeconds: &zero}))
	}
	for _, n := range objs.Services {
		del("service", n, cs.CoreV1().Services(ns).Delete(ctx, n, metav1.DeleteOptions{}))
	}
	for _, n := range objs.PVCs {
		del("PVC", n, cs.CoreV1().PersistentVolumeClaims(ns).Delete(ctx, n, metav1.DeleteOptions{}))
	}
	// The PVs have reclaim policy Retain: deleting them never touches the
	// data on the export.
	for _, n := range objs.PVs {
		if err := cs.CoreV1().PersistentVolumes().Delete(ctx, n, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("delete run %s's PV %s: %w (delete it by hand: kubectl delete pv %s)", runID, n, err, n))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return objs, err
	}
	sel := RunSelector(runID)
	var left int
	werr := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		l, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: sel})
		if err != nil {
			return false, nil
		}
		left = 0
		for _, p := range l.Items {
			if ofRun(&p, runID) {
				left++
			}
		}
		return left == 0, nil
	})
	if werr != nil {
		return objs, fmt.Errorf("%d pod(s) of run %s still in namespace %s after %s: delete them by hand (kubectl delete pod -n %s -l %s --grace-period=0 --force)",
			left, runID, ns, timeout, ns, sel)
	}
	return objs, nil
}

// MarkRunObjectsKept labels the run's pods in the shared namespace ns as
// kept (--keep-on-failure), with why as an annotation, so `rdmasuite
// cleanup --namespace` and `kubectl get pods -L rdmasuite.io/kept` tell
// why they are still there.
func MarkRunObjectsKept(ctx context.Context, cs kubernetes.Interface, ns, runID, why string) error {
	pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: RunSelector(runID)})
	if err != nil {
		return fmt.Errorf("list run %s's pods in %s: %w", runID, ns, err)
	}
	patch := fmt.Sprintf(`{"metadata":{"labels":{%q:"true"},"annotations":{"rdmasuite.io/kept-because":%q}}}`, KeptLabel, why)
	var errs []error
	for _, p := range pods.Items {
		if !ofRun(&p, runID) {
			continue
		}
		if _, err := cs.CoreV1().Pods(ns).Patch(ctx, p.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("label pod %s/%s kept: %w", ns, p.Name, err))
		}
	}
	return errors.Join(errs...)
}

// StaleRunsIn lists the runs with pods in the shared namespace ns (by the
// suite's labels on pods) whose oldest pod is at least olderThan old, or
// only runID's when it is not empty (any age). A run is kept when one of
// its pods carries the kept label. Sorted by run id.
func StaleRunsIn(ctx context.Context, cs kubernetes.Interface, ns string, olderThan time.Duration, runID string, now time.Time) ([]Stale, error) {
	sel := ManagedByLabel + "=" + ManagedBy
	if runID != "" {
		sel = RunSelector(runID)
	}
	list, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return nil, fmt.Errorf("list run pods in %s (%s): %w", ns, sel, err)
	}
	byRun := map[string]*Stale{}
	oldest := map[string]time.Time{}
	for _, p := range list.Items {
		id := p.Labels[RunLabel]
		if id == "" || p.Labels[ManagedByLabel] != ManagedBy || (runID != "" && id != runID) {
			continue
		}
		s, ok := byRun[id]
		if !ok {
			s = &Stale{Name: ns, RunID: id}
			byRun[id] = s
		}
		s.Pods++
		s.Kept = s.Kept || p.Labels[KeptLabel] == "true"
		if t := p.CreationTimestamp.Time; !ok || t.Before(oldest[id]) {
			oldest[id] = t
		}
	}
	var out []Stale
	for id, s := range byRun {
		s.Age = now.Sub(oldest[id])
		if runID == "" && s.Age < olderThan {
			continue
		}
		out = append(out, *s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].RunID < out[j].RunID })
	return out, nil
}
