package cache

import (
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
)

// quarantineFile moves the object that f has open (opened by its cache path)
// to quarantine/ and returns the *CorruptError to report. Quarantine is best
// effort: if the move fails the error is still returned, with Moved empty.
func (c *Dir) QuarantineFile(kind, id string, f *os.File, cause error) *CorruptError {
	st, err := f.Stat()
	if err != nil {
		st = nil
	}
	return c.Quarantine(kind, id, f.Name(), st, cause)
}

// quarantinePath is quarantineFile for an object that is not open.
func (c *Dir) quarantinePath(kind, id, path string, cause error) *CorruptError {
	return c.Quarantine(kind, id, path, nil, cause)
}

// quarantine moves path aside so the next writer can publish a good copy.
// was identifies the file that was found bad. Another process may have
// quarantined it first and a writer may have published a good copy since;
// if the file moved turns out not to be the bad one, it is linked back.
func (c *Dir) Quarantine(kind, id, path string, was fs.FileInfo, cause error) *CorruptError {
	ce := &CorruptError{Kind: kind, ID: id, Path: path, Err: cause}
	if was == nil {
		st, err := os.Lstat(path)
		if err != nil {
			return ce
		}
		was = st
	}
	qdir := filepath.Join(c.root, QuarantineDir)
	dst := filepath.Join(qdir, fmt.Sprintf("%s-%s.%016x", kind, filepath.Base(path), rand.Uint64()))
	err := moveAside(path, dst)
	if errors.Is(err, fs.ErrNotExist) {
		if _, serr := os.Lstat(path); serr == nil { // quarantine/ itself was missing
			if _, err = mkdirIfMissing(qdir, c.perms); err == nil {
				err = moveAside(path, dst)
			}
		}
	}
	if err != nil {
		return ce
	}
	if st, err := os.Lstat(dst); err == nil && !os.SameFile(st, was) {
		if linkBack(dst, path) == nil {
			unlink(dst)
		}
		return ce
	}
	ce.Moved = dst
	return ce
}
