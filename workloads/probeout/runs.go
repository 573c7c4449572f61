package probeout

import (
	"fmt"
	"io"
	"strconv"
	"strings"
)

// One probe process can carry several runs (rdmaprobe bw … --then …): the
// suite starts one server and one client pod per node pair and has them run
// every paired feature in turn, because a pod start, not the measurement,
// is what a run spends its time on. Each run is framed on stdout by a begin
// line and an end line carrying that run's own exit status, so the reader
// can judge every run by itself, and a run whose frame is missing (the
// process died, the log was cut) is never given a neighbour's output.

// runPrefix starts every frame line; nothing else a probe prints starts so.
const runPrefix = "rdmaprobe-run "

// WriteRunBegin prints the line that opens run k (1-based) of n.
func WriteRunBegin(w io.Writer, k, n int, name string) error {
	_, err := fmt.Fprintf(w, "%sbegin %d/%d %s\n", runPrefix, k, n, name)
	return err
}

// WriteRunEnd prints the line that closes run k of n with its exit status.
func WriteRunEnd(w io.Writer, k, n int, name string, exit int) error {
	_, err := fmt.Fprintf(w, "%send %d/%d %s exit=%d\n", runPrefix, k, n, name, exit)
	return err
}

// RunOutput is one run's part of a multi-run probe's output.
type RunOutput struct {
	Name string
	// Logs are the lines between the run's begin and end (or the end of
	// the output when it never ended); empty when it never began.
	Logs  string
	Began bool
	// Exit is the run's own exit status from its end line; nil when the
	// run did not end (the process died or the log was cut).
	Exit *int
}

// SplitRuns cuts a multi-run probe's output into the runs named, in order.
// Every name gets an entry. A frame line that names another run than the
// one expected at its place, a run framed twice, or lines that claim more
// runs than were asked are an error: the output cannot be attributed and
// must not be judged.
func SplitRuns(output string, names []string) ([]RunOutput, error) {
	out := make([]RunOutput, len(names))
	for i, n := range names {
		out[i].Name = n
	}
	cur := -1 // the run whose lines are being read; -1: outside any run
	var b strings.Builder
	flush := func() {
		if cur >= 0 {
			out[cur].Logs = b.String()
		}
		b.Reset()
	}
	for _, line := range strings.Split(output, "\n") {
		trimmed := strings.TrimSpace(line)
		if !strings.HasPrefix(trimmed, runPrefix) {
			if cur >= 0 {
				b.WriteString(line)
				b.WriteByte('\n')
			}
			continue
		}
		f := strings.Fields(strings.TrimPrefix(trimmed, runPrefix))
		if len(f) < 3 {
			return out, fmt.Errorf("unreadable run frame %q", trimmed)
		}
		k, n, err := parseKofN(f[1])
		if err != nil {
			return out, fmt.Errorf("run frame %q: %v", trimmed, err)
		}
		if n != len(names) {
			return out, fmt.Errorf("run frame %q: the probe ran %d runs, the suite asked for %d (%s)", trimmed, n, len(names), strings.Join(names, ", "))
		}
		if f[2] != names[k-1] {
			return out, fmt.Errorf("run frame %q: run %d is %q, the suite asked for %q there", trimmed, k, f[2], names[k-1])
		}
		switch f[0] {
		case "begin":
			if out[k-1].Began {
				return out, fmt.Errorf("run %d (%s) began twice", k, f[2])
			}
			flush()
			cur = k - 1
			out[cur].Began = true
		case "end":
			if cur != k-1 {
				return out, fmt.Errorf("run frame %q ends a run that is not the one running", trimmed)
			}
			if len(f) != 4 || !strings.HasPrefix(f[3], "exit=") {
				return out, fmt.Errorf("run frame %q has no exit status", trimmed)
			}
			code, err := strconv.Atoi(strings.TrimPrefix(f[3], "exit="))
			if err != nil {
				return out, fmt.Errorf("run frame %q: exit status: %v", trimmed, err)
			}
			out[cur].Exit = &code
			flush()
			cur = -1
		default:
			return out, fmt.Errorf("unreadable run frame %q", trimmed)
		}
	}
	flush()
	return out, nil
}

func parseKofN(s string) (k, n int, err error) {
	a, b, ok := strings.Cut(s, "/")
	if !ok {
		return 0, 0, fmt.Errorf("%q is not K/N", s)
	}
	if k, err = strconv.Atoi(a); err != nil {
		return 0, 0, fmt.Errorf("%q is not K/N", s)
	}
	if n, err = strconv.Atoi(b); err != nil {
		return 0, 0, fmt.Errorf("%q is not K/N", s)
	}
	if k < 1 || k > n {
		return 0, 0, fmt.Errorf("run %d of %d", k, n)
	}
	return k, n, nil
}
