package main

// The Dockerfiles under images/ are the optional Docker path to the images
// `make images` builds with mkimage. Nothing here runs Docker; these tests
// keep the Dockerfiles buildable as the repository changes: their Go
// version is go.mod's, every file they COPY from the build context exists and
// is not excluded by .dockerignore, and the runner's Dockerfile says what
// the Makefile's mkimage call does.

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// repoRoot is the main module's root, three levels above this package.
var repoRoot = filepath.Join("..", "..", "..")

func readRepo(t *testing.T, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, rel))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// goDirective is go.mod's `go` line.
func goDirective(t *testing.T) string {
	t.Helper()
	m := regexp.MustCompile(`(?m)^go (\S+)\s*$`).FindStringSubmatch(readRepo(t, "go.mod"))
	if m == nil {
		t.Fatal("go.mod has no go line")
	}
	return m[1]
}

type instruction struct {
	line int
	cmd  string // upper case
	args string
}

// parseDockerfile splits a Dockerfile into instructions, joining
// continuation lines and dropping comments.
func parseDockerfile(text string) []instruction {
	var out []instruction
	var cur strings.Builder
	start := 0
	for i, l := range strings.Split(text, "\n") {
		trim := strings.TrimSpace(l)
		if cur.Len() == 0 && (trim == "" || strings.HasPrefix(trim, "#")) {
			continue
		}
		if cur.Len() == 0 {
			start = i + 1
		} else if strings.HasPrefix(trim, "#") {
			continue
		}
		if strings.HasSuffix(trim, `\`) {
			cur.WriteString(strings.TrimSuffix(trim, `\`) + " ")
			continue
		}
		cur.WriteString(trim)
		cmd, args, _ := strings.Cut(cur.String(), " ")
		out = append(out, instruction{start, strings.ToUpper(cmd), strings.TrimSpace(args)})
		cur.Reset()
	}
	return out
}

func dockerfiles(t *testing.T) []string {
	t.Helper()
	fs, err := filepath.Glob(filepath.Join(repoRoot, "images", "*", "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	if len(fs) < 3 {
		t.Fatalf("found %d Dockerfiles under images/, want rdmaprobe, rdmaprobe-nccl and rdmasuite-runner", len(fs))
	}
	return fs
}

func rel(f string) string { r, _ := filepath.Rel(repoRoot, f); return r }

func TestDockerfilesUseGoModVersion(t *testing.T) {
	want := goDirective(t)
	for _, f := range dockerfiles(t) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		seenFrom, argVersion, argLine := false, "", 0
		for _, in := range parseDockerfile(string(b)) {
			switch in.cmd {
			case "ARG":
				if v, ok := strings.CutPrefix(in.args, "GO_VERSION="); ok && !seenFrom {
					argVersion, argLine = v, in.line
				}
			case "FROM":
				seenFrom = true
				if img, _, _ := strings.Cut(in.args, " "); strings.HasPrefix(img, "golang:") &&
					img != "golang:${GO_VERSION}-bookworm" && img != "golang:$GO_VERSION-bookworm" {
					t.Errorf("%s:%d: FROM %s: build on golang:${GO_VERSION}-bookworm so the Go version follows go.mod", rel(f), in.line, img)
				}
				if strings.HasPrefix(in.args, "golang:") && argVersion == "" {
					t.Errorf("%s:%d: FROM golang without a global ARG GO_VERSION=%s before the first FROM", rel(f), in.line, want)
				}
			}
		}
		if argVersion != "" && argVersion != want {
			t.Errorf("%s:%d: ARG GO_VERSION=%s, but go.mod says go %s: set the default to %s", rel(f), argLine, argVersion, want, want)
		}
	}
}

// copySources returns the build-context sources of a COPY or ADD (none for
// COPY --from=stage).
func copySources(args string) []string {
	var fields []string
	for _, a := range strings.Fields(args) {
		if strings.HasPrefix(a, "--from=") {
			return nil
		}
		if !strings.HasPrefix(a, "--") {
			fields = append(fields, a)
		}
	}
	if rest := strings.Join(fields, " "); strings.HasPrefix(rest, "[") {
		var list []string
		if json.Unmarshal([]byte(rest), &list) == nil {
			fields = list
		}
	}
	if len(fields) < 2 {
		return nil
	}
	return fields[:len(fields)-1]
}

func TestDockerfileCopySourcesExist(t *testing.T) {
	ignore := loadDockerignore(t)
	for _, f := range dockerfiles(t) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, in := range parseDockerfile(string(b)) {
			if in.cmd != "COPY" && in.cmd != "ADD" {
				continue
			}
			for _, src := range copySources(in.args) {
				clean := filepath.Clean(strings.TrimPrefix(src, "/"))
				if clean == "." {
					// The whole context: what `make` in the build stage needs.
					for _, need := range []string{"go.mod", "go.sum", "Makefile", "cmd/rdmaprobe/main.go", "cmd/rdmasuite/main.go", "suites", "workloads", "internal", "thresholds/skus.yaml", "reports"} {
						if _, err := os.Stat(filepath.Join(repoRoot, need)); err != nil {
							t.Errorf("%s:%d: COPY . needs %s: %v", rel(f), in.line, need, err)
						} else if ignore.excluded(need) {
							t.Errorf("%s:%d: COPY . needs %s, which .dockerignore excludes", rel(f), in.line, need)
						}
					}
					continue
				}
				m, err := filepath.Glob(filepath.Join(repoRoot, clean))
				if err != nil || len(m) == 0 {
					t.Errorf("%s:%d: %s %s: no such file in the build context (the repository root)", rel(f), in.line, in.cmd, src)
					continue
				}
				for _, p := range m {
					if r := rel(p); ignore.excluded(r) {
						t.Errorf("%s:%d: %s %s: .dockerignore excludes %s", rel(f), in.line, in.cmd, src, r)
					}
				}
			}
		}
	}
}

// The Docker path and the mkimage path make the same runner image.
func TestRunnerDockerfileMatchesMakeImages(t *testing.T) {
	df := parseDockerfile(readRepo(t, "images/rdmasuite-runner/Dockerfile"))
	mk := readRepo(t, "Makefile")
	last := map[string]string{}
	for _, in := range df {
		last[in.cmd] = in.args
	}
	if last["ENTRYPOINT"] != `["/usr/local/bin/rdmasuite-suite"]` || !strings.Contains(mk, "-entrypoint /usr/local/bin/rdmasuite-suite") {
		t.Errorf("entrypoint: Dockerfile %s; the Makefile's images target must use the same", last["ENTRYPOINT"])
	}
	if !strings.Contains(mk, "RUNNER_USER = "+last["USER"]) || last["USER"] != "65532:65532" {
		t.Errorf("user: Dockerfile %q, Makefile's RUNNER_USER must match (65532:65532)", last["USER"])
	}
	if last["WORKDIR"] != "/work" || !strings.Contains(mk, "-workdir /work") {
		t.Errorf("workdir: Dockerfile %q, Makefile -workdir must match (/work)", last["WORKDIR"])
	}
	for _, want := range []string{"=/usr/local/bin/rdmasuite-suite", "=/usr/local/bin/rdmasuite ", "images/rdmasuite-runner/passwd=/etc/passwd", "images/rdmasuite-runner/group=/etc/group"} {
		if !strings.Contains(mk, want) {
			t.Errorf("Makefile's images target lacks %q, which the Dockerfile copies", want)
		}
	}
	for _, target := range []string{"images-docker:", "images-docker-nccl:"} {
		i := strings.Index(mk, "\n"+target)
		if i < 0 {
			t.Fatalf("Makefile has no %s target", target)
		}
		body := mk[i+len(target)+1:]
		if j := strings.Index(body, "\n\n"); j >= 0 {
			body = body[:j]
		}
		if strings.Count(body, "docker build") != strings.Count(body, "--build-arg GO_VERSION=$(GO_VERSION)") {
			t.Errorf("Makefile %s: every docker build must pass --build-arg GO_VERSION=$(GO_VERSION)", target)
		}
	}
	if !strings.Contains(mk, `GO_VERSION := $(shell awk '/^go /{print $$2}' go.mod)`) {
		t.Error("Makefile: GO_VERSION must come from go.mod's go line")
	}
}

// dockerignore implements .dockerignore matching as Docker's builder does
// (github.com/moby/patternmatcher): patterns relative to the context root,
// *, ?, [...] and **, `!` exceptions, the last matching pattern decides, and
// a pattern that matches a directory excludes what is under it.
type dockerignore []struct {
	re     *regexp.Regexp
	negate bool
}

func loadDockerignore(t *testing.T) dockerignore {
	t.Helper()
	var d dockerignore
	for _, l := range strings.Split(readRepo(t, ".dockerignore"), "\n") {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		neg := strings.HasPrefix(l, "!")
		l = strings.TrimPrefix(l, "!")
		l = strings.TrimPrefix(filepath.ToSlash(filepath.Clean(l)), "/")
		d = append(d, struct {
			re     *regexp.Regexp
			negate bool
		}{globRegexp(l), neg})
	}
	return d
}

func globRegexp(p string) *regexp.Regexp {
	var b strings.Builder
	b.WriteString("^")
	for i := 0; i < len(p); i++ {
		switch c := p[i]; c {
		case '*':
			if i+1 < len(p) && p[i+1] == '*' {
				i++
				if i+1 < len(p) && p[i+1] == '/' {
					i++
					b.WriteString("(.*/)?")
				} else {
					b.WriteString(".*")
				}
			} else {
				b.WriteString("[^/]*")
			}
		case '?':
			b.WriteString("[^/]")
		case '[':
			j := strings.IndexByte(p[i:], ']')
			if j < 0 {
				b.WriteString(`\[`)
				continue
			}
			b.WriteString(p[i : i+j+1])
			i += j
		default:
			b.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	b.WriteString("$")
	return regexp.MustCompile(b.String())
}

func (d dockerignore) excluded(path string) bool {
	path = filepath.ToSlash(filepath.Clean(path))
	// The path itself and every parent directory.
	var cands []string
	for p := path; p != "." && p != "/"; p = filepath.ToSlash(filepath.Dir(p)) {
		cands = append(cands, p)
	}
	out := false
	for _, pat := range d {
		for _, c := range cands {
			if pat.re.MatchString(c) {
				out = !pat.negate
				break
			}
		}
	}
	return out
}

func TestDockerignore(t *testing.T) {
	d := loadDockerignore(t)
	for p, want := range map[string]bool{
		"bin/images/rdmaprobe.tar":               true,
		".git/HEAD":                              true,
		"rdmasuite-results/results.json":         true,
		"suites/rdmasuite-results/results.json":  true,
		"demo-results/report.md":                 true,
		"hack/bin/expectresults":                 true,
		"rdmaprobe":                              true,
		"suites.test":                            true,
		"cmd/rdmaprobe/main.go":                  false,
		"cmd/rdmasuite/main.go":                  false,
		"images/rdmasuite-runner/passwd":         false,
		"go.mod":                                 false,
		"workloads/verbs/verbs.go":               false,
		"internal/runner/results.go":             false,
		"thresholds/skus.yaml":                   false,
		"hack/tools/mkimage/dockerfiles_test.go": false,
	} {
		if got := d.excluded(p); got != want {
			t.Errorf(".dockerignore excludes %s: %v, want %v", p, got, want)
		}
	}
}
