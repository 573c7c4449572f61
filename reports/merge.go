package reports

import (
	"fmt"
	"sort"
	"strings"
)

// Merge joins runs that covered different parts of one acceptance (e.g.
// the shared-dev variant on nodes in shared RDMA netns mode, then the
// hostdev variant after the nodes were switched to exclusive mode, which no
// single run can do) into one run to report: every check of every run,
// nodes united, phases summed, each run's not-run allowances narrowed to the
// ids they excused there. A check that two runs both report (same id,
// variant, nodes and rail) is an error: the merged report would otherwise
// silently show one of two verdicts.
func Merge(runs ...Run) (Run, error) {
	if len(runs) == 0 {
		return Run{}, fmt.Errorf("nothing to merge")
	}
	if len(runs) == 1 {
		return runs[0], nil
	}
	out := Run{Schema: Schema, Started: runs[0].Started, Finished: runs[0].Finished, Cluster: runs[0].Cluster, Phases: map[string]Phase{}}
	var ids []string
	seen := map[string]string{}
	nodes := map[string]Node{}
	allow := map[string]bool{}
	for _, r := range runs {
		if r.Cluster.Server != out.Cluster.Server {
			return Run{}, fmt.Errorf("runs %s and %s were against different clusters (%s, %s)", runs[0].RunID, r.RunID, out.Cluster.Server, r.Cluster.Server)
		}
		ids = append(ids, r.RunID)
		if r.Started.Before(out.Started) {
			out.Started = r.Started
		}
		if r.Finished.After(out.Finished) {
			out.Finished = r.Finished
		}
		for _, n := range r.Nodes {
			if _, ok := nodes[n.Name]; !ok {
				nodes[n.Name] = n
			}
		}
		for _, c := range r.Checks {
			key := strings.Join([]string{c.ID, c.Variant, strings.Join(c.Nodes, ","), c.Rail}, "|")
			if other, ok := seen[key]; ok {
				return Run{}, fmt.Errorf("check %s [%s] on %v %s is in both run %s and run %s: merge runs that cover different checks", c.ID, c.Variant, c.Nodes, c.Rail, other, r.RunID)
			}
			seen[key] = r.RunID
			out.Checks = append(out.Checks, c)
		}
		for name, p := range r.Phases {
			q := out.Phases[name]
			q.Count += p.Count
			q.TotalSec += p.TotalSec
			q.MaxSec = max(q.MaxSec, p.MaxSec)
			out.Phases[name] = q
		}
		// Allowances become the exact ids they excused in their own run, so a
		// prefix one run allowed does not excuse the other run's not-runs
		// under other ids.
		for _, c := range r.Checks {
			if r.Allowed(c) {
				allow[c.ID] = true
			}
		}
	}
	out.RunID = strings.Join(ids, "+")
	for _, n := range nodes {
		out.Nodes = append(out.Nodes, n)
	}
	sort.Slice(out.Nodes, func(i, j int) bool { return out.Nodes[i].Name < out.Nodes[j].Name })
	for id := range allow {
		out.AllowNotRun = append(out.AllowNotRun, id)
	}
	sort.Strings(out.AllowNotRun)
	if len(out.Phases) == 0 {
		out.Phases = nil
	}
	return out, out.Validate()
}
