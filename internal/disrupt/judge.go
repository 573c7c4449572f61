package disrupt

import (
	"fmt"
	"path"
	"strings"
	"time"

	"github.com/rdmasuite/rdmasuite/reports"
	"github.com/rdmasuite/rdmasuite/workloads/stall"
)

// Round is everything one target's disruption left: the pure input of
// Judge.
type Round struct {
	Target, Peer       string
	Volume             Volume
	Driver             Driver
	Writer, PeerWriter Writer
	Cross              Verify
	// Max is the SKU's maxNFSStallSec as a ceiling.
	Max *reports.Threshold
	// SubPath is the round's directory on the volume (the files stay).
	SubPath string
}

// ClockNote says which clock each time in the evidence comes from.
const ClockNote = "clocks: T is the runner's clock when it deleted the MOFED pod; Ready times are the API server's (whole seconds); " +
	"writer times (.driver-ready, stalls) are each node's own clock, placed against T as if the clocks agreed — an NTP offset shifts them"

type finding struct{ diag, fix string }

// Judge turns one round into its two checks. The target check passes
// only when the driver came back Ready within --driver-timeout, the
// writer's and the cross-node verification found every acknowledged
// record, the writer saw no I/O error, its longest gap is within the
// SKU's maxNFSStallSec and not still open, and its file system is NFS
// (unless forced). Missing evidence (no envelope, no verification) is an
// error, never a pass; a failure always wins over it.
func Judge(r Round) []reports.Check {
	t, p := newChecks(r.Target, r.Peer)
	t = judgeTarget(r, t)
	p = judgePeer(r, p)
	return []reports.Check{t, p}
}

func judgeTarget(r Round, c reports.Check) reports.Check {
	var fails []finding
	var errs []string
	d := r.Driver
	switch {
	case d.Back:
	case d.Interrupted:
		errs = append(errs, fmt.Sprintf("the run stopped before a new MOFED pod was Ready on %s: the driver's state is unknown — check it", r.Target))
	default:
		state := "no detail"
		if len(d.State) > 0 {
			state = firstLine(d.State[0])
		}
		f := finding{diag: fmt.Sprintf("the MOFED driver on %s did not come back Ready within %s after its pod %s was deleted: %s", r.Target, d.waitLimit(), d.Old.Name, state),
			fix: fmt.Sprintf("restore the driver on %s before anything else (the evidence has the new pod's state, events and log); no further node was disrupted", r.Target)}
		if d.StorageModules {
			f.fix = fmt.Sprintf("the new driver container refuses to reload while storage modules (rpcrdma, nvme-rdma, …) are loaded: set UNLOAD_STORAGE_MODULES=true in the NicClusterPolicy's ofedDriver env, "+
				"or unmount NFS-over-RDMA and unload rpcrdma on %s, then delete the MOFED pod again; until then %s has no RDMA driver", r.Target, r.Target)
		}
		fails = append(fails, f)
	}
	res := r.Writer.Result
	if res == nil {
		errs = append(errs, fmt.Sprintf("the writer on %s left no result to judge, so the stall and the data were not measured: %s", r.Target, r.Writer.Problem))
	} else {
		fails, errs = judgeWriter(r, r.Writer, r.Target, fails, errs)
		fails, errs = judgeCross(r, fails, errs)
	}

	c.Evidence = append(c.Evidence, timeline(r, r.Writer))
	c.Timeline = spans(r, r.Writer)
	c.Evidence = append(c.Evidence, driverLines(r)...)
	c.Evidence = append(c.Evidence, writerLines(r, r.Writer)...)
	c.Evidence = append(c.Evidence, crossLines(r)...)
	c.Evidence = append(c.Evidence, r.Volume.Describe(), "transport: "+transport(r, res), ClockNote)
	if r.SubPath != "" {
		c.Evidence = append(c.Evidence, filesLine(r))
	}
	if res != nil {
		c.Measured = writerMeasures(r, r.Writer)
		if d.Back {
			c.Measured = append(c.Measured, reports.Measurement{Name: "driver_ready_after", Node: r.Target, Value: round1(readyAfter(d)), Unit: "s"})
		}
	}
	var notes []string
	if res != nil && noStallNote(r, res) {
		notes = append(notes, "no stall observed: the mount did not use the restarted device? (.driver-ready went absent, yet no write waited longer than the writer's stall threshold)")
	}
	return conclude(c, fails, errs, notes)
}

