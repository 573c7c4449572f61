package portcounters

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// roceMeasurement returns the deltas of one measurement on the RoCE layout
// during which change altered the counters.
func roceMeasurement(t *testing.T, change func(root string)) Deltas {
	t.Helper()
	root := copyTree(t, roceRoot)
	before := mustRead(t, root, roceDev)
	change(root)
	return Diff(before, mustRead(t, root, roceDev))
}

func TestJudgeLinkDownedFailsCNPsOnlyRecorded(t *testing.T) {
	d := roceMeasurement(t, func(root string) {
		addCounter(t, root, roceDev, Counters, "link_downed", 1)
		addCounter(t, root, roceDev, HWCounters, "np_cnp_sent", 500)
		addCounter(t, root, roceDev, Counters, "port_xmit_data", 1<<28)
	})
	fs := Judge(d, nil)
	if Worst(fs) != Fail {
		t.Fatalf("Worst = %q, want fail: %+v", Worst(fs), fs)
	}
	f, ok := findingFor(fs, "counters/link_downed")
	if !ok || f.Severity != Fail || f.Delta != 1 || f.Class != ClassPhysicalLink {
		t.Fatalf("link_downed finding %+v (ok %v)", f, ok)
	}
	if !strings.Contains(f.Message, "link_downed") || !strings.Contains(f.Message, "downed the link") {
		t.Errorf("message does not name the counter and its meaning: %q", f.Message)
	}
	c, ok := findingFor(fs, "hw_counters/np_cnp_sent")
	if !ok || c.Severity != Record || c.Delta != 500 || c.Class != ClassCongestion {
		t.Errorf("np_cnp_sent finding %+v (ok %v), want recorded", c, ok)
	}
	if _, ok := findingFor(fs, "counters/port_xmit_data"); ok {
		t.Error("traffic counter judged")
	}
	fails := 0
	for _, f := range fs {
		if f.Severity == Fail {
			fails++
		}
	}
	if fails != 1 {
		t.Errorf("%d failing findings, want 1: %+v", fails, fs)
	}

	// A SKU bound makes a congestion signal judged; an allowance lifts a fail.
	fs = Judge(d, Allowances{"np_cnp_sent": 100, "counters/link_downed": 1})
	if f, _ := findingFor(fs, "hw_counters/np_cnp_sent"); f.Severity != Fail || f.Allowance != 100 {
		t.Errorf("bounded np_cnp_sent: %+v", f)
	}
	if f, _ := findingFor(fs, "counters/link_downed"); f.Severity == Fail {
		t.Errorf("link_downed within its allowance still fails: %+v", f)
	}
}

func TestJudgeRetransmissionAboveAllowance(t *testing.T) {
	root := copyTree(t, rxeRoot)
	before := mustRead(t, root, rxeDev)
	addCounter(t, root, rxeDev, HWCounters, "rcvd_seq_err", 3)
	addCounter(t, root, rxeDev, HWCounters, "completer_retry_err", 2)
	addCounter(t, root, rxeDev, HWCounters, "ack_deferred", 40)
	d := Diff(before, mustRead(t, root, rxeDev))

	fs := Judge(d, nil)
	for _, k := range []string{"hw_counters/rcvd_seq_err", "hw_counters/completer_retry_err"} {
		if f, _ := findingFor(fs, k); f.Severity != Fail || f.Class != ClassTransport {
			t.Errorf("%s: %+v, want fail", k, f)
		}
	}
	if f, ok := findingFor(fs, "hw_counters/ack_deferred"); ok && f.Severity == Fail {
		t.Errorf("ack_deferred (scheduling, not an error) fails: %+v", f)
	}
	// rxe has no counters/: say so, so a report cannot read it as clean.
	if f, ok := findingFor(fs, "counters"); !ok || f.Severity != Record || f.Status != GroupAbsent {
		t.Errorf("absent counters/ not named: %+v (ok %v)", f, ok)
	}
	fs = Judge(d, Allowances{"hw_counters/rcvd_seq_err": 5, "completer_retry_err": 2})
	if Worst(fs) == Fail {
		t.Errorf("within allowances still fails: %+v", fs)
	}
}

