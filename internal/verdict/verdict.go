// Package verdict turns probe output into checks of the results model: pure
// functions of what the pods printed, the node facts and the SKU's
// thresholds, so every diagnosis is unit-tested on recorded output.
package verdict

import (
	"errors"
	"fmt"
	"strings"

	"github.com/rdmasuite/rdmasuite/reports"
	"github.com/rdmasuite/rdmasuite/thresholds"
	"github.com/rdmasuite/rdmasuite/workloads/mr"
	"github.com/rdmasuite/rdmasuite/workloads/probeout"
)

// Side is one pod of a pair (or the one pod of a single-node probe), as
// the suite observed it.
type Side struct {
	Node, Pod string
	Logs      string
	Exit      int32
	PodErr    error // the pod never ran or did not finish (scheduling, image, timeout)
	// WaitErr: the pod ran and printed, but did not end in time after its
	// peer finished (a bandwidth server). What it printed is still judged;
	// a check that would pass does not.
	WaitErr error
	Command string
}

// Memlock judges `rdmaprobe mr` in one pod: the rlimit (judged even with no
// device) and the registration (not-run without a device). Statuses read
// from the probe are validated, and they must agree with its exit code
// (0 pass, 3 check failed): anything else is an error, never a pass.
func Memlock(variant string, s Side, sku *thresholds.SKU, skuErr error) []reports.Check {
	base := func(id, title string) reports.Check {
		return reports.Check{ID: id, Title: title, Nodes: []string{s.Node}, Variant: variant,
			Evidence: []string{fmt.Sprintf("pod %s on %s: %s (exit %d)", s.Pod, s.Node, s.Command, s.Exit), lastLines(s.Logs, 4)}}
	}
	rl := base("memlock/rlimit", "pod memlock limit allows registering the required size")
	reg := base("memlock/registration", "memory regions of the required size register in a pod")
	both := func(st reports.Status, reason string) []reports.Check {
		for _, c := range []*reports.Check{&rl, &reg} {
			c.Status, c.Reason = st, reason
		}
		return []reports.Check{rl, reg}
	}
	if s.PodErr != nil {
		return both(reports.Error, fmt.Sprintf("pod %s on %s did not run: %v", s.Pod, s.Node, s.PodErr))
	}
	var r mr.Result
	perr, err := probeout.ParseError(s.Logs, "mr", &r)
	if err != nil {
		return both(reports.Error, fmt.Sprintf("pod %s on %s (exit %d) printed no mr result: %v", s.Pod, s.Node, s.Exit, err))
	}
	if perr != nil && perr.Kind != probeout.KindNoDevice {
		return both(reports.Error, fmt.Sprintf("mr probe on %s failed (%s): %s", s.Node, perr.Kind, perr.Message))
	}
	rlSt, err1 := reports.ParseStatus(r.RlimitStatus)
	regSt, err2 := reports.ParseStatus(r.RegStatus)
	if err := errors.Join(err1, err2); err != nil {
		return both(reports.Error, fmt.Sprintf("mr probe on %s printed an invalid status: %v", s.Node, err))
	}
	failed := rlSt == reports.Fail || regSt == reports.Fail
	switch {
	case failed && s.Exit != 3, !failed && s.Exit != 0:
		return both(reports.Error, fmt.Sprintf("mr probe on %s exited %d, which contradicts its statuses (rlimit %s, registration %s): "+
			"the probe did not finish cleanly", s.Node, s.Exit, rlSt, regSt))
	}
	var th reports.Threshold
	if skuErr == nil {
		b := sku.MinMemlock()
		th = reports.Threshold{Op: b.Op, Value: b.Value, Source: b.Source}
	} else {
		th = reports.Threshold{Op: ">=", Value: float64(r.RequiredBytes), Source: "--memlock-required"}
	}
	limit := float64(r.Memlock.Soft)
	if r.Memlock.Soft < 0 || r.IPCLock {
		limit = -1 // unlimited, or not enforced with IPC_LOCK
	}
	rl.Measured = []reports.Measurement{{Name: "memlock_soft", Node: s.Node, Value: limit, Unit: "bytes", Threshold: &th}}
	rl.Status = rlSt
	if rl.Status == reports.Fail {
		rl.Diagnosis, rl.Fix = r.Diagnosis, r.Fix
	}
	reg.Status = regSt
	switch reg.Status {
	case reports.NotRun:
		reg.Reason = r.NotRunWhy
		if reg.Reason == "" {
			reg.Reason = "the mr probe registered nothing and gave no reason"
		}
	case reports.Fail:
		reg.Diagnosis, reg.Fix = r.Diagnosis, r.Fix
		fallthrough
	default:
		reg.Measured = []reports.Measurement{{Name: "largest_mr", Node: s.Node, Value: float64(r.LargestOK), Unit: "bytes",
			Threshold: &reports.Threshold{Op: ">=", Value: float64(r.RequiredBytes), Source: th.Source}}}
	}
	return []reports.Check{rl, reg}
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	for i, l := range lines {
		if len(l) > 400 {
			lines[i] = l[:400] + "…"
		}
	}
	return strings.TrimSpace(strings.Join(lines, "\n"))
}
