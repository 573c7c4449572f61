package termwidth

import (
	"os"
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
