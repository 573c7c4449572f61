// Package reports is the one results model of a suite run (versioned JSON)
// and its renderers: a terminal table, Markdown, JUnit XML, and the baseline
// diff operators read after an upgrade.
package reports

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/rdmasuite/rdmasuite/internal/atomicfile"
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
	// Warn: measured and met its bar, with something an operator should
	// look at first: a port far below its peers though above the floor,
	// or a failure that did not repeat when measured again (transient).
	// It passes the run and never taints a node.
	Warn Status = "warn"
)

// Passing reports whether s met its bar (pass or warn).
func (s Status) Passing() bool { return s == Pass || s == Warn }

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
	Name string `json:"name"`
	SKU  string `json:"sku,omitempty"`
	// ThresholdsFile is the file whose SKU judged the node (the built-in
	// thresholds/skus.yaml, --thresholds or an overlay).
	ThresholdsFile string            `json:"thresholdsFile,omitempty"`
	Labels         map[string]string `json:"labels,omitempty"` // the GPU/Network Operator labels only
	Allocatable    map[string]string `json:"allocatable,omitempty"`
	Kubelet        string            `json:"kubelet,omitempty"`
	Kernel         string            `json:"kernel,omitempty"`
}

// Check is one verdict with its evidence.
type Check struct {
	ID      string   `json:"id"` // stable, e.g. bandwidth/write or bandwidth/write/loopback (the variant is its own field)
	Title   string   `json:"title"`
	Nodes   []string `json:"nodes"`
	Variant string   `json:"variant,omitempty"` // shared-dev, hostdev
	// Rail names the port(s) a per-rail check covers, e.g. "mlx5_0/1→mlx5_0/1".
	Rail     string        `json:"rail,omitempty"`
	Status   Status        `json:"status"`
	Measured []Measurement `json:"measured,omitempty"`
	Evidence []string      `json:"evidence,omitempty"`
	// ShowEvidence: the evidence is worth reading on a pass too (a
	// disruption's timeline: when the driver went, came back, I/O resumed),
	// so reports print it whatever the status.
	ShowEvidence bool    `json:"showEvidence,omitempty"`
	Diagnosis    string  `json:"diagnosis,omitempty"`
	Fix          string  `json:"fix,omitempty"`
	Reason       string  `json:"reason,omitempty"` // why not-run / error
	Duration     float64 `json:"durationSec,omitempty"`
	// Timeline is the evidence's story as data (a disruption: driver
	// gone, back, I/O stalled), for charts; the evidence stays the record.
	Timeline []Span `json:"timeline,omitempty"`
	// Traits say how reports present and use the check (Is); absent in
	// files written before checks carried them.
	Traits *Traits `json:"traits,omitempty"`
	// HostFaults are what the check's own probe saw on a host that needs
	// no pairing to blame: a port it read as not ACTIVE, a node whose pod
	// sees no RDMA device. Localisation blames them whatever its partners
	// could tell.
	HostFaults []HostFault `json:"hostFaults,omitempty"`
	// HostCauses are the run's host-configuration findings that explain
	// this check's figure on one of its ends (AttachHostCauses).
	// Localisation blames the host's configuration, not the fabric.
	HostCauses []HostCause `json:"hostCauses,omitempty"`
	// Peers: why a pass reads warn, its figure far from its peers' (a
	// peer outlier, MarkPeerOutliers); nil otherwise.
	Peers *PeerStat `json:"peers,omitempty"`
	// Round is RoundConfirmation on a check measured in the confirmation
	// round: a suspect end against a partner that passed everything.
	Round string `json:"round,omitempty"`
	// Confirmation: what measuring this failed check's ends again found
	// (ApplyConfirmation). A warn check with a figure below its bound is
	// a failure that did not repeat, and must carry it.
	Confirmation *Confirmation `json:"confirmation,omitempty"`
	// Lost names the pod or node the run lost before or during this
	// measurement (deleted, evicted, drained, NotReady): the row is an
	// error (cut) or not-run (never started) for that reason, and no
	// evidence for or against either end, so localisation and the
	// confirmation round pass it by.
	Lost *Loss `json:"lost,omitempty"`
}

// Loss is what the run lost under a check: the node whose pod or self
// was lost, and what happened.
type Loss struct {
	Node string `json:"node"`
	What string `json:"what"`
}

