package reports

import (
	"bytes"
	"math/rand"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	bwload "github.com/rdmasuite/rdmasuite/workloads/bw"
	"github.com/rdmasuite/rdmasuite/workloads/nccl"
)

// parseProm parses out with the reference text-format parser, strict
// (classic) name validation, and fails on any error.
func promParse(t *testing.T, out []byte) map[string]*dto.MetricFamily {
	t.Helper()
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(out))
	if err != nil {
		t.Fatalf("the exposition does not parse: %v\n%s", err, out)
	}
	return fams
}

func promText(t *testing.T, r Run) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := Prometheus(&b, r); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func promLabelMap(m *dto.Metric) map[string]string {
	out := map[string]string{}
	for _, l := range m.GetLabel() {
		out[l.GetName()] = l.GetValue()
	}
	return out
}

// series finds the one series of f whose labels include want; it fails
// when none or several match.
func promSeries(t *testing.T, f *dto.MetricFamily, want map[string]string) *dto.Metric {
	t.Helper()
	var found []*dto.Metric
next:
	for _, m := range f.GetMetric() {
		ls := promLabelMap(m)
		for k, v := range want {
			if ls[k] != v {
				continue next
			}
		}
		found = append(found, m)
	}
	if len(found) != 1 {
		t.Fatalf("%s%v: %d series match, want 1", f.GetName(), want, len(found))
	}
	return found[0]
}

func promLabelNames(m *dto.Metric) string {
	var ns []string
	for _, l := range m.GetLabel() {
		ns = append(ns, l.GetName())
	}
	sort.Strings(ns)
	return strings.Join(ns, ",")
}

func promTestRun() Run {
	floor := &Threshold{Op: ">=", Value: 180, Source: "A100/HDR-200: 90% of 200 Gb/s"}
	return Run{Schema: Schema, RunID: "run-1", Finished: time.Unix(1700000000, 250e6).UTC(),
		Cluster: Cluster{Server: "https://k8s:6443", Version: "v1.35.4"},
		Checks: []Check{
			{ID: "bandwidth/write", Variant: "shared-dev", Nodes: []string{"a", "b"}, Rail: "mlx5_0/1→mlx5_0/1", Status: Pass,
				Measured: []Measurement{
					{Name: "write_64KiB_avg", Node: "a", Port: "mlx5_0/1", Value: 150.5, Unit: "Gb/s"},
					{Name: "write_1MiB_avg", Node: "a", Port: "mlx5_0/1", Value: 190.25, Unit: "Gb/s", Threshold: floor}}},
			// The same pair on the other rail: port and rail tell the series apart.
			{ID: "bandwidth/write", Variant: "shared-dev", Nodes: []string{"a", "b"}, Rail: "mlx5_1/1→mlx5_1/1", Status: Fail,
				Measured: []Measurement{{Name: "write_1MiB_avg", Node: "a", Port: "mlx5_1/1", Value: 96, Unit: "Gb/s", Threshold: floor}}},
			{ID: "gpudirect/read", Variant: "shared-dev", Nodes: []string{"a", "b"}, Status: NotRun, Reason: "no GPU on a"},
			{ID: "nccl/all_reduce", Variant: "shared-dev", Nodes: []string{"a", "b", "c"}, Status: Fail,
				Measured: []Measurement{
					{Name: "busbw 64MiB", Value: 80, Unit: "GB/s"},
					{Name: "busbw 1GiB", Value: 90, Unit: "GB/s", Threshold: &Threshold{Op: ">=", Value: 100, Source: "sku"}}}},
			{ID: "memlock/rlimit", Nodes: []string{"a"}, Status: Error, Reason: "exec failed",
				Measured: []Measurement{{Name: "memlock_soft", Node: "a", Value: 65536, Unit: "bytes", Threshold: &Threshold{Op: ">=", Value: 1 << 20, Source: "sku"}}}},
			{ID: "disrupt/stall", Nodes: []string{"a"}, Status: Pass,
				Measured: []Measurement{{Name: "longest_gap", Node: "a", Value: 1.5, Unit: "s", Threshold: &Threshold{Op: "<=", Value: 30, Source: "sku"}}}},
			{ID: "bandwidth/ports", Variant: "shared-dev", Nodes: []string{"a"}, Status: Pass,
				Measured: []Measurement{{Name: "ports", Node: "a", Value: 2, Unit: "ports"}}},
		}}
}

