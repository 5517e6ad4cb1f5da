package upkeep

import (
	"errors"
	"io/fs"
	"os"

	"github.com/cairn-run/cairn/cache"
	"github.com/cairn-run/cairn/internal/failpoint"
	"github.com/cairn-run/cairn/internal/fsx"
)

// The files upkeep itself creates and removes (session logs, the GC lock,
// objects GC evicts), in one place as package cache keeps its own in
// atomic.go, so permissions and fault injection have one place to hook in.

// createAppend creates a new file that its creator appends to (a usage
// session log), failing if it exists. In a shared cache it gets exactly
// c.RWMode(), whatever the umask, so teammates' GC can read it.
func createAppend(c *cache.Dir, path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|os.O_APPEND, c.RWMode())
	if err != nil {
		return nil, err
	}
	if c.Shared() {
		if err := f.Chmod(c.RWMode()); err != nil {
			f.Close()
			os.Remove(path)
			return nil, err
		}
	}
	return f, nil
}

// ensureRWFile creates path, if missing, as a file every member of a shared
// cache can open read-write (a lock file: flock needs it open, and O_RDWR
// is what NFS and some platforms need for an exclusive lock), with exactly
// c.RWMode() in a shared cache. An existing file is left as it is.
func ensureRWFile(c *cache.Dir, path string) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, c.RWMode())
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if c.Shared() {
		err = f.Chmod(c.RWMode())
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// removeFile removes one file or empty directory for GC or repair. A file
// already gone is success: another GC or a quarantine removed it first.
func removeFile(path string) error {
	if err := failpoint.Hit("gc.unlink"); err != nil {
		return err
	}
	err := fsx.Get().Remove(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

// removeTree removes a directory and everything in it, for a directory
// left where only files belong (tmp/). Gone already is success.
func removeTree(path string) error { return os.RemoveAll(path) }
