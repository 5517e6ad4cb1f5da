package cache

import (
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/cairn-run/cairn/internal/failpoint"
	"github.com/cairn-run/cairn/internal/fsx"
)

// This file holds every operation that creates, writes, syncs, renames,
// links or removes a file or directory in the cache or in a restore target.
// The rest of the package calls only these, so permissions, fault injection
// and other filesystems have one place to hook in. The write protocol they
// implement is described in FORMAT.md.
//
// The write protocol's operations go through the file layer fsx.Get(), and
// each step is marked with a failpoint named <object>.<step> (blob.fsync,
// ac.link, ...; failpoint.Labels lists them), so tests can fail, pause or
// kill the process at any step.

// Modes before the umask. Objects are made read-only once written (see
// tempFile.commit) so an edit through a hard link fails loudly instead of
// silently changing a blob.
const (
	dirPerm  fs.FileMode = 0o777
	tempPerm fs.FileMode = 0o666
)

// Modes of a group-shared cache, set explicitly (with chmod, so the users'
// umasks do not matter): directories setgid and group-writable, so every
// file created in them belongs to the cache's group and any member may add
// and remove entries; objects read-only for owner and group. No world bits:
// sharing with the group is explicit, sharing with everyone is not offered.
const (
	SharedDirPerm    = 0o770 // always with fs.ModeSetgid
	SharedObjectPerm = 0o440
	SharedRWPerm     = 0o660 // files members rewrite or lock: usage logs, lock files
)

// perms says how the cache creates directories and files: private (modes
// from the umask) or group-shared.
type perms struct{ shared bool }

// mkdir creates one directory. In a shared cache it gets SharedDirPerm
// exactly, whatever the umask.
func (p perms) mkdir(dir string) error {
	if err := fsx.Get().Mkdir(dir, dirPerm); err != nil {
		return err
	}
	if p.shared {
		return fsx.Get().Chmod(dir, SharedDirPerm|fs.ModeSetgid)
	}
	return nil
}

// mkdirAll creates dir and any missing parents, each through mkdir.
func (p perms) mkdirAll(dir string) error {
	st, err := os.Stat(dir)
	if err == nil {
		if !st.IsDir() {
			return &fs.PathError{Op: "mkdir", Path: dir, Err: syscall.ENOTDIR}
		}
		return nil
	}
	if parent := filepath.Dir(dir); parent != dir {
		if err := p.mkdirAll(parent); err != nil {
			return err
		}
	}
	err = p.mkdir(dir)
	if errors.Is(err, fs.ErrExist) {
		return nil // made by another process meanwhile
	}
	return err
}

// objectMode is the mode a committed object gets: read-only, group-readable
// when shared, else the temp file's umask-filtered mode without write bits.
func (p perms) objectMode(cur fs.FileMode) fs.FileMode {
	if p.shared {
		return SharedObjectPerm
	}
	return cur.Perm() &^ 0o222
}

// rwMode is the mode of a file that is rewritten in place (a usage log, a
// lock file): group read-write when shared, else 0o644 less the umask.
func (p perms) rwMode() fs.FileMode {
	if p.shared {
		return SharedRWPerm
	}
	return 0o644
}

// errNotRegular reports a cache object path that holds a symlink, FIFO,
// directory or device instead of a regular file.
var errNotRegular = errors.New("not a regular file")

// ErrUnreadable reports a cache object this user may not read (a file
// written with the wrong mode, by hand or by a teammate's cairn that did
// not know the cache was shared). Like a non-regular file it can never be
// used, and since objects are write-once it would block every later put
// of the same object, so readers quarantine it.
var ErrUnreadable = errors.New("not readable by this user")

// Unusable reports whether an error from OpenObject means the path holds
// something no reader can use, to be quarantined, rather than an I/O
// failure that says nothing about the object.
func Unusable(err error) bool {
	return errors.Is(err, errNotRegular) || errors.Is(err, ErrUnreadable)
}

