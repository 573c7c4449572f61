package runner

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes/fake"

	"github.com/rdmasuite/rdmasuite/internal/verdict"
	"github.com/rdmasuite/rdmasuite/thresholds"
)

// Every entry is complete, named once, and its verdict's checks belong to
// its family: the report, the plan and the selection all read Name.
func TestPairedSpecsAreComplete(t *testing.T) {
	cfg := testConfig(t)
	seen := map[string]bool{}
	nodeRows := 0
	for _, s := range PairedSpecs() {
		if s.Name == "" || s.Test == "" || s.Suite == "" || s.Title == "" || s.Assess == "" || s.Memory == nil || s.Ops == nil ||
			s.Sizes == nil || s.RunArgs == nil || s.PerMeasurement == nil || s.Judge == nil {
			t.Errorf("%q: incomplete entry %+v", s.Name, s)
			continue
		}
		if seen[s.Name] || seen[s.Test] {
			t.Errorf("%s / %s defined twice", s.Name, s.Test)
		}
		seen[s.Name], seen[s.Test] = true, true
		if s.NodeRows {
			nodeRows++
		}
		ops := s.Ops(cfg.ncclSettings())
		if len(ops) == 0 || len(s.Sizes(cfg)) == 0 || s.PerMeasurement(cfg) <= 0 {
			t.Errorf("%s measures nothing with the defaults: ops %v sizes %v", s.Name, ops, s.Sizes(cfg))
		}
		// A pair that left no output: every op is a check of the family,
		// and none passes.
		res := s.Judge(verdict.BWInput{Variant: "shared-dev", Ops: ops, Sizes: s.Sizes(cfg)})
		if len(res.Checks) != len(ops) {
			t.Errorf("%s: %d checks for ops %v", s.Name, len(res.Checks), ops)
		}
		for _, c := range append(res.Checks, res.LinkChecks...) {
			if !strings.HasPrefix(c.ID, s.Name+"/") || c.Status == "pass" {
				t.Errorf("%s judged an empty pair as %s %s", s.Name, c.ID, c.Status)
			}
		}
	}
	if nodeRows != 1 {
		t.Errorf("%d features own the node rows, want exactly 1", nodeRows)
	}
	// Every optional key of the thresholds file is some paired feature's
	// (a SKU without it makes that feature not-run, and thresholds list
	// says which); every key a feature names exists.
	claimed := map[string]bool{}
	for _, s := range PairedSpecs() {
		if len(s.Thresholds) == 0 {
			t.Errorf("%s names no thresholds key", s.Name)
		}
		for _, key := range s.Thresholds {
			if !slices.Contains(thresholds.Keys(), key) {
				t.Errorf("%s: %q is no key of a thresholds SKU (%v)", s.Name, key, thresholds.Keys())
			}
			claimed[key] = true
		}
	}
	for _, key := range thresholds.OptionalKeys() {
		if !claimed[key] {
			t.Errorf("optional thresholds key %s is judged by no paired feature", key)
		}
	}
	if _, err := PairedSpecOf("atomic"); err == nil || !strings.Contains(err.Error(), "bandwidth") {
		t.Errorf("an unknown feature: %v", err)
	}
}

// The suite declares each entry in the Go test the entry names (the run's
// plan predicts -run and -skip from Test), and declares nothing else as
// a paired feature.
func TestSuitesDeclareEachPairedSpecInItsTest(t *testing.T) {
	fset := token.NewFileSet()
	files, err := filepath.Glob("../../suites/*_test.go")
	if err != nil || len(files) == 0 {
		t.Fatalf("suites: %v %v", files, err)
	}
	declared := map[string]string{} // Go test → paired feature constant
	for _, f := range files {
		file, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range file.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || !strings.HasPrefix(fn.Name.Name, "Test") {
				continue
			}
			ast.Inspect(fn, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if id, isID := func() (*ast.Ident, bool) {
					if !ok {
						return nil, false
					}
					i, ok := call.Fun.(*ast.Ident)
					return i, ok
				}(); isID && id.Name == "pairedFeatures" && len(call.Args) == 1 {
					if sel, ok := call.Args[0].(*ast.SelectorExpr); ok {
						declared[fn.Name.Name] = sel.Sel.Name
					}
				}
				return true
			})
		}
	}
	for _, s := range PairedSpecs() {
		if declared[s.Test] == "" {
			t.Errorf("no Go test %s in suites declares pairedFeatures(runner.…) for %s", s.Test, s.Name)
		}
		delete(declared, s.Test)
	}
	for test, c := range declared {
		t.Errorf("%s declares paired feature %s, which no registry entry names in Test", test, c)
	}
}

// Latency under load is the latency probe with a stream of the bandwidth
// feature's largest size beside it, on write only, judged by its verdict.
func TestLatencyLoadRunsTheLatencyProbeUnderAStream(t *testing.T) {
	s, err := PairedSpecOf(PairedLatencyLoad)
	if err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(t)
	cfg.BWSizes = []int{1 << 20, 65536}
	if got := strings.Join(s.RunArgs(cfg), " "); got != "--iters 1000 --load-size 1048576" {
		t.Errorf("client flags %q", got)
	}
	if got := strings.Join(s.Memory(cfg).args(), " "); got != "--latency" {
		t.Errorf("both sides' flags %q", got)
	}
	if ops := s.Ops(cfg); strings.Join(ops, ",") != "write" || s.Suite != "latency-load" || s.GPUNodes || s.NodeRows {
		t.Errorf("%+v ops %v", s, ops)
	}
	r := New(fake.NewClientset(), cfg, "t-ll")
	f := r.pairedFeature(PairedLatencyLoad)
	if b := r.clientBudget(nil, f); b < cfg.PodTimeout+37*time.Second {
		t.Errorf("client budget %s leaves no room for the stream", b)
	}
}
