package reports

import (
	"bytes"
	"encoding/xml"
	"strings"
	"testing"
)

// The renderers carry the localisation only when there is a finding; JUnit
// stays valid XML with it as the suite's system-out.
func TestRenderLocalisation(t *testing.T) {
	bad := locRun(locPairChecks("shared-dev", locRing4, locRails, locFailWhen(locInvolves("n2"), "mlx5_1/1")))
	const expl = "n2 failed with all 2 partners on rail mlx5_1/1 and passed on mlx5_0/1 with 2 partners (n1, n3): suspect its mlx5_1/1 port/cable/switch port, not the fabric"
	good := locRun(locPairChecks("shared-dev", locRing4, locRails, locAllPass))
	good.Checks[len(good.Checks)-1].Status = Pass

	var tb, gtb bytes.Buffer
	if err := Table(&tb, bad); err != nil {
		t.Fatal(err)
	}
	if want := "localisation (pair checks: node, port or link):\n  bad-port [shared-dev]: " + expl + " (bandwidth/read, bandwidth/write)\n"; !strings.Contains(tb.String(), want) {
		t.Errorf("table lacks %q:\n%s", want, tb.String())
	}
	if err := Table(&gtb, good); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(gtb.String(), "localisation") {
		t.Errorf("an all-pass table has a localisation:\n%s", gtb.String())
	}

	var mdb, gmdb bytes.Buffer
	if err := Markdown(&mdb, bad); err != nil {
		t.Fatal(err)
	}
	md := mdb.String()
	if want := "\n## Localisation\n\n- **bad-port** (shared-dev): " + expl + " — `bandwidth/read`, `bandwidth/write`\n"; !strings.Contains(md, want) {
		t.Errorf("markdown lacks %q:\n%s", want, md)
	}
	if strings.Index(md, "## Localisation") < strings.Index(md, "## Checks") {
		t.Errorf("the localisation comes before the checks:\n%s", md)
	}
	if err := Markdown(&gmdb, good); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(gmdb.String(), "Localisation") {
		t.Errorf("an all-pass report has a localisation:\n%s", gmdb.String())
	}

	for _, tc := range []struct {
		name string
		run  Run
		want string
	}{
		{"findings", bad, "localisation (pair checks: node, port or link):\nbad-port [shared-dev]: " + expl + " (bandwidth/read, bandwidth/write)"},
		{"none", good, ""},
	} {
		var jb bytes.Buffer
		if err := JUnit(&jb, tc.run); err != nil {
			t.Fatal(err)
		}
		var parsed junitSuites
		if err := xml.Unmarshal(jb.Bytes(), &parsed); err != nil {
			t.Fatalf("%s: junit does not parse: %v\n%s", tc.name, err, jb.String())
		}
		s := parsed.Suites[0]
		if s.SystemOut != tc.want || s.Tests != len(tc.run.Checks) {
			t.Errorf("%s: suite system-out %q (want %q), %d tests:\n%s", tc.name, s.SystemOut, tc.want, s.Tests, jb.String())
		}
		// system-out follows the test cases, as the JUnit schema orders them.
		if out := strings.Index(jb.String(), "<system-out>localisation"); tc.want != "" && out < strings.LastIndex(jb.String(), "<testcase") {
			t.Errorf("%s: the suite's system-out is not after its cases:\n%s", tc.name, jb.String())
		}
	}
}