func judgePeer(r Round, c reports.Check) reports.Check {
	var fails []finding
	var errs []string
	res := r.PeerWriter.Result
	if res == nil {
		errs = append(errs, fmt.Sprintf("the peer writer on %s left no result to judge: %s", r.Peer, r.PeerWriter.Problem))
	} else {
		fails, errs = judgeWriter(r, r.PeerWriter, r.Peer, fails, errs)
	}
	c.Evidence = append(c.Evidence, timeline(r, r.PeerWriter))
	c.Timeline = spans(r, r.PeerWriter)
	if !r.Driver.DeletedAt.IsZero() {
		c.Evidence = append(c.Evidence, fmt.Sprintf("the MOFED driver restarted on %s, not on %s: a stall here is the shared volume's or the fabric's, not this node's driver", r.Target, r.Peer))
	}
	c.Evidence = append(c.Evidence, writerLines(r, r.PeerWriter)...)
	c.Evidence = append(c.Evidence, r.Volume.Describe(), "transport: "+transport(r, res), ClockNote)
	if res != nil {
		c.Measured = writerMeasures(r, r.PeerWriter)
	}
	return conclude(c, fails, errs, nil)
}

// conclude sets the status: the first failure (others after it), else the
// errors, else pass (then passNotes lead the evidence).
func conclude(c reports.Check, fails []finding, errs []string, passNotes []string) reports.Check {
	switch {
	case len(fails) > 0:
		c.Status, c.Diagnosis, c.Fix = reports.Fail, fails[0].diag, fails[0].fix
		if len(fails) > 1 {
			var more []string
			for _, f := range fails[1:] {
				more = append(more, f.diag)
			}
			c.Diagnosis += "; also: " + strings.Join(more, "; ")
		}
		if len(errs) > 0 {
			c.Evidence = append(c.Evidence, "also: "+strings.Join(errs, "; "))
		}
	case len(errs) > 0:
		c.Status, c.Reason = reports.Error, strings.Join(errs, "; ")
	default:
		c.Status = reports.Pass
		c.Evidence = append(passNotes, c.Evidence...)
	}
	return c
}

