package disrupt

import (
	"context"
	"errors"
	"fmt"
	"path"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rdmasuite/rdmasuite/internal/names"
	"github.com/rdmasuite/rdmasuite/internal/podrun"
	"github.com/rdmasuite/rdmasuite/workloads/probeout"
	"github.com/rdmasuite/rdmasuite/workloads/stall"
)

// ProbeBinary is rdmaprobe's path in the probe image (exec has no shell).
const ProbeBinary = "/usr/local/bin/rdmaprobe"

// DataMount is where writer and verify pods mount the run's PVC.
const DataMount = "/data"

// SteadyLine is what a writer prints on stderr once it writes steadily.
const SteadyLine = stall.SteadyLine

// Writer is one `rdmaprobe stall write` pod and what it left.
type Writer struct {
	Node, Pod string
	ID, Dir   string
	SubPath   string // of the volume, mounted at Dir
	Result    *Result
	ProbeErr  string // the envelope's typed error
	Exit      int32
	// Problem says why there is no complete result (never reached steady
	// state, did not finish after the stop, printed no envelope).
	Problem string
	StopErr string
	// Stuck: the writer printed its result but its process did not exit
	// (hung I/O); the result stands, this goes into the evidence.
	Stuck   string
	LogTail string
	// ResumedAt: runner clock when its progress moved again after the
	// driver was back (zero when not seen).
	ResumedAt time.Time
	// NoProgressLines: the writer printed no acknowledged count, so the
	// runner could only wait --stall-after after the driver was back.
	NoProgressLines bool
}

// Verify is the cross-node `rdmaprobe stall verify` pod.
type Verify struct {
	Node, Pod string
	Result    *Result
	Exit      int32
	Problem   string
}

// podNames are one round's pod names.
type podNames struct{ Writer, PeerWriter, Verify string }

// roundPods names the pods of the round that disrupts target. The run id
// is part of every name: with --namespace several runs share a namespace,
// and a name another run holds would fail to create or be cleaned up by it.
func roundPods(runID, target, peer string) podNames {
	return podNames{
		Writer:     names.Object("stall-w", target, target, runID),
		PeerWriter: names.Object("stall-w", peer, target, runID),
		Verify:     names.Object("stall-v", peer, target, runID),
	}
}

// roundSubPath is where one target's round writes on the volume: the
// PVC is mounted with this subPath (kubelet creates it; the probe does not
// create directories), so every round starts without old stop files and a
// run's files stay under one directory of the export.
func roundSubPath(runID, target string) string {
	return "rdmasuite-" + runID + "/" + names.Object("stall", target)
}

// WriterID is a node's writer id: the probe takes at most 32 bytes of
// [A-Za-z0-9._-] (stall.ValidateWriterID); longer node names keep their
// front and a hash of the whole name.
func WriterID(node string) string {
	if stall.ValidateWriterID(node) == nil {
		return node
	}
	h := names.Object("w", node)
	front := []byte(node[:min(len(node), 23)])
	for i, c := range front {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			front[i] = '-'
		}
	}
	id := strings.Trim(string(front), "-.") + "-" + h[len(h)-8:]
	return strings.TrimLeft(id, "-.")
}

// writerDuration bounds a writer that the runner never stops (a killed
// run): every wait of a round, plus slack.
func writerDuration(o Options) time.Duration {
	return o.PodTimeout*3 + o.Steady + 2*o.DriverTimeout + o.After + time.Minute
}

// writerPod is the pod of one writer: the PVC at /data and, on the target,
// the directory of the driver's readiness file read-only under /host.
func writerPod(o Options, w *Writer, watch bool) *corev1.Pod {
	args := []string{"stall", "write", "--dir", w.Dir, "--writer-id", w.ID, "--durability", o.Durability,
		"--duration", writerDuration(o).String()}
	s := podrun.Spec{Name: w.Pod, Namespace: o.Namespace, RunID: o.RunID, Node: w.Node, Image: o.Image, Args: args,
		Labels: map[string]string{"rdmasuite.io/role": "stall-writer"}}
	if watch {
		dir := path.Dir(o.DriverReadyFile)
		s.HostMounts = map[string]string{dir: path.Join("/host", dir)}
		s.Args = append(s.Args, "--watch-file", path.Join("/host", o.DriverReadyFile))
	}
	p := podrun.Pod(s)
	// See what the host mounts there later too (the driver container may
	// remount its directory when it restarts).
	hostToContainer := corev1.MountPropagationHostToContainer
	for i := range p.Spec.Containers[0].VolumeMounts {
		p.Spec.Containers[0].VolumeMounts[i].MountPropagation = &hostToContainer
	}
	return withData(p, o.ScopedPVC, w.SubPath)
}

