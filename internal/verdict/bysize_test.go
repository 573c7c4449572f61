package verdict

import (
	"strings"
	"testing"

	"github.com/rdmasuite/rdmasuite/reports"
	"github.com/rdmasuite/rdmasuite/thresholds"
	"github.com/rdmasuite/rdmasuite/workloads/bw"
)

// bySizeSKU is A100/HDR-200 of the built-ins with floors per message size
// on write (64 KiB) and gpuDirectWrite (64 KiB and 1 MiB).
func bySizeSKU(t *testing.T) *thresholds.SKU {
	t.Helper()
	const y = `schema: rdmasuite.io/thresholds/v1
skus:
  - name: T/HDR-200
    match: {gpuProduct: ["NVIDIA-A100-*"]}
    linkRateGbps: {value: 200, source: t}
    portsPerNode: {value: 8, source: t}
    write: {fractionOfLink: 0.95, source: general, bySize: {"64KiB": {fractionOfLink: 0.9, source: small}}}
    read: {fractionOfLink: 0.95, source: general}
    gpuDirectWrite: {fractionOfLink: 0.9, source: gd, bySize: {"65536": {gbps: 170, source: gd-small}, "1MiB": {gbps: 185, source: gd-large}}}
    minMemlockBytes: {value: 1048576, source: t}
`
	s, err := thresholds.Parse("t.yaml", []byte(y))
	if err != nil {
		t.Fatal(err)
	}
	k, _ := s.Lookup("T/HDR-200")
	return k
}

// judgedOf is c's measurements that carry a threshold, by name.
func judgedOf(c reports.Check) map[string]reports.Measurement {
	out := map[string]reports.Measurement{}
	for _, m := range c.Measured {
		if m.Threshold != nil {
			out[m.Name] = m
		}
	}
	return out
}

// A size with a floor of its own is judged against it, whatever the
// larger size did: a 64 KiB figure below its floor fails the rail though
// 1 MiB passes; the largest keeps the general floor, and the source of
// each says which floor judged it.
func TestFloorPerSizeFailsA64KiBFigure(t *testing.T) {
	sizes := []int{k64, m1}
	for _, tc := range []struct {
		small, large float64
		want         reports.Status
	}{{183.6, 195, reports.Pass}, {175, 195, reports.Fail}, {183.6, 185, reports.Fail}} {
		cli, srv := pairOut(t, []string{"write"}, sizes, 1, 0, func(c, _ *bw.ProbeOutput) {
			c.Rails[0].Runs[0] = run("write", sizes, tc.small, tc.large)
		})
		in := bwInput(t, []string{"write"}, sizes, cli, srv)
		in.SKU = bySizeSKU(t)
		c := Bandwidth(in).Checks[0]
		if c.Status != tc.want {
			t.Fatalf("64KiB %g, 1MiB %g: %s, want %s: %s", tc.small, tc.large, c.Status, tc.want, c.Diagnosis)
		}
		j := judgedOf(c)
		small, large := j["write_64KiB_avg"], j["write_1MiB_avg"]
		if small.Threshold == nil || small.Threshold.Value != 180 || !strings.Contains(small.Threshold.Source, "write floor at 64KiB") ||
			!strings.Contains(small.Threshold.Source, "small") {
			t.Errorf("64 KiB judged against its own floor: %+v", small.Threshold)
		}
		if large.Threshold == nil || large.Threshold.Value != 190 || !strings.Contains(large.Threshold.Source, "bySize has none for 1MiB") ||
			!strings.Contains(large.Threshold.Source, "general") {
			t.Errorf("1 MiB judged against the general floor: %+v", large.Threshold)
		}
		if tc.small < 180 && (!strings.Contains(c.Diagnosis, "write_64KiB_avg = 175") || c.Fix != FixSlow) {
			t.Errorf("diagnosis names the 64 KiB miss: %q", c.Diagnosis)
		}
	}
}

