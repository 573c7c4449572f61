package disrupt

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/rdmasuite/rdmasuite/reports"
	"github.com/rdmasuite/rdmasuite/workloads/stall"
)

var t0 = time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)

func at(sec float64) time.Time { return t0.Add(time.Duration(sec * float64(time.Second))) }

func writerResult(id string, gapSec float64, stalled bool) *Result {
	r := &Result{Mode: "write", WriterID: id, RecordBytes: 4096, Durability: "fsync", IntervalMs: 10, StoppedBy: "stop-file",
		FS:  &stall.FSInfo{Type: "nfs4", Magic: "0x6969", MagicName: "nfs", Source: "10.0.0.5:/export/scratch", Options: "rw,vers=4.1,proto=rdma,port=20049", RDMA: true},
		Ops: 12000, Acknowledged: 12000, Latency: stall.LatencyMs{P50: 1.2, P99: 4.5, Max: 9, Ops: 11990},
		LongestGap:   &stall.Gap{Ms: 40, Start: at(-10), End: at(-9.96), InFlightSeq: 100},
		Stalls:       []stall.Gap{},
		Verification: &stall.Verification{OK: true, WriterID: id, Checked: 12000, UnacknowledgedTail: 1}}
	if stalled {
		g := stall.Gap{Ms: gapSec * 1000, Start: at(3), End: at(3 + gapSec), InFlightSeq: 2345}
		r.LongestGap, r.Stalls, r.StallCount = &g, []stall.Gap{g}, 1
	}
	return r
}

// passingRound is seed 000 as it should end: a 27 s stall on an RDMA mount,
// the driver back at T+45 s, every record verified on both nodes.
func passingRound() Round {
	target := writerResult("node-a", 27, true)
	target.Watch = &stall.Watch{Path: "/host/run/mellanox/drivers/.driver-ready",
		Transitions: []stall.Transition{{At: at(-20), Present: true}, {At: at(2), Present: false}, {At: at(44), Present: true}}}
	return Round{Target: "node-a", Peer: "node-b",
		Volume: ClassifyPV("default/rdmasuite-nfs", pvWith("pv-1", nfsSource(), "nfsvers=4.1", "proto=rdma,port=20049")),
		Driver: Driver{Old: PodRef{Name: "mofed-a", UID: "uid-old", Restarts: 2}, DeletedAt: t0, Back: true,
			New: PodRef{Name: "mofed-a2", UID: "uid-new"}, ReadyAt: t0.Add(45 * time.Second), SeenAt: t0.Add(46 * time.Second), Timeout: 10 * time.Minute},
		Writer:     Writer{Node: "node-a", Pod: "stall-w-node-a", ID: "node-a", Result: target, ResumedAt: t0.Add(50 * time.Second)},
		PeerWriter: Writer{Node: "node-b", Pod: "stall-w-node-b", ID: "node-b", Result: writerResult("node-b", 0, false)},
		Cross: Verify{Node: "node-b", Pod: "stall-v", Result: &Result{Mode: "verify", Verifications: []stall.Verification{
			{OK: true, WriterID: "node-a", Checked: 12000}, {OK: true, WriterID: "node-b", Checked: 12000}}}},
		Max: &reports.Threshold{Op: "<=", Value: 60, Source: "H100/NDR-400: nfs(5)"}}
}

func evidence(c reports.Check) string { return strings.Join(c.Evidence, "\n") }

func measured(t *testing.T, c reports.Check, name string) reports.Measurement {
	t.Helper()
	for _, m := range c.Measured {
		if m.Name == name {
			return m
		}
	}
	t.Fatalf("%s has no measurement %s: %+v", c.ID, name, c.Measured)
	return reports.Measurement{}
}