// HostFault is one fault a probe saw on its own host.
type HostFault struct {
	Node string `json:"node"`
	// Port is the faulty port ("rxe1/1"); "" blames the node as a whole.
	Port string `json:"port,omitempty"`
	// What the probe saw, in a few words ("port DOWN, not ACTIVE").
	What string `json:"what"`
}

// Span is one interval of a check's timeline in seconds from its moment T
// (a disruption's T: the runner deleted the MOFED pod); From == To is an
// instant. Open: it had not ended when observation stopped (To is then
// that stop). Clock names whose clock placed it (runner, API server,
// writer): node clocks are placed against T as if they agreed.
type Span struct {
	Label string  `json:"label"`
	From  float64 `json:"fromSec"`
	To    float64 `json:"toSec"`
	Open  bool    `json:"open,omitempty"`
	Clock string  `json:"clock,omitempty"`
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

// UnitMicroseconds is a latency's unit: lower is better, bound or not.
const UnitMicroseconds = "µs"

// UnitMpps is a message rate's unit (millions of messages per second,
// perftest's MsgRate[Mpps]): higher is better.
const UnitMpps = "Mpps"

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
	if c.Round != "" {
		k += " #" + c.Round
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

// Allowed reports whether c is a not-run check the operator allowed
// (Run.AllowNotRun: an exact check id, or a prefix ending in "/"). Only a
// not-run check can be allowed: nothing excuses a fail or an error.
func (r Run) Allowed(c Check) bool {
	if c.Status != NotRun {
		return false
	}
	for _, a := range r.AllowNotRun {
		if a == c.ID || (strings.HasSuffix(a, "/") && strings.HasPrefix(c.ID, a)) {
			return true
		}
	}
	return false
}

// AllowedNotRun counts the allowed not-run checks.
func (r Run) AllowedNotRun() int {
	n := 0
	for _, c := range r.Checks {
		if r.Allowed(c) {
			n++
		}
	}
	return n
}

// Passed is true when every check passed or is an allowed not-run, and at
// least one check passed: a run with no checks, or where every check is
// not-run, measured nothing and is not passed.
func (r Run) Passed() bool {
	passed := 0
	for _, c := range r.Checks {
		switch {
		case c.Status.Passing():
			passed++
		case r.Allowed(c):
		default:
			return false
		}
	}
	return passed > 0
}

// Exit codes, one meaning for every rdmasuite command and the suite's
// summary (README "Exit codes").
const (
	// ExitPassed: every check passed (or is an allowed not-run) and at
	// least one was measured.
	ExitPassed = 0
	// ExitChecksFailed: a check failed or errored, a not-run check was not
	// allowed, or nothing was measured (every check not-run).
	ExitChecksFailed = 1
	// ExitBroken: the suite or its input broke: no check at all, an
	// unreadable or invalid results file, bad flags.
	ExitBroken = 2
	// ExitRegression: the checks passed but the baseline diff found a
	// regression (a failed check wins: 1, not 3).
	ExitRegression = 3
	// ExitStillRunning: rdmasuite results --wait=false found the run still
	// going; nothing is wrong yet, so a script polls on it (not 2).
	ExitStillRunning = 4
)

// ExitCode is the run's exit code on its own: ExitPassed, ExitChecksFailed,
// or ExitBroken for a run with zero checks. The baseline diff adds
// ExitRegression (see DiffResult).
func (r Run) ExitCode() int {
	switch {
	case len(r.Checks) == 0:
		return ExitBroken
	case r.Passed():
		return ExitPassed
	}
	return ExitChecksFailed
}

// ParseStatus accepts exactly pass, warn, fail, error and not-run.
func ParseStatus(s string) (Status, error) {
	switch st := Status(s); st {
	case Pass, Warn, Fail, Error, NotRun:
		return st, nil
	}
	return "", fmt.Errorf("status %q is not valid: want pass, warn, fail, error or not-run", s)
}

// Validate checks what JSON alone does not: every check has a known status,
// every measurement a finite value, every threshold an op of >= or <= and a
// finite value. Read and Write call it.
func (r Run) Validate() error {
	var errs []string
	first := map[string]int{}
	for i, c := range r.Checks {
		where := fmt.Sprintf("check %q (#%d)", c.ID, i+1)
		if strings.TrimSpace(c.ID) == "" {
			errs = append(errs, fmt.Sprintf("check #%d has no id", i+1))
		}
		// One verdict per check: a second one under the same key would
		// let a reader (report, diff, merge) pick either.
		if j, dup := first[c.Key()]; dup {
			errs = append(errs, fmt.Sprintf("check key %s appears twice (#%d and #%d)", c.Key(), j+1, i+1))
		} else {
			first[c.Key()] = i
		}
		if _, err := ParseStatus(string(c.Status)); err != nil {
			errs = append(errs, fmt.Sprintf("%s: %v", where, err))
		}
		for _, m := range c.Measured {
			if math.IsNaN(m.Value) || math.IsInf(m.Value, 0) {
				errs = append(errs, fmt.Sprintf("%s: measurement %s = %v is not a number", where, m.Name, m.Value))
				continue
			}
			if m.Unit == "bytes" && m.Value < 0 && m.Value != Unlimited {
				errs = append(errs, fmt.Sprintf("%s: measurement %s = %g bytes is negative (only %d stands for unlimited)", where, m.Name, m.Value, Unlimited))
			}
			// A pass is a promise that every bound it records was met.
			if t := m.Threshold; t != nil && c.Status.Passing() && !c.transient() && (t.Op == ">=" || t.Op == "<=") && !meets(m.Value, m.Unit, *t) {
				errs = append(errs, fmt.Sprintf("%s is pass, but %s = %s misses its bound %s %s (%s): a status its own value contradicts",
					where, m.Name, fmtVal(m.Value, m.Unit), t.Op, fmtVal(t.Value, m.Unit), t.Source))
			}
			if t := m.Threshold; t != nil {
				if t.Op != ">=" && t.Op != "<=" {
					errs = append(errs, fmt.Sprintf("%s: measurement %s: threshold op %q is not valid: want >= or <=", where, m.Name, t.Op))
				}
				if math.IsNaN(t.Value) || math.IsInf(t.Value, 0) {
					errs = append(errs, fmt.Sprintf("%s: measurement %s: threshold %v is not a number", where, m.Name, t.Value))
				}
			}
		}
	}
	if len(errs) > 0 {
		return errors.New(strings.Join(errs, "; "))
	}
	return nil
}

// Sort orders checks by id, variant and nodes, so reports and diffs are stable.
func (r *Run) Sort() {
	sort.SliceStable(r.Checks, func(i, j int) bool { return r.Checks[i].Key() < r.Checks[j].Key() })
	sort.Slice(r.Nodes, func(i, j int) bool { return r.Nodes[i].Name < r.Nodes[j].Name })
}

// Write stores the run as indented JSON, replaced whole (atomicfile), so a
// crash never leaves half a report for a nightly job to read.
func Write(path string, r Run) error {
	r.Schema = Schema
	if err := r.Validate(); err != nil {
		return fmt.Errorf("%s: not written: %w", path, err)
	}
	r.Sort()
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return atomicfile.Write(path, append(b, '\n'))
}

// Read loads a results file and checks its schema and contents (Validate):
// a check with an empty or unknown status, or a value that is not a
// number, makes the whole file invalid.
func Read(path string) (Run, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Run{}, err
	}
	return Decode(path, b)
}

// gzipMagic starts every gzip stream (RFC 1952).
var gzipMagic = []byte{0x1f, 0x8b}

// Decode reads a results file's bytes, gzip-compressed or not (the
// in-cluster ConfigMap stores results.json.gz): the content decides, not
// the name. name is what errors call it (a path, "standard input").
func Decode(name string, b []byte) (Run, error) {
	var r Run
	if bytes.HasPrefix(b, gzipMagic) {
		zr, err := gzip.NewReader(bytes.NewReader(b))
		if err != nil {
			return r, fmt.Errorf("%s: gzip: %w", name, err)
		}
		if b, err = io.ReadAll(io.LimitReader(zr, maxResultsBytes+1)); err != nil {
			return r, fmt.Errorf("%s: gzip: %w", name, err)
		}
		if len(b) > maxResultsBytes {
			return r, fmt.Errorf("%s: more than %d MiB uncompressed: not a results file", name, maxResultsBytes>>20)
		}
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return r, fmt.Errorf("%s: not a results file: %w", name, err)
	}
	if r.Schema != Schema {
		return r, fmt.Errorf("%s: schema %q, this rdmasuite reads %q", name, r.Schema, Schema)
	}
	if err := r.Validate(); err != nil {
		return r, fmt.Errorf("%s: invalid results: %w", name, err)
	}
	return r, nil
}

// maxResultsBytes bounds a decompressed results file (a 1024-node × 8-rail
// run is ≈ 41 MB): a gzip bomb is refused, not read into memory.
const maxResultsBytes = 1 << 30
