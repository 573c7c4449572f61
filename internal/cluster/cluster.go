// Package cluster connects the suite to a cluster and owns the run's
// namespace: it resolves which cluster was meant, proves it answers before
// any test runs, and makes sure everything the run created is deleted —
// with its namespace by default, or by the run label in an existing
// namespace given with --namespace (shared.go).
package cluster

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/client-go/util/homedir"
)

// Labels every object the suite creates carries; RunLabel holds the run id.
const (
	ManagedByLabel = "app.kubernetes.io/managed-by"
	ManagedBy      = "rdmasuite"
	RunLabel       = "rdmasuite.io/run"
)

// ErrNoCluster means no kubeconfig was found where kubectl looks and the
// process is not in a pod.
var ErrNoCluster = errors.New("no cluster given: pass --kubeconfig FILE, set KUBECONFIG, or create ~/.kube/config " +
	"(the places kubectl looks); in a pod the ServiceAccount is used")

// The client's request rate. client-go's default (5 requests/s, burst 10)
// queued every probe pair about 2 s in the client (hack/fleet-bench.sh: ~10
// API calls per pair, 1.94-1.99 s per pair at 16-64 kwok nodes whatever
// --concurrency was): the run's length grew with the fleet for nothing.
// 50/100 is what controllers commonly use; the API server's priority and
// fairness still bounds the suite's share.
const (
	ClientQPS   = 50
	ClientBurst = 100
)

// Per node of the run, the client's rate grows (ScaleClientRate): with
// --concurrency 0 a ring round starts every disjoint pair at once, about 3
// requests per node to start its pods (create, get, watch) and 2 to end
// them (log, delete). Burst 8 per node lets a round start without
// queueing; 4 per node drains the rest within about a second. The API
// server's priority and fairness still bounds the suite's share.
const (
	ClientQPSPerNode   = 4
	ClientBurstPerNode = 8
)

// ScaleClientRate raises cfg's rate for a run over nodes nodes, unless the
// kubeconfig set its own (RESTConfig leaves that one alone too). It
// returns whether it changed the rate.
func ScaleClientRate(cfg *rest.Config, nodes int) bool {
	if cfg.RateLimiter != nil || cfg.QPS != ClientQPS || cfg.Burst != ClientBurst {
		return false
	}
	qps, burst := max(ClientQPS, ClientQPSPerNode*nodes), max(ClientBurst, ClientBurstPerNode*nodes)
	if float32(qps) == cfg.QPS && burst == cfg.Burst {
		return false
	}
	cfg.QPS, cfg.Burst = float32(qps), burst
	return true
}

// RESTConfig picks the cluster as kubectl does: the --kubeconfig flag;
// else every file of $KUBECONFIG, merged (the first file's current
// context wins); else ~/.kube/config; else the pod's ServiceAccount. where
// names what was used (a path, the $KUBECONFIG files, or "in-cluster").
// The client rate is ClientQPS/ClientBurst unless the kubeconfig sets its
// own.
func RESTConfig(kubeconfigFlag, context string) (cfg *rest.Config, where string, err error) {
	cfg, where, err = restConfig(kubeconfigFlag, context)
	if err == nil && cfg.QPS == 0 && cfg.Burst == 0 && cfg.RateLimiter == nil {
		cfg.QPS, cfg.Burst = ClientQPS, ClientBurst
	}
	return cfg, where, err
}

func restConfig(kubeconfigFlag, context string) (*rest.Config, string, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	where := kubeconfigFlag
	if kubeconfigFlag != "" {
		if _, err := os.Stat(kubeconfigFlag); err != nil {
			return nil, "", fmt.Errorf("--kubeconfig %s: %w", kubeconfigFlag, err)
		}
		rules.ExplicitPath = kubeconfigFlag
	} else {
		// Precedence holds $KUBECONFIG's files, or ~/.kube/config; the
		// loader skips missing ones, as kubectl does. client-go reads the
		// home directory once at start; read it now, as kubectl's run does.
		if os.Getenv(clientcmd.RecommendedConfigPathEnvVar) == "" {
			rules.Precedence = []string{filepath.Join(homedir.HomeDir(), clientcmd.RecommendedHomeDir, clientcmd.RecommendedFileName)}
		}
		var found []string
		for _, p := range rules.Precedence {
			if _, err := os.Stat(p); err == nil {
				found = append(found, p)
			}
		}
		if len(found) == 0 {
			if os.Getenv("KUBERNETES_SERVICE_HOST") == "" {
				return nil, "", ErrNoCluster
			}
			cfg, err := rest.InClusterConfig()
			if err != nil {
				return nil, "", fmt.Errorf("in-cluster config: %w", err)
			}
			return cfg, "in-cluster", nil
		}
		where = strings.Join(found, string(os.PathListSeparator))
	}
	over := &clientcmd.ConfigOverrides{CurrentContext: context}
	loader := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, over)
	if raw, err := loader.RawConfig(); err == nil {
		if err := checkContext(raw, context, where); err != nil {
			return nil, "", err
		}
	}
	cfg, err := loader.ClientConfig()
	if err != nil {
		return nil, "", fmt.Errorf("kubeconfig %s: %w", where, err)
	}
	return cfg, where, nil
}