// verifyArgs are `rdmaprobe stall verify`'s arguments for a round's files.
// The pod mounts the volume's root, not the round's subPath: once every
// record verified, the probe deletes the files and the round's directory
// (--remove-on-ok), which it could not do to its own mount point. Data that
// failed to verify stays for inspection.
func verifyArgs(subPath string, ids []string) []string {
	return []string{"stall", "verify", "--dir", path.Join(DataMount, subPath), "--writer-id", strings.Join(ids, ","), "--remove-on-ok"}
}

// verifyPod re-verifies the writers' finished files from another pod.
func verifyPod(o Options, v *Verify, subPath string, ids []string) *corev1.Pod {
	s := podrun.Spec{Name: v.Pod, Namespace: o.Namespace, RunID: o.RunID, Node: v.Node, Image: o.Image,
		Args: verifyArgs(subPath, ids), Labels: map[string]string{"rdmasuite.io/role": "stall-verify"}}
	return withData(podrun.Pod(s), o.ScopedPVC, "")
}

// heldVerifyPod is the verify pod created when the writers are told to
// stop: it idles (`rdmaprobe say --sleep`) until the runner execs the
// verification in it, so its start on the peer overlaps the writers' stop
// and collection instead of following them (a pod start can take tens of
// seconds on a slow node). Its start cannot disturb the measurement, which ended
// at the stop. It idles at most hold; the runner deletes it when done.
func heldVerifyPod(o Options, v *Verify, hold time.Duration) *corev1.Pod {
	s := podrun.Spec{Name: v.Pod, Namespace: o.Namespace, RunID: o.RunID, Node: v.Node, Image: o.Image,
		Args:   []string{"say", "--sleep", hold.String(), "cross-node verify pod: idle until the runner execs rdmaprobe stall verify"},
		Labels: map[string]string{"rdmasuite.io/role": "stall-verify"}}
	return withData(podrun.Pod(s), o.ScopedPVC, "")
}

func withData(p *corev1.Pod, pvc, subPath string) *corev1.Pod {
	p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "data",
		VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: pvc}}})
	p.Spec.Containers[0].VolumeMounts = append(p.Spec.Containers[0].VolumeMounts, corev1.VolumeMount{Name: "data", MountPath: DataMount, SubPath: subPath})
	return p
}

func exitCode(p *corev1.Pod) int32 {
	if p == nil {
		return -1
	}
	for _, c := range p.Status.ContainerStatuses {
		if t := c.State.Terminated; t != nil {
			return t.ExitCode
		}
	}
	return -1
}

// waitSteady waits until every writer printed SteadyLine. A writer that
// ended or stayed silent is the returned reason (with its log's tail).
func waitSteady(ctx context.Context, env Env, o Options, ws []*Writer) string {
	steady := make([]bool, len(ws))
	var why string
	err := poll(ctx, env.clock(), env.every(), o.PodTimeout, func(ctx context.Context) (bool, error) {
		all := true
		for i, w := range ws {
			if steady[i] {
				continue
			}
			logs, _ := env.logs(ctx, o.Namespace, w.Pod, "probe", false, 0)
			if strings.Contains(logs, SteadyLine) {
				steady[i] = true
				continue
			}
			all = false
			p, err := env.Kube.CoreV1().Pods(o.Namespace).Get(ctx, w.Pod, metav1.GetOptions{})
			if err == nil && podrun.Finished(p) {
				why = fmt.Sprintf("writer %s on %s ended (exit %d) before it wrote steadily: %s; log: %s",
					w.Pod, w.Node, exitCode(p), podrun.Describe(p), lastLines(logs, 5))
				return false, errWriterEnded
			}
		}
		return all, nil
	})
	switch {
	case err == nil:
		return ""
	case why != "":
		return why
	}
	var parts []string
	for i, w := range ws {
		if steady[i] {
			continue
		}
		logs, _ := env.logs(context.WithoutCancel(ctx), o.Namespace, w.Pod, "probe", false, 0)
		state := "pod not found"
		if p, err := env.Kube.CoreV1().Pods(o.Namespace).Get(context.WithoutCancel(ctx), w.Pod, metav1.GetOptions{}); err == nil {
			state = podrun.Describe(p)
		}
		parts = append(parts, fmt.Sprintf("writer %s on %s did not print %q within %s (%v): %s; log: %s",
			w.Pod, w.Node, SteadyLine, o.PodTimeout, err, state, orNone(lastLines(logs, 5))))
	}
	return strings.Join(parts, "; ")
}

