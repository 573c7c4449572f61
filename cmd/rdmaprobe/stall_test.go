package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rdmasuite/rdmasuite/workloads/probeout"
	"github.com/rdmasuite/rdmasuite/workloads/stall"
)

func TestStallBadFlagsAreUsageErrors(t *testing.T) {
	dir := t.TempDir()
	for name, args := range map[string][]string{
		"no mode":          nil,
		"unknown mode":     {"scribble"},
		"unknown flag":     {"write", "--dir", dir, "--writer-id", "w1", "--bogus"},
		"unaligned direct": {"write", "--dir", dir, "--writer-id", "w1", "--durability", "direct", "--record-bytes", "1000"},
		"tiny record":      {"write", "--dir", dir, "--writer-id", "w1", "--record-bytes", "32"},
		"bad durability":   {"write", "--dir", dir, "--writer-id", "w1", "--durability", "fsync-every=0"},
		"no writer id":     {"write", "--dir", dir},
		"no dir":           {"read", "--writer-id", "w1"},
		"read durability":  {"read", "--dir", dir, "--writer-id", "w1", "--durability", "direct"},
		"threshold":        {"write", "--dir", dir, "--writer-id", "w1", "--interval", "2s"},
		"positional":       {"verify", "--dir", dir, "--writer-id", "w1", "extra"},
		"ack two writers":  {"verify", "--dir", dir, "--writer-id", "a,b", "--acknowledged", "3"},
		"stop nothing":     {"stop"},
	} {
		var out, errb bytes.Buffer
		err := stallMain(context.Background(), args, &out, &errb)
		var perr *probeout.Error
		if !errors.As(err, &perr) || perr.Kind != probeout.KindUsage {
			t.Errorf("%s: error %v, want a usage error", name, err)
			continue
		}
		var res stall.Result
		got, perr2 := probeout.ParseError(out.String(), stall.ProbeName, &res)
		if perr2 != nil || got == nil || got.Kind != probeout.KindUsage {
			t.Errorf("%s: envelope %q: %v %v", name, out.String(), got, perr2)
		}
	}
	var out bytes.Buffer
	err := stallMain(context.Background(), []string{"write", "--dir", dir, "--writer-id", "w1", "--durability", "direct", "--record-bytes", "1000"}, &out, &bytes.Buffer{})
	if !strings.Contains(err.Error(), "multiple of 4096") || !strings.Contains(err.Error(), "--record-bytes 4096") {
		t.Errorf("message does not name the fix: %v", err)
	}
}

