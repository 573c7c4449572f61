package stall

import (
	"errors"
	"io"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// File is what the writer, reader and verifier do to a record file. The
// probe uses *os.File underneath; the tests put a fault-injecting layer
// here (lost, torn, duplicated, reordered and stalled writes).
type File interface {
	WriteAt(p []byte, off int64) (int, error)
	ReadAt(p []byte, off int64) (int, error)
	// Sync makes what was written durable: fsync, or fdatasync for a file
	// opened for O_DIRECT writes.
	Sync() error
	Size() (int64, error)
	Close() error
}

// OpenMode says how a record file is opened.
type OpenMode int

const (
	// OpenWrite creates or truncates the writer's file for buffered writes.
	OpenWrite OpenMode = iota
	// OpenWriteDirect is OpenWrite with O_DIRECT.
	OpenWriteDirect
	// OpenRead opens an existing file read-only.
	OpenRead
)

// Opener opens a record file.
type Opener func(path string, mode OpenMode) (File, error)

// OpenOS is the Opener on the real filesystem. A writer truncates its file:
// a run always starts at sequence 0.
func OpenOS(path string, mode OpenMode) (File, error) {
	switch mode {
	case OpenWrite:
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
		if err != nil {
			return nil, err
		}
		return osFile{f: f}, nil
	case OpenWriteDirect:
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC|unix.O_DIRECT, 0o644)
		if err != nil {
			return nil, err
		}
		return osFile{f: f, datasync: true}, nil
	default:
		f, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		return osFile{f: f}, nil
	}
}

type osFile struct {
	f        *os.File
	datasync bool
}

func (o osFile) WriteAt(p []byte, off int64) (int, error) { return o.f.WriteAt(p, off) }

// ReadAt returns a short count without error at end of file.
func (o osFile) ReadAt(p []byte, off int64) (int, error) {
	n, err := o.f.ReadAt(p, off)
	if errors.Is(err, io.EOF) {
		err = nil
	}
	return n, err
}

func (o osFile) Sync() error {
	if o.datasync {
		for {
			err := unix.Fdatasync(int(o.f.Fd()))
			if err != unix.EINTR {
				return err
			}
		}
	}
	return o.f.Sync()
}

func (o osFile) Size() (int64, error) {
	st, err := o.f.Stat()
	if err != nil {
		return 0, err
	}
	return st.Size(), nil
}

func (o osFile) Close() error { return o.f.Close() }

// alignedBuffer returns size bytes starting at an align boundary, as
// O_DIRECT needs: Go gives no alignment guarantee, so over-allocate and
// slice (the garbage collector does not move heap objects).
func alignedBuffer(size, align int) []byte {
	raw := make([]byte, size+align)
	skip := int(uintptr(unsafe.Pointer(&raw[0])) & uintptr(align-1))
	if skip != 0 {
		skip = align - skip
	}
	return raw[skip : skip+size : skip+size]
}
