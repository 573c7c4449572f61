package suiteflags

import (
	"bytes"
	"flag"
	"strings"
	"testing"
)

// panicky is a flag whose String panics on its zero value, as
// e2e-framework's feature-gates does.
type panicky struct{ m map[string]bool }

func (p *panicky) String() string {
	if p.m == nil {
		panic("String on a zero value") // what flag.PrintDefaults does to find defaults
	}
	return "a=true"
}
func (p *panicky) Set(v string) error { return nil }

func TestUsageListsTheSuiteFirstAndNeverPanics(t *testing.T) {
	fs := flag.NewFlagSet("suites.test", flag.ContinueOnError)
	fs.String("bw-sizes", "64K,1M", "message sizes")
	fs.Bool("allow-disruptive", false, "may restart drivers")
	ours := Names(fs)
	// Registered later by testing, e2e-framework and klog.
	fs.String("test.run", "", "run only")
	fs.String("labels", "", "feature labels")
	fs.String("vmodule", "", "klog")
	fs.Var(&panicky{m: map[string]bool{"a": true}}, "feature-gates", "gates")

	var b bytes.Buffer
	Usage(&b, fs, ours)
	out := b.String()
	suite, framework := strings.Index(out, "\n  --allow-disruptive"), strings.Index(out, "\n  --labels")
	if suite < 0 || framework < 0 || suite > framework || !strings.Contains(out, "--bw-sizes string") || !strings.Contains(out, "(default 64K,1M)") {
		t.Fatalf("suite flags must come first, then the framework's:\n%s", out)
	}
	for _, gone := range []string{"test.run", "vmodule", "feature-gates"} {
		if strings.Contains(out, "--"+gone) {
			t.Errorf("%s is listed:\n%s", gone, out)
		}
	}
	if n := strings.Count(out, "\n"); n > 40 {
		t.Errorf("%d lines for 3 flags", n)
	}
}

// Flag help wraps to the terminal: no line of a description
// is wider than asked (a single word longer than that stays whole), and
// nothing of it is lost.
func TestLineWidthWraps(t *testing.T) {
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	f := fs.String("node-selector", "", "label selector for the nodes to test; every selected node must then advertise the resource (see https://example.com/a-very-long-unbreakable-address-of-the-docs)")
	_ = f
	got := LineWidth(fs.Lookup("node-selector"), 50)
	for _, l := range strings.Split(got, "\n") {
		if len([]rune(l)) > 50 && !strings.Contains(l, "https://") {
			t.Errorf("line wider than 50: %q", l)
		}
	}
	if strings.Join(strings.Fields(got), " ") != strings.Join(strings.Fields(Line(fs.Lookup("node-selector"))), " ") {
		t.Errorf("wrapping lost words:\n%s\n%s", got, Line(fs.Lookup("node-selector")))
	}
	if strings.Count(got, "\n") < 3 {
		t.Errorf("not wrapped: %q", got)
	}
}