// judgeWriter judges one writer's own result: data, I/O errors, an open
// stall, the file system, the longest gap against the SKU's limit.
func judgeWriter(r Round, w Writer, node string, fails []finding, errs []string) ([]finding, []string) {
	res := w.Result
	if own := ownVerification(res); own == nil {
		errs = append(errs, fmt.Sprintf("the writer on %s printed no verification of its file", node))
	} else if !verificationOK(*own) {
		fails = append(fails, finding{diag: fmt.Sprintf("acknowledged records written on %s did not survive: %s", node, verificationText(*own)),
			fix: fmt.Sprintf("the NFS client lost or damaged writes it had acknowledged: check that the mount is hard (not soft), dmesg on %s (xprtrdma/rpcrdma, nfs), and the NFS server's log", node)})
	}
	if w.ProbeErr != "" {
		errs = append(errs, fmt.Sprintf("the writer on %s reported an error: %s", node, w.ProbeErr))
	}
	if n := ioErrors(res); n > 0 {
		first := ""
		if len(res.IOErrors) > 0 {
			e := res.IOErrors[0]
			first = fmt.Sprintf(" (first at %s, record %d, %s: %s)", rel(r, e.At), e.Seq, e.Op, oneLine(e.Error, 200))
		}
		fails = append(fails, finding{diag: fmt.Sprintf("the writer on %s got %d I/O errors%s: applications on this volume saw failed writes", node, n, first),
			fix: ioErrorFix(fsOf(res), node)})
	}
	if g := res.LongestGap; g != nil && (g.Ongoing || res.StallOngoing) {
		fails = append(fails, finding{diag: fmt.Sprintf("NFS I/O on %s was still stalled when the writer stopped: record %d in flight since %s (%.1f s, writer clock)", node, g.InFlightSeq, rel(r, g.Start), g.Ms/1000),
			fix: fmt.Sprintf("the mount did not recover after the driver was back: check dmesg on %s (xprtrdma/rpcrdma reconnects), the NFS server, and whether the mount needs a remount", node)})
	}
	if fs := fsOf(res); !fsKnown(fs) && !r.Volume.Forced {
		errs = append(errs, fmt.Sprintf("the writer on %s did not report its file system, so NFS could not be confirmed", node))
	} else if !fsNFS(fs) && !r.Volume.Forced {
		fails = append(fails, finding{diag: fmt.Sprintf("the writer on %s wrote to %s (%s), not NFS, although PV %s is NFS", node, orUnknown(fs.Type), orUnknown(fs.Source), r.Volume.PV),
			fix: "check what the pod mounted (kubectl describe pod, the node's mount table); or run with --stall-force"})
	}
	if r.Max == nil {
		errs = append(errs, "no stall limit to judge against (thresholds)")
		return fails, errs
	}
	if gap := gapSec(res); gap > r.Max.Value {
		g := res.LongestGap
		fix := "drain or pause NFS-over-RDMA clients on a node before its MOFED driver restarts or upgrades (the Network Operator's upgrade policy can drain), " +
			"and let the driver reload without waiting on rpcrdma (UNLOAD_STORAGE_MODULES=true); the mount's timeo/retrans bound how long the client waits before it retries"
		if !transportRDMA(r, res) {
			fix = "the mount is NFS over TCP, which a MOFED restart should not stall: check whether the interface carrying NFS is on the restarted NIC (its netdev goes down with the driver)"
		}
		if node != r.Target {
			fix = fmt.Sprintf("%s's driver was not restarted: the stall came from the shared NFS server or the fabric path it shares with %s; check the server's RDMA/NFS logs", node, r.Target)
		}
		fails = append(fails, finding{diag: fmt.Sprintf("NFS I/O on %s stalled %.1f s (%s..%s, writer clock) while the MOFED driver on %s restarted, over the limit of %g s",
			node, gap, rel(r, g.Start), rel(r, g.End), r.Target, r.Max.Value), fix: fix})
	}
	return fails, errs
}

// judgeCross judges the cross-node verification of both writers' files.
func judgeCross(r Round, fails []finding, errs []string) ([]finding, []string) {
	v := r.Cross
	if v.Result == nil {
		return fails, append(errs, fmt.Sprintf("the cross-node verification on %s did not run: %s", v.Node, v.Problem))
	}
	vs := verifications(v.Result)
	if len(vs) < 2 {
		errs = append(errs, fmt.Sprintf("the cross-node verification on %s reported %d of 2 files", v.Node, len(vs)))
	}
	for _, x := range vs {
		if !verificationOK(x) {
			fails = append(fails, finding{diag: fmt.Sprintf("read back on %s, %s's file is not intact: %s", v.Node, orUnknown(x.WriterID), verificationText(x)),
				fix: "the writes acknowledged on one node are not what another node reads: check the NFS server's export (sync, not async) and its log"})
		}
	}
	if v.Exit == 3 && len(fails) == 0 {
		fails = append(fails, finding{diag: fmt.Sprintf("the cross-node verification on %s exited 3 (a file failed) but listed no bad file", v.Node),
			fix: "read the verify pod's output"})
	}
	return fails, errs
}

// ioErrorFix names the remedy for failed writes by what the mount is: a
// soft mount fails writes by design once timeo × retrans run out; a hard
// mount retries timeouts for ever, so an error there is one the NFS client
// does not retry, which a kernel can return (EINVAL from fsync, seen on
// Soft-RoCE) when the device is removed under an in-flight write.
func ioErrorFix(fs stall.FSInfo, node string) string {
	switch mountRetry(fs) {
	case "soft":
		return "a soft NFS mount returns EIO once timeo × retrans run out: mount hard (the default) so writers wait for the transport instead of failing"
	case "hard":
		return fmt.Sprintf("the mount is hard, so these are errors the NFS client does not retry, not timeouts; over RDMA the likely source is the transport failing writes in flight "+
			"as the device went away (a kernel can fail an fsync in flight with EINVAL then): dmesg on %s (xprtrdma/rpcrdma, nfs) around the first error tells. Applications such as databases "+
			"treat a failed fsync as fatal: stop or drain the NFS-over-RDMA writers on a node before its MOFED driver restarts (the Network Operator's upgrade policy can drain)", node)
	}
	return fmt.Sprintf("the writer did not report the mount's options: if the mount is soft, mount hard so writers wait for the transport; if it is hard, the RPC-over-RDMA transport failed writes in flight "+
		"(check dmesg on %s for xprtrdma/rpcrdma): drain NFS-over-RDMA writers before a MOFED driver restart", node)
}

