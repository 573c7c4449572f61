package runner

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rdmasuite/rdmasuite/internal/doctor"
)

// Control-plane role labels (kubeadm's current one and its old name).
var controlPlaneLabels = []string{"node-role.kubernetes.io/control-plane", "node-role.kubernetes.io/master"}

// NodeChoice is the default node selection (no --node-selector) with its
// reasons, so the run can say what it covers and what it left out.
type NodeChoice struct {
	Selected []corev1.Node
	// Why is the reason each selected node was taken (advertises a
	// resource, or is an RDMA node that advertises none now).
	Why map[string]string
	// ControlPlane and NoRDMA are the nodes left out, by reason.
	ControlPlane, NoRDMA []string
	Resources            []string
}

// ChooseNodes is the default selection of a run without --node-selector:
// the nodes that advertise one of resources (the chosen variants'), never a
// control-plane node. A node that is an RDMA node by its own marks (the
// resource registered but 0 now, the Network Operator's mofed.wait label,
// NFD's Mellanox PCI label) is selected even when it advertises nothing:
// its device plugin or driver being down is exactly what the run must
// report, so it gets a failing row instead of vanishing from the report.
func ChooseNodes(nodes []corev1.Node, resources []string) NodeChoice {
	ch := NodeChoice{Why: map[string]string{}, Resources: resources}
	for _, n := range nodes {
		if isControlPlane(n) {
			ch.ControlPlane = append(ch.ControlPlane, n.Name)
			continue
		}
		if why := rdmaNodeReason(n, resources); why != "" {
			ch.Selected = append(ch.Selected, n)
			ch.Why[n.Name] = why
			continue
		}
		ch.NoRDMA = append(ch.NoRDMA, n.Name)
	}
	sort.Slice(ch.Selected, func(i, j int) bool { return ch.Selected[i].Name < ch.Selected[j].Name })
	sort.Strings(ch.ControlPlane)
	sort.Strings(ch.NoRDMA)
	return ch
}

func isControlPlane(n corev1.Node) bool {
	for _, l := range controlPlaneLabels {
		if _, ok := n.Labels[l]; ok {
			return true
		}
	}
	return false
}

// rdmaNodeReason says why n is an RDMA node of this run, or "".
func rdmaNodeReason(n corev1.Node, resources []string) string {
	for _, r := range resources {
		if advertises(n, r) {
			return "advertises " + r
		}
	}
	for _, r := range resources {
		_, inCap := n.Status.Capacity[corev1.ResourceName(r)]
		_, inAlloc := n.Status.Allocatable[corev1.ResourceName(r)]
		if inCap || inAlloc {
			return "registered " + r + " but advertises 0"
		}
	}
	if n.Labels[doctor.MOFEDWaitLabel] != "" {
		return "label " + doctor.MOFEDWaitLabel + " (the Network Operator's MOFED runs there)"
	}
	if n.Labels[doctor.MellanoxNICLabel] == "true" {
		return "label " + doctor.MellanoxNICLabel + "=true (a Mellanox NIC)"
	}
	return ""
}

// Err is why the default selection is empty, with the fix; nil when it
// selected a node.
func (ch NodeChoice) Err(total int) error {
	if len(ch.Selected) > 0 {
		return nil
	}
	return fmt.Errorf("no node advertises %s (%d node(s): %d control plane, %d without an RDMA resource or label): "+
		"the device plugin is not running or its resource has another name (--rdma-resource, --hostdev-resource), "+
		"or choose the nodes with --node-selector", strings.Join(ch.Resources, " or "), total, len(ch.ControlPlane), len(ch.NoRDMA))
}

// Header is the line that says which nodes the default selection took.
func (ch NodeChoice) Header() string {
	advertising, silent := 0, []string{}
	for _, n := range ch.Selected {
		if strings.HasPrefix(ch.Why[n.Name], "advertises ") {
			advertising++
		} else {
			silent = append(silent, n.Name+" ("+ch.Why[n.Name]+")")
		}
	}
	s := fmt.Sprintf("nodes: %d selected (no --node-selector: the nodes that advertise %s, never the control plane): %d advertise",
		len(ch.Selected), strings.Join(ch.Resources, " or "), advertising)
	if len(silent) > 0 {
		s += fmt.Sprintf("; %d RDMA node(s) that advertise none now, selected so they fail with the reason: %s", len(silent), capList(silent, 5))
	}
	var left []string
	if len(ch.ControlPlane) > 0 {
		left = append(left, fmt.Sprintf("%d control plane (%s)", len(ch.ControlPlane), capList(ch.ControlPlane, 5)))
	}
	if len(ch.NoRDMA) > 0 {
		left = append(left, fmt.Sprintf("%d without an RDMA resource or label (%s)", len(ch.NoRDMA), capList(ch.NoRDMA, 5)))
	}
	if len(left) > 0 {
		s += "; left out: " + strings.Join(left, ", ")
	}
	return s
}

// capList joins at most n items and says how many more there are, so a
// header stays one line at 1024 nodes.
func capList(items []string, n int) string {
	if len(items) <= n {
		return strings.Join(items, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(items[:n], ", "), len(items)-n)
}

// variantResources are the resources of the run's variants, in order.
func (c Config) variantResources() []string {
	var out []string
	for _, v := range c.VariantList() {
		if !slices.Contains(out, v.Resource) {
			out = append(out, v.Resource)
		}
	}
	return out
}

// SelectedNodes lists the nodes under test, sorted: those of
// --node-selector (every one must then advertise the resource: a selected
// node that does not gets a failing row), or without it the default
// selection (ChooseNodes).
func (r *Runner) SelectedNodes(ctx context.Context) ([]corev1.Node, error) {
	list, err := r.Kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: r.Cfg.NodeSelector})
	if err != nil {
		return nil, fmt.Errorf("list nodes: %w", err)
	}
	if r.Cfg.NodeSelector == "" {
		ch := ChooseNodes(list.Items, r.Cfg.variantResources())
		return ch.Selected, ch.Err(len(list.Items))
	}
	if len(list.Items) == 0 {
		return nil, fmt.Errorf("no node matches --node-selector=%q", r.Cfg.NodeSelector)
	}
	nodes := list.Items
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].Name < nodes[j].Name })
	return nodes, nil
}

// NodesHeader says which nodes the run covers and how they were chosen.
func (r *Runner) NodesHeader(ctx context.Context) string {
	if r.Cfg.NodeSelector != "" {
		nodes, err := r.SelectedNodes(ctx)
		if err != nil {
			return "nodes: " + err.Error()
		}
		return fmt.Sprintf("nodes: %d selected by --node-selector=%s (each must advertise the resource its feature needs)", len(nodes), r.Cfg.NodeSelector)
	}
	list, err := r.Kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return "nodes: list nodes: " + err.Error()
	}
	ch := ChooseNodes(list.Items, r.Cfg.variantResources())
	if err := ch.Err(len(list.Items)); err != nil {
		return "nodes: " + err.Error()
	}
	return ch.Header()
}
