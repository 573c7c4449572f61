package verbs

import (
	"fmt"
	"net"
)

// Decoding of ibv_port_attr enums, kept free of cgo so it is plain data. The
// values are from rdma-core's verbs.h and what ibv_devinfo / ibstat print.

func portState(s int) string {
	switch s {
	case 1:
		return "DOWN"
	case 2:
		return "INIT"
	case 3:
		return "ARMED"
	case 4:
		return "ACTIVE"
	case 5:
		return "ACTIVE_DEFER"
	}
	return fmt.Sprintf("UNKNOWN(%d)", s)
}

func physState(s int) string {
	names := map[int]string{1: "Sleep", 2: "Polling", 3: "Disabled", 4: "PortConfigurationTraining",
		5: "LinkUp", 6: "LinkErrorRecovery", 7: "PhyTest"}
	if n, ok := names[s]; ok {
		return n
	}
	return fmt.Sprintf("Unknown(%d)", s)
}

// mtuBytes converts enum ibv_mtu (1..5) to bytes.
func mtuBytes(e int) int {
	if e < 1 || e > 5 {
		return 0
	}
	return 128 << e
}

// mtuEnumFor is the inverse of mtuBytes, rounding down; 0 when below 256.
func mtuEnumFor(bytes int) int {
	e := 0
	for m := 1; m <= 5; m++ {
		if mtuBytes(m) <= bytes {
			e = m
		}
	}
	return e
}

// widthLanes converts ibv_port_attr.active_width to a lane count.
func widthLanes(w int) int {
	switch w {
	case 1:
		return 1
	case 2:
		return 4
	case 4:
		return 8
	case 8:
		return 12
	case 16:
		return 2
	}
	return 0
}

// laneGbps converts active_speed / active_speed_ex to the per-lane rate
// ibstat uses (so 4 lanes of EDR read 100, HDR 200, NDR 400).
func laneGbps(speed, speedEx int) float64 {
	if speedEx != 0 {
		switch speedEx {
		case 256: // XDR
			return 200
		}
	}
	switch speed {
	case 1:
		return 2.5 // SDR
	case 2:
		return 5 // DDR
	case 4, 8:
		return 10 // QDR, FDR10
	case 16:
		return 14 // FDR
	case 32:
		return 25 // EDR
	case 64:
		return 50 // HDR
	case 128:
		return 100 // NDR
	}
	return 0
}

// formatGID prints a GID the way ibv_devinfo -v does for IPv4-mapped and
// IPv6 GIDs.
func formatGID(raw [16]byte) string { return net.IP(raw[:]).String() }

// ParseGID reads a GID from its textual form.
func ParseGID(s string) ([16]byte, error) {
	var g [16]byte
	ip := net.ParseIP(s)
	if ip == nil {
		return g, fmt.Errorf("bad GID %q", s)
	}
	copy(g[:], ip.To16())
	return g, nil
}
