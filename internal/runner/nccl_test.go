package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	fakediscovery "k8s.io/client-go/discovery/fake"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/rdmasuite/rdmasuite/internal/jobrun"
	"github.com/rdmasuite/rdmasuite/reports"
	"github.com/rdmasuite/rdmasuite/workloads/nccl"
	"github.com/rdmasuite/rdmasuite/workloads/ncclbench"
	"github.com/rdmasuite/rdmasuite/workloads/ncclrun"
	"github.com/rdmasuite/rdmasuite/workloads/probeout"
)

// gpuNode is a node with gpus nvidia.com/gpu (none when < 0) and rdma of
// the RDMA resource (none when < 0), labelled as an H100 node.
func gpuNode(name string, gpus, rdma int64) *corev1.Node {
	n := testNode(name, rdma)
	n.Labels["nvidia.com/gpu.product"] = "NVIDIA-H100-80GB-HBM3"
	if gpus >= 0 {
		if n.Status.Allocatable == nil {
			n.Status.Allocatable = corev1.ResourceList{}
		}
		n.Status.Allocatable[GPUResource] = *resource.NewQuantity(gpus, resource.DecimalSI)
	}
	return n
}

// fakeWorlds replaces runWorld for one test: every world is recorded and
// answered by answer (rank 0's logs, then the others').
type fakeWorlds struct {
	mu     sync.Mutex
	specs  []jobrun.Spec
	answer func(s jobrun.Spec) (jobrun.Result, error)
}

func stubWorlds(t *testing.T, answer func(s jobrun.Spec) (jobrun.Result, error)) *fakeWorlds {
	f := &fakeWorlds{answer: answer}
	old := runWorld
	runWorld = func(_ context.Context, _ kubernetes.Interface, s jobrun.Spec) (jobrun.Result, error) {
		f.mu.Lock()
		f.specs = append(f.specs, s)
		f.mu.Unlock()
		return f.answer(s)
	}
	t.Cleanup(func() { runWorld = old })
	return f
}

// noGPUWorld is what the no-GPU bed gives: rank 0 calls the world off,
// kind no-gpu, every rank named.
func noGPUWorld(t *testing.T, s jobrun.Spec) (jobrun.Result, error) {
	var fs []ncclrun.Facts
	var why []string
	for i, n := range s.Nodes {
		fs = append(fs, ncclrun.Facts{Rank: i, Pod: fmt.Sprintf("%s-%d-abcde", s.Name, i), Node: n,
			NotReady: "no CUDA driver: libcuda.so.1: cannot open shared object file", NotReadyKind: probeout.KindNoGPU})
		why = append(why, fmt.Sprintf("rank %d (pod %s-%d-abcde on node %s): no CUDA driver: libcuda.so.1: cannot open shared object file", i, s.Name, i, n))
	}
	out := ncclrun.Output{World: len(s.Nodes), Ranks: fs, Joined: len(s.Nodes), Abort: strings.Join(why, "; ")}
	var b bytes.Buffer
	if err := probeout.WriteError(&b, ncclrun.ProbeName, out, probeout.Errorf(probeout.KindNoGPU, "%s", out.Abort)); err != nil {
		t.Fatal(err)
	}
	res := jobrun.Result{Job: s.Name, Service: s.Name}
	for i, n := range s.Nodes {
		rk := jobrun.Rank{Index: i, Pod: fmt.Sprintf("%s-%d-abcde", s.Name, i), Node: n, Phase: corev1.PodFailed, ExitCode: 3}
		if i == 0 {
			rk.Logs = b.String()
		}
		res.Ranks = append(res.Ranks, rk)
	}
	return res, nil
}

// withMultus makes the fake API serve Multus' CRD group (hostdev's
// prerequisite).
func withMultus(kube *fake.Clientset) {
	d := kube.Discovery().(*fakediscovery.FakeDiscovery)
	d.Resources = append(d.Resources, &metav1.APIResourceList{GroupVersion: "k8s.cni.cncf.io/v1",
		APIResources: []metav1.APIResource{{Name: "network-attachment-definitions", Kind: "NetworkAttachmentDefinition", Namespaced: true}}})
}

