package fate

import (
	"context"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// Watch follows one namespace's pods of a label selector and a set of
// nodes through two informers: one list and one watch each for the whole
// run, whatever the fleet's size, and re-listed by client-go's reflector
// after the API server restarts or a watch breaks (streaming lists where
// the client supports them). It keeps only what was lost and why.
type Watch struct {
	mu       sync.Mutex
	pods     map[string]string // lost pod → why
	nodes    map[string]string // lost node → why
	cordoned map[string]string // cordoned node → what it says
	wanted   map[string]bool   // the nodes followed
	changed  chan struct{}     // closed and replaced on every loss
	stop     context.CancelFunc
	synced   []cache.InformerSynced
	now      func() time.Time
}

// Start follows the pods of namespace that match podSelector and the
// nodes named (listed and watched by nodeSelector, a label selector that
// matches them all, "" for every node), until Stop (or ctx) ends it. A
// watch that cannot list (no right to, the API unreachable) knows
// nothing: Lost says "" and the runner's failures speak for themselves.
func Start(ctx context.Context, kube kubernetes.Interface, namespace, podSelector, nodeSelector string, nodes []string) *Watch {
	ctx, stop := context.WithCancel(ctx)
	w := newWatch(nodes)
	w.stop = stop
	pc := follow[*corev1.PodList](kube, kube.CoreV1().Pods(namespace), podSelector, &corev1.Pod{}, w.pod)
	nc := follow[*corev1.NodeList](kube, kube.CoreV1().Nodes(), nodeSelector, &corev1.Node{}, w.node)
	w.synced = []cache.InformerSynced{pc.HasSynced, nc.HasSynced}
	go pc.RunWithContext(ctx)
	go nc.RunWithContext(ctx)
	return w
}

// listWatcher is what the typed clients of pods and nodes both offer.
type listWatcher[L runtime.Object] interface {
	List(ctx context.Context, o metav1.ListOptions) (L, error)
	Watch(ctx context.Context, o metav1.ListOptions) (watch.Interface, error)
}

// follow makes an informer over api's objects of selector that hands each
// object seen (and whether it was deleted) to on.
func follow[L runtime.Object](kube kubernetes.Interface, api listWatcher[L], selector string, obj runtime.Object, on func(o any, deleted bool)) cache.Controller {
	_, c := cache.NewInformerWithOptions(cache.InformerOptions{
		ListerWatcher: cache.ToListWatcherWithWatchListSemantics(&cache.ListWatch{
			ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
				o.LabelSelector = selector
				return api.List(ctx, o)
			},
			WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
				o.LabelSelector = selector
				return api.Watch(ctx, o)
			},
		}, kube),
		ObjectType: obj,
		Handler: cache.ResourceEventHandlerFuncs{
			AddFunc:    func(o any) { on(o, false) },
			UpdateFunc: func(_, o any) { on(o, false) },
			DeleteFunc: func(o any) { on(o, true) },
		},
	})
	return c
}

func newWatch(nodes []string) *Watch {
	w := &Watch{pods: map[string]string{}, nodes: map[string]string{}, cordoned: map[string]string{},
		wanted: map[string]bool{}, changed: make(chan struct{}), now: time.Now, stop: func() {}}
	for _, n := range nodes {
		w.wanted[n] = true
	}
	return w
}

// Stop ends the watch.
func (w *Watch) Stop() { w.stop() }

// WaitSynced waits (at most limit) until both informers have listed once:
// a loss before the first pair is then known to it.
func (w *Watch) WaitSynced(ctx context.Context, limit time.Duration) bool {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	return cache.WaitForCacheSync(ctx.Done(), w.synced...)
}

func (w *Watch) pod(o any, deleted bool) {
	if d, ok := o.(cache.DeletedFinalStateUnknown); ok {
		o = d.Obj
	}
	p, ok := o.(*corev1.Pod)
	if !ok {
		return
	}
	why := PodLost(p)
	if deleted && why == "" {
		why = Deleted("pod", p.Name, w.now())
	}
	w.lose(w.pods, p.Name, why)
}

