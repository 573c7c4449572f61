// Package cstdout keeps a probe's stdout for its JSON envelope when C
// libraries loaded at run time print there.
//
// NCCL writes its NCCL_DEBUG lines to C's stdout. In a pod, stdout is a
// pipe, so C stdio buffers it fully and writes 4 KiB chunks that end
// mid-line; the probe's envelope, written by Go between two chunks, is
// glued behind a cut NCCL line. Seen on the first GPU machine (NCCL
// 2.28.3+cuda13.0, H200, 2026-11-29): the rank's stdout held
// `vm:499:{"schema":2,"probe":"nccl",...}`, which no envelope reader finds
// (a line must start with "{"), and the NCCL lines the transport parser
// reads were on stdout, not in the log the parser was given.
package cstdout

import (
	"fmt"
	"os"
	"syscall"
	"unsafe"

	"github.com/ebitengine/purego"
)

// libc is glibc's soname: the probe images are Debian, and the probe
// itself links it (cgo).
const libc = "libc.so.6"

// ioLineBuffered is glibc's _IOLBF for setvbuf.
const ioLineBuffered = 1

// Divert points file descriptor 1, which C's stdout writes to, at stderr,
// and makes C's stdout line-buffered, so that every line a C library
// prints is one whole write that no other writer cuts and none is left in
// a buffer when the process is killed (a hung NCCL world's last lines are
// the ones that say where it hung). os.Stdout is replaced by a file on the
// original stdout, where the envelope goes, and is also returned.
//
// The note says what could not be done without failing the probe: with
// no line buffering, C's lines still go to stderr (the envelope is safe),
// but may be cut at 4 KiB. err is returned only when stdout could not be
// kept, and then nothing was changed.
func Divert() (envelope *os.File, note string, err error) {
	kept, err := syscall.Dup(1)
	if err != nil {
		return nil, "", fmt.Errorf("keeping stdout for the envelope: dup(1): %w", err)
	}
	syscall.CloseOnExec(kept)
	envelope = os.NewFile(uintptr(kept), "/dev/stdout")
	if err := lineBufferCStdout(); err != nil {
		note = fmt.Sprintf("C's stdout stays fully buffered (%v): a C library's lines on stderr may be cut at 4 KiB", err)
	}
	if err := syscall.Dup3(2, 1, 0); err != nil {
		_ = envelope.Close()
		return nil, "", fmt.Errorf("pointing C's stdout at stderr: dup3(2, 1): %w", err)
	}
	os.Stdout = envelope
	return envelope, note, nil
}

// lineBufferCStdout calls setvbuf(stdout, NULL, _IOLBF, 0) in the
// process's libc. It must run before anything is printed through C's
// stdout (setvbuf's own rule), i.e. before the libraries are loaded.
func lineBufferCStdout() error {
	setvbuf, file, err := cStdout("setvbuf")
	if err != nil {
		return err
	}
	if r, _, _ := purego.SyscallN(setvbuf, file, 0, ioLineBuffered, 0); r != 0 {
		return fmt.Errorf("setvbuf(stdout, NULL, _IOLBF, 0) returned %d", int32(r))
	}
	return nil
}

// cStdout is the process's libc function fn and libc's stdout (the FILE *
// that C libraries print to).
func cStdout(fn string) (fnAddr, file uintptr, err error) {
	h, err := purego.Dlopen(libc, purego.RTLD_NOW|purego.RTLD_GLOBAL)
	if err != nil {
		return 0, 0, err
	}
	if fnAddr, err = purego.Dlsym(h, fn); err != nil {
		return 0, 0, err
	}
	stdoutVar, err := purego.Dlsym(h, "stdout")
	if err != nil {
		return 0, 0, err
	}
	// stdoutVar is the address of libc's `FILE *stdout`: read the pointer
	// stored there (C memory, never moved by Go's collector).
	file = **(**uintptr)(unsafe.Pointer(&stdoutVar))
	if file == 0 {
		return 0, 0, fmt.Errorf("%s: stdout is NULL", libc)
	}
	return fnAddr, file, nil
}