func byNode(cs []reports.Check) map[string][]reports.Check {
	m := map[string][]reports.Check{}
	for _, c := range cs {
		m[strings.Join(c.Nodes, ",")] = append(m[strings.Join(c.Nodes, ",")], c)
	}
	return m
}

// Nodes without GPUs are not-run rows naming the node, GPU nodes without
// the RDMA resource fail, and the GPU nodes form worlds: each ring pair
// once, then all of them. On the no-GPU bed every world is not-run with
// the probe's reason.
func TestNCCLNodesAndWorlds(t *testing.T) {
	kube := fake.NewClientset(gpuNode("gpu-a", 8, 1), gpuNode("gpu-b", 8, 1), gpuNode("gpu-c", 8, 1),
		gpuNode("cpu-d", -1, 1), gpuNode("cpu-e", 0, 1), gpuNode("gpu-f", 8, -1))
	r := New(kube, testConfig(t), "t-nccl")
	f := stubWorlds(t, func(s jobrun.Spec) (jobrun.Result, error) { return noGPUWorld(t, s) })
	v := r.Cfg.VariantList()[0]
	cs := r.NCCL(context.Background(), v)
	ids := []string{"nccl/all_reduce", "nccl/all_gather", "nccl/reduce_scatter", "nccl/alltoall", "nccl/sendrecv", "nccl/transport"}
	rows := byNode(cs)
	for _, n := range []string{"cpu-d", "cpu-e"} {
		if len(rows[n]) != len(ids) {
			t.Fatalf("%s: want one row per check, got %+v", n, rows[n])
		}
		for i, c := range rows[n] {
			if c.ID != ids[i] || c.Status != reports.NotRun || !strings.Contains(c.Reason, "node "+n+" advertises no nvidia.com/gpu") {
				t.Errorf("%s: %+v", n, c)
			}
		}
	}
	for _, c := range rows["gpu-f"] {
		if c.Status != reports.Fail || !strings.Contains(c.Diagnosis, res) {
			t.Errorf("gpu-f has GPUs but no %s: %+v", res, c)
		}
	}
	if len(rows["gpu-f"]) != len(ids) {
		t.Fatalf("gpu-f rows: %+v", rows["gpu-f"])
	}
	// Ring over 3 nodes: a-b, b-c, c-a (each once), then the three.
	var worlds []string
	for _, s := range f.specs {
		worlds = append(worlds, strings.Join(s.Nodes, ","))
	}
	slices.Sort(worlds)
	if want := []string{"gpu-a,gpu-b", "gpu-a,gpu-b,gpu-c", "gpu-a,gpu-c", "gpu-b,gpu-c"}; !slices.Equal(worlds, want) {
		t.Fatalf("worlds %v, want %v", worlds, want)
	}
	for _, w := range worlds {
		if len(rows[w]) != len(ids) {
			t.Fatalf("world %s: %d rows", w, len(rows[w]))
		}
		for _, c := range rows[w] {
			if c.Status != reports.NotRun || !strings.Contains(c.Reason, "no CUDA driver") || !strings.HasPrefix(c.Evidence[0], "ranks joined ") {
				t.Errorf("world %s: %+v", w, c)
			}
		}
	}
	if len(r.Failing(cs)) != len(cs) {
		t.Fatal("not-run fails the run unless allowed")
	}
}

