package runner

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/rdmasuite/rdmasuite/internal/cluster"
	"github.com/rdmasuite/rdmasuite/reports"
)

// What stops a run before its checks is a result, not a klog
// line: an error check naming the step, the cause and the fix.
func TestSetupFailureIsAnErrorCheckWithCauseAndFix(t *testing.T) {
	forbidden := fmt.Errorf("create run namespace rdmasuite-abc: %w", apierrors.NewForbidden(schema.GroupResource{Resource: "namespaces"}, "rdmasuite-abc",
		errors.New(`User "system:serviceaccount:rdmasuite:rdmasuite-runner" cannot create resource "namespaces" in API group "" at the cluster scope`)))
	unreachable := &url.Error{Op: "Post", URL: "https://10.0.0.1:6443/api/v1/namespaces", Err: &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connect: connection refused")}}
	for _, tc := range []struct {
		name, step string
		err        error
		fix        []string
	}{
		{"namespace creation forbidden", SetupNamespace, forbidden, []string{"RBAC", "--namespace", "cannot create resource"}},
		{"API unreachable", SetupNamespace, unreachable, []string{"API server", "connection refused"}},
		{"deadline", SetupNamespace, context.DeadlineExceeded, []string{"API server"}},
		{"shared namespace missing", SetupNamespace, errors.New("--namespace x: the namespace does not exist (the suite never creates it in this mode): create it"), []string{"create it"}},
	} {
		c := SetupFailure(tc.step, tc.err)
		if c.Status != reports.Error || c.ID != "setup/"+tc.step || c.Title == "" || !strings.Contains(c.Reason, tc.err.Error()) {
			t.Errorf("%s: %+v", tc.name, c)
		}
		for _, w := range tc.fix {
			if !strings.Contains(c.Fix+" "+c.Reason, w) {
				t.Errorf("%s: fix %q lacks %q", tc.name, c.Fix, w)
			}
		}
		if c.Fix == "" {
			t.Errorf("%s: no fix", tc.name)
		}
		// Whatever recorded it, the run's results fail on it.
		run := reports.Run{Checks: []reports.Check{c}}
		if run.ExitCode() == reports.ExitPassed {
			t.Errorf("%s: a setup failure exits 0", tc.name)
		}
	}
	// Namespace creation that never reached the API is told apart, so the
	// teardown does not try to delete what was never made.
	cs := fake.NewSimpleClientset()
	cs.PrependReactor("create", "namespaces", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "namespaces"}, "rdmasuite-abc", errors.New("no"))
	})
	if err := cluster.CreateRunNamespace(context.Background(), cs, "abc"); !errors.Is(err, cluster.ErrNamespaceNotCreated) || !apierrors.IsForbidden(err) {
		t.Fatalf("a refused create: %v", err)
	}
}
