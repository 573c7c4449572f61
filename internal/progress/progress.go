// Package progress is where a suite run reports while it goes. go test
// holds a package's output until the package ends (without -v), so a CI
// log would show nothing for the whole run: every line also goes to a log
// file in the report directory (progress-<run>.log, and progress.log
// pointing at the latest), which CI and operators tail. On a terminal,
// items that passed share one refreshing status line and everything else
// stays on a line of its own.
package progress

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// Log writes a run's progress to its file and, when set, a terminal. A nil
// Log writes nothing (a --dry-run creates no file).
type Log struct {
	mu     sync.Mutex
	file   *os.File
	term   io.Writer // nil: no terminal
	status bool      // a status line is showing on term
	path   string
}

// Open creates dir/progress-<runID>.log and points dir/progress.log at it.
// term is the terminal, or nil. A Log that could not open its file still
// writes to term (the error says why the file is missing).
func Open(dir, runID string, term io.Writer) (*Log, error) {
	l := &Log{term: term}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return l, fmt.Errorf("progress log: %w", err)
	}
	path, err := filepath.Abs(filepath.Join(dir, "progress-"+runID+".log"))
	if err != nil {
		return l, fmt.Errorf("progress log: %w", err)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return l, fmt.Errorf("progress log: %w", err)
	}
	l.file, l.path = f, path
	latest := filepath.Join(filepath.Dir(path), "progress.log")
	_ = os.Remove(latest)
	_ = os.Symlink(filepath.Base(path), latest) // a convenience: the run's own file is the record
	return l, nil
}

// Path is the log file ("" when it could not be opened).
func (l *Log) Path() string {
	if l == nil {
		return ""
	}
	return l.path
}

// Line is a line of its own, in the file and on the terminal (after
// clearing a status line that is showing).
func (l *Log) Line(s string) { l.write(s, false) }

// Status is a line in the file and, on the terminal, the one refreshing
// status line (replaced by the next status or line).
func (l *Log) Status(s string) { l.write(s, true) }

// write puts s in the file and on the terminal: as the refreshing status
// line, or as a line of its own after clearing one that is showing.
func (l *Log) write(s string, status bool) {
	if l == nil {
		return
	}
	s = strings.TrimRight(s, "\n")
	l.mu.Lock()
	defer l.mu.Unlock()
	l.toFile(s)
	if l.term == nil {
		return
	}
	switch {
	case status:
		fmt.Fprint(l.term, "\r\033[K"+s)
	case l.status:
		fmt.Fprint(l.term, "\r\033[K"+s+"\n")
	default:
		fmt.Fprintln(l.term, s)
	}
	l.status = status
}

// EndStatus ends a status line that is showing, so that what the caller
// writes to the terminal next starts on a line of its own.
func (l *Log) EndStatus() {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.term != nil && l.status {
		fmt.Fprintln(l.term)
		l.status = false
	}
}

// Close ends a status line that is showing and closes the file.
func (l *Log) Close() error {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.term != nil && l.status {
		fmt.Fprintln(l.term)
		l.status = false
	}
	if l.file == nil {
		return nil
	}
	err := l.file.Close()
	l.file = nil
	return err
}

// toFile writes one line; the file is unbuffered, so `tail -f` sees it at
// once. A failed write is dropped: progress never stops a run.
func (l *Log) toFile(s string) {
	if l.file != nil {
		_, _ = fmt.Fprintln(l.file, s)
	}
}