func TestJudgePass(t *testing.T) {
	cs := Judge(passingRound())
	if len(cs) != 2 || cs[0].ID != CheckStall || cs[1].ID != CheckPeer {
		t.Fatalf("%+v", cs)
	}
	c := cs[0]
	if c.Status != reports.Pass || strings.Join(c.Nodes, ",") != "node-a" {
		t.Fatalf("%s %v: %s %s", c.Status, c.Nodes, c.Diagnosis, c.Reason)
	}
	if !c.ShowEvidence || !cs[1].ShowEvidence {
		t.Error("a pass must still show its timeline in the reports (ShowEvidence)")
	}
	m := measured(t, c, "longest_gap")
	if m.Value != 27 || m.Unit != "s" || m.Node != "node-a" || m.Threshold == nil || m.Threshold.Op != "<=" || m.Threshold.Value != 60 {
		t.Fatalf("%+v", m)
	}
	if m := measured(t, c, "driver_ready_after"); m.Value != 45 {
		t.Fatalf("%+v", m)
	}
	ev := evidence(c)
	for _, want := range []string{
		"timeline (node-a): MOFED pod mofed-a deleted at T=12:00:00.000Z; new pod mofed-a2 Ready at T+45.0 s; .driver-ready absent T+2.0 s..T+44.0 s (writer clock); I/O stalled T+3.0 s..T+30.0 s (longest gap 27.0 s, writer clock); verification: 12000 records ok",
		"MOFED pod mofed-a (uid uid-old, restarts 2) deleted at T=2026-11-23T12:00:00Z (runner clock)",
		"the runner saw it Ready at T+46.0 s",
		"cross-node verification on node-b (pod stall-v) of node-a's file: 12000 records ok",
		"transport: NFS over RDMA (proto=rdma,port=20049)",
		"clocks: T is the runner's clock",
		"progress seen again at T+50.0 s",
	} {
		if !strings.Contains(ev, want) {
			t.Errorf("evidence lacks %q:\n%s", want, ev)
		}
	}
	if strings.Contains(ev, "no stall observed") {
		t.Error("a 27 s stall is not 'no stall'")
	}
	// The same story as data, for the HTML report's timeline chart.
	var got []string
	for _, s := range c.Timeline {
		got = append(got, fmt.Sprintf("%s %.1f..%.1f %s", s.Label, s.From, s.To, s.Clock))
	}
	want := []string{"MOFED pod mofed-a deleted 0.0..0.0 runner", "new pod mofed-a2 Ready 45.0..45.0 API server",
		".driver-ready absent 2.0..44.0 writer", "I/O stalled 3.0..30.0 writer"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("timeline spans:\n got %q\nwant %q", got, want)
	}
	p := cs[1]
	if p.Status != reports.Pass || strings.Join(p.Nodes, ",") != "node-b,node-a" || measured(t, p, "longest_gap").Node != "node-b" {
		t.Fatalf("%+v", p)
	}
}

