package doctor

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/rdmasuite/rdmasuite/internal/resnames"
)

// View is the state arranged the way rules ask about it: per node, with the
// operator pods that belong to it, its host facts, what it must advertise
// and why, and the policy's settings.
type View struct {
	State
	Nodes  []*NodeView
	byName map[string]*NodeView
	// Unplaced are MOFED and GPU driver pods with no node yet (Pending,
	// no DaemonSet affinity naming one).
	Unplaced []*corev1.Pod
	Policy   PolicyFacts
	// Names are the RDMA resource names learned from the cluster
	// (resnames.Learn): used when no policy config names them.
	Names resnames.Learned
}

// NodeView is one selected node and everything known about it.
type NodeView struct {
	Name string
	Node *corev1.Node
	// MOFED are the MOFED/DOCA driver pods on the node, including a Pending
	// one whose DaemonSet affinity names the node.
	MOFED []*corev1.Pod
	// GPUDriver are the GPU driver pods; GPUPods the other GPU Operator pods.
	GPUDriver []*corev1.Pod
	GPUPods   []*corev1.Pod
	// Host is nil when the host probe did not run (State.HostsMissing says why).
	Host *HostFacts
	// Expected are the extended resources the node must advertise, each
	// with the source that says so.
	Expected []Expected
	// Unjudged lists what could not be judged on the node and why; a node
	// with such an entry and no finding is not-run, never a pass.
	Unjudged []string
	// Notes are facts worth showing beside a pass (declared unused ports,
	// where the expected resources came from).
	Notes []string
}

// Expected is one resource a node must advertise and who said so.
type Expected struct {
	Resource string
	Source   string
	// Strict: missing is a finding by itself. Resources derived from a
	// device-plugin config are not strict: a config lists resources for
	// several NIC models, and a node legitimately lacks the ones whose
	// selectors match none of its devices; only a node advertising none of
	// them has lost its device plugin.
	Strict bool
}

// NewView arranges the state by node.
func NewView(s State) *View {
	v := &View{State: s, byName: map[string]*NodeView{}, Policy: readPolicy(s.Policy), Names: learn(s)}
	for i := range s.Nodes {
		n := &NodeView{Name: s.Nodes[i].Name, Node: &s.Nodes[i]}
		if h, ok := s.Hosts[n.Name]; ok {
			n.Host = &h
		}
		v.Nodes = append(v.Nodes, n)
		v.byName[n.Name] = n
	}
	sort.Slice(v.Nodes, func(i, j int) bool { return v.Nodes[i].Name < v.Nodes[j].Name })
	for i := range s.Pods {
		p := &s.Pods[i]
		n := v.byName[podNode(p)]
		if n == nil {
			// An operator driver pod the scheduler has not placed, with no
			// DaemonSet affinity naming a node: kept, its scheduler message
			// is the evidence.
			if podNode(p) == "" && (s.Roles.isMOFED(p) || s.Roles.isGPUDriver(p)) {
				v.Unplaced = append(v.Unplaced, p)
			}
			continue
		}
		switch {
		case s.Roles.isMOFED(p):
			n.MOFED = append(n.MOFED, p)
		case s.Roles.isGPUDriver(p):
			n.GPUDriver = append(n.GPUDriver, p)
		case s.Roles.inGPUNamespace(p):
			n.GPUPods = append(n.GPUPods, p)
		}
	}
	for _, n := range v.Nodes {
		n.Expected, n.Notes, n.Unjudged = v.expectedResources(n)
		if n.Host != nil {
			for _, p := range n.Host.PortsUnknown {
				if !v.portUnused(n.Name, p) {
					n.Unjudged = append(n.Unjudged, fmt.Sprintf("the state of RDMA port %s could not be read (unknown, not down)", p))
				}
			}
			for _, p := range n.Host.PortsDown {
				if id, _, _ := strings.Cut(p, ":"); v.portUnused(n.Name, id) {
					n.Notes = append(n.Notes, "port "+p+" declared unused")
				}
			}
			if n.Host.IO == nil {
				why := n.Host.IOUnavailable
				if why == "" {
					why = "no PSI reading"
				}
				n.Unjudged = append(n.Unjudged, "I/O pressure not judged: "+why+" (boot the kernel with psi=1)")
			}
			notes, unjudged := v.atRestFacts(n)
			n.Notes, n.Unjudged = append(n.Notes, notes...), append(n.Unjudged, unjudged...)
			n.Unjudged = append(n.Unjudged, v.hostConfigUnjudged(n)...)
			if n.Host.ReadCost != "" {
				n.Notes = append(n.Notes, "host probe: "+n.Host.ReadCost)
			}
		}
	}
	return v
}

