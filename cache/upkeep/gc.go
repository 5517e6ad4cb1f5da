package upkeep

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"syscall"
	"time"

	"github.com/cairn-run/cairn/cache"
	"github.com/gofrs/flock"
)

// GC trims the cache. Its rules, in the order that makes them safe while
// other processes read and write (FORMAT.md, "Garbage collection"):
//
//   - an entry's last use is the later of its file's modification time
//     (when it was stored) and the last activity of any usage session
//     that hit or put it;
//   - entries are evicted least recently used first, never one that a
//     live session has hit or put;
//   - entries are removed before the blobs they reference, and a blob is
//     removed only when no remaining entry references it and its file is
//     older than the grace period (a running put stores blobs before the
//     entry that references them, and refreshes a blob it finds present);
//   - just before removing anything it checks the file is still the one it
//     planned to remove, unchanged: a re-published entry or a refreshed
//     blob stays;
//   - a file already gone is fine (another GC, a quarantine);
//   - temp files younger than the grace, and NFS silly-rename files, are
//     never touched.
//
// GC writes nothing but its lock file, so it works on a full filesystem.

const (
	locksDir   = "locks"
	gcLockName = "gc"

	// DefaultGCGrace is how old an unreferenced blob must be before GC
	// removes it, unless GCOptions.Grace says otherwise.
	DefaultGCGrace = time.Hour
)

// ErrGCRunning means another GC holds the cache's GC lock.
var ErrGCRunning = errors.New("another cache gc is running")

// GCOptions says what GC should trim.
type GCOptions struct {
	// MaxSize, if positive, is the most bytes cas/ and ac/ may hold after
	// GC (apparent file sizes). Entries are evicted least recently used
	// first until the cache fits, as far as live sessions and the grace
	// period allow.
	MaxSize int64
	// MaxAge, if positive, evicts every entry not used for longer.
	MaxAge time.Duration
	// Grace is how old an unreferenced blob must be to be removed; zero
	// means DefaultGCGrace. Temp files are kept for the longer of Grace
	// and TempGrace.
	Grace time.Duration
	// DryRun reports what would be removed and removes nothing. It takes
	// no lock.
	DryRun bool
	// Now returns the current time; nil means time.Now. For tests.
	Now func() time.Time
}

// GCItem is one file GC removed, or in a dry run would remove.
type GCItem struct {
	Kind    string    // "entry", "blob", "temp" or "session"
	ID      string    // the key or digest in hex; the file name for temp files and sessions
	Path    string    // the file removed
	Size    int64     // its size in bytes
	LastUse time.Time // entries: last use; others: modification time
	Reason  string    // "max-age", "max-size", "unreferenced", "old-temp", "old-session"
}

// GCReport says what GC did. Byte counts cover cas/ and ac/ (what MaxSize
// limits), from GC's own scan: writers working meanwhile are not counted.
// Blobs are counted by digest (a digest stored both raw and compressed is
// one blob).
type GCReport struct {
	DryRun bool

	EntriesBefore, BlobsBefore int
	BytesBefore, BytesAfter    int64

	EntriesRemoved, BlobsRemoved int
	BytesRemoved                 int64
	EntriesKept, BlobsKept       int
	// Protected counts entries kept because a live session hit or put
	// them.
	Protected int
	// Skipped counts files kept at the last moment: re-published,
	// refreshed or newly referenced while GC ran.
	Skipped int

	TempRemoved, SessionsRemoved int

	// Removed lists every file removed (in a dry run: that would be), in
	// the order removed: entries, then blobs, then temp and session files.
	Removed []GCItem
	// Warnings say why GC did less than asked (MaxSize not reachable,
	// no lock on a full filesystem, part of ac/ unreadable).
	Warnings []string
	Elapsed  time.Duration
}