// The ranks' pods: the RDMA resource, a GPU, IPC_LOCK; NCCL's debug log;
// Ring only on pairs; every world its own name; the token never shown.
func TestNCCLWorldSpecs(t *testing.T) {
	var nodes []runtime.Object
	for _, n := range []string{"gpu-a", "gpu-b", "gpu-c"} {
		node := gpuNode(n, 8, 1)
		node.Status.Allocatable[corev1.ResourceName(hostdev.Resource)] = *resource.NewQuantity(2, resource.DecimalSI)
		nodes = append(nodes, node)
	}
	kube := fake.NewClientset(nodes...)
	withMultus(kube)
	cfg := testConfig(t)
	cfg.NCCLMaxBytes = 1 << 20
	cfg.NCCLWarmup = 5
	r := New(kube, cfg, "t-spec")
	f := stubWorlds(t, func(s jobrun.Spec) (jobrun.Result, error) { return noGPUWorld(t, s) })
	cs := r.NCCL(context.Background(), hostdev)
	seen := map[string]bool{}
	for _, s := range f.specs {
		if seen[s.Name] || len(s.Name) > 48 || !strings.HasPrefix(s.Name, "nccl-hostdev-") {
			t.Errorf("world name %q (unique, short, readable)", s.Name)
		}
		seen[s.Name] = true
		p := s.Pod
		if p.Resources[GPUResource] != 1 || p.Resources["nvidia.com/hostdev"] != 1 || !slices.Contains(p.AddCaps, "IPC_LOCK") ||
			p.Annots["k8s.v1.cni.cncf.io/networks"] != "default/sriov-rdma" || p.Namespace != r.Namespace() {
			t.Errorf("%s pod: %+v", s.Name, p)
		}
		args := strings.Join(p.Args, " ")
		for _, want := range []string{"nccl --world " + fmt.Sprint(len(s.Nodes)) + " --token ",
			"--collectives all_reduce,all_gather,reduce_scatter,alltoall,sendrecv --min-bytes 8 --max-bytes 1048576 --factor 2 --warmup 5 --iters 20 --check --timeout 5m0s"} {
			if !strings.Contains(args, want) {
				t.Errorf("args %q lack %q", args, want)
			}
		}
		if s.Env["NCCL_DEBUG"] != "INFO" || s.Env["NCCL_DEBUG_SUBSYS"] != "INIT,NET,ENV" || (s.Env["NCCL_ALGO"] == "Ring") != (len(s.Nodes) == 2) {
			t.Errorf("%s env %v", s.Name, s.Env)
		}
		if s.Port != NCCLPort || s.StartTimeout != cfg.PodTimeout || s.Timeout < 10*time.Minute {
			t.Errorf("%s: port %d start %s timeout %s", s.Name, s.Port, s.StartTimeout, s.Timeout)
		}
		token := p.Args[slices.Index(p.Args, "--token")+1]
		for _, c := range cs {
			if strings.Contains(strings.Join(c.Evidence, "\n")+c.Reason, token) {
				t.Fatalf("the token leaked into %s", c.ID)
			}
		}
	}
	if len(f.specs) != 4 {
		t.Fatalf("%d worlds", len(f.specs))
	}
}

// A world whose ranks printed nothing is an error row, never a pass; a
// single GPU node cannot form a world (not-run naming why).
func TestNCCLWorldWithoutOutputAndTooFewNodes(t *testing.T) {
	kube := fake.NewClientset(gpuNode("gpu-a", 8, 1), gpuNode("gpu-b", 8, 1))
	r := New(kube, testConfig(t), "t-empty")
	stubWorlds(t, func(s jobrun.Spec) (jobrun.Result, error) {
		return jobrun.Result{Ranks: []jobrun.Rank{{Index: 0, Pod: s.Name + "-0-x", Node: "gpu-a", Phase: corev1.PodPending, State: "phase Pending; container probe waiting: ErrImagePull"}}},
			fmt.Errorf("world %s: probe pod did not finish in time: not every rank started within 2m0s", s.Name)
	})
	cs := r.NCCL(context.Background(), r.Cfg.VariantList()[0])
	if len(cs) != 6 {
		t.Fatalf("one pair world, 6 checks: %+v", cs)
	}
	for _, c := range cs {
		if c.Status != reports.Error || !strings.Contains(c.Reason, "not every rank started") || strings.Join(c.Nodes, ",") != "gpu-a,gpu-b" {
			t.Errorf("%+v", c)
		}
	}
	kube = fake.NewClientset(gpuNode("gpu-a", 8, 1), gpuNode("cpu-b", 0, 1))
	r = New(kube, testConfig(t), "t-one")
	cs = r.NCCL(context.Background(), r.Cfg.VariantList()[0])
	rows := byNode(cs)
	for _, c := range rows["gpu-a"] {
		if c.Status != reports.NotRun || !strings.Contains(c.Reason, "needs at least 2 GPU nodes") {
			t.Errorf("%+v", c)
		}
	}
	if len(rows["gpu-a"]) != 6 || len(rows["cpu-b"]) != 6 {
		t.Fatalf("%+v", rows)
	}
}

