package verdict

import (
	"strings"
	"testing"

	"github.com/rdmasuite/rdmasuite/reports"
	"github.com/rdmasuite/rdmasuite/workloads/bw"
	"github.com/rdmasuite/rdmasuite/workloads/probeout"
)

// failWrite makes rail 0's WRITE stop at 1 MiB with err as its own error
// (and the rail's, as the probe joins them); READ stays measured whole.
func failWrite(err *probeout.Error, perOp bool) func(c, s *bw.ProbeOutput) {
	return func(c, _ *bw.ProbeOutput) {
		rr := &c.Rails[0]
		rr.Runs[0].Results = rr.Runs[0].Results[:1]
		if perOp {
			rr.Runs[0].Error = err
		}
		rr.Error = &probeout.Error{Kind: err.Kind, Message: "write: " + err.Message}
	}
}

func rowsOf(t *testing.T, edit func(c, s *bw.ProbeOutput)) map[string]reports.Check {
	t.Helper()
	c, s := pairOut(t, []string{"write", "read"}, []int{k64, m1}, 2, 190, edit)
	out := map[string]reports.Check{}
	for _, x := range Bandwidth(bwInput(t, []string{"write", "read"}, []int{k64, m1}, c, s)).Checks {
		out[x.ID+" "+x.Rail] = x
	}
	return out
}

// A check is failed only by what happened to its own op and
// rail; another op's error on the same rail is named in the evidence.
// Without per-op errors (an older probe) the rail's error still fails
// every op of the rail: nothing is passed on a guess.
func TestOneOpsErrorIsNotAnothersResult(t *testing.T) {
	remInv := &probeout.Error{Kind: probeout.KindTransport, Message: "size 1048576: completion error on QP index 2 op 73: remote invalid request error"}
	rows := rowsOf(t, failWrite(remInv, true))
	w, r := rows["bandwidth/write mlx5_0/1→mlx5_0/1"], rows["bandwidth/read mlx5_0/1→mlx5_0/1"]
	if w.Status != reports.Fail || !strings.Contains(w.Diagnosis, "remote invalid request") || !strings.Contains(w.Diagnosis, "not measured: 1MiB") {
		t.Errorf("write: %s %s", w.Status, w.Diagnosis)
	}
	if r.Status != reports.Pass {
		t.Errorf("read measured whole above the floor must pass, got %s: %s %s", r.Status, r.Diagnosis, r.Reason)
	}
	if !strings.Contains(strings.Join(r.Evidence, " "), "write on this rail failed: ") {
		t.Errorf("read's evidence must name the write's failure: %q", r.Evidence)
	}
	old := rowsOf(t, failWrite(remInv, false))
	if old["bandwidth/read mlx5_0/1→mlx5_0/1"].Status != reports.Fail {
		t.Errorf("an older probe's rail error (no per-op errors) must still fail every op of the rail")
	}
	// The server's own error on the read of a rail the client measured
	// whole: the read is not a pass; the write is not touched.
	srvRead := func(_, s *bw.ProbeOutput) {
		s.Rails[0].Runs = []bw.Report{{Params: bw.Params{Op: bw.OpWrite}}, {Params: bw.Params{Op: bw.OpRead},
			Error: &probeout.Error{Kind: probeout.KindTransport, Message: "size 65536: completion error on QP index 0 op 3: local protection error"}}}
		s.Rails[0].Error = &probeout.Error{Kind: probeout.KindTransport, Message: "read: size 65536: completion error on QP index 0 op 3: local protection error"}
	}
	rows = rowsOf(t, srvRead)
	if rows["bandwidth/read mlx5_0/1→mlx5_0/1"].Status == reports.Pass || rows["bandwidth/write mlx5_0/1→mlx5_0/1"].Status != reports.Pass {
		t.Errorf("server's read error: read %s, write %s", rows["bandwidth/read mlx5_0/1→mlx5_0/1"].Status, rows["bandwidth/write mlx5_0/1→mlx5_0/1"].Status)
	}
}

// Every completion status has its own diagnosis and fix: a
// responder's refusal points at the memory layout or the peer, not the
// link; only the statuses the fabric causes get the fabric's fix.
func TestCompletionStatusDiagnosis(t *testing.T) {
	for _, tc := range []struct {
		status       string
		says, fixHas string
		fabric       bool
	}{
		{"remote invalid request error", "refused the request", "remote memory region", false},
		{"remote access error", "refused access", "rkey", false},
		{"remote operation error", "could not complete", "peer", false},
		{"RNR retry counter exceeded", "receive queue", "receives", false},
		{"transport retry counter exceeded", "no acknowledgement", "error counters", true},
		{"Work Request Flushed Error", "flushed", "first error", false},
		{"local protection error", "local memory registration", "lkey", false},
		{"local length error", "length", "sizes", false},
	} {
		e := &probeout.Error{Kind: probeout.KindTransport, Message: "size 1048576: completion error on QP index 1 op 47: " + tc.status}
		rows := rowsOf(t, failWrite(e, true))
		w := rows["bandwidth/write mlx5_0/1→mlx5_0/1"]
		if w.Status != reports.Fail || !strings.Contains(w.Diagnosis, tc.says) || !strings.Contains(w.Fix, tc.fixHas) {
			t.Errorf("%s: %s\n  diagnosis %s\n  fix %s", tc.status, w.Status, w.Diagnosis, w.Fix)
		}
		if isFabric := w.Fix == FixTransport; isFabric != tc.fabric {
			t.Errorf("%s: fabric fix %v, want %v", tc.status, isFabric, tc.fabric)
		}
	}
}

// On Soft-RoCE a remote invalid request is rxe refusing a
// resend (perftest fails the same way between the same devices): the
// diagnosis says so and the fix raises the ACK timeout; elsewhere the
// refusal keeps the memory-layout fix.
func TestRemoteInvalidRequestOnSoftRoCE(t *testing.T) {
	e := &probeout.Error{Kind: probeout.KindTransport, Message: "size 1048576: completion error on QP index 0 op 38: remote invalid request error (QP ACK timeout 67ms = 4.096 µs × 2^14, 7 retries)"}
	in := BWInput{}
	st, msg, fix := in.explain(Side{Pod: "c", Node: "rxe-node-2"}, "rxe1/1", e)
	if st != reports.Fail || !strings.Contains(msg, "refusing a resend") || fix != FixRemoteInvalidRxe || !strings.Contains(fix, "--qp-timeout") {
		t.Errorf("rxe port: %s\n  %s\n  fix %s", st, msg, fix)
	}
	st, msg, fix = in.explain(Side{Pod: "c", Node: "gpu-7"}, "mlx5_3/1", e)
	if st != reports.Fail || strings.Contains(msg, "Soft-RoCE") || fix != FixRemoteInvalid {
		t.Errorf("mlx5 port: %s\n  %s\n  fix %s", st, msg, fix)
	}
}
