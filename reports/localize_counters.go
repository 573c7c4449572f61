package reports

import (
	"fmt"
	"slices"
	"strings"
)

// Which end of a dirty link: a failing link check (<feature>/link) carries, per side, how
// many judged port counters rose above their allowance
// (client_/server_counters_over_allowance, with the side's node and port).
// Which end counted the errors tells a port from a link: receive-side errors
// on one port with every partner point at that port or its cable; errors
// its partners count, not it, point at what it sends (its transmit side,
// cable or transceiver); errors on one pair only point at that link.

// CounterSide is one end of a failing link check whose judged counters
// rose: the evidence a localisation names.
type CounterSide struct {
	Node string `json:"node"`
	Port string `json:"port,omitempty"`
	// Side is "client" or "server" of the pair check.
	Side string `json:"side"`
	// Counters is how many judged counters rose above their allowance.
	Counters int `json:"counters"`
	// Check and Partner say where: the link check and the other end.
	Check   string `json:"check"`
	Partner string `json:"partner"`
}

const overAllowanceSuffix = "_counters_over_allowance"

// counterSides are the ends of the failing link checks in cs whose judged
// counters rose, in a stable order.
func counterSides(cs []Check) []CounterSide {
	var out []CounterSide
	for _, c := range cs {
		if !c.Is().Link || !locFailing(c.Status) || len(c.Nodes) != 2 {
			continue
		}
		for _, m := range c.Measured {
			side, ok := strings.CutSuffix(m.Name, overAllowanceSuffix)
			if !ok || m.Value <= 0 {
				continue
			}
			partner := c.Nodes[1]
			if m.Node == c.Nodes[1] {
				partner = c.Nodes[0]
			}
			out = append(out, CounterSide{Node: m.Node, Port: m.Port, Side: side, Counters: int(m.Value), Check: c.ID, Partner: partner})
		}
	}
	slices.SortFunc(out, func(a, b CounterSide) int {
		return strings.Compare(a.Node+"\x00"+a.Port+"\x00"+a.Partner+"\x00"+a.Check+"\x00"+a.Side,
			b.Node+"\x00"+b.Port+"\x00"+b.Partner+"\x00"+b.Check+"\x00"+b.Side)
	})
	return slices.Compact(out)
}

// maxCounterSides bounds the ends a finding lists (a bad node of a 1024-node
// ring has thousands); CountersMore counts the rest.
const maxCounterSides = 16

// withCounters puts sides on f (at most maxCounterSides) and appends note
// to its explanation.
func (f *Finding) withCounters(sides []CounterSide, note string) {
	if len(sides) > maxCounterSides {
		f.CountersMore = len(sides) - maxCounterSides
		sides = sides[:maxCounterSides]
	}
	f.Counters = sides
	f.Explanation += note
}

// where is "node port" (or the node alone).
func (s CounterSide) where() string {
	if s.Port == "" {
		return s.Node
	}
	return s.Node + " " + s.Port
}

// countersText names the ends that counted, each once with the partners it
// counted them with ("gpu-001 mlx5_0/1 (with gpu-002)"), at most a few.
func countersText(sides []CounterSide) string {
	partners := map[string][]string{}
	var order []string
	for _, s := range sides {
		w := s.where()
		if _, seen := partners[w]; !seen {
			order = append(order, w)
		}
		if !slices.Contains(partners[w], s.Partner) {
			partners[w] = append(partners[w], s.Partner)
		}
	}
	const most = 4
	var parts []string
	for i, w := range order {
		if i == most {
			parts = append(parts, fmt.Sprintf("and %d more", len(order)-most))
			break
		}
		ps := partners[w]
		with := strings.Join(ps[:min(len(ps), most)], ", ")
		if len(ps) > most {
			with += fmt.Sprintf(" and %d more", len(ps)-most)
		}
		parts = append(parts, fmt.Sprintf("%s (with %s)", w, with))
	}
	return strings.Join(parts, "; ")
}

// portCountersNote is a bad port's counter evidence: whether its own port
// counted the errors with every partner it failed with, its partners did,
// or a mix; "" when no link check of the port failed on counters.
func portCountersNote(n, port string, failedWith []string, sides []CounterSide) string {
	if len(sides) == 0 {
		return ""
	}
	own, theirs := map[string]bool{}, map[string]bool{}
	for _, s := range sides {
		if s.Node == n && (s.Port == "" || s.Port == port) {
			own[s.Partner] = true
		} else if s.Node != n {
			theirs[s.Node] = true
		}
	}
	switch {
	case len(own) == len(failedWith) && len(theirs) == 0:
		return fmt.Sprintf("; its port counters rose on %s itself with every partner (%d of %d link checks): the errors are counted at this port, suspect it or its cable and transceiver",
			port, len(own), len(failedWith))
	case len(own) == 0 && len(theirs) == len(failedWith):
		return fmt.Sprintf("; the errors were counted by its partners' ports (%d of %d), not by %s: what %s sends arrives damaged, suspect its transmit side, cable or transceiver",
			len(theirs), len(failedWith), port, port)
	}
	return "; port counters rose on: " + countersText(sides)
}

// linkCountersNote is a failing pair's counter evidence: which end counted
// the errors ("" when no link check failed on counters).
func linkCountersNote(sides []CounterSide) string {
	if len(sides) == 0 {
		return ""
	}
	ends := map[string]bool{}
	for _, s := range sides {
		ends[s.Node] = true
	}
	if len(ends) == 1 {
		return fmt.Sprintf("; the port counters rose at one end only: %s", countersText(sides))
	}
	return "; the port counters rose at both ends: " + countersText(sides)
}
