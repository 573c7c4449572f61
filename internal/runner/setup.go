package runner

import (
	"context"
	"errors"
	"net"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/rdmasuite/rdmasuite/reports"
)

// Setup steps: what the run does before its first check. A failure of any
// of them is a result (an error check setup/<step>), never only a log line.
const (
	SetupNamespace = "namespace"         // create the run namespace, or check --namespace
	SetupResultsCM = "results-configmap" // the --results-configmap it will overwrite
	SetupNodeMarks = "node-marks"        // the node-marks permissions
)

var setupTitles = map[string]string{
	SetupNamespace: "the run could create (or use) its namespace",
	SetupResultsCM: "the results ConfigMap can be written",
	SetupNodeMarks: "the nodes can be marked with the run's result",
}

// SetupFailure is the error check for a setup step that failed with err:
// the cause as the API said it, and the fix for its class (RBAC, an API
// server that does not answer, or what the step's own message says).
func SetupFailure(step string, err error) reports.Check {
	c := reports.Check{ID: "setup/" + step, Title: setupTitles[step], Status: reports.Error,
		Reason: "the run stopped before its checks: " + err.Error()}
	var netErr net.Error
	switch {
	case apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err):
		c.Fix = "the kubeconfig's identity lacks the RBAC this step needs (the API's message names the verb and resource): " +
			"grant it (the ClusterRole in suites/deploy lists what the suite uses), or, where namespaces may not be created, " +
			"run inside an existing namespace with --namespace"
	case errors.Is(err, context.DeadlineExceeded) || errors.As(err, &netErr) || apierrors.IsTimeout(err) ||
		apierrors.IsServerTimeout(err) || apierrors.IsServiceUnavailable(err):
		c.Fix = "the API server stopped answering after the run started: check the kubeconfig's server, the network path and " +
			"the control plane (kubectl get --raw /readyz), then rerun"
	default:
		c.Fix = "the message above names the step and what it needs; fix that and rerun"
	}
	return c
}
