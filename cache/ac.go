package cache

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// PutEntry stores e under e.Key. Every blob e references (output files,
// Stdout, Stderr) must already be in the cache, so an entry never points at
// a missing blob; PutEntry returns an error wrapping ErrNotFound otherwise,
// and an error from [EncodeEntry] if e is invalid. The entry is written
// with the same atomic, write-once protocol as blobs: if a valid entry for
// e.Key already exists it is kept and PutEntry returns nil (first writer
// wins); an existing entry that fails verification is moved to quarantine/
// and replaced. When PutEntry returns nil the entry is durable.
func (c *Dir) PutEntry(e *Entry) error {
	_, err := c.StoreEntry(e, false)
	return err
}

// ReplaceEntry stores e as the result for e.Key, as PutEntry does, but
// supersedes an entry already stored under the key whose result differs
// (outputs, their modes and times, exit code): the result of a forced
// run. The old entry's name is removed (as GC removes one) and e's is
// published by the usual link, so a reader finds the old entry whole, no
// entry (a miss), or e whole; never a mix. If another writer publishes
// between the removal and the link, its entry stays (first writer wins
// again): one result, agreed by every reader. An entry this cairn cannot
// judge (a newer format) is left in place. See FORMAT.md, "Superseding".
func (c *Dir) ReplaceEntry(e *Entry) error {
	_, err := c.StoreEntry(e, true)
	return err
}

// StoreEntry is PutEntry, or ReplaceEntry if replace is set, and returns
// the stored form of e (signed, if signing is on), for a second cache
// level to upload.
func (c *Dir) StoreEntry(e *Entry, replace bool) ([]byte, error) {
	op := "put"
	if replace {
		op = "replace"
	}
	k := e.Keyed
	if !k.of(e) {
		k = NewKeyed(e.Components)
	}
	if err := c.storeChunks(e, k); err != nil {
		return nil, fmt.Errorf("cache %s entry %s: %w", op, e.Key.Short(), err)
	}
	b, err := encodeEntry(e, k)
	if err != nil {
		return nil, fmt.Errorf("cache %s entry %s: %w", op, e.Key.Short(), err)
	}
	if err := c.checkRefs(e); err != nil {
		return nil, fmt.Errorf("cache %s entry %s: %w", op, e.Key.Short(), err)
	}
	if c.writer != nil {
		b = sealEnvelope(b, c.writer)
	}
	if c.sign != nil {
		b = c.sign.Append(b)
	}
	if replace {
		if err := c.supersede(e); err != nil {
			return nil, fmt.Errorf("cache %s entry %s: %w", op, e.Key.Short(), err)
		}
	}
	if err := c.putEntryBytes(e.Key, b, entryRefs(e)); err != nil {
		return nil, fmt.Errorf("cache %s entry %s: %w", op, e.Key.Short(), err)
	}
	return b, nil
}

// supersede removes the local entry for e.Key if it holds a different
// result than e. An entry published there since it was judged (by another
// forced run) is kept. Between that check and the unlink another forced
// run may still publish, and lose its entry to this one: either way one
// of the forced results is the key's, the same for every reader.
func (c *Dir) supersede(e *Entry) error {
	p := c.entryPath(e.Key)
	was, err := os.Lstat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	old, err := c.getLocalEntryMaybeLean(e.Key, readHead)
	switch {
	case errors.Is(err, errNewerEntry):
		return nil // not ours to judge: it stays, as PutEntry keeps it
	case errors.Is(err, ErrCorrupt), errors.Is(err, ErrNotFound), errors.Is(err, ErrUntrusted):
		return nil // gone, quarantined, or given way to by the publish
	case err != nil:
		return err
	case sameResult(old, e):
		return nil
	}
	if now, err := os.Lstat(p); err != nil || !os.SameFile(now, was) {
		return nil // gone, or not the entry judged: it stays
	}
	if err := unlink(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove the entry it supersedes: %w", err)
	}
	return nil
}

