package reports

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// PrometheusContentType is the HTTP content type of what Prometheus
// writes: the text exposition format, version 0.0.4.
const PrometheusContentType = "text/plain; version=0.0.4; charset=utf-8"

// Prometheus writes run in the Prometheus text exposition format (0.0.4),
// for node_exporter's textfile collector or a Pushgateway. Every series is
// a gauge without a timestamp:
//
//	rdmasuite_check_status{check,variant,node,peer,rail,op,status}   one-hot: 1 for the check's status, 0 for the other three
//	rdmasuite_measurement{check,variant,node,peer,rail,op,port,name,unit,size}   one value a check measured
//	rdmasuite_threshold{…the measurement's labels…,bound}   its threshold: bound="min" (>=) or "max" (<=)
//	rdmasuite_run_passed   1 when Run.Passed
//	rdmasuite_run_checks{status}   checks per status
//	rdmasuite_run_finished_timestamp_seconds   (absent when the run has no finish time)
//	rdmasuite_run_info{run_id,cluster_version}   1
//
// node is the measuring side: a check's first node, or the measurement's own
// Node. peer is the check's second node, and a check with more than two
// nodes (an NCCL world) also has nodes, every node comma-separated. op is
// the operation the check's traits name (bandwidth/write: write;
// nccl/all_reduce: all_reduce) or the measurement name encodes
// (write_64KiB_avg); size is the
// message size a measurement name encodes (64KiB). A label with no value is
// left out. Label values are escaped (backslash, double quote, newline) and
// invalid UTF-8 is replaced. Families and series are sorted, so the output
// of one run is always the same bytes.
//
// The run must be valid (Validate). Two series with the same labels and
// different values (a results file that holds one value twice) are an error:
// Prometheus would refuse the whole file.
func Prometheus(w io.Writer, run Run) error {
	if err := run.Validate(); err != nil {
		return fmt.Errorf("prometheus: %w", err)
	}
	fams := promFamilies(run)
	bw := bufio.NewWriter(w)
	for _, f := range fams {
		lines, err := f.lines()
		if err != nil {
			return err
		}
		fmt.Fprintf(bw, "# HELP %s %s\n# TYPE %s gauge\n", f.name, promEscapeHelp(f.help), f.name)
		for _, l := range lines {
			bw.WriteString(l)
		}
	}
	return bw.Flush()
}

// PrometheusLabels are the label names Prometheus writes. A Pushgateway's
// grouping labels must not reuse them.
var PrometheusLabels = []string{"check", "variant", "node", "peer", "nodes", "rail", "op", "port", "name", "unit", "size",
	"bound", "status", "run_id", "cluster_version"}

type promLabel struct{ name, value string }

type promSample struct {
	labels []promLabel
	value  float64
}

type promFamily struct {
	name, help string
	samples    []promSample
}

func (f *promFamily) add(v float64, labels ...promLabel) {
	var ls []promLabel
	for _, l := range labels {
		if l.value != "" {
			ls = append(ls, l)
		}
	}
	f.samples = append(f.samples, promSample{ls, v})
}

// lines renders the samples sorted by their labels; the same series twice
// is one line if the values agree and an error if they do not.
func (f *promFamily) lines() ([]string, error) {
	seen := map[string]float64{}
	var keys []string
	for _, s := range f.samples {
		k := promLabels(s.labels)
		if prev, dup := seen[k]; dup {
			if prev != s.value && !(math.IsNaN(prev) && math.IsNaN(s.value)) {
				return nil, fmt.Errorf("prometheus: %s%s has two values, %s and %s: the results hold the same value twice (a size requested twice?)",
					f.name, k, promFloat(prev), promFloat(s.value))
			}
			continue
		}
		seen[k] = s.value
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = f.name + k + " " + promFloat(seen[k]) + "\n"
	}
	return out, nil
}