// mountRetry is "soft", "hard" or "" (unknown) from the kernel's mount
// options, else the PV's; NFS mounts are hard unless told soft or softerr.
func mountRetry(fs stall.FSInfo) string {
	opts := fs.Options
	if opts == "" {
		opts = fs.MountOptions
	}
	if opts == "" {
		return ""
	}
	retry := "hard"
	for _, o := range strings.Split(opts, ",") {
		switch strings.TrimSpace(o) {
		case "soft", "softerr":
			retry = "soft"
		case "hard":
			retry = "hard"
		}
	}
	return retry
}

func ioErrors(res *Result) int64 { return int64(max(res.IOErrorCount, len(res.IOErrors))) }

func gapSec(res *Result) float64 {
	if res.LongestGap == nil {
		return 0
	}
	return res.LongestGap.Ms / 1000
}

func transportRDMA(r Round, res *Result) bool {
	if fs := fsOf(res); fs.Options != "" || fs.MountOptions != "" {
		return fsRDMA(fs)
	}
	return r.Volume.RDMA
}

func transport(r Round, res *Result) string {
	s := r.Volume.Transport()
	fs := fsOf(res)
	if fs.Options == "" && fs.MountOptions == "" {
		return s
	}
	if got := fsRDMA(fs); got != r.Volume.RDMA {
		s += fmt.Sprintf("; but the writer's mount says otherwise: %s (%s)", fs.Type, fs.Options)
	}
	return s
}

// noStallNote: an RDMA mount, the readiness file went absent (the driver
// really restarted under the writer), yet no stall.
func noStallNote(r Round, res *Result) bool {
	if !transportRDMA(r, res) || len(res.Stalls) > 0 {
		return false
	}
	for _, iv := range absences(res) {
		if !iv.start.IsZero() {
			return true
		}
	}
	return false
}

func writerMeasures(r Round, w Writer) []reports.Measurement {
	res := w.Result
	ms := []reports.Measurement{{Name: "longest_gap", Node: w.Node, Value: round3(gapSec(res)), Unit: "s", Threshold: r.Max}}
	if own := ownVerification(res); own != nil {
		ms = append(ms, reports.Measurement{Name: "records_verified", Node: w.Node, Value: float64(own.Checked), Unit: "records"})
	}
	return append(ms, reports.Measurement{Name: "io_errors", Node: w.Node, Value: float64(ioErrors(res)), Unit: "errors"})
}

// timeline is the one-line story of a round as one writer saw it.
func timeline(r Round, w Writer) string {
	d := r.Driver
	if d.DeletedAt.IsZero() {
		return "timeline: the MOFED pod was not deleted"
	}
	parts := []string{fmt.Sprintf("MOFED pod %s deleted at T=%s", d.Old.Name, d.DeletedAt.UTC().Format("15:04:05.000Z"))}
	if d.Back {
		parts = append(parts, fmt.Sprintf("new pod %s Ready at T+%.1f s", d.New.Name, readyAfter(d)))
	} else {
		if d.Refusals > 0 {
			parts = append(parts, fmt.Sprintf("no new pod Ready by T+%.1f s, its driver container refused to reload %d times", d.RefusedAfter.Seconds(), d.Refusals))
		} else {
			parts = append(parts, fmt.Sprintf("no new pod Ready by T+%s", d.Timeout))
		}
	}
	res := w.Result
	if res == nil {
		return "timeline (" + w.Node + "): " + strings.Join(append(parts, "writer: no result"), "; ")
	}
	for _, iv := range absences(res) {
		parts = append(parts, fmt.Sprintf("%s absent %s..%s (writer clock)", watchName(res), rel(r, iv.start), relEnd(r, iv.end)))
	}
	if g := res.LongestGap; g != nil && len(res.Stalls) > 0 {
		parts = append(parts, fmt.Sprintf("I/O stalled %s..%s (longest gap %.1f s, writer clock)", rel(r, g.Start), relEnd(r, g.End), g.Ms/1000))
	} else {
		parts = append(parts, fmt.Sprintf("no I/O stall (longest gap %.3f s)", gapSec(res)))
	}
	if own := ownVerification(res); own != nil {
		parts = append(parts, "verification: "+verificationText(*own))
	} else {
		parts = append(parts, "verification: not run by the writer")
	}
	return "timeline (" + w.Node + "): " + strings.Join(parts, "; ")
}

