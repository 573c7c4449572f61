package disrupt

import (
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// fakeClock advances by d on every After and then runs its hooks (the
// test's stand-ins for kubelet and the DaemonSet controller), so waits of
// minutes take no real time.
type fakeClock struct {
	mu    sync.Mutex
	now   time.Time
	hooks []func(now time.Time)
}

func newClock() *fakeClock { return &fakeClock{now: time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	c.now = c.now.Add(d)
	now, hooks := c.now, append([]func(time.Time){}, c.hooks...)
	c.mu.Unlock()
	for _, h := range hooks {
		h(now)
	}
	ch := make(chan time.Time, 1)
	ch <- now
	return ch
}

func (c *fakeClock) hook(h func(now time.Time)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.hooks = append(c.hooks, h)
}

const mofedNS = "nvidia-network-operator"

func mofedPod(name, uid, node string, ready bool, at time.Time) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: mofedNS, UID: types.UID(uid),
			Labels:            map[string]string{"nvidia.com/ofed-driver": "", "app": "mofed-ubuntu22.04"},
			CreationTimestamp: metav1.NewTime(at)},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "mofed-container"}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning,
			ContainerStatuses: []corev1.ContainerStatus{{Name: "mofed-container", Ready: ready, RestartCount: 2,
				State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(at)}}}}},
	}
	setReady(p, ready, at)
	return p
}

func setReady(p *corev1.Pod, ready bool, at time.Time) {
	st := corev1.ConditionFalse
	if ready {
		st = corev1.ConditionTrue
	}
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: st, LastTransitionTime: metav1.NewTime(at)}}
	for i := range p.Status.ContainerStatuses {
		p.Status.ContainerStatuses[i].Ready = ready
	}
}

func baseOptions() Options {
	return Options{Namespace: "rdmasuite-run1", RunID: "run1", Image: "rdmasuite/rdmaprobe:dev", PodTimeout: 2 * time.Minute,
		Targets: []string{"node-a"}, Selected: []string{"node-a", "node-b"},
		PVCNamespace: "default", PVCName: "rdmasuite-nfs",
		MOFEDNamespace: mofedNS, MOFEDSelector: "nvidia.com/ofed-driver", MOFEDContainer: "mofed-container",
		DriverReadyFile: "/run/mellanox/drivers/.driver-ready", DriverTimeout: 10 * time.Minute,
		Steady: 20 * time.Second, After: 20 * time.Second, Durability: "fsync"}
}