func TestJudgeFailures(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(r *Round)
		status reports.Status
		first  string // the diagnosis (fail) or reason (error) starts with it
		also   string // somewhere in diagnosis/reason/fix/evidence
	}{
		{"stall over the SKU limit", func(r *Round) {
			r.Writer.Result = writerResult("node-a", 75, true)
		}, reports.Fail, "NFS I/O on node-a stalled 75.0 s (T+3.0 s..T+78.0 s, writer clock) while the MOFED driver on node-a restarted, over the limit of 60 s", "drain"},
		{"the writer's own verification found a lost record", func(r *Round) {
			v := r.Writer.Result.Verification
			v.OK, v.Lost = false, 3
			v.FirstBad = &stall.BadRecord{Slot: 812, Seq: 812, Offset: 3325952, Problem: stall.Lost, Detail: "all 4096 bytes zero: the write never reached the file"}
		}, reports.Fail, "acknowledged records written on node-a did not survive: 3 of 12000 records bad (lost 3", "first bad record: slot 812 (seq 812, offset 3325952) lost"},
		{"the cross-node verification found a torn record", func(r *Round) {
			v := &r.Cross.Result.Verifications[0]
			v.OK, v.Torn = false, 1
			v.FirstBad = &stall.BadRecord{Slot: 9, Seq: 9, Offset: 36864, Problem: stall.Torn, Detail: "CRC mismatch"}
			r.Cross.Exit = 3
		}, reports.Fail, "read back on node-b, node-a's file is not intact", "first bad record: slot 9"},
		{"the driver did not come back", func(r *Round) {
			r.Driver.Back, r.Driver.New, r.Driver.ReadyAt, r.Driver.SeenAt = false, PodRef{}, time.Time{}, time.Time{}
			r.Driver.State = []string{"new MOFED pod mofed-a2 (uid uid-new) not Ready within 10m0s: phase Running; container mofed-container waiting CrashLoopBackOff",
				"last 10 events of pod mofed-a2:", "  2026-11-23T12:01:00Z Warning BackOff: Back-off restarting failed container"}
			r.Writer.Result = writerResult("node-a", 500, true)
			r.Writer.Result.LongestGap.Ongoing = true
		}, reports.Fail, "the MOFED driver on node-a did not come back Ready within 10m0s after its pod mofed-a was deleted: new MOFED pod mofed-a2", "Back-off restarting failed container"},
		{"the stall is still open at the stop", func(r *Round) {
			r.Writer.Result = writerResult("node-a", 40, true)
			r.Writer.Result.LongestGap.Ongoing = true
			r.Writer.Result.Stalls[0].Ongoing = true
		}, reports.Fail, "NFS I/O on node-a was still stalled when the writer stopped: record 2345 in flight since T+3.0 s", "remount"},
		{"I/O errors on a soft mount", func(r *Round) {
			r.Writer.Result.FS.Options = "rw,vers=4.1,soft,proto=rdma,port=20049,timeo=600,retrans=2"
			r.Writer.Result.IOErrorCount = 2
			r.Writer.Result.IOErrors = []stall.IOError{{At: at(20), Seq: 2500, Op: "fsync", Error: "input/output error"}}
		}, reports.Fail, "the writer on node-a got 2 I/O errors (first at T+20.0 s, record 2500, fsync: input/output error)", "mount hard"},
		// CI of 2026-11-27: a hard mount whose fsync returned EINVAL while
		// the rxe device was removed under it. Telling that operator to
		// "mount hard" would be a lie about their own mount.
		{"I/O errors on a hard mount", func(r *Round) {
			r.Writer.Result.FS.Options = "rw,vers=4.2,rsize=262144,wsize=262144,namlen=255,hard,fatal_neterrors=none,proto=rdma,port=20049,timeo=600,retrans=2,sec=sys"
			r.Writer.Result.IOErrorCount = 1
			r.Writer.Result.IOErrors = []stall.IOError{{At: at(2.9), Seq: 581, Op: "fsync", Error: "sync /data/node-a.rec: invalid argument"}}
		}, reports.Fail, "the writer on node-a got 1 I/O errors (first at T+2.9 s, record 581, fsync: sync /data/node-a.rec: invalid argument)", "the mount is hard, so these are errors the NFS client does not retry"},
		{"I/O errors on a mount whose options are unknown", func(r *Round) {
			r.Writer.Result.FS.Options = ""
			r.Writer.Result.IOErrorCount = 1
		}, reports.Fail, "the writer on node-a got 1 I/O errors", "did not report the mount's options"},
		{"the writer's mount is not NFS", func(r *Round) {
			r.Writer.Result.FS = &stall.FSInfo{Type: "ext4", Magic: "0xef53", MagicName: "ext4", Source: "/dev/sda1"}
		}, reports.Fail, "the writer on node-a wrote to ext4 (/dev/sda1), not NFS", ""},
		{"missing writer envelope is an error, never a pass", func(r *Round) {
			r.Writer.Result, r.Writer.Problem = nil, "writer stall-w-node-a on node-a (exit 1) left no stall result: no \"stall\" result in probe output"
		}, reports.Error, "the writer on node-a left no result", "no \"stall\" result"},
		{"missing writer envelope and driver not back: the driver failure wins", func(r *Round) {
			r.Writer.Result, r.Writer.Problem = nil, "did not end"
			r.Driver.Back, r.Driver.State = false, []string{"no new MOFED pod appeared"}
		}, reports.Fail, "the MOFED driver on node-a did not come back", "the writer on node-a left no result"},
		{"missing cross-node verification is an error", func(r *Round) {
			r.Cross.Result, r.Cross.Problem = nil, "verify pod stall-v on node-b exited 1 (could not run)"
		}, reports.Error, "the cross-node verification on node-b did not run: verify pod stall-v on node-b exited 1", ""},
		{"a verification without the writer's own verdict is an error", func(r *Round) {
			r.Writer.Result.Verification = nil
		}, reports.Error, "the writer on node-a printed no verification", ""},
		{"the run stopped while waiting for the driver", func(r *Round) {
			r.Driver.Back, r.Driver.Interrupted = false, true
			r.Driver.State = []string{"the run stopped waiting (context canceled) before a new MOFED pod was Ready on node-a: check the driver"}
		}, reports.Error, "the run stopped before a new MOFED pod was Ready on node-a", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := passingRound()
			tc.change(&r)
			c := Judge(r)[0]
			if c.Status != tc.status {
				t.Fatalf("status %s, want %s: %s%s", c.Status, tc.status, c.Diagnosis, c.Reason)
			}
			text := c.Diagnosis
			if tc.status != reports.Fail {
				text = c.Reason
			}
			if !strings.HasPrefix(text, tc.first) {
				t.Fatalf("got  %q\nwant prefix %q", text, tc.first)
			}
			all := c.Diagnosis + c.Reason + c.Fix + evidence(c)
			if tc.also != "" && !strings.Contains(all, tc.also) {
				t.Fatalf("%q not in:\n%s", tc.also, all)
			}
		})
	}
}

