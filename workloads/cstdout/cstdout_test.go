package cstdout

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	"github.com/ebitengine/purego"
)

// helperEnv selects what the re-executed test binary does as a "probe".
const helperEnv = "CSTDOUT_HELPER"

// cPuts prints s through C's stdout (fputs), as NCCL's debug log does.
func cPuts(t testing.TB, s string) {
	fputs, file, err := cStdout("fputs")
	if err != nil {
		t.Fatal(err)
	}
	b := append([]byte(s), 0)
	purego.SyscallN(fputs, uintptr(unsafe.Pointer(&b[0])), file)
	runtime.KeepAlive(b)
}

// TestHelperProbe is the child process; it does nothing unless asked.
func TestHelperProbe(t *testing.T) {
	mode := os.Getenv(helperEnv)
	if mode == "" {
		return // only the child process of the tests below
	}
	if mode != "undiverted" {
		if _, note, err := Divert(); err != nil || note != "" {
			fmt.Fprintf(os.Stderr, "divert: %v %s\n", err, note)
			os.Exit(9)
		}
	}
	// A C library's lines, one of them in two writes, and more than
	// a 4 KiB buffer's worth, as NCCL prints at INIT.
	for i := range 60 {
		cPuts(t, fmt.Sprintf("vm:499:502 [0] NCCL INFO line %02d %s\n", i, strings.Repeat("x", 80)))
	}
	cPuts(t, "vm:499:502 [0] NCCL INFO cut ")
	cPuts(t, "in two\n")
	fmt.Fprintln(os.Stdout, `{"schema":2,"probe":"nccl"}`)
	fmt.Fprintln(os.Stderr, "probe: go line")
	cPuts(t, "vm:499:502 [0] NCCL INFO last words\n")
	if mode == "killed" {
		// A hung world killed by its timeout: no exit handler flushes.
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
	}
	os.Exit(0)
}

func runHelper(t *testing.T, mode string) (stdout, stderr string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProbe$", "-test.v=false")
	cmd.Env = append(os.Environ(), helperEnv+"="+mode)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e // pipes: C stdio buffers fully, as in a pod
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !(mode == "killed" && errors.As(err, &ee)) {
		t.Fatalf("helper %s: %v\nstdout:\n%s\nstderr:\n%s", mode, err, o.String(), e.String())
	}
	return o.String(), e.String()
}

func TestDivertKeepsStdoutForTheEnvelope(t *testing.T) {
	stdout, stderr := runHelper(t, "diverted")
	if stdout != "{\"schema\":2,\"probe\":\"nccl\"}\n" {
		t.Errorf("stdout must hold the envelope alone, got %q", stdout)
	}
	for _, want := range []string{"NCCL INFO line 00 ", "NCCL INFO line 59 ", "NCCL INFO cut in two\n", "probe: go line\n", "NCCL INFO last words\n"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q", want)
		}
	}
	// Every line whole: each starts as a C line or the probe's own.
	for _, l := range strings.Split(strings.TrimSuffix(stderr, "\n"), "\n") {
		if !strings.HasPrefix(l, "vm:499:502 [0] NCCL INFO ") && l != "probe: go line" {
			t.Errorf("a cut or glued line on stderr: %q", l)
		}
	}
}

func TestDivertLeavesNoLineInABufferWhenKilled(t *testing.T) {
	_, stderr := runHelper(t, "killed")
	if !strings.Contains(stderr, "NCCL INFO last words\n") {
		t.Errorf("the last C line before SIGKILL was lost (still buffered); stderr ends %q", stderr[max(0, len(stderr)-200):])
	}
}

// TestUndivertedGluesTheEnvelope is the failure the package exists for:
// without Divert the envelope shares C's fully buffered stdout.
func TestUndivertedGluesTheEnvelope(t *testing.T) {
	stdout, _ := runHelper(t, "undiverted")
	if !strings.Contains(stdout, "NCCL INFO") {
		t.Fatalf("expected C's lines on stdout without Divert, got %q", stdout)
	}
	// 60 lines are more than C's 4 KiB pipe buffer: its first chunk
	// ends mid-line, and the envelope is written right behind it.
	for _, l := range strings.Split(stdout, "\n") {
		if strings.HasPrefix(l, `{"schema"`) {
			t.Fatalf("expected the envelope glued behind a cut C line, found it whole: %q", l)
		}
	}
	if !strings.Contains(stdout, `{"schema":2,"probe":"nccl"}`) {
		t.Fatalf("the envelope is missing from stdout: %q", stdout)
	}
}
