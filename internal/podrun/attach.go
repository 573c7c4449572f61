package podrun

import (
	"context"
	"fmt"
	"io"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
)

// Attacher writes to the standard input of a running pod's container
// (Spec.Stdin): how the suite hands a client pod, started beside its
// server, the server's address once the server has one.
type Attacher interface {
	Attach(ctx context.Context, namespace, pod, container string, stdin io.Reader) error
}

// RemoteAttach is Attacher over the API server's pods/attach.
type RemoteAttach struct {
	Config *rest.Config
	Kube   kubernetes.Interface
}

// Attach sends stdin to the container and returns once it was delivered
// (stdin's end closes the container's standard input: stdin once) or ctx
// ends.
func (a RemoteAttach) Attach(ctx context.Context, namespace, pod, container string, stdin io.Reader) error {
	req := a.Kube.CoreV1().RESTClient().Post().Resource("pods").Namespace(namespace).Name(pod).SubResource("attach").
		VersionedParams(&corev1.PodAttachOptions{Container: container, Stdin: true}, scheme.ParameterCodec)
	exec, err := StreamExecutor(a.Config, req)
	if err != nil {
		return fmt.Errorf("attach to pod %s/%s: %w", namespace, pod, err)
	}
	if err := exec.StreamWithContext(ctx, remotecommand.StreamOptions{Stdin: stdin}); err != nil {
		return fmt.Errorf("attach to pod %s/%s: %w", namespace, pod, err)
	}
	return nil
}

// StreamExecutor is the executor for a pods/exec or pods/attach request:
// WebSocket, falling back to SPDY, as kubectl does.
func StreamExecutor(config *rest.Config, req *rest.Request) (remotecommand.Executor, error) {
	spdy, err := remotecommand.NewSPDYExecutor(config, "POST", req.URL())
	if err != nil {
		return nil, err
	}
	ws, err := remotecommand.NewWebSocketExecutor(config, "GET", req.URL().String())
	if err != nil {
		return nil, err
	}
	return remotecommand.NewFallbackExecutor(ws, spdy, func(err error) bool {
		return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
	})
}
