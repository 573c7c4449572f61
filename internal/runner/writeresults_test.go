package runner

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmasuite/rdmasuite/reports"
)

// A run leaves its results and its acceptance page side by side, each
// with a stable name pointing at the latest run: an operator opens
// report.html without running another command.
func TestResultsAndTheHTMLPageSideBySide(t *testing.T) {
	dir := t.TempDir()
	for _, r := range []reports.Run{
		{RunID: "aaaa1111", Checks: []reports.Check{{ID: "memlock/rlimit", Nodes: []string{"n1"}, Status: reports.Pass}}},
		{RunID: "bbbb2222", Checks: []reports.Check{{ID: "memlock/rlimit", Nodes: []string{"n1"}, Status: reports.Fail, Fix: "raise LimitMEMLOCK"}}},
	} {
		path, err := WriteResults(dir, r)
		if err != nil {
			t.Fatal(err)
		}
		if filepath.Base(path) != "results-"+r.RunID+".json" {
			t.Fatalf("results path %s", path)
		}
		if p, err := WritePage(filepath.Dir(path), r); err != nil || p != filepath.Join(dir, "report-"+r.RunID+".html") {
			t.Fatalf("page %s: %v", p, err)
		}
		page, err := os.ReadFile(filepath.Join(dir, "report.html"))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(page), "rdmasuite acceptance report "+r.RunID) || !strings.Contains(string(page), reports.SummaryText(r)) {
			t.Fatalf("report.html is not run %s's page", r.RunID)
		}
		if _, err := os.Stat(filepath.Join(dir, "report-"+r.RunID+".html")); err != nil {
			t.Fatal(err)
		}
		if got, err := reports.Read(filepath.Join(dir, "results.json")); err != nil || got.RunID != r.RunID {
			t.Fatalf("results.json: %v %s", err, got.RunID)
		}
	}
	if page, _ := os.ReadFile(filepath.Join(dir, "report.html")); !strings.Contains(string(page), "raise LimitMEMLOCK") {
		t.Fatal("the failing run's fix is not on its page")
	}
}
