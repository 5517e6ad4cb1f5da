package fsx

import (
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync/atomic"

	"github.com/cairn-run/cairn/internal/failpoint"
)

// File is an open file being written.
type File interface {
	Write(p []byte) (int, error)
	Sync() error
	Close() error
	Chmod(mode fs.FileMode) error
	Stat() (fs.FileInfo, error)
	Name() string
}

// FS is the set of operations the write protocols use. Errors are those of
// package os (*fs.PathError, *os.LinkError), so errors.Is works on them.
type FS interface {
	OpenFile(name string, flag int, perm fs.FileMode) (File, error)
	Mkdir(name string, perm fs.FileMode) error
	Chmod(name string, mode fs.FileMode) error
	Link(oldname, newname string) error
	Rename(oldname, newname string) error
	Remove(name string) error
	// SyncDir fsyncs a directory, so the names created in it survive a
	// crash.
	SyncDir(dir string) error
	// OpenFS returns a syncer of the whole filesystem holding dir, or an
	// error wrapping errors.ErrUnsupported where the platform has none.
	OpenFS(dir string) (FSSyncer, error)
}

// FSSyncer makes every change made so far to one filesystem durable at
// once (syncfs(2)): one flush of many files instead of an fsync of each.
// Sync reports the write-back errors of the filesystem since the syncer
// was opened (Linux 5.8 and later), so a caller opens it before writing
// what it is to make durable.
type FSSyncer interface {
	Sync() error
	Close() error
}

// OS is the real file system.
type OS struct{}

var _ FS = OS{}

func (OS) OpenFile(name string, flag int, perm fs.FileMode) (File, error) {
	f, err := OpenFile(name, flag, perm)
	if err != nil {
		return nil, err // not a typed nil File
	}
	return f, nil
}
func (OS) Mkdir(name string, perm fs.FileMode) error { return os.Mkdir(name, perm) }
func (OS) Chmod(name string, mode fs.FileMode) error { return os.Chmod(name, mode) }
func (OS) Link(oldname, newname string) error        { return os.Link(oldname, newname) }
func (OS) Rename(oldname, newname string) error      { return os.Rename(oldname, newname) }
func (OS) Remove(name string) error                  { return os.Remove(name) }

func (OS) SyncDir(dir string) error {
	d, err := OpenFile(dir, os.O_RDONLY, 0)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

func (OS) OpenFS(dir string) (FSSyncer, error) { return openFS(dir) }

type holder struct{ FS }

var active atomic.Pointer[holder]

func init() { active.Store(&holder{OS{}}) }

// Get returns the file layer in force: OS unless a test set another.
func Get() FS { return active.Load().FS }

// Set makes f the file layer of this process and returns a function that
// restores the previous one. For tests; operations already under way
// finish on the old layer.
func Set(f FS) (restore func()) {
	old := active.Swap(&holder{f})
	return func() { active.Store(old) }
}

// WriteFileAtomic writes data to path through a temp file in the same
// directory, named .<name>.tmp-<pid>-<random> (so that a process that
// finds one can tell whether its writer is alive), and a rename, so a reader sees the old or the new content,
// never a mix. With syncFile the temp file is fsynced before the rename,
// so a power cut cannot leave path naming a file whose data never reached
// the disk; with syncDir the directory is fsynced after it, so the rename
// itself is durable when WriteFileAtomic returns. label names the
// failpoints of the steps ("state": state.create-tmp, state.write, ...).
// On error the temp file is removed.
func WriteFileAtomic(path string, data []byte, perm fs.FileMode, label string, syncFile, syncDir bool) (err error) {
	return WriteFileAtomicVia(filepath.Dir(path), path, data, perm, label, syncFile, syncDir)
}

// WriteFileAtomicVia is WriteFileAtomic with the temp file in tmpDir,
// which must be on path's filesystem: a directory its writers' successors
// look in for temp files a dead process left behind.
func WriteFileAtomicVia(tmpDir, path string, data []byte, perm fs.FileMode, label string, syncFile, syncDir bool) (err error) {
	fsys := Get()
	dir := filepath.Dir(path)
	var f File
	name := ""
	for try := 0; ; try++ {
		if err = failpoint.Hit(label + ".create-tmp"); err != nil {
			return fmt.Errorf("write %s: %w", path, err)
		}
		name = filepath.Join(tmpDir, fmt.Sprintf(".%s.tmp-%d-%016x", filepath.Base(path), os.Getpid(), rand.Uint64()))
		f, err = fsys.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
		if err == nil {
			break
		}
		if !os.IsExist(err) || try >= 100 {
			return fmt.Errorf("write %s: %w", path, err)
		}
	}
	defer func() {
		if err != nil {
			if f != nil {
				f.Close()
			}
			fsys.Remove(name)
		}
	}()
	if err = failpoint.Hit(label + ".write"); err == nil {
		_, err = f.Write(data)
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err = failpoint.Hit(label + ".chmod"); err == nil {
		err = f.Chmod(perm)
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if syncFile {
		if err = failpoint.Hit(label + ".fsync"); err == nil {
			err = f.Sync()
		}
		if err != nil {
			return fmt.Errorf("sync %s: %w", path, err)
		}
	}
	err = failpoint.Hit(label + ".close")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	f = nil
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err = failpoint.Hit(label + ".rename"); err == nil {
		err = fsys.Rename(name, path)
	}
	if err != nil {
		return fmt.Errorf("rename %s: %w", path, err)
	}
	if syncDir {
		// The new content is in place; a failed directory sync only
		// means the rename might not survive a power cut, and the caller
		// cannot do better than retry the whole write later.
		if err := failpoint.Hit(label + ".fsync-dir"); err == nil {
			_ = fsys.SyncDir(dir)
		}
	}
	return nil
}
