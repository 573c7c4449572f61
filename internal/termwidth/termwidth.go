// Package termwidth finds how many columns the operator's terminal has, so
// tables fit it instead of running 300 columns wide. 0 means no terminal:
// write one line per row, as files, pipes and CI logs want.
package termwidth

import (
	"io"
	"os"
	"strconv"

	"golang.org/x/term"
)

// Default is the width a table gets where no terminal says otherwise
// (pipes, files, CI logs): 80 columns, the width every log viewer shows.
const Default = 80

// Of is the width for output to f: $COLUMNS when set, else the terminal's
// width when f is one, else 0.
func Of(f *os.File) int {
	if c, err := strconv.Atoi(os.Getenv("COLUMNS")); err == nil && c > 0 {
		return c
	}
	if term.IsTerminal(int(f.Fd())) {
		if w, _, err := term.GetSize(int(f.Fd())); err == nil && w > 0 {
			return w
		}
	}
	return 0
}

// Fit is the width a table written to w should fit: the terminal's when w
// is one (or $COLUMNS), else Default.
func Fit(w io.Writer) int {
	if f, ok := w.(*os.File); ok {
		if n := Of(f); n > 0 {
			return n
		}
	}
	return Default
}

// Controlling is Of(f), falling back to the controlling terminal's width:
// go test pipes a test binary's stdout to itself, so the suite never sees
// its terminal on stdout, yet its output ends up there.
func Controlling(f *os.File) int {
	if w := Of(f); w > 0 {
		return w
	}
	tty, err := os.Open("/dev/tty")
	if err != nil {
		return 0
	}
	defer tty.Close()
	if w, _, err := term.GetSize(int(tty.Fd())); err == nil && w > 0 {
		return w
	}
	return 0
}
