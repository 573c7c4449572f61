package verdict

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/rdmasuite/rdmasuite/reports"
	"github.com/rdmasuite/rdmasuite/thresholds"
	"github.com/rdmasuite/rdmasuite/workloads/mr"
	"github.com/rdmasuite/rdmasuite/workloads/nccl"
	"github.com/rdmasuite/rdmasuite/workloads/ncclbench"
	"github.com/rdmasuite/rdmasuite/workloads/ncclrun"
	"github.com/rdmasuite/rdmasuite/workloads/probeout"
)

// Check ids of the nccl feature: nccl/<collective> per requested
// collective (nccl/all_reduce, ...) and nccl/transport.
const (
	NCCLPrefix      = "nccl/"
	NCCLTransportID = "nccl/transport"
)

// NCCLCheckIDs are the ids every world owes, in report order.
func NCCLCheckIDs(colls []nccl.Collective) []string {
	var ids []string
	for _, c := range colls {
		ids = append(ids, NCCLPrefix+string(c))
	}
	return append(ids, NCCLTransportID)
}

// NCCLRank is one rank of a world as the runner saw its pod (an
// internal/jobrun Rank, without the dependency).
type NCCLRank struct {
	Index     int
	Node, Pod string
	Phase     string // Succeeded, Failed, Running, Pending; "" when it never got a pod
	Exit      int32
	Logs      string
	State     string // why the pod is where it is, when it did not run to the end
}

// NCCLInput is one world's observation and what the run asked it to cover.
type NCCLInput struct {
	Variant  string
	Resource string // the RDMA resource the ranks requested
	Network  string // Multus network (hostdev): a missing device is then the network's
	// Nodes is the world, sorted; rank i may sit on any of them.
	Nodes       []string
	Collectives []nccl.Collective
	// Sizes is the requested sweep (min..max by the factor), bytes, in
	// order; each collective owes a row for each (as ncclbench.ShapeOf
	// rounds it), the largest is judged for all_reduce.
	Sizes   []int64
	Command string            // the probe's command line (the token redacted)
	Env     map[string]string // what the ranks were given (NCCL_ALGO, NCCL_DEBUG, ...)
	Ranks   []NCCLRank        // one per rank that had a pod, in index order
	// RunErr is what stopped the wait for the world (a rank never
	// started, the world ran past its timeout), nil when every rank ended.
	RunErr error
	// Floor is the all_reduce bus-bandwidth floor in GB/s; FloorErr says
	// why there is none (unknown SKU, no portsPerNode).
	Floor    thresholds.Bound
	FloorErr error
}

// Fixes named by the NCCL diagnoses.
const (
	FixNCCLSlow = "compare with bandwidth/write between the same nodes (a slow or down rail there is the cause); check nccl/transport " +
		"(sockets instead of RDMA, no GPUDirect), the GPU–NIC topology (nvidia-smi topo -m: the GPU should sit under the NIC's PCIe switch) " +
		"and NCCL_IB_HCA / NCCL_ALGO in the image"
	FixNCCLWrong = "NCCL delivered wrong data: look for GPU errors (Xid lines in dmesg, nvidia-smi -q -d ECC) and RDMA port errors " +
		"(symbol_error, port_rcv_errors) on the world's nodes, and rerun; with NCCL_NET_GDR_LEVEL=LOC the data path avoids GPUDirect RDMA, " +
		"which tells a GPU/NIC peer-to-peer problem from the fabric"
	FixNCCLAbort = "every rank needs the same GPU stack: one rdmaprobe image (one NCCL version) on every node, the NVIDIA driver " +
		"(GPU Operator) ready on each node and nvidia.com/gpu handed to the pod"
	FixNCCLIncomplete = "the probe ended without every requested size and without saying why: read rank 0's output in the evidence; " +
		"an rdmaprobe image older than the suite may not know every collective"
	FixNCCLRunFailed = "an NCCL call failed on the fabric: read the rank's error and NCCL's WARN lines in the evidence; nccl/transport " +
		"names a transport problem (no RDMA device, memlock, libibverbs) when there is one"
)

