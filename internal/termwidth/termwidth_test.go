package termwidth

import (
	"os"
	"strings"
	"testing"
)

func TestWidth(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	t.Setenv("COLUMNS", "")
	if got := Of(w); got != 0 {
		t.Errorf("a pipe is no terminal: width %d, want 0 (one line per row)", got)
	}
	t.Setenv("COLUMNS", "93")
	if got := Of(w); got != 93 {
		t.Errorf("COLUMNS=93: width %d", got)
	}
	t.Setenv("COLUMNS", "wide")
	if got := Of(w); got != 0 {
		t.Errorf("COLUMNS=wide: width %d, want 0", got)
	}
}

// Fit: a writer that is not a terminal file gets Default; $COLUMNS wins
// for a file.
func TestFit(t *testing.T) {
	t.Setenv("COLUMNS", "")
	var b strings.Builder
	if got := Fit(&b); got != Default {
		t.Errorf("a buffer: %d, want %d", got, Default)
	}
	f, err := os.CreateTemp(t.TempDir(), "out")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if got := Fit(f); got != Default {
		t.Errorf("a plain file: %d, want %d", got, Default)
	}
	t.Setenv("COLUMNS", "132")
	if got := Fit(f); got != 132 {
		t.Errorf("COLUMNS=132: %d", got)
	}
}
