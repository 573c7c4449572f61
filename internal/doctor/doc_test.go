package doctor

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite KNOWN_ANSWERS.md from the rules and their known answers")

// knownAnswersDoc renders the known-answer document: per rule, what raises
// it, what must not, cause, fix, and the tested states with their sources.
func knownAnswersDoc() string {
	var b strings.Builder
	b.WriteString("# Doctor known answers\n\n")
	b.WriteString("Generated from the registered rules (`internal/doctor/rules_*.go`) and their known-answer tests\n")
	b.WriteString("(`knownanswers*_test.go`); regenerate with `go test ./internal/doctor -run TestKnownAnswersDoc -update`.\n")
	b.WriteString("Sources `realworld/…` are excerpts of public reports in `testdata/realworld`, each citing its origin.\n")
	b.WriteString("A node without findings passes `doctor/node` only when its API and host facts were read and judged;\n")
	b.WriteString("otherwise it is not-run with the reason.\n")
	for _, r := range Rules() {
		fmt.Fprintf(&b, "\n## %s\n\n%s, seed %s.\n\n", r.ID, r.Severity, r.Seed)
		fmt.Fprintf(&b, "- **Raised by:** %s\n", r.Raises)
		b.WriteString("- **Must not be raised by:**\n")
		for _, s := range r.Silent {
			fmt.Fprintf(&b, "  - %s\n", s)
		}
		fmt.Fprintf(&b, "- **Cause:** %s\n- **Fix:** %s\n- **Tested states:**\n", r.Cause, r.Fix)
		for _, k := range knownAnswers {
			if k.rule != r.ID {
				continue
			}
			verb := "silent"
			if k.raises {
				verb = "raises on " + k.node
				if k.node == "" {
					verb = "raises (cluster-wide, not-run)"
				}
			}
			fmt.Fprintf(&b, "  - %s: %s (%s)\n", verb, k.name, k.source)
		}
	}
	return b.String()
}

func TestKnownAnswersDoc(t *testing.T) {
	want := knownAnswersDoc()
	if *update {
		if err := os.WriteFile("KNOWN_ANSWERS.md", []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile("KNOWN_ANSWERS.md")
	if err != nil || string(got) != want {
		t.Fatalf("KNOWN_ANSWERS.md is out of date with the rules: run go test ./internal/doctor -run TestKnownAnswersDoc -update")
	}
}
