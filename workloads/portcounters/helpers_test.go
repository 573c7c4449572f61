package portcounters

import (
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// The three stored layouts (see testdata/README.md).
const (
	ibRoot   = "testdata/mlx5_ib"
	ibDev    = "mlx5_1"
	roceRoot = "testdata/mlx5_roce"
	roceDev  = "mlx5_0"
	rxeRoot  = "testdata/rxe"
	rxeDev   = "rxe0"
)

// copyTree copies a stored layout into a temporary root the test may change.
func copyTree(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		out := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(out, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(out, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

// counterPath is where a counter file lives under root.
func counterPath(root, dev string, g Group, name string) string {
	return filepath.Join(PortDir(root, dev, 1), string(g), name)
}

// setCounter writes text (a value, or anything else) into a counter file.
func setCounter(t *testing.T, root, dev string, g Group, name, text string) {
	t.Helper()
	if err := os.WriteFile(counterPath(root, dev, g, name), []byte(text+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// addCounter adds n to the value of a counter file.
func addCounter(t *testing.T, root, dev string, g Group, name string, n uint64) {
	t.Helper()
	b, err := os.ReadFile(counterPath(root, dev, g, name))
	if err != nil {
		t.Fatal(err)
	}
	v, err := strconv.ParseUint(string(b[:len(b)-1]), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	setCounter(t, root, dev, g, name, strconv.FormatUint(v+n, 10))
}

func mustRead(t *testing.T, root, dev string) Snapshot {
	t.Helper()
	s, err := Read(root, dev, 1)
	if err != nil {
		t.Fatalf("Read(%s, %s, 1): %v", root, dev, err)
	}
	return s
}

func mustDelta(t *testing.T, d Deltas, g Group, name string) Delta {
	t.Helper()
	x, ok := d.Get(g, name)
	if !ok {
		t.Fatalf("no delta for %s/%s", g, name)
	}
	return x
}

// findingFor returns the finding naming counter ("group/name"), if any.
func findingFor(fs []Finding, counter string) (Finding, bool) {
	for _, f := range fs {
		if f.Counter == counter {
			return f, true
		}
	}
	return Finding{}, false
}