// A size without a floor of its own that is not the largest stays
// recorded, not judged; without bySize nothing changes.
func TestSizeWithoutFloorStaysUnjudged(t *testing.T) {
	sizes := []int{4096, k64, m1}
	cli, srv := pairOut(t, []string{"write", "read"}, sizes, 1, 0, func(c, _ *bw.ProbeOutput) {
		c.Rails[0].Runs[0] = run("write", sizes, 20, 183.6, 195)
		c.Rails[0].Runs[1] = run("read", sizes, 20, 100, 195)
	})
	in := bwInput(t, []string{"write", "read"}, sizes, cli, srv)
	in.SKU = bySizeSKU(t)
	for _, c := range Bandwidth(in).Checks {
		if c.Status != reports.Pass {
			t.Fatalf("%s: %s %s", c.ID, c.Status, c.Diagnosis)
		}
		j := judgedOf(c)
		op := strings.TrimPrefix(c.ID, "bandwidth/")
		if _, ok := j[op+"_4KiB_avg"]; ok || len(c.Measured) != 3 {
			t.Errorf("%s: 4 KiB judged or a size lost: %+v", c.ID, c.Measured)
		}
		if op == "read" {
			if len(j) != 1 || j["read_1MiB_avg"].Threshold == nil || strings.Contains(j["read_1MiB_avg"].Threshold.Source, "bySize") {
				t.Errorf("read has no bySize: only 1 MiB judged, as before: %+v", c.Measured)
			}
		}
	}
}

// GPUDirect: the gpuDirectWrite floor's sizes judge both ops; a read's
// source says it is the write floor.
func TestGPUDirectFloorPerSize(t *testing.T) {
	sizes := []int{k64, m1}
	cli, srv := pairOut(t, []string{"write", "read"}, sizes, 1, 0, func(c, _ *bw.ProbeOutput) {
		c.Rails[0].Runs[0] = run("write", sizes, 171, 186)
		c.Rails[0].Runs[1] = run("read", sizes, 169, 186)
	})
	in := bwInput(t, []string{"write", "read"}, sizes, cli, srv)
	in.SKU = bySizeSKU(t)
	in.metric = &gpuDirectMetric
	got := map[string]reports.Check{}
	for _, c := range Bandwidth(in).Checks {
		got[c.ID] = c
	}
	w, r := got[GPUDirectPrefix+"write"], got[GPUDirectPrefix+"read"]
	if w.Status != reports.Pass || r.Status != reports.Fail {
		t.Fatalf("write %s (%s), read %s (%s)", w.Status, w.Diagnosis, r.Status, r.Diagnosis)
	}
	rs := judgedOf(r)["read_64KiB_avg"].Threshold
	if rs == nil || rs.Value != 170 || !strings.Contains(rs.Source, "gpuDirectWrite floor at 64KiB") || !strings.Contains(rs.Source, "no GPUDirect read floor") {
		t.Errorf("read 64 KiB: %+v", rs)
	}
	if ws := judgedOf(w)["write_1MiB_avg"].Threshold; ws == nil || ws.Value != 185 || strings.Contains(ws.Source, "no GPUDirect") {
		t.Errorf("write 1 MiB: %+v", ws)
	}
}

// The built-in HDR SKUs judge 64 KiB at 90 % of the link: the 183.6 Gb/s
// a healthy HDR port measures at 64 KiB passes, where the 95 % of the
// large sizes (190) failed it when 64 KiB was the largest size asked.
func TestBuiltInHDRFloorAt64KiB(t *testing.T) {
	for _, sizes := range [][]int{{k64}, {k64, m1}} {
		for v, want := range map[float64]reports.Status{183.6: reports.Pass, 179: reports.Fail} {
			cli, srv := pairOut(t, []string{"write"}, sizes, 1, 195, func(c, _ *bw.ProbeOutput) {
				vals := []float64{v, 195}[:len(sizes)]
				c.Rails[0].Runs[0] = run("write", sizes, vals...)
			})
			c := Bandwidth(bwInput(t, []string{"write"}, sizes, cli, srv)).Checks[0]
			j := judgedOf(c)["write_64KiB_avg"]
			if c.Status != want || j.Threshold == nil || j.Threshold.Value != 180 {
				t.Errorf("sizes %v, 64 KiB at %g: %s (%s), threshold %+v", sizes, v, c.Status, c.Diagnosis, j.Threshold)
			}
		}
	}
}