var errWriterEnded = fmt.Errorf("writer ended")

func orNone(s string) string {
	if strings.TrimSpace(s) == "" {
		return "(empty)"
	}
	return s
}

var (
	ackAfter  = regexp.MustCompile(`(?i)\b(?:acknowledged|acked|ack)\b\s*[=:]?\s*(\d+)`)
	ackBefore = regexp.MustCompile(`(?i)(\d+)\s+(?:records?\s+)?(?:acknowledged|acked)\b`)
)

// progress is the last acknowledged count a writer's progress lines show
// ("stall: … acknowledged=N", "stall: N acknowledged", …); ok is false
// when it printed none.
func progress(logs string) (int64, bool) {
	lines := strings.Split(logs, "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		l := lines[i]
		if !strings.Contains(l, "stall:") || strings.HasPrefix(strings.TrimSpace(l), "{") {
			continue
		}
		for _, re := range []*regexp.Regexp{ackAfter, ackBefore} {
			if m := re.FindStringSubmatch(l); m != nil {
				if n, err := strconv.ParseInt(m[1], 10, 64); err == nil {
					return n, true
				}
			}
		}
	}
	return 0, false
}

// waitResumed waits until every writer's acknowledged count moved past
// what it was when the driver was back (I/O resumed), at most timeout.
// Writers that print no count are not waited for (NoProgressLines).
func waitResumed(ctx context.Context, env Env, o Options, ws []*Writer, timeout time.Duration) {
	base := make([]int64, len(ws))
	watching := make([]bool, len(ws))
	for i, w := range ws {
		logs, _ := env.logs(ctx, o.Namespace, w.Pod, "probe", false, 0)
		n, ok := progress(logs)
		base[i], watching[i] = n, ok
		w.NoProgressLines = !ok
	}
	_ = poll(ctx, env.clock(), env.every(), timeout, func(ctx context.Context) (bool, error) {
		all := true
		for i, w := range ws {
			if !watching[i] || !w.ResumedAt.IsZero() {
				continue
			}
			logs, _ := env.logs(ctx, o.Namespace, w.Pod, "probe", false, 0)
			if n, ok := progress(logs); ok && n > base[i] {
				w.ResumedAt = env.clock().Now()
				continue
			}
			if p, err := env.Kube.CoreV1().Pods(o.Namespace).Get(ctx, w.Pod, metav1.GetOptions{}); err == nil && podrun.Finished(p) {
				continue // it ended on its own; the envelope says why
			}
			all = false
		}
		return all, nil
	})
}