func TestPrometheusParses(t *testing.T) {
	r := promTestRun()
	out := promText(t, r)
	fams := promParse(t, out)

	var names []string
	for n, f := range fams {
		names = append(names, n)
		if f.GetType() != dto.MetricType_GAUGE || f.GetHelp() == "" {
			t.Errorf("%s: type %s, help %q: want a gauge with help", n, f.GetType(), f.GetHelp())
		}
		seen := map[string]bool{}
		for _, m := range f.GetMetric() {
			k := promLabels(func() (ls []promLabel) {
				for _, l := range m.GetLabel() {
					ls = append(ls, promLabel{l.GetName(), l.GetValue()})
				}
				return
			}())
			if seen[k] {
				t.Errorf("%s%s: the same series twice", n, k)
			}
			seen[k] = true
			if m.TimestampMs != nil {
				t.Errorf("%s%s has a timestamp: the textfile collector refuses those", n, k)
			}
		}
	}
	sort.Strings(names)
	if got, want := strings.Join(names, " "), "rdmasuite_check_status rdmasuite_measurement rdmasuite_run_checks "+
		"rdmasuite_run_finished_timestamp_seconds rdmasuite_run_info rdmasuite_run_passed rdmasuite_threshold"; got != want {
		t.Fatalf("families %s, want %s", got, want)
	}

	// Every label name is one PrometheusLabels lists (push refuses those as
	// grouping labels).
	for n, f := range fams {
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if !slices.Contains(PrometheusLabels, l.GetName()) {
					t.Errorf("%s: label %s is not in PrometheusLabels", n, l.GetName())
				}
			}
		}
	}

	// One-hot: every check has all five statuses, exactly one of them 1.
	st := fams["rdmasuite_check_status"]
	if n := len(st.GetMetric()); n != 5*len(r.Checks) {
		t.Errorf("%d status series for %d checks, want 5 each", n, len(r.Checks))
	}
	for _, c := range r.Checks {
		for _, s := range []Status{Pass, Warn, Fail, Error, NotRun} {
			want := map[string]string{"check": c.ID, "status": string(s)}
			if c.Rail != "" {
				want["rail"] = c.Rail
			}
			if got := promSeries(t, st, want).GetGauge().GetValue(); got != oneIf(c.Status == s) {
				t.Errorf("%s %s status=%s: %g", c.ID, c.Rail, s, got)
			}
		}
	}
	// A not-run check is never a pass.
	nr := map[string]string{"check": "gpudirect/read"}
	if v := promSeries(t, st, promWith(nr, "status", "not-run")).GetGauge().GetValue(); v != 1 {
		t.Errorf(`gpudirect/read status="not-run" = %g, want 1`, v)
	}
	if v := promSeries(t, st, promWith(nr, "status", "pass")).GetGauge().GetValue(); v != 0 {
		t.Errorf(`gpudirect/read status="pass" = %g, want 0`, v)
	}

	// Label sets: op where the id names one, never a size on a status.
	for _, c := range []struct {
		check, rail, labels string
	}{
		{"bandwidth/write", "mlx5_0/1→mlx5_0/1", "check,node,op,peer,rail,status,variant"},
		{"gpudirect/read", "", "check,node,op,peer,status,variant"},
		{"nccl/all_reduce", "", "check,node,nodes,op,peer,status,variant"},
		{"memlock/rlimit", "", "check,node,status"},
		{"bandwidth/ports", "", "check,node,status,variant"},
	} {
		want := map[string]string{"check": c.check, "status": "fail"}
		if c.rail != "" {
			want["rail"] = c.rail
		}
		if got := promLabelNames(promSeries(t, st, want)); got != c.labels {
			t.Errorf("%s status labels %s, want %s", c.check, got, c.labels)
		}
	}
	if ls := promLabelMap(promSeries(t, st, map[string]string{"check": "bandwidth/write", "rail": "mlx5_0/1→mlx5_0/1", "status": "pass"})); ls["node"] != "a" ||
		ls["peer"] != "b" || ls["op"] != "write" || ls["variant"] != "shared-dev" {
		t.Errorf("bandwidth/write labels %v", ls)
	}
	if ls := promLabelMap(promSeries(t, st, map[string]string{"check": "nccl/all_reduce", "status": "fail"})); ls["nodes"] != "a,b,c" || ls["op"] != "all_reduce" {
		t.Errorf("nccl/all_reduce labels %v", ls)
	}

	// Measurements: one series per value, op and size from the name.
	ms := fams["rdmasuite_measurement"]
	if n := len(ms.GetMetric()); n != 8 {
		t.Errorf("%d measurement series, want 8", n)
	}
	for _, c := range []struct {
		want   map[string]string
		labels string
		value  float64
	}{
		{map[string]string{"name": "write_64KiB_avg", "node": "a", "peer": "b", "port": "mlx5_0/1", "rail": "mlx5_0/1→mlx5_0/1",
			"op": "write", "size": "64KiB", "unit": "Gb/s", "variant": "shared-dev"},
			"check,name,node,op,peer,port,rail,size,unit,variant", 150.5},
		{map[string]string{"name": "write_1MiB_avg", "port": "mlx5_1/1", "size": "1MiB"}, "", 96},
		{map[string]string{"name": "busbw 1GiB", "op": "all_reduce", "size": "1GiB", "node": "a", "nodes": "a,b,c"},
			"check,name,node,nodes,op,peer,size,unit,variant", 90},
		{map[string]string{"name": "memlock_soft", "unit": "bytes"}, "check,name,node,unit", 65536},
		{map[string]string{"name": "ports", "check": "bandwidth/ports"}, "check,name,node,unit,variant", 2},
	} {
		m := promSeries(t, ms, c.want)
		if v := m.GetGauge().GetValue(); v != c.value {
			t.Errorf("measurement %v = %g, want %g", c.want, v, c.value)
		}
		if c.labels != "" && promLabelNames(m) != c.labels {
			t.Errorf("measurement %v labels %s, want %s", c.want, promLabelNames(m), c.labels)
		}
	}

	// Thresholds: only for the values that have one, with the same labels
	// plus the bound's direction.
	th := fams["rdmasuite_threshold"]
	if n := len(th.GetMetric()); n != 5 {
		t.Errorf("%d threshold series, want 5", n)
	}
	m := promSeries(t, th, map[string]string{"name": "write_1MiB_avg", "port": "mlx5_0/1"})
	meas := promSeries(t, ms, map[string]string{"name": "write_1MiB_avg", "port": "mlx5_0/1"})
	if m.GetGauge().GetValue() != 180 || promLabelMap(m)["bound"] != "min" || promLabelNames(m) != "bound,"+promLabelNames(meas) {
		t.Errorf("threshold %v = %g", promLabelMap(m), m.GetGauge().GetValue())
	}
	if m := promSeries(t, th, map[string]string{"name": "longest_gap"}); m.GetGauge().GetValue() != 30 || promLabelMap(m)["bound"] != "max" {
		t.Errorf("a <= threshold: %v = %g", promLabelMap(m), m.GetGauge().GetValue())
	}
	for _, x := range th.GetMetric() {
		if promLabelMap(x)["name"] == "write_64KiB_avg" || promLabelMap(x)["name"] == "ports" {
			t.Errorf("threshold for a value without one: %v", promLabelMap(x))
		}
	}

	// The run.
	if v := fams["rdmasuite_run_passed"].GetMetric()[0].GetGauge().GetValue(); v != 0 {
		t.Errorf("run_passed %g, want 0 (checks failed)", v)
	}
	for s, n := range map[string]float64{"pass": 3, "fail": 2, "error": 1, "not-run": 1} {
		if v := promSeries(t, fams["rdmasuite_run_checks"], map[string]string{"status": s}).GetGauge().GetValue(); v != n {
			t.Errorf("run_checks{status=%q} = %g, want %g", s, v, n)
		}
	}
	if v := fams["rdmasuite_run_finished_timestamp_seconds"].GetMetric()[0].GetGauge().GetValue(); v != 1700000000.25 {
		t.Errorf("finished %f", v)
	}
	if ls := promLabelMap(fams["rdmasuite_run_info"].GetMetric()[0]); ls["run_id"] != "run-1" || ls["cluster_version"] != "v1.35.4" ||
		fams["rdmasuite_run_info"].GetMetric()[0].GetGauge().GetValue() != 1 {
		t.Errorf("run_info %v", ls)
	}

	// Deterministic: the same bytes whatever the order of the checks.
	shuffled := promTestRun()
	rand.New(rand.NewSource(1)).Shuffle(len(shuffled.Checks), func(i, j int) {
		shuffled.Checks[i], shuffled.Checks[j] = shuffled.Checks[j], shuffled.Checks[i]
	})
	if again := promText(t, shuffled); !bytes.Equal(out, again) {
		t.Errorf("the output depends on the order of the checks:\n%s\n---\n%s", out, again)
	}
}

