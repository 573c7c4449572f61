package disrupt

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/rdmasuite/rdmasuite/internal/podrun"
	"github.com/rdmasuite/rdmasuite/reports"
	"github.com/rdmasuite/rdmasuite/thresholds"
)

// Options are the feature's settings (the suite's flags).
type Options struct {
	Namespace, RunID, Image string
	PodTimeout              time.Duration
	Keep                    bool // --keep-on-failure: leave writer and verify pods

	Targets  []string // --disrupt-nodes, in order
	Peer     string   // --stall-peer
	Selected []string // the run's selected nodes: peer fallback

	PVCNamespace, PVCName string
	// ScopedPVC is set by Run: the run's PVC the pods mount.
	ScopedPVC string

	MOFEDNamespace, MOFEDSelector, MOFEDContainer string
	DriverReadyFile                               string
	DriverTimeout, Steady, After                  time.Duration
	Durability                                    string
	Force                                         bool

	Thresholds *thresholds.Set
	SKU        string
}

// Env is what the feature acts through; tests inject a fake clientset,
// exec, log reader and clock.
type Env struct {
	Kube kubernetes.Interface
	Exec Execer
	// Clock defaults to the wall clock; Poll (default 1 s) is the poll
	// interval of every wait (the driver wait polls at twice it).
	Clock Clock
	Poll  time.Duration
	// Logs reads a container's log (default: the API's pod log).
	Logs func(ctx context.Context, ns, pod, container string, previous bool, tail int64) (string, error)
	// Printf reports progress (default: stdout, prefixed).
	Printf func(format string, a ...any)
}

func (e Env) clock() Clock {
	if e.Clock == nil {
		return realClock{}
	}
	return e.Clock
}

func (e Env) every() time.Duration {
	if e.Poll <= 0 {
		return time.Second
	}
	return e.Poll
}

func (e Env) logs(ctx context.Context, ns, pod, container string, previous bool, tail int64) (string, error) {
	if e.Logs != nil {
		return e.Logs(ctx, ns, pod, container, previous, tail)
	}
	return containerLogs(ctx, e, ns, pod, container, previous, tail)
}

func (e Env) printf(format string, a ...any) {
	if e.Printf != nil {
		e.Printf(format, a...)
		return
	}
	fmt.Printf("rdmasuite: disruptive: "+format+"\n", a...)
}

func (e Env) deletePod(ns, name string) { podrun.Delete(e.Kube, ns, name) }

// Run is the feature: for each target node in order, writers on it and on
// a peer, the MOFED pod deleted, its replacement awaited, the writers
// stopped and verified, and two checks judged. A driver that does not come
// back stops the feature: later targets are not disrupted. The run's PV
// and PVC are deleted on every path.
func Run(ctx context.Context, env Env, o Options) []reports.Check {
	pv, vol, err := lookupVolume(ctx, env.Kube, o.PVCNamespace, o.PVCName)
	if err != nil {
		return setupChecks(o, err)
	}
	if !vol.NFS {
		if !o.Force {
			return setupChecks(o, &setupError{NotRun: true, Msg: vol.NotNFSReason()})
		}
		vol.Forced = true
	}
	vol.ScopedPV, vol.ScopedPVC = ScopedNames(o.RunID, pv.Name)
	o.ScopedPVC = vol.ScopedPVC
	cleanup, err := createScoped(ctx, env, pv, o.RunID, o.Namespace, o.PodTimeout)
	defer cleanup()
	if err != nil {
		return setupChecks(o, &setupError{Msg: err.Error()})
	}
	env.printf("%s", vol.Describe())
	var out []reports.Check
	halted := ""
	for _, target := range o.Targets {
		peer, _ := PickPeer(target, o.Peer, o.Targets, o.Selected)
		if halted != "" {
			out = append(out, pair(target, peer, reports.NotRun, halted)...)
			continue
		}
		start := env.clock().Now()
		cs, lost := round(ctx, env, o, vol, target, peer)
		for i := range cs {
			cs[i].Duration = env.clock().Now().Sub(start).Seconds()
		}
		out = append(out, cs...)
		switch {
		case ctx.Err() != nil:
			halted = fmt.Sprintf("not disrupted: the run stopped (%v)", ctx.Err())
		case lost:
			halted = fmt.Sprintf("not disrupted: the driver on %s did not come back; fix it first", target)
		}
	}
	return out
}