// stopAndCollect asks every writer to stop (exec `rdmaprobe stall stop`:
// the stop file on the volume), waits for the pods to end and reads their
// envelopes.
func stopAndCollect(ctx context.Context, env Env, o Options, ws []*Writer) {
	// The stop and the collection must happen even when the run is being
	// cancelled: what the writers measured is the point of the feature.
	cctx := context.WithoutCancel(ctx)
	execLimit, waitLimit := time.Minute, o.PodTimeout
	if ctx.Err() != nil {
		// The run is being torn down (deadline, signal): be quick.
		execLimit, waitLimit = 10*time.Second, 20*time.Second
	}
	// Every writer is signalled at once: an exec into a pod on a slow or
	// hung node must not delay the other writer's stop (and so its
	// recorded end) by its own start-up.
	var stops sync.WaitGroup
	for _, w := range ws {
		if env.Exec == nil {
			w.StopErr = "no exec client: the writer stops on its --duration"
			continue
		}
		stops.Add(1)
		go func(w *Writer) {
			defer stops.Done()
			ectx, cancel := context.WithTimeout(cctx, execLimit)
			defer cancel()
			stdout, stderr, err := env.Exec.Exec(ectx, o.Namespace, w.Pod, "probe",
				// A signal, not the stop file: on a target whose driver did not
				// come back the mount is hung, and creating a file on it would
				// hang this exec too. The writer is its container's PID 1.
				[]string{ProbeBinary, "stall", "stop", "--signal-pid", "1"})
			if err != nil {
				w.StopErr = fmt.Sprintf("exec %s stall stop in %s: %v %s", ProbeBinary, w.Pod, err, oneLine(stdout+" "+stderr, 300))
			}
		}(w)
	}
	stops.Wait()
	for _, w := range ws {
		var last *corev1.Pod
		stopped := env.clock().Now()
		// A writer whose I/O is hung prints its result (the stall still
		// open) and then cannot exit: the kernel holds the process in the
		// hung NFS call, for as long as the mount is hung. Its result is
		// final once printed, so the wait ends there instead of at the
		// limit (minutes on a target whose driver did not come back).
		var hung *Result
		var hungErr string
		err := poll(cctx, env.clock(), env.every(), waitLimit, func(ctx context.Context) (bool, error) {
			p, err := env.Kube.CoreV1().Pods(o.Namespace).Get(ctx, w.Pod, metav1.GetOptions{})
			if err != nil {
				return false, nil
			}
			last = p
			if podrun.Finished(p) {
				return true, nil
			}
			if logs, err := env.logs(ctx, o.Namespace, w.Pod, "probe", false, 0); err == nil {
				hung, hungErr = hungResult(logs)
			}
			return hung != nil, nil
		})
		logs, lerr := env.logs(cctx, o.Namespace, w.Pod, "probe", false, 0)
		w.LogTail = lastLines(logs, 5)
		w.Exit = exitCode(last)
		if err == nil && hung != nil && !podrun.Finished(last) {
			w.Result, w.ProbeErr = hung, hungErr
			w.Stuck = fmt.Sprintf("writer %s on %s printed its result but had not exited %.0f s after the stop (%s): its I/O is still hung in the kernel",
				w.Pod, w.Node, env.clock().Now().Sub(stopped).Seconds(), podrun.Describe(last))
			continue
		}
		if err != nil {
			state := "pod not found"
			if last != nil {
				state = podrun.Describe(last)
			}
			// What the writer printed before the limit: an ongoing stall
			// (hung I/O: judged, and said to be stuck), a whole result
			// (not judged: no exit status goes with it), or nothing.
			r, perr, parseErr := ParseResult(logs)
			printed := lerr == nil && parseErr == nil && r != nil
			switch {
			case printed && perr != nil && perr.Kind == probeout.KindTimeout:
				w.Result, w.ProbeErr = r, perr.Error()
				w.Stuck = fmt.Sprintf("writer %s on %s printed its result but did not exit within %s of the stop (%s): its I/O is still hung in the kernel", w.Pod, w.Node, waitLimit, state)
				continue
			case printed && perr == nil:
				// Its exit status says whether the run itself went right
				// (3: its own verification failed). Seen when the runtime
				// never reported the exit (containerd 1.6 with crun after
				// a slow task delete).
				w.Problem = fmt.Sprintf("writer %s on %s printed its result, but its pod did not end within %s of the stop (%s), so its exit status was never reported and the result is not judged: "+
					"did the container runtime record the exit? (the node's containerd log; kubectl describe pod)", w.Pod, w.Node, waitLimit, state)
			default:
				w.Problem = fmt.Sprintf("writer %s on %s did not end within %s of the stop (%s): is its I/O still hung?", w.Pod, w.Node, waitLimit, state)
			}
			if w.StopErr != "" {
				w.Problem += "; the stop failed: " + w.StopErr
			}
			continue
		}
		if lerr != nil {
			w.Problem = fmt.Sprintf("logs of writer %s: %v", w.Pod, lerr)
			continue
		}
		w.setResult(logs)
	}
}

// hungResult is the result a writer printed with the probe's word for I/O
// still hung at the stop (a timeout error), or nil.
func hungResult(logs string) (*Result, string) {
	if r, perr, err := ParseResult(logs); err == nil && perr != nil && perr.Kind == probeout.KindTimeout {
		return r, perr.Error()
	}
	return nil, ""
}

// setResult parses a finished writer's envelope. Exit 0 and 3 (its own
// verification failed) carry a result; so does exit 1 with a timeout
// error, the probe's word for I/O still hung at the stop (the stall is
// ongoing, verification not run). Anything else is a problem.
func (w *Writer) setResult(logs string) {
	r, perr, err := ParseResult(logs)
	if err != nil {
		w.Problem = fmt.Sprintf("writer %s on %s (exit %d) left no stall result: %v", w.Pod, w.Node, w.Exit, err)
		return
	}
	if perr != nil {
		w.ProbeErr = perr.Error()
	}
	hung := perr != nil && perr.Kind == probeout.KindTimeout
	if w.Exit != 0 && w.Exit != 3 && !hung {
		w.Problem = fmt.Sprintf("writer %s on %s exited %d (could not run)", w.Pod, w.Node, w.Exit)
		if w.ProbeErr != "" {
			w.Problem += ": " + w.ProbeErr
		}
		return
	}
	w.Result = r
}

