package ncclbench

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fakeBinary writes an executable nccl-tests stand-in into a temporary
// directory: it records its arguments and environment in files, prints
// $OUTPUT (a real nccl-tests output from workloads/nccl/testdata), then
// $EXTRA, and exits with $EXIT.
func fakeBinary(t *testing.T, name string) (path, argsFile string) {
	t.Helper()
	dir := t.TempDir()
	path = filepath.Join(dir, name)
	argsFile = filepath.Join(dir, "args")
	script := `#!/bin/sh
printf '%s\n' "$@" > "` + argsFile + `"
echo "NCCL_DEBUG=$NCCL_DEBUG" >> "` + argsFile + `"
[ -n "$SLEEP" ] && exec sleep "$SLEEP"
[ -n "$OUTPUT" ] && cat "$OUTPUT"
[ -n "$EXTRA" ] && printf '%s\n' "$EXTRA" >&2
exit ${EXIT:-0}
`
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return path, argsFile
}

func testdataPath(t *testing.T, name string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("..", "nccl", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestRunBinaryOK(t *testing.T) {
	bin, argsFile := fakeBinary(t, "alltoall_perf")
	out := testdataPath(t, "alltoall_1rank_287.txt")
	args := []string{"-b", "32M", "-e", "32M", "-i", "1048576", "-g", "1"}
	table, raw, err := RunBinary(context.Background(), bin, args, []string{"OUTPUT=" + out, "NCCL_DEBUG=INFO"})
	if err != nil {
		t.Fatal(err)
	}
	want, _ := os.ReadFile(out)
	if raw != string(want) {
		t.Errorf("raw output differs from what the binary printed:\n%s", raw)
	}
	if len(table.Rows) != 1 || table.Rows[0].Size != 33554432 || !table.HasAvgBusBW || table.Params.MinBytes != 33554432 {
		t.Errorf("table: %+v", table)
	}
	got, _ := os.ReadFile(argsFile)
	if string(got) != strings.Join(args, "\n")+"\nNCCL_DEBUG=INFO\n" {
		t.Errorf("the binary got %q", got)
	}
	// 2021 nccl-tests: the in-place "error" column of alltoall holds a
	// deviation (1e+00) that nccl-tests itself did not count: the
	// "Out of bounds values : 0 OK" footer decides.
	if _, _, err := RunBinary(context.Background(), bin, nil, []string{"OUTPUT=" + testdataPath(t, "alltoall_64ranks_78.txt")}); err != nil {
		t.Errorf("old error column: %v", err)
	}
}

func TestRunBinaryFailures(t *testing.T) {
	bin, _ := fakeBinary(t, "all_gather_perf")
	tmp := t.TempDir()
	wrongCol := filepath.Join(tmp, "wrong.txt")
	orig, _ := os.ReadFile(testdataPath(t, "alltoall_1rank_287.txt"))
	mod := strings.Replace(string(orig), "0.00      0     0.78", "0.00     12     0.78", 1)
	if mod == string(orig) {
		t.Fatal("test data edit did not apply")
	}
	if err := os.WriteFile(wrongCol, []byte(mod), 0o644); err != nil {
		t.Fatal(err)
	}
	headerOnly := filepath.Join(tmp, "header.txt")
	os.WriteFile(headerOnly, []byte("# nThread 1 nGpus 1 minBytes 8 maxBytes 8 step: 2(factor) warmup iters: 1 iters: 20 agg iters: 1 validation: 1 graph: 0\n#\n"), 0o644)
	badRow := filepath.Join(tmp, "bad.txt")
	os.WriteFile(badRow, []byte("           8             2     float     sum      -1    12.90    x.yz    0.00      0    12.87    0.00    0.00      0\n"), 0o644)

	cases := []struct {
		name      string
		env       []string
		cause     BinaryCause
		exit      int
		rows      int
		inMessage string
	}{
		{"out of bounds", []string{"OUTPUT=" + testdataPath(t, "allgather_pre2020_37.txt")}, CauseWrongData, 0, 1, "out of bounds values: 2"},
		{"#wrong column", []string{"OUTPUT=" + wrongCol}, CauseWrongData, 0, 1, "size 33554432 out-of-place #wrong 12"},
		{"no footer", []string{"OUTPUT=" + testdataPath(t, "allreduce_2.20.0_gb10_pr103.txt")}, CauseTruncated, 0, 4, "before the 'Avg bus bandwidth' footer"},
		{"NCCL failure", []string{"OUTPUT=" + testdataPath(t, "allreduce_2.20.0_gb10_pr103.txt"), "EXIT=2",
			"EXTRA=spark-d708: Test NCCL failure common.cu:1057 'internal error - please report this issue to the NCCL developers / '"}, CauseNCCLFailure, 2, 4, "Test NCCL failure common.cu:1057"},
		{"exit status", []string{"OUTPUT=" + testdataPath(t, "alltoall_1rank_287.txt"), "EXIT=3", "EXTRA=Invalid number of GPUs: 8 requested but only 1 were found."}, CauseExitStatus, 3, 1, "Invalid number of GPUs"},
		{"no rows", []string{"OUTPUT=" + headerOnly}, CauseNoResults, 0, 0, "without a result row"},
		{"unparsable", []string{"OUTPUT=" + badRow}, CauseUnparsable, 0, 0, "not an nccl-tests table"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			table, raw, err := RunBinary(context.Background(), bin, []string{"-g", "8"}, tc.env)
			var be *BinaryError
			if !errors.As(err, &be) {
				t.Fatalf("error %v, want a *BinaryError", err)
			}
			if be.Cause != tc.cause || be.ExitCode != tc.exit || len(table.Rows) != tc.rows || raw == "" {
				t.Errorf("cause %s exit %d rows %d, want %s %d %d", be.Cause, be.ExitCode, len(table.Rows), tc.cause, tc.exit, tc.rows)
			}
			msg := err.Error()
			if !strings.Contains(msg, tc.inMessage) || !strings.Contains(msg, bin) || !strings.Contains(msg, "-g 8") || be.Fix == "" {
				t.Errorf("message %q lacks %q, the binary or its arguments", msg, tc.inMessage)
			}
		})
	}
}

func TestRunBinaryMissing(t *testing.T) {
	notExec := filepath.Join(t.TempDir(), "all_reduce_perf")
	os.WriteFile(notExec, []byte("#!/bin/sh\n"), 0o644)
	cases := []struct {
		path  string
		cause BinaryCause
		want  string
	}{
		{"/nonexistent/build/all_reduce_perf", CauseNotFound, "build NVIDIA/nccl-tests into the image"},
		{"no_such_nccl_perf_binary", CauseNotFound, "put that build/ directory on PATH"},
		{notExec, CauseStart, "chmod +x"},
	}
	for _, tc := range cases {
		_, raw, err := RunBinary(context.Background(), tc.path, []string{"-b", "8"}, nil)
		var be *BinaryError
		if !errors.As(err, &be) || be.Cause != tc.cause || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), tc.path) || raw != "" {
			t.Errorf("%s: %v, want cause %s and %q", tc.path, err, tc.cause, tc.want)
		}
	}
}

func TestRunBinaryCancelled(t *testing.T) {
	bin, _ := fakeBinary(t, "all_reduce_perf")
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, _, err := RunBinary(ctx, bin, nil, []string{"SLEEP=30"})
	var be *BinaryError
	if !errors.As(err, &be) || be.Cause != CauseCancelled || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("error %v, want a cancelled *BinaryError", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("took %s to stop", d)
	}
}

func TestShellQuote(t *testing.T) {
	got := commandLine("/opt/nccl tests/all_reduce_perf", []string{"-b", "8", "-e", "128M"}, []string{"NCCL_DEBUG=INFO", "X=it's"})
	want := `NCCL_DEBUG=INFO 'X=it'\''s' '/opt/nccl tests/all_reduce_perf' -b 8 -e 128M`
	if got != want {
		t.Errorf("%s\nwant %s", got, want)
	}
}
