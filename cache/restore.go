package cache

import (
	"fmt"
	"io/fs"
	"path/filepath"
)

// RestoreFile writes blob d to dst with permission bits perm (exactly, not
// filtered by the umask). It writes a temp file in dst's directory, hashing
// while writing, and renames it over dst only if the content matches d, so
// dst is either untouched or complete. A missing blob is ErrNotFound. A
// blob that fails verification twice is moved to quarantine/ and reported
// as a *CorruptError, and dst is left untouched. dst's directory must
// exist. The file is not fsynced: workspace files can be restored again
// from the cache.
func (c *Dir) RestoreFile(d Digest, dst string, perm fs.FileMode) error {
	for try := 0; ; try++ {
		retry, err := c.restoreOnce(d, dst, perm, try == 0)
		if retry {
			continue
		}
		if err != nil {
			return fmt.Errorf("cache restore %s to %s: %w", d.Short(), dst, err)
		}
		return nil
	}
}

func (c *Dir) restoreOnce(d Digest, dst string, perm fs.FileMode, mayRetry bool) (retry bool, err error) {
	f, compressed, err := c.openBlob(d)
	if err != nil {
		return false, err
	}
	defer f.Close()
	t, err := createTemp(filepath.Dir(dst), "."+filepath.Base(dst)+".cairn-", 0o600, perms{})
	if err != nil {
		return false, err
	}
	defer t.abort()
	bad, err := c.readVerified(t, f, compressed, d)
	if err != nil {
		return false, err
	}
	if bad != nil {
		if mayRetry {
			return true, nil
		}
		return false, c.quarantineFile("blob", d.String(), f, bad)
	}
	if err := t.closeMode(perm); err != nil {
		return false, err
	}
	return false, replace(t, dst)
}