func promWith(m map[string]string, k, v string) map[string]string {
	out := map[string]string{k: v}
	for a, b := range m {
		out[a] = b
	}
	return out
}

func TestPrometheusPassedRun(t *testing.T) {
	r := Run{RunID: "r", Checks: []Check{
		{ID: "bandwidth/write", Nodes: []string{"a", "b"}, Status: Pass},
		{ID: "gpudirect/write", Nodes: []string{"a", "b"}, Status: NotRun, Reason: "no GPU"},
	}, AllowNotRun: []string{"gpudirect/"}}
	fams := promParse(t, promText(t, r))
	if v := fams["rdmasuite_run_passed"].GetMetric()[0].GetGauge().GetValue(); v != 1 {
		t.Errorf("run_passed %g, want 1 (the not-run is allowed)", v)
	}
	// Allowed or not, a not-run is still not-run, never pass.
	st := fams["rdmasuite_check_status"]
	if promSeries(t, st, map[string]string{"check": "gpudirect/write", "status": "pass"}).GetGauge().GetValue() != 0 ||
		promSeries(t, st, map[string]string{"check": "gpudirect/write", "status": "not-run"}).GetGauge().GetValue() != 1 {
		t.Error("an allowed not-run reads as a pass")
	}
	if _, ok := fams["rdmasuite_run_finished_timestamp_seconds"]; ok {
		t.Error("a run without a finish time has a finish timestamp (1970 or year 1)")
	}
	if _, ok := fams["rdmasuite_threshold"]; ok {
		t.Error("no measurement, yet a threshold family")
	}
}

