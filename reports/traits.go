package reports

import "strings"

// Traits say how the reports present and use a check. The feature that
// defines a check sets them and they travel in the results file, so a
// renderer reads them instead of guessing from the check's id, and a new
// family of checks needs no edit here.
type Traits struct {
	// Pair: the check measures from Nodes[0] (the client) toward Nodes[1]
	// (the server); its row reads "client → server" and a node's failing
	// row names the other node as its partner.
	Pair bool `json:"pair,omitempty"`
	// Loopback: both ends are one node (a same-node measurement): not
	// evidence about a link, only about the node on its own.
	Loopback bool `json:"loopback,omitempty"`
	// Link: the check judges the port counters at both ends of a rail pair
	// around its measurements (a dirty link, not a slow one).
	Link bool `json:"link,omitempty"`
	// HeatUnit is the unit of the measurements the pair heat map and the
	// fleet view colour by (against their floors); "" keeps the check off
	// both.
	HeatUnit string `json:"heatUnit,omitempty"`
	// Localize: a pass or failure of this check between two nodes is
	// evidence for localisation (bad node, bad port or bad link).
	Localize bool `json:"localize,omitempty"`
	// Op is the operation measured (an RDMA op, an NCCL collective); the
	// metrics' op label.
	Op string `json:"op,omitempty"`
}

// Is returns the check's traits: those it carries, else those its id had
// when the results file did not carry traits (knownTraits).
func (c Check) Is() Traits {
	if c.Traits != nil {
		return *c.Traits
	}
	return knownTraits(c.ID)
}

// knownTraits are the traits of the check families that existed before
// checks carried their own, read from the id: an older results file renders
// as it did. A run's checks carry their own: the verdicts set them, and the
// runner gives the rows it makes without a verdict (a node that does not
// advertise the resource, a feature that could not run) their op's.
func knownTraits(id string) Traits {
	family, rest, _ := strings.Cut(id, "/")
	op, sub, _ := strings.Cut(rest, "/")
	var t Traits
	switch family {
	case "bandwidth", "gpudirect", "latency", "msgrate":
		t.Localize = family == "bandwidth" || family == "gpudirect"
		t.Loopback = sub == "loopback"
		switch {
		case op == "link":
			t.Pair, t.Link = true, true
		case op == "write" || op == "read" || op == "send":
			t.Pair, t.Op = true, op
			if family == "bandwidth" || family == "gpudirect" {
				t.HeatUnit = "Gb/s"
			}
		}
	case "nccl":
		t.Localize = true
		switch op {
		case "all_reduce", "all_gather", "reduce_scatter", "alltoall", "broadcast", "reduce", "sendrecv":
			t.Op = op
		}
	}
	return t
}
