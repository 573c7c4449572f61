// Command basespec sets RLIMIT_MEMLOCK in an OCI runtime spec read from
// stdin (the output of `ctr oci spec`) and writes it to stdout: the
// containerd base_runtime_spec fix of seed 002, used by the bed to give each
// node's pods its configured memlock limit.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
)

func main() {
	memlock := flag.Uint64("memlock", 0, "RLIMIT_MEMLOCK soft and hard, in bytes (18446744073709551615 = unlimited)")
	flag.Parse()
	if *memlock == 0 {
		fmt.Fprintln(os.Stderr, "usage: ctr oci spec | basespec -memlock BYTES > spec.json")
		os.Exit(2)
	}
	var spec map[string]any
	if err := json.NewDecoder(os.Stdin).Decode(&spec); err != nil {
		fmt.Fprintf(os.Stderr, "basespec: stdin is not an OCI spec: %v\n", err)
		os.Exit(1)
	}
	proc, ok := spec["process"].(map[string]any)
	if !ok {
		fmt.Fprintln(os.Stderr, "basespec: spec has no process section")
		os.Exit(1)
	}
	var out []any
	if rl, ok := proc["rlimits"].([]any); ok {
		for _, r := range rl {
			if m, ok := r.(map[string]any); ok && m["type"] == "RLIMIT_MEMLOCK" {
				continue
			}
			out = append(out, r)
		}
	}
	proc["rlimits"] = append(out, map[string]any{"type": "RLIMIT_MEMLOCK", "hard": *memlock, "soft": *memlock})
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(spec); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
