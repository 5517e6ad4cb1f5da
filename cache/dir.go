package cache

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cairn-run/cairn/cache/entrysig"
	"github.com/cairn-run/cairn/cache/sigkey"
)

// Names inside the cache root. FORMAT.md describes each.
const (
	FormatFile       = "format"       // holds formatContent
	tagName          = "CACHEDIR.TAG" // tells backup tools to skip the cache
	CASDir           = "cas"          // blobs: cas/<2 hex>/<64 hex>[.zst]
	ACDir            = "ac"           // entries: ac/<2 hex>/<64 hex>
	TempDir          = "tmp"          // temp files being written
	QuarantineDir    = "quarantine"   // objects that failed verification
	CompressedSuffix = ".zst"
	formatContent    = "cairn-cache 1\n"
	cacheDirTagSig   = "Signature: 8a477f597d28d172789f06886806bc55"
)

// TempGrace is how old a temp file must be before GC removes it (or
// Verify reports it as an orphan): longer than any write takes.
const TempGrace = time.Hour

// cacheDirTag follows https://bford.info/cachedir/ so tar --exclude-caches,
// restic and borg skip the cache.
const cacheDirTag = cacheDirTagSig + "\n" +
	"# This file is a cache directory tag created by cairn.\n" +
	"# For information about cache directory tags, see:\n" +
	"#\thttps://bford.info/cachedir/\n"

// Dir is a content-addressed blob store plus an action cache in one
// directory (package remote puts a second level behind it). It holds no locks, and no
// open file but the pack its entry puts append to, until [Dir.Close]: a
// *Dir is safe for concurrent use by many goroutines, and many
// processes (on many machines, as many users) may use the same directory at
// once. Writers may duplicate work, never corrupt it.
type Dir struct {
	root  string
	perms perms
	opts  Options
	sign  *entrysig.Team // nil: entries are written without the team HMAC
	// writer signs entries with this writer's own key (nil: not).
	writer *sigkey.PrivateKey
	// trusted holds the keys of TrustedKeys by their bytes; nil: no
	// writer's signature is required.
	trusted map[string]*sigkey.PublicKey
	// warnedUntrusted holds the keys of the entries already warned about.
	warnedUntrusted sync.Map
	chunkReads      atomic.Int64 // see ChunkReads
	// damagedFormat: opened with AllowDamagedFormat over a damaged
	// marker, which Verify with Repair rewrites.
	damagedFormat bool

	memo  *EntryMemo // nil: every entry is read in full
	packs packWriter // the pack this Dir's entry puts append to (pack.go)
	acFD  struct {   // the action cache directory, open (stamp_linux.go)
		once    sync.Once
		fd      int
		cleanup runtime.Cleanup
	}
}

// UseEntryMemo makes GetEntryLean answer from m for entries whose file has
// not changed since m recorded them, and GetEntry and GetEntryLean record
// in m every entry they read in full. Call it before the directory is used concurrently.
func (c *Dir) UseEntryMemo(m *EntryMemo) { c.memo = m }

// Options configures how a cache directory is opened. The zero value is a
// private local cache.
type Options struct {
	// Shared makes the cache group-shared (see [Dir.Shared]): Open makes
	// root setgid and group-writable if it can. A cache whose root is
	// already setgid is shared whatever Shared says, so every teammate's
	// cairn keeps the modes right once one of them set it up.
	Shared bool

	// SigningKey, if set, signs every entry written (HMAC-SHA256 over its
	// body) and checks the signature of every entry read.
	SigningKey []byte
	// RequireSigned makes readers treat an unsigned entry, or one whose
	// signature does not check with SigningKey, as a miss.
	RequireSigned bool

	// WriterKey, if set, signs every entry written with this writer's own
	// key (see FORMAT.md, "Signed entries"). It may be set together with
	// SigningKey: the entry then carries both signatures.
	WriterKey *sigkey.PrivateKey
	// TrustedKeys, if not empty, makes readers treat an entry that no
	// key of the list signed as a miss (with a warning). It combines with
	// RequireSigned: with both, an entry must pass both.
	TrustedKeys []*sigkey.PublicKey

	// AllowDamagedFormat opens a cache whose format marker is damaged
	// (see [ErrDamagedFormat]) without rewriting it, so that Verify can
	// check the objects and, with Repair, rewrite the marker.
	AllowDamagedFormat bool

	// Warn receives one-line warnings (an untrusted entry, a
	// world-writable root). Nil discards them.
	Warn func(msg string)
}

