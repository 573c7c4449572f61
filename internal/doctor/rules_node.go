package doctor

import (
	"strings"
)

// Rules about the node object and its RDMA ports.

const (
	ResourceMissing = "rdma-resource-missing"
	NodeCordoned    = "node-cordoned"
	PortDown        = "rdma-port-down"
)

var _ = register(Rule{ID: ResourceMissing, Severity: Critical, Seed: "002",
	Cause:  "the node does not advertise a resource it should (allocatable missing or 0): pods asking for it cannot be scheduled there",
	Fix:    "check the RDMA shared device plugin / SR-IOV device plugin / GPU device plugin pod on the node and its config (resource name, selectors); they only start once mofed.wait=false",
	Raises: "an expected resource absent or 0 in allocatable; expected means: listed in the resources flag (every node), in the NicClusterPolicy's device-plugin config on an RDMA node (only when the node advertises none of them, or one is registered with 0), or nvidia.com/gpu on a node labelled nvidia.com/gpu.present=true. The evidence names the source",
	Silent: []string{"control-plane and CPU nodes (no RDMA or GPU label, no MOFED pod) without a resources flag",
		"an RDMA node lacking one config resource whose selectors match none of its NICs while it advertises another"},
	Eval: func(v *View) []Hit {
		var out []Hit
		for _, n := range v.Nodes {
			for _, m := range n.missingResources() {
				out = append(out, hit(n.Name, m.Text))
			}
		}
		return out
	}})

var _ = register(Rule{ID: NodeCordoned, Severity: Warning, Seed: "field",
	Cause:  "the node is cordoned (spec.unschedulable): its DaemonSets (MOFED, device plugins) keep running, but no new workload pod, and none of the suite's test pods, can be scheduled there, so its RDMA cannot be used or measured",
	Fix:    "uncordon it when the maintenance is over (kubectl uncordon <node>), or leave it out of the run with the node selector",
	Raises: "spec.unschedulable=true",
	Silent: []string{"a schedulable node", "the node.kubernetes.io/unschedulable taint is never reported as untolerated by the NicClusterPolicy (DaemonSets tolerate it)"},
	Eval: func(v *View) []Hit {
		var out []Hit
		for _, n := range v.Nodes {
			if n.Node.Spec.Unschedulable {
				out = append(out, hit(n.Name, "spec.unschedulable=true (kubectl cordon)"))
			}
		}
		return out
	}})

var _ = register(Rule{ID: PortDown, Severity: Critical, Seed: "002",
	Cause:  "an RDMA port on the node is not ACTIVE (ibstat shows State: Down, Physical state Polling or Disabled): no traffic can use it",
	Fix:    "check cable and switch port; for InfiniBand check the subnet manager (sminfo); mlxlink -d <dev> shows the physical state. A port left unused on purpose is declared with --unused-ports",
	Raises: "host probe: a port whose state file reads anything but ACTIVE",
	Silent: []string{"a port whose state cannot be read (unknown: the node check is not-run with the reason)", "a port declared in --unused-ports (listed beside the node's pass)"},
	Eval: func(v *View) []Hit {
		var out []Hit
		for _, n := range v.Nodes {
			if n.Host == nil {
				continue
			}
			for _, p := range n.Host.PortsDown {
				if id, _, _ := strings.Cut(p, ":"); !v.portUnused(n.Name, id) {
					out = append(out, hit(n.Name, "host: port "+p))
				}
			}
		}
		return out
	}})

// RDMADeviceMissing: a node meant to have RDMA NICs whose host shows none.
const RDMADeviceMissing = "rdma-device-missing"

var _ = register(Rule{ID: RDMADeviceMissing, Severity: Critical, Seed: "field",
	Cause: "the node is meant to have RDMA NICs, yet its host shows no RDMA device: the HCA driver is not loaded (no /sys/class/infiniband), " +
		"or it loaded without registering a device (firmware, a failed probe in dmesg); no pod on the node can use RDMA, whatever the node advertises",
	Fix: "on the node: lsmod | grep -E 'mlx5_ib|ib_core', ibstat, and dmesg | grep -i mlx5; with the Network Operator the MOFED driver pod " +
		"loads the modules (its log says why not); a firmware mismatch needs mlxfwmanager / a firmware update",
	Raises: "host probe: /sys/class/infiniband absent or without any device on a node that is RDMA by label, mofed.wait label or a MOFED pod aimed at it",
	Silent: []string{"a node that is not meant to be RDMA (no NIC label, no mofed.wait label, no MOFED pod)",
		"a node whose host probe did not run (its node check is not-run with the reason)",
		"a node whose MOFED driver pod is not Ready: the driver's own finding names the cause, and the missing devices follow from it"},
	Eval: func(v *View) []Hit {
		var out []Hit
		for _, n := range v.Nodes {
			h := n.Host
			if h == nil || !h.RDMARead || len(h.RDMADevices) > 0 {
				continue
			}
			rdma, why := n.RDMANode()
			if !rdma || (len(n.MOFED) > 0 && !n.MOFEDReady()) {
				continue
			}
			seen := "/sys/class/infiniband is absent (ib_core not loaded)"
			if h.RDMAClassPresent {
				seen = "no RDMA device under /sys/class/infiniband (ibstat would list none)"
			}
			out = append(out, hit(n.Name, "host: "+seen, "the node is RDMA by "+why))
		}
		return out
	}})