func TestPrometheusExactText(t *testing.T) {
	r := Run{RunID: "r1", Finished: time.Unix(1700000000, 0), Cluster: Cluster{Version: "v1.35.4"}, Checks: []Check{
		{ID: "memlock/rlimit", Nodes: []string{"n1"}, Status: Pass,
			Measured: []Measurement{{Name: "memlock_soft", Node: "n1", Value: -1, Unit: "bytes", Threshold: &Threshold{Op: ">=", Value: 65536, Source: "sku"}}}},
	}}
	want := `# HELP rdmasuite_check_status Status of one rdmasuite check: 1 for its status (pass, warn, fail, error or not-run), 0 for the other four; warn passed its bar with something to look at first (a peer outlier, a failure that did not repeat); node is the measuring side, peer the other node of a pair.
# TYPE rdmasuite_check_status gauge
rdmasuite_check_status{check="memlock/rlimit",node="n1",status="error"} 0
rdmasuite_check_status{check="memlock/rlimit",node="n1",status="fail"} 0
rdmasuite_check_status{check="memlock/rlimit",node="n1",status="not-run"} 0
rdmasuite_check_status{check="memlock/rlimit",node="n1",status="pass"} 1
rdmasuite_check_status{check="memlock/rlimit",node="n1",status="warn"} 0
# HELP rdmasuite_measurement One value a check measured, in unit; name as in the results (e.g. write_64KiB_avg), op and size parsed from it.
# TYPE rdmasuite_measurement gauge
rdmasuite_measurement{check="memlock/rlimit",node="n1",name="memlock_soft",unit="bytes"} -1
# HELP rdmasuite_run_checks Checks of the run per status (pass, warn, fail, error, not-run).
# TYPE rdmasuite_run_checks gauge
rdmasuite_run_checks{status="error"} 0
rdmasuite_run_checks{status="fail"} 0
rdmasuite_run_checks{status="not-run"} 0
rdmasuite_run_checks{status="pass"} 1
rdmasuite_run_checks{status="warn"} 0
# HELP rdmasuite_run_finished_timestamp_seconds When the run finished, in seconds since the Unix epoch.
# TYPE rdmasuite_run_finished_timestamp_seconds gauge
rdmasuite_run_finished_timestamp_seconds 1.7e+09
# HELP rdmasuite_run_info The run's id and the cluster's Kubernetes version; always 1.
# TYPE rdmasuite_run_info gauge
rdmasuite_run_info{run_id="r1",cluster_version="v1.35.4"} 1
# HELP rdmasuite_run_passed 1 when the run passed (every check passed or warned, or is an allowed not-run, and at least one passed), else 0.
# TYPE rdmasuite_run_passed gauge
rdmasuite_run_passed 1
# HELP rdmasuite_threshold The threshold the measurement with the same labels was judged against: bound="min" for >=, "max" for <=.
# TYPE rdmasuite_threshold gauge
rdmasuite_threshold{check="memlock/rlimit",node="n1",name="memlock_soft",unit="bytes",bound="min"} 65536
`
	if got := string(promText(t, r)); got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
}

