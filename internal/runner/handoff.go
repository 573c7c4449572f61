package runner

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"time"

	authv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rdmasuite/rdmasuite/internal/podrun"
	"github.com/rdmasuite/rdmasuite/workloads/bw"
)

// A pair's client dials its server's pod IP, which exists only once the
// server pod runs. Started one after the other, a pair costs two pod starts
// in a row (seconds to a minute each with image pulls and a CNI chain).
// Started together, the client pod waits on its standard input
// (`rdmaprobe bw client … -`) and the runner writes the server's address
// there over pods/attach as soon as the server has one: one pod start per
// pair. The address goes over the API server, so nothing depends on
// cluster DNS (the probe pods use dnsPolicy Default) or on a Service.

// handoffMode is how this run's pairs start: in one probe pod per node
// (every round's runs over pods/exec, nodepods.go), two pods per pair
// started together (the address handed over pods/attach) or one after
// the other, and why.
type handoffMode struct {
	nodePods bool
	beside   bool
	line     string // the progress line that says which, once per run
}

// handoffTimeout bounds the delivery of the address (one line); once
// delivered, the attach may stay open until the client ends.
const handoffTimeout = time.Minute

// pairStartMode decides once per run how pairs start: one pod per node
// with an executor and the right to create pods/exec in the run's
// namespace; else a pair's client pod beside its server with an attacher
// and the right to create pods/attach; else one after the other
// (suites/deploy's Role grants both; an operator's narrower Role gets a
// slower way, said, never a failed run).
func (r *Runner) pairStartMode(ctx context.Context) handoffMode {
	r.handoffOnce.Do(func() {
		// Why the run does not use node pods: "" when it may not have
		// asked (no executor: a test), else the refusal or the flag.
		noExec := ""
		switch {
		case r.Exec != nil && r.Cfg.NoNodePods:
			noExec = "--node-pods=false"
		case r.Exec != nil:
			ok, why := r.mayCreate(ctx, "exec")
			if ok {
				r.handoff = handoffMode{nodePods: true, line: "pairs: one probe pod per node and variant runs every round's server and client over pods/exec (one pod start per node, not two per pair and round)"}
				return
			}
			noExec = why + "; grant it (suites/deploy's Role does) for one probe pod per node and variant"
		}
		if noExec != "" {
			noExec += ": "
		}
		if r.Attach == nil {
			if noExec != "" {
				r.handoff.line = "pairs: each client pod starts after its server: " + strings.TrimSuffix(noExec, ": ")
			}
			return
		}
		ok, why := r.mayCreate(ctx, "attach")
		switch {
		case ok && noExec != "":
			r.handoff = handoffMode{beside: true, line: "pairs: two pods per pair and round, the client beside its server, its address over pods/attach: " + strings.TrimSuffix(noExec, ": ")}
		case ok:
			r.handoff = handoffMode{beside: true, line: "pairs: each client pod starts beside its server and gets the server's address over pods/attach (one pod start per pair, not two in a row)"}
		default:
			r.handoff.line = "pairs: each client pod starts after its server: " + noExec + why +
				"; grant pods/attach (suites/deploy's Role does) to start a pair's two pods together, one pod start per pair instead of two in a row"
		}
	})
	return r.handoff
}

// mayCreate asks the API server whether the suite may create the pods
// subresource (attach, exec) in the run's namespace; why says what was
// refused or could not be asked.
func (r *Runner) mayCreate(ctx context.Context, sub string) (ok bool, why string) {
	return r.may(ctx, "create", "pods", sub, r.Namespace())
}

