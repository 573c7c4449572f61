package lifecycle

import (
	"context"
	"os"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/rdmasuite/rdmasuite/internal/fate"
)

// A runner pod that is evicted (a drain of its node, a preemption) gets
// SIGTERM like a Ctrl-C; the results would say only "terminated". Its own
// pod record says who stopped it: the API server sets the DisruptionTarget
// condition before the kubelet sends the signal.

// serviceAccountNamespace is where a pod's own namespace is mounted.
const serviceAccountNamespace = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// stoppedBy is ": <what happened to the runner's pod>" when the suite runs
// in a pod that was evicted, preempted or deleted, "" otherwise (outside a
// pod, or when the pod cannot be read within a few seconds).
func (s *Session) stoppedBy() string {
	ns, err := os.ReadFile(serviceAccountNamespace)
	if err != nil {
		return ""
	}
	name, err := os.Hostname() // a pod's hostname is its name unless the spec sets one
	if err != nil {
		return ""
	}
	return ownPodLoss(s.Kube, strings.TrimSpace(string(ns)), name)
}

// ownPodLoss reads the pod ns/name and says what happened to it.
func ownPodLoss(kube kubernetes.Interface, ns, name string) string {
	if kube == nil {
		return ""
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	p, err := kube.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return ""
	}
	if why := fate.PodLost(p); why != "" {
		return ": the runner's " + why
	}
	return ""
}
