// Command expectresults asserts a suite results file against an expectation
// table, so `make test` can prove the suite reports what the bed really is
// (e.g. the bandwidth checks FAIL with the exact diagnosis on nodes that
// advertise RDMA without a device). Every check in the results must be
// covered by a line, and every line must match at least one check.
//
// Expectation lines: CHECK-ID VARIANT NODE STATUS [TEXT...]
// STATUS may list alternatives, "pass|fail", only where the bed cannot
// decide the outcome and the stage does not assert it (a measurement over
// a link staged lossy: its link check is what is asserted).
// NODE "*" matches any nodes; VARIANT "-" means none; TEXT must appear in
// the diagnosis or reason ("-" for none expected). NODE:RAIL matches a
// per-rail check measured on NODE (the check's first node, the measuring
// side) whose rail starts with RAIL, e.g. rxe-node-2:rxe1/1. NODE "a,b"
// matches a check on exactly those nodes, in that order.
//
// Bound lines: "@measured CHECK-ID NODE NAME LOW HIGH" require the
// measurement NAME of that check on NODE to lie in (LOW, HIGH]: a measured
// value, not just a status (e.g. a stall that is > 0 and within its limit).
// NODE:RAIL picks the per-rail check measured on NODE whose rail starts
// with RAIL, as on expectation lines.
//
// Evidence lines: "@evidence ID-PREFIX TEXT" require every check whose id
// starts with ID-PREFIX (at least one) to carry an evidence line
// containing TEXT: what happened on the way to a not-run, not just its
// reason (e.g. every NCCL rank joined before CUDA stopped the world).
package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/rdmasuite/rdmasuite/reports"
)

// bound is one @measured line.
type bound struct {
	line           int
	id, node, name string
	low, high      float64
}

// evidenceRule is one @evidence line.
type evidenceRule struct {
	line         int
	prefix, text string
}

// check returns why the rule is not met ("" when it is).
func (r evidenceRule) check(checks []reports.Check) string {
	n := 0
	var without []string
	for _, c := range checks {
		if !strings.HasPrefix(c.ID, r.prefix) {
			continue
		}
		n++
		if !slices.ContainsFunc(c.Evidence, func(e string) bool { return strings.Contains(e, r.text) }) {
			without = append(without, fmt.Sprintf("%s [%s] %v", c.ID, c.Variant, c.Nodes))
		}
	}
	switch {
	case n == 0:
		return fmt.Sprintf("no check %s* in the results", r.prefix)
	case len(without) > 0:
		return fmt.Sprintf("%d of %d checks %s* lack evidence containing %q: %s", len(without), n, r.prefix, r.text, strings.Join(without, "; "))
	}
	return ""
}

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
	exps, bounds, rules, err := readExpectations(*expectPath)
	if err != nil {
		fail("%v", err)
	}
	var problems []string
	// problem prints one unmet expectation and keeps it for the why file.
	problem := func(format string, a ...any) {
		line := fmt.Sprintf(format, a...)
		fmt.Println(line)
		problems = append(problems, line)
	}
	for _, b := range bounds {
		if msg := b.check(run.Checks); msg != "" {
			problem("MEASURED %s:%d: %s", *expectPath, b.line, msg)
		}
	}
	for _, r := range rules {
		if msg := r.check(run.Checks); msg != "" {
			problem("EVIDENCE %s:%d: %s", *expectPath, r.line, msg)
		}
	}
	for _, c := range run.Checks {
		covered := false
		for _, e := range exps {
			if e.id != c.ID || e.variant != orDash(c.Variant) || !e.matchesNode(c) {
				continue
			}
			covered = true
			e.matched++
			text := c.Diagnosis + " " + c.Reason
			if !statusMatches(e.status, c.Status) || (e.s != "-" && !strings.Contains(text, e.s)) {
				problem("MISMATCH %s:%d: %s [%s] %v: got %s %q, want %s containing %q",
					*expectPath, e.line, c.ID, c.Variant, c.Nodes, c.Status, strings.TrimSpace(text), e.status, e.s)
			}
		}
		if !covered {
			problem("UNEXPECTED check %s [%s] %v: %s %s%s", c.ID, c.Variant, c.Nodes, c.Status, c.Diagnosis, c.Reason)
		}
	}
	for _, e := range exps {
		if e.matched == 0 {
			problem("MISSING %s:%d: no check %s [%s] on %s in the results", *expectPath, e.line, e.id, e.variant, e.node)
		}
	}
	if len(problems) > 0 {
		keepWhy(os.Getenv("RDMASUITE_WHY_FILE"), *resultsPath, problems)
		fail("%d expectation(s) not met by %s", len(problems), *resultsPath)
	}
	fmt.Printf("expectresults: all %d checks in %s match %s\n", len(run.Checks), *resultsPath, *expectPath)
}