// ncclTransportFix is the fix for each cause nccl.Judge names.
func (in NCCLInput) ncclTransportFix(c nccl.Cause) string {
	noDevice := FixNoDevice
	if in.Network != "" {
		noDevice = FixNoNetdev
	}
	switch c {
	case nccl.CauseNoDevice, nccl.CauseDeviceOpen:
		return noDevice
	case nccl.CauseSocket:
		return "make the RDMA device reach the pod (" + in.Resource + ", IPC_LOCK) and check NCCL_NET / NCCL_IB_HCA in the image; " + noDevice
	case nccl.CauseNoVerbs:
		return "install rdma-core's libibverbs and the provider (libmlx5) in the rdmaprobe image"
	case nccl.CauseIBDisabled:
		return "remove NCCL_IB_DISABLE from the image's environment"
	case nccl.CauseMemlock:
		return mr.FixMemlock
	case nccl.CausePluginFailed:
		return "check the external net plugin in the image (NCCL_NET_PLUGIN, libnccl-net.so and its libraries), or remove it so NCCL uses its own IB transport"
	case nccl.CauseNotRDMA:
		return "NCCL chose a network plugin that is not RDMA: set NCCL_NET=IB or remove the plugin from the image"
	case nccl.CauseInitFailed:
		return "NCCL did not complete init: the WARN line in the evidence names the failing verbs or CUDA call"
	}
	return ""
}