func TestJudgeFlushErrorsAreRecorded(t *testing.T) {
	d := roceMeasurement(t, func(root string) {
		addCounter(t, root, roceDev, HWCounters, "resp_cqe_flush_error", 10)
		addCounter(t, root, roceDev, HWCounters, "req_cqe_error", 1)
	})
	fs := Judge(d, nil)
	if f, _ := findingFor(fs, "hw_counters/resp_cqe_flush_error"); f.Severity != Record {
		t.Errorf("flush errors (QP teardown) should be recorded: %+v", f)
	}
	if f, _ := findingFor(fs, "hw_counters/req_cqe_error"); f.Severity != Fail {
		t.Errorf("req_cqe_error: %+v, want fail", f)
	}
}

func TestJudgeUnknownIsNeverAPass(t *testing.T) {
	root := copyTree(t, ibRoot)
	setCounter(t, root, ibDev, Counters, "symbol_error", "65535")
	before := mustRead(t, root, ibDev)
	setCounter(t, root, ibDev, Counters, "port_rcv_errors", "N/A (no PMA)")
	setCounter(t, root, ibDev, Counters, "port_rcv_data", "")
	after := mustRead(t, root, ibDev)
	fs := Judge(Diff(before, after), nil)
	if Worst(fs) != Unknown {
		t.Errorf("Worst = %q, want unknown: %+v", Worst(fs), fs)
	}
	for _, k := range []string{"counters/symbol_error", "counters/port_rcv_errors", "counters/link_downed"} {
		if f, _ := findingFor(fs, k); f.Severity != Unknown {
			t.Errorf("%s: %+v, want unknown", k, f)
		}
	}
	if f, _ := findingFor(fs, "counters/symbol_error"); !strings.Contains(f.Message, "maximum") {
		t.Errorf("saturation not explained: %q", f.Message)
	}
	// A traffic counter that cannot be read is named too, but does not make
	// the link unknown.
	if f, ok := findingFor(fs, "counters/port_rcv_data"); !ok || f.Severity != Record {
		t.Errorf("unreadable port_rcv_data: %+v (ok %v)", f, ok)
	}
}

func TestJudgeSaturatedButRoseFails(t *testing.T) {
	root := copyTree(t, ibRoot)
	setCounter(t, root, ibDev, Counters, "symbol_error", "65000")
	before := mustRead(t, root, ibDev)
	setCounter(t, root, ibDev, Counters, "symbol_error", "65535")
	fs := Judge(Diff(before, mustRead(t, root, ibDev)), nil)
	if f, _ := findingFor(fs, "counters/symbol_error"); f.Severity != Fail || f.Delta != 535 || !strings.Contains(f.Message, "at least") {
		t.Errorf("symbol_error: %+v", f)
	}
}

func TestJudgeGroupErrorAndProblemAreUnknown(t *testing.T) {
	// A group directory that exists but cannot be listed. Mode 000 does not
	// stop root, so replace the directory with a file: ReadDir fails with
	// ENOTDIR, which is not "absent".
	root := copyTree(t, roceRoot)
	before := mustRead(t, root, roceDev)
	dir := filepath.Join(PortDir(root, roceDev, 1), string(HWCounters))
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dir, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	after := mustRead(t, root, roceDev)
	if _, ok := after.GroupErrs[HWCounters]; !ok {
		t.Fatalf("unlistable hw_counters not recorded: %+v", after.GroupErrs)
	}
	fs := Judge(Diff(before, after), nil)
	if f, ok := findingFor(fs, "hw_counters"); !ok || f.Severity != Unknown || f.Status != GroupUnreadable {
		t.Errorf("unlistable hw_counters: %+v (ok %v)", f, ok)
	}
	if Worst(fs) != Unknown {
		t.Errorf("Worst = %q", Worst(fs))
	}

	a := mustRead(t, roceRoot, roceDev)
	b := mustRead(t, ibRoot, ibDev)
	fs = Judge(Diff(a, b), nil)
	if len(fs) != 1 || fs[0].Severity != Unknown || fs[0].Status != Incomparable {
		t.Errorf("mismatched snapshots: %+v", fs)
	}
}

func TestJudgeCleanHasNoFindings(t *testing.T) {
	s := mustRead(t, roceRoot, roceDev)
	if fs := Judge(Diff(s, s), nil); len(fs) != 0 {
		t.Errorf("clean RoCE port: %+v", fs)
	}
	if Worst(nil) != "" {
		t.Error("Worst(nil) not empty")
	}
}
