package runner

import (
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/rdmasuite/rdmasuite/reports"
)

// startedPods makes the fake cluster start what the suite creates and
// leave it running: servers and clients alike get an IP and a started
// container; a client ends only when fakeAttach hands it an address.
func startedPods(kube *fake.Clientset) func() []*corev1.Pod {
	return onCreatePod(kube, func(p *corev1.Pod) {
		p.Status.Phase, p.Status.PodIP = corev1.PodRunning, "10.0.0.1"
		if strings.Contains(p.Name, "-c-") {
			p.Status.PodIP = "10.0.0.2"
		}
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "probe", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
	})
}

// fakeAttach records what the runner hands over; with err set it fails
// without reading, as a refused or broken attach does. A delivered address
// ends the pair: every pod of the namespace has Succeeded.
type fakeAttach struct {
	kube *fake.Clientset
	err  error

	mu   sync.Mutex
	sent map[string]string // pod → what it read on stdin
	// created is how many pods existed when the first attach came.
	created int
}

func (f *fakeAttach) Attach(ctx context.Context, ns, pod, container string, stdin io.Reader) error {
	gvr := corev1.SchemeGroupVersion.WithResource("pods")
	o, _ := f.kube.Tracker().List(gvr, corev1.SchemeGroupVersion.WithKind("Pod"), ns)
	list := o.(*corev1.PodList).Items
	f.mu.Lock()
	if f.sent == nil {
		f.created = len(list)
		f.sent = map[string]string{}
	}
	f.mu.Unlock()
	if f.err != nil {
		// The server, never dialled, ends on its own timeout.
		for _, p := range list {
			if strings.Contains(p.Name, "-s-") {
				p.Status.Phase = corev1.PodFailed
				p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "probe", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1}}}}
				_ = f.kube.Tracker().Update(gvr, &p, ns)
			}
		}
		return f.err
	}
	if container != "probe" {
		return errors.New("no container " + container)
	}
	b, err := io.ReadAll(stdin)
	if err != nil {
		return err
	}
	f.mu.Lock()
	f.sent[pod] = string(b)
	f.mu.Unlock()
	for _, p := range list {
		p.Status.Phase = corev1.PodSucceeded
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "probe", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{}}}}
		_ = f.kube.Tracker().Update(gvr, &p, ns)
	}
	return nil
}

// With the right to attach, a pair's two pods are created together (the
// client before the server has an IP), the client reads its server's
// address on standard input (HOST -, stdin once), the runner hands it the
// server's pod IP, and the evidence says exactly that: the command a shell
// would run. The run says once how its pairs start.
func TestPairPodsStartTogetherAndTheAddressIsHandedOver(t *testing.T) {
	kube := fake.NewClientset(testNode("a", 8), testNode("b", 8))
	mayCreateSub(kube, "attach")
	created := startedPods(kube)
	cfg := testConfig(t)
	cfg.Selected = map[string][]string{VariantSharedDev: {PairedBandwidth, PairedLatency}}
	r := New(kube, cfg, "t-together")
	att := &fakeAttach{kube: kube}
	r.Attach = att
	var lines []string
	r.Progress = func(l string) { lines = append(lines, l) }
	v := r.Cfg.VariantList()[0]
	executePlan(r)
	bwChecks := r.Paired(context.Background(), v, PairedBandwidth)
	r.Paired(context.Background(), v, PairedLatency)

	pods := created()
	if len(pods) != 4 || att.created != 2 {
		t.Fatalf("%d pods created, %d of them before the first hand-over; want 4 and 2 (a pair's server and client together)", len(pods), att.created)
	}
	for _, p := range pods {
		c := p.Spec.Containers[0]
		args := c.Args
		if !strings.Contains(p.Name, "-c-") {
			if c.Stdin {
				t.Errorf("server %s opens stdin", p.Name)
			}
			continue
		}
		if !c.Stdin || !c.StdinOnce {
			t.Errorf("client %s: stdin %v once %v", p.Name, c.Stdin, c.StdinOnce)
		}
		for _, run := range strings.Split(strings.Join(args, " "), " --then ") {
			if !strings.HasSuffix(run, " -") {
				t.Errorf("client %s run without HOST -: %q", p.Name, run)
			}
		}
		if got := att.sent[p.Name]; got != "10.0.0.1\n" {
			t.Errorf("client %s was handed %q, want the server's pod IP and a newline", p.Name, got)
		}
	}
	ev := 0
	for _, c := range bwChecks {
		for _, e := range c.Evidence {
			if strings.Contains(e, "rdmaprobe bw client") {
				ev++
				if !strings.Contains(e, " - <<< 10.0.0.1") {
					t.Errorf("evidence does not say how the client got its address: %s", e)
				}
			}
		}
		if c.Status == reports.Pass {
			t.Errorf("passed on a fake cluster: %+v", c)
		}
	}
	if ev == 0 {
		t.Errorf("no client command in the evidence: %+v", bwChecks)
	}
	said := 0
	for _, l := range lines {
		if strings.Contains(l, "each client pod starts beside its server") {
			said++
		}
	}
	if said != 1 {
		t.Errorf("the pair start mode said %d times, want once: %q", said, lines)
	}
}