// NCCL judges one world. It returns one check per requested collective
// (nccl/<collective>) and nccl/transport, all with the world's nodes:
//   - rank 0 printed no result: every check is an error naming what
//     stopped the world and every rank's state (the transport is still
//     judged from the logs when NCCL printed enough to tell);
//   - the probe aborted because the pods have no usable GPU stack
//     (no-gpu): every check is not-run with the probe's message;
//   - the ranks never joined (timeout): error; rank 0 called the world
//     off for another reason: the collectives fail with it;
//   - otherwise each collective passes only when every requested size
//     was measured in both variants, no data check found a wrong element,
//     and (all_reduce) the largest size's out-of-place busbw meets the
//     floor. nccl/transport passes only when NCCL's own log shows RDMA on
//     every rank (nccl.Judge, Expect{RDMA: true}); a log that cannot tell
//     is an error: nobody can vouch for the transport, and an error,
//     unlike a not-run, cannot be waved through with --allow-not-run.
//
// A rank that exited non-zero or did not end while rank 0's output reads
// clean turns every pass into an error.
func NCCL(in NCCLInput) []reports.Check {
	world := len(in.Nodes)
	var out ncclrun.Output
	var perr *probeout.Error
	var parseErr error
	rank0, has0 := in.rank(0)
	switch {
	case has0 && rank0.Phase == "Pending" && rank0.Logs == "":
		// Seen pending, then stopped (jobrun keeps the last state of a
		// rank the Job controller deleted): why it never ran.
		parseErr = fmt.Errorf("rank 0 never ran: %s", rank0.State)
	case has0:
		perr, parseErr = probeout.ParseError(rank0.Logs, ncclrun.ProbeName, &out)
	default:
		parseErr = fmt.Errorf("rank 0 never got a pod")
	}
	parsed := parseErr == nil
	ev := in.evidence(out, parsed)
	colls := make([]reports.Check, len(in.Collectives))
	for i, c := range in.Collectives {
		colls[i] = in.check(NCCLPrefix+string(c), fmt.Sprintf("NCCL %s across %d GPU nodes", c, world), ev, string(c))
	}
	tr := in.check(NCCLTransportID, fmt.Sprintf("NCCL used RDMA between %d GPU nodes", world), ev, "")
	tv, judged := in.judgeTransport(&tr)
	all := func(st reports.Status, msg, fix string) {
		for i := range colls {
			setOutcome(&colls[i], st, msg, fix)
		}
	}
	// The transport when the logs cannot tell it (an error): what stopped
	// the world comes first in the reason. A pass or fail read from the
	// logs stands whatever happened to the measurement.
	transportUnknown := func(why string) {
		if tr.Status != reports.Error {
			return
		}
		msg := tr.Reason
		switch {
		case why != "" && !judged:
			msg = why + "; NCCL printed no log line (it never ran)"
		case why != "":
			msg = why + "; " + tr.Reason
		}
		setOutcome(&tr, reports.Error, msg, "")
	}
	switch {
	case !parsed:
		where := "rank 0"
		switch {
		case has0 && rank0.ended():
			where = fmt.Sprintf("rank 0 (pod %s on %s, exit %d)", rank0.Pod, rank0.Node, rank0.Exit)
		case has0:
			// No container ended: an exit status would be made up.
			where = fmt.Sprintf("rank 0 (pod %s on %s, %s)", rank0.Pod, rank0.Node, rank0.phaseExit())
		}
		msg := fmt.Sprintf("%s printed no %s result: %v", where, ncclrun.ProbeName, parseErr)
		if in.RunErr != nil {
			msg += "; the world: " + in.RunErr.Error()
		} else {
			msg += "; ranks: " + in.states()
		}
		all(reports.Error, msg, "")
		transportUnknown(msg)
	case perr != nil && perr.Kind == probeout.KindNoGPU:
		// Nothing on the fabric was measured: not-run, with the probe's
		// reason, for every check of the world, the transport included.
		all(reports.NotRun, perr.Message, "")
		setOutcome(&tr, reports.NotRun, perr.Message, "")
	case perr != nil && perr.Kind == probeout.KindTimeout:
		msg := fmt.Sprintf("a rank did not report its result to rank 0 in time: %s", perr.Message)
		if out.Joined < max(out.World, world) {
			msg = fmt.Sprintf("only %d of %d ranks joined rank 0 within the probe's timeout, so NCCL never started: %s", out.Joined, max(out.World, world), perr.Message)
			if in.RunErr != nil {
				msg += "; the world: " + in.RunErr.Error()
			}
		}
		all(reports.Error, msg, "")
		transportUnknown(msg)
	case perr != nil && out.Abort != "":
		msg := "rank 0 called the world off before NCCL ran: " + out.Abort
		all(reports.Fail, msg, FixNCCLAbort)
		setOutcome(&tr, reports.NotRun, "NCCL never ran: "+msg, "")
	case perr != nil && perr.Kind != probeout.KindInternal:
		msg := fmt.Sprintf("the nccl probe failed (%s): %s", perr.Kind, perr.Message)
		all(reports.Error, msg, "")
		transportUnknown(msg)
	default:
		// A clean output, or one whose ranks failed after the rendezvous
		// (internal): what was measured is judged, what was not fails.
		var runErr, hint string
		if perr != nil {
			runErr = perr.Message
		}
		if tv.Status == nccl.Fail {
			hint = fmt.Sprintf("nccl/transport: %s (%s)", tv.Cause, tv.Diagnosis)
		}
		res, how, err := ncclResult(out)
		switch {
		case err != nil && perr != nil:
			all(reports.Fail, strings.TrimSuffix(fmt.Sprintf("the NCCL run failed and left no measurement (%v): %s; %s", err, runErr, hint), "; "), FixNCCLRunFailed)
		case err != nil:
			all(reports.Error, fmt.Sprintf("rank 0's nccl result holds no readable measurement: %v", err), "")
		case perr == nil && out.World != world:
			all(reports.Error, fmt.Sprintf("rank 0 reports a world of %d ranks, the run started %d", out.World, world), "")
		default:
			for i, c := range in.Collectives {
				in.judgeCollective(&colls[i], c, res, world, runErr, hint)
				if how != "" && colls[i].Status != reports.Pass {
					colls[i].Evidence = append(colls[i].Evidence, how)
				}
			}
		}
		transportUnknown("")
	}
	checks := append(colls, tr)
	// Exit codes and the world's end must agree with a clean output.
	if parsed && perr == nil {
		var why []string
		if in.RunErr != nil {
			why = append(why, "the world did not end cleanly: "+in.RunErr.Error())
		}
		for _, rk := range in.Ranks {
			if rk.Exit != 0 || (rk.Phase != "" && rk.Phase != "Succeeded") {
				why = append(why, fmt.Sprintf("rank %d (pod %s on %s) ended %s with exit %d", rk.Index, rk.Pod, rk.Node, rk.Phase, rk.Exit))
			}
		}
		if len(in.Ranks) < world {
			why = append(why, fmt.Sprintf("only %d of %d ranks had a pod", len(in.Ranks), world))
		}
		if len(why) > 0 {
			demotePasses(checks, strings.Join(why, "; ")+": rank 0's output reads clean, but a rank that did not end cleanly is never a pass (see the evidence)")
		}
	}
	return checks
}

func (in NCCLInput) rank(i int) (NCCLRank, bool) {
	for _, rk := range in.Ranks {
		if rk.Index == i {
			return rk, true
		}
	}
	return NCCLRank{}, false
}

