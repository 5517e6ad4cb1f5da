package cache

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// Names inside the cache root. FORMAT.md describes each.
const (
	formatName     = "format"       // holds formatContent
	tagName        = "CACHEDIR.TAG" // tells backup tools to skip the cache
	casDir         = "cas"          // blobs: cas/<2 hex>/<64 hex>[.zst]
	acDir          = "ac"           // entries: ac/<2 hex>/<64 hex>
	tmpDir         = "tmp"          // temp files being written
	quarantineDir  = "quarantine"   // objects that failed verification
	zstSuffix      = ".zst"
	formatContent  = "cairn-cache 1\n"
	cacheDirTagSig = "Signature: 8a477f597d28d172789f06886806bc55"
)

// cacheDirTag follows https://bford.info/cachedir/ so tar --exclude-caches,
// restic and borg skip the cache.
const cacheDirTag = cacheDirTagSig + "\n" +
	"# This file is a cache directory tag created by cairn.\n" +
	"# For information about cache directory tags, see:\n" +
	"#\thttps://bford.info/cachedir/\n"

// Dir is a content-addressed blob store plus an action cache in one
// directory. It holds no open files and no locks: a *Dir is safe for
// concurrent use by many goroutines, and many processes (on many machines)
// may use the same directory at once. Writers may duplicate work, never
// corrupt it.
type Dir struct {
	root string
}

// Open opens the cache in root, creating root and its layout if missing:
// the format file, a CACHEDIR.TAG, and the cas/, ac/, tmp/ and quarantine/
// directories. It refuses, with an error wrapping [ErrUnknownFormat], a
// directory whose format file names a format it does not know. Opening the
// same root from many processes at once is safe.
func Open(root string) (*Dir, error) {
	if root == "" {
		return nil, errors.New("cache open: empty directory name")
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("cache open %s: %w", root, err)
	}
	c := &Dir{root: abs}
	if err := c.init(); err != nil {
		return nil, fmt.Errorf("cache open %s: %w", abs, err)
	}
	return c, nil
}

func (c *Dir) init() error {
	if err := os.MkdirAll(c.root, dirPerm); err != nil {
		return err
	}
	// Check the format before adding anything to a directory we may not own.
	if err := c.checkFormat(); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	created := false
	for _, d := range []string{tmpDir, casDir, acDir, quarantineDir} {
		made, err := mkdirIfMissing(filepath.Join(c.root, d))
		if err != nil {
			return err
		}
		created = created || made
	}
	if created {
		if err := syncDir(c.root); err != nil {
			return err
		}
	}
	if err := c.writeOnce(formatName, []byte(formatContent)); err != nil {
		return err
	}
	if err := c.checkFormat(); err != nil {
		return err // lost a race to a writer of another format
	}
	return c.writeOnce(tagName, []byte(cacheDirTag))
}

// checkFormat returns an error wrapping fs.ErrNotExist if there is no format
// file, one wrapping ErrUnknownFormat if it names another format.
func (c *Dir) checkFormat() error {
	b, err := os.ReadFile(filepath.Join(c.root, formatName))
	if err != nil {
		return err
	}
	if !bytes.Equal(b, []byte(formatContent)) {
		return fmt.Errorf("%s says %q, want %q: %w", formatName, bytes.TrimSpace(b), formatContent[:len(formatContent)-1], ErrUnknownFormat)
	}
	return nil
}

// writeOnce creates root/name with content b through the write protocol,
// keeping an existing file.
func (c *Dir) writeOnce(name string, b []byte) error {
	dst := filepath.Join(c.root, name)
	if _, err := os.Lstat(dst); err == nil {
		return nil
	}
	t, err := c.newTemp(name)
	if err != nil {
		return err
	}
	defer t.abort()
	if _, err := t.Write(b); err != nil {
		return err
	}
	if err := t.commit(); err != nil {
		return err
	}
	if _, err := publish(t, dst); err != nil {
		return err
	}
	return syncDir(c.root)
}

// Root returns the absolute path of the cache directory.
func (c *Dir) Root() string { return c.root }

// newTemp creates a temp file under tmp/ for an object of the given kind.
func (c *Dir) newTemp(kind string) (*tempFile, error) {
	return createTemp(filepath.Join(c.root, tmpDir), kind+"-", tempPerm)
}

// blobPath returns the path of blob d, raw or compressed.
func (c *Dir) blobPath(d Digest, compressed bool) string {
	s := d.String()
	p := filepath.Join(c.root, casDir, s[:2], s)
	if compressed {
		p += zstSuffix
	}
	return p
}

// entryPath returns the path of the entry for key.
func (c *Dir) entryPath(key ActionID) string {
	s := key.String()
	return filepath.Join(c.root, acDir, s[:2], s)
}
