package ncclbench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"slices"
	"strings"
	"time"

	"github.com/rdmasuite/rdmasuite/workloads/nccl"
)

// BinaryCause says why RunBinary failed; callers decide on it, never on the
// wording of the message.
type BinaryCause string

// The causes, in the order RunBinary checks them: the first that applies
// is reported.
const (
	CauseNotFound    BinaryCause = "binary-not-found"  // no such file, or not on PATH
	CauseStart       BinaryCause = "binary-start"      // exists but could not be started
	CauseCancelled   BinaryCause = "cancelled"         // the context ended first
	CauseNCCLFailure BinaryCause = "nccl-failure"      // "Test NCCL failure" / "Test CUDA failure" lines
	CauseWrongData   BinaryCause = "wrong-data"        // out of bounds values > 0, or a #wrong > 0
	CauseExitStatus  BinaryCause = "exit-status"       // non-zero exit without a reason above
	CauseUnparsable  BinaryCause = "unparsable-output" // nccl.ParseNCCLTests failed
	CauseNoResults   BinaryCause = "no-results"        // no result row
	CauseTruncated   BinaryCause = "truncated-output"  // no "Avg bus bandwidth" footer
)

// BinaryError is RunBinary's error: which binary, the command line to
// paste and rerun, why, and the fix.
type BinaryError struct {
	Binary   string // as given to RunBinary
	Command  string // env additions, binary and arguments, shell-quoted
	Cause    BinaryCause
	ExitCode int // the exit status; -1 when it did not exit (not started, killed by a signal)
	Detail   string
	Fix      string
	Err      error // the underlying error, if any
}

func (e *BinaryError) Error() string {
	return fmt.Sprintf("nccl-tests %s: %s (%s); command: %s; fix: %s", e.Binary, e.Detail, e.Cause, e.Command, e.Fix)
}

func (e *BinaryError) Unwrap() error { return e.Err }

// waitDelay bounds the wait for the output pipes after the context kills
// the binary (a child process may hold them open).
const waitDelay = 5 * time.Second