// check is one of the world's checks; op is its collective ("" for the
// transport check). A world's failure is localisation evidence when it
// spans two nodes.
func (in NCCLInput) check(id, title string, ev []string, op string) reports.Check {
	return reports.Check{ID: id, Title: title + " (" + strings.Join(in.Nodes, ", ") + ")", Nodes: append([]string(nil), in.Nodes...),
		Variant: in.Variant, Evidence: append([]string(nil), ev...), Traits: &reports.Traits{Localize: true, Op: op}}
}

// ended says the rank's container ended: only then is Exit its status.
func (rk NCCLRank) ended() bool { return rk.Phase == "Succeeded" || rk.Phase == "Failed" }

// phaseExit is the rank's phase, with its exit status only when its
// container ended: a pending or running rank has none to give.
func (rk NCCLRank) phaseExit() string {
	if rk.ended() {
		return fmt.Sprintf("%s, exit %d", rk.Phase, rk.Exit)
	}
	return orNone(rk.Phase)
}

// states is a one-line account of every rank.
func (in NCCLInput) states() string {
	var parts []string
	for _, rk := range in.Ranks {
		s := fmt.Sprintf("rank %d (pod %s on %s): %s", rk.Index, rk.Pod, orUnscheduled(rk.Node), rk.phaseExit())
		if said := rankSaid(rk.Logs); said != "" {
			s += ", said " + said
		}
		if rk.State != "" {
			s += " — " + rk.State
		}
		parts = append(parts, s)
	}
	if len(in.Ranks) < len(in.Nodes) {
		parts = append(parts, fmt.Sprintf("%d of %d ranks never got a pod", len(in.Nodes)-len(in.Ranks), len(in.Nodes)))
	}
	return strings.Join(parts, "; ")
}

// rankSaid is the error a rank's own envelope reports ("(timeout): …"),
// "" when it printed none: a rank that exited non-zero says there why.
func rankSaid(logs string) string {
	var out ncclrun.Output
	perr, err := probeout.ParseError(logs, ncclrun.ProbeName, &out)
	if err != nil || perr == nil {
		return ""
	}
	return fmt.Sprintf("(%s): %s", perr.Kind, perr.Message)
}

func orUnscheduled(node string) string {
	if node == "" {
		return "no node"
	}
	return node
}

func orNone(s string) string {
	if s == "" {
		return "no phase"
	}
	return s
}

