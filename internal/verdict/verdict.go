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
	"github.com/rdmasuite/rdmasuite/workloads/podenv"
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

// NotAttempted is a side's PodErr for a run the runner never started
// because its pod or node was lost before (deleted, evicted, drained,
// NotReady): nothing was measured there and nothing is blamed, so its
// checks are not run, with the reason. A run cut in its middle is a
// plain PodErr: an error.
type NotAttempted struct{ Why string }

func (e *NotAttempted) Error() string { return e.Why }

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
	// The bar: the SKU's floor, or what the probe was asked for when that
	// is stricter (--memlock-required); the probe's own statuses are
	// evidence, the runner judges its figures against the bar itself.
	th := reports.Threshold{Op: ">=", Value: float64(r.RequiredBytes), Source: "--memlock-required"}
	if skuErr == nil {
		if b := sku.MinMemlock(); b.Value >= th.Value {
			th = reports.Threshold{Op: b.Op, Value: b.Value, Source: b.Source}
		}
	}
	if r.Memlock.Soft < 0 && r.Memlock.Soft != podenv.Unlimited {
		rl.Status, rl.Reason = reports.Error, fmt.Sprintf("mr probe on %s printed memlock soft limit %d, which is not a limit (only %d means unlimited): the probe's output is broken", s.Node, r.Memlock.Soft, podenv.Unlimited)
	} else {
		limit := float64(r.Memlock.Soft)
		if r.Memlock.Soft == podenv.Unlimited || r.IPCLock {
			limit = reports.Unlimited // unlimited, or not enforced with IPC_LOCK
		}
		rl.Measured = []reports.Measurement{{Name: "memlock_soft", Node: s.Node, Value: limit, Unit: "bytes", Threshold: &th}}
		rl.Status = rejudge(&rl, rlSt, limit == reports.Unlimited || limit >= th.Value,
			fmt.Sprintf("memlock_soft = %s is below the SKU's floor of %s and the pod lacks IPC_LOCK", bytesText(limit), bytesText(th.Value)), r, s.Node)
	}
	reg.Status = regSt
	switch reg.Status {
	case reports.NotRun:
		reg.Reason = r.NotRunWhy
		if reg.Reason == "" {
			reg.Reason = "the mr probe registered nothing and gave no reason"
		}
	default:
		reg.Measured = []reports.Measurement{{Name: "largest_mr", Node: s.Node, Value: float64(r.LargestOK), Unit: "bytes", Threshold: &th}}
		reg.Status = rejudge(&reg, regSt, float64(r.LargestOK) >= th.Value,
			fmt.Sprintf("largest_mr = %s is below the SKU's floor of %s", bytesText(float64(r.LargestOK)), bytesText(th.Value)), r, s.Node)
	}
	return []reports.Check{rl, reg}
}

// rejudge sets c's verdict from the runner's own judgment (met) of the
// probe's figures, with the probe's status (probe) as evidence: a probe
// pass the figures do not bear out fails, saying so; a probe fail that
// the figures contradict is an error, never a pass.
func rejudge(c *reports.Check, probe reports.Status, met bool, below string, r mr.Result, node string) reports.Status {
	switch {
	case !met:
		c.Diagnosis, c.Fix = below, mr.FixMemlock
		if probe == reports.Fail && r.Diagnosis != "" {
			c.Diagnosis, c.Fix = r.Diagnosis, r.Fix
		} else if probe != reports.Fail {
			c.Diagnosis += fmt.Sprintf(" (the probe reported %s: it was asked for %s)", probe, bytesText(float64(r.RequiredBytes)))
		}
		return reports.Fail
	case probe == reports.Fail:
		c.Reason = fmt.Sprintf("mr probe on %s reported fail, but its own figures meet the bar (%s): the probe's output contradicts itself", node, r.Diagnosis)
		return reports.Error
	}
	return reports.Pass
}

// bytesText is a byte count as KiB/MiB/GiB, or "unlimited".
func bytesText(v float64) string {
	switch {
	case v == reports.Unlimited:
		return "unlimited"
	case v >= 1<<30 && int64(v)%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", int64(v)>>30)
	case v >= 1<<20 && int64(v)%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", int64(v)>>20)
	case v >= 1<<10 && int64(v)%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", int64(v)>>10)
	}
	return fmt.Sprintf("%.0f bytes", v)
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