func TestPrometheusHostileLabels(t *testing.T) {
	node := "node \"a\"\\\nb" // a quote, a backslash, a newline
	rail := `mlx5_0/1\→"x"` + "\n"
	r := Run{RunID: "run \"1\"\n\\", Cluster: Cluster{Version: "v1\\\"\n"}, Checks: []Check{
		{ID: "bandwidth/write", Variant: "shared\"dev", Nodes: []string{node, "b\n"}, Rail: rail, Status: Fail,
			Diagnosis: "quotes \" and\nnewlines in a field that is not exported",
			Measured:  []Measurement{{Name: "write_1MiB_avg", Node: node, Port: "p\\\"\n", Value: 1, Unit: "Gb/s"}}},
		{ID: "doctor/node", Nodes: []string{"bad\xffutf8"}, Status: NotRun},
	}}
	out := promText(t, r)
	fams := promParse(t, out)
	ls := promLabelMap(promSeries(t, fams["rdmasuite_check_status"], map[string]string{"check": "bandwidth/write", "status": "fail"}))
	if ls["node"] != node || ls["peer"] != "b\n" || ls["rail"] != rail || ls["variant"] != "shared\"dev" {
		t.Errorf("labels did not survive escaping: %q", ls)
	}
	if ls := promLabelMap(promSeries(t, fams["rdmasuite_measurement"], map[string]string{"check": "bandwidth/write"})); ls["node"] != node || ls["port"] != "p\\\"\n" {
		t.Errorf("measurement labels: %q", ls)
	}
	if ls := promLabelMap(fams["rdmasuite_run_info"].GetMetric()[0]); ls["run_id"] != r.RunID || ls["cluster_version"] != r.Cluster.Version {
		t.Errorf("run_info labels: %q", ls)
	}
	if ls := promLabelMap(promSeries(t, fams["rdmasuite_check_status"], map[string]string{"check": "doctor/node", "status": "not-run"})); ls["node"] != "bad\uFFFDutf8" {
		t.Errorf("invalid UTF-8 is not replaced: %q", ls["node"])
	}
	if bytes.Contains(out, []byte("not exported")) {
		t.Error("the diagnosis leaked into the exposition")
	}
}

