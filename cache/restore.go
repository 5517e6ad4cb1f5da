package cache

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path"
	"path/filepath"
	"time"

	"github.com/cairn-run/cairn/cache/kernelcopy"
	"github.com/cairn-run/cairn/internal/failpoint"
)

// Restore writes through an [os.Root]: every open, mkdir, symlink and
// rename is resolved by the kernel relative to the root's directory
// descriptor, one component at a time, so neither a ".." nor a symlink
// (planted before the restore or swapped in while it runs) can make it
// write outside the root. Symlinks inside the root that stay inside it are
// followed. Modes are set through the open file (fchmod), never by name,
// because os.Root's Chmod may follow a swapped symlink.

// RestoreTree writes the output files, directories and symlinks of files
// (a part of an entry's output tree, paths relative to root) beneath root.
// It checks the whole tree first, as [DecodeEntry] does, and writes nothing
// if any entry is unsafe: a path that is absolute, unclean, holds "..",
// NUL or a backslash, a duplicate, a path beneath a file or symlink, a
// symlink target that leaves the tree. Directories are created as needed;
// an existing file at a file's path is replaced, never written through.
// Each file is verified against its digest before it gets its name (see
// [Dir.RestoreFile]). A file whose blob is in inline (the entry's inline
// blobs, [Entry.Inline]) is written from there, else from cas/. Once ctx
// is done it stops before the next entry with ctx's error, leaving the
// entries written so far (the next restore replaces them).
func (c *Dir) RestoreTree(ctx context.Context, root *os.Root, files []OutputFile, inline []InlineBlob) error {
	if err := checkOutputs(files); err != nil {
		return fmt.Errorf("cache restore into %s: refusing the tree: %w", root.Name(), err)
	}
	for _, f := range files {
		if f.Temporary {
			return fmt.Errorf("cache restore %s into %s: %w", f.Path, root.Name(), ErrTemporary)
		}
	}
	for _, f := range files {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("cache restore into %s: %w", root.Name(), err)
		}
		_ = failpoint.Hit("restore.entry")
		if err := c.restoreEntry(root, f, inline); err != nil {
			return fmt.Errorf("cache restore %s into %s: %w", f.Path, root.Name(), err)
		}
	}
	return nil
}

func (c *Dir) restoreEntry(root *os.Root, f OutputFile, inline []InlineBlob) error {
	name := filepath.FromSlash(f.Path)
	if dir := path.Dir(f.Path); dir != "." {
		if err := root.MkdirAll(filepath.FromSlash(dir), 0o755); err != nil {
			return err
		}
	}
	switch f.Type {
	case TypeDir:
		err := root.Mkdir(name, fs.FileMode(f.Mode)|0o700)
		if errors.Is(err, fs.ErrExist) {
			var st fs.FileInfo
			if st, err = root.Lstat(name); err == nil && !st.IsDir() {
				err = fmt.Errorf("a %s is in the way of the directory", st.Mode().Type())
			}
		}
		return err
	case TypeSymlink:
		return root.Symlink(filepath.FromSlash(f.Target), name)
	default:
		for _, b := range inline {
			if b.Digest == f.Digest {
				return restoreBytes(root, b.Data, f.Digest, name, fs.FileMode(f.Mode), f.MTime)
			}
		}
		return c.restoreFileIn(root, f.Digest, name, fs.FileMode(f.Mode), f.MTime)
	}
}

// restoreBytes writes data, which must hash to d, to name beneath root
// with permission bits perm and modification time mtime (see setMTime),
// through a temp file renamed into place, as restoreOnce does for a blob.
func restoreBytes(root *os.Root, data []byte, d Digest, name string, perm fs.FileMode, mtime int64) error {
	if HashBytes(data) != d {
		return fmt.Errorf("inline blob %s: %w: its content hashes to %s", d.Short(), ErrCorrupt, HashBytes(data).Short())
	}
	t, tmp, err := createTempIn(root, name)
	if err != nil {
		return err
	}
	_, err = t.Write(data)
	if err == nil {
		err = t.Chmod(perm)
	}
	if cerr := t.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = setMTime(root, tmp, mtime)
	}
	if err == nil {
		err = root.Rename(tmp, name)
	}
	if err != nil {
		root.Remove(tmp)
	}
	return err
}

// RestoreFile writes blob d to dst with permission bits perm (exactly, not
// filtered by the umask). It writes a temp file in dst's directory (a
// large blob stored raw by reflink or copy_file_range, hashing the copy, or
// after a reflink the blob whose extents it shares; any other blob in user
// space, decoding and hashing while writing), and renames it over dst only
// if the content matches d, so
// dst is either untouched or complete; a symlink or hard link at dst is
// replaced, never written through. A missing blob is ErrNotFound. A blob
// that fails verification twice is moved to quarantine/ and reported as a
// *CorruptError, and dst is left untouched. dst's directory must exist.
// The file is not fsynced: workspace files can be restored again from the
// cache.
func (c *Dir) RestoreFile(d Digest, dst string, perm fs.FileMode) error {
	root, err := os.OpenRoot(filepath.Dir(dst))
	if err != nil {
		return fmt.Errorf("cache restore %s to %s: %w", d.Short(), dst, err)
	}
	defer root.Close()
	if err := c.restoreFileIn(root, d, filepath.Base(dst), perm, 0); err != nil {
		return fmt.Errorf("cache restore %s to %s: %w", d.Short(), dst, err)
	}
	return nil
}