// A hand-over that fails leaves a client with no server to dial: the
// pair fails at once with the reason (not after the client's whole pod
// budget, never a pass).
func TestFailedHandOverFailsThePairNamingIt(t *testing.T) {
	kube := fake.NewClientset(testNode("a", 8), testNode("b", 8))
	mayCreateSub(kube, "attach")
	startedPods(kube)
	cfg := testConfig(t)
	cfg.Selected = map[string][]string{VariantSharedDev: {PairedBandwidth}}
	r := New(kube, cfg, "t-refused")
	r.Attach = &fakeAttach{kube: kube, err: errors.New("pods \"x\" is forbidden: cannot attach")}
	start := time.Now()
	executePlan(r)
	cs := r.Paired(context.Background(), r.Cfg.VariantList()[0], PairedBandwidth)
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("took %s: the failed hand-over did not end the client's wait", took)
	}
	pairs := 0
	for _, c := range cs {
		if len(c.Nodes) != 2 {
			continue
		}
		pairs++
		if c.Status == reports.Pass || !strings.Contains(c.Reason, "could not hand client pod") || !strings.Contains(c.Reason, "cannot attach") {
			t.Errorf("%s %s: %s", c.ID, c.Status, c.Reason)
		}
	}
	if pairs == 0 {
		t.Fatalf("no pair check: %+v", cs)
	}
}

// Without the right to attach (an operator's narrower Role) the pairs
// start one pod after the other, as before, and the run says why and how
// to grant it; nothing is attached.
func TestNoAttachRightStartsClientsAfterServers(t *testing.T) {
	kube := fake.NewClientset(testNode("a", 8), testNode("b", 8))
	mayCreateSub(kube)
	created := runningPods(kube)
	cfg := testConfig(t)
	cfg.Selected = map[string][]string{VariantSharedDev: {PairedBandwidth}}
	r := New(kube, cfg, "t-serial")
	att := &fakeAttach{kube: kube}
	r.Attach = att
	var lines []string
	r.Progress = func(l string) { lines = append(lines, l) }
	executePlan(r)
	r.Paired(context.Background(), r.Cfg.VariantList()[0], PairedBandwidth)
	if att.sent != nil {
		t.Errorf("attached without the right: %v", att.sent)
	}
	for _, p := range created() {
		args := p.Spec.Containers[0].Args
		if strings.Contains(p.Name, "-c-") && (args[len(args)-1] != "10.0.0.1" || p.Spec.Containers[0].Stdin) {
			t.Errorf("client %s: %q stdin %v", p.Name, args, p.Spec.Containers[0].Stdin)
		}
	}
	if !strings.Contains(strings.Join(lines, "\n"), "may not create pods/attach in namespace rdmasuite-t-serial; grant pods/attach") {
		t.Errorf("no line saying why the clients start after their servers: %q", lines)
	}
}