func TestNCCLWorldsFlag(t *testing.T) {
	cfg := testConfig(t).ncclSettings()
	nodes := []string{"a", "b", "c", "d"}
	count := func(worlds string) (pairs, all int) {
		cfg.NCCLWorlds = SplitList(worlds)
		rounds, why := ncclWorlds(nodes, cfg)
		if why != "" {
			t.Fatal(why)
		}
		for _, round := range rounds {
			for _, w := range round {
				if len(w) == 2 {
					pairs++
				} else if len(w) == len(nodes) {
					all++
				}
			}
		}
		return
	}
	if p, a := count("pairs,all"); p != 4 || a != 1 {
		t.Fatalf("ring of 4: %d pairs, %d all", p, a)
	}
	if p, a := count("all"); p != 0 || a != 1 {
		t.Fatalf("all: %d %d", p, a)
	}
	cfg.Pairing = "all"
	if p, a := count("pairs"); p != 6 || a != 0 {
		t.Fatalf("every pair of 4: %d %d", p, a)
	}
	// Two nodes: the pair is the whole set, run once.
	cfg.NCCLWorlds = SplitList("pairs,all")
	if rounds, _ := ncclWorlds([]string{"a", "b"}, cfg); len(rounds) != 1 || len(rounds[0]) != 1 {
		t.Fatalf("%v", rounds)
	}
}

func TestGPUConfigValidateNamesTheFlag(t *testing.T) {
	for flagName, edit := range map[string]func(*Config){
		"--nccl-collectives": func(c *Config) { c.NCCLCollectives = []string{"broadcast"} },
		"--nccl-max-bytes":   func(c *Config) { c.NCCLMinBytes, c.NCCLMaxBytes = 1<<20, 8 },
		"--nccl-min-bytes":   func(c *Config) { c.NCCLMinBytes = -1 },
		"--nccl-iters":       func(c *Config) { c.NCCLIters = -3 },
		"--nccl-warmup":      func(c *Config) { c.NCCLWarmup = -1 },
		"--nccl-worlds":      func(c *Config) { c.NCCLWorlds = []string{"triples"} },
		"--gpudirect-ops":    func(c *Config) { c.GPUDirectOps = []string{"send"} },
		"--gpudirect-mem":    func(c *Config) { c.GPUDirectMem = "host" },
	} {
		c := testConfig(t)
		edit(&c)
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), flagName) {
			t.Errorf("%s: %v", flagName, err)
		}
	}
	if n, err := ParseByteSize("128M"); err != nil || n != 128<<20 {
		t.Fatalf("%d %v", n, err)
	}
	if _, err := ParseByteSize("8,16"); err == nil {
		t.Fatal("two sizes accepted")
	}
}