// Open opens the cache in root, creating root and its layout if missing:
// the format file, a CACHEDIR.TAG, and the cas/, ac/, tmp/ and quarantine/
// directories. It refuses, with an error wrapping [ErrUnknownFormat], a
// directory whose format file names a format it does not know. Opening the
// same root from many processes at once is safe.
func Open(root string) (*Dir, error) { return OpenWith(root, Options{}) }

// OpenWith is [Open] with options.
func OpenWith(root string, o Options) (*Dir, error) {
	if root == "" {
		return nil, errors.New("cache open: empty directory name")
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("cache open %s: %w", root, err)
	}
	if o.RequireSigned && len(o.SigningKey) == 0 {
		return nil, fmt.Errorf("cache open %s: require_signed is set but no signing key is: set CAIRN_CACHE_SIGNING_KEY", abs)
	}
	c := &Dir{root: abs, opts: o}
	if len(o.SigningKey) > 0 {
		c.sign = entrysig.NewTeam(o.SigningKey)
	}
	c.writer = o.WriterKey
	if len(o.TrustedKeys) > 0 {
		c.trusted = make(map[string]*sigkey.PublicKey, len(o.TrustedKeys))
		for _, k := range o.TrustedKeys {
			c.trusted[string(k.Key)] = k
		}
	}
	if err := c.init(o.Shared); err != nil {
		return nil, fmt.Errorf("cache open %s: %w", abs, err)
	}
	return c, nil
}

// RWMode is the mode of a file rewritten in place in the cache (a usage
// log, a lock file).
func (c *Dir) RWMode() fs.FileMode { return c.perms.rwMode() }

// Mkdir creates dir, inside the cache, with the cache's modes if it is
// missing, and reports whether it did.
func (c *Dir) Mkdir(dir string) (created bool, err error) { return mkdirIfMissing(dir, c.perms) }

// DamagedFormat reports whether the cache was opened over a damaged format
// marker (Options.AllowDamagedFormat), which RewriteFormat mends.
func (c *Dir) DamagedFormat() bool { return c.damagedFormat }

// Shared reports whether the cache is group-shared: directories setgid and
// group-writable, objects group-readable, whatever each user's umask.
func (c *Dir) Shared() bool { return c.perms.shared }

// warn passes a warning to Options.Warn.
func (c *Dir) warn(format string, args ...any) {
	if c.opts.Warn != nil {
		c.opts.Warn(fmt.Sprintf(format, args...))
	}
}

