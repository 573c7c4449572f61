package runner

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/rdmasuite/rdmasuite/internal/doctor"
	"github.com/rdmasuite/rdmasuite/reports"
)

const hostdevRes = "nvidia.com/hostdev"

func selNode(name string, labels map[string]string, alloc map[string]int64, capOnly ...string) corev1.Node {
	n := corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	n.Status.Allocatable = corev1.ResourceList{}
	n.Status.Capacity = corev1.ResourceList{}
	for r, q := range alloc {
		n.Status.Allocatable[corev1.ResourceName(r)] = *resource.NewQuantity(q, resource.DecimalSI)
	}
	for _, r := range capOnly {
		n.Status.Capacity[corev1.ResourceName(r)] = *resource.NewQuantity(0, resource.DecimalSI)
	}
	return n
}

// Without --node-selector the run covers the nodes that
// advertise a resource of its variants, never the control plane; an RDMA
// node whose plugin advertises nothing now is still covered (it must
// fail, not vanish); a CPU node is left out; the header says all of it.
func TestChooseNodesByDefault(t *testing.T) {
	nodes := []corev1.Node{
		selNode("cp-1", map[string]string{"node-role.kubernetes.io/control-plane": ""}, map[string]int64{res: 8}),
		selNode("old-master", map[string]string{"node-role.kubernetes.io/master": ""}, nil),
		selNode("cpu-1", nil, nil),
		selNode("cpu-2", nil, map[string]int64{"nvidia.com/gpu": 8}),
		selNode("gpu-a", nil, map[string]int64{res: 8}),
		selNode("gpu-b", nil, map[string]int64{hostdevRes: 4}),
		selNode("gpu-c", nil, map[string]int64{res: 0}),
		selNode("gpu-d", map[string]string{doctor.MOFEDWaitLabel: "false"}, nil),
		selNode("gpu-e", map[string]string{doctor.MellanoxNICLabel: "true"}, nil),
		selNode("gpu-f", nil, nil, res),
	}
	ch := ChooseNodes(nodes, []string{res, hostdevRes})
	var got []string
	for _, n := range ch.Selected {
		got = append(got, n.Name)
	}
	if want := "gpu-a gpu-b gpu-c gpu-d gpu-e gpu-f"; strings.Join(got, " ") != want {
		t.Errorf("selected %v, want %s", got, want)
	}
	if strings.Join(ch.ControlPlane, " ") != "cp-1 old-master" || strings.Join(ch.NoRDMA, " ") != "cpu-1 cpu-2" {
		t.Errorf("left out: control plane %v, no RDMA %v", ch.ControlPlane, ch.NoRDMA)
	}
	h := ch.Header()
	for _, want := range []string{"6 selected", "no --node-selector", res + " or " + hostdevRes, "never the control plane", "2 advertise",
		"4 RDMA node(s) that advertise none now", "gpu-c (registered " + res + " but advertises 0)", "gpu-d (label " + doctor.MOFEDWaitLabel,
		"left out: 2 control plane (cp-1, old-master), 2 without an RDMA resource or label (cpu-1, cpu-2)"} {
		if !strings.Contains(h, want) {
			t.Errorf("header lacks %q:\n%s", want, h)
		}
	}
	if err := ch.Err(len(nodes)); err != nil {
		t.Errorf("a selection with nodes is no error: %v", err)
	}
}

// Nothing to select is an error naming the resources, the counts and the
// fixes; never an empty run that passes.
func TestChooseNodesNoneIsAnError(t *testing.T) {
	ch := ChooseNodes([]corev1.Node{selNode("cp-1", map[string]string{"node-role.kubernetes.io/control-plane": ""}, map[string]int64{res: 1}),
		selNode("cpu-1", nil, nil)}, []string{res})
	err := ch.Err(2)
	if err == nil {
		t.Fatal("an empty default selection must be an error")
	}
	for _, want := range []string{"no node advertises " + res, "2 node(s): 1 control plane, 1 without", "--rdma-resource", "--node-selector"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}
}

// At fleet size the header stays one short line: lists are capped.
func TestChooseNodesHeaderAtFleetSize(t *testing.T) {
	var nodes []corev1.Node
	for i := range 1024 {
		nodes = append(nodes, selNode(fmt.Sprintf("gpu-%04d", i), nil, map[string]int64{res: 8}))
	}
	for i := range 40 {
		nodes = append(nodes, selNode(fmt.Sprintf("cpu-%02d", i), nil, nil))
	}
	h := ChooseNodes(nodes, []string{res}).Header()
	if !strings.Contains(h, "1024 selected") || !strings.Contains(h, "40 without an RDMA resource or label (cpu-00, cpu-01, cpu-02, cpu-03, cpu-04 and 35 more)") ||
		len(h) > 300 || strings.Contains(h, "\n") {
		t.Errorf("fleet header (%d chars):\n%s", len(h), h)
	}
}

// The features use the default selection: a CPU node and the control
// plane get no row, an RDMA node that advertises nothing fails.
func TestFeaturesOnTheDefaultSelection(t *testing.T) {
	cp := selNode("cp-1", map[string]string{"node-role.kubernetes.io/control-plane": ""}, map[string]int64{res: 8})
	cpu := selNode("cpu-1", nil, nil)
	silent := selNode("gpu-c", nil, map[string]int64{res: 0})
	kube := fake.NewClientset(&cp, &cpu, &silent, testNode("gpu-a", 8), testNode("gpu-b", 8))
	cfg := testConfig(t)
	cfg.NodeSelector = ""
	r := New(kube, cfg, "t-def")
	nodes, err := r.SelectedNodes(context.Background())
	if err != nil || len(nodes) != 3 {
		t.Fatalf("selected %d nodes, %v", len(nodes), err)
	}
	cs := r.Memlock(context.Background(), Variant{Name: VariantSharedDev, Resource: res})
	rows := map[string]reports.Status{}
	for _, c := range cs {
		rows[c.Nodes[0]] = c.Status
	}
	if _, ok := rows["cp-1"]; ok {
		t.Errorf("the control plane got a row: %v", rows)
	}
	if _, ok := rows["cpu-1"]; ok {
		t.Errorf("a CPU node got a row: %v", rows)
	}
	if rows["gpu-c"] != reports.Fail {
		t.Errorf("an RDMA node that advertises 0 must fail, got %v", rows)
	}
	if h := r.NodesHeader(context.Background()); !strings.Contains(h, "3 selected") || !strings.Contains(h, "cp-1") {
		t.Errorf("header: %s", h)
	}
	// An explicit selector keeps its meaning: every matching node, the
	// control plane included.
	r.Cfg.NodeSelector = everyNode
	if nodes, _ := r.SelectedNodes(context.Background()); len(nodes) != 5 {
		t.Errorf("explicit selector selected %d of 5 nodes", len(nodes))
	}
	if h := r.NodesHeader(context.Background()); !strings.Contains(h, "5 selected by --node-selector") {
		t.Errorf("header: %s", h)
	}
}
