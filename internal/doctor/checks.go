package doctor

import (
	"fmt"
	"strings"
	"time"

	"github.com/rdmasuite/rdmasuite/reports"
)

// Checks turns findings into checks of the results model: one failed check
// per finding, and one "doctor/node" check per node without any. That check
// passes only when every source the catalogue needs was read for the node:
// the API facts (always gathered here) and the host facts (the host probe).
// A node whose host facts are missing is not-run with the reason, never a
// pass. A finding without a node (something could not be looked at) is a
// not-run check too.
func Checks(s State, fs []Finding, took time.Duration) []reports.Check {
	var out []reports.Check
	withFinding := map[string]bool{}
	for _, f := range fs {
		c := reports.Check{ID: "doctor/" + f.ID, Title: Catalogue[f.ID].Cause, Evidence: f.Evidence,
			Diagnosis: fmt.Sprintf("[%s, seed %s] %s", f.Severity, f.Seed, f.Cause), Fix: f.Fix, Status: reports.Fail}
		if f.Node == "" {
			c.Status, c.Reason, c.Diagnosis, c.Fix = reports.NotRun, strings.Join(f.Evidence, "; ")+": "+f.Cause, "", ""
		} else {
			c.Nodes = []string{f.Node}
			withFinding[f.Node] = true
		}
		out = append(out, c)
	}
	for _, n := range s.Nodes {
		if withFinding[n.Name] {
			continue
		}
		c := reports.Check{ID: "doctor/node", Title: "no known failure mode on the node", Nodes: []string{n.Name},
			Status: reports.Pass, Duration: took.Seconds()}
		if _, ok := s.Hosts[n.Name]; !ok {
			why := s.HostsMissing[n.Name]
			if why == "" {
				why = "host facts were not gathered"
			}
			c.Status, c.Reason = reports.NotRun, "API facts show no known failure mode, but the host-level checks "+
				"(storage modules, driver markers, peermem, ports, I/O pressure) did not run on this node: "+why
		}
		out = append(out, c)
	}
	return out
}
