package doctor

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/rdmasuite/rdmasuite/internal/resnames"
)

// learnedSource is where a learned name came from, said for a node's
// expectation: allocatable means the other selected nodes'.
func learnedSource(n resnames.Name) string {
	if n.Source == "allocatable" {
		return fmt.Sprintf("the allocatable of the selected nodes (%d advertise it)", n.Nodes)
	}
	return n.Source
}

// ResourcesLine says which RDMA resource names the doctor used and where
// they came from, in one line: "resources: rdma/ib (NicClusterPolicy
// nic-cluster-policy rdmaSharedDevicePlugin), nvidia.com/hostdev
// (allocatable)"; an explicit list wins over everything learned.
func ResourcesLine(s State) string {
	if len(s.Resources) > 0 {
		return "resources: " + strings.Join(s.Resources, ", ") + " (the resources flag, required of every selected node)"
	}
	l := learn(s)
	var parts []string
	if len(l.RDMA) > 0 {
		parts = append(parts, resnames.Describe(l.RDMA))
	} else {
		parts = append(parts, "no RDMA shared-device resource known ("+l.Fallback(false)+")")
	}
	if len(l.Hostdev) > 0 {
		parts = append(parts, resnames.Describe(l.Hostdev))
	}
	line := "resources: " + strings.Join(parts, ", ")
	if len(l.RDMA) > 1 {
		line += "; an RDMA node must advertise one of them at least"
	}
	if len(l.RDMA) == 0 && len(l.Hostdev) == 0 {
		line += ": RDMA nodes not judged on their allocatable (pass --resources)"
	}
	return line
}

// learn is resnames.Learn over the gathered state.
func learn(s State) resnames.Learned {
	return resnames.Learn(resnames.Inputs{Policy: s.Policy, PolicyErr: s.PolicyErr, SriovPolicies: s.SriovPolicies, SriovErr: s.SriovErr, Nodes: s.Nodes})
}

// expectedResources derives what the node must advertise, and says which
// source said so: an explicit list (strict, every node), else the
// NicClusterPolicy's device-plugin configs for nodes that have RDMA NICs,
// and nvidia.com/gpu for nodes the GPU Operator labelled as GPU nodes. A
// control-plane or CPU node carries none of those signs and owes nothing.
// An RDMA node whose resource names cannot be known is unjudged.
func (v *View) expectedResources(n *NodeView) (exp []Expected, notes, unjudged []string) {
	if len(v.Resources) > 0 {
		for _, r := range v.Resources {
			exp = append(exp, Expected{Resource: r, Source: "the resources flag (required of every selected node)", Strict: true})
		}
	} else {
		if rdma, why := n.RDMANode(); rdma {
			learned := append(append([]resnames.Name(nil), v.Names.RDMA...), v.Names.Hostdev...)
			switch {
			case v.Policy.Present && (len(v.Policy.DevicePluginResources) > 0 || len(v.Policy.ConfigErrors) > 0):
				unjudged = append(unjudged, v.Policy.ConfigErrors...)
				for _, r := range v.Policy.DevicePluginResources {
					exp = append(exp, Expected{Resource: r, Source: fmt.Sprintf("NicClusterPolicy %s device-plugin config, on an RDMA node (%s)", v.Policy.Name, why)})
				}
			case len(learned) > 0:
				// No policy names them: what the SR-IOV operator's policies
				// or the other selected nodes advertise (resnames.Learn).
				for _, r := range learned {
					exp = append(exp, Expected{Resource: r.Resource, Source: fmt.Sprintf("%s, on an RDMA node (%s); no NicClusterPolicy device-plugin config names one", learnedSource(r), why)})
				}
			default:
				unjudged = append(unjudged, fmt.Sprintf("the node has RDMA NICs (%s) but no RDMA resource name is known "+
					"(no NicClusterPolicy with a device-plugin config, no SriovNetworkNodePolicy, no selected node advertises one): pass the resources to expect "+
					"(--preflight-resources in the suite, --resources in rdmasuite doctor) to judge its allocatable", why))
			}
		}
		if n.Node.Labels[GPUPresentLabel] == "true" {
			exp = append(exp, Expected{Resource: GPUResource, Source: "node label " + GPUPresentLabel + "=true", Strict: true})
		}
	}
	if len(exp) == 0 && len(unjudged) == 0 {
		notes = append(notes, "expects no extended resource: no RDMA or GPU node label ("+MellanoxNICLabel+", "+
			MOFEDWaitLabel+", "+GPUPresentLabel+"), no MOFED pod, no resources flag")
	}
	for _, e := range exp {
		notes = append(notes, fmt.Sprintf("expects %s (source: %s)", e.Resource, e.Source))
	}
	return exp, notes, unjudged
}

// Missing is an expected resource the node does not advertise.
type Missing struct {
	Resource string
	Text     string // "allocatable rdma/x: missing (expected from …)"
}

// missingResources returns the expected resources the node does not
// advertise. Non-strict ones count only when the node advertises none of
// them above 0 (see Expected.Strict): the RDMA shared device plugin
// registers a config resource whose selectors match nothing with 0 ("no
// devices in device pool, creating empty resource server").
func (n *NodeView) missingResources() []Missing {
	var out, loose []Missing
	looseSeen := false
	for _, e := range n.Expected {
		q, ok := n.Node.Status.Allocatable[corev1.ResourceName(e.Resource)]
		state := ""
		switch {
		case !ok:
			state = "missing"
		case q.IsZero():
			state = "0"
		}
		m := Missing{Resource: e.Resource, Text: fmt.Sprintf("allocatable %s: %s (expected from %s)", e.Resource, state, e.Source)}
		switch {
		case state == "" && !e.Strict:
			looseSeen = true
		case state == "":
		case e.Strict:
			out = append(out, m)
		default:
			loose = append(loose, m)
		}
	}
	if !looseSeen && len(loose) > 0 {
		loose[len(loose)-1].Text += " — the node advertises none of the device-plugin config's resources above 0"
		out = append(out, loose...)
	}
	return out
}
