package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rdmasuite/rdmasuite/reports"
)

// calibrationRun is a passing run of 4 nodes × 4 rails of the built-in
// A100 SKU, writes at 64 KiB and 1 MiB; slow, when set, puts node-1's
// 1 MiB below the 190 Gb/s floor (failed checks).
func calibrationRun(t *testing.T, dir, id string, slow bool) string {
	t.Helper()
	run := reports.Run{Schema: reports.Schema, RunID: id, Started: time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC)}
	for n := range 4 {
		node := fmt.Sprintf("node-%d", n)
		run.Nodes = append(run.Nodes, reports.Node{Name: node, SKU: "A100/HDR-200", ThresholdsFile: "thresholds/skus.yaml (built in)"})
		for r := range 4 {
			port := fmt.Sprintf("mlx5_%d/1", r)
			large := 196 + 0.1*float64(r)
			c := reports.Check{ID: "bandwidth/write", Nodes: []string{node, "peer"}, Rail: port + "→" + port, Status: reports.Pass}
			if slow && n == 1 {
				large = 180
				c.Status, c.Diagnosis = reports.Fail, "write_1MiB_avg = 180 Gb/s, threshold >= 190 Gb/s (x)"
			}
			c.Measured = []reports.Measurement{
				{Name: "write_64KiB_avg", Node: node, Port: port, Value: 183.6 + 0.1*float64(r), Unit: "Gb/s"},
				{Name: "write_1MiB_avg", Node: node, Port: port, Value: large, Unit: "Gb/s", Threshold: &reports.Threshold{Op: ">=", Value: 190, Source: "x"}},
			}
			run.Checks = append(run.Checks, c)
		}
	}
	p := filepath.Join(dir, id+".json")
	if err := reports.Write(p, run); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestThresholdsCalibrate(t *testing.T) {
	dir := t.TempDir()
	good, slow := calibrationRun(t, dir, "run-a", false), calibrationRun(t, dir, "run-b", true)
	over := filepath.Join(dir, "calibrated.yaml")
	var out, errb bytes.Buffer
	if code := run([]string{"thresholds", "calibrate", good, "--out", over}, &out, &errb); code != reports.ExitPassed {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	for _, want := range []string{"A100/HDR-200", "64KiB", "178", "180 ", "1MiB", "190 (general)", "wrote " + over, "--thresholds-overlay " + over} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, out.String())
		}
	}
	data, _ := os.ReadFile(over)
	if !strings.Contains(string(data), "calibrated from 16 ports of runs run-a (2026-12-06)") {
		t.Errorf("overlay:\n%s", data)
	}
	out.Reset()
	if code := run([]string{"thresholds", "check", "--overlay", over}, &out, &errb); code != reports.ExitPassed || !strings.Contains(out.String(), "replaces A100/HDR-200") {
		t.Errorf("the overlay loads: exit %d %s %s", code, out.String(), errb.String())
	}
	// A run below its floor is refused unless --accept-below-floor.
	errb.Reset()
	if code := run([]string{"thresholds", "calibrate", slow, "--out", over}, &out, &errb); code != reports.ExitBroken ||
		!strings.Contains(errb.String(), "did not pass") || !strings.Contains(errb.String(), "--accept-below-floor") {
		t.Errorf("below floor: exit %d: %s", code, errb.String())
	}
	out.Reset()
	if code := run([]string{"thresholds", "calibrate", slow, "--out", over, "--accept-below-floor"}, &out, &errb); code != reports.ExitPassed ||
		!strings.Contains(out.String(), "4: node-1 mlx5_0/1, node-1 mlx5_1/1, node-1 mlx5_2/1, …") {
		t.Errorf("accepted: exit %d: %s\n%s", code, out.String(), errb.String())
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"thresholds", "calibrate", good}, "--out FILE is required"},
		{[]string{"thresholds", "calibrate", "--out", over}, "no results file"},
		{[]string{"thresholds", "calibrate", good, "--out", over, "--min-ports", "17"}, "--min-ports 16"},
		{[]string{"thresholds", "calibrate", filepath.Join(dir, "none.json"), "--out", over}, "none.json"},
	} {
		errb.Reset()
		if code := run(c.args, &out, &errb); code != reports.ExitBroken || !strings.Contains(errb.String(), c.want) {
			t.Errorf("%q: exit %d: %s", c.args, code, errb.String())
		}
	}
	out.Reset()
	if code := run([]string{"thresholds", "calibrate", "--help"}, &out, &errb); code != reports.ExitPassed ||
		!strings.Contains(out.String(), "median − max(4·1.4826·MAD, 3 % of the median)") || !strings.Contains(out.String(), "--accept-below-floor") {
		t.Errorf("help: %s", out.String())
	}
}