// GC removes least recently used entries, unreferenced blobs, old temp
// files and old session files, as opts says and by the rules above. Only
// one GC runs at a time per cache: it takes an exclusive lock on
// locks/gc, and returns an error matching ErrGCRunning if another GC holds
// it. Readers and writers take no lock and may run meanwhile; an entry
// removed under a reader is a miss for it. GC keeps going past files it
// cannot remove; the error then lists them, and the report says what was
// done.
func GC(c *cache.Dir, opts GCOptions) (*GCReport, error) {
	began := time.Now()
	g := &gcRun{c: c, opts: opts, rep: &GCReport{DryRun: opts.DryRun}}
	g.now = time.Now
	if opts.Now != nil {
		g.now = opts.Now
	}
	g.grace = opts.Grace
	if g.grace <= 0 {
		g.grace = DefaultGCGrace
	}
	if !opts.DryRun {
		unlock, err := g.lock()
		if err != nil {
			return nil, err
		}
		defer unlock()
	}
	if err := g.scan(); err != nil {
		return nil, fmt.Errorf("cache gc %s: %w", c.Root(), err)
	}
	g.plan()
	if opts.DryRun {
		g.report()
	} else {
		g.execute()
	}
	g.rep.Elapsed = time.Since(began)
	if len(g.errs) > 0 {
		return g.rep, fmt.Errorf("cache gc %s: could not remove everything (check the permissions of these files, or run gc as their owner): %w", c.Root(), errors.Join(g.errs...))
	}
	return g.rep, nil
}

type gcRun struct {
	c     *cache.Dir
	opts  GCOptions
	now   func() time.Time
	grace time.Duration
	rep   *GCReport
	errs  []error

	sessions    []sessionFile
	sessionSeen map[string]fs.FileInfo
	live        map[cache.ActionID]bool
	usedAt      map[cache.ActionID]time.Time

	entries                []*gcEntry
	byKey                  map[cache.ActionID]*gcEntry
	blobs                  map[cache.Digest]*gcBlob
	refsKnown              bool  // every entry directory could be listed
	bytesGone              int64 // removed by someone else while GC ran
	entriesGone, blobsGone int
	tempItems              []GCItem
	staleItems             []GCItem
}

type gcEntry struct {
	key     cache.ActionID
	f       storeFile
	size    int64 // its file's size, or its record's in a pack
	lastUse time.Time
	refs    []cache.Digest
	live    bool
	reason  string // why it is evicted; "" if kept
}

type gcBlob struct {
	d      cache.Digest
	files  []storeFile
	size   int64
	newest time.Time
	refs   int
}

func (b *gcBlob) young(now time.Time, grace time.Duration) bool { return now.Sub(b.newest) < grace }

// lock takes the GC lock. On a full filesystem, where even the lock file
// cannot be created, GC goes on unlocked: two GCs at once are safe, only
// wasteful, and freeing space matters more.
func (g *gcRun) lock() (unlock func(), err error) {
	c := g.c
	dir := filepath.Join(c.Root(), locksDir)
	path := filepath.Join(dir, gcLockName)
	_, err = c.Mkdir(dir)
	if err == nil {
		err = ensureRWFile(c, path)
	}
	if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
		g.rep.Warnings = append(g.rep.Warnings, fmt.Sprintf("no space to create the lock file %s: running without the gc lock", path))
		return func() {}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("cache gc %s: lock: %w", c.Root(), err)
	}
	fl := flock.New(path, flock.SetFlag(os.O_CREATE|os.O_RDWR), flock.SetPermissions(c.RWMode()))
	ok, err := fl.TryLock()
	if err != nil {
		return nil, fmt.Errorf("cache gc %s: lock %s: %w", c.Root(), path, err)
	}
	if !ok {
		return nil, fmt.Errorf("cache gc %s: %w (it holds %s); wait for it to finish, then run gc again if the cache is still too big", c.Root(), ErrGCRunning, path)
	}
	return func() { fl.Unlock() }, nil
}