// OpenObject opens a cache object for reading without following a symlink
// or blocking on a FIFO planted in its place (by a careless or hostile
// writer of a shared cache), and checks it is a regular file.
func OpenObject(path string) (*os.File, error) {
	f, err := openNoFollowFile(path)
	if errors.Is(err, syscall.ELOOP) {
		return nil, &fs.PathError{Op: "open", Path: path, Err: errNotRegular}
	}
	if errors.Is(err, fs.ErrPermission) {
		return nil, &fs.PathError{Op: "open", Path: path, Err: ErrUnreadable}
	}
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err == nil && !st.Mode().IsRegular() {
		err = &fs.PathError{Op: "open", Path: path, Err: errNotRegular}
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// tempFile is a file being written that no reader can see yet.
type tempFile struct {
	f    fsx.File
	path string
	p    perms  // how commit sets the mode, and publish makes directories
	fp   string // failpoint prefix: "blob", "ac", "meta" or "restore"
}

// failpointPrefix names the object a temp file becomes, from its prefix.
func failpointPrefix(prefix string) string {
	switch {
	case prefix == "blob-":
		return "blob"
	case prefix == "entry-", prefix == "pack-":
		return "ac"
	case strings.HasPrefix(prefix, "."):
		return "restore"
	}
	return "meta"
}

// createTemp creates a new, empty file in dir named prefix plus a random
// suffix, with O_EXCL so two writers (on two machines sharing the directory)
// never share a temp file.
func createTemp(dir, prefix string, perm fs.FileMode, pm perms) (*tempFile, error) {
	fp := failpointPrefix(prefix)
	for try := 0; ; try++ {
		if err := failpoint.Hit(fp + ".create-tmp"); err != nil {
			return nil, err
		}
		p := filepath.Join(dir, fmt.Sprintf("%s%016x", prefix, rand.Uint64()))
		f, err := fsx.Get().OpenFile(p, os.O_RDWR|os.O_CREATE|os.O_EXCL, perm)
		if err == nil {
			return &tempFile{f: f, path: p, p: pm, fp: fp}, nil
		}
		if !errors.Is(err, fs.ErrExist) || try >= 100 {
			return nil, err
		}
	}
}

// Write writes to the temp file.
func (t *tempFile) Write(p []byte) (int, error) {
	if err := failpoint.Hit(t.fp + ".write"); err != nil {
		return 0, err
	}
	return t.f.Write(p)
}

// commit makes the temp file's bytes durable (unless !sync: a syncfs
// of the batch will) and read-only: chmod, then Sync, then Close,
// checking every error. After commit it may be published.
func (t *tempFile) commit(sync bool) error {
	st, err := t.f.Stat()
	if err == nil {
		err = failpoint.Hit(t.fp + ".chmod")
	}
	if err == nil {
		err = t.f.Chmod(t.p.objectMode(st.Mode()))
	}
	if err == nil && sync {
		err = failpoint.Hit(t.fp + ".fsync")
	}
	if err == nil && sync {
		err = t.f.Sync()
	}
	if err == nil {
		err = failpoint.Hit(t.fp + ".close")
	}
	if cerr := t.f.Close(); err == nil {
		err = cerr
	}
	t.f = nil
	return err
}

// makeReadOnly gives a temp file that stays open for appending (a pack)
// its object mode at once: its descriptor still writes, and every name
// it is published under is read-only from the start.
func (t *tempFile) makeReadOnly() error {
	st, err := t.f.Stat()
	if err == nil {
		err = failpoint.Hit(t.fp + ".chmod")
	}
	if err == nil {
		err = t.f.Chmod(t.p.objectMode(st.Mode()))
	}
	return err
}

// sync fsyncs a temp file that stays open (a pack), so that what was
// written to it so far may be published.
func (t *tempFile) sync() error {
	if err := failpoint.Hit(t.fp + ".fsync"); err != nil {
		return err
	}
	return t.f.Sync()
}

// finish closes a temp file that stayed open (a pack, whose names keep
// its content) and removes its temp name, as abort does, marking the
// close with its failpoint.
func (t *tempFile) finish() {
	if t.f != nil {
		failpoint.Hit(t.fp + ".close")
	}
	t.abort()
}

// abort closes the temp file if it is open and removes it. It is safe to call
// after commit, after publish and more than once; errors are ignored because
// a leftover temp file is harmless and GC removes old ones.
func (t *tempFile) abort() {
	if t == nil {
		return
	}
	if t.f != nil {
		t.f.Close()
		t.f = nil
	}
	if t.path != "" {
		failpoint.Hit(t.fp + ".remove-tmp")
		fsx.Get().Remove(t.path)
		t.path = ""
	}
}

// publish gives the committed temp file the name dst without ever replacing
// an existing dst: link(2), which fails with EEXIST if dst exists. It returns
// existed=true (and no error) when dst was already there; the caller decides
// whether that object is good. A missing parent directory (a shard) is
// created, synced into its own parent, and the link retried. On filesystems
// without hard links it falls back to a no-replace rename where the
// platform has one. publish does not sync dst's directory and does not
// remove the temp file.
func publish(t *tempFile, dst string) (existed bool, err error) {
	existed, err = linkPack(t, dst)
	if err != nil && linkUnsupported(err) {
		existed, err = renameNoReplace(t.path, dst)
		if err == nil {
			t.path = "" // it has become dst
		}
	}
	return existed, err
}

// linkPack gives the file t holds the name dst as one more hard link to
// it, never replacing dst: existed=true (and no error) when dst was
// already there. A missing shard directory is created and synced into its
// parent, and the link retried; an error matching fs.ErrNotExist then
// means t's own name is gone (a pack's temp name, removed by a GC). It
// never renames, so a pack stays open for more entries; publish adds the
// rename fallback for a single object.
func linkPack(t *tempFile, dst string) (existed bool, err error) {
	for try := 0; ; try++ {
		if err = failpoint.Hit(t.fp + ".link"); err == nil {
			err = fsx.Get().Link(t.path, dst)
		}
		switch {
		case err == nil:
			return false, nil
		case errors.Is(err, fs.ErrExist):
			return true, nil
		case errors.Is(err, fs.ErrNotExist) && try == 0:
			if _, serr := os.Lstat(t.path); serr != nil {
				return false, err // t's name is gone
			}
			if err := failpoint.Hit(t.fp + ".mkdir"); err != nil {
				return false, err
			}
			if err := mkdirSynced(filepath.Dir(dst), t.p); err != nil {
				return false, err
			}
			continue
		}
		return false, err
	}
}

func linkUnsupported(err error) bool {
	return errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.ENOTSUP) ||
		errors.Is(err, syscall.EOPNOTSUPP) || errors.Is(err, syscall.ENOSYS)
}

// mkdirSynced creates dir (and its parents) if missing, then syncs dir's
// parent so the new directory entry is as durable as what goes into it. It
// syncs even when another process created dir, since that process may not
// have synced yet.
func mkdirSynced(dir string, p perms) error {
	if err := p.mkdirAll(dir); err != nil {
		return err
	}
	return syncDir(filepath.Dir(dir))
}

// mkdirIfMissing creates dir if it does not exist and reports whether it did.
func mkdirIfMissing(dir string, p perms) (created bool, err error) {
	err = p.mkdir(dir)
	if errors.Is(err, fs.ErrExist) {
		st, serr := os.Stat(dir)
		if serr != nil {
			return false, serr
		}
		if !st.IsDir() {
			return false, fmt.Errorf("%s: not a directory", dir)
		}
		return false, nil
	}
	return err == nil, err
}

// syncDir fsyncs a directory so the names linked into it survive a crash.
// Filesystems that cannot sync directories (EINVAL, ENOTSUP) are accepted,
// as restic does.
func syncDir(dir string) error {
	err := fsx.Get().SyncDir(dir)
	if errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.ENOTSUP) || errors.Is(err, syscall.EOPNOTSUPP) {
		return nil
	}
	return err
}

