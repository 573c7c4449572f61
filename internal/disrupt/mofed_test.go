package disrupt

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
)

// The old pod is deleted; the DaemonSet's new pod (another UID) appears
// 20 s later and is Ready at T+45 s: the wait reports it with both clocks.
func TestWaitReplacementSeesTheNewPodReady(t *testing.T) {
	clk := newClock()
	t0 := clk.Now()
	old := mofedPod("mofed-a", "uid-old", "node-a", true, t0.Add(-time.Hour))
	other := mofedPod("mofed-b", "uid-b", "node-b", true, t0.Add(-time.Hour))
	cs, env, _ := setupEnv(old, other)
	env.Clock = clk
	o := baseOptions()
	pods := cs.CoreV1().Pods(mofedNS)
	if err := pods.Delete(context.Background(), old.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	created, readied := false, false
	clk.hook(func(now time.Time) {
		switch {
		case !created && now.Sub(t0) >= 20*time.Second:
			created = true
			if _, err := pods.Create(context.Background(), mofedPod("mofed-a2", "uid-new", "node-a", false, now), metav1.CreateOptions{}); err != nil {
				t.Error(err)
			}
		case created && !readied && now.Sub(t0) >= 45*time.Second:
			readied = true
			p, _ := pods.Get(context.Background(), "mofed-a2", metav1.GetOptions{})
			setReady(p, true, t0.Add(45*time.Second))
			if _, err := pods.UpdateStatus(context.Background(), p, metav1.UpdateOptions{}); err != nil {
				t.Error(err)
			}
		}
	})
	d := Driver{Old: refOf(old), DeletedAt: t0, Timeout: 10 * time.Minute}
	start := time.Now()
	if err := waitReplacement(context.Background(), env, o, "node-a", &d); err != nil {
		t.Fatal(err)
	}
	if time.Since(start) > 100*time.Millisecond {
		t.Fatalf("the wait slept for real: %s", time.Since(start))
	}
	if !d.Back || d.New.Name != "mofed-a2" || d.New.UID != "uid-new" {
		t.Fatalf("%+v", d)
	}
	if got := d.ReadyAt.Sub(d.DeletedAt); got != 45*time.Second {
		t.Fatalf("Ready condition at T+%s, want T+45s", got)
	}
	if got := d.SeenAt.Sub(d.DeletedAt); got < 45*time.Second || got > 48*time.Second {
		t.Fatalf("runner saw it at T+%s", got)
	}
	if r := readyAfter(d); r != 45 {
		t.Fatalf("readyAfter %v", r)
	}
}

// A pod with the old UID that is still listed (terminating slowly, or a
// stale cache) is never taken for the new one.
func TestWaitReplacementIgnoresTheOldPod(t *testing.T) {
	clk := newClock()
	old := mofedPod("mofed-a", "uid-old", "node-a", true, clk.Now())
	_, env, _ := setupEnv(old)
	env.Clock = clk
	d := Driver{Old: refOf(old), DeletedAt: clk.Now(), Timeout: time.Minute}
	if err := waitReplacement(context.Background(), env, baseOptions(), "node-a", &d); err != nil {
		t.Fatal(err)
	}
	if d.Back {
		t.Fatalf("the old pod counted as the new one: %+v", d)
	}
	if len(d.State) == 0 || !strings.Contains(d.State[0], "no new MOFED pod") {
		t.Fatalf("%q", d.State)
	}
}

// The new pod crash-loops (seed 000's storage-module refusal, or another
// failure): the wait carries its state, its last 10 events (not another
// pod's) and its log's tail. The refusal, which repeats until someone
// acts, ends the wait once seen MinRefusals times; any other crash loop
// is waited out to --driver-timeout on the runner's clock.
func TestWaitReplacementCrashLoopCarriesStateEventsAndLog(t *testing.T) {
	const refusal = "Unsetting driver ready state\nStorage modules are loaded for current driver, terminating prior driver reload failure due to UNLOAD_STORAGE_MODULES not set to \"true\"\n"
	for _, tc := range []struct {
		name, log      string
		restarts       int32
		early, storage bool
		logReads       int
	}{
		{"storage-module refusal, 4 restarts: stops early", refusal, 4, true, true, 3},
		{"storage-module refusal, 1 restart: waits", refusal, 1, false, true, 2},
		{"another crash loop: waits out the limit", "mlx5_core 0000:3b:00.0: firmware version mismatch\n", 4, false, false, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := newClock()
			t0 := clk.Now()
			newPod := mofedPod("mofed-a2", "uid-new", "node-a", false, t0.Add(5*time.Second))
			cst := &newPod.Status.ContainerStatuses[0]
			cst.RestartCount = tc.restarts
			cst.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: "back-off 2m40s restarting failed container"}}
			cst.LastTerminationState = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "Error", ExitCode: 1,
				Message: "Storage modules are loaded for current driver"}}
			objs := []runtime.Object{newPod}
			for i := 0; i < 12; i++ {
				objs = append(objs, &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("ev-%02d", i), Namespace: mofedNS},
					InvolvedObject: corev1.ObjectReference{Kind: "Pod", Name: "mofed-a2", UID: "uid-new"}, Type: "Warning", Reason: fmt.Sprintf("BackOff%02d", i),
					Message: "Back-off restarting failed container", LastTimestamp: metav1.NewTime(t0.Add(time.Duration(i) * time.Second))})
			}
			objs = append(objs, &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "ev-other", Namespace: mofedNS},
				InvolvedObject: corev1.ObjectReference{Kind: "Pod", Name: "mofed-b", UID: types.UID("uid-b")}, Type: "Warning", Reason: "OtherPod",
				LastTimestamp: metav1.NewTime(t0.Add(time.Hour))})
			_, env, _ := setupEnv(objs...)
			env.Clock = clk
			var asked []string
			env.Logs = func(_ context.Context, ns, pod, container string, previous bool, tail int64) (string, error) {
				asked = append(asked, fmt.Sprintf("%s/%s/%s previous=%v tail=%d", ns, pod, container, previous, tail))
				return tc.log, nil
			}
			d := Driver{Old: PodRef{Name: "mofed-a", UID: "uid-old"}, DeletedAt: t0, Timeout: 10 * time.Minute}
			start := time.Now()
			if err := waitReplacement(context.Background(), env, baseOptions(), "node-a", &d); err != nil {
				t.Fatal(err)
			}
			if time.Since(start) > 100*time.Millisecond {
				t.Fatalf("the wait slept for real: %s", time.Since(start))
			}
			if d.Back {
				t.Fatal("a crash-looping pod counted as back")
			}
			waited := clk.Now().Sub(t0)
			if tc.early != (waited < time.Minute) || !tc.early && waited < 10*time.Minute {
				t.Fatalf("waited %s (want early stop: %v) of the 10m0s limit", waited, tc.early)
			}
			if tc.early != (d.Refusals > 0) || tc.early && d.Refusals != tc.restarts {
				t.Fatalf("RefusedAfter %s, Refusals %d", d.RefusedAfter, d.Refusals)
			}
			all := strings.Join(d.State, "\n")
			wants := []string{"mofed-a2", "phase Running", "waiting CrashLoopBackOff", "last termination Error exit 1: Storage modules are loaded",
				fmt.Sprintf("restarts %d", tc.restarts), "last 10 events", "BackOff11", "BackOff02", "previous log"}
			if tc.early {
				wants = append(wants, "stopped before the 10m0s limit: the new driver container refused to reload 4 times")
			} else {
				wants = append(wants, "not Ready within 10m0s:")
			}
			for _, want := range wants {
				if !strings.Contains(all, want) {
					t.Errorf("state lacks %q:\n%s", want, all)
				}
			}
			for _, absent := range []string{"BackOff01", "OtherPod"} {
				if strings.Contains(all, absent) {
					t.Errorf("state has %q (older than the last 10, or another pod's):\n%s", absent, all)
				}
			}
			if d.StorageModules != tc.storage {
				t.Errorf("storage-module refusal recognised: %v, want %v", d.StorageModules, tc.storage)
			}
			if len(asked) != tc.logReads || !strings.Contains(asked[len(asked)-2], "mofed-container previous=false tail=10") || !strings.Contains(asked[len(asked)-1], "previous=true") {
				t.Errorf("logs asked: %v", asked)
			}
			// And the judge fails the check with that state and the fix.
			r := passingRound()
			r.Driver = d
			c := Judge(r)[0]
			if c.Status != "fail" || !strings.HasPrefix(c.Diagnosis, "the MOFED driver on node-a did not come back Ready within ") ||
				!strings.Contains(strings.Join(c.Evidence, "\n"), "BackOff11") || tc.storage != strings.Contains(c.Fix, "UNLOAD_STORAGE_MODULES=true") {
				t.Fatalf("%+v", c)
			}
			if tc.early && !strings.Contains(c.Evidence[0], "refused to reload 4 times") {
				t.Fatalf("timeline: %s", c.Evidence[0])
			}
		})
	}
}