// scan reads the sessions, every entry (for its references) and every
// blob's name, size and age.
func (g *gcRun) scan() error {
	now := g.now()
	sessions, err := readSessions(g.c, now, true)
	if err != nil {
		g.warn("some session files could not be read (%v): their entries are not protected", err)
	}
	g.sessions = sessions
	g.sessionSeen = make(map[string]fs.FileInfo, len(sessions))
	g.live = make(map[cache.ActionID]bool)
	g.usedAt = make(map[cache.ActionID]time.Time)
	for _, sf := range sessions {
		g.sessionSeen[sf.Name] = sf.info
		g.addSession(sf)
	}

	g.refsKnown = true
	g.byKey = make(map[cache.ActionID]*gcEntry)
	var listErr error
	walkStore(filepath.Join(g.c.Root(), cache.ACDir), func(f storeFile, shard bool) bool {
		if shard {
			return f.info.IsDir()
		}
		key, ok := parseEntryFileName(filepath.Base(filepath.Dir(f.path)), f.name)
		if !ok || !f.info.Mode().IsRegular() {
			return false // Verify's business
		}
		refs, size := readRefs(f, key)
		e := &gcEntry{key: key, f: f, refs: refs, size: size}
		g.entries = append(g.entries, e)
		g.byKey[key] = e
		return false
	}, func(path string, err error) {
		g.refsKnown = false
		listErr = err
	})
	if !g.refsKnown {
		g.warn("could not list all of ac/ (%v): no blob is removed, since some entries' references are unknown", listErr)
	}

	g.blobs = make(map[cache.Digest]*gcBlob)
	var casErr error
	walkStore(filepath.Join(g.c.Root(), cache.CASDir), func(f storeFile, shard bool) bool {
		if shard {
			return f.info.IsDir()
		}
		d, _, ok := parseBlobFileName(filepath.Base(filepath.Dir(f.path)), f.name)
		if !ok || !f.info.Mode().IsRegular() {
			return false
		}
		b := g.blobs[d]
		if b == nil {
			b = &gcBlob{d: d}
			g.blobs[d] = b
		}
		b.files = append(b.files, f)
		b.size += f.info.Size()
		if t := f.info.ModTime(); t.After(b.newest) {
			b.newest = t
		}
		return false
	}, func(path string, err error) { casErr = err })
	if casErr != nil {
		g.warn("could not list all of cas/ (%v)", casErr)
	}

	for _, e := range g.entries {
		e.live = g.live[e.key]
		e.lastUse = e.f.info.ModTime()
		if t, ok := g.usedAt[e.key]; ok && t.After(e.lastUse) {
			e.lastUse = t
		}
		for _, d := range e.refs {
			if b := g.blobs[d]; b != nil {
				b.refs++
			}
		}
	}
	g.rep.EntriesBefore, g.rep.BlobsBefore = len(g.entries), len(g.blobs)
	for _, e := range g.entries {
		g.rep.BytesBefore += e.size
	}
	for _, b := range g.blobs {
		g.rep.BytesBefore += b.size
	}

	g.scanTemp(now)
	g.scanStaleSessions(now)
	return nil
}

// addSession counts a session's keys as used at its last activity, and as
// live if it is.
func (g *gcRun) addSession(sf sessionFile) {
	if !sf.valid {
		return
	}
	for k := range sf.used {
		if sf.State == SessionLive {
			g.live[k] = true
		}
		if t, ok := g.usedAt[k]; !ok || sf.LastActive.After(t) {
			g.usedAt[k] = sf.LastActive
		}
	}
}

// readRefs returns the blobs the entry file f (the name of key's entry)
// references, and the bytes it accounts for: its file's size, or for a
// pack its record's (a pack's bytes are shared by all its names, and freed
// only when the last one goes). An entry that does not decode (damaged,
// or written by a newer cairn in a format this one cannot read) is
// searched for anything that looks like a digest instead: keeping a few
// blobs too many is cheap, removing the blobs of a newer cairn's entries
// is not. An unreadable entry references nothing: no reader can use it.
func readRefs(f storeFile, key cache.ActionID) ([]cache.Digest, int64) {
	size := f.info.Size()
	fh, err := cache.OpenObject(f.path)
	if err != nil {
		return nil, size
	}
	defer fh.Close()
	b, n, bad, err := cache.ReadEntryFile(fh, key)
	if err != nil {
		return nil, size
	}
	if bad != nil {
		// A pack without a good record for key: its name counts for
		// nothing, and every digest in the pack is kept.
		if _, err := fh.Seek(0, io.SeekStart); err != nil {
			return nil, 0
		}
		all, _ := io.ReadAll(io.LimitReader(fh, cache.MaxPackRead))
		return hexRefs(all), 0
	}
	if e, err := cache.ParseEntry(b); err == nil {
		refs := e.Blobs()
		ds := make([]cache.Digest, len(refs))
		for i, r := range refs {
			ds[i] = r.Digest
		}
		return ds, n
	}
	return hexRefs(b), n
}