// A forced run on a volume that is not NFS judges the rest.
func TestJudgeForcedNonNFS(t *testing.T) {
	r := passingRound()
	r.Volume = ClassifyPV("default/data", pvWith("pv-1", hostPathSource()))
	r.Volume.Forced = true
	r.Writer.Result.FS = &stall.FSInfo{Type: "ext4", MagicName: "ext4", Source: "/dev/sda1"}
	if c := Judge(r)[0]; c.Status != reports.Pass {
		t.Fatalf("%s: %s", c.Status, c.Diagnosis)
	}
}

// An RDMA mount, .driver-ready gone and back, and no stall: still a pass,
// but the evidence asks whether the mount used the restarted device.
func TestJudgeNoStallOnRDMA(t *testing.T) {
	r := passingRound()
	w := r.Writer.Result
	w.LongestGap, w.Stalls = &stall.Gap{Ms: 35, Start: at(10), End: at(10.035)}, nil
	c := Judge(r)[0]
	if c.Status != reports.Pass || !strings.HasPrefix(c.Evidence[0], "no stall observed: the mount did not use the restarted device?") {
		t.Fatalf("%s %q", c.Status, c.Evidence)
	}
	// Over TCP the same numbers say nothing suspicious.
	r.Volume = ClassifyPV("default/data", pvWith("pv-1", nfsSource(), "proto=tcp"))
	w.FS.Options, w.FS.RDMA = "rw,vers=4.1,proto=tcp", false
	c = Judge(r)[0]
	if c.Status != reports.Pass || strings.Contains(evidence(c), "no stall observed") ||
		!strings.Contains(evidence(c), "NFS over TCP: the driver restart will not touch this mount's transport") {
		t.Fatalf("%s %q", c.Status, c.Evidence)
	}
}

// The peer's stall is judged against the same limit, and blamed on the
// shared path, not on its own driver.
func TestJudgePeer(t *testing.T) {
	r := passingRound()
	r.PeerWriter.Result = writerResult("node-b", 61, true)
	cs := Judge(r)
	if cs[0].Status != reports.Pass {
		t.Fatalf("target: %s", cs[0].Status)
	}
	p := cs[1]
	if p.Status != reports.Fail || !strings.HasPrefix(p.Diagnosis, "NFS I/O on node-b stalled 61.0 s") || !strings.Contains(p.Fix, "node-b's driver was not restarted") {
		t.Fatalf("%+v", p)
	}
	r.PeerWriter.Result, r.PeerWriter.Problem = nil, "did not end"
	if p := Judge(r)[1]; p.Status != reports.Error {
		t.Fatalf("a missing peer result must not pass: %s", p.Status)
	}
}

// The envelope as the probe prints it decodes into the probe's own type.
func TestParseResult(t *testing.T) {
	logs := `stall: steady
stall: write 1200 records acknowledged, 0 I/O errors, last op 1.1 ms
{"schema":2,"probe":"stall","version":"dev","result":{"mode":"write","writerId":"node-a","dir":"/data","file":"/data/node-a.rec","recordBytes":4096,"durability":"fsync","intervalMs":10,` +
		`"fs":{"type":"nfs4","magic":"0x6969","magicName":"nfs","source":"10.0.0.5:/export","options":"rw,vers=4.1,proto=rdma,port=20049","mountPoint":"/data","rdma":true},` +
		`"startedAt":"2026-11-23T12:00:00.5Z","steadyAt":"2026-11-23T12:00:01Z","endedAt":"2026-11-23T12:02:00Z","stoppedBy":"stop-file","ops":12000,"acknowledged":12000,` +
		`"ioErrors":[],"ioErrorCount":0,"latencyMs":{"p50":1.1,"p99":3.2,"max":9,"ops":11999},` +
		`"longestGap":{"ms":27012.5,"start":"2026-11-23T12:00:23Z","end":"2026-11-23T12:00:50.0125Z","inFlightSeq":2345,"ongoing":false},` +
		`"stalls":[{"ms":27012.5,"start":"2026-11-23T12:00:23Z","end":"2026-11-23T12:00:50.0125Z","inFlightSeq":2345,"ongoing":false}],"stallCount":1,` +
		`"watch":{"path":"/host/run/mellanox/drivers/.driver-ready","transitions":[{"at":"2026-11-23T12:00:00.6Z","present":true},{"at":"2026-11-23T12:00:21Z","present":false},{"at":"2026-11-23T12:01:05Z","present":true}]},` +
		`"verification":{"ok":true,"writerId":"node-a","checked":12001,"unacknowledgedTail":1,"lost":0,"torn":0,"reordered":0,"duplicate":0,"foreign":0}}}
stall: write done (stop-file): 12000 records, longest gap 27012.5 ms from 2026-11-23T12:00:23Z (seq 2345), 1 stalls over 1s
`
	r, perr, err := ParseResult(logs)
	if err != nil || perr != nil {
		t.Fatal(err, perr)
	}
	fs := fsOf(r)
	if !fsNFS(fs) || !fsRDMA(fs) || r.LongestGap.Ms != 27012.5 || ownVerification(r).Checked != 12001 || len(absences(r)) != 1 || r.SteadyAt.IsZero() {
		t.Fatalf("%+v", r)
	}
	if n, ok := progress(logs); !ok || n != 1200 {
		t.Fatalf("progress %d %v", n, ok)
	}
	if _, _, err := ParseResult("stall: steady\n"); err == nil {
		t.Fatal("no envelope must be an error")
	}
}

