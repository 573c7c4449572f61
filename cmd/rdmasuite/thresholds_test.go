package main

import (
	"bytes"
	"fmt"
	"github.com/rdmasuite/rdmasuite/thresholds"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmasuite/rdmasuite/reports"
)

const overlaySKU = `schema: rdmasuite.io/thresholds/v1
skus:
  - name: A100/HDR-200
    match: {gpuProduct: ["NVIDIA-A100-*"]}
    linkRateGbps: {value: 200, source: ours}
    portsPerNode: {value: 4, source: ours}
    write: {gbps: 150, source: ours}
    read: {gbps: 150, source: ours}
    gpuDirectWrite: {fractionOfLink: 0.8, source: ours}
    ncclAllReduceBusBw: {fractionOfAggregate: 0.8, source: ours}
    maxNFSStallSec: {value: 60, source: ours}
    minMemlockBytes: {value: 1048576, source: ours}
`

func TestThresholdsOverlay(t *testing.T) {
	dir := t.TempDir()
	over := filepath.Join(dir, "skus.yaml")
	os.WriteFile(over, []byte(overlaySKU), 0o644)
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte(strings.Replace(overlaySKU, "    read: {gbps: 150, source: ours}\n", "", 1)), 0o644)

	var out, errb bytes.Buffer
	if code := run([]string{"thresholds", "check", "--overlay", over}, &out, &errb); code != reports.ExitPassed {
		t.Fatalf("check: exit %d: %s", code, errb.String())
	}
	builtin, _ := thresholds.Load("")
	if !strings.Contains(out.String(), fmt.Sprintf("(built in) + %s (overlay): ok, %d SKUs", over, len(builtin.SKUs))) || !strings.Contains(out.String(), "replaces A100/HDR-200; adds none") ||
		!strings.Contains(out.String(), "note: overlay SKU A100/HDR-200 leaves out writeLatencyUs, readLatencyUs, sendLatencyUs") {
		t.Errorf("check:\n%s", out.String())
	}
	out.Reset()
	if code := run([]string{"thresholds", "list", "--overlay", over}, &out, &errb); code != reports.ExitPassed {
		t.Fatalf("list: exit %d: %s", code, errb.String())
	}
	lines := strings.Split(out.String(), "\n")
	if !strings.HasPrefix(lines[0], "A100/HDR-200") || !strings.Contains(lines[0], "write ≥ 150 Gb/s") || !strings.HasSuffix(lines[0], "(overlay "+over+")") ||
		strings.Contains(lines[0], "latency") || !strings.Contains(out.String(), "H100/NDR-400") || !strings.Contains(out.String(), "send latency ≤ 2.5 µs") {
		t.Errorf("list: the overlay's SKU first, marked:\n%s", out.String())
	}
	skuLines := 0
	for _, l := range lines {
		if strings.HasPrefix(l, "A100/HDR-200 ") {
			skuLines++
		}
	}
	if skuLines != 1 || strings.Count(out.String(), "(overlay ") != 1 {
		t.Errorf("list:\n%s", out.String())
	}
	// The SKUs whose optional keys are unset, and the checks that are
	// then not-run there, from the paired features' definitions.
	n := len(builtin.SKUs)
	for _, want := range []string{
		fmt.Sprintf("not set: writeLatencyUs on 1 of %d SKUs (A100/HDR-200): latency/write checks are not-run there", n),
		fmt.Sprintf("not set: sendLatencyUs on 1 of %d SKUs (A100/HDR-200): latency/send checks are not-run there", n),
		fmt.Sprintf("not set: latencyUnderLoadFactor on %d of %d SKUs (all but soft-roce-bed): latency-load/* checks are not-run there", n-1, n),
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("list lacks %q:\n%s", want, out.String())
		}
	}
	errb.Reset()
	if code := run([]string{"thresholds", "check", "--overlay", bad}, &out, &errb); code != reports.ExitBroken ||
		!strings.Contains(errb.String(), bad+":3: sku \"A100/HDR-200\": read is missing") || !strings.Contains(errb.String(), "not merged field by field") {
		t.Errorf("bad overlay: exit %d: %s", code, errb.String())
	}
	errb.Reset()
	if code := run([]string{"thresholds", "check", over, over}, &out, &errb); code != reports.ExitBroken || !strings.Contains(errb.String(), "--overlay") {
		t.Errorf("two files: exit %d: %s", code, errb.String())
	}
}

// thresholds list names a floor per message size beside the general one:
// A100's 64 KiB floor judges 64 KiB, not 95 % of the link.
func TestThresholdsListShowsFloorsPerSize(t *testing.T) {
	var out strings.Builder
	if err := runThresholds([]string{"list"}, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "A100/HDR-200       link  200 Gb/s × 8 ports  write ≥ 190 Gb/s (64KiB ≥ 180)  read ≥ 190 Gb/s (64KiB ≥ 180)") {
		t.Fatalf("list:\n%s", out.String())
	}
}