func TestPrometheusDuplicates(t *testing.T) {
	m := Measurement{Name: "write_1MiB_avg", Node: "a", Port: "p", Value: 1, Unit: "Gb/s"}
	c := Check{ID: "bandwidth/write", Nodes: []string{"a", "b"}, Status: Pass, Measured: []Measurement{m, m}}
	fams := promParse(t, promText(t, Run{Checks: []Check{c}}))
	if n := len(fams["rdmasuite_measurement"].GetMetric()); n != 1 {
		t.Errorf("one value recorded twice: %d series, want 1", n)
	}
	m2 := m
	m2.Value = 2
	c.Measured = []Measurement{m, m2}
	var b bytes.Buffer
	if err := Prometheus(&b, Run{Checks: []Check{c}}); err == nil || !strings.Contains(err.Error(), "has two values, 1 and 2") {
		t.Errorf("two values for one series: %v", err)
	}
	if err := Prometheus(&b, Run{Checks: []Check{{ID: "x", Status: "passed"}}}); err == nil || !strings.Contains(err.Error(), "not valid") {
		t.Errorf("an invalid run: %v", err)
	}
}

// The op of every family the workloads run is known for results files
// whose checks carry no traits: a new op must get its op label.
func TestKnownTraitsKnowTheWorkloadsOps(t *testing.T) {
	for _, op := range []bwload.Op{bwload.OpWrite, bwload.OpRead} {
		for _, id := range []string{"bandwidth/" + string(op), "gpudirect/" + string(op), "bandwidth/" + string(op) + "/loopback", "latency/" + string(op), "msgrate/" + string(op)} {
			if got := knownTraits(id).Op; got != string(op) {
				t.Errorf("knownTraits(%s).Op = %q", id, got)
			}
		}
	}
	if got := knownTraits("latency/" + string(bwload.OpSend)).Op; got != string(bwload.OpSend) {
		t.Errorf("knownTraits(latency/send).Op = %q", got)
	}
	for _, c := range nccl.Collectives {
		if got := knownTraits("nccl/" + string(c)).Op; got != string(c) {
			t.Errorf("knownTraits(nccl/%s).Op = %q", c, got)
		}
	}
	for _, id := range []string{"bandwidth/ports", "bandwidth/isolation", "bandwidth/link", "nccl/transport", "memlock/rlimit", "doctor/node", "run/incomplete", "write", ""} {
		if got := knownTraits(id).Op; got != "" {
			t.Errorf("knownTraits(%s).Op = %q, want none", id, got)
		}
	}
}

func TestMeasurementOpSize(t *testing.T) {
	for _, c := range []struct{ name, op, size string }{
		{"write_64KiB_avg", "write", "64KiB"},
		{"read_1GiB_avg", "read", "1GiB"},
		{"write_4096B_avg", "write", "4096B"},
		{"busbw 128MiB", "", "128MiB"},
		{"busbw 64B", "", "64B"},
		{"memlock_soft", "", ""},
		{"largest_mr", "", ""},
		{"driver_ready_after", "", ""},
		{"write_64KB_avg", "", ""},
	} {
		if op, size := measurementOpSize(c.name); op != c.op || size != c.size {
			t.Errorf("%s: op %q size %q, want %q %q", c.name, op, size, c.op, c.size)
		}
	}
}
