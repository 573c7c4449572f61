package runner

import (
	"context"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/rdmasuite/rdmasuite/reports"
)

// Nodes without GPUs are not-run rows naming the node, GPU nodes without
// the RDMA resource fail, and the GPU pairs run the bandwidth pair with
// GPU memory on both sides: --mem cuda:auto, a GPU per pod, gd- names.
// On the fake clientset the server pod never runs: every pair is an
// error, never a pass.
func TestGPUDirectNodesAndPods(t *testing.T) {
	kube := fake.NewClientset(gpuNode("gpu-a", 8, 1), gpuNode("gpu-b", 8, 1), gpuNode("cpu-c", -1, 1), gpuNode("gpu-d", 8, -1))
	var pods []*corev1.Pod
	kube.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		pods = append(pods, a.(k8stesting.CreateAction).GetObject().(*corev1.Pod).DeepCopy())
		return false, nil, nil
	})
	cfg := testConfig(t)
	cfg.GPUDirectOps = []string{"write", "read"}
	r := New(kube, cfg, "t-gd")
	cs := r.Paired(context.Background(), r.Cfg.VariantList()[0], PairedGPUDirect)
	rows := byNode(cs)
	if len(rows["cpu-c"]) != 2 || len(rows["gpu-d"]) != 2 {
		t.Fatalf("one row per op for each node: %+v", rows)
	}
	for _, c := range rows["cpu-c"] {
		if c.Status != reports.NotRun || !strings.Contains(c.Reason, "node cpu-c advertises no nvidia.com/gpu") || !strings.HasPrefix(c.ID, "gpudirect/") {
			t.Errorf("%+v", c)
		}
	}
	for _, c := range rows["gpu-d"] {
		if c.Status != reports.Fail || !strings.Contains(c.Diagnosis, res) {
			t.Errorf("%+v", c)
		}
	}
	pairs := 0
	for _, c := range cs {
		if len(c.Nodes) == 2 {
			pairs++
			if c.Status == reports.Pass || !slices.Contains([]string{"gpudirect/write", "gpudirect/read"}, c.ID) {
				t.Errorf("%+v", c)
			}
		}
	}
	if pairs != 4 {
		t.Fatalf("ring of 2 nodes: 2 pairs × 2 ops, got %d: %+v", pairs, cs)
	}
	if len(pods) != 2 {
		t.Fatalf("%d pods created", len(pods))
	}
	for _, p := range pods {
		c := p.Spec.Containers[0]
		if !strings.HasPrefix(p.Name, "gd-shared-dev-s-") || !strings.Contains(strings.Join(c.Args, " "), "bw server --port 18515 --timeout 2m --counters-root /host --mem cuda:auto") {
			t.Errorf("server pod %s: %v", p.Name, c.Args)
		}
		// The node's /sys, read-only, for the port counters.
		if vm := c.VolumeMounts; len(vm) != 1 || vm[0].MountPath != "/host/sys" || !vm[0].ReadOnly || p.Spec.Volumes[0].HostPath.Path != "/sys" {
			t.Errorf("pod %s mounts %+v", p.Name, vm)
		}
		if g := c.Resources.Limits[GPUResource]; g.Value() != 1 {
			t.Errorf("pod %s requests %v nvidia.com/gpu", p.Name, g)
		}
		if g := c.Resources.Limits[corev1.ResourceName(res)]; g.Value() != 1 {
			t.Errorf("pod %s requests %v %s", p.Name, g, res)
		}
	}
}

// One GPU node cannot be paired: its rows are not-run naming why, the
// GPU-less node's name the missing GPU, and no pod is created.
func TestGPUDirectOneGPUNode(t *testing.T) {
	kube := fake.NewClientset(gpuNode("gpu-a", 8, 1), gpuNode("cpu-b", -1, 1))
	created := 0
	kube.PrependReactor("create", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		created++
		return false, nil, nil
	})
	r := New(kube, testConfig(t), "t-gd1")
	rows := byNode(r.Paired(context.Background(), r.Cfg.VariantList()[0], PairedGPUDirect))
	if len(rows["gpu-a"]) != 1 || len(rows["cpu-b"]) != 1 || created != 0 {
		t.Fatalf("one row per node, no pods (created %d): %+v", created, rows)
	}
	if c := rows["gpu-a"][0]; c.Status != reports.NotRun || !strings.Contains(c.Reason, "a GPUDirect pair needs at least 2 GPU nodes, have 1") {
		t.Errorf("%+v", c)
	}
	if c := rows["cpu-b"][0]; c.Status != reports.NotRun || !strings.Contains(c.Reason, "node cpu-b advertises no nvidia.com/gpu") {
		t.Errorf("%+v", c)
	}
}

// The bandwidth feature's pods stay as they were: host memory, no GPU.
func TestBandwidthPodsUseHostMemory(t *testing.T) {
	gpuMemory := func(c Config) bwMemory {
		s, err := PairedSpecOf(PairedGPUDirect)
		if err != nil {
			t.Fatal(err)
		}
		return s.Memory(c)
	}
	m := gpuMemory(testConfig(t))
	if strings.Join(m.args(), " ") != "--mem cuda:auto" || m.gpus != 1 || m.prefix != "gd" {
		t.Fatalf("%+v", m)
	}
	if hostMemory.args() != nil || hostMemory.gpus != 0 || hostMemory.prefix != "bw" {
		t.Fatalf("%+v", hostMemory)
	}
	r := New(fake.NewClientset(), testConfig(t), "t-host")
	s := hostMemory.spec(r.Spec(r.Cfg.VariantList()[0], "p", "n", nil, true))
	if _, ok := s.Resources[GPUResource]; ok {
		t.Fatalf("host memory requests a GPU: %v", s.Resources)
	}
	cfg := testConfig(t)
	cfg.GPUs = 4
	r = New(fake.NewClientset(), cfg, "t-gpus")
	if s := gpuMemory(cfg).spec(r.Spec(r.Cfg.VariantList()[0], "p", "n", nil, true)); s.Resources[GPUResource] != 4 {
		t.Fatalf("--gpus wins when higher: %v", s.Resources)
	}
}