// may asks the API server whether the suite may VERB the resource (its
// subresource) in namespace ns ("": cluster-wide).
func (r *Runner) may(ctx context.Context, verb, resource, sub, ns string) (ok bool, why string) {
	review := &authv1.SelfSubjectAccessReview{Spec: authv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authv1.ResourceAttributes{
		Namespace: ns, Verb: verb, Resource: resource, Subresource: sub}}}
	what := resource
	if sub != "" {
		what += "/" + sub
	}
	where := "cluster-wide"
	if ns != "" {
		where = "in namespace " + ns
	}
	actx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	res, err := r.Kube.AuthorizationV1().SelfSubjectAccessReviews().Create(actx, review, metav1.CreateOptions{})
	switch {
	case err != nil:
		return false, fmt.Sprintf("could not ask the API server whether the suite may %s %s %s: %v", verb, what, where, err)
	case !res.Status.Allowed:
		return false, fmt.Sprintf("the suite may not %s %s %s", verb, what, where)
	}
	return true, ""
}

// startTogether starts the pair's server and client pods at once, hands
// the client the server's address once the server has one, and waits for
// the client to end. srvErr is the server pod's failure to start (then
// there is nothing else to judge). The caller deletes the server pod
// returned; the client pod is deleted here.
func (r *Runner) startTogether(ctx context.Context, srvSpec podrun.Spec, clientSpec func([]string) podrun.Spec,
	clientArgs func(host string) ([]string, time.Duration), runs []pairRun) (srv *corev1.Pod, cli podrun.Result, cerr, srvErr error) {
	args, budget := clientArgs(bw.AddressFromStdin)
	cs := clientSpec(args)
	cs.Stdin = true
	type started struct {
		pod  *corev1.Pod
		took time.Duration
		err  error
	}
	sc, cc := make(chan started, 1), make(chan started, 1)
	go func() {
		p, took, err := podrun.Start(ctx, r.Kube, srvSpec, r.Cfg.PodTimeout)
		sc <- started{p, took, err}
	}()
	go func() {
		p, took, err := podrun.StartWaiting(ctx, r.Kube, cs, r.Cfg.PodTimeout)
		cc <- started{p, took, err}
	}()
	s, c := <-sc, <-cc
	if c.pod != nil && !cs.Keep {
		defer podrun.Delete(r.Kube, cs.Namespace, cs.Name)
	}
	if s.err != nil {
		return s.pod, podrun.Result{}, nil, s.err
	}
	r.AddPhase(PhasePodStart, s.took)
	if c.err != nil {
		return s.pod, podrun.Result{}, c.err, nil
	}
	r.AddPhase(PhasePodStart, c.took)

	ip := s.pod.Status.PodIP
	for _, run := range runs {
		// What a shell runs by hand: rdmaprobe bw client … - <<< 10.0.0.7
		run.in.Client.Command += " <<< " + ip
	}
	in := &sentReader{r: strings.NewReader(ip + "\n")}
	actx, stopAttach := context.WithCancel(ctx)
	defer stopAttach()
	late := time.AfterFunc(handoffTimeout, func() {
		if !in.sent.Load() {
			stopAttach()
		}
	})
	defer late.Stop()
	wctx, stopWait := context.WithCancel(ctx)
	defer stopWait()
	handed := make(chan error, 1)
	go func() {
		err := r.Attach.Attach(actx, cs.Namespace, cs.Name, podrun.ContainerName, in)
		if err != nil && !in.sent.Load() {
			stopWait() // without its address the client could only time out
		}
		handed <- err
	}()
	cli, cerr = podrun.Wait(wctx, r.Kube, c.pod, budget)
	// Once sent, the attach may stay open until the container ends; the
	// client's end closes it.
	stopAttach()
	aerr := <-handed
	if aerr != nil && !in.sent.Load() && ctx.Err() == nil {
		cerr = fmt.Errorf("the suite could not hand client pod %s/%s on node %q its server's address %s over pods/attach (within %s): %v",
			cs.Namespace, cs.Name, cs.Node, ip, handoffTimeout, aerr)
	}
	return s.pod, cli, cerr, nil
}

// sentReader is the attach's standard input; sent is set once the stream
// has read all of it (the executor copies stdin to its end).
type sentReader struct {
	r    io.Reader
	sent atomic.Bool
}

func (s *sentReader) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	if err == io.EOF {
		s.sent.Store(true)
	}
	return n, err
}
