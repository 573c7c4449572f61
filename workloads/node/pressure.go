package node

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Pressure is the node's I/O health (seed 004: one VM of several on the same
// shared disk with high iowait and PSI while its peers are clean). The
// verdict needs the peers, so this package reports numbers; the suite
// compares them across nodes.
type Pressure struct {
	// WindowSeconds is the measured sampling interval; 0 for a single read.
	WindowSeconds float64 `json:"windowSeconds"`
	IO            PSI     `json:"io"`
	Memory        PSI     `json:"memory"`
	CPU           CPUTime `json:"cpu"`
}

// PSI is one /proc/pressure/<resource> file.
type PSI struct {
	// Available is false on kernels without CONFIG_PSI (or booted psi=0);
	// Reason then says why. That is a fact about the node, not an error.
	Available bool     `json:"available"`
	Reason    string   `json:"reason,omitempty"`
	Some      *PSILine `json:"some,omitempty"`
	Full      *PSILine `json:"full,omitempty"`
	// SomeStallFraction and FullStallFraction are Δtotal / window: the share
	// of wall time some (all) non-idle tasks were stalled on the resource
	// during the window, 0..1. Set only with a sampling window.
	SomeStallFraction *float64 `json:"someStallFraction,omitempty"`
	FullStallFraction *float64 `json:"fullStallFraction,omitempty"`
}

// PSILine is "some avg10=0.00 avg60=0.00 avg300=0.00 total=0"; averages are
// percentages, total is stalled time in µs since boot.
type PSILine struct {
	Avg10   float64 `json:"avg10"`
	Avg60   float64 `json:"avg60"`
	Avg300  float64 `json:"avg300"`
	TotalUs uint64  `json:"totalUs"`
}

// CPUTime is iowait from /proc/stat's aggregate "cpu" line.
type CPUTime struct {
	// IOWaitPercentSinceBoot is iowait / all ticks since boot: diluted by
	// uptime, so a fresh problem shows only in the windowed value.
	IOWaitPercentSinceBoot float64 `json:"iowaitPercentSinceBoot"`
	// IOWaitPercent is Δiowait / Δall over the window; nil without one.
	IOWaitPercent *float64 `json:"iowaitPercent,omitempty"`
}

// cpuTicks are /proc/stat's cpu columns we need, in USER_HZ ticks.
type cpuTicks struct {
	iowait, total uint64
}

// parsePSI parses a /proc/pressure file ("some …" and, except for cpu on
// old kernels, "full …").
func parsePSI(data string) (some, full *PSILine, err error) {
	for _, line := range strings.Split(strings.TrimSpace(data), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		var l PSILine
		for _, kv := range f[1:] {
			k, v, ok := strings.Cut(kv, "=")
			if !ok {
				return nil, nil, fmt.Errorf("%q: field %q is not key=value", line, kv)
			}
			var perr error
			switch k {
			case "avg10":
				l.Avg10, perr = strconv.ParseFloat(v, 64)
			case "avg60":
				l.Avg60, perr = strconv.ParseFloat(v, 64)
			case "avg300":
				l.Avg300, perr = strconv.ParseFloat(v, 64)
			case "total":
				l.TotalUs, perr = strconv.ParseUint(v, 10, 64)
			}
			if perr != nil {
				return nil, nil, fmt.Errorf("%q: %s: %w", line, k, perr)
			}
		}
		switch f[0] {
		case "some":
			some = &l
		case "full":
			full = &l
		}
	}
	if some == nil {
		return nil, nil, fmt.Errorf("no \"some\" line in %q", data)
	}
	return some, full, nil
}

