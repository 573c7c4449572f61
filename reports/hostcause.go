package reports

import (
	"fmt"
	"slices"
	"strings"
)

// A low number on a port whose host caps it (a PCIe link trained narrow,
// a small MTU, a NIC across the socket from its GPUs, ACS redirecting
// peer-to-peer traffic, a port unlike its SKU's others) is explained by
// that host, not by a cable or switch. The doctor's host-configuration
// findings of the same run are joined to the failing measurements of the
// node and port they name: the row says the host cause, and localisation
// blames the host's configuration instead of the fabric.

// HostCause is one doctor finding that explains a check's figure on one
// of its ends.
type HostCause struct {
	Node string `json:"node"`
	// Port is the port it concerns ("" when the finding names the node).
	Port string `json:"port,omitempty"`
	// Finding is the doctor check's id ("doctor/pcie-link-capped") and
	// What the evidence line that names the port.
	Finding string `json:"finding"`
	What    string `json:"what"`
}

// hostConfigFindings are the doctor checks whose evidence explains a low
// measurement on their node.
var hostConfigFindings = []string{"doctor/pcie-link-capped", "doctor/roce-mtu-low", "doctor/nic-gpu-cross-socket",
	"doctor/acs-redirects-gpu-nic", "doctor/host-config-differs", "doctor/roce-lossless-off"}

// AttachHostCauses joins the run's host-configuration findings to its
// failing measurements: each failing check that localisation reads (a
// pair's or loopback's bandwidth, latency, GPUDirect, NCCL figures; not
// the link and ports checks, which fail on counters and states) whose
// node and port a finding names gets the cause in HostCauses and its
// diagnosis says it. Calling it again changes nothing.
func AttachHostCauses(run *Run) {
	type cause struct{ id, line string }
	byNode := map[string][]cause{}
	for _, c := range run.Checks {
		if c.Status != Fail || len(c.Nodes) != 1 || !slices.Contains(hostConfigFindings, c.ID) {
			continue
		}
		for _, e := range c.Evidence {
			byNode[c.Nodes[0]] = append(byNode[c.Nodes[0]], cause{c.ID, e})
		}
	}
	if len(byNode) == 0 {
		return
	}
	for i := range run.Checks {
		c := &run.Checks[i]
		if !locFailing(c.Status) || !c.Is().Localize || len(c.HostCauses) > 0 || !figureCheck(*c) {
			continue
		}
		for _, e := range checkEnds(*c) {
			for _, hc := range byNode[e.node] {
				if !namesPort(hc.line, e.port) {
					continue
				}
				c.HostCauses = append(c.HostCauses, HostCause{Node: e.node, Port: e.port, Finding: hc.id, What: strings.TrimPrefix(hc.line, "host: ")})
			}
		}
		if len(c.HostCauses) == 0 {
			continue
		}
		var say []string
		for _, h := range c.HostCauses {
			say = append(say, fmt.Sprintf("%s on %s: %s", h.Finding, h.Node, h.What))
		}
		c.Diagnosis = strings.TrimSpace(c.Diagnosis + " The host explains it before the fabric: " + strings.Join(say, "; ") +
			" (fix the host configuration first; this is not evidence against the cable or switch).")
	}
}

// namesPort says whether a finding's evidence line is about port ("rxe0/1"):
// it names the port, or the port's device as a whole ("mlx5_1 (0000:…)").
func namesPort(line, port string) bool {
	if port == "" {
		return false
	}
	dev, _, _ := strings.Cut(port, "/")
	return strings.Contains(line, "port "+port+":") || strings.Contains(line, "port "+port+" ") ||
		strings.HasPrefix(line, "host: "+dev+" ") || strings.HasPrefix(line, "host: "+dev+":")
}

// figureCheck says whether a check is judged on a measured figure (a
// bandwidth, latency, bus bandwidth): the link and ports checks fail on
// counters and states, which no host configuration explains.
func figureCheck(c Check) bool {
	return len(c.Measured) > 0 && !strings.HasSuffix(c.ID, "/link") && !strings.HasSuffix(c.ID, "/ports")
}