// setupChecks is every target's pair of checks for a problem found before
// anything was disrupted.
func setupChecks(o Options, err error) []reports.Check {
	st, msg := reports.Error, err.Error()
	if se, ok := err.(*setupError); ok && se.NotRun {
		st = reports.NotRun
	}
	var out []reports.Check
	for _, t := range o.Targets {
		peer, _ := PickPeer(t, o.Peer, o.Targets, o.Selected)
		out = append(out, pair(t, peer, st, msg)...)
	}
	return out
}

// pair is a target's two checks with one status and reason.
func pair(target, peer string, st reports.Status, reason string) []reports.Check {
	a, b := newChecks(target, peer)
	a.Status, a.Reason = st, reason
	b.Status, b.Reason = st, reason
	return []reports.Check{a, b}
}

func newChecks(target, peer string) (reports.Check, reports.Check) {
	// The timeline (pod deleted at T, driver Ready at T+x, I/O resumed at
	// T+y, verification) is the point of a pass too: reports show it.
	t := reports.Check{ID: CheckStall, Nodes: []string{target}, ShowEvidence: true,
		Title: "NFS I/O on a node survives its MOFED driver restart: stall within the SKU limit, no acknowledged record lost"}
	nodes := []string{target}
	if peer != "" {
		nodes = []string{peer, target}
	}
	p := reports.Check{ID: CheckPeer, Nodes: nodes, ShowEvidence: true,
		Title: "NFS I/O on a peer node (same volume) while another node's MOFED driver restarts"}
	return t, p
}

// PickPeer is the node the peer writer and the cross-node verification
// run on: --stall-peer, else the first other node of --disrupt-nodes, else
// the first other selected node.
func PickPeer(target, explicit string, targets, selected []string) (string, bool) {
	if explicit != "" && explicit != target {
		return explicit, true
	}
	for _, list := range [][]string{targets, selected} {
		for _, n := range list {
			if n != target {
				return n, true
			}
		}
	}
	return "", false
}

