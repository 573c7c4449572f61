package progress

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Every line and status reaches the file at once (a CI log tails it while
// the run goes); the terminal shows passing items on one refreshing line
// and keeps everything else.
func TestLogFileAndTerminal(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "results")
	var term bytes.Buffer
	l, err := Open(dir, "r1", &term)
	if err != nil {
		t.Fatal(err)
	}
	l.Line("plan: 2 rounds")
	l.Status("pair 1/3 pass")
	mid, _ := os.ReadFile(filepath.Join(dir, "progress.log"))
	if string(mid) != "plan: 2 rounds\npair 1/3 pass\n" {
		t.Fatalf("file before close (must be written as it goes): %q", mid)
	}
	l.Status("pair 2/3 pass")
	l.Line("pair 3/3: 1 fail")
	l.Status("round 2")
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(l.Path())
	if string(got) != "plan: 2 rounds\npair 1/3 pass\npair 2/3 pass\npair 3/3: 1 fail\nround 2\n" {
		t.Errorf("file: %q", got)
	}
	want := "plan: 2 rounds\n\r\x1b[Kpair 1/3 pass\r\x1b[Kpair 2/3 pass\r\x1b[Kpair 3/3: 1 fail\n\r\x1b[Kround 2\n"
	if term.String() != want {
		t.Errorf("terminal:\n%q\nwant\n%q", term.String(), want)
	}
	if !strings.HasSuffix(l.Path(), "progress-r1.log") {
		t.Errorf("path %s", l.Path())
	}
}

// Without a terminal nothing is written there; a directory that cannot be
// made is an error, and the Log still works without its file.
func TestLogWithoutTerminalOrFile(t *testing.T) {
	l, err := Open(t.TempDir(), "r2", nil)
	if err != nil {
		t.Fatal(err)
	}
	l.Status("x")
	l.Line("y")
	_ = l.Close()
	if b, _ := os.ReadFile(l.Path()); string(b) != "x\ny\n" {
		t.Errorf("file %q", b)
	}
	blocker := filepath.Join(t.TempDir(), "file")
	_ = os.WriteFile(blocker, nil, 0o644)
	var term bytes.Buffer
	l, err = Open(filepath.Join(blocker, "sub"), "r3", &term)
	if err == nil {
		t.Fatal("a report dir under a file must be an error")
	}
	l.Line("still shown")
	if term.String() != "still shown\n" || l.Path() != "" {
		t.Errorf("term %q path %q", term.String(), l.Path())
	}
	_ = l.Close()
}

// A nil Log (a --dry-run) takes every call and writes nothing.
func TestNilLog(t *testing.T) {
	var l *Log
	l.Line("x")
	l.Status("y")
	l.EndStatus()
	if l.Path() != "" || l.Close() != nil {
		t.Error("nil log")
	}
}
