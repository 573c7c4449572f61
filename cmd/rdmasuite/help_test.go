package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/rdmasuite/rdmasuite/reports"
)

// --help, -h and help exit 0 and print, on stdout, what the command is for,
// its usage, examples and flags; nothing runs and no file named --help is
// opened. A wrong command or flag still exits 2, pointing at --help.
func TestHelpConventions(t *testing.T) {
	cases := []struct {
		args []string
		want []string
	}{
		{[]string{"--help"}, []string{"Usage:", "rdmasuite report", "Examples:", "rdmasuite help COMMAND"}},
		{[]string{"-h"}, []string{"Usage:", "rdmasuite doctor"}},
		{[]string{"help"}, []string{"Usage:", "rdmasuite cleanup"}},
		{nil, []string{"Usage:", "rdmasuite thresholds"}},
		{[]string{"report", "-h"}, []string{"Render a results file", "Usage:", "Examples:", "--baseline", "--format"}},
		{[]string{"report", "--help"}, []string{"Render a results file", "--tolerance"}},
		{[]string{"help", "report"}, []string{"Render a results file"}},
		{[]string{"push", "--help"}, []string{"Pushgateway", "--grouping"}},
		{[]string{"doctor", "--help"}, []string{"known failure modes", "--kubeconfig", "~/.kube/config"}},
		{[]string{"cleanup", "-h"}, []string{"leftover", "--older-than"}},
		{[]string{"thresholds", "--help"}, []string{"check", "list", "--overlay"}},
		{[]string{"thresholds", "check", "--help"}, []string{"Validate thresholds as the suite would load them", "--overlay", "--replace"}},
		{[]string{"thresholds", "list", "-h"}, []string{"List the SKUs", "--overlay"}},
		{[]string{"version", "--help"}, []string{"Print the version"}},
	}
	for _, c := range cases {
		var out, errb bytes.Buffer
		if got := run(c.args, &out, &errb); got != reports.ExitPassed {
			t.Errorf("%q: exit %d, want 0\nstderr: %s", c.args, got, errb.String())
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(out.String(), w) {
				t.Errorf("%q: stdout lacks %q:\n%s", c.args, w, out.String())
			}
		}
		if strings.Contains(errb.String(), "no such file") {
			t.Errorf("%q: tried to open a file: %s", c.args, errb.String())
		}
	}
	for _, args := range [][]string{{"frobnicate"}, {"report", "--no-such-flag", "x.json"}, {"thresholds", "frob"}} {
		var out, errb bytes.Buffer
		if got := run(args, &out, &errb); got != reports.ExitBroken || !strings.Contains(errb.String(), "--help") {
			t.Errorf("%q: exit %d, stderr %q: want 2 and a pointer to --help", args, got, errb.String())
		}
	}
}
