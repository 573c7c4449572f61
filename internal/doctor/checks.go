package doctor

import (
	"fmt"
	"strings"
	"time"

	"github.com/rdmasuite/rdmasuite/reports"
)

// Checks turns findings into checks of the results model: one failed check
// per finding, and one "doctor/node" check per node without any. That check
// passes only when every source the rules need was read and judged for the
// node: the API facts (always gathered here) and the host facts (the host
// probe). A node whose host facts are missing, or where something could not
// be judged (a port state unreadable, no PSI, RDMA resource names unknown),
// is not-run with the reason, never a pass. A finding without a node
// (something could not be looked at) is a not-run check too. With APIOnly
// the node check is doctor/node-api: the API facts alone, by design.
func Checks(s State, fs []Finding, took time.Duration) []reports.Check {
	v := NewView(s)
	var out []reports.Check
	withFinding := map[string]bool{}
	for _, f := range fs {
		c := reports.Check{ID: "doctor/" + f.ID, Title: Catalogue[f.ID].Cause, Evidence: f.Evidence,
			Diagnosis: fmt.Sprintf("[%s, seed %s] %s", f.Severity, f.Seed, f.Cause), Fix: f.Fix, Status: reports.Fail}
		for _, cp := range f.Caps {
			c.Measured = append(c.Measured, reports.Measurement{Name: reports.HostCapName, Node: f.Node, Port: cp.Port, Value: cp.Gbps, Unit: "Gb/s"})
		}
		switch f.Node {
		case "":
			c.Status, c.Reason, c.Diagnosis, c.Fix = reports.NotRun, strings.Join(f.Evidence, "; ")+": "+f.Cause, "", ""
		case ClusterWide:
			// Seen, but on no one node: a failure of the cluster.
		default:
			c.Nodes = []string{f.Node}
			withFinding[f.Node] = true
		}
		out = append(out, c)
	}
	for _, n := range v.Nodes {
		if withFinding[n.Name] {
			continue
		}
		c := reports.Check{ID: "doctor/node", Title: "no known failure mode on the node", Nodes: []string{n.Name},
			Status: reports.Pass, Duration: took.Seconds(), Evidence: n.Notes}
		if s.APIOnly {
			c.ID, c.Title = "doctor/node-api", "no known failure mode visible in the API on the node (host checks not run by this command)"
		}
		var why []string
		if n.Host == nil && !s.APIOnly {
			reason := s.HostsMissing[n.Name]
			if reason == "" {
				reason = "host facts were not gathered"
			}
			why = append(why, "the host-level checks (storage modules, driver markers, peermem, ports, I/O pressure) did not run on this node: "+reason)
		}
		why = append(why, n.Unjudged...)
		if len(why) > 0 {
			c.Status, c.Reason = reports.NotRun, "API facts show no known failure mode, but not everything was judged: "+strings.Join(why, "; ")
		}
		out = append(out, c)
	}
	return out
}
