package podrun

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// DeleteGracefully asks for a pod's deletion with its own grace period
// (a probe pod's is 1 s). Unlike Delete, the pod stays in the API until
// its kubelet has stopped its containers and sandbox and released its
// devices (a hostdev VF, GPUs), so AwaitTerminating can hold the node's
// next pods until then: a force-deleted pod's devices are free
// to the scheduler and the device manager at once, while its container
// may still hold them, and its teardown competes with the next pods'
// start on the node.
func DeleteGracefully(cs kubernetes.Interface, ns, name string) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	err := cs.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		fmt.Printf("rdmasuite: could not delete pod %s/%s: %v (the run's cleanup will retry)\n", ns, name, err)
	}
}

// AwaitTerminating waits until no pod of selector in ns is terminating
// (deleted, its kubelet not done yet), polling every second for at most
// limit. It returns how long it waited and the pods it then
// force-deleted: those still terminating at the limit (a node that
// stopped answering never confirms a deletion). It does not wait when ctx
// is done (the run is being torn down, and its namespace goes with every
// pod in it) or when the list fails.
func AwaitTerminating(ctx context.Context, cs kubernetes.Interface, ns, selector string, limit time.Duration) (time.Duration, []string) {
	start := time.Now()
	var left []string
	for {
		left = left[:0]
		// From the API server's watch cache (resourceVersion 0): a
		// fleet's run lists thousands of pods here every second.
		list, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector, ResourceVersion: "0"})
		if err != nil || ctx.Err() != nil {
			// Nothing known to wait for: the next pods start as they
			// would without the wait, and an API that refuses the list
			// fails them with its own words.
			return time.Since(start), nil
		}
		for _, p := range list.Items {
			if p.DeletionTimestamp != nil {
				left = append(left, p.Name)
			}
		}
		if len(left) == 0 {
			return time.Since(start), nil
		}
		if time.Since(start) >= limit {
			break
		}
		select {
		case <-ctx.Done():
			return time.Since(start), nil
		case <-time.After(time.Second):
		}
	}
	if err := ctx.Err(); err != nil {
		return time.Since(start), nil
	}
	for _, name := range left {
		Delete(cs, ns, name)
	}
	return time.Since(start), left
}