// spans is timeline's story as data (reports.Span, seconds from T) for
// the HTML report's chart: the MOFED pod's deletion and its successor's
// Ready, the readiness file's absences and every I/O stall the writer saw.
func spans(r Round, w Writer) []reports.Span {
	d := r.Driver
	if d.DeletedAt.IsZero() {
		return nil
	}
	at := func(t time.Time) float64 { return round3(t.Sub(d.DeletedAt).Seconds()) }
	out := []reports.Span{{Label: fmt.Sprintf("MOFED pod %s deleted", d.Old.Name), Clock: "runner"}}
	if d.Back {
		ready := round3(readyAfter(d))
		out = append(out, reports.Span{Label: fmt.Sprintf("new pod %s Ready", d.New.Name), From: ready, To: ready, Clock: "API server"})
	}
	res := w.Result
	if res == nil {
		return out
	}
	// An interval still open at the end runs to the writer's end.
	end := func(t time.Time) (float64, bool) {
		if t.IsZero() {
			return at(res.EndedAt), true
		}
		return at(t), false
	}
	for _, iv := range absences(res) {
		if iv.start.IsZero() {
			continue
		}
		to, open := end(iv.end)
		out = append(out, reports.Span{Label: watchName(res) + " absent", From: at(iv.start), To: to, Open: open, Clock: "writer"})
	}
	for _, g := range res.Stalls {
		to, open := end(g.End)
		out = append(out, reports.Span{Label: "I/O stalled", From: at(g.Start), To: to, Open: open || g.Ongoing, Clock: "writer"})
	}
	return out
}

func driverLines(r Round) []string {
	d := r.Driver
	if d.DeletedAt.IsZero() {
		return nil
	}
	out := []string{fmt.Sprintf("MOFED pod %s (uid %s, restarts %d) deleted at T=%s (runner clock)", d.Old.Name, d.Old.UID, d.Old.Restarts, d.DeletedAt.UTC().Format(time.RFC3339Nano))}
	if d.Back {
		out = append(out, fmt.Sprintf("new MOFED pod %s (uid %s) Ready at T+%.1f s by its Ready condition (%s); the runner saw it Ready at T+%.1f s",
			d.New.Name, d.New.UID, readyAfter(d), d.ReadyAt.UTC().Format(time.RFC3339), d.SeenAt.Sub(d.DeletedAt).Seconds()))
		return out
	}
	return append(out, d.State...)
}

func writerLines(r Round, w Writer) []string {
	res := w.Result
	if res == nil {
		s := fmt.Sprintf("writer %s on %s: no result: %s", w.Pod, w.Node, w.Problem)
		if w.LogTail != "" {
			s += "; log: " + w.LogTail
		}
		return []string{s}
	}
	fs := fsOf(res)
	out := []string{fmt.Sprintf("writer %s on %s (id %s): %d records acknowledged in %d ops (%s, %d-byte records every %g ms); latency outside stalls p50 %.2f ms, p99 %.2f ms, max %.2f ms; %d I/O errors; %s %s (%s); stopped by %s",
		w.Pod, w.Node, w.ID, res.Acknowledged, res.Ops, orUnknown(res.Durability), res.RecordBytes, res.IntervalMs, res.Latency.P50, res.Latency.P99, res.Latency.Max,
		ioErrors(res), orUnknown(fs.Type), fs.Source, fs.Options, orUnknown(res.StoppedBy))}
	for i, s := range res.Stalls {
		if i == 5 {
			out = append(out, fmt.Sprintf("… %d more stalls", len(res.Stalls)-5))
			break
		}
		out = append(out, fmt.Sprintf("stall %s..%s: %.1f s, record %d in flight (writer clock)", rel(r, s.Start), relEnd(r, s.End), s.Ms/1000, s.InFlightSeq))
	}
	if res.Watch != nil && len(res.Watch.Transitions) == 0 {
		out = append(out, fmt.Sprintf("%s did not change while the writer watched it", watchName(res)))
	}
	switch {
	case !w.ResumedAt.IsZero():
		out = append(out, fmt.Sprintf("progress seen again at T+%.1f s (runner clock)", w.ResumedAt.Sub(r.Driver.DeletedAt).Seconds()))
	case w.NoProgressLines:
		out = append(out, "the writer printed no progress count: the runner waited --stall-after once the driver was back")
	}
	if w.StopErr != "" {
		out = append(out, "stop: "+w.StopErr)
	}
	if w.Stuck != "" {
		out = append(out, w.Stuck)
	}
	return out
}