// sameResult reports whether entries a and b hold the same result: what
// a restore or a downstream phase would get from them.
func sameResult(a, b *Entry) bool {
	return a.ExitCode == b.ExitCode && a.Stdout == b.Stdout && a.Stderr == b.Stderr &&
		slices.Equal(a.Outputs, b.Outputs)
}

// putEntryBytes publishes the stored form b of the entry for key, whose
// blobs are refs: as a record of this Dir's pack where it can, else as
// its own file.
func (c *Dir) putEntryBytes(key ActionID, b []byte, refs []blobRef) error {
	err := c.putPacked(key, b, refs)
	if !errors.Is(err, errPackUnusable) {
		return err
	}
	return c.putEntryFile(key, b, refs)
}

// putEntryFile publishes the stored form b of the entry for key as a file
// of its own (format 1 or 2).
func (c *Dir) putEntryFile(key ActionID, b []byte, refs []blobRef) error {
	t, err := c.newTemp("entry")
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
	// Check the blobs again and refresh them just before publishing: a GC
	// that has not seen this entry yet then finds them younger than its
	// grace period, however long the put took (FORMAT.md, "Garbage
	// collection").
	if err := c.refreshRefs(refs); err != nil {
		return err
	}
	dst := c.entryPath(key)
	for try := 0; try < 3; try++ {
		existed, err := publish(t, dst)
		if err != nil {
			return err
		}
		if !existed {
			return t.syncDir(filepath.Dir(dst))
		}
		done, err := c.existingEntry(key, dst, b)
		if done || err != nil {
			return err
		}
	}
	return errors.New("an invalid entry is in the way and could not be moved")
}

// existingEntry decides about the entry found at dst when publishing one
// for key: done when it stays (first writer wins), not done when it was
// moved out of the way (or is gone) and the publish should be retried.
// ours is the stored form being published.
func (c *Dir) existingEntry(key ActionID, dst string, ours []byte) (done bool, err error) {
	_, err = c.getLocalEntry(key)
	switch {
	case err == nil, errors.Is(err, errNewerEntry):
		return true, nil // keep it: first writer wins
	case errors.Is(err, ErrUntrusted):
		if c.CheckTrust(ours) != nil {
			// Ours is no better by this Dir's policy: the other
			// writer's entry stays for the readers that trust it.
			return true, nil
		}
		// Ours passes the policy: the entry that does not gives
		// way, so this cache's readers get a hit.
		c.quarantinePath("entry", key.String(), dst, err)
		return false, nil
	case errors.Is(err, ErrCorrupt), errors.Is(err, ErrNotFound):
		return false, nil // moved to quarantine (or gone): publish ours
	default:
		return true, err
	}
}

// checkRefs returns an error wrapping ErrNotFound for the first blob e
// references that is not in the cache.
func (c *Dir) checkRefs(e *Entry) error {
	for _, r := range entryRefs(e) {
		if !c.HasBlob(r.d) {
			return fmt.Errorf("%s: blob %s: %w", r.what, r.d.Short(), ErrNotFound)
		}
	}
	return nil
}

// refreshRefs returns an error wrapping ErrNotFound for the first blob in
// refs that is not in the cache, and marks the others as just used.
func (c *Dir) refreshRefs(refs []blobRef) error {
	for _, r := range refs {
		p, ok := c.statBlob(r.d)
		if !ok {
			return fmt.Errorf("%s: blob %s: %w (removed while the entry was written)", r.what, r.d.Short(), ErrNotFound)
		}
		touchObject(p)
	}
	return nil
}

type blobRef struct {
	what string
	d    Digest
	size int64 // recorded size, or -1 where the entry records none (logs)
}

// entryRefs lists the blobs in cas/ that e references, each once: not
// those it holds inline, nor its temporary outputs, which are stored
// nowhere.
func entryRefs(e *Entry) []blobRef {
	seen := make(map[Digest]bool, len(e.Outputs)+2+len(e.Inline))
	for _, b := range e.Inline {
		seen[b.Digest] = true
	}
	var refs []blobRef
	add := func(what string, d Digest, size int64) {
		if !d.IsZero() && !seen[d] {
			seen[d] = true
			refs = append(refs, blobRef{what, d, size})
		}
	}
	add("stdout", e.Stdout, -1)
	add("stderr", e.Stderr, -1)
	for _, o := range e.Outputs {
		if o.Type == TypeFile && !o.Temporary { // a temporary output is not stored
			add(fmt.Sprintf("output %q", o.Path), o.Digest, o.Size)
		}
	}
	for i, ch := range e.Chunks {
		add(fmt.Sprintf("input chunk %d", i), ch.Digest, ch.Size)
	}
	return refs
}