// TestStallCLIRoundTrip: write until `stall stop`, decode the envelope into
// stall.Result, verify from the sidecar, corrupt a record and expect exit
// status 3's error naming it.
func TestStallCLIRoundTrip(t *testing.T) {
	dir := t.TempDir()
	go func() {
		time.Sleep(300 * time.Millisecond)
		var out bytes.Buffer
		if err := stallMain(context.Background(), []string{"stop", "--dir", dir, "--writer-id", "node-a"}, &out, &bytes.Buffer{}); err != nil {
			t.Error(err)
		}
		var res stall.Result
		if err := probeout.Parse(out.String(), stall.ProbeName, &res); err != nil || res.Mode != stall.ModeStop || res.StopFile != stall.StopPath(dir, "node-a") {
			t.Errorf("stop envelope %+v %v", res, err)
		}
	}()
	var out, errb bytes.Buffer
	args := []string{"write", "--dir", dir, "--writer-id", "node-a", "--interval", "2ms", "--durability", "fsync-every=2", "--stall-threshold", "500ms"}
	if err := stallMain(context.Background(), args, &out, &errb); err != nil {
		t.Fatalf("write: %v\n%s", err, errb.String())
	}
	var res stall.Result
	if err := probeout.Parse(out.String(), stall.ProbeName, &res); err != nil {
		t.Fatal(err)
	}
	if res.Mode != stall.ModeWrite || res.WriterID != "node-a" || res.Durability != "fsync-every=2" || res.StoppedBy != stall.StoppedByStopFile ||
		res.Acknowledged < 2 || res.Acknowledged%2 != 0 || res.Ops != int(res.Acknowledged/2) || res.StartedAt.IsZero() || res.EndedAt.Before(res.StartedAt) ||
		res.IntervalMs != 2 || res.StallThresholdMs != 500 || res.FS == nil || res.Verification == nil || !res.Verification.OK || res.LongestGap == nil {
		t.Fatalf("%+v\n%s", res, out.String())
	}
	if !strings.Contains(errb.String(), "stall: writing") {
		t.Errorf("stderr %q", errb.String())
	}

	out.Reset()
	if err := stallMain(context.Background(), []string{"verify", "--dir", dir, "--writer-id", "node-a"}, &out, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	var vres stall.Result
	if err := probeout.Parse(out.String(), stall.ProbeName, &vres); err != nil || !vres.Verification.OK || vres.Verification.Acknowledged != res.Acknowledged {
		t.Fatalf("verify %+v %v", vres.Verification, err)
	}

	path := stall.RecordPath(dir, "node-a")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	data[4096+70] ^= 1
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	err = stallMain(context.Background(), []string{"verify", "--dir", dir, "--writer-id", "node-a"}, &out, &bytes.Buffer{})
	if !errors.Is(err, errCheckFailed) || !strings.Contains(err.Error(), "slot 1 (byte 4096) torn") {
		t.Fatalf("corrupt verify: %v", err)
	}
	if err := probeout.Parse(out.String(), stall.ProbeName, &vres); err != nil || vres.Verification.OK || vres.Verification.FirstBad.Slot != 1 {
		t.Fatalf("%+v %v", vres.Verification, err)
	}

	// --remove-on-ok keeps data that failed to verify, and deletes the
	// files and their directory once everything verifies.
	out.Reset()
	_ = stallMain(context.Background(), []string{"verify", "--dir", dir, "--writer-id", "node-a", "--remove-on-ok"}, &out, &bytes.Buffer{})
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("corrupt data was removed: %v", err)
	}
	data[4096+70] ^= 1
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if err := stallMain(context.Background(), []string{"verify", "--dir", dir, "--writer-id", "node-a", "--remove-on-ok"}, &out, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	vres = stall.Result{}
	if err := probeout.Parse(out.String(), stall.ProbeName, &vres); err != nil || !vres.Verification.OK || len(vres.Removed) != 4 || vres.RemoveError != "" {
		t.Fatalf("removed %v (%s) %v", vres.Removed, vres.RemoveError, err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the verified round's directory is still there: %v", err)
	}
}

// stop --signal-pid sends SIGTERM without touching the volume (a hung mount
// would hang the stop file's creation), and reports a dead pid as an error.
func TestStallStopSignal(t *testing.T) {
	got := make(chan os.Signal, 1)
	signal.Notify(got, syscall.SIGTERM)
	defer signal.Stop(got)
	var out bytes.Buffer
	dir := filepath.Join(t.TempDir(), "no-such-volume")
	if err := stallMain(context.Background(), []string{"stop", "--signal-pid", strconv.Itoa(os.Getpid()), "--dir", dir}, &out, &bytes.Buffer{}); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	select {
	case <-got:
	case <-time.After(5 * time.Second):
		t.Fatal("no SIGTERM arrived")
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the signal stop touched the volume: %v", err)
	}
	out.Reset()
	if err := stallMain(context.Background(), []string{"stop", "--signal-pid", "999999999"}, &out, &bytes.Buffer{}); err == nil {
		t.Fatal("SIGTERM to a pid that does not exist succeeded")
	}
	var r stall.Result
	if perr, err := probeout.ParseError(out.String(), stall.ProbeName, &r); err != nil || perr == nil || !strings.Contains(perr.Message, "SIGTERM to pid") {
		t.Fatalf("%v %v %s", perr, err, out.String())
	}
}
