package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmasuite/rdmasuite/workloads/ncclbench"
	"github.com/rdmasuite/rdmasuite/workloads/probeout"
)

// fakeNCCLTests is an nccl-tests stand-in that prints a real nccl-tests
// output (workloads/nccl/testdata, sources cited there) and exits $EXIT.
func fakeNCCLTests(t *testing.T, output string) string {
	t.Helper()
	src, err := filepath.Abs(filepath.Join("..", "..", "workloads", "nccl", "testdata", output))
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "all_reduce_perf")
	script := "#!/bin/sh\n[ \"$NCCL_DEBUG\" = INFO ] || echo 'NCCL_DEBUG not set' >&2\ncat '" + src + "'\nexit ${EXIT:-0}\n"
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return bin
}

// A complete table passes with every row in the envelope; a table cut
// before its footers, wrong data, a missing binary or no binary at all
// never do, and say why in the envelope.
func TestNCCLTestsCommand(t *testing.T) {
	run := func(args ...string) (ncclTestsResult, *probeout.Error, string, error) {
		var out, errOut bytes.Buffer
		err := ncclTests(context.Background(), args, &out, &errOut)
		var res ncclTestsResult
		perr, perrParse := probeout.ParseError(out.String(), ncclTestsProbe, &res)
		if perrParse != nil {
			t.Fatalf("no envelope (%v) in %q", perrParse, out.String())
		}
		return res, perr, errOut.String(), err
	}

	res, perr, stderr, err := run(fakeNCCLTests(t, "alltoall_1rank_287.txt"), "-b", "32M", "-e", "32M", "-g", "1")
	if err != nil || perr != nil || res.Failure != nil || len(res.Table.Rows) != 1 || !res.Table.HasAvgBusBW {
		t.Fatalf("complete table: err %v perr %v %+v", err, perr, res)
	}
	if !strings.Contains(stderr, "Avg bus bandwidth") || strings.Contains(stderr, "NCCL_DEBUG not set") {
		t.Errorf("stderr must carry the binary's own output, run with NCCL_DEBUG=INFO: %q", stderr)
	}

	res, perr, _, err = run(fakeNCCLTests(t, "allreduce_2.20.0_gb10_pr103.txt"))
	if !errors.Is(err, errCheckFailed) || perr != nil || res.Failure == nil || res.Failure.Cause != ncclbench.CauseTruncated || len(res.Table.Rows) != 4 {
		t.Fatalf("truncated: err %v perr %v %+v", err, perr, res.Failure)
	}
	res, _, _, err = run(fakeNCCLTests(t, "allgather_pre2020_37.txt"))
	if !errors.Is(err, errCheckFailed) || res.Failure == nil || res.Failure.Cause != ncclbench.CauseWrongData || res.Failure.Fix == "" {
		t.Fatalf("wrong data: err %v %+v", err, res.Failure)
	}

	_, perr, _, err = run(filepath.Join(t.TempDir(), "no_such_perf"))
	if err == nil || errors.Is(err, errCheckFailed) || perr == nil || perr.Kind != probeout.KindUsage || !strings.Contains(perr.Message, "not found") {
		t.Fatalf("missing binary: err %v perr %+v", err, perr)
	}
	_, perr, _, err = run()
	if err == nil || perr == nil || perr.Kind != probeout.KindUsage || !strings.Contains(perr.Message, "give the nccl-tests binary") {
		t.Fatalf("no binary: err %v perr %+v", err, perr)
	}
}