// errNewerEntry marks an entry written by a newer cairn: a miss for us, but
// not corrupt, so it is left alone.
var errNewerEntry = fmt.Errorf("entry format newer than %d: %w", maxEntryFormat, ErrNotFound)

// GetEntry returns the entry stored under key. A missing entry is
// ErrNotFound, and so is an entry in a newer format, which is left in
// place for the cairn that wrote it. An entry that fails [DecodeEntry]
// twice, is stored under the wrong key, or references a blob that is no
// longer in the cache is moved to quarantine/ and reported as a
// *CorruptError, so the next PutEntry for key can succeed. When signatures
// are required, an entry without a good one is an error matching both
// ErrUntrusted and ErrNotFound, and is left in place.
func (c *Dir) GetEntry(key ActionID) (*Entry, error) { return c.getEntry(key, readFull) }

// GetEntryLean is GetEntry for a phase about to be found cached: the
// entry may come from the workspace memo (see UseEntryMemo), which keeps it
// lean (see Entry.Lean): a no-op run of 1,000 phases read 2 MB of
// components it never used.
func (c *Dir) GetEntryLean(key ActionID) (*Entry, error) { return c.getEntry(key, readLean) }

// GetEntryHead is GetEntry without reading the chunks of an entry that
// has them (format 6): its Components then hold all but its input
// components, which its Chunks name (see [Dir.ReadChunk]), and Lean is
// set. The chunks' presence is checked as GetEntry checks every blob's;
// their content and the key are not.
func (c *Dir) GetEntryHead(key ActionID) (*Entry, error) { return c.getEntry(key, readHead) }

// How much of an entry a read gives: all of it, checked; lean, perhaps
// from the workspace memo; or its stored body alone.
type readMode int

const (
	readFull readMode = iota
	readLean
	readHead
)

func (c *Dir) getEntry(key ActionID, mode readMode) (*Entry, error) {
	e, err := c.getLocalEntryMaybeLean(key, mode)
	if err != nil {
		return nil, &getError{key, err}
	}
	return e, nil
}

// getError is a lookup of key that failed: "cache get KEY: ERR". (Not
// fmt.Errorf: a plan of 100,000 new phases misses 100,000 times, and
// formatting each miss cost a tenth of a second.)
type getError struct {
	key ActionID
	err error
}

func (e *getError) Error() string { return "cache get " + e.key.Short() + ": " + e.err.Error() }
func (e *getError) Unwrap() error { return e.err }

// GetLocalEntry is GetEntry: the name says, where a second cache level is
// in reach, that it is not asked.
func (c *Dir) GetLocalEntry(key ActionID) (*Entry, error) {
	e, err := c.getLocalEntry(key)
	if err != nil {
		return nil, &getError{key, err}
	}
	return e, nil
}

func (c *Dir) getLocalEntry(key ActionID) (*Entry, error) {
	return c.getLocalEntryMaybeLean(key, readFull)
}

// getLocalEntryMaybeLean is getLocalEntry; with lean, the entry may come
// from the workspace memo, lean (see Entry.Lean).
func (c *Dir) getLocalEntryMaybeLean(key ActionID, mode readMode) (*Entry, error) {
	for try := 0; ; try++ {
		e, retry, err := c.readEntry(key, try == 0, mode)
		if retry {
			continue
		}
		return e, err
	}
}

