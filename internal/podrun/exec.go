package podrun

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
	utilexec "k8s.io/client-go/util/exec"
)

// Execer runs a command in a running pod's container and returns what it
// printed (standard output and error, merged line by line, as the pod's
// log would hold them) and its exit status: how the suite runs every
// round's server and client runs in one probe pod per node.
type Execer interface {
	Exec(ctx context.Context, namespace, pod, container string, cmd []string) (ExecResult, error)
}

// ExecResult is one command's output and exit status. Exited is false
// when the stream ended with an error (ctx ended, the connection failed):
// the process may still run in the container. Exited true is not proof
// that it ended: client-go reads a stream that closes without a status
// (a kubelet restart, an idle-timeout) as exit 0, so a caller that must
// know has the command print its own end (the probe's run frames).
type ExecResult struct {
	Output string
	Exit   int
	Exited bool
}

// RemoteExec is Execer over the API server's pods/exec.
type RemoteExec struct {
	Config *rest.Config
	Kube   kubernetes.Interface
}

// ErrNotStarted (wrapped) is an exec whose command never started: the
// connection to the API server was refused or could not be made, so no
// process ran in the container and the pod is free for the next run.
var ErrNotStarted = errors.New("the command never started")

// StartWindow is how long Exec keeps trying to start a command while the
// API server does not accept connections: an upgrade's restart of the API
// server takes 10 to 30 s, and a pair that waits it out is measured.
var StartWindow = 90 * time.Second

// startRetryEvery spaces the tries.
const startRetryEvery = 2 * time.Second

// neverStarted says that err came before any byte of the exec stream: a
// refused or failed dial to the API server.
func neverStarted(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial" || errors.Is(err, syscall.ECONNREFUSED)
}

// Exec runs cmd in the container until it ends or ctx does. A command
// that ran and exited non-zero is a result, not an error. While the API
// server refuses connections it tries again for up to StartWindow; an
// exec that never started is ErrNotStarted.
func (e RemoteExec) Exec(ctx context.Context, namespace, pod, container string, cmd []string) (ExecResult, error) {
	first := time.Now()
	for {
		res, err := e.once(ctx, namespace, pod, container, cmd)
		if err == nil || res.Output != "" || !neverStarted(err) {
			return res, err
		}
		if time.Since(first) >= StartWindow || ctx.Err() != nil {
			return res, fmt.Errorf("%w: the API server did not accept the exec for %s: %w", ErrNotStarted, time.Since(first).Round(time.Second), err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(startRetryEvery):
		}
	}
}

func (e RemoteExec) once(ctx context.Context, namespace, pod, container string, cmd []string) (ExecResult, error) {
	req := e.Kube.CoreV1().RESTClient().Post().Resource("pods").Namespace(namespace).Name(pod).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{Container: container, Command: cmd, Stdout: true, Stderr: true}, scheme.ParameterCodec)
	ex, err := StreamExecutor(e.Config, req)
	if err != nil {
		return ExecResult{}, fmt.Errorf("exec in pod %s/%s: %w", namespace, pod, err)
	}
	out := &lineMerger{}
	stdout, stderr := out.stream(), out.stream()
	err = ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: stdout, Stderr: stderr})
	stdout.flush()
	stderr.flush()
	res := ExecResult{Output: out.String()}
	var code utilexec.CodeExitError
	switch {
	case err == nil:
		res.Exited = true
	case errors.As(err, &code):
		res.Exit, res.Exited = code.Code, true
	default:
		return res, fmt.Errorf("exec in pod %s/%s: %w", namespace, pod, err)
	}
	return res, nil
}

// lineMerger joins two streams into one text by whole lines: the
// executor copies standard output and error in goroutines of their own,
// and a JSON envelope cut by a diagnostic in its middle could no longer
// be read.
type lineMerger struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (m *lineMerger) String() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.buf.String()
}

func (m *lineMerger) stream() *lineStream { return &lineStream{m: m} }

// lineStream holds one stream's unfinished line until its newline.
type lineStream struct {
	m       *lineMerger
	pending []byte
}

var _ io.Writer = (*lineStream)(nil)

// Write and flush hold the merger's lock throughout: after a cancelled
// stream the executor's copy goroutines may still write while the caller
// flushes.
func (s *lineStream) Write(p []byte) (int, error) {
	s.m.mu.Lock()
	defer s.m.mu.Unlock()
	s.pending = append(s.pending, p...)
	if i := bytes.LastIndexByte(s.pending, '\n'); i >= 0 {
		s.m.buf.Write(s.pending[:i+1])
		s.pending = append(s.pending[:0], s.pending[i+1:]...)
	}
	return len(p), nil
}

// flush writes a last line without its newline.
func (s *lineStream) flush() {
	s.m.mu.Lock()
	defer s.m.mu.Unlock()
	if len(s.pending) == 0 {
		return
	}
	s.m.buf.Write(s.pending)
	s.m.buf.WriteByte('\n')
	s.pending = nil
}

// A stream the runner ends itself (a pair cut by a lost pod, a run past
// its budget, the server stopped after its client) makes client-go's exec
// copy goroutines hand "use of closed network connection" to
// utilruntime.HandleError, which logs one error line per stream and side:
// at fleet scale, hundreds of lines of client-go internals for what the
// pair's row already says. Those are dropped; every other error is
// handled as before.
func init() { utilruntime.ErrorHandlers = withoutClosedStreams(utilruntime.ErrorHandlers) }

// withoutClosedStreams is one handler that passes every error but a closed
// stream's on to handlers.
func withoutClosedStreams(handlers []utilruntime.ErrorHandler) []utilruntime.ErrorHandler {
	return []utilruntime.ErrorHandler{func(ctx context.Context, err error, msg string, kv ...interface{}) {
		if closedStream(err) {
			return
		}
		for _, h := range handlers {
			h(ctx, err, msg, kv...)
		}
	}}
}

// closedStream says err is a read on a connection this process closed.
func closedStream(err error) bool {
	return err != nil && (errors.Is(err, net.ErrClosed) || strings.Contains(err.Error(), "use of closed network connection"))
}
