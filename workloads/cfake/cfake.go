// Package cfake compiles the C stand-ins that tests of the run-time
// loaded libraries (workloads/cuda, workloads/ncclrt) load instead of the
// real libcuda/libnccl: one shared object per set of -D flags, built once.
// Test support only; it needs a C compiler ($CC or gcc), which the project
// requires anyway for workloads/verbs.
package cfake

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// Builder compiles Source (a C file) into Dir/<name>.so.
type Builder struct {
	Dir, Source string
	built       sync.Map // name -> path
}

// Build compiles Source with the -D flags into <name>.so (once per name)
// and returns its path. A missing compiler or a compile error fails t.
func (b *Builder) Build(t testing.TB, name string, defines ...string) string {
	t.Helper()
	if p, ok := b.built.Load(name); ok {
		return p.(string)
	}
	cc := strings.Fields(os.Getenv("CC"))
	if len(cc) == 0 {
		cc = []string{"gcc"}
	}
	if _, err := exec.LookPath(cc[0]); err != nil {
		t.Fatalf("%s not found (%v): these tests compile %s into a shared object to prove the bindings; install gcc (the project needs it for workloads/verbs)", cc[0], err, b.Source)
	}
	out := filepath.Join(b.Dir, name+".so")
	args := append(cc[1:], "-shared", "-fPIC", "-O1", "-Wall", "-Werror", "-o", out)
	for _, d := range defines {
		args = append(args, "-D"+d)
	}
	args = append(args, b.Source)
	if o, err := exec.Command(cc[0], args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", cc[0], strings.Join(args, " "), err, o)
	}
	b.built.Store(name, out)
	return out
}
