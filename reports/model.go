// Package reports is the one results model of a suite run (versioned JSON)
// and its renderers: a terminal table, Markdown, JUnit XML, and the baseline
// diff operators read after an upgrade.
package reports

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"
)

// Schema identifies the JSON layout; bump it when a field changes meaning.
const Schema = "rdmasuite.io/results/v1"

// Status of one check. A check that could not run is NotRun with a reason;
// it never reads as Pass.
type Status string

const (
	Pass   Status = "pass"
	Fail   Status = "fail"
	Error  Status = "error" // the check itself broke (API error, probe crash)
	NotRun Status = "not-run"
)

// Run is one suite run.
type Run struct {
	Schema   string    `json:"schema"`
	RunID    string    `json:"runId"`
	Started  time.Time `json:"started"`
	Finished time.Time `json:"finished"`
	Cluster  Cluster   `json:"cluster"`
	Nodes    []Node    `json:"nodes"`
	Checks   []Check   `json:"checks"`
	// Phases is where the run's time went (pod start, exchange, measurement,
	// collection), summed over pods/pairs.
	Phases map[string]Phase `json:"phases,omitempty"`
	// AllowNotRun lists the check ids (or id prefixes ending in "/") the
	// operator allowed to be not-run (--allow-not-run); any other not-run
	// check fails the run.
	AllowNotRun []string `json:"allowNotRun,omitempty"`
}

// Phase is the time spent in one phase of the run.
type Phase struct {
	Count    int     `json:"count"`
	TotalSec float64 `json:"totalSec"`
	MaxSec   float64 `json:"maxSec"`
}

// Cluster facts.
type Cluster struct {
	Server  string `json:"server"`
	Version string `json:"version"`
}

// Node facts the verdicts depend on.
type Node struct {
	Name        string            `json:"name"`
	SKU         string            `json:"sku,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"` // the GPU/Network Operator labels only
	Allocatable map[string]string `json:"allocatable,omitempty"`
	Kubelet     string            `json:"kubelet,omitempty"`
	Kernel      string            `json:"kernel,omitempty"`
}

// Check is one verdict with its evidence.
type Check struct {
	ID      string   `json:"id"` // stable, e.g. bandwidth/write/shared-dev
	Title   string   `json:"title"`
	Nodes   []string `json:"nodes"`
	Variant string   `json:"variant,omitempty"` // shared-dev, hostdev
	// Rail names the port(s) a per-rail check covers, e.g. "mlx5_0/1→mlx5_0/1".
	Rail      string        `json:"rail,omitempty"`
	Status    Status        `json:"status"`
	Measured  []Measurement `json:"measured,omitempty"`
	Evidence  []string      `json:"evidence,omitempty"`
	Diagnosis string        `json:"diagnosis,omitempty"`
	Fix       string        `json:"fix,omitempty"`
	Reason    string        `json:"reason,omitempty"` // why not-run / error
	Duration  float64       `json:"durationSec,omitempty"`
}

// Measurement is one number and the threshold it was judged against.
type Measurement struct {
	Name string `json:"name"` // e.g. write_64KiB_avg
	// Node the value belongs to (the measuring side); with Port it is what
	// a baseline diff matches on, whatever the pairing.
	Node      string     `json:"node,omitempty"`
	Port      string     `json:"port,omitempty"`
	Value     float64    `json:"value"`
	Unit      string     `json:"unit"`
	Threshold *Threshold `json:"threshold,omitempty"`
}

// Threshold is the bound a measurement must meet and where it comes from.
type Threshold struct {
	Op     string  `json:"op"` // >= or <=
	Value  float64 `json:"value"`
	Source string  `json:"source"`
}

// Met reports whether v satisfies t.
func (t Threshold) Met(v float64) bool {
	if t.Op == "<=" {
		return v <= t.Value
	}
	return v >= t.Value
}

// Key identifies a check across runs (for the baseline diff).
func (c Check) Key() string {
	k := c.ID
	if c.Variant != "" {
		k += "[" + c.Variant + "]"
	}
	if c.Rail != "" {
		k += "{" + c.Rail + "}"
	}
	for _, n := range c.Nodes {
		k += " " + n
	}
	return k
}

// Summary counts checks by status.
func (r Run) Summary() map[Status]int {
	m := map[Status]int{}
	for _, c := range r.Checks {
		m[c.Status]++
	}
	return m
}

// Passed is true when every check passed; not-run checks make a run not
// passed (nothing is assumed).
func (r Run) Passed() bool {
	for _, c := range r.Checks {
		if c.Status != Pass {
			return false
		}
	}
	return len(r.Checks) > 0
}

// Sort orders checks by id, variant and nodes, so reports and diffs are stable.
func (r *Run) Sort() {
	sort.SliceStable(r.Checks, func(i, j int) bool { return r.Checks[i].Key() < r.Checks[j].Key() })
	sort.Slice(r.Nodes, func(i, j int) bool { return r.Nodes[i].Name < r.Nodes[j].Name })
}

// Write stores the run as indented JSON, atomically (temp file + rename), so
// a crash never leaves half a report for a nightly job to read.
func Write(path string, r Run) error {
	r.Schema = Schema
	r.Sort()
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".results-*.json")
	if err != nil {
		return err
	}
	if _, err := tmp.Write(append(b, '\n')); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// Read loads a results file and checks its schema.
func Read(path string) (Run, error) {
	var r Run
	b, err := os.ReadFile(path)
	if err != nil {
		return r, err
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return r, fmt.Errorf("%s: not a results file: %w", path, err)
	}
	if r.Schema != Schema {
		return r, fmt.Errorf("%s: schema %q, this rdmasuite reads %q", path, r.Schema, Schema)
	}
	return r, nil
}
