// Package atomicfile replaces files whole, so that a reader never sees
// half of one (a metrics collector, a browser opening the latest report).
package atomicfile

import (
	"fmt"
	"os"
	"path/filepath"
)

// Write replaces path with b whole: a temp file in the same directory,
// then a rename, so a reader (node_exporter's textfile collector) sees the
// old file or the new one, never half of one. The temp file's name starts
// with "." and does not end in .prom, so the collector skips it. The file is
// world-readable (the collector seldom runs as this user), or keeps the mode
// of the file it replaces. A path that is not a regular file (a symlink,
// /dev/stdout, a FIFO) is written in place: renaming over it would replace
// the link or the device, not what it points to.
func Write(path string, b []byte) error {
	mode := os.FileMode(0o644)
	if fi, err := os.Lstat(path); err == nil {
		if !fi.Mode().IsRegular() {
			return os.WriteFile(path, b, mode)
		}
		mode = fi.Mode().Perm()
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	_, err = tmp.Write(b)
	if err == nil {
		err = tmp.Chmod(mode)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("%s: not written: %w", path, err)
	}
	return nil
}
