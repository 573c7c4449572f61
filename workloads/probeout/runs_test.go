package probeout

import (
	"strings"
	"testing"
)

func framed(parts ...string) string { return strings.Join(parts, "\n") + "\n" }

func TestSplitRunsAttributesEachRunItsOwnLinesAndExit(t *testing.T) {
	out := framed(
		"noise before any run",
		"rdmaprobe-run begin 1/2 bandwidth",
		"stderr of bandwidth",
		`{"schema":2,"probe":"bw"}`,
		"rdmaprobe-run end 1/2 bandwidth exit=3",
		"rdmaprobe-run begin 2/2 latency",
		`{"schema":2,"probe":"bw","x":1}`,
		"rdmaprobe-run end 2/2 latency exit=0",
	)
	runs, err := SplitRuns(out, []string{"bandwidth", "latency"})
	if err != nil {
		t.Fatal(err)
	}
	if !runs[0].Began || runs[0].Exit == nil || *runs[0].Exit != 3 || !strings.Contains(runs[0].Logs, "stderr of bandwidth") ||
		strings.Contains(runs[0].Logs, `"x":1`) || strings.Contains(runs[0].Logs, "noise") {
		t.Errorf("run 1: %+v", runs[0])
	}
	if !runs[1].Began || runs[1].Exit == nil || *runs[1].Exit != 0 || !strings.Contains(runs[1].Logs, `"x":1`) ||
		strings.Contains(runs[1].Logs, "stderr of bandwidth") {
		t.Errorf("run 2: %+v", runs[1])
	}
}

// A process that died in run 1 leaves run 1 without an end (no exit) and
// run 2 never begun: neither may borrow the other's output.
func TestSplitRunsCutOutputLeavesLaterRunsEmpty(t *testing.T) {
	out := framed("rdmaprobe-run begin 1/2 bandwidth", "panic: boom")
	runs, err := SplitRuns(out, []string{"bandwidth", "latency"})
	if err != nil {
		t.Fatal(err)
	}
	if !runs[0].Began || runs[0].Exit != nil || !strings.Contains(runs[0].Logs, "panic") {
		t.Errorf("run 1: %+v", runs[0])
	}
	if runs[1].Began || runs[1].Exit != nil || runs[1].Logs != "" {
		t.Errorf("run 2 never began but got %+v", runs[1])
	}
}

func TestSplitRunsRefusesFramesThatDoNotMatchWhatWasAsked(t *testing.T) {
	names := []string{"bandwidth", "latency"}
	for name, out := range map[string]string{
		"wrong name":      framed("rdmaprobe-run begin 1/2 msgrate"),
		"wrong count":     framed("rdmaprobe-run begin 1/3 bandwidth"),
		"begun twice":     framed("rdmaprobe-run begin 1/2 bandwidth", "rdmaprobe-run end 1/2 bandwidth exit=0", "rdmaprobe-run begin 1/2 bandwidth"),
		"end of another":  framed("rdmaprobe-run begin 1/2 bandwidth", "rdmaprobe-run end 2/2 latency exit=0"),
		"no exit":         framed("rdmaprobe-run begin 1/2 bandwidth", "rdmaprobe-run end 1/2 bandwidth"),
		"exit not number": framed("rdmaprobe-run begin 1/2 bandwidth", "rdmaprobe-run end 1/2 bandwidth exit=x"),
		"run 0":           framed("rdmaprobe-run begin 0/2 bandwidth"),
		"not k/n":         framed("rdmaprobe-run begin one bandwidth"),
		"unknown verb":    framed("rdmaprobe-run start 1/2 bandwidth"),
		"short":           framed("rdmaprobe-run begin"),
	} {
		if _, err := SplitRuns(out, names); err == nil {
			t.Errorf("%s: accepted %q", name, out)
		}
	}
}

func TestRunFramesRoundTrip(t *testing.T) {
	var b strings.Builder
	_ = WriteRunBegin(&b, 1, 1, "gpudirect")
	b.WriteString("line\n")
	_ = WriteRunEnd(&b, 1, 1, "gpudirect", 1)
	runs, err := SplitRuns(b.String(), []string{"gpudirect"})
	if err != nil || runs[0].Exit == nil || *runs[0].Exit != 1 || runs[0].Logs != "line\n" {
		t.Fatalf("%+v %v", runs, err)
	}
}