func TestProgressFormats(t *testing.T) {
	for logs, want := range map[string]int64{
		"stall: steady\nstall: 5000 acknowledged, 0 I/O errors\n":           5000,
		"stall: progress: acknowledged 77, longest gap 12 ms\n":             77,
		"stall: acked=9 inflight=1\nstall: acked=19 inflight=1\n":           19,
		"stall: steady\nother: acknowledged=5\n":                            -1,
		`{"schema":2,"probe":"stall","result":{"acknowledged":3}}` + "\n":   -1,
		"stall: steady (50 records acknowledged)\nstall: 60 acknowledged\n": 60,
	} {
		n, ok := progress(logs)
		if (want < 0 && ok) || (want >= 0 && (!ok || n != want)) {
			t.Errorf("%q: got %d %v, want %d", logs, n, ok, want)
		}
	}
}

func TestValidDurability(t *testing.T) {
	for _, ok := range []string{"fsync", "direct", "fsync-every=8"} {
		if err := ValidDurability(ok); err != nil {
			t.Error(err)
		}
	}
	for _, bad := range []string{"", "sync", "fsync-every=0", "fsync-every=x"} {
		if ValidDurability(bad) == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// The evidence says whether the round's files left the operator's volume:
// removed only when the cross-node verification deleted them.
func TestJudgeFilesLine(t *testing.T) {
	r := passingRound()
	r.SubPath = "rdmasuite-run1/stall-node-a"
	if ev := evidence(Judge(r)[0]); !strings.Contains(ev, "kept for inspection") {
		t.Errorf("no removal recorded, yet the evidence says:\n%s", ev)
	}
	res := *r.Cross.Result
	res.Removed = []string{"/data/rdmasuite-run1/stall-node-a/node-a.rec"}
	r.Cross.Result = &res
	if ev := evidence(Judge(r)[0]); !strings.Contains(ev, "removed from the volume after every record verified") {
		t.Errorf("evidence:\n%s", ev)
	}
	res.RemoveError = "permission denied"
	if ev := evidence(Judge(r)[0]); !strings.Contains(ev, "removing them failed: permission denied") {
		t.Errorf("evidence:\n%s", ev)
	}
}

// The remedy for failed writes follows the mount the writer reported: a
// hard mount is never told to mount hard, a soft one always is.
func TestIOErrorFixFollowsTheMount(t *testing.T) {
	for _, tc := range []struct {
		opts, pvOpts, want, never string
	}{
		{"rw,vers=4.2,hard,proto=rdma", "", "the mount is hard", "mount hard (the default)"},
		{"rw,vers=4.2,proto=rdma", "", "the mount is hard", "mount hard (the default)"}, // hard is NFS's default
		{"rw,vers=4.2,soft,proto=rdma", "", "mount hard (the default)", "the mount is hard"},
		{"rw,softerr,proto=rdma", "", "mount hard (the default)", "the mount is hard"},
		{"", "nfsvers=4.2,proto=rdma,soft", "mount hard (the default)", "the mount is hard"},
		{"", "", "did not report the mount's options", "the mount is hard"},
	} {
		fix := ioErrorFix(stall.FSInfo{Options: tc.opts, MountOptions: tc.pvOpts}, "node-a")
		if !strings.Contains(fix, tc.want) || strings.Contains(fix, tc.never) {
			t.Errorf("options %q / %q: fix %q: want %q, never %q", tc.opts, tc.pvOpts, fix, tc.want, tc.never)
		}
	}
}