// runHeldVerify runs the cross-node verification by exec in the held
// verify pod (heldVerifyPod), once it runs, and reads its result from the
// exec's output: exit 0 or 3 carry a result, as for a verify pod.
func runHeldVerify(ctx context.Context, env Env, o Options, v *Verify, subPath string, ids []string) {
	cctx := context.WithoutCancel(ctx)
	last, err := waitPod(cctx, env, o, v.Pod, func(p *corev1.Pod) bool {
		for _, c := range p.Status.ContainerStatuses {
			if c.State.Running != nil {
				return true
			}
		}
		return podrun.Finished(p)
	})
	if err != nil || podrun.Finished(last) {
		state := "pod not found"
		if last != nil {
			state = podrun.Describe(last)
		}
		v.Problem = fmt.Sprintf("verify pod %s on %s was not running within %s: %s", v.Pod, v.Node, o.PodTimeout, state)
		return
	}
	ectx, cancel := context.WithTimeout(cctx, o.PodTimeout)
	defer cancel()
	stdout, stderr, err := env.Exec.Exec(ectx, o.Namespace, v.Pod, "probe", append([]string{ProbeBinary}, verifyArgs(subPath, ids)...))
	var exit interface{ ExitStatus() int }
	switch {
	case err == nil:
		v.Exit = 0
	case errors.As(err, &exit):
		v.Exit = int32(exit.ExitStatus())
	default:
		v.Problem = fmt.Sprintf("exec %s stall verify in %s on %s: %v %s", ProbeBinary, v.Pod, v.Node, err, oneLine(stdout+" "+stderr, 300))
		return
	}
	v.setResult(stdout)
}

// setResult reads a verification's envelope: exit 0 and 3 (a file failed)
// carry a result; anything else is a problem.
func (v *Verify) setResult(logs string) {
	r, perr, perrParse := ParseResult(logs)
	switch {
	case perrParse != nil:
		v.Problem = fmt.Sprintf("verify pod %s on %s (exit %d) left no stall result: %v", v.Pod, v.Node, v.Exit, perrParse)
	case v.Exit != 0 && v.Exit != 3:
		v.Problem = fmt.Sprintf("verify pod %s on %s exited %d (could not run)", v.Pod, v.Node, v.Exit)
		if perr != nil {
			v.Problem += ": " + perr.Error()
		}
	default:
		v.Result = r
	}
}

// waitPod polls pod name until done holds or o.PodTimeout passes; last is
// the pod as last read (nil when never read).
func waitPod(ctx context.Context, env Env, o Options, name string, done func(*corev1.Pod) bool) (last *corev1.Pod, err error) {
	err = poll(ctx, env.clock(), env.every(), o.PodTimeout, func(ctx context.Context) (bool, error) {
		p, err := env.Kube.CoreV1().Pods(o.Namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		last = p
		return done(p), nil
	})
	return last, err
}

// runVerify runs the cross-node verification pod and reads its result.
func runVerify(ctx context.Context, env Env, o Options, v *Verify, subPath string, ids []string) {
	cctx := context.WithoutCancel(ctx)
	if _, err := env.Kube.CoreV1().Pods(o.Namespace).Create(cctx, verifyPod(o, v, subPath, ids), metav1.CreateOptions{}); err != nil {
		v.Problem = fmt.Sprintf("create verify pod %s: %v", v.Pod, err)
		return
	}
	if !o.Keep {
		defer env.deletePod(o.Namespace, v.Pod)
	}
	last, err := waitPod(cctx, env, o, v.Pod, podrun.Finished)
	v.Exit = exitCode(last)
	logs, _ := env.logs(cctx, o.Namespace, v.Pod, "probe", false, 0)
	if err != nil {
		state := "pod not found"
		if last != nil {
			state = podrun.Describe(last)
		}
		v.Problem = fmt.Sprintf("verify pod %s on %s did not end within %s: %s; log: %s", v.Pod, v.Node, o.PodTimeout, state, orNone(lastLines(logs, 5)))
		return
	}
	v.setResult(logs)
}

// ValidDurability accepts the writer's --durability values: fsync,
// fsync-every=N (N ≥ 1) and direct.
func ValidDurability(s string) error {
	_, err := stall.ParseDurability(s)
	return err
}