// round disrupts one target; lost is true when its driver did not come
// back (the feature then stops disrupting).
func round(ctx context.Context, env Env, o Options, vol Volume, target, peer string) ([]reports.Check, bool) {
	if peer == "" {
		return pair(target, "", reports.NotRun, fmt.Sprintf("no peer node for %s: give --stall-peer or a second node in --disrupt-nodes", target)), false
	}
	node, err := env.Kube.CoreV1().Nodes().Get(ctx, target, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return pair(target, peer, reports.NotRun, fmt.Sprintf("node %s (--disrupt-nodes) does not exist", target)), false
	}
	if err != nil {
		return pair(target, peer, reports.Error, fmt.Sprintf("read node %s: %v", target, err)), false
	}
	r := Round{Target: target, Peer: peer, Volume: vol}
	sku, err := o.Thresholds.ForNode(target, node.Labels, o.SKU)
	if err != nil {
		return pair(target, peer, reports.Error, fmt.Sprintf("no stall limit for %s, so nothing was disrupted: %v", target, err)), false
	}
	if err := sku.Given("maxNFSStallSec"); err != nil {
		// Nothing to judge the stall against: nothing is disrupted.
		return pair(target, peer, reports.NotRun, fmt.Sprintf("%v; nothing was disrupted", err)), false
	}
	r.Max = &reports.Threshold{Op: "<=", Value: *sku.MaxNFSStallSec.Value, Source: sku.Name + ": " + sku.MaxNFSStallSec.Source}

	old, why, err := findDriverPod(ctx, env, o, target)
	switch {
	case err != nil:
		return pair(target, peer, reports.Error, err.Error()), false
	case why != "":
		return pair(target, peer, reports.NotRun, why), false
	}

	sub := roundSubPath(o.RunID, target)
	r.SubPath = sub
	pods := roundPods(o.RunID, target, peer)
	r.Writer = Writer{Node: target, ID: WriterID(target), Dir: DataMount, SubPath: sub, Pod: pods.Writer}
	r.PeerWriter = Writer{Node: peer, ID: WriterID(peer), Dir: DataMount, SubPath: sub, Pod: pods.PeerWriter}
	if r.PeerWriter.ID == r.Writer.ID {
		r.PeerWriter.ID = WriterID("peer-" + peer)
	}
	ws := []*Writer{&r.Writer, &r.PeerWriter}
	for i, w := range ws {
		if _, err := env.Kube.CoreV1().Pods(o.Namespace).Create(ctx, writerPod(o, w, i == 0), metav1.CreateOptions{}); err != nil {
			return pair(target, peer, reports.Error, fmt.Sprintf("create writer pod %s on %s: %v (nothing was disrupted)", w.Pod, w.Node, err)), false
		}
		if !o.Keep {
			defer env.deletePod(o.Namespace, w.Pod)
		}
	}
	env.printf("%s: writers %s (on %s) and %s (on %s) writing to %s on the volume", target, r.Writer.Pod, target, r.PeerWriter.Pod, peer, sub)
	created := env.clock().Now()
	if why := waitSteady(ctx, env, o, ws); why != "" {
		return pair(target, peer, reports.NotRun, "the writers never wrote steadily, so nothing was disrupted: "+why), false
	}
	env.printf("%s: both writers write steadily %.1f s after their pods were created; %s more before the deletion", target,
		env.clock().Now().Sub(created).Seconds(), o.Steady)
	if err := sleep(ctx, env.clock(), o.Steady); err != nil {
		return pair(target, peer, reports.NotRun, fmt.Sprintf("the run stopped before the disruption (%v)", err)), false
	}

	// T: the runner's clock when it deletes the driver pod.
	r.Driver = Driver{Old: refOf(old), Timeout: o.DriverTimeout, DeletedAt: env.clock().Now()}
	uid := old.UID
	err = env.Kube.CoreV1().Pods(o.MOFEDNamespace).Delete(ctx, old.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	if err != nil {
		stopAndCollect(ctx, env, o, ws)
		return pair(target, peer, reports.Error, fmt.Sprintf("delete MOFED pod %s/%s (needs pods delete in %s): %v; nothing was disrupted",
			o.MOFEDNamespace, old.Name, o.MOFEDNamespace, err)), false
	}
	env.printf("%s: deleted MOFED pod %s/%s (uid %s, restarts %d); waiting up to %s for a new one to be Ready",
		target, o.MOFEDNamespace, old.Name, old.UID, r.Driver.Old.Restarts, o.DriverTimeout)
	_ = waitReplacement(ctx, env, o, target, &r.Driver)
	if r.Driver.Back {
		env.printf("%s: new MOFED pod %s Ready %.1f s after the deletion; waiting for I/O to resume, then %s", target, r.Driver.New.Name,
			r.Driver.SeenAt.Sub(r.Driver.DeletedAt).Seconds(), o.After)
		waitResumed(ctx, env, o, ws, o.DriverTimeout)
		_ = sleep(ctx, env.clock(), o.After)
	} else if !r.Driver.Interrupted {
		env.printf("%s: the MOFED driver did NOT come back within %s; stopping the writers, no further node is disrupted", target, r.Driver.waitLimit())
	}
	r.Cross = Verify{Node: peer, Pod: pods.Verify}
	// The verify pod starts now, beside the stop (heldVerifyPod), where an
	// exec client can run the verification in it; without one, it is
	// created when needed and runs the verification itself.
	held := false
	if env.Exec != nil && ctx.Err() == nil {
		hold := 2*o.PodTimeout + 2*time.Minute
		if _, err := env.Kube.CoreV1().Pods(o.Namespace).Create(ctx, heldVerifyPod(o, &r.Cross, hold), metav1.CreateOptions{}); err == nil {
			held = true
			if !o.Keep {
				defer env.deletePod(o.Namespace, r.Cross.Pod)
			}
		}
	}
	stopping := env.clock().Now()
	stopAndCollect(ctx, env, o, ws)
	env.printf("%s: writers stopped and their results read in %.1f s", target, env.clock().Now().Sub(stopping).Seconds())
	switch {
	case r.Writer.Result == nil || r.PeerWriter.Result == nil:
		r.Cross.Problem = "not run: a writer left no finished file to verify"
	case hung(r.Writer.Result) || hung(r.PeerWriter.Result):
		r.Cross.Problem = "not run: a writer's I/O was still hung at the stop, reading its file would hang too"
	case ctx.Err() != nil:
		r.Cross.Problem = fmt.Sprintf("not run: the run stopped (%v)", ctx.Err())
	default:
		verifying := env.clock().Now()
		ids := []string{r.Writer.ID, r.PeerWriter.ID}
		if held {
			runHeldVerify(ctx, env, o, &r.Cross, sub, ids)
			env.printf("%s: cross-node verification on %s took %.1f s (its pod started beside the writers' stop)", target, peer, env.clock().Now().Sub(verifying).Seconds())
		} else {
			runVerify(ctx, env, o, &r.Cross, sub, ids)
			env.printf("%s: cross-node verification on %s took %.1f s (pod start included)", target, peer, env.clock().Now().Sub(verifying).Seconds())
		}
	}
	return Judge(r), !r.Driver.Back && !r.Driver.Interrupted
}

func hung(r *Result) bool {
	return r.StallOngoing || (r.LongestGap != nil && r.LongestGap.Ongoing)
}