// hexRefs returns every run of exactly 64 lowercase hex digits in b.
func hexRefs(b []byte) []cache.Digest {
	var ds []cache.Digest
	for i := 0; i < len(b); {
		if !isLowerHex(b[i]) {
			i++
			continue
		}
		j := i
		for j < len(b) && isLowerHex(b[j]) {
			j++
		}
		if j-i == 64 {
			if d, err := cache.ParseDigest(string(b[i:j])); err == nil {
				ds = append(ds, d)
			}
		}
		i = j
	}
	return ds
}

// scanTemp lists temp files old enough to remove.
func (g *gcRun) scanTemp(now time.Time) {
	grace := max(cache.TempGrace, g.grace)
	dir := filepath.Join(g.c.Root(), cache.TempDir)
	des, err := os.ReadDir(dir)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			g.warn("could not list %s: %v", dir, err)
		}
		return
	}
	for _, de := range des {
		if isNFSTemp(de.Name()) {
			continue
		}
		st, err := de.Info()
		if err != nil || now.Sub(st.ModTime()) < grace {
			continue
		}
		g.tempItems = append(g.tempItems, GCItem{Kind: "temp", ID: de.Name(), Path: filepath.Join(dir, de.Name()), Size: st.Size(), LastUse: st.ModTime(), Reason: "old-temp"})
	}
}

// scanStaleSessions lists session files to remove: ended or dead, and not
// written for SessionKeep; and anything else in sessions/ as old.
func (g *gcRun) scanStaleSessions(now time.Time) {
	for _, sf := range g.sessions {
		if sf.valid && sf.State == SessionLive || now.Sub(sf.LastActive) <= SessionKeep {
			continue
		}
		g.staleItems = append(g.staleItems, GCItem{Kind: "session", ID: sf.Name, Path: sf.path, Size: sf.info.Size(), LastUse: sf.LastActive, Reason: "old-session"})
	}
}

// plan marks the entries to evict: too old, then least recently used until
// the cache fits.
func (g *gcRun) plan() {
	now := g.now()
	for _, e := range g.entries {
		if e.live {
			g.rep.Protected++
		}
	}
	if g.opts.MaxAge > 0 {
		for _, e := range g.entries {
			if !e.live && now.Sub(e.lastUse) > g.opts.MaxAge {
				g.evict(e, "max-age")
			}
		}
	}
	if g.opts.MaxSize <= 0 {
		return
	}
	size := g.projected(now)
	if size <= g.opts.MaxSize {
		return
	}
	lru := make([]*gcEntry, 0, len(g.entries))
	for _, e := range g.entries {
		if !e.live && e.reason == "" {
			lru = append(lru, e)
		}
	}
	sort.Slice(lru, func(i, j int) bool {
		if !lru[i].lastUse.Equal(lru[j].lastUse) {
			return lru[i].lastUse.Before(lru[j].lastUse)
		}
		return string(lru[i].key[:]) < string(lru[j].key[:])
	})
	for _, e := range lru {
		if size <= g.opts.MaxSize {
			break
		}
		size -= e.size
		for _, d := range g.evict(e, "max-size") {
			if b := g.blobs[d]; !b.young(now, g.grace) && g.refsKnown {
				size -= b.size
			}
		}
	}
	if size > g.opts.MaxSize {
		g.warn("the cache stays at %d bytes, over the %d asked for: the rest is used by live sessions or younger than the %v grace period", size, g.opts.MaxSize, g.grace)
	}
}

// evict marks e for removal and returns the blobs it leaves unreferenced.
func (g *gcRun) evict(e *gcEntry, reason string) (freed []cache.Digest) {
	e.reason = reason
	for _, d := range e.refs {
		if b := g.blobs[d]; b != nil {
			b.refs--
			if b.refs == 0 {
				freed = append(freed, d)
			}
		}
	}
	return freed
}