// parseCPUStat reads "cpu  user nice system idle iowait irq softirq steal
// guest guest_nice". guest time is already counted in user, so the total is
// the first eight columns.
func parseCPUStat(data string) (cpuTicks, error) {
	for _, line := range strings.Split(data, "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || f[0] != "cpu" {
			continue
		}
		if len(f) < 6 {
			return cpuTicks{}, fmt.Errorf("cpu line %q: want at least 5 counters", line)
		}
		var t cpuTicks
		for i := 1; i < len(f) && i <= 8; i++ {
			v, err := strconv.ParseUint(f[i], 10, 64)
			if err != nil {
				return cpuTicks{}, fmt.Errorf("cpu line %q: column %d: %w", line, i, err)
			}
			t.total += v
			if i == 5 {
				t.iowait = v
			}
		}
		return t, nil
	}
	return cpuTicks{}, fmt.Errorf("no aggregate cpu line")
}

// pressureSample is one read of everything that is sampled twice.
type pressureSample struct {
	at     time.Time
	io     PSI
	memory PSI
	cpu    cpuTicks
	cpuErr error
}

func readPSI(h hostFS, resource string) PSI {
	p := "/proc/pressure/" + resource
	data, err := h.readFile(p)
	if err != nil {
		return PSI{Reason: fmt.Sprintf("%s: %v (kernel without CONFIG_PSI, or booted with psi=0)", p, err)}
	}
	some, full, err := parsePSI(string(data))
	if err != nil {
		return PSI{Reason: fmt.Sprintf("%s: %v", p, err)}
	}
	return PSI{Available: true, Some: some, Full: full}
}

func samplePressure(h hostFS, now func() time.Time) pressureSample {
	s := pressureSample{at: now(), io: readPSI(h, "io"), memory: readPSI(h, "memory")}
	data, err := h.readFile("/proc/stat")
	if err == nil {
		s.cpu, err = parseCPUStat(string(data))
	}
	s.cpuErr = err
	return s
}

// collectPressure reads once, and with a window reads again after sleep and
// turns the counter deltas into rates over the measured interval (the clock,
// not the nominal window, so a late wake-up does not inflate the result).
func collectPressure(h hostFS, window time.Duration, now func() time.Time, sleep func(time.Duration)) Pressure {
	first := samplePressure(h, now)
	p := Pressure{IO: first.io, Memory: first.memory}
	if first.cpuErr == nil && first.cpu.total > 0 {
		p.CPU.IOWaitPercentSinceBoot = 100 * float64(first.cpu.iowait) / float64(first.cpu.total)
	}
	if window <= 0 {
		return p
	}
	sleep(window)
	second := samplePressure(h, now)
	elapsed := second.at.Sub(first.at)
	if elapsed <= 0 {
		elapsed = window
	}
	p.WindowSeconds = elapsed.Seconds()
	p.IO = stallOverWindow(first.io, second.io, elapsed)
	p.Memory = stallOverWindow(first.memory, second.memory, elapsed)
	if first.cpuErr == nil && second.cpuErr == nil && second.cpu.total > first.cpu.total {
		// iowait can step backwards on some kernels (it is an estimate per
		// idle CPU); clamp instead of reporting a negative share.
		var dio uint64
		if second.cpu.iowait > first.cpu.iowait {
			dio = second.cpu.iowait - first.cpu.iowait
		}
		v := 100 * float64(dio) / float64(second.cpu.total-first.cpu.total)
		p.CPU.IOWaitPercent = &v
	}
	return p
}

// stallOverWindow reports the second sample's averages with the stall
// fractions of the window added.
func stallOverWindow(a, b PSI, elapsed time.Duration) PSI {
	if !a.Available || !b.Available {
		return b
	}
	b.SomeStallFraction = stallFraction(a.Some, b.Some, elapsed)
	b.FullStallFraction = stallFraction(a.Full, b.Full, elapsed)
	return b
}

func stallFraction(a, b *PSILine, elapsed time.Duration) *float64 {
	if a == nil || b == nil || b.TotalUs < a.TotalUs || elapsed.Microseconds() <= 0 {
		return nil
	}
	v := float64(b.TotalUs-a.TotalUs) / float64(elapsed.Microseconds())
	if v > 1 {
		v = 1 // counters and clock are read at slightly different times
	}
	return &v
}