// Node returns the view of a selected node, nil for others.
func (v *View) Node(name string) *NodeView { return v.byName[name] }

// ContainerMOFED reports whether MOFED on the node is run by the Network
// Operator's driver container, the only setup that writes .driver-ready
// and refuses to start over storage modules: a MOFED pod is aimed at the
// node, or the NicClusterPolicy deploys a driver (spec.ofedDriver) and the
// node is an RDMA node. A host-installed MOFED (--network-operator=false, a
// policy without ofedDriver) is not. /run/mellanox/drivers existing proves
// nothing: the GPU Operator's driver DaemonSet mounts it DirectoryOrCreate
// on every GPU node.
func (v *View) ContainerMOFED(n *NodeView) bool {
	if v.NoNetworkOperator {
		return false
	}
	if len(n.MOFED) > 0 {
		return true
	}
	rdma, _ := n.RDMANode()
	return v.Policy.OFEDDriver && rdma
}

// MOFEDRestarting reports a MOFED pod for the node that is not Ready: its
// container removes .driver-ready at every start ("Unsetting driver ready
// state"), so the marker's absence then says nothing about ordering.
func (n *NodeView) MOFEDRestarting() bool {
	for _, p := range n.MOFED {
		if !podReady(p) {
			return true
		}
	}
	return false
}

// RDMANode reports whether the node has, or is meant to have, RDMA NICs
// (and why): the NFD label, the Network Operator's mofed.wait label or a
// MOFED pod aimed at it.
func (n *NodeView) RDMANode() (bool, string) {
	switch {
	case n.Node.Labels[MellanoxNICLabel] == "true":
		return true, "label " + MellanoxNICLabel + "=true"
	case n.Node.Labels[MOFEDWaitLabel] != "":
		return true, "label " + MOFEDWaitLabel + " set by the Network Operator"
	case len(n.MOFED) > 0:
		return true, "a MOFED driver pod is aimed at it"
	}
	return false, ""
}

// MOFEDReady reports a MOFED pod on the node that is Running and Ready.
func (n *NodeView) MOFEDReady() bool {
	for _, p := range n.MOFED {
		if podReady(p) {
			return true
		}
	}
	return false
}

// describeMOFED is the evidence line about the node's MOFED pods.
func (n *NodeView) describeMOFED() string {
	if len(n.MOFED) == 0 {
		return "no MOFED driver pod exists for the node"
	}
	var parts []string
	for _, p := range n.MOFED {
		parts = append(parts, fmt.Sprintf("MOFED pod %s/%s: %s", p.Namespace, p.Name, podState(p)))
	}
	return strings.Join(parts, "; ")
}

// Logs returns the gathered log lines of every container of the pod, init
// containers included (the peermem error lives in nvidia-peermem-ctr, the
// MOFED wait in the mofed-validation init container).
func (v *View) Logs(p *corev1.Pod) string {
	var all []string
	for _, c := range append(append([]corev1.Container{}, p.Spec.InitContainers...), p.Spec.Containers...) {
		if l := v.State.Logs[LogKey(p.Namespace, p.Name, c.Name)]; l != "" {
			all = append(all, l)
		}
	}
	return strings.Join(all, "\n")
}

// ContainerLogs returns one container's gathered log.
func (v *View) ContainerLogs(p *corev1.Pod, container string) string {
	return v.State.Logs[LogKey(p.Namespace, p.Name, container)]
}

// portUnused reports whether the operator declared the port unused.
func (v *View) portUnused(node, port string) bool {
	dev, _, _ := strings.Cut(port, "/")
	for _, u := range v.UnusedPorts {
		if n, rest, ok := strings.Cut(u, ":"); ok {
			if n != node {
				continue
			}
			u = rest
		}
		if u == port || u == dev {
			return true
		}
	}
	return false
}

// nodeNamedIn returns the one selected node a scheduler message names
// ("node-2": Insufficient memory), or "" when it names none or several.
func (v *View) nodeNamedIn(msg string) string {
	found := ""
	for _, n := range v.Nodes {
		if !wordIn(msg, n.Name) {
			continue
		}
		if found != "" {
			return ""
		}
		found = n.Name
	}
	return found
}

// wordIn says whether name occurs in s bounded by characters a node name
// cannot contain.
func wordIn(s, name string) bool {
	isNameChar := func(b byte) bool {
		return b == '-' || b == '.' || b >= '0' && b <= '9' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z'
	}
	for i := 0; ; {
		j := strings.Index(s[i:], name)
		if j < 0 {
			return false
		}
		start, end := i+j, i+j+len(name)
		if (start == 0 || !isNameChar(s[start-1])) && (end == len(s) || !isNameChar(s[end])) {
			return true
		}
		i = start + 1
	}
}