func (c *Dir) readEntry(key ActionID, mayRetry bool, mode readMode) (e *Entry, retry bool, err error) {
	p := c.entryPath(key)
	memo := c.memo
	if c.opts.RequireSigned || c.trusted != nil {
		memo = nil // the memo does not know which key checked a signature
	}
	if memo != nil && mode == readLean {
		if e := memo.lookup(key, func() (entryStamp, bool) { return c.entryStamp(p[len(p)-entryRelLen:], p) }); e != nil {
			return e, false, nil
		}
	}
	var readAt time.Time
	if memo != nil {
		readAt = memo.now()
	}
	f, err := OpenObject(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, ErrNotFound
	}
	if Unusable(err) {
		return nil, false, c.quarantinePath("entry", key.String(), p, err)
	}
	if err != nil {
		return nil, false, err
	}
	defer f.Close()
	b, _, bad, err := ReadEntryFile(f, key)
	if err != nil {
		return nil, false, err
	}
	if bad == nil {
		if v, ok := entryVersion(b); ok && v > maxEntryFormat {
			return nil, false, errNewerEntry
		}
	}
	if bad == nil {
		e, bad = ParseEntry(b)
	}
	if bad == nil && e.Key != key {
		bad = fmt.Errorf("stored under %s but holds key %s", key.Short(), e.Key.Short())
	}
	if bad != nil {
		if mayRetry {
			return nil, true, nil
		}
		return nil, false, c.QuarantineFile("entry", key.String(), f, bad)
	}
	for _, r := range entryRefs(e) {
		if !c.HasBlob(r.d) {
			// GC removes an entry before its blobs, so a blob gone
			// from under an entry that is itself gone (or replaced)
			// since we opened it is a GC race: a miss, not damage.
			if !StillAt(f, p) {
				if mayRetry {
					return nil, true, nil
				}
				return nil, false, ErrNotFound
			}
			bad := fmt.Errorf("%s: blob %s is missing", r.what, r.d.Short())
			return nil, false, c.QuarantineFile("entry", key.String(), f, bad)
		}
	}
	if mode == readFull && len(e.Chunks) > 0 {
		if err := c.fillChunks(e, c.ReadChunk); err != nil {
			switch {
			case !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrNotFound):
				return nil, false, err
			case !StillAt(f, p):
				return nil, mayRetry, ErrNotFound // removed meanwhile, as above
			}
			return nil, false, c.QuarantineFile("entry", key.String(), f, err)
		}
	}
	if err := c.checkTrust(b, e); err != nil {
		c.warnUntrusted(key, err)
		return nil, false, untrusted(err)
	}
	c.nameSigner(e)
	if memo != nil {
		if fi, err := f.Stat(); err == nil {
			memo.record(key, fi, e, readAt)
		}
	}
	return e, false, nil
}

// StillAt reports whether the open file f is still the one at path.
func StillAt(f *os.File, path string) bool {
	a, err := f.Stat()
	if err != nil {
		return false
	}
	b, err := os.Lstat(path)
	return err == nil && os.SameFile(a, b)
}

// warnUntrusted warns, once per key, that the entry for key is not used.
func (c *Dir) warnUntrusted(key ActionID, err error) {
	if c.trusted == nil { // require_signed alone stays quiet, as it always was
		return
	}
	if _, seen := c.warnedUntrusted.LoadOrStore(key, true); !seen {
		c.warn("warning: cache entry %s is not used: %v; the phase runs again", key.Short(), err)
	}
}

// untrusted marks err (which wraps ErrUntrusted) as a miss too.
func untrusted(err error) error { return fmt.Errorf("%w (%w)", err, ErrNotFound) }

// EntryKeys lists the keys of the entries in the local cache, in no
// particular order. Files that are not entries are ignored.
func (c *Dir) EntryKeys() ([]ActionID, error) {
	var keys []ActionID
	shards, err := os.ReadDir(filepath.Join(c.root, ACDir))
	if err != nil {
		return nil, err
	}
	for _, sh := range shards {
		if !sh.IsDir() {
			continue
		}
		names, err := os.ReadDir(filepath.Join(c.root, ACDir, sh.Name()))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		for _, n := range names {
			if k, err := ParseActionID(n.Name()); err == nil && n.Type().IsRegular() {
				keys = append(keys, k)
			}
		}
	}
	return keys, nil
}
