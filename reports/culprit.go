package reports

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// Culprit is a place the localisation blames: a bad node, a bad port or a
// bad link. One place blamed in several variants is one culprit; an
// inconclusive finding blames nothing and is not one.
type Culprit struct {
	Kind     FindingKind
	Nodes    []string // the node; both ends of a link
	Rail     string   // a bad port's port; a bad link's failing rail label(s)
	Partners int      // partners failed with (the most over its variants)
	Variants []string
	// Explanation is the first finding's: what failed, what passed, what
	// to suspect.
	Explanation string
}

// Culprits are the findings' culprits, nodes first, then ports, then
// links, each kind by node name.
func Culprits(fs []Finding) []Culprit {
	var out []Culprit
	at := map[string]int{}
	for _, f := range fs {
		if f.Kind == Inconclusive {
			continue
		}
		k := string(f.Kind) + "\x00" + strings.Join(f.Nodes, ",") + "\x00" + f.Rail
		i, seen := at[k]
		if !seen {
			i = len(out)
			at[k] = i
			out = append(out, Culprit{Kind: f.Kind, Nodes: f.Nodes, Rail: f.Rail, Explanation: f.Explanation})
		}
		c := &out[i]
		c.Partners = max(c.Partners, f.PartnersFailed)
		if f.Variant != "" && !slices.Contains(c.Variants, f.Variant) {
			c.Variants = append(c.Variants, f.Variant)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		return locusLess(out[i].Kind, out[j].Kind, out[i].Nodes, out[j].Nodes, out[i].Rail, out[j].Rail)
	})
	return out
}

// Text is the culprit in a few words: "port mlx5_3/1 on node gpu-017 (bad
// port, 2 partners)". withVariants names the variants it failed in (when
// the run's culprits do not all share one).
func (c Culprit) Text(withVariants bool) string {
	what := strings.ReplaceAll(string(c.Kind), "-", " ")
	if withVariants && len(c.Variants) > 0 {
		what += " [" + strings.Join(c.Variants, ", ") + "]"
	}
	partners := ""
	if c.Partners > 0 {
		partners = fmt.Sprintf(", %d partner%s", c.Partners, plural(c.Partners))
	}
	switch c.Kind {
	case BadPort:
		return fmt.Sprintf("port %s on node %s (%s%s)", c.Rail, c.Nodes[0], what, partners)
	case HostConfig:
		return fmt.Sprintf("port %s on node %s (host configuration, not the fabric)", c.Rail, c.Nodes[0])
	case BadLink:
		on := ""
		if c.Rail != "" {
			on = " on " + c.Rail
		}
		return fmt.Sprintf("link %s%s (%s)", strings.Join(c.Nodes, "↔"), on, what)
	}
	return fmt.Sprintf("node %s (%s%s)", strings.Join(c.Nodes, ", "), what, partners)
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// mixedVariants: the culprits were found in different variants, so each
// must say which.
func mixedVariants(cs []Culprit) bool {
	var first string
	for _, c := range cs {
		for _, v := range c.Variants {
			if first == "" {
				first = v
			}
			if v != first {
				return true
			}
		}
	}
	return false
}

// maxVerdictCulprits: the verdict line names this many culprits, then
// how many more there are, so it stays one line however many there are.
const maxVerdictCulprits = 3

// culpritsText is "culprit: A" or "culprits: A; B; C; and 4 more"; ""
// when there is none.
func culpritsText(cs []Culprit) string {
	mixed := mixedVariants(cs)
	texts := make([]string, 0, min(len(cs), maxVerdictCulprits))
	for _, c := range cs[:min(len(cs), maxVerdictCulprits)] {
		texts = append(texts, c.Text(mixed))
	}
	return verdictList("culprit", texts, len(cs))
}

// verdictList is "NOUN: A" or "NOUNs: A; B; C; and 4 more" for the first
// texts of n things (at most maxVerdictCulprits are named); "" for none.
func verdictList(noun string, texts []string, n int) string {
	if n == 0 {
		return ""
	}
	parts := append([]string{}, texts...)
	if more := n - len(texts); more > 0 {
		parts = append(parts, fmt.Sprintf("and %d more", more))
	}
	if n > 1 {
		noun += "s"
	}
	return noun + ": " + strings.Join(parts, "; ")
}