// keep undoes evict.
func (g *gcRun) keep(e *gcEntry) {
	if e.reason == "" {
		return
	}
	e.reason = ""
	for _, d := range e.refs {
		if b := g.blobs[d]; b != nil {
			b.refs++
		}
	}
}

// projected is the size of cas/ and ac/ once the planned removals are done.
func (g *gcRun) projected(now time.Time) int64 {
	var n int64
	for _, e := range g.entries {
		if e.reason == "" {
			n += e.size
		}
	}
	for _, b := range g.blobs {
		if !g.garbage(b, now) {
			n += b.size
		}
	}
	return n
}

// garbage says whether blob b is to be removed.
func (g *gcRun) garbage(b *gcBlob, now time.Time) bool {
	return g.refsKnown && b.refs <= 0 && !b.young(now, g.grace)
}

// sortedEvicted returns the evicted entries, least recently used first.
func (g *gcRun) sortedEvicted() []*gcEntry {
	var out []*gcEntry
	for _, e := range g.entries {
		if e.reason != "" {
			out = append(out, e)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].lastUse.Equal(out[j].lastUse) {
			return out[i].lastUse.Before(out[j].lastUse)
		}
		return string(out[i].key[:]) < string(out[j].key[:])
	})
	return out
}

// sortedGarbage returns the blobs to remove, by digest.
func (g *gcRun) sortedGarbage(now time.Time) []*gcBlob {
	var out []*gcBlob
	for _, b := range g.blobs {
		if g.garbage(b, now) {
			out = append(out, b)
		}
	}
	sort.Slice(out, func(i, j int) bool { return string(out[i].d[:]) < string(out[j].d[:]) })
	return out
}

func entryItem(e *gcEntry) GCItem {
	return GCItem{Kind: "entry", ID: e.key.String(), Path: e.f.path, Size: e.size, LastUse: e.lastUse, Reason: e.reason}
}

func blobItem(b *gcBlob, f storeFile) GCItem {
	return GCItem{Kind: "blob", ID: b.d.String(), Path: f.path, Size: f.info.Size(), LastUse: f.info.ModTime(), Reason: "unreferenced"}
}

// report fills a dry run's report from the plan.
func (g *gcRun) report() {
	now := g.now()
	for _, e := range g.sortedEvicted() {
		g.rep.Removed = append(g.rep.Removed, entryItem(e))
		g.rep.EntriesRemoved++
		g.rep.BytesRemoved += e.size
	}
	for _, b := range g.sortedGarbage(now) {
		for _, f := range b.files {
			g.rep.Removed = append(g.rep.Removed, blobItem(b, f))
		}
		g.rep.BlobsRemoved++
		g.rep.BytesRemoved += b.size
	}
	g.rep.Removed = append(g.rep.Removed, g.tempItems...)
	g.rep.Removed = append(g.rep.Removed, g.staleItems...)
	g.rep.TempRemoved, g.rep.SessionsRemoved = len(g.tempItems), len(g.staleItems)
	g.finish()
}

func (g *gcRun) finish() {
	g.rep.EntriesKept = g.rep.EntriesBefore - g.rep.EntriesRemoved - g.entriesGone
	g.rep.BlobsKept = g.rep.BlobsBefore - g.rep.BlobsRemoved - g.blobsGone
	g.rep.BytesAfter = g.rep.BytesBefore - g.rep.BytesRemoved - g.bytesGone
}

