package atomicfile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWriteReplacesWholeKeepsModeAndWritesThroughLinks(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "m.prom")
	if err := Write(p, []byte("one\n")); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o644 {
		t.Fatalf("new file mode %v, want 0644", fi.Mode().Perm())
	}
	if err := os.Chmod(p, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := Write(p, []byte("two\n")); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(p)
	if fi, _ := os.Stat(p); string(b) != "two\n" || fi.Mode().Perm() != 0o600 {
		t.Fatalf("content %q mode %v: want the new content and the old mode", b, fi.Mode().Perm())
	}
	link := filepath.Join(dir, "latest")
	if err := os.Symlink("m.prom", link); err != nil {
		t.Fatal(err)
	}
	if err := Write(link, []byte("three\n")); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Lstat(link); fi.Mode()&os.ModeSymlink == 0 {
		t.Fatal("the link was replaced by a file")
	}
	if b, _ := os.ReadFile(p); string(b) != "three\n" {
		t.Fatalf("through the link: %q", b)
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.Contains(e.Name(), ".tmp-") {
			t.Fatalf("temp file left: %s", e.Name())
		}
	}
	if err := Write(filepath.Join(dir, "no", "such", "dir"), nil); err == nil {
		t.Fatal("a missing directory must be an error")
	}
}
