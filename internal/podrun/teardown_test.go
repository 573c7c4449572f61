package podrun

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

func terminating(name string, run string) *corev1.Pod {
	now := metav1.Now()
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", DeletionTimestamp: &now,
		Finalizers: []string{"test/hold"}, Labels: map[string]string{"run": run}}}
}

// The pods of the run still terminating are waited for until they are
// gone; another run's, and pods not being deleted, are not.
func TestAwaitTerminatingWaitsForTheRunsTerminatingPods(t *testing.T) {
	alive := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "alive", Namespace: "ns", Labels: map[string]string{"run": "a"}}}
	cs := fake.NewClientset(terminating("going", "a"), terminating("other-run", "b"), alive)
	lists := 0
	cs.PrependReactor("list", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		if lists++; lists == 3 { // the kubelet is done: the pod goes
			_ = cs.Tracker().Delete(corev1.SchemeGroupVersion.WithResource("pods"), "ns", "going")
		}
		return false, nil, nil
	})
	waited, forced := AwaitTerminating(context.Background(), cs, "ns", "run=a", time.Minute)
	if len(forced) != 0 || lists < 3 || waited < 2*time.Second || waited > 30*time.Second {
		t.Fatalf("waited %v over %d lists, forced %v: want a wait until the pod went, nothing forced", waited, lists, forced)
	}
}

// At the limit, the pods still terminating are force-deleted and named.
func TestAwaitTerminatingForceDeletesAtTheLimit(t *testing.T) {
	cs := fake.NewClientset(terminating("stuck", "a"))
	var forcedGrace *int64
	cs.PrependReactor("delete", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		forcedGrace = a.(k8stesting.DeleteAction).GetDeleteOptions().GracePeriodSeconds
		return false, nil, nil
	})
	_, forced := AwaitTerminating(context.Background(), cs, "ns", "run=a", 1500*time.Millisecond)
	if !slices.Equal(forced, []string{"stuck"}) || forcedGrace == nil || *forcedGrace != 0 {
		t.Fatalf("forced %v with grace %v: want [stuck] force-deleted (grace 0)", forced, forcedGrace)
	}
}

// A run being torn down does not wait: its namespace goes with its pods.
func TestAwaitTerminatingDoesNotWaitOnACancelledRun(t *testing.T) {
	cs := fake.NewClientset(terminating("stuck", "a"))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if waited, forced := AwaitTerminating(ctx, cs, "ns", "run=a", time.Minute); waited > time.Second || forced != nil {
		t.Fatalf("waited %v, forced %v on a cancelled run", waited, forced)
	}
}

// A graceful delete leaves the grace to the pod (no GracePeriodSeconds).
func TestDeleteGracefullyKeepsThePodsGrace(t *testing.T) {
	cs := fake.NewClientset(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}})
	var opts metav1.DeleteOptions
	seen := false
	cs.PrependReactor("delete", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		opts, seen = a.(k8stesting.DeleteAction).GetDeleteOptions(), true
		return false, nil, nil
	})
	DeleteGracefully(cs, "ns", "p")
	if !seen || opts.GracePeriodSeconds != nil {
		t.Fatalf("delete seen %v with grace %v: want the pod's own grace", seen, opts.GracePeriodSeconds)
	}
}

// A list the API refuses is no reason to hold the next pods.
func TestAwaitTerminatingDoesNotWaitWhenTheListFails(t *testing.T) {
	cs := fake.NewClientset(terminating("stuck", "a"))
	cs.PrependReactor("list", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("etcdserver: request timed out")
	})
	if waited, forced := AwaitTerminating(context.Background(), cs, "ns", "run=a", time.Minute); waited > time.Second || forced != nil {
		t.Fatalf("waited %v, forced %v on a failing list", waited, forced)
	}
}
