package thresholds

import (
	"fmt"
	"sort"
	"strings"
)

// Judged is the nodes one SKU of one file judges.
type Judged struct {
	SKU, File string
	Nodes     []string // sorted
}

// headerNames is how many node names a header line shows before the count.
const headerNames = 5

// String is the run header's line: the SKU, its file and the nodes, the
// first few named and the rest counted (a 1024-node fleet stays one line
// per SKU; the results file holds every node's SKU and file).
func (j Judged) String() string {
	names := j.Nodes
	more := ""
	if len(names) > headerNames {
		names, more = names[:headerNames], fmt.Sprintf(" (+%d more)", len(j.Nodes)-headerNames)
	}
	return fmt.Sprintf("SKU %s from %s judges %d node(s): %s%s", j.SKU, j.File, len(j.Nodes), strings.Join(names, ", "), more)
}

// Judges groups nodes (name → labels) by the SKU ForNode gives each, in
// the order of the set's SKUs; unjudged maps each node without a SKU to
// why.
func (s *Set) Judges(nodes map[string]map[string]string, forced string) (groups []Judged, unjudged map[string]string) {
	unjudged = map[string]string{}
	by := map[string]*Judged{}
	order := map[string]int{}
	for i, k := range s.SKUs {
		order[k.Name] = i
	}
	for name, labels := range nodes {
		k, err := s.ForNode(name, labels, forced)
		if err != nil {
			unjudged[name] = err.Error()
			continue
		}
		g := by[k.Name]
		if g == nil {
			g = &Judged{SKU: k.Name, File: k.File()}
			by[k.Name] = g
		}
		g.Nodes = append(g.Nodes, name)
	}
	for _, g := range by {
		sort.Strings(g.Nodes)
		groups = append(groups, *g)
	}
	sort.Slice(groups, func(i, j int) bool { return order[groups[i].SKU] < order[groups[j].SKU] })
	return groups, unjudged
}