// restoreFileIn is RestoreFile for the file name beneath root, which gets
// modification time mtime (see setMTime).
func (c *Dir) restoreFileIn(root *os.Root, d Digest, name string, perm fs.FileMode, mtime int64) error {
	for try := 0; ; try++ {
		retry, err := c.restoreOnce(root, d, name, perm, mtime, try == 0)
		if !retry {
			return err
		}
	}
}

func (c *Dir) restoreOnce(root *os.Root, d Digest, name string, perm fs.FileMode, mtime int64, mayRetry bool) (retry bool, err error) {
	f, compressed, err := c.openBlob(d)
	if err != nil {
		return false, err
	}
	defer f.Close()
	t, tmp, err := createTempIn(root, name)
	if err != nil {
		return false, err
	}
	done := false
	defer func() {
		if !done {
			t.Close()
			root.Remove(tmp)
		}
	}()
	// A raw blob this workspace verified before, whose file has not
	// changed since, is copied unhashed (see blobMemo); any other is
	// hashed while it is copied, and remembered once it checks.
	memo := c.blobMemo()
	var fi fs.FileInfo // a raw blob's stat: its size, and what the memo compares
	if !compressed {
		fi, _ = f.Stat()
	}
	var bad error
	if memo != nil && fi != nil && mayRetry && memo.blobTrusted(d, fi) {
		err = copyTrusted(t, f)
	} else {
		var began time.Time
		if memo != nil {
			began = memo.now()
		}
		bad, err = c.copyVerified(t, f, compressed, fi, d, mayRetry)
		if memo != nil && fi != nil && err == nil && bad == nil {
			memo.blobVerified(d, fi, began)
		}
	}
	if err != nil {
		return false, err
	}
	if bad != nil {
		if mayRetry {
			return true, nil
		}
		return false, c.QuarantineFile("blob", d.String(), f, bad)
	}
	err = t.Chmod(perm)
	if cerr := t.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = setMTime(root, tmp, mtime)
	}
	if err != nil {
		return false, err
	}
	if err := root.Rename(tmp, name); err != nil {
		return false, err
	}
	done = true
	return false, nil
}

// copyVerified copies blob d from f into the empty file t and verifies
// what t holds: with kernel, by the kernel for a large raw blob (raw is
// its stat, nil if unknown; see
// kernelcopy.Verified), else in user space while decoding and hashing (see
// readVerified). err is an I/O error; bad says the blob is not d.
// restoreOnce's second try copies in user space, so a blob is quarantined
// only if reading it, not the kernel's copy, gave the wrong content.
func (c *Dir) copyVerified(t, f *os.File, compressed bool, raw fs.FileInfo, d Digest, kernel bool) (bad, err error) {
	if kernel && !compressed && raw != nil && raw.Size() >= kernelcopy.MinSize {
		if done, sum, err := kernelcopy.Verified(t, f); done {
			if err != nil {
				return nil, err
			}
			return mismatch(sum, d), nil
		}
	}
	return c.ReadVerified(t, f, compressed, d)
}

// blobMemo returns the memo whose verified blobs restores may copy
// unhashed: none for a shared cache, where every read is hashed (a
// teammate's process writes there; RELIABILITY I2), nor without a memo.
func (c *Dir) blobMemo() *EntryMemo {
	if c.memo == nil || c.Shared() {
		return nil
	}
	return c.memo
}

// setMTime gives the restored temp file name the modification time mtime
// (Unix ns) it had when it was stored, before it is renamed into place (a
// rename keeps it), so the file never shows up newer than it was; its
// ctime stays the restore's, which is what the workspace's digest memory
// trusts (engine/digests.go). Zero, from an entry that recorded no time,
// leaves the time of the write. The access time is left alone.
func setMTime(root *os.Root, name string, mtime int64) error {
	if mtime == 0 {
		return nil
	}
	return root.Chtimes(name, time.Time{}, time.Unix(0, mtime))
}

// createTempIn creates a new, empty file beside name beneath root, with
// O_EXCL (so it is never an existing file or symlink), and returns it with
// its name.
func createTempIn(root *os.Root, name string) (*os.File, string, error) {
	dir, base := filepath.Split(name)
	for try := 0; ; try++ {
		tmp := filepath.Join(dir, fmt.Sprintf(".%s.cairn-%016x", base, rand.Uint64()))
		f, err := root.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
		if err == nil {
			return f, tmp, nil
		}
		if !errors.Is(err, fs.ErrExist) || try >= 100 {
			return nil, "", err
		}
	}
}
