package fsxtest

import (
	"io/fs"
	"strings"
	"sync"

	"github.com/cairn-run/cairn/internal/fsx"
)

// Op names an operation of the file layer.
type Op string

// The operations. Chmod counts both chmod(2) and fchmod(2); Sync is a
// file's fsync, SyncDir a directory's, SyncFS a whole filesystem's (its
// path is the directory the syncer was opened on).
const (
	OpOpen    Op = "open"
	OpWrite   Op = "write"
	OpChmod   Op = "chmod"
	OpSync    Op = "sync"
	OpClose   Op = "close"
	OpMkdir   Op = "mkdir"
	OpLink    Op = "link"
	OpRename  Op = "rename"
	OpRemove  Op = "remove"
	OpSyncDir Op = "syncdir"
	OpSyncFS  Op = "syncfs"
)

// Ops lists every operation.
var Ops = []Op{OpOpen, OpWrite, OpChmod, OpSync, OpClose, OpMkdir, OpLink, OpRename, OpRemove, OpSyncDir, OpSyncFS}

// Fault is an fsx.FS that makes the N-th call of Op fail with Err (N = 0:
// every call), counting only calls on paths containing Match. With Drop
// the chosen calls are not made at all and report success instead: a
// protocol with that step removed, for negative controls. Every call is
// counted by operation (see Calls), so a Fault with Op "" counts without
// failing anything. Safe for concurrent use.
type Fault struct {
	Base  fsx.FS
	Op    Op
	N     int
	Err   error
	Match string
	Drop  bool

	mu     sync.Mutex
	calls  map[Op]int
	chosen int // matching calls of Op so far
	fired  int
}

var _ fsx.FS = (*Fault)(nil)

// Calls returns how many calls of op were made (or attempted).
func (f *Fault) Calls(op Op) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[op]
}

// Fired returns how many calls the fault failed or dropped.
func (f *Fault) Fired() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.fired
}

// hit counts a call and says whether it is to fail (or be dropped).
func (f *Fault) hit(op Op, path string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.calls == nil {
		f.calls = map[Op]int{}
	}
	f.calls[op]++
	if op != f.Op || !strings.Contains(path, f.Match) {
		return false
	}
	f.chosen++
	if f.N == 0 || f.chosen == f.N {
		f.fired++
		return true
	}
	return false
}

func (f *Fault) pathErr(op Op, path string) error {
	return &fs.PathError{Op: string(op), Path: path, Err: f.Err}
}

func (f *Fault) OpenFile(name string, flag int, perm fs.FileMode) (fsx.File, error) {
	if f.hit(OpOpen, name) {
		return nil, f.pathErr(OpOpen, name)
	}
	file, err := f.Base.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &faultFile{File: file, fs: f}, nil
}

func (f *Fault) Mkdir(name string, perm fs.FileMode) error {
	if f.hit(OpMkdir, name) {
		if f.Drop {
			return nil
		}
		return f.pathErr(OpMkdir, name)
	}
	return f.Base.Mkdir(name, perm)
}

func (f *Fault) Chmod(name string, mode fs.FileMode) error {
	if f.hit(OpChmod, name) {
		if f.Drop {
			return nil
		}
		return f.pathErr(OpChmod, name)
	}
	return f.Base.Chmod(name, mode)
}

func (f *Fault) Link(oldname, newname string) error {
	if f.hit(OpLink, newname) {
		if f.Drop {
			return nil
		}
		return f.pathErr(OpLink, newname)
	}
	return f.Base.Link(oldname, newname)
}

func (f *Fault) Rename(oldname, newname string) error {
	if f.hit(OpRename, newname) {
		if f.Drop {
			return nil
		}
		return f.pathErr(OpRename, newname)
	}
	return f.Base.Rename(oldname, newname)
}

func (f *Fault) Remove(name string) error {
	if f.hit(OpRemove, name) {
		if f.Drop {
			return nil
		}
		return f.pathErr(OpRemove, name)
	}
	return f.Base.Remove(name)
}

func (f *Fault) SyncDir(dir string) error {
	if f.hit(OpSyncDir, dir) {
		if f.Drop {
			return nil
		}
		return f.pathErr(OpSyncDir, dir)
	}
	return f.Base.SyncDir(dir)
}

func (f *Fault) OpenFS(dir string) (fsx.FSSyncer, error) {
	s, err := f.Base.OpenFS(dir)
	if err != nil {
		return nil, err
	}
	return &faultSyncer{FSSyncer: s, fs: f, dir: dir}, nil
}

type faultSyncer struct {
	fsx.FSSyncer
	fs  *Fault
	dir string
}

func (s *faultSyncer) Sync() error {
	if s.fs.hit(OpSyncFS, s.dir) {
		if s.fs.Drop {
			return nil
		}
		return s.fs.pathErr(OpSyncFS, s.dir)
	}
	return s.FSSyncer.Sync()
}

type faultFile struct {
	fsx.File
	fs *Fault
}

func (ff *faultFile) Write(p []byte) (int, error) {
	if ff.fs.hit(OpWrite, ff.Name()) {
		if ff.fs.Drop {
			return len(p), nil
		}
		return 0, ff.fs.pathErr(OpWrite, ff.Name())
	}
	return ff.File.Write(p)
}

func (ff *faultFile) Chmod(mode fs.FileMode) error {
	if ff.fs.hit(OpChmod, ff.Name()) {
		if ff.fs.Drop {
			return nil
		}
		return ff.fs.pathErr(OpChmod, ff.Name())
	}
	return ff.File.Chmod(mode)
}

func (ff *faultFile) Sync() error {
	if ff.fs.hit(OpSync, ff.Name()) {
		if ff.fs.Drop {
			return nil
		}
		return ff.fs.pathErr(OpSync, ff.Name())
	}
	return ff.File.Sync()
}

func (ff *faultFile) Close() error {
	if ff.fs.hit(OpClose, ff.Name()) {
		// A failed close still releases the descriptor, as close(2)
		// does.
		ff.File.Close()
		if ff.fs.Drop {
			return nil
		}
		return ff.fs.pathErr(OpClose, ff.Name())
	}
	return ff.File.Close()
}