func TestFindDriverPod(t *testing.T) {
	now := time.Now()
	notReady := mofedPod("mofed-c", "uid-c", "node-c", false, now)
	notReady.Status.ContainerStatuses[0].State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}
	_, env, _ := setupEnv(mofedPod("mofed-a", "uid-a", "node-a", true, now), notReady)
	o := baseOptions()
	p, why, err := findDriverPod(context.Background(), env, o, "node-a")
	if err != nil || why != "" || p.Name != "mofed-a" {
		t.Fatalf("%v %q %v", p, why, err)
	}
	_, why, _ = findDriverPod(context.Background(), env, o, "node-c")
	if !strings.Contains(why, "not Ready before the test") || !strings.Contains(why, "CrashLoopBackOff") {
		t.Fatalf("%q", why)
	}
	_, why, _ = findDriverPod(context.Background(), env, o, "node-z")
	if !strings.Contains(why, "no MOFED driver pod") {
		t.Fatalf("%q", why)
	}
}

// Right after the kubelet restarts a container, both its logs may read
// empty (CI of stop 39 lost the refusal, and the fix with it, that way).
// Each case scripts the log reads in order ("" = empty): the refusal must
// still be recognised, at the same restart count, and the fix named.
func TestWaitReplacementReadsEmptyLogsAgain(t *testing.T) {
	const refusal = "Storage modules are loaded for current driver, terminating prior driver reload failure due to UNLOAD_STORAGE_MODULES not set to \"true\"\n"
	for _, tc := range []struct {
		name     string
		restarts int32
		reads    []string // the answers to the log reads, in order; then refusal
		early    bool
		want     int // log reads in all
	}{
		// The wait's first reads at restart 4 are empty: it reads again on
		// the next poll, not at restart 5 (a back-off later), and stops.
		{"empty at the wait's first poll", 4, []string{"", ""}, true, 5},
		// The wait saw the refusal; the state's reads are all empty: the
		// refusal it saw still counts.
		{"refusal seen by the wait, empty when described", 4, []string{refusal, "", "", "", "", "", "", "", ""}, true, 9},
		// One restart (the wait never reads): the state's first two reads
		// are empty, the second attempt has the refusal.
		{"empty at the state's first attempt", 1, []string{"", ""}, false, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := newClock()
			t0 := clk.Now()
			_, env, _ := setupEnv(crashLooping(t0, tc.restarts))
			env.Clock = clk
			calls := 0
			env.Logs = func(context.Context, string, string, string, bool, int64) (string, error) {
				calls++
				if calls <= len(tc.reads) {
					return tc.reads[calls-1], nil
				}
				return refusal, nil
			}
			d := Driver{Old: PodRef{Name: "mofed-a", UID: "uid-old"}, DeletedAt: t0, Timeout: 10 * time.Minute}
			if err := waitReplacement(context.Background(), env, baseOptions(), "node-a", &d); err != nil {
				t.Fatal(err)
			}
			if waited := clk.Now().Sub(t0); tc.early != (waited < time.Minute) {
				t.Fatalf("waited %s, want early stop: %v", waited, tc.early)
			}
			if tc.early && d.Refusals != tc.restarts {
				t.Fatalf("Refusals %d, want %d", d.Refusals, tc.restarts)
			}
			if !d.StorageModules {
				t.Fatalf("the refusal was not recognised; state:\n%s", strings.Join(d.State, "\n"))
			}
			if calls != tc.want {
				t.Errorf("%d log reads, want %d", calls, tc.want)
			}
			r := passingRound()
			r.Driver = d
			if c := Judge(r)[0]; c.Status != "fail" || !strings.Contains(c.Fix, "UNLOAD_STORAGE_MODULES=true") {
				t.Fatalf("%s: fix %q", c.Status, c.Fix)
			}
		})
	}
}

// crashLooping is the replacement MOFED pod in CrashLoopBackOff after
// restarts failed runs (exit 1).
func crashLooping(t0 time.Time, restarts int32) *corev1.Pod {
	p := mofedPod("mofed-a2", "uid-new", "node-a", false, t0.Add(5*time.Second))
	cst := &p.Status.ContainerStatuses[0]
	cst.RestartCount = restarts
	cst.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}
	cst.LastTerminationState = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "Error", ExitCode: 1}}
	return p
}