// syncDir syncs the directory the temp file was just published into.
func (t *tempFile) syncDir(dir string) error {
	if err := failpoint.Hit(t.fp + ".fsync-dir"); err != nil {
		return err
	}
	return syncDir(dir)
}

// moveAside renames src to dst, which must not exist (dst has a random
// name). Used to quarantine objects.
func moveAside(src, dst string) error {
	if err := failpoint.Hit("quarantine.rename"); err != nil {
		return err
	}
	return fsx.Get().Rename(src, dst)
}

// unlink removes a file; used to undo a quarantine move of the wrong file.
func unlink(path string) error { return fsx.Get().Remove(path) }

// linkBack links a file back to its old name without replacing anything.
func linkBack(src, dst string) error {
	err := fsx.Get().Link(src, dst)
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	return err
}

// touch sets path's modification time to t, leaving its access time. It
// works only on files this user owns (or may write); callers treat failure
// as harmless.
func touch(path string, t time.Time) error { return os.Chtimes(path, time.Time{}, t) }

// touchObject marks an existing object as just stored, best effort: GC keeps
// unreferenced blobs younger than its grace period, so a put that finds its
// blob already present refreshes it before writing the entry that will
// reference it. Objects other users own stay as they are.
func touchObject(path string) { touch(path, time.Now()) }

// ChmodOwned gives the file or directory at path exactly mode, if it is
// still the one described by was (not swapped for a symlink to something
// else since) and this user owns it. It opens without following symlinks
// and changes the mode through the open descriptor.
func ChmodOwned(path string, was fs.FileInfo, mode fs.FileMode) error {
	f, err := os.OpenFile(path, os.O_RDONLY|openNoFollow, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if !os.SameFile(st, was) {
		return fmt.Errorf("%s changed while being checked", path)
	}
	return f.Chmod(mode)
}
