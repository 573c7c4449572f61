package runner

import (
	"os/exec"
	"strings"
	"testing"
)

// The runner (and the suites and CLI built on it) must build without cgo:
// only workloads/verbs may use it, and nothing here may import it.
func TestRunnerNeverImportsTheCgoPackage(t *testing.T) {
	for _, pkg := range []string{".", "../../suites", "../../cmd/rdmasuite"} {
		cmd := exec.Command("go", "list", "-test", "-deps", pkg)
		cmd.Env = append(cmd.Environ(), "CGO_ENABLED=0")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("go list %s with CGO_ENABLED=0: %v\n%s", pkg, err, out)
		}
		for _, dep := range strings.Fields(string(out)) {
			if strings.HasSuffix(dep, "/workloads/verbs") || strings.HasSuffix(dep, "/workloads/bwverbs") {
				t.Errorf("%s depends on %s (cgo)", pkg, dep)
			}
		}
	}
}