// measuredWorld is a world that ran: every collective at every size at
// busbw GB/s, NCCL over IB on every rank.
func measuredWorld(t *testing.T, s jobrun.Spec, busbw float64) (jobrun.Result, error) {
	t.Helper()
	cfg := testConfig(t).ncclSettings()
	sizes := ncclbench.Config{MinBytes: cfg.NCCLMinBytes, MaxBytes: cfg.NCCLMaxBytes, StepFactor: NCCLFactor}.Sizes()
	world := len(s.Nodes)
	res := ncclbench.Result{World: world}
	for _, c := range ncclbench.Supported {
		cr := ncclbench.CollectiveResult{Collective: c}
		for _, size := range sizes {
			sh, err := ncclbench.ShapeOf(c, size, world)
			if err != nil {
				t.Fatal(err)
			}
			na := c == nccl.AllToAll || c == nccl.SendRecv
			cr.Rows = append(cr.Rows, ncclbench.Row{Size: sh.Size, Count: sh.Count, Type: "float", RedOp: ncclbench.RedOp(c),
				OutOfPlace: &ncclbench.Half{TimeUS: 100, AlgBW: busbw, BusBW: busbw}, InPlace: &ncclbench.Half{TimeUS: 100, AlgBW: busbw, BusBW: busbw, NA: na}})
		}
		res.Collectives = append(res.Collectives, cr)
	}
	raw, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	var fs []ncclrun.Facts
	for i, n := range s.Nodes {
		fs = append(fs, ncclrun.Facts{Rank: i, Pod: fmt.Sprintf("%s-%d-x", s.Name, i), Node: n, CUDADriver: "12.4", NCCL: "2.21.5",
			GPUs: []ncclrun.GPU{{Name: "NVIDIA H100 80GB HBM3", PCIBusID: "0000:1b:00.0"}}})
	}
	var b bytes.Buffer
	if err := probeout.Write(&b, ncclrun.ProbeName, ncclrun.Output{World: world, Ranks: fs, Joined: world, Result: raw}); err != nil {
		t.Fatal(err)
	}
	out := jobrun.Result{Job: s.Name}
	for i, n := range s.Nodes {
		p := fmt.Sprintf("%s:1:1 [0] NCCL INFO ", n)
		logs := "NCCL version 2.21.5+cuda12.4\n" + p + "NET/IB : Using [0]mlx5_0:1/IB ; OOB eth0:10.0.0.1<0>\n" + p + "Using network IB\n" +
			p + fmt.Sprintf("Channel 00/0 : %d[0] -> %d[0] [send] via NET/IB/0/GDRDMA\n", i, (i+1)%world) +
			p + fmt.Sprintf("comm 0x1 rank %d nranks %d cudaDev 0 nvmlDev 0 busId 1b000 commId 0x2 - Init COMPLETE\n", i, world)
		if i == 0 {
			logs += b.String()
		}
		out.Ranks = append(out.Ranks, jobrun.Rank{Index: i, Pod: fmt.Sprintf("%s-%d-x", s.Name, i), Node: n, Phase: corev1.PodSucceeded, Logs: logs})
	}
	return out, nil
}

// The floor comes from the nodes' SKU for one GPU per rank (H100: 0.85 ×
// 1 port × 400 Gb/s / 8 = 42.5 GB/s): 45 passes, 30 fails.
func TestNCCLMeasuredWorldsAgainstTheSKUFloor(t *testing.T) {
	for _, tc := range []struct {
		busbw float64
		want  reports.Status
	}{{45, reports.Pass}, {30, reports.Fail}} {
		kube := fake.NewClientset(gpuNode("gpu-a", 8, 1), gpuNode("gpu-b", 8, 1))
		r := New(kube, testConfig(t), "t-floor")
		stubWorlds(t, func(s jobrun.Spec) (jobrun.Result, error) { return measuredWorld(t, s, tc.busbw) })
		cs := r.NCCL(context.Background(), r.Cfg.VariantList()[0])
		if len(cs) != 6 {
			t.Fatalf("%+v", cs)
		}
		for _, c := range cs {
			want := reports.Pass
			if c.ID == "nccl/all_reduce" {
				want = tc.want
			}
			if c.Status != want {
				t.Errorf("busbw %g: %s is %s, want %s: %s%s", tc.busbw, c.ID, c.Status, want, c.Diagnosis, c.Reason)
			}
			if c.ID == "nccl/all_reduce" {
				m := c.Measured[len(c.Measured)-1]
				if m.Threshold == nil || m.Threshold.Value != 42.5 || !strings.Contains(m.Threshold.Source, "H100/NDR-400: 0.85 × 1 of 8 port(s)") {
					t.Errorf("threshold %+v", m.Threshold)
				}
			}
		}
	}
}

// The GPU features read the probes' JSON only: the runner (and the suites)
// never link the CUDA or NCCL loaders (workloads/cuda, workloads/ncclrt),
// which only the in-pod probe uses.
func TestRunnerNeverImportsTheGPULoaders(t *testing.T) {
	for _, pkg := range []string{".", "../../suites"} {
		cmd := exec.Command("go", "list", "-test", "-deps", pkg)
		cmd.Env = append(cmd.Environ(), "CGO_ENABLED=0")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("go list %s: %v\n%s", pkg, err, out)
		}
		for _, dep := range strings.Fields(string(out)) {
			if strings.HasSuffix(dep, "/workloads/cuda") || strings.HasSuffix(dep, "/workloads/ncclrt") {
				t.Errorf("%s depends on %s", pkg, dep)
			}
		}
	}
}