func (w *Watch) node(o any, deleted bool) {
	if d, ok := o.(cache.DeletedFinalStateUnknown); ok {
		o = d.Obj
	}
	n, ok := o.(*corev1.Node)
	if !ok || !w.wanted[n.Name] {
		return
	}
	w.mu.Lock()
	if c := Cordoned(n); c != "" {
		w.cordoned[n.Name] = c
	} else {
		delete(w.cordoned, n.Name)
	}
	w.mu.Unlock()
	why := NodeLost(n)
	if deleted {
		why = Deleted("node", n.Name, w.now())
	}
	w.lose(w.nodes, n.Name, why)
}

// lose records the first loss of name (a node that turns Ready again is
// not taken back: its pod's runs in between may have been cut, and the
// run's pairs there are already said).
func (w *Watch) lose(m map[string]string, name, why string) {
	if why == "" {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, ok := m[name]; ok {
		return
	}
	m[name] = why
	close(w.changed)
	w.changed = make(chan struct{})
}

// Lost says why the pod or its node was lost, "" when neither was; with
// the node's cordon as context when there is one.
func (w *Watch) Lost(pod, node string) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	why := w.pods[pod]
	if nw := w.nodes[node]; nw != "" {
		if why == "" {
			why = nw
		} else {
			why += "; " + nw
		}
	}
	if why != "" && w.cordoned[node] != "" {
		why += "; " + w.cordoned[node]
	}
	return why
}

// Changed is closed at the next loss.
func (w *Watch) Changed() <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.changed
}

// CutWhenLost returns a context that ends when ctx does or when either of
// the pods (or their nodes) is lost, why (which loss cut it, "" when none
// did yet) and stop (ends the context and the watching). A run in a pod
// that is being evicted, or on a node that went NotReady, is not waited
// for until its budget: its measurement is gone either way.
func (w *Watch) CutWhenLost(ctx context.Context, pods ...[2]string) (cut context.Context, why func() string, stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	var mu sync.Mutex
	lostBy := ""
	lost := func() string {
		for _, p := range pods {
			if why := w.Lost(p[0], p[1]); why != "" {
				return why
			}
		}
		return ""
	}
	go func() {
		for {
			ch := w.Changed()
			if why := lost(); why != "" {
				mu.Lock()
				lostBy = why
				mu.Unlock()
				cancel()
				return
			}
			select {
			case <-ch:
			case <-ctx.Done():
				return
			}
		}
	}()
	return ctx, func() string {
		mu.Lock()
		defer mu.Unlock()
		return lostBy
	}, cancel
}

// Explain says what happened to the pod or its node after a run in it
// failed: the watch's answer, else one read of each from the API (the
// watch may not have seen the event yet). "" when both look well or the
// API does not answer (the run's own error then speaks alone).
func (w *Watch) Explain(ctx context.Context, kube kubernetes.Interface, namespace, pod, node string) string {
	if why := w.Lost(pod, node); why != "" {
		return why
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var parts []string
	cordon := ""
	if p, err := kube.CoreV1().Pods(namespace).Get(ctx, pod, metav1.GetOptions{}); apierrors.IsNotFound(err) {
		parts = append(parts, Deleted("pod", pod, w.now()))
	} else if err == nil {
		if why := PodLost(p); why != "" {
			parts = append(parts, why)
		}
	}
	if n, err := kube.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{}); apierrors.IsNotFound(err) {
		parts = append(parts, Deleted("node", node, w.now()))
	} else if err == nil {
		if why := NodeLost(n); why != "" {
			parts = append(parts, why)
		}
		cordon = Cordoned(n)
	}
	if len(parts) == 0 {
		return ""
	}
	if cordon != "" {
		parts = append(parts, cordon)
	}
	out := parts[0]
	for _, p := range parts[1:] {
		out += "; " + p
	}
	return out
}
