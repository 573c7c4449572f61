package suites

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	"github.com/rdmasuite/rdmasuite/internal/podrun"
	"github.com/rdmasuite/rdmasuite/reports"
	"github.com/rdmasuite/rdmasuite/workloads/podenv"
	"github.com/rdmasuite/rdmasuite/workloads/probeout"
	"github.com/rdmasuite/rdmasuite/workloads/tcpcheck"
)

// selectedNodes lists the nodes under test (--node-selector), sorted.
func selectedNodes(ctx context.Context, t *testing.T) []corev1.Node {
	t.Helper()
	nodes, err := run.SelectedNodes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return nodes
}

// runEnvProbe runs `rdmaprobe env` in a pod and parses its report.
func runEnvProbe(ctx context.Context, s podrun.Spec) (podenv.Env, podrun.Result, error) {
	s.Namespace, s.RunID, s.Image, s.Args = run.Namespace(), run.RunID, *cli.Image, []string{"env"}
	var e podenv.Env
	res, err := podrun.Run(ctx, kube, s, *cli.PodTimeout)
	if err != nil {
		return e, res, err
	}
	if res.Phase != corev1.PodSucceeded {
		return e, res, fmt.Errorf("probe pod %s exited %d: %s\n%s", s.Name, res.ExitCode, podrun.Describe(res.Pod), res.Logs)
	}
	return e, res, probeout.Parse(res.Logs, "env", &e)
}

// smokeCheck records the assessment's outcome as a check when it returns
// (also through t.Fatal), so smoke runs have rows like every other suite.
func smokeCheck(t *testing.T, id, title string) {
	c := reports.Check{ID: id, Title: title, Status: reports.Pass}
	if t.Failed() {
		c.Status, c.Diagnosis = reports.Fail, "see the go test output of "+t.Name()
	}
	run.Record(c)
}

func TestSmoke(t *testing.T) {
	probeEveryNode := features.New("the in-pod probe runs on every node").
		WithLabel("suite", "smoke").
		Assess("rdmaprobe env reports the node it ran on, read back through the API", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			defer smokeCheck(t, "smoke/probe-every-node", "the in-pod probe runs on every node")
			nodes := selectedNodes(ctx, t)
			var wg sync.WaitGroup
			errs := make([]error, len(nodes))
			for i, n := range nodes {
				wg.Add(1)
				go func() {
					defer wg.Done()
					e, _, err := runEnvProbe(ctx, podrun.Spec{Name: run.Object("smoke-env", n.Name), Node: n.Name})
					switch {
					case err != nil:
						errs[i] = err
					case e.NodeName != n.Name:
						errs[i] = fmt.Errorf("probe pinned to %s reported node %q", n.Name, e.NodeName)
					case !strings.HasPrefix(e.PodName, "smoke-env-"):
						errs[i] = fmt.Errorf("probe on %s reported pod name %q", n.Name, e.PodName)
					default:
						t.Logf("%s: kernel %s, memlock soft=%d hard=%d, IPC_LOCK=%v, devices=%v", n.Name, e.Kernel, e.Memlock.Soft, e.Memlock.Hard, e.IPCLock, e.Devices)
					}
				}()
			}
			wg.Wait()
			for _, err := range errs {
				if err != nil {
					t.Error(err)
				}
			}
			return ctx
		}).Feature()

	rdmaPod := features.New("a pod asking for the RDMA resource and IPC_LOCK is scheduled").
		WithLabel("suite", "smoke").
		Assess("the scheduler places it on a node that advertises the resource, and it holds IPC_LOCK", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			defer smokeCheck(t, "smoke/rdma-pod-scheduled", "a pod asking for the RDMA resource and IPC_LOCK is scheduled where it is advertised")
			e, res, err := runEnvProbe(ctx, podrun.Spec{Name: run.Name("smoke-rdma"),
				Resources: map[string]int64{*cli.RDMARes: 1}, AddCaps: []corev1.Capability{"IPC_LOCK"}})
			if err != nil {
				t.Fatal(err)
			}
			ok, node := podrun.Scheduled(res.Pod)
			if !ok {
				t.Fatalf("pod not scheduled: %s", podrun.Describe(res.Pod))
			}
			n, err := kube.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if q, has := n.Status.Allocatable[corev1.ResourceName(*cli.RDMARes)]; !has || q.IsZero() {
				t.Errorf("pod requesting %s ran on %s, which does not advertise it", *cli.RDMARes, node)
			}
			if !e.IPCLock {
				t.Errorf("pod with IPC_LOCK added reports CapEff %s without IPC_LOCK", e.CapEff)
			}
			t.Logf("scheduled on %s; CapEff %s", node, e.CapEff)
			return ctx
		}).
		Assess("a pod without IPC_LOCK does not hold it (the probe can tell the difference)", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			defer smokeCheck(t, "smoke/no-ipc-lock", "a pod without IPC_LOCK does not hold it")
			e, _, err := runEnvProbe(ctx, podrun.Spec{Name: run.Name("smoke-noipclock")})
			if err != nil {
				t.Fatal(err)
			}
			if e.IPCLock {
				t.Errorf("pod without IPC_LOCK reports it held (CapEff %s)", e.CapEff)
			}
			return ctx
		}).Feature()

	podNetwork := features.New("pods on different nodes reach each other over the pod network").
		WithLabel("suite", "smoke").
		Assess("a TCP exchange from a pod on one node to a pod on another succeeds", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			defer smokeCheck(t, "smoke/pod-network", "pods on different nodes reach each other over the pod network")
			nodes := selectedNodes(ctx, t)
			if len(nodes) < 2 {
				t.Fatalf("cross-node check needs two nodes, --node-selector=%q matches %d", *cli.NodeLabels, len(nodes))
			}
			server, client := nodes[0].Name, nodes[1].Name
			srv, _, err := podrun.Start(ctx, kube, podrun.Spec{Name: run.Name("smoke-tcp-server"), Namespace: run.Namespace(), RunID: run.RunID,
				Node: server, Image: *cli.Image, Args: []string{"tcp", "--listen", ":18515"}}, *cli.PodTimeout)
			if srv != nil {
				defer podrun.Delete(kube, srv.Namespace, srv.Name)
			}
			if err != nil {
				t.Fatal(err)
			}
			res, err := podrun.Run(ctx, kube, podrun.Spec{Name: run.Name("smoke-tcp-client"), Namespace: run.Namespace(), RunID: run.RunID,
				Node: client, Image: *cli.Image, Args: []string{"tcp", "--connect", srv.Status.PodIP + ":18515"}}, *cli.PodTimeout)
			if err != nil {
				t.Fatal(err)
			}
			var r tcpcheck.Result
			if res.Phase != corev1.PodSucceeded {
				t.Fatalf("client on %s could not reach server %s on %s: %s", client, srv.Status.PodIP, server, res.Logs)
			}
			if err := probeout.Parse(res.Logs, "tcp", &r); err != nil {
				t.Fatal(err)
			}
			if r.Peer != srv.Name {
				t.Errorf("client reached %q, want server pod %q", r.Peer, srv.Name)
			}
			t.Logf("%s -> %s (%s): rtt %.0f µs", client, server, srv.Status.PodIP, r.RTTMicros)
			return ctx
		}).Feature()

	testenv.Test(t, probeEveryNode, rdmaPod, podNetwork)
}
