// Package maphash hashes a large regular file through read-only mappings
// of the page cache, a window at a time, rather than read(2) into a
// buffer: that saves copying every byte once, which matters for files of
// many MiB. For small files the mapping's own cost eats the saving, so
// they are left to the caller to read. It knows an open file and SHA-256,
// nothing of blobs or keys.
package maphash

import (
	"context"
	"crypto/sha256"
	"os"
	"runtime"
	"runtime/debug"

	"golang.org/x/sys/unix"

	"github.com/cairn-run/cairn/internal/failpoint"
	"github.com/cairn-run/cairn/internal/hashmeter"
)

// MinSize is the size from which Sum maps a file. The window's size
// makes no difference to the speed; a moderate one keeps what the
// mappings add to the process's RSS small. Tests make both smaller.
var (
	MinSize int64 = 8 << 20
	Window  int64 = 16 << 20
)

// TestHookMapped, set by tests only, is called after each window of a
// file is mapped, before it is hashed.
var TestHookMapped func()

// Sum returns the digest and size of f, a regular file of size
// bytes opened for reading at offset 0, hashed through mappings of it. ok
// is false when it did not hash it: f is small, or not mappable, or
// shrank while mapped (reading a page past its new end raises SIGBUS,
// which debug.SetPanicOnFault turns into a panic recovered here). f's
// offset is not moved either way: the caller reads it instead. err is
// ctx's error once ctx is done, checked before each window.
func Sum(ctx context.Context, f *os.File, size int64) (d [32]byte, n int64, ok bool, err error) {
	if size < MinSize {
		return [32]byte{}, 0, false, nil
	}
	var window []byte
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if window != nil {
			_ = unix.Munmap(window)
		}
		if r := recover(); r != nil {
			if re, isRuntime := r.(runtime.Error); !isRuntime || !faulted(re) {
				panic(r)
			}
			d, n, ok, err = [32]byte{}, 0, false, nil
		}
	}()
	h := sha256.New()
	fd := int(f.Fd())
	for off := int64(0); off < size; off += Window {
		if err := ctx.Err(); err != nil {
			return [32]byte{}, 0, false, err
		}
		_ = failpoint.Hit("hash.window")
		w := min(Window, size-off)
		b, err := unix.Mmap(fd, off, int(w), unix.PROT_READ, unix.MAP_SHARED)
		if err != nil {
			return [32]byte{}, 0, false, nil
		}
		window = b
		_ = unix.Madvise(b, unix.MADV_SEQUENTIAL)
		if TestHookMapped != nil {
			TestHookMapped()
		}
		h.Write(b)
		hashmeter.Window(ctx, w)
		window = nil
		if err := unix.Munmap(b); err != nil {
			return [32]byte{}, 0, false, nil
		}
	}
	h.Sum(d[:0])
	return d, size, true, nil
}

// faulted reports whether e is the panic of a memory fault (what
// debug.SetPanicOnFault makes of a SIGBUS).
func faulted(e runtime.Error) bool {
	_, isAddr := e.(interface{ Addr() uintptr })
	return isAddr
}