// checkContext names what client-go would report as "invalid
// configuration: no configuration has been provided, try setting
// KUBERNETES_MASTER": a kubeconfig without a current context, or a
// --context it lacks, with the contexts it has and the fix.
func checkContext(raw clientcmdapi.Config, context, where string) error {
	names := slices.Sorted(maps.Keys(raw.Contexts))
	have := "it has none: add one (kubectl config set-context) or use the kubeconfig your cluster's installer wrote"
	if len(names) > 0 {
		have = "it has: " + strings.Join(names, ", ")
	}
	switch {
	case context != "" && raw.Contexts[context] == nil:
		return fmt.Errorf("kubeconfig %s has no context %q; %s", where, context, have)
	case context == "" && raw.CurrentContext == "":
		return fmt.Errorf("kubeconfig %s has no current context: pass --context NAME (%s) or set one with kubectl config use-context NAME", where, strings.TrimPrefix(have, "it has: "))
	case context == "" && raw.Contexts[raw.CurrentContext] == nil:
		return fmt.Errorf("kubeconfig %s: its current context %q does not exist; %s (kubectl config use-context NAME)", where, raw.CurrentContext, have)
	}
	return nil
}

// ReachableFrom asks the API server of the cluster RESTConfig found at
// where for its version within timeout, so an unreachable cluster is one
// clear error instead of a timeout per test. The error says how to look
// into it: kubectl cluster-info with that kubeconfig.
func ReachableFrom(cfg *rest.Config, where string, timeout time.Duration) (string, error) {
	c := rest.CopyConfig(cfg)
	c.Timeout = timeout
	cs, err := kubernetes.NewForConfig(c)
	if err != nil {
		return "", err
	}
	v, err := cs.Discovery().ServerVersion()
	if err != nil {
		check := "kubectl cluster-info"
		if where != "" && where != "in-cluster" {
			check = "kubectl --kubeconfig " + where + " cluster-info"
		}
		return "", fmt.Errorf("cluster at %s is not reachable: %w (check the server address in the kubeconfig, the network path to it (VPN, firewall, proxy) and that the API server is up: %s)",
			cfg.Host, err, check)
	}
	return v.GitVersion, nil
}

// NewRunID returns a short random id for one suite run.
func NewRunID() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// RunNamespace is the namespace all of one run's objects live in.
func RunNamespace(runID string) string { return "rdmasuite-" + runID }

// ErrNamespaceNotCreated marks a CreateRunNamespace error where the API
// refused the namespace: there is nothing to delete afterwards.
var ErrNamespaceNotCreated = errors.New("the namespace was not created")

// CreateRunNamespace creates the run's namespace with the suite's labels.
func CreateRunNamespace(ctx context.Context, cs kubernetes.Interface, runID string) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		Name:   RunNamespace(runID),
		Labels: map[string]string{ManagedByLabel: ManagedBy, RunLabel: runID},
	}}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create run namespace %s: %w: %w", ns.Name, ErrNamespaceNotCreated, err)
	}
	// Pods are refused until the namespace's default service account exists.
	return wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := cs.CoreV1().ServiceAccounts(ns.Name).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, nil
	})
}

// DeleteRunNamespace deletes the run's namespace and waits (bounded) until
// it is gone. Pods are force-deleted first so a node that stopped answering
// cannot hold the namespace in Terminating.
func DeleteRunNamespace(ctx context.Context, cs kubernetes.Interface, runID string, timeout time.Duration) error {
	name := RunNamespace(runID)
	zero := int64(0)
	_ = cs.CoreV1().Pods(name).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: &zero}, metav1.ListOptions{})
	// Cluster-scoped PVs of the run go with it (best effort: a runner
	// without persistentvolumes RBAC never created one).
	if err := DeleteRunVolumes(ctx, cs, runID); err != nil && !apierrors.IsForbidden(err) {
		fmt.Fprintf(os.Stderr, "rdmasuite: %v (delete it by hand: kubectl delete pv -l %s=%s)\n", err, RunLabel, runID)
	}
	err := cs.CoreV1().Namespaces().Delete(ctx, name, metav1.DeleteOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("delete run namespace %s: %w", name, err)
	}
	err = wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		_, err := cs.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		return fmt.Errorf("namespace %s still present after %s: delete it by hand (kubectl delete ns %s)", name, timeout, name)
	}
	return nil
}

// KeptLabel marks a run namespace kept for debugging (--keep-on-failure).
const KeptLabel = "rdmasuite.io/kept"

// MarkKept labels the run's namespace as kept, so `rdmasuite cleanup` and a
// person reading `kubectl get ns -L rdmasuite.io/kept` can tell why it is
// still there.
func MarkKept(ctx context.Context, cs kubernetes.Interface, runID, why string) error {
	patch := fmt.Sprintf(`{"metadata":{"labels":{%q:"true"},"annotations":{"rdmasuite.io/kept-because":%q}}}`, KeptLabel, why)
	_, err := cs.CoreV1().Namespaces().Patch(ctx, RunNamespace(runID), types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	return err
}

// Stale is one run left behind (a killed run, a kept failure): its run
// namespace, or in a shared namespace (StaleRunsIn) that namespace and the
// number of the run's pods in it.
type Stale struct {
	Name, RunID string
	Age         time.Duration
	Kept        bool
	Pods        int
}

// StaleRuns lists the run namespaces (by the suite's labels) older than
// olderThan, or only the one of runID when it is not empty (any age).
func StaleRuns(ctx context.Context, cs kubernetes.Interface, olderThan time.Duration, runID string, now time.Time) ([]Stale, error) {
	sel := ManagedByLabel + "=" + ManagedBy
	if runID != "" {
		sel += "," + RunLabel + "=" + runID
	}
	list, err := cs.CoreV1().Namespaces().List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return nil, fmt.Errorf("list run namespaces (%s): %w", sel, err)
	}
	var out []Stale
	for _, ns := range list.Items {
		age := now.Sub(ns.CreationTimestamp.Time)
		if runID == "" && age < olderThan {
			continue
		}
		out = append(out, Stale{Name: ns.Name, RunID: ns.Labels[RunLabel], Age: age, Kept: ns.Labels[KeptLabel] == "true"})
	}
	return out, nil
}
