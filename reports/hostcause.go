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

// HostCapName names a doctor finding's measurement of what its host
// cause allows a port to carry (Gb/s, Measurement.Port the port).
const HostCapName = "host_cap"

// Host causes that cap a port's bandwidth by a figure (Check.Measured
// HostCapName): they explain a failed bandwidth figure on that port when
// the cap is below the floor (the port could not meet it) and the figure
// is near the cap (nearCap of it: the cap is what held it back).
var capFindings = []string{"doctor/pcie-link-capped", "doctor/roce-mtu-low", "doctor/host-config-differs"}

// Host causes of the GPU's path to its NIC, which halve GPUDirect traffic
// without a figure of their own: they explain the GPUDirect and NCCL
// checks of the NIC's ports.
var gpuPathFindings = []string{"doctor/nic-gpu-cross-socket", "doctor/acs-redirects-gpu-nic"}

const nearCap = 0.8

// hostCause is one doctor finding's line about one port, with the cap it
// states there (0 for a GPU-path cause).
type hostCause struct {
	id, line string
	cap      float64
}

// AttachHostCauses joins the run's host-configuration findings to its
// failing measurements. A failing figure (bandwidth, GPUDirect, NCCL:
// not the link and ports checks, which fail on counters and states, and
// not latency, which no bandwidth cap explains) is explained by its host
// when a finding names one of its ports and either caps that port below
// the check's floor while the figure came near the cap, or, for a
// GPUDirect or NCCL check, puts the GPU across the socket or behind ACS.
// A failure whose link check on the same rail failed too is left to the
// link: its counters are the better evidence. The check gets HostCauses
// and its diagnosis says it. Calling it again changes nothing.
func AttachHostCauses(run *Run) {
	byNode := map[string][]hostCause{}
	for _, c := range run.Checks {
		capBased, gpuPath := slices.Contains(capFindings, c.ID), slices.Contains(gpuPathFindings, c.ID)
		if c.Status != Fail || len(c.Nodes) != 1 || !capBased && !gpuPath {
			continue
		}
		for _, e := range c.Evidence {
			hc := hostCause{id: c.ID, line: e}
			for _, m := range c.Measured {
				if capBased && m.Name == HostCapName && namesPort(e, m.Port) {
					hc.cap = m.Value
				}
			}
			if capBased && hc.cap == 0 {
				continue // a line that caps nothing (a GID index, firmware)
			}
			byNode[c.Nodes[0]] = append(byNode[c.Nodes[0]], hc)
		}
	}
	if len(byNode) == 0 {
		return
	}
	dirty := dirtyLinks(run.Checks)
	for i := range run.Checks {
		c := &run.Checks[i]
		if !locFailing(c.Status) || !c.Is().Localize || len(c.HostCauses) > 0 || !figureCheck(*c) || dirty[linkKey(*c)] {
			continue
		}
		gpuCheck := strings.HasPrefix(c.ID, "gpudirect/") || strings.HasPrefix(c.ID, "nccl/")
		for _, e := range checkEnds(*c) {
			for _, hc := range byNode[e.node] {
				if !namesPort(hc.line, e.port) {
					continue
				}
				what := strings.TrimPrefix(hc.line, "host: ")
				switch {
				case hc.cap > 0:
					floor, ok := capExplains(*c, hc.cap)
					if !ok {
						continue
					}
					what += fmt.Sprintf(" (it allows %.1f Gb/s, below the floor %.1f Gb/s)", hc.cap, floor)
				case !gpuCheck:
					continue
				}
				c.HostCauses = append(c.HostCauses, HostCause{Node: e.node, Port: e.port, Finding: hc.id, What: what})
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

// capExplains says whether a cap explains every failed Gb/s figure of c:
// the cap is below the figure's floor and the figure reached nearCap of
// the cap. It returns the (highest) floor concerned.
func capExplains(c Check, cap float64) (float64, bool) {
	floor, found := 0.0, false
	for _, m := range c.Measured {
		t := m.Threshold
		if m.Unit != "Gb/s" || t == nil || t.Op != ">=" || t.Met(m.Value) {
			continue
		}
		if cap >= t.Value || m.Value < nearCap*cap {
			return 0, false
		}
		floor, found = max(floor, t.Value), true
	}
	return floor, found
}

// dirtyLinks are the variant, nodes and rail of every failing link check.
func dirtyLinks(cs []Check) map[string]bool {
	out := map[string]bool{}
	for _, c := range cs {
		if c.Is().Link && locFailing(c.Status) {
			out[linkKey(c)] = true
		}
	}
	return out
}

func linkKey(c Check) string { return c.Variant + "|" + strings.Join(c.Nodes, ",") + "|" + c.Rail }

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