func crossLines(r Round) []string {
	v := r.Cross
	if v.Result == nil {
		if v.Problem == "" {
			return nil
		}
		return []string{fmt.Sprintf("cross-node verification on %s: %s", v.Node, v.Problem)}
	}
	var out []string
	for _, x := range verifications(v.Result) {
		out = append(out, fmt.Sprintf("cross-node verification on %s (pod %s) of %s's file: %s", v.Node, v.Pod, orUnknown(x.WriterID), verificationText(x)))
	}
	return out
}

type interval struct{ start, end time.Time }

// absences are the intervals the watched file was absent; end is zero
// when it never came back while the writer watched.
func absences(res *Result) []interval {
	if res.Watch == nil {
		return nil
	}
	var out []interval
	var open *interval
	for _, t := range res.Watch.Transitions {
		switch {
		case !t.Present && open == nil:
			open = &interval{start: t.At}
		case t.Present && open != nil:
			open.end = t.At
			out = append(out, *open)
			open = nil
		}
	}
	if open != nil {
		out = append(out, *open)
	}
	return out
}

func watchName(res *Result) string {
	if res.Watch != nil && res.Watch.Path != "" {
		return path.Base(res.Watch.Path)
	}
	return ".driver-ready"
}

func readyAfter(d Driver) float64 {
	if d.ReadyAt.IsZero() {
		return d.SeenAt.Sub(d.DeletedAt).Seconds()
	}
	return d.ReadyAt.Sub(d.DeletedAt).Seconds()
}

// rel places t against T.
func rel(r Round, t time.Time) string {
	if t.IsZero() || r.Driver.DeletedAt.IsZero() {
		if t.IsZero() {
			return "?"
		}
		return t.UTC().Format("15:04:05.000Z")
	}
	return fmt.Sprintf("T%+.1f s", t.Sub(r.Driver.DeletedAt).Seconds())
}

func relEnd(r Round, t time.Time) string {
	if t.IsZero() {
		return "(still at the end)"
	}
	return rel(r, t)
}

func round1(v float64) float64 { return float64(int64(v*10+0.5*sign(v))) / 10 }
func round3(v float64) float64 { return float64(int64(v*1000+0.5*sign(v))) / 1000 }

func sign(v float64) float64 {
	if v < 0 {
		return -1
	}
	return 1
}

func firstLine(s string) string { return strings.SplitN(s, "\n", 2)[0] }

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

// filesLine says whether the round's files are still on the volume: the
// cross-node verification deletes them once every record verified; failed
// or unverified data stays for inspection.
func filesLine(r Round) string {
	if v := r.Cross.Result; v != nil && len(v.Removed) > 0 && v.RemoveError == "" {
		return fmt.Sprintf("files: %s/ removed from the volume after every record verified", r.SubPath)
	}
	why := "not every record verified"
	if v := r.Cross.Result; v != nil && v.RemoveError != "" {
		why = "removing them failed: " + v.RemoveError
	}
	return fmt.Sprintf("files: %s/ on the volume (<writer>.rec, .ack.json, .stop), kept for inspection (%s); the run's PV is Retain, delete them by hand", r.SubPath, why)
}
