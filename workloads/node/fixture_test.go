package node

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Fixture trees live in testdata/*.tree, a text format in the spirit of
// txtar so a host's files can be read and reviewed in one place:
//
//	free text (comments) up to the first header; later, lines starting with #
//	-- proc/modules --              a file; the lines up to the next header are its content
//	-- run/nvidia/validations/ --   an empty directory (trailing slash)
//	-- sys/class/net/ib0 -> ../../devices/… --   a symlink (sysfs class entries are symlinks)
//
// writeTree materialises trees into one root in order, later trees
// overwriting earlier files, so a scenario is a base node plus the seed's
// differences.

// writeTree applies the named testdata trees to root.
func writeTree(t *testing.T, root string, names ...string) {
	t.Helper()
	for _, name := range names {
		data, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		if err := applyTree(root, string(data)); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
}

// buildTree makes a fresh root from the named trees.
func buildTree(t *testing.T, names ...string) string {
	t.Helper()
	root := t.TempDir()
	writeTree(t, root, names...)
	return root
}

type treeEntry struct {
	name  string
	lines []string
}

func applyTree(root, data string) error {
	var cur *treeEntry
	flush := func() error {
		if cur == nil {
			return nil
		}
		return materialise(root, cur.name, cur.lines)
	}
	for _, line := range strings.Split(data, "\n") {
		if strings.HasPrefix(line, "-- ") && strings.HasSuffix(line, " --") && len(line) > 6 {
			if err := flush(); err != nil {
				return err
			}
			cur = &treeEntry{name: strings.TrimSpace(line[3 : len(line)-3])}
			continue
		}
		if cur != nil && !strings.HasPrefix(line, "#") {
			cur.lines = append(cur.lines, line)
		}
	}
	return flush()
}

func materialise(root, name string, lines []string) error {
	if link, target, ok := strings.Cut(name, " -> "); ok {
		p := filepath.Join(root, link)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		_ = os.Remove(p)
		return os.Symlink(target, p)
	}
	p := filepath.Join(root, name)
	if strings.HasSuffix(name, "/") {
		return os.MkdirAll(p, 0o755)
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	// Drop the blank lines between entries; every other line keeps its
	// newline, as procfs and sysfs files end in one.
	for len(lines) > 0 && strings.TrimSpace(lines[len(lines)-1]) == "" {
		lines = lines[:len(lines)-1]
	}
	var content string
	if len(lines) > 0 {
		content = strings.Join(lines, "\n") + "\n"
	}
	return os.WriteFile(p, []byte(content), 0o644)
}
