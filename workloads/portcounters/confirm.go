package portcounters

import (
	"fmt"
	"math"
	"strings"
)

// Direction is the way the claimed payload crossed the port being asked:
// Transmit on the side that sent the data (the requester of a WRITE or
// SEND, the responder of a READ), Receive on the side that took it in.
type Direction int

const (
	Transmit Direction = iota
	Receive
)

func (d Direction) String() string {
	if d == Receive {
		return "receive"
	}
	return "transmit"
}

// Claim is what a measurement says crossed the port.
type Claim struct {
	Direction Direction
	// Bytes is the payload the measurement moved in Direction.
	Bytes uint64
	// Packets, when the caller knows it, is the exact number of data
	// packets (messages × ceil(size/MTU)); 0 derives a lower bound from
	// Bytes and MTU.
	Packets uint64
	// MTU is the active path MTU in bytes, needed where only packets are
	// counted (rxe's sent_pkts/rcvd_pkts).
	MTU int
}

// Verdict is ConfirmBytes' answer.
type Verdict string

const (
	// Confirmed: the port's counter accounts for the claim.
	Confirmed Verdict = "confirmed"
	// Short: the port's counter is below the claim: the traffic went
	// elsewhere (another rail, loopback through memory, a wrong device).
	Short Verdict = "short"
	// NotConfirmable: the device counts nothing usable; Reason says why.
	NotConfirmable Verdict = "not-confirmable"
	// Impossible: the deltas contradict their own readings
	// (Deltas.Contradictions): figures that cannot be true confirm nothing.
	Impossible Verdict = "impossible"
)

// Confirmation is whether a port's own counters back a claim.
type Confirmation struct {
	Verdict Verdict `json:"verdict"`
	// Counter is the counter that decided, "group/name".
	Counter string `json:"counter,omitempty"`
	// Unit is "bytes" or "packets"; Claimed and Counted are in it.
	Unit    string  `json:"unit,omitempty"`
	Claimed uint64  `json:"claimed"`
	Counted uint64  `json:"counted"`
	Ratio   float64 `json:"ratio,omitempty"`
	// Tolerance is the fraction below the claim still accepted.
	Tolerance float64 `json:"tolerance"`
	Reason    string  `json:"reason"`
}

// candidate is a counter that can back a claim, best first.
type candidate struct {
	group   Group
	name    string
	isBytes bool
}

var candidates = map[Direction][]candidate{
	// Data words are exact to 4 bytes; packets only give a lower bound.
	Transmit: {{Counters, "port_xmit_data", true}, {Counters, "port_xmit_packets", false}, {HWCounters, "sent_pkts", false}},
	Receive:  {{Counters, "port_rcv_data", true}, {Counters, "port_rcv_packets", false}, {HWCounters, "rcvd_pkts", false}},
}

// ConfirmBytes says whether the port's own counters account for claim.
// Headers, CRCs, ACKs and retransmissions only make a counter larger than
// the payload, so only a counter below the claim fails; tolerance (0 ≤ t <
// 1) is the fraction below it still accepted, for the 4-octet rounding of
// the data counters and hw_counters' lifespan cache. A counter far above
// the claim is not a failure (other traffic shares the port): Ratio shows it.
func ConfirmBytes(d Deltas, claim Claim, tolerance float64) Confirmation {
	c := Confirmation{Verdict: NotConfirmable, Tolerance: tolerance}
	switch {
	case d.Problem != "":
		c.Reason = d.Problem
		return c
	case len(d.Contradictions()) > 0:
		c.Verdict = Impossible
		c.Reason = fmt.Sprintf("figures that cannot be true on %s port %d: %s", d.Device, d.Port, strings.Join(d.Contradictions(), "; "))
		return c
	case !(tolerance >= 0 && tolerance < 1):
		c.Reason = fmt.Sprintf("tolerance %v is not in [0, 1)", tolerance)
		return c
	case claim.Bytes == 0 && claim.Packets == 0:
		c.Reason = "nothing claimed"
		return c
	}

	cands, ok := candidates[claim.Direction]
	if !ok {
		c.Reason = fmt.Sprintf("unknown direction %d", int(claim.Direction))
		return c
	}
	var skipped []string
	for _, k := range cands {
		name := key(k.group, k.name)
		x, ok := d.Get(k.group, k.name)
		if !ok {
			skipped = append(skipped, name+" absent")
			continue
		}
		if x.Status != OK || x.fell() {
			status := x.Status
			if x.fell() {
				status = Backwards
			}
			skipped = append(skipped, fmt.Sprintf("%s %s", name, status))
			continue
		}
		if k.isBytes && claim.Bytes == 0 {
			skipped = append(skipped, name+" needs a byte claim")
			continue
		}
		c.Counter = name
		if k.isBytes {
			c.Unit, c.Claimed, c.Counted = "bytes", claim.Bytes, DataBytes(x.Delta)
		} else {
			need, why := minPackets(claim)
			if need == 0 {
				skipped = append(skipped, name+" needs "+why)
				c.Counter = ""
				continue
			}
			c.Unit, c.Claimed, c.Counted = "packets", need, x.Delta
		}
		break
	}
	if c.Counter == "" {
		c.Reason = fmt.Sprintf("no %s counter on %s port %d can confirm the claim: %s",
			claim.Direction, d.Device, d.Port, strings.Join(skipped, "; "))
		return c
	}

	c.Ratio = float64(c.Counted) / float64(c.Claimed)
	floor := uint64(math.Floor(float64(c.Claimed) * (1 - tolerance)))
	if c.Counted >= floor {
		c.Verdict = Confirmed
		c.Reason = fmt.Sprintf("%s counted %d %s for %d claimed (×%.3f)", c.Counter, c.Counted, c.Unit, c.Claimed, c.Ratio)
	} else {
		c.Verdict = Short
		c.Reason = fmt.Sprintf("%s counted %d %s, below the %d claimed (×%.3f, tolerance %.1f%%): "+
			"the traffic did not cross this port", c.Counter, c.Counted, c.Unit, c.Claimed, c.Ratio, 100*tolerance)
	}
	if len(skipped) > 0 {
		c.Reason += " (skipped: " + strings.Join(skipped, "; ") + ")"
	}
	return c
}

// minPackets is the fewest data packets the claim can have taken, and why
// none can be given.
func minPackets(claim Claim) (uint64, string) {
	if claim.Packets > 0 {
		return claim.Packets, ""
	}
	if claim.MTU <= 0 {
		return 0, "the path MTU to turn bytes into packets"
	}
	mtu := uint64(claim.MTU)
	return (claim.Bytes + mtu - 1) / mtu, ""
}
