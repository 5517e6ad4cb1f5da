//go:build !linux

package watch

import (
	"errors"
	"fmt"
	"os"
	"runtime"
)

// Watch is never quiet on this system: there is no inotify, and every
// caller falls back to its stat walk.
type Watch struct{}

// New returns a watch that is never quiet.
func New() *Watch { return &Watch{} }

// Dir does nothing here.
func (w *Watch) Dir(dir *os.File) {}

// DirFD does nothing here.
func (w *Watch) DirFD(fd int, name string) {}

// File tells whether the caller must stat the file itself; the answer
// matters only while quiet, which this watch never is.
func (w *Watch) File(abs string, nlink uint64, symlink bool) bool { return symlink || nlink > 1 }

// Unvouched returns nothing here.
func (w *Watch) Unvouched() []string { return nil }

// Quiet is always false here.
func (w *Watch) Quiet() bool { return false }

// Check says why the watch is not quiet: never supported here.
func (w *Watch) Check() error {
	return fmt.Errorf("no directory watch on %s: %w", runtime.GOOS, errors.ErrUnsupported)
}

// Close does nothing here.
func (w *Watch) Close() error { return nil }
