// Command expectresults asserts a suite results file against an expectation
// table, so `make test` can prove the suite reports what the bed really is
// (e.g. the bandwidth checks FAIL with the exact diagnosis on nodes that
// advertise RDMA without a device). Every check in the results must be
// covered by a line, and every line must match at least one check.
//
// Expectation lines: CHECK-ID VARIANT NODE STATUS [TEXT...]
// NODE "*" matches any nodes; VARIANT "-" means none; TEXT must appear in
// the diagnosis or reason ("-" for none expected). NODE:RAIL matches a
// per-rail check measured on NODE (the check's first node, the measuring
// side) whose rail starts with RAIL, e.g. rxe-node-2:rxe1/1.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/rdmasuite/rdmasuite/reports"
)

type expectation struct {
	line                         int
	id, variant, node, status, s string
	matched                      int
}

func main() {
	resultsPath := flag.String("results", "", "results JSON")
	expectPath := flag.String("expect", "", "expectation table")
	flag.Parse()
	run, err := reports.Read(*resultsPath)
	if err != nil {
		fail("%v", err)
	}
	exps, err := readExpectations(*expectPath)
	if err != nil {
		fail("%v", err)
	}
	bad := 0
	for _, c := range run.Checks {
		covered := false
		for _, e := range exps {
			if e.id != c.ID || e.variant != orDash(c.Variant) || !e.matchesNode(c) {
				continue
			}
			covered = true
			e.matched++
			text := c.Diagnosis + " " + c.Reason
			if string(c.Status) != e.status || (e.s != "-" && !strings.Contains(text, e.s)) {
				fmt.Printf("MISMATCH %s:%d: %s [%s] %v: got %s %q, want %s containing %q\n",
					*expectPath, e.line, c.ID, c.Variant, c.Nodes, c.Status, strings.TrimSpace(text), e.status, e.s)
				bad++
			}
		}
		if !covered {
			fmt.Printf("UNEXPECTED check %s [%s] %v: %s %s%s\n", c.ID, c.Variant, c.Nodes, c.Status, c.Diagnosis, c.Reason)
			bad++
		}
	}
	for _, e := range exps {
		if e.matched == 0 {
			fmt.Printf("MISSING %s:%d: no check %s [%s] on %s in the results\n", *expectPath, e.line, e.id, e.variant, e.node)
			bad++
		}
	}
	if bad > 0 {
		fail("%d expectation(s) not met by %s", bad, *resultsPath)
	}
	fmt.Printf("expectresults: all %d checks in %s match %s\n", len(run.Checks), *resultsPath, *expectPath)
}

func (e *expectation) matchesNode(c reports.Check) bool {
	node, rail, perRail := strings.Cut(e.node, ":")
	if perRail {
		return len(c.Nodes) > 0 && c.Nodes[0] == node && strings.HasPrefix(c.Rail, rail)
	}
	return e.node == "*" || slices.Contains(c.Nodes, e.node)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func readExpectations(path string) ([]*expectation, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []*expectation
	sc := bufio.NewScanner(f)
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) < 5 {
			return nil, fmt.Errorf("%s:%d: want CHECK VARIANT NODE STATUS TEXT", path, n)
		}
		out = append(out, &expectation{line: n, id: f[0], variant: f[1], node: f[2], status: f[3], s: strings.Join(f[4:], " ")})
	}
	return out, sc.Err()
}

func fail(format string, a ...any) {
	fmt.Fprintf(os.Stderr, "expectresults: "+format+"\n", a...)
	os.Exit(1)
}
