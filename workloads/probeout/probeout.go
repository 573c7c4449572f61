// Package probeout defines the envelope every rdmaprobe subcommand prints, so
// the suites can parse any probe's output the same way (from pod logs or the
// termination message) and tell probes and schema versions apart.
package probeout

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// Schema is bumped whenever a field of an envelope or a probe result changes
// meaning; readers refuse envelopes with a different schema.
const Schema = 2

// Version of the probe binary; set at build time with
// -ldflags "-X github.com/rdmasuite/rdmasuite/workloads/probeout.Version=…".
var Version = "dev"

// Released says whether version is a release's (vMAJOR.MINOR.PATCH, as
// a release tag reads): what make stamps from a source tree (git describe:
// a commit, "-dirty", or commits past a tag) and "dev" are not, and no
// image of that tag was published.
func Released(version string) bool {
	v, ok := strings.CutPrefix(version, "v")
	parts := strings.Split(v, ".")
	if !ok || len(parts) != 3 {
		return false
	}
	for _, p := range parts {
		if p == "" || strings.Trim(p, "0123456789") != "" {
			return false
		}
	}
	return true
}

// Commit is the source commit the binary was built from, stamped by make
// the same way (-X …probeout.Commit=…); empty when not stamped, and then
// the Go toolchain's vcs.revision (when it embedded one) stands in.
var Commit = ""

// Envelope wraps one probe result. Error is set when the probe could not
// produce (all of) its result; the result then holds what it did measure.
type Envelope struct {
	Schema  int             `json:"schema"`
	Probe   string          `json:"probe"`
	Version string          `json:"version"`
	Result  json.RawMessage `json:"result"`
	Error   *Error          `json:"error,omitempty"`
}

// Kind classifies why a probe (or one rail of it) produced no measurement.
// Runners decide on kinds, never on message substrings.
type Kind string

const (
	KindNoDevice  Kind = "no-device" // no RDMA device visible in the pod
	KindNoNetdev  Kind = "no-netdev" // the named interface has no RDMA device behind it
	KindLinkDown  Kind = "link-down" // the port is not ACTIVE
	KindMemlock   Kind = "memlock"   // memory registration refused (RLIMIT_MEMLOCK, ENOMEM)
	KindTransport Kind = "transport" // a work completion failed (retry exceeded, remote access, flush)
	KindPeer      Kind = "peer"      // the other side failed; its own output names why
	KindTimeout   Kind = "timeout"   // the peer never connected, or a run did not finish in time
	KindUsage     Kind = "usage"     // bad flags or arguments
	KindInternal  Kind = "internal"  // anything else
	// KindNoGPU: the probe needs a GPU and the pod has none usable: no CUDA
	// driver library, no device, or no NCCL library. A not-run, never a
	// fail: nothing on the fabric was measured.
	KindNoGPU Kind = "no-gpu"
	// KindGPUDirect: the GPU and the NIC are there, and neither GPUDirect
	// RDMA path (dma-buf, nvidia_peermem) registered the GPU buffer. A
	// fail: seed 001's nvidia_peermem that did not load ahead of MOFED.
	KindGPUDirect Kind = "gpudirect"
)

// Kinds lists every valid kind (for validation and tests).
var Kinds = []Kind{KindNoDevice, KindNoNetdev, KindLinkDown, KindMemlock, KindTransport, KindPeer, KindTimeout, KindUsage, KindInternal, KindNoGPU, KindGPUDirect}

// Error is a typed probe error.
type Error struct {
	Kind    Kind   `json:"kind"`
	Message string `json:"message"`
}

func (e *Error) Error() string { return string(e.Kind) + ": " + e.Message }

// Valid reports whether the kind is one this schema defines.
func (e *Error) Valid() bool {
	for _, k := range Kinds {
		if e.Kind == k {
			return true
		}
	}
	return false
}

// Errorf builds a typed error.
func Errorf(kind Kind, format string, args ...any) *Error {
	return &Error{Kind: kind, Message: fmt.Sprintf(format, args...)}
}

// Write prints v as the result of probe on one line of JSON.
func Write(w io.Writer, probe string, v any) error { return WriteError(w, probe, v, nil) }

// WriteError prints v (what was measured) with the typed error that stopped
// the probe, if any.
func WriteError(w io.Writer, probe string, v any, perr *Error) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode %s result: %w", probe, err)
	}
	line, err := json.Marshal(Envelope{Schema: Schema, Probe: probe, Version: Version, Result: raw, Error: perr})
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", line)
	return err
}

// Parse finds the last envelope of the given probe in output (pod logs may
// carry other lines, e.g. warnings from libraries) and decodes its result
// into v.
func Parse(output, probe string, v any) error {
	_, err := ParseError(output, probe, v)
	return err
}

// ParseError is Parse that also returns the envelope's typed error. An
// error of an unknown kind is a parse error: the reader cannot judge it.
func ParseError(output, probe string, v any) (*Error, error) {
	env, err := find(output, probe)
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(env.Result, v); err != nil {
		return nil, fmt.Errorf("decode %s result: %w", probe, err)
	}
	if env.Error != nil && !env.Error.Valid() {
		return nil, fmt.Errorf("%s result carries an error of unknown kind %q (%s): use the rdmaprobe image built from the same release", probe, env.Error.Kind, env.Error.Message)
	}
	return env.Error, nil
}

func find(output, probe string) (Envelope, error) {
	lines := strings.Split(strings.TrimSpace(output), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		line := strings.TrimSpace(lines[i])
		if !strings.HasPrefix(line, "{") {
			continue
		}
		var env Envelope
		if json.Unmarshal([]byte(line), &env) != nil {
			// A cut envelope (the pod killed mid-write, a truncated log)
			// of this probe, or cut before its name: an earlier whole one
			// is not what the probe finished with, so nothing is judged.
			if cutEnvelope(line, probe) {
				return Envelope{}, fmt.Errorf("the last %s result is truncated (%d bytes, ends %q): the probe's output was cut "+
					"(pod killed while writing, or the log was truncated); an earlier result is not judged in its place", probe, len(line), tail(line, 40))
			}
			continue
		}
		if env.Probe != probe {
			continue
		}
		if env.Schema != Schema {
			return env, fmt.Errorf("%s result has schema %d, this suite reads schema %d: use the rdmaprobe image built from the same release", probe, env.Schema, Schema)
		}
		return env, nil
	}
	return Envelope{}, fmt.Errorf("no %q result in probe output (%d bytes): %s", probe, len(output), tail(output, 400))
}

// cutEnvelope says whether an undecodable line is the start of an envelope
// of probe, or of one cut before its probe name.
func cutEnvelope(line, probe string) bool {
	if !strings.HasPrefix(line, `{"schema":`) {
		return false
	}
	i := strings.Index(line, `"probe":`)
	if i < 0 {
		return true
	}
	name := strings.TrimPrefix(line[i+len(`"probe":`):], `"`)
	return strings.HasPrefix(name, probe+`"`) || strings.HasPrefix(probe, name)
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}
