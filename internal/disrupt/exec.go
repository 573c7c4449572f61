package disrupt

import (
	"bytes"
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"

	"github.com/rdmasuite/rdmasuite/internal/podrun"
)

// Execer runs a command in a pod's container (no shell, no stdin).
type Execer interface {
	Exec(ctx context.Context, namespace, pod, container string, command []string) (stdout, stderr string, err error)
}

// RemoteExec is Execer over the API server's pods/exec (client-go's
// remotecommand: WebSocket, falling back to SPDY as kubectl does).
type RemoteExec struct {
	Config *rest.Config
	Kube   kubernetes.Interface
}

// Exec runs command and returns what it printed; a non-zero exit is an
// error.
func (e RemoteExec) Exec(ctx context.Context, namespace, pod, container string, command []string) (string, string, error) {
	req := e.Kube.CoreV1().RESTClient().Post().Resource("pods").Namespace(namespace).Name(pod).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{Container: container, Command: command, Stdout: true, Stderr: true}, scheme.ParameterCodec)
	exec, err := podrun.StreamExecutor(e.Config, req)
	if err != nil {
		return "", "", err
	}
	var stdout, stderr bytes.Buffer
	err = exec.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: &stdout, Stderr: &stderr})
	return stdout.String(), stderr.String(), err
}