// evidence is what every check of the world shows: who joined, each rank
// (rank → pod → node, GPUs, CUDA driver and NCCL versions), the command,
// and the pods that did not end cleanly.
func (in NCCLInput) evidence(out ncclrun.Output, parsed bool) []string {
	world := len(in.Nodes)
	var ev []string
	if parsed {
		var who []string
		for _, f := range out.Ranks {
			who = append(who, rankFacts(f))
		}
		ev = append(ev, fmt.Sprintf("ranks joined %d/%d: %s", out.Joined, max(out.World, world), strings.Join(who, "; ")))
	} else {
		var who []string
		for _, rk := range in.Ranks {
			who = append(who, fmt.Sprintf("rank %d → pod %s → node %s", rk.Index, rk.Pod, orUnscheduled(rk.Node)))
		}
		ev = append(ev, fmt.Sprintf("ranks joined: unknown (rank 0 printed no result); %d/%d ranks had a pod: %s", len(in.Ranks), world, strings.Join(who, "; ")))
	}
	cmd := in.Command
	if len(in.Env) > 0 {
		keys := make([]string, 0, len(in.Env))
		for k := range in.Env {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var env []string
		for _, k := range keys {
			env = append(env, k+"="+in.Env[k])
		}
		cmd = strings.Join(env, " ") + " " + cmd
	}
	if cmd != "" {
		ev = append(ev, "command: "+cmd)
	}
	if in.RunErr != nil {
		ev = append(ev, "world: "+in.RunErr.Error())
	}
	for _, rk := range in.Ranks {
		if rk.Exit != 0 || rk.Phase != "Succeeded" {
			s := fmt.Sprintf("rank %d (pod %s on %s): %s", rk.Index, rk.Pod, orUnscheduled(rk.Node), rk.phaseExit())
			if rk.State != "" {
				s += " — " + rk.State
			}
			ev = append(ev, s)
		}
	}
	if !parsed {
		if rk, ok := in.rank(0); ok {
			if t := lastLines(rk.Logs, 8); t != "" {
				ev = append(ev, "rank 0 log tail:\n  "+strings.ReplaceAll(t, "\n", "\n  "))
			}
		}
	}
	if out.Abort != "" {
		ev = append(ev, "abort: "+out.Abort)
	}
	for _, r := range sortedKeys(out.Errors) {
		ev = append(ev, fmt.Sprintf("rank %d failed: %s", r, out.Errors[r]))
	}
	return ev
}

func sortedKeys(m map[int]string) []int {
	out := make([]int, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Ints(out)
	return out
}

// rankFacts is "rank 1 → pod p → node n: GPU 0 NVIDIA H100 (0000:1b:00.0);
// CUDA driver 12.4, NCCL 2.21.5", or why the rank was not ready.
func rankFacts(f ncclrun.Facts) string {
	s := fmt.Sprintf("rank %d → pod %s → node %s", f.Rank, orDash(f.Pod), orDash(f.Node))
	if f.NotReady != "" && len(f.GPUs) == 0 && f.CUDADriver == "" && f.NCCL == "" {
		return s + fmt.Sprintf(": not ready (%s): %s", f.NotReadyKind, f.NotReady)
	}
	var gpus []string
	for _, g := range f.GPUs {
		gpus = append(gpus, fmt.Sprintf("GPU %d %s (%s)", g.Ordinal, g.Name, g.PCIBusID))
	}
	if len(gpus) == 0 {
		gpus = []string{"no GPU"}
	}
	s += ": " + strings.Join(gpus, ", ") + fmt.Sprintf("; CUDA driver %s, NCCL %s", orDash(f.CUDADriver), orDash(f.NCCL))
	if f.NotReady != "" {
		s += fmt.Sprintf("; not ready (%s): %s", f.NotReadyKind, f.NotReady)
	}
	return s
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// ncclResult is the world's measurement: rank 0's combined result, or,
// when the ranks failed before combining, what every rank reported
// merged here (how says so).
func ncclResult(out ncclrun.Output) (res ncclbench.Result, how string, err error) {
	if raw := bytes.TrimSpace(out.Result); len(raw) > 0 && !bytes.Equal(raw, []byte("null")) {
		if err := json.Unmarshal(raw, &res); err != nil {
			return res, "", fmt.Errorf("decode the combined result: %w", err)
		}
		return res, "", nil
	}
	var ranks []ncclbench.RankResult
	for _, rep := range out.Reports {
		if raw := bytes.TrimSpace(rep.Result); len(raw) > 0 && !bytes.Equal(raw, []byte("null")) {
			var rr ncclbench.RankResult
			if err := json.Unmarshal(raw, &rr); err != nil {
				return res, "", fmt.Errorf("decode rank %d's result: %w", rep.Rank, err)
			}
			ranks = append(ranks, rr)
		}
	}
	if len(ranks) == 0 {
		return res, "", fmt.Errorf("no rank reported a measurement")
	}
	res, err = ncclbench.Combine(ranks)
	return res, "the ranks' own results, merged by the suite (rank 0 could not combine them)", err
}

// expectedRow is one requested size of a collective: the sweep value and
// the size column nccl-tests prints for it on this world.
type expectedRow struct {
	req, size int64
}

// judgeCollective fills one collective's check from the world's result.
// runErr is the probe's error when a rank failed, hint the transport's
// failure: the likely reason a collective is slow or incomplete.
func (in NCCLInput) judgeCollective(c *reports.Check, coll nccl.Collective, res ncclbench.Result, world int, runErr, hint string) {
	withRunErr := func(msg string) string {
		if runErr != "" {
			msg += " (the run: " + runErr + ")"
		}
		if hint != "" {
			msg += "; " + hint
		}
		return msg
	}
	if len(in.Sizes) == 0 {
		setOutcome(c, reports.Error, "no message size was requested: nothing to measure", "")
		return
	}
	cr, ok := res.Collective(coll)
	if !ok {
		setOutcome(c, reports.Fail, withRunErr(fmt.Sprintf("NCCL %s was requested but the result has no %s: nothing was measured for it", coll, coll)), FixNCCLRunFailed)
		return
	}
	var table bytes.Buffer
	if ncclbench.Render(&table, res, coll) == nil {
		c.Evidence = append(c.Evidence, strings.TrimRight(table.String(), "\n"))
	}
	var exp []expectedRow
	for _, s := range in.Sizes {
		sh, err := ncclbench.ShapeOf(coll, s, world)
		if err != nil {
			setOutcome(c, reports.Error, err.Error(), "")
			return
		}
		exp = append(exp, expectedRow{req: s, size: sh.Size})
	}
	// Rows come in sweep order; one may be missing anywhere (a rank
	// stopped), so each requested size takes the next row of its size.
	rows := map[int64]ncclbench.Row{}
	next := 0
	for _, e := range exp {
		for j := next; j < len(cr.Rows); j++ {
			if cr.Rows[j].Size == e.size {
				rows[e.req], next = cr.Rows[j], j+1
				break
			}
		}
	}
	largest := slices.Max(in.Sizes)
	checkedInPlace := coll != nccl.AllToAll && coll != nccl.SendRecv
	var missing, rowErrs, wrong, unchecked []string
	for _, e := range exp {
		name := SizeName(int(e.req))
		row, ok := rows[e.req]
		switch {
		case !ok:
			missing = append(missing, name)
			continue
		case row.Error != "":
			rowErrs = append(rowErrs, name+": "+row.Error)
		}
		oop, ip := row.OutOfPlace, row.InPlace
		if oop == nil || ip == nil {
			var which []string
			if oop == nil {
				which = append(which, "out-of-place")
			}
			if ip == nil {
				which = append(which, "in-place")
			}
			missing = append(missing, name+" ("+strings.Join(which, ", ")+")")
		}
		var nWrong int64
		for _, h := range []struct {
			h       *ncclbench.Half
			what    string
			checked bool
		}{{oop, "out-of-place", true}, {ip, "in-place", checkedInPlace}} {
			switch {
			case h.h == nil:
			case h.checked && h.h.NA:
				unchecked = append(unchecked, name+" "+h.what)
			case !h.h.NA:
				nWrong += h.h.Wrong
			}
		}
		if nWrong > 0 {
			wrong = append(wrong, fmt.Sprintf("%s: %d", name, nWrong))
		}
		if oop != nil && e.req != largest && finite(oop.BusBW) {
			c.Measured = append(c.Measured, reports.Measurement{Name: "busbw " + name, Value: oop.BusBW, Unit: "GB/s"})
		}
	}
	// The largest size: judged against the floor for all_reduce, recorded
	// for the others.
	var judged *float64
	if row, ok := rows[largest]; ok && row.OutOfPlace != nil {
		v := row.OutOfPlace.BusBW
		judged = &v
	}
	largestName := "busbw " + SizeName(int(largest))
	var floorMsg string
	floorSt := reports.Pass
	if coll == nccl.AllReduce {
		if in.FloorErr != nil {
			floorSt, floorMsg = reports.Error, in.FloorErr.Error()
			if errors.Is(in.FloorErr, thresholds.ErrNotSet) { // a SKU that does not judge NCCL
				floorSt = reports.NotRun
				if judged != nil && finite(*judged) {
					c.Measured = append(c.Measured, reports.Measurement{Name: largestName, Value: *judged, Unit: "GB/s"})
				}
			}
		} else {
			m, st, _ := reports.Judge(largestName, "GB/s", "", "", judged,
				reports.Threshold{Op: in.Floor.Op, Value: in.Floor.Value, Source: in.Floor.Source})
			if judged != nil {
				c.Measured = append(c.Measured, m)
			}
			if st == reports.Fail && judged != nil {
				floorSt, floorMsg = reports.Fail, fmt.Sprintf("all_reduce bus bandwidth %s at %s (out-of-place), floor %s",
					fmtGBs(*judged), SizeName(int(largest)), fmtGBs(in.Floor.Value)+" ("+in.Floor.Source+")")
			}
		}
	} else if judged != nil && finite(*judged) {
		c.Measured = append(c.Measured, reports.Measurement{Name: largestName, Value: *judged, Unit: "GB/s"})
	}
	var fails []string
	if len(missing) > 0 {
		fails = append(fails, fmt.Sprintf("requested size(s) not measured: %s", strings.Join(missing, ", ")))
	}
	if len(rowErrs) > 0 {
		fails = append(fails, "failed at "+strings.Join(rowErrs, "; "))
	}
	if len(cr.Errors) > 0 && (len(missing) > 0 || len(rowErrs) > 0) {
		fails = append(fails, strings.Join(cr.Errors, "; "))
	}
	if len(wrong) > 0 || cr.OutOfBounds > 0 {
		fails = append(fails, fmt.Sprintf("#wrong > 0: the data check found wrong elements (%s; out of bounds values: %d)", strings.Join(wrong, ", "), cr.OutOfBounds))
	}
	switch {
	case len(fails) > 0:
		fix := FixNCCLRunFailed
		switch {
		case len(wrong) > 0 && len(missing) == 0 && len(rowErrs) == 0:
			fix = FixNCCLWrong
		case runErr == "" && len(rowErrs) == 0 && len(cr.Errors) == 0:
			fix = FixNCCLIncomplete
		}
		msg := strings.Join(fails, "; ")
		if floorSt == reports.Fail {
			msg += "; " + floorMsg
		}
		if len(missing) > 0 || len(rowErrs) > 0 {
			msg = withRunErr(msg)
		}
		setOutcome(c, reports.Fail, fmt.Sprintf("NCCL %s on %s: %s", coll, strings.Join(in.Nodes, ", "), msg), fix)
	case len(unchecked) > 0:
		setOutcome(c, reports.Error, fmt.Sprintf("the data of %s was not checked (#wrong N/A): the probe ran without --check, so a pass cannot be vouched for", strings.Join(unchecked, ", ")), "")
	case floorSt == reports.Error:
		setOutcome(c, reports.Error, floorMsg, "")
	case floorSt == reports.NotRun:
		setOutcome(c, reports.NotRun, "measured, not judged: "+floorMsg, "")
	case floorSt == reports.Fail:
		if hint != "" {
			floorMsg += "; likely why: " + hint
		}
		setOutcome(c, reports.Fail, fmt.Sprintf("NCCL %s on %s: %s", coll, strings.Join(in.Nodes, ", "), floorMsg), FixNCCLSlow)
	default:
		c.Status = reports.Pass
	}
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

func fmtGBs(v float64) string { return fmt.Sprintf("%.4g GB/s", v) }

// judgeTransport fills nccl/transport from every rank's log (NCCL prints
// its INFO lines to stdout, so each rank pod's log holds its own), judged
// as one job's log, as nccl.Judge reads an mpirun output. judged is false
// when no log held an NCCL line (NCCL never ran or printed nothing).
func (in NCCLInput) judgeTransport(c *reports.Check) (nccl.Verdict, bool) {
	var all strings.Builder
	for _, rk := range in.Ranks {
		all.WriteString(rk.Logs)
		all.WriteString("\n")
	}
	facts, err := nccl.ParseNCCLLog(strings.NewReader(all.String()))
	if err != nil {
		setOutcome(c, reports.Error, fmt.Sprintf("reading the ranks' NCCL logs: %v", err), "")
		return nccl.Verdict{}, false
	}
	v := nccl.Judge(facts, nccl.Expect{RDMA: true})
	c.Evidence = append(c.Evidence, v.Evidence...)
	switch v.Status {
	case nccl.Pass:
		c.Status = reports.Pass
		c.Evidence = append(c.Evidence, "NCCL: "+v.Diagnosis)
	case nccl.Fail:
		msg := fmt.Sprintf("NCCL did not move data by RDMA between %s (%s): %s", strings.Join(in.Nodes, ", "), v.Cause, v.Diagnosis)
		// Which ranks: each rank's own log judged alone.
		var who []string
		for _, rk := range in.Ranks {
			f, err := nccl.ParseNCCLLog(strings.NewReader(rk.Logs))
			if err != nil {
				continue
			}
			if rv := nccl.Judge(f, nccl.Expect{RDMA: true}); rv.Status == nccl.Fail {
				who = append(who, fmt.Sprintf("rank %d on %s (%s)", rk.Index, rk.Node, rv.Cause))
			}
		}
		if len(who) > 0 {
			msg += "; ranks: " + strings.Join(who, ", ")
		}
		setOutcome(c, reports.Fail, msg, in.ncclTransportFix(v.Cause))
	default:
		setOutcome(c, reports.Error, fmt.Sprintf("the NCCL log cannot tell whether RDMA was used (%s): %s", v.Cause, v.Diagnosis), "")
	}
	return v, facts.Lines > 0
}