// keepWhy appends the unmet expectations to path (make test's why file,
// printed as the last lines of a failed run: CI shows only a log's tail,
// and the suite log printed after these lines pushes them out of it).
func keepWhy(path, results string, problems []string) {
	if path == "" {
		return
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		fmt.Fprintf(os.Stderr, "expectresults: keeping why: %v\n", err)
		return
	}
	defer f.Close()
	fmt.Fprintf(f, "%d expectation(s) not met by %s:\n", len(problems), results)
	for _, p := range problems {
		if len(p) > 600 {
			p = p[:600] + "…"
		}
		fmt.Fprintln(f, "  "+p)
	}
}

// check returns why the bound is not met ("" when it is).
func (b bound) check(checks []reports.Check) string {
	node, _, _ := strings.Cut(b.node, ":") // the node whose measurement counts
	for _, c := range checks {
		if c.ID != b.id || !nodeSpecMatches(b.node, c) {
			continue
		}
		for _, m := range c.Measured {
			if m.Name != b.name || (m.Node != "" && m.Node != node) {
				continue
			}
			if m.Value > b.low && m.Value <= b.high {
				return ""
			}
			return fmt.Sprintf("%s on %s: %s = %g %s, want in (%g, %g]", b.id, b.node, b.name, m.Value, m.Unit, b.low, b.high)
		}
		return fmt.Sprintf("%s on %s has no measurement %s", b.id, b.node, b.name)
	}
	return fmt.Sprintf("no check %s on %s in the results", b.id, b.node)
}

func (e *expectation) matchesNode(c reports.Check) bool { return nodeSpecMatches(e.node, c) }

// nodeSpecMatches reads a NODE column (expectation and bound lines): "*",
// one node among the check's, "a,b" its nodes exactly in order, or
// NODE:RAIL the per-rail check measured on NODE whose rail starts with RAIL.
func nodeSpecMatches(spec string, c reports.Check) bool {
	if strings.Contains(spec, ",") { // the check's nodes exactly, in order
		return strings.Join(c.Nodes, ",") == spec
	}
	node, rail, perRail := strings.Cut(spec, ":")
	if perRail {
		return len(c.Nodes) > 0 && c.Nodes[0] == node && strings.HasPrefix(c.Rail, rail)
	}
	return spec == "*" || slices.Contains(c.Nodes, spec)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func readExpectations(path string) ([]*expectation, []bound, []evidenceRule, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, nil, err
	}
	defer f.Close()
	var out []*expectation
	var bounds []bound
	var rules []evidenceRule
	sc := bufio.NewScanner(f)
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if f[0] == "@evidence" {
			if len(f) < 3 {
				return nil, nil, nil, fmt.Errorf("%s:%d: want @evidence ID-PREFIX TEXT", path, n)
			}
			rules = append(rules, evidenceRule{line: n, prefix: f[1], text: strings.Join(f[2:], " ")})
			continue
		}
		if f[0] == "@measured" {
			if len(f) != 6 {
				return nil, nil, nil, fmt.Errorf("%s:%d: want @measured CHECK NODE NAME LOW HIGH", path, n)
			}
			low, err1 := strconv.ParseFloat(f[4], 64)
			high, err2 := strconv.ParseFloat(f[5], 64)
			if err1 != nil || err2 != nil || low >= high {
				return nil, nil, nil, fmt.Errorf("%s:%d: LOW and HIGH must be numbers with LOW < HIGH", path, n)
			}
			bounds = append(bounds, bound{line: n, id: f[1], node: f[2], name: f[3], low: low, high: high})
			continue
		}
		if len(f) < 5 {
			return nil, nil, nil, fmt.Errorf("%s:%d: want CHECK VARIANT NODE STATUS TEXT", path, n)
		}
		out = append(out, &expectation{line: n, id: f[0], variant: f[1], node: f[2], status: f[3], s: strings.Join(f[4:], " ")})
	}
	return out, bounds, rules, sc.Err()
}

func fail(format string, a ...any) {
	fmt.Fprintf(os.Stderr, "expectresults: "+format+"\n", a...)
	os.Exit(1)
}

// statusMatches says whether got is want or one of want's "|" alternatives.
func statusMatches(want string, got reports.Status) bool {
	return slices.Contains(strings.Split(want, "|"), string(got))
}
