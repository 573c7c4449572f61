package doctor

import (
	"fmt"
	"strings"
	"time"

	"github.com/rdmasuite/rdmasuite/reports"
)

// Checks turns findings into checks of the results model: one failed check
// per finding, one passing "doctor/node" check per node without any, and a
// not-run check for what could not be looked at (a finding without a node).
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
		if !withFinding[n.Name] {
			out = append(out, reports.Check{ID: "doctor/node", Title: "no known failure mode on the node", Nodes: []string{n.Name},
				Status: reports.Pass, Duration: took.Seconds()})
		}
	}
	return out
}