// promFamilies builds every family of run, sorted by name.
func promFamilies(run Run) []*promFamily {
	status := &promFamily{name: "rdmasuite_check_status",
		help: "Status of one rdmasuite check: 1 for its status (pass, warn, fail, error or not-run), 0 for the other four; warn passed its bar with something to look at first (a peer outlier, a failure that did not repeat); node is the measuring side, peer the other node of a pair."}
	meas := &promFamily{name: "rdmasuite_measurement",
		help: "One value a check measured, in unit; name as in the results (e.g. write_64KiB_avg), op and size parsed from it."}
	thr := &promFamily{name: "rdmasuite_threshold",
		help: "The threshold the measurement with the same labels was judged against: bound=\"min\" for >=, \"max\" for <=."}
	passed := &promFamily{name: "rdmasuite_run_passed",
		help: "1 when the run passed (every check passed or warned, or is an allowed not-run, and at least one passed), else 0."}
	counts := &promFamily{name: "rdmasuite_run_checks", help: "Checks of the run per status (pass, warn, fail, error, not-run)."}
	finished := &promFamily{name: "rdmasuite_run_finished_timestamp_seconds", help: "When the run finished, in seconds since the Unix epoch."}
	info := &promFamily{name: "rdmasuite_run_info", help: "The run's id and the cluster's Kubernetes version; always 1."}

	for _, c := range run.Checks {
		id := checkLabels(c)
		for _, st := range []Status{Pass, Warn, Fail, Error, NotRun} {
			status.add(oneIf(c.Status == st), append(id, promLabel{"status", string(st)})...)
		}
		for _, m := range c.Measured {
			ls := measurementLabels(c, m)
			meas.add(m.Value, ls...)
			if t := m.Threshold; t != nil {
				bound := "min"
				if t.Op == "<=" {
					bound = "max"
				}
				thr.add(t.Value, append(ls, promLabel{"bound", bound})...)
			}
		}
	}
	passed.add(oneIf(run.Passed()))
	sum := run.Summary()
	for _, st := range []Status{Pass, Warn, Fail, Error, NotRun} {
		counts.add(float64(sum[st]), promLabel{"status", string(st)})
	}
	if !run.Finished.IsZero() {
		finished.add(float64(run.Finished.UnixMilli()) / 1e3)
	}
	info.add(1, promLabel{"run_id", run.RunID}, promLabel{"cluster_version", run.Cluster.Version})

	fams := []*promFamily{status, meas, thr, passed, counts, finished, info}
	out := fams[:0]
	for _, f := range fams {
		if len(f.samples) > 0 {
			out = append(out, f)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// checkLabels identify a check (as Check.Key does): id, variant, its first
// node, its second, every node when there are more than two, rail, and the
// op its traits name.
func checkLabels(c Check) []promLabel {
	var node, peer, nodes string
	if len(c.Nodes) > 0 {
		node = c.Nodes[0]
	}
	if len(c.Nodes) > 1 {
		peer = c.Nodes[1]
	}
	if len(c.Nodes) > 2 {
		nodes = strings.Join(c.Nodes, ",")
	}
	return []promLabel{{"check", c.ID}, {"variant", c.Variant}, {"node", node}, {"peer", peer}, {"nodes", nodes},
		{"rail", c.Rail}, {"op", c.Is().Op}}
}

// measurementLabels are the check's labels with node the measurement's own
// (when it has one), op and size from its name, and port, name and unit.
func measurementLabels(c Check, m Measurement) []promLabel {
	ls := checkLabels(c)
	op, size := measurementOpSize(m.Name)
	for i := range ls {
		switch ls[i].name {
		case "node":
			if m.Node != "" {
				ls[i].value = m.Node
			}
		case "op":
			if op != "" {
				ls[i].value = op
			}
		}
	}
	return append(ls, promLabel{"port", m.Port}, promLabel{"name", m.Name}, promLabel{"unit", m.Unit}, promLabel{"size", size})
}

// The measurement names that encode a size (internal/verdict: sizes as
// SizeName writes them, 64KiB, 1MiB, 4096B): <op>_<size>_avg for the
// bandwidth checks, "busbw <size>" for the NCCL ones (their op is the
// check's collective).
var (
	sizePattern  = `(\d+(?:B|KiB|MiB|GiB|TiB))`
	bwNameRE     = regexp.MustCompile(`^([a-z]+)_` + sizePattern + `_avg$`)
	busbwNameRE  = regexp.MustCompile(`^busbw ` + sizePattern + `$`)
	promEscaper  = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
	helpEscaper  = strings.NewReplacer(`\`, `\\`, "\n", `\n`)
	promReplChar = "\uFFFD"
)

// measurementOpSize parses the op and size a measurement name encodes;
// "" for what it does not.
func measurementOpSize(name string) (op, size string) {
	if m := bwNameRE.FindStringSubmatch(name); m != nil {
		return m[1], m[2]
	}
	if m := busbwNameRE.FindStringSubmatch(name); m != nil {
		return "", m[1]
	}
	return "", ""
}

// promLabels renders {a="x",b="y"}, or "" for no labels.
func promLabels(ls []promLabel) string {
	if len(ls) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteByte('{')
	for i, l := range ls {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(l.name)
		b.WriteString(`="`)
		b.WriteString(promEscaper.Replace(strings.ToValidUTF8(l.value, promReplChar)))
		b.WriteByte('"')
	}
	b.WriteByte('}')
	return b.String()
}

func promEscapeHelp(s string) string {
	return helpEscaper.Replace(strings.ToValidUTF8(s, promReplChar))
}

// promFloat writes a sample value as the format wants it (Go float syntax,
// +Inf, -Inf, NaN).
func promFloat(v float64) string {
	switch {
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	case math.IsNaN(v):
		return "NaN"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

func oneIf(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