func (c *Dir) init(shared bool) error {
	c.perms.shared = shared
	if err := c.perms.mkdirAll(c.root); err != nil {
		return err
	}
	st, err := os.Stat(c.root)
	if err != nil {
		return err
	}
	if st.Mode()&fs.ModeSetgid != 0 {
		c.perms.shared = true
	} else if shared {
		if err := os.Chmod(c.root, SharedDirPerm|fs.ModeSetgid); err != nil {
			return fmt.Errorf("make the cache group-shared: %w (the owner of %s can run: cairn cache init --shared)", err, c.root)
		}
	}
	if st.Mode().Perm()&0o002 != 0 && st.Mode()&fs.ModeSticky == 0 {
		c.warn("warning: cache directory %s is writable by every user on this machine; anyone can plant results. Restrict it to a group: cairn cache init --shared --group GROUP", c.root)
	}
	// Check the format before adding anything to a directory we may not own.
	if err := c.checkFormat(); err != nil && !errors.Is(err, fs.ErrNotExist) {
		if !c.opts.AllowDamagedFormat || !errors.Is(err, ErrDamagedFormat) || !c.hasLayout() {
			return err
		}
		c.damagedFormat = true
	}
	created := false
	for _, d := range []string{TempDir, CASDir, ACDir, QuarantineDir} {
		made, err := mkdirIfMissing(filepath.Join(c.root, d), c.perms)
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
	if !c.damagedFormat {
		if err := c.writeOnce(FormatFile, []byte(formatContent)); err != nil {
			return err
		}
		if err := c.checkFormat(); err != nil {
			return err // lost a race to a writer of another format
		}
	}
	return c.writeOnce(tagName, []byte(cacheDirTag))
}

// checkFormat returns an error wrapping fs.ErrNotExist if there is no format
// file, one wrapping ErrUnknownFormat if it names another format.
func (c *Dir) checkFormat() error {
	b, err := os.ReadFile(filepath.Join(c.root, FormatFile))
	if err != nil {
		return err
	}
	if !bytes.Equal(b, []byte(formatContent)) {
		if !formatLine.Match(b) {
			return fmt.Errorf("%s says %q, want %q: %w (%w)", FormatFile, bytes.TrimSpace(b), formatContent[:len(formatContent)-1], ErrDamagedFormat, ErrUnknownFormat)
		}
		return fmt.Errorf("%s says %q, want %q: %w", FormatFile, bytes.TrimSpace(b), formatContent[:len(formatContent)-1], ErrUnknownFormat)
	}
	return nil
}

// hasLayout reports whether root holds a cache's object directories, so
// that a damaged marker is taken for a cache's, not a foreign file's.
func (c *Dir) hasLayout() bool {
	for _, d := range []string{CASDir, ACDir} {
		if st, err := os.Stat(filepath.Join(c.root, d)); err == nil && st.IsDir() {
			return true
		}
	}
	return false
}

// formatLine is what a format marker of any version looks like; anything
// else is a damaged marker, not another format.
var formatLine = regexp.MustCompile(`^cairn-cache [0-9]+\n$`)

// RewriteFormat replaces a damaged format marker with this version's.
func (c *Dir) RewriteFormat() error {
	t, err := c.newTemp(FormatFile)
	if err != nil {
		return err
	}
	defer t.abort()
	if _, err := t.Write([]byte(formatContent)); err != nil {
		return err
	}
	if err := t.commit(true); err != nil {
		return err
	}
	if err := os.Rename(t.path, filepath.Join(c.root, FormatFile)); err != nil {
		return err
	}
	t.path = ""
	c.damagedFormat = false
	return syncDir(c.root)
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
	if err := t.commit(true); err != nil {
		return err
	}
	if _, err := publish(t, dst); err != nil {
		return err
	}
	return t.syncDir(c.root)
}

// Root returns the absolute path of the cache directory.
func (c *Dir) Root() string { return c.root }

// newTemp creates a temp file under tmp/ for an object of the given kind.
func (c *Dir) newTemp(kind string) (*tempFile, error) {
	return createTemp(filepath.Join(c.root, TempDir), kind+"-", tempPerm, c.perms)
}

// blobPath returns the path of blob d, raw or compressed.
func (c *Dir) blobPath(d Digest, compressed bool) string {
	suffix := ""
	if compressed {
		suffix = CompressedSuffix
	}
	return c.objectPath(CASDir, d, suffix)
}

// entryPath returns the path of the entry for key.
// entryRelLen is the length of an entry's path inside ACDir ("xx/<key>"):
// the tail of every entryPath.
const entryRelLen = 2 + 1 + 64

func (c *Dir) entryPath(key ActionID) string { return c.objectPath(ACDir, key, "") }

// objectPath is filepath.Join(root, dir, hex[:2], hex) + suffix, with hex
// the 64 digits of sum, made in one allocation: a plan of 100,000 new
// phases asks for 100,000 entries (root is clean: filepath.Abs made it).
func (c *Dir) objectPath(dir string, sum [32]byte, suffix string) string {
	b := make([]byte, 0, len(c.root)+len(dir)+entryRelLen+len(suffix)+2)
	b = append(b, c.root...)
	if !os.IsPathSeparator(c.root[len(c.root)-1]) {
		b = append(b, filepath.Separator)
	}
	b = append(b, dir...)
	b = append(b, filepath.Separator)
	b = hex.AppendEncode(b, sum[:1])
	b = append(b, filepath.Separator)
	b = hex.AppendEncode(b, sum[:])
	b = append(b, suffix...)
	return string(b)
}