// execute removes what plan marked, entries before blobs, re-checking each
// file just before removing it.
func (g *gcRun) execute() {
	g.recheckSessions()
	for _, e := range g.sortedEvicted() {
		st, err := os.Lstat(e.f.path)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			g.bytesGone += e.size // removed by someone else: its blobs may go
			g.entriesGone++
			continue
		case err != nil || !sameObject(st, e.f.info):
			g.keep(e) // re-published meanwhile
			g.rep.Skipped++
			continue
		}
		if err := removeFile(e.f.path); err != nil {
			g.errs = append(g.errs, err)
			g.keep(e)
			continue
		}
		g.rep.Removed = append(g.rep.Removed, entryItem(e))
		g.rep.EntriesRemoved++
		g.rep.BytesRemoved += e.size
	}
	// A run that decided to restore an entry while the entries above were
	// being removed has written its hit by now; it holds the entry in
	// memory and needs only the blobs, so spare them.
	g.recheckSessions()
	if g.refsKnown {
		g.recheckEntries()
	}
	now := g.now()
	for _, b := range g.sortedGarbage(now) {
		removed, gone := false, 0
		for _, f := range b.files {
			st, err := os.Lstat(f.path)
			switch {
			case errors.Is(err, fs.ErrNotExist):
				g.bytesGone += f.info.Size()
				gone++
				continue
			case err != nil || !sameObject(st, f.info) || now.Sub(st.ModTime()) < g.grace:
				g.rep.Skipped++ // refreshed by a put: about to be referenced
				continue
			}
			if err := removeFile(f.path); err != nil {
				g.errs = append(g.errs, err)
				continue
			}
			g.rep.Removed = append(g.rep.Removed, blobItem(b, f))
			g.rep.BytesRemoved += f.info.Size()
			removed = true
		}
		switch {
		case removed:
			g.rep.BlobsRemoved++
		case gone == len(b.files):
			g.blobsGone++
		}
	}
	for _, it := range g.tempItems {
		err := removeFile(it.Path)
		if errors.Is(err, syscall.ENOTEMPTY) || errors.Is(err, syscall.EEXIST) {
			err = removeTree(it.Path) // a directory left in tmp/
		}
		if err != nil {
			g.errs = append(g.errs, err)
			continue
		}
		g.rep.Removed = append(g.rep.Removed, it)
		g.rep.TempRemoved++
	}
	for _, it := range g.staleItems {
		if err := removeFile(it.Path); err != nil {
			g.errs = append(g.errs, err)
			continue
		}
		g.rep.Removed = append(g.rep.Removed, it)
		g.rep.SessionsRemoved++
	}
	g.finish()
}

// sameObject reports whether a file found now is the one scanned: same
// inode, same modification time (blobs refreshed by a put have a newer one).
func sameObject(now, scanned fs.FileInfo) bool {
	return os.SameFile(now, scanned) && now.ModTime().Equal(scanned.ModTime())
}

// recheckSessions re-reads the session files written since the scan, and
// spares the entries they have since hit or put while live.
func (g *gcRun) recheckSessions() {
	now := g.now()
	des, err := os.ReadDir(filepath.Join(g.c.Root(), sessionsDir))
	if err != nil {
		return
	}
	for _, de := range des {
		st, err := de.Info()
		if err != nil {
			continue
		}
		if was, ok := g.sessionSeen[de.Name()]; ok && was.Size() == st.Size() && was.ModTime().Equal(st.ModTime()) {
			continue
		}
		sf, err := readSession(filepath.Join(g.c.Root(), sessionsDir, de.Name()), now, true)
		if err != nil || !sf.valid || sf.State != SessionLive {
			continue
		}
		for k := range sf.used {
			if e := g.byKey[k]; e != nil && e.reason != "" {
				g.keep(e)
				g.rep.Skipped++
			}
		}
	}
}

// recheckEntries reads the entries published since the scan (new names, or
// new files under old names) and keeps the blobs they reference. With the
// refresh a put gives a blob it finds present, this closes the window
// between GC's scan and its removal of blobs.
func (g *gcRun) recheckEntries() {
	walkStore(filepath.Join(g.c.Root(), cache.ACDir), func(f storeFile, shard bool) bool {
		if shard {
			return f.info.IsDir()
		}
		key, ok := parseEntryFileName(filepath.Base(filepath.Dir(f.path)), f.name)
		if !ok || !f.info.Mode().IsRegular() {
			return false
		}
		if e := g.byKey[key]; e != nil && sameObject(f.info, e.f.info) {
			return false
		}
		refs, _ := readRefs(f, key)
		for _, d := range refs {
			if b := g.blobs[d]; b != nil {
				b.refs++
			}
		}
		return false
	}, func(path string, err error) {
		g.refsKnown = false // now unsure: remove no blob
		g.warn("could not list %s again (%v): no blob is removed", path, err)
	})
}

func (g *gcRun) warn(format string, args ...any) {
	g.rep.Warnings = append(g.rep.Warnings, fmt.Sprintf(format, args...))
}
