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
const Schema = 1

// Version of the probe binary; set at build time with
// -ldflags "-X github.com/rdmasuite/rdmasuite/workloads/probeout.Version=…".
var Version = "dev"

// Envelope wraps one probe result.
type Envelope struct {
	Schema  int             `json:"schema"`
	Probe   string          `json:"probe"`
	Version string          `json:"version"`
	Result  json.RawMessage `json:"result"`
}

// Write prints v as the result of probe on one line of JSON.
func Write(w io.Writer, probe string, v any) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode %s result: %w", probe, err)
	}
	line, err := json.Marshal(Envelope{Schema: Schema, Probe: probe, Version: Version, Result: raw})
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
	lines := strings.Split(strings.TrimSpace(output), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		line := strings.TrimSpace(lines[i])
		if !strings.HasPrefix(line, "{") {
			continue
		}
		var env Envelope
		if json.Unmarshal([]byte(line), &env) != nil || env.Probe != probe {
			continue
		}
		if env.Schema != Schema {
			return fmt.Errorf("%s result has schema %d, this suite reads schema %d: use the rdmaprobe image built from the same release", probe, env.Schema, Schema)
		}
		if err := json.Unmarshal(env.Result, v); err != nil {
			return fmt.Errorf("decode %s result: %w", probe, err)
		}
		return nil
	}
	return fmt.Errorf("no %q result in probe output (%d bytes): %s", probe, len(output), tail(output, 400))
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}
