package disrupt

import (
	"fmt"
	"strings"

	"github.com/rdmasuite/rdmasuite/workloads/probeout"
	"github.com/rdmasuite/rdmasuite/workloads/stall"
)

// Result is `rdmaprobe stall write|verify`'s result (workloads/stall).
type Result = stall.Result

// ParseResult reads the stall envelope out of a pod's log. A typed probe
// error is returned beside what the probe measured.
func ParseResult(logs string) (*Result, *probeout.Error, error) {
	var r Result
	perr, err := probeout.ParseError(logs, stall.ProbeName, &r)
	if err != nil {
		return nil, nil, err
	}
	return &r, perr, nil
}

// fsOf is the writer's file system (zero when it reported none).
func fsOf(r *Result) stall.FSInfo {
	if r == nil || r.FS == nil {
		return stall.FSInfo{}
	}
	return *r.FS
}

// fsKnown reports whether the probe said what its file system is.
func fsKnown(f stall.FSInfo) bool { return f.Type != "" || f.Magic != "" }

// fsNFS reports whether the kernel said NFS (statfs magic or mount type).
func fsNFS(f stall.FSInfo) bool {
	return f.MagicName == "nfs" || strings.EqualFold(f.Magic, "0x6969") || f.Type == "nfs" || f.Type == "nfs4"
}

// fsRDMA reports whether the mount's options name the RDMA transport.
func fsRDMA(f stall.FSInfo) bool {
	return f.RDMA || stall.HasRDMAProto(f.Options) || stall.HasRDMAProto(f.MountOptions)
}

// ownVerification is the writer's verification of its own file (nil when
// not run: the probe skips it while I/O is still hung).
func ownVerification(r *Result) *stall.Verification {
	if r.Verification != nil {
		return r.Verification
	}
	for i := range r.Verifications {
		if r.Verifications[i].WriterID == "" || r.Verifications[i].WriterID == r.WriterID {
			return &r.Verifications[i]
		}
	}
	return nil
}

// verifications are a verify run's per-writer verdicts.
func verifications(r *Result) []stall.Verification {
	if len(r.Verifications) == 0 && r.Verification != nil {
		return []stall.Verification{*r.Verification}
	}
	return r.Verifications
}

func badCount(v stall.Verification) int64 {
	return v.Lost + v.Torn + v.Reordered + v.Duplicate + v.Foreign
}

func verificationOK(v stall.Verification) bool {
	return v.OK && badCount(v) == 0 && v.Error == ""
}

// verificationText is a verification in one line: "N records ok" or what
// was wrong, first bad record named.
func verificationText(v stall.Verification) string {
	if verificationOK(v) {
		s := fmt.Sprintf("%d records ok", v.Checked)
		if v.UnacknowledgedTail > 0 {
			s += fmt.Sprintf(" (%d unacknowledged at the tail, not judged)", v.UnacknowledgedTail)
		}
		return s
	}
	var parts []string
	if v.Error != "" {
		parts = append(parts, "could not verify: "+v.Error)
	}
	if n := badCount(v); n > 0 {
		parts = append(parts, fmt.Sprintf("%d of %d records bad (lost %d, torn %d, reordered %d, duplicate %d, foreign %d)",
			n, v.Checked, v.Lost, v.Torn, v.Reordered, v.Duplicate, v.Foreign))
	}
	if b := v.FirstBad; b != nil {
		parts = append(parts, fmt.Sprintf("first bad record: slot %d (seq %d, offset %d) %s: %s", b.Slot, b.Seq, b.Offset, b.Problem, b.Detail))
	}
	if len(parts) == 0 {
		parts = append(parts, "not ok (the probe gave no detail)")
	}
	return strings.Join(parts, "; ")
}
