package node

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// hostFS is the one door to the host's files. Every read in this package
// names a host path ("/proc/modules") and hostFS prefixes it with the host
// root, so the same code runs on the host ("/"), in a pod that mounts the
// host at /host, and in tests against a fixture tree.
//
// Relative symlinks (all of sysfs's) resolve inside the root; an absolute
// symlink would escape it, so nothing here relies on one.
type hostFS struct {
	root string
}

// newHostFS checks that root is a readable directory, so a pod started
// without the host mount fails with one line that says how to fix it rather
// than with a report of an empty node.
func newHostFS(root string) (hostFS, error) {
	if root == "" {
		root = "/"
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		return hostFS{}, fmt.Errorf("host root %q: %w", root, err)
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return hostFS{}, fmt.Errorf("host root %s: %w: mount the host root read-only at /host (hostPath / → /host, readOnly: true) and pass --host-root=/host", abs, err)
	}
	if !fi.IsDir() {
		return hostFS{}, fmt.Errorf("host root %s is not a directory: mount the host root read-only at /host and pass --host-root=/host", abs)
	}
	return hostFS{root: abs}, nil
}

// path maps a host path to where it lies under the root.
func (h hostFS) path(hostPath string) string {
	return filepath.Join(h.root, hostPath)
}

func (h hostFS) readFile(hostPath string) ([]byte, error) {
	return os.ReadFile(h.path(hostPath))
}

// readTrim returns a small sysfs-style file's content without the trailing
// newline; ok is false when the file is missing or unreadable, which for
// optional attributes just means "absent".
func (h hostFS) readTrim(hostPath string) (s string, ok bool) {
	b, err := h.readFile(hostPath)
	if err != nil {
		return "", false
	}
	return strings.TrimSpace(string(b)), true
}

// stat follows symlinks, like a reader of sysfs would.
func (h hostFS) stat(hostPath string) (fs.FileInfo, error) {
	return os.Stat(h.path(hostPath))
}

// readDirNames lists a directory's entries sorted by name (os.ReadDir sorts);
// a missing directory is an empty list and the error.
func (h hostFS) readDirNames(hostPath string) ([]string, error) {
	entries, err := os.ReadDir(h.path(hostPath))
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names, err
}
