package main

import (
	"io"
	"os"
	"strings"
	"testing"
)

// captureStdout runs f with os.Stdout going to a pipe and returns what it
// printed.
func captureStdout(t *testing.T, f func()) string {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	old := os.Stdout
	os.Stdout = w
	done := make(chan string)
	go func() { b, _ := io.ReadAll(r); done <- string(b) }()
	f()
	os.Stdout = old
	w.Close()
	return <-done
}

// --help never runs a probe: `env --help` used to print the pod's
// environment as JSON. help and -h exit 0; bad usage exits 2.
func TestProbeHelp(t *testing.T) {
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--help"}, 0, "Subcommands:"},
		{[]string{"help"}, 0, "Subcommands:"},
		{[]string{"env", "--help"}, 0, "rdmaprobe env: print the pod's"},
		{[]string{"version", "-h"}, 0, "rdmaprobe version:"},
		{[]string{"bw", "--help"}, 0, "bw server [flags]"},
		{[]string{"mr", "-h"}, 0, "rdmaprobe mr:"},
		{[]string{"help", "stall"}, 0, "rdmaprobe stall:"},
		{[]string{"frobnicate"}, 2, ""},
	} {
		var code int
		out := captureStdout(t, func() { code = run(c.args) })
		if code != c.code || !strings.Contains(out, c.want) || strings.Contains(out, `"schema"`) {
			t.Errorf("%q: exit %d (want %d), stdout %q (want %q, and no probe output)", c.args, code, c.code, out, c.want)
		}
	}
}
