package reports

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func sampleRun(writeGbps float64, status Status) Run {
	th := &Threshold{Op: ">=", Value: 180, Source: "A100/HDR-200: 90% of 200 Gb/s"}
	return Run{RunID: "r1", Started: time.Unix(0, 0).UTC(), Finished: time.Unix(60, 0).UTC(),
		Cluster: Cluster{Server: "https://10.250.0.1:6443", Version: "v1.35.4"},
		Nodes:   []Node{{Name: "node-2", SKU: "A100/HDR-200"}, {Name: "node-1", SKU: "A100/HDR-200"}},
		Checks: []Check{
			{ID: "bandwidth/write", Variant: "shared-dev", Nodes: []string{"node-1", "node-2"}, Status: status,
				Measured:  []Measurement{{Name: "write_1MiB_avg", Port: "mlx5_0/1", Value: writeGbps, Unit: "Gb/s", Threshold: th}},
				Diagnosis: "below floor", Fix: "check link", Evidence: []string{"rdmaprobe bw client …"}},
			{ID: "memlock", Nodes: []string{"node-1"}, Status: NotRun, Reason: "no RDMA device visible in pod"},
		},
		Phases: map[string]Phase{"pod start": {Count: 4, TotalSec: 9.5, MaxSec: 3.25}, "measurement": {Count: 2, TotalSec: 10, MaxSec: 5}}}
}

func TestWriteReadRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out", "results.json")
	if err := Write(path, sampleRun(190, Pass)); err != nil {
		t.Fatal(err)
	}
	r, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if r.Schema != Schema || len(r.Checks) != 2 || r.Nodes[0].Name != "node-1" {
		t.Fatalf("%+v", r)
	}
	if r.Passed() {
		t.Fatal("a run with a not-run check must not read as passed")
	}
}

// A run that fails validation leaves the results already there untouched,
// and a rewrite leaves no temp file beside them.
func TestWriteReplacesWholeOrNotAtAll(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "results.json")
	if err := Write(path, sampleRun(190, Pass)); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(path)
	bad := sampleRun(150, Fail)
	bad.Checks[0].Status = ""
	if err := Write(path, bad); err == nil {
		t.Fatal("an invalid run was written")
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
		t.Fatal("a refused write changed the results on disk")
	}
	if err := Write(path, sampleRun(150, Fail)); err != nil {
		t.Fatal(err)
	}
	if r, err := Read(path); err != nil || r.Checks[0].Measured[0].Value != 150 {
		t.Fatalf("rewrite: %v %+v", err, r.Checks)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Fatalf("files beside the results: %v", entries)
	}
}

func TestRenderers(t *testing.T) {
	r := sampleRun(150, Fail)
	var tb, mdb, jb bytes.Buffer
	if err := Table(&tb, r); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"FAIL", "bandwidth/write", "write_1MiB_avg=150 Gb/s (>= 180 Gb/s)", "fix: check link", "NOT-RUN", "NOT PASSED",
		"measurement    2 × total   10.00 s", "pod start      4 × total    9.50 s  max   3.25 s"} {
		if !strings.Contains(tb.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, tb.String())
		}
	}
	if err := Markdown(&mdb, r); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(mdb.String(), "| ❌ fail | bandwidth/write |") || !strings.Contains(mdb.String(), "## Evidence") ||
		!strings.Contains(mdb.String(), "| pod start | 4 | 9.50 | 3.25 |") {
		t.Errorf("markdown:\n%s", mdb.String())
	}
	if err := JUnit(&jb, r); err != nil {
		t.Fatal(err)
	}
	var parsed junitSuites
	if err := xml.Unmarshal(jb.Bytes(), &parsed); err != nil {
		t.Fatal(err)
	}
	s := parsed.Suites[0]
	// memlock's not-run was not allowed: a failure, never a skip.
	if s.Tests != 2 || s.Failures != 2 || s.Skipped != 0 || s.Cases[1].Failure == nil {
		t.Fatalf("junit %+v", s)
	}
}

func TestDiffMarksRegressions(t *testing.T) {
	base, now := sampleRun(195, Pass), sampleRun(170, Fail)
	deltas := Diff(base, now, 0.05)
	if reg := deltas.Regressions(); reg != 2 { // the status flip and the 12.8% drop
		t.Fatalf("%d regressions in %+v", reg, deltas)
	}
	if d := Diff(base, sampleRun(192, Pass), 0.05); d.Regressions() != 0 {
		t.Fatalf("1.5%% drop within tolerance flagged: %+v", d)
	}
	missing := sampleRun(195, Pass)
	missing.Checks[0].Measured = nil
	found := false
	for _, d := range Diff(base, missing, 0.05).Deltas {
		if d.Note == "missing in this run" && d.Regression {
			found = true
		}
	}
	if !found {
		t.Fatal("a measurement missing from the new run is not a regression")
	}
	var buf bytes.Buffer
	if err := DiffTable(&buf, deltas); err != nil || !strings.Contains(buf.String(), "REGRESSION") {
		t.Fatalf("%v\n%s", err, buf.String())
	}
}

// A passing check's evidence stays out of the reports unless the check says
// it is worth reading (a disruption's timeline); then Markdown and JUnit
// both carry it.
func TestShowEvidenceOnPass(t *testing.T) {
	r := Run{Schema: Schema, RunID: "r", Checks: []Check{
		{ID: "bandwidth/write", Nodes: []string{"a"}, Status: Pass, Evidence: []string{"quiet detail"}},
		{ID: "disruptive/nfs-stall", Nodes: []string{"b"}, Status: Pass, ShowEvidence: true, Evidence: []string{"MOFED pod x deleted at T; new pod Ready at T+31 s"}},
	}}
	var mdb, jb bytes.Buffer
	if err := Markdown(&mdb, r); err != nil {
		t.Fatal(err)
	}
	md := mdb.String()
	if !strings.Contains(md, "### disruptive/nfs-stall") || !strings.Contains(md, "new pod Ready at T+31 s") {
		t.Errorf("markdown lacks the passing check's timeline:\n%s", md)
	}
	if strings.Contains(md, "quiet detail") {
		t.Errorf("markdown shows a passing check's evidence that did not ask for it:\n%s", md)
	}
	if err := JUnit(&jb, r); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(jb.String(), "new pod Ready at T+31 s") || strings.Contains(jb.String(), "quiet detail") {
		t.Errorf("junit:\n%s", jb.String())
	}
}

// A gzip-compressed results file (the in-cluster ConfigMap's
// results.json.gz) reads like the plain one, whatever its name; garbage
// after the gzip header is an error naming the input.
func TestDecodeGzip(t *testing.T) {
	r := Run{Schema: Schema, RunID: "gz", Checks: []Check{{ID: "memlock/rlimit", Nodes: []string{"n"}, Status: Pass}}}
	plain, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var z bytes.Buffer
	zw := gzip.NewWriter(&z)
	_, _ = zw.Write(plain)
	_ = zw.Close()
	for name, b := range map[string][]byte{"plain.json": plain, "results.json.gz": z.Bytes(), "no-suffix": z.Bytes()} {
		got, err := Decode(name, b)
		if err != nil || got.RunID != "gz" || len(got.Checks) != 1 {
			t.Errorf("%s: %+v %v", name, got, err)
		}
	}
	if _, err := Decode("standard input", append([]byte{0x1f, 0x8b}, "junk"...)); err == nil || !strings.Contains(err.Error(), "standard input: gzip") {
		t.Errorf("bad gzip: %v", err)
	}
}