// RunBinary runs one of the operator's nccl-tests binaries (single node,
// e.g. "all_reduce_perf" with args -b 8 -e 128M -f 2 -g 8) and parses its
// output with nccl.ParseNCCLTests. path is a file path, or a name looked up
// on this process's PATH. env entries are added to this process's
// environment (a later entry wins: NCCL_DEBUG=INFO, CUDA_VISIBLE_DEVICES).
// stdout and stderr are captured together, in the order written, and
// returned as raw.
//
// The table and raw output come back whatever happened, as far as they
// exist. The error is nil only for a run that exited 0, printed at least
// one result row and nccl-tests' footers, reported no failed call and no
// wrong data; otherwise it is a *BinaryError. Wrong data is the "Out of
// bounds values" footer above 0, or a #wrong column above 0 (the "error"
// column of versions before August 2022 holds a deviation, not a count,
// and is left to the footer).
func RunBinary(ctx context.Context, path string, args []string, env []string) (nccl.Table, string, error) {
	be := &BinaryError{Binary: path, Command: commandLine(path, args, env), ExitCode: -1}
	resolved, err := exec.LookPath(path)
	if err != nil {
		be.Err = err
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist) {
			be.Cause = CauseNotFound
			be.Detail = fmt.Sprintf("binary %q not found (%v)", path, err)
			be.Fix = "build NVIDIA/nccl-tests into the image (make MPI=0 for one node, MPI=1 for mpirun; the binaries land in build/) and pass the binary's full path, or put that build/ directory on PATH"
		} else {
			be.Cause = CauseStart
			be.Detail = fmt.Sprintf("cannot use %q: %v", path, err)
			be.Fix = "make the file executable (chmod +x) and check that it is an nccl-tests *_perf binary built for this machine"
		}
		return nccl.Table{}, "", be
	}
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, resolved, args...)
	if len(env) > 0 {
		cmd.Env = append(os.Environ(), env...)
	}
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.WaitDelay = waitDelay
	start := time.Now()
	runErr := cmd.Run()
	elapsed := time.Since(start).Round(time.Millisecond)
	raw := out.String()
	table, parseErr := nccl.ParseNCCLTests(strings.NewReader(raw))

	var exitErr *exec.ExitError
	exited := errors.As(runErr, &exitErr)
	if cmd.ProcessState != nil {
		be.ExitCode = cmd.ProcessState.ExitCode()
	}
	switch {
	case ctx.Err() != nil:
		be.Cause, be.Err = CauseCancelled, ctx.Err()
		be.Detail = fmt.Sprintf("stopped after %s: %v; %s", elapsed, ctx.Err(), lastLines(raw, 3))
		be.Fix = "raise the time limit or shrink the sweep (-e, -n); a run that never ends usually waits for a peer or a hung GPU (rerun with NCCL_DEBUG=INFO to see where)"
	case runErr != nil && !exited:
		be.Cause, be.Err = CauseStart, runErr
		be.Detail = fmt.Sprintf("could not run %s: %v", resolved, runErr)
		be.Fix = "check that the file is an nccl-tests *_perf binary built for this machine and that its libraries (libnccl, libcudart) are found (ldd)"
	case len(table.Failures) > 0:
		be.Cause, be.Err = CauseNCCLFailure, runErr
		be.Detail = fmt.Sprintf("a call failed: %s", strings.Join(table.Failures, " | "))
		be.Fix = "rerun with NCCL_DEBUG=INFO (NCCL_DEBUG_SUBSYS=INIT,NET,ENV) and read the WARN lines before the failure; the usual causes are a low RLIMIT_MEMLOCK, a missing RDMA device or IPC_LOCK, or a GPU the pod was not given"
	case wrongData(table) != "":
		be.Cause, be.Err = CauseWrongData, runErr
		be.Detail = wrongData(table)
		be.Fix = "the collective delivered wrong data: rerun to see whether it repeats, then isolate the path (NCCL_P2P_DISABLE=1, NCCL_SHM_DISABLE=1, NCCL_NET_GDR_LEVEL=LOC to turn GPUDirect RDMA off) and check the GPUs and NICs (Xid errors in dmesg, PCIe ACS/IOMMU settings)"
	case runErr != nil:
		be.Cause, be.Err = CauseExitStatus, runErr
		be.Detail = fmt.Sprintf("exited with %v after %s; output ends: %s", runErr, elapsed, lastLines(raw, 5))
		be.Fix = "read the output's end: 'Invalid number of GPUs' means -g asks for more GPUs than the pod has (nvidia.com/gpu); a signal means it crashed or was killed (OOM)"
	case parseErr != nil:
		be.Cause, be.Err = CauseUnparsable, parseErr
		be.Detail = fmt.Sprintf("output is not an nccl-tests table: %v", parseErr)
		be.Fix = "check that the binary is an nccl-tests *_perf binary and that nothing else writes rows of numbers to its stdout"
	case len(table.Rows) == 0:
		be.Cause = CauseNoResults
		be.Detail = fmt.Sprintf("exited 0 without a result row; output ends: %s", lastLines(raw, 5))
		be.Fix = "check the arguments (-b ≤ -e, -g within the pod's GPUs) and the output for what stopped it"
	case !table.HasAvgBusBW:
		be.Cause = CauseTruncated
		be.Detail = fmt.Sprintf("output ends after %d rows, before the 'Avg bus bandwidth' footer", len(table.Rows))
		be.Fix = "the binary stopped before the end of its sweep: look for a crash or a kill in the output and the pod's events"
	default:
		return table, raw, nil
	}
	return table, raw, be
}

// wrongData describes the wrong data a table reports, "" when none.
func wrongData(t nccl.Table) string {
	var parts []string
	if t.HasOutOfBounds && t.OutOfBounds > 0 {
		parts = append(parts, fmt.Sprintf("out of bounds values: %d", t.OutOfBounds))
	}
	if slices.Contains(t.Columns, "#wrong") {
		for _, r := range t.Rows {
			for _, h := range []struct {
				name string
				res  nccl.Result
			}{{"out-of-place", r.OutOfPlace}, {"in-place", r.InPlace}} {
				if !h.res.WrongNA && h.res.Wrong > 0 {
					parts = append(parts, fmt.Sprintf("size %d %s #wrong %g", r.Size, h.name, h.res.Wrong))
				}
			}
		}
	}
	if len(parts) == 0 {
		return ""
	}
	if len(parts) > 6 {
		parts = append(parts[:6], fmt.Sprintf("and %d more", len(parts)-6))
	}
	return "wrong data: " + strings.Join(parts, ", ")
}

func lastLines(s string, n int) string {
	var lines []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	if len(lines) == 0 {
		return "(no output)"
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}

func commandLine(path string, args, env []string) string {
	var parts []string
	for _, e := range env {
		parts = append(parts, shellQuote(e))
	}
	parts = append(parts, shellQuote(path))
	for _, a := range args {
		parts = append(parts, shellQuote(a))
	}
	return strings.Join(parts, " ")
}

func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./=:,+@%", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
