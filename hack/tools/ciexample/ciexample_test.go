// Package ciexample keeps the CI examples in .ci/examples true: every
// flag they pass must be one the suite or the rdmasuite CLI defines, and
// every path they run must exist, so a renamed flag fails here instead of
// in an operator's nightly job.
package ciexample

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// e2eFlags are sigs.k8s.io/e2e-framework's own flags the examples may use.
var e2eFlags = map[string]bool{"kubeconfig": true, "labels": true, "skip-labels": true, "feature": true,
	"skip-features": true, "assess": true, "skip-assessment": true, "fail-fast": true, "parallel": true, "namespace": true}

var (
	flagDef   = regexp.MustCompile(`(?:flag|fs)\.(?:String|Bool|Int|Int64|Float64|Duration|Var|Func)\(\s*(?:&?[A-Za-z_.]+,\s*)?"([a-z][a-z0-9-]*)"`)
	flagUse   = regexp.MustCompile(`(?:^|\s)--([a-z][a-z0-9-]*)`)
	goPackage = regexp.MustCompile(`go (?:test|run)[^\n]*?\s(\./[A-Za-z0-9_/.-]+)`)
)

func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", "..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// definedFlags are the flag names the suite (suites/*_test.go,
// internal/lifecycle/flags.go) and the rdmasuite CLI (cmd/rdmasuite/*.go)
// define.
func definedFlags(t *testing.T, root string) map[string]bool {
	t.Helper()
	defined := map[string]bool{}
	for _, glob := range []string{"suites/*_test.go", "internal/lifecycle/flags.go", "cmd/rdmasuite/*.go"} {
		files, _ := filepath.Glob(filepath.Join(root, glob))
		for _, f := range files {
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range flagDef.FindAllStringSubmatch(string(src), -1) {
				defined[m[1]] = true
			}
		}
	}
	if !defined["report-dir"] || !defined["format"] {
		t.Fatalf("flag scan found neither --report-dir nor --format (%d flags): the scanner is broken", len(defined))
	}
	return defined
}

func TestExamplesUseRealFlagsAndPaths(t *testing.T) {
	root := repoRoot(t)
	examples, _ := filepath.Glob(filepath.Join(root, ".ci", "examples", "*.yml"))
	if len(examples) == 0 {
		t.Fatal("no example in .ci/examples")
	}
	defined := definedFlags(t, root)
	for _, ex := range examples {
		src, err := os.ReadFile(ex)
		if err != nil {
			t.Fatal(err)
		}
		var body []string
		for _, l := range strings.Split(string(src), "\n") {
			if !strings.HasPrefix(strings.TrimSpace(l), "#") {
				body = append(body, l)
			}
		}
		text := strings.Join(body, "\n")
		used := flagUse.FindAllStringSubmatch(text, -1)
		if len(used) == 0 {
			t.Errorf("%s: no flag found: the scanner is broken", ex)
		}
		for _, m := range used {
			if !defined[m[1]] && !e2eFlags[m[1]] {
				t.Errorf("%s: --%s is not a flag of the suite, the rdmasuite CLI or e2e-framework", filepath.Base(ex), m[1])
			}
		}
		for _, m := range goPackage.FindAllStringSubmatch(text, -1) {
			if _, err := os.Stat(filepath.Join(root, m[1])); err != nil {
				t.Errorf("%s: runs %s, which does not exist", filepath.Base(ex), m[1])
			}
		}
		if strings.Contains(text, "go-version-file: go.mod") {
			if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
				t.Errorf("%s: go.mod missing", ex)
			}
		}
	}
}
