package memories

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cairn-run/cairn/cache"
	"github.com/cairn-run/cairn/hint"
	"github.com/cairn-run/cairn/workspace"
)

// digestsFormat is the input-digest memory file's.
var digestsFormat = hint.NewFormat("digests", 3, "ws")

// Memory remembers the content digest of workspace files by path, size,
// mtime, ctime, inode and mode, so an unchanged file is never read twice.
// It is safe for concurrent use.
//
// An entry is trusted only when the file's mtime and ctime lie clearly
// before the moment its content was hashed (git's "racy" rule): a file modified again
// within the same timestamp tick after hashing would otherwise keep its
// stat and hide the change.
type Memory struct {
	path string
	now  func() time.Time

	// hashedFiles and hashedBytes count the files DigestOf read, and
	// their bytes.
	hashedFiles, hashedBytes atomic.Int64

	// anyRecorded is whether entries holds anything: lookups on all
	// cores then skip mu while nothing was (an edit run's lookups).
	anyRecorded atomic.Bool

	mu      sync.Mutex
	entries map[string]*dirRecs // recorded by this process, over file, by directory
	last    *dirRecs            // the directory recorded last
	file    memFile             // the base file as loaded
	recent  memFile             // the recent file (recent.go) as loaded: newer than file
	base    baseID              // the base file on disk, as the recent file names it
	dirty   bool
}

// dirRecs is what this process recorded of one directory's files.
// Records come a directory at a time, mostly in order of path: appending
// to a slice costs a fraction of a map's insert for each of a first
// run's million files, and a tenth of its memory.
type dirRecs struct {
	dir    string
	recs   []newRec
	sorted int // recs[:sorted] are sorted by key, each key once; later ones came out of order
}

type newRec struct {
	key string
	e   memEntry
}

// maxUnsorted bounds the records a lookup scans one by one before the
// directory's records are sorted again.
const maxUnsorted = 64

// add records e under key, over any record of the same key.
func (d *dirRecs) add(key string, e memEntry) {
	if n := len(d.recs); d.sorted == n && (n == 0 || key > d.recs[n-1].key) {
		d.sorted++
	}
	d.recs = append(d.recs, newRec{key, e})
}

// sort sorts d's records by key, keeping the last of each key.
func (d *dirRecs) sort() {
	if d.sorted == len(d.recs) {
		return
	}
	slices.SortStableFunc(d.recs, func(a, b newRec) int { return strings.Compare(a.key, b.key) })
	out := 0
	for i := range d.recs {
		if out > 0 && d.recs[out-1].key == d.recs[i].key {
			out--
		}
		d.recs[out] = d.recs[i]
		out++
	}
	d.recs, d.sorted = d.recs[:out], out
}

// find returns the record of key: the last of those that came out of
// order, else the one in the sorted part.
func (d *dirRecs) find(key string) (memEntry, bool) {
	if len(d.recs)-d.sorted > maxUnsorted {
		d.sort()
	}
	for i := len(d.recs) - 1; i >= d.sorted; i-- {
		if d.recs[i].key == key {
			return d.recs[i].e, true
		}
	}
	i, ok := slices.BinarySearchFunc(d.recs[:d.sorted], key, func(r newRec, key string) int { return strings.Compare(r.key, key) })
	if !ok {
		return memEntry{}, false
	}
	return d.recs[i].e, true
}

// memFile is a loaded memory's records, kept in place and found by
// search (the file is sorted by path, and so are a phase's inputs: see
// Cursor). Building a map of every input of the workspace was a tenth of a
// no-op's start, and saving through one most of an edit run's save.
type memFile struct {
	recs []string // each record, path first
}

type memEntry struct {
	digest   cache.Digest
	size     int64
	mtime    int64 // ns
	ctime    int64 // ns
	ino      uint64
	mode     uint32
	recorded int64 // ns: when the content was hashed
}

// LoadMemory reads the memory at path; a missing or damaged file gives an
// empty memory (every file is hashed again, nothing is wrong).
func LoadMemory(path string) *Memory {
	m := &Memory{path: path, now: time.Now, entries: map[string]*dirRecs{}}
	m.file, m.base = loadBase(path)
	m.recent = loadRecent(recentPath(path), m.base)
	return m
}

// loadBase reads the base file at path, and names it by its checksum; a
// missing or damaged one gives no records and no name.
func loadBase(path string) (memFile, baseID) {
	b, err := os.ReadFile(path)
	if err != nil {
		return memFile{}, baseID{}
	}
	r, err := digestsFormat.OpenOwned(b) // b is dropped: the records share it
	if err != nil {
		return memFile{}, baseID{}
	}
	f, err := indexMemory(r)
	if err != nil {
		return memFile{}, baseID{}
	}
	return f, idOf(b)
}

// The base file (package hint) holds the entry count, then per entry its
// path, digest, size, mtime, ctime, inode, mode and when it was hashed,
// sorted by path (the recent file beside it likewise: recent.go). A file
// cut short, damaged or out of order fails and is dropped whole rather
// than half used.

// indexMemory checks every record of r and keeps it in place.
func indexMemory(r *hint.Reader) (memFile, error) {
	n := r.Len()
	recs := make([]string, 0, n)
	prev := ""
	for i := 0; i < n && r.OK(); i++ {
		rest := r.Rest()
		path, _ := readMemEntry(r)
		if !r.OK() {
			break
		}
		if i > 0 && path <= prev {
			return memFile{}, errors.New("digests: records out of order")
		}
		prev = path
		recs = append(recs, rest[:len(rest)-len(r.Rest())])
	}
	if err := r.Err(); err != nil {
		return memFile{}, err
	}
	return memFile{recs: recs}, nil
}

func readMemEntry(r *hint.Reader) (string, memEntry) {
	path := r.Str()
	return path, readMemRest(r)
}

// readMemRest reads a record's fields after its path.
func readMemRest(r *hint.Reader) memEntry {
	var e memEntry
	r.Fixed(e.digest[:])
	e.size, e.mtime, e.ctime = r.Int(), r.Int(), r.Int()
	e.ino = r.Uint()
	e.mode = uint32(r.Uint())
	e.recorded = r.Int()
	return e
}

// recPath is the path a record (checked by indexMemory) starts with.
func recPath(rec string) string {
	r := hint.NewReader(rec)
	return r.Str()
}

// find returns the entry of path.
func (f memFile) find(path string) (memEntry, bool) {
	at := 0
	return f.seek(&at, path)
}

// seek returns the entry of path, searching from *at, and leaves *at at
// the first record not below path. Paths looked up in ascending order
// then cost a step or two each (a merge join) rather than a binary search
// over the whole file; a path below the last one searches it all.
func (f memFile) seek(at *int, path string) (memEntry, bool) {
	lo := *at
	// Most often path's record is the one *at is at or the next (a
	// phase's files looked up in order, all of them remembered): a path
	// read or two find it, with *at left at it (paths are unique).
	for i := lo; i < min(lo+2, len(f.recs)); i++ {
		r := hint.NewReader(f.recs[i])
		if r.Str() == path {
			*at = i
			return readMemRest(r), true
		}
	}
	if lo > len(f.recs) || lo > 0 && recPath(f.recs[lo-1]) >= path {
		lo = 0
	}
	// Gallop to a record not below path, then search the last stride.
	hi, step := lo, 1
	for hi < len(f.recs) && recPath(f.recs[hi]) < path {
		lo = hi + 1
		hi += step
		step *= 2
	}
	hi = min(hi, len(f.recs))
	i := lo + sort.Search(hi-lo, func(j int) bool { return recPath(f.recs[lo+j]) >= path })
	*at = i
	if i == len(f.recs) {
		return memEntry{}, false
	}
	p, e := readMemEntry(hint.NewReader(f.recs[i]))
	return e, p == path
}

// sortedKeys returns the records this process recorded, sorted by path,
// each path once (its last record).
func (m *Memory) sortedKeys() []*newRec {
	// The records are sorted by path as pointers into their
	// directories' slices: nearly sorted already when the directories
	// are taken in order.
	dirs := make([]*dirRecs, 0, len(m.entries))
	n := 0
	for _, d := range m.entries {
		d.sort()
		dirs, n = append(dirs, d), n+len(d.recs)
	}
	slices.SortFunc(dirs, func(a, b *dirRecs) int { return strings.Compare(a.dir, b.dir) })
	keys := make([]*newRec, 0, n)
	for _, d := range dirs {
		for i := range d.recs {
			keys = append(keys, &d.recs[i])
		}
	}
	byKey := func(a, b *newRec) int { return strings.Compare(a.key, b.key) }
	if !slices.IsSortedFunc(keys, byKey) {
		slices.SortFunc(keys, byKey)
	}
	return keys
}

// countOver returns how many records f merged with keys holds.
func countOver(f memFile, keys []*newRec) int {
	n, at := len(f.recs)+len(keys), 0
	if len(f.recs) == 0 {
		return n
	}
	for _, k := range keys {
		if _, ok := f.seek(&at, k.key); ok {
			n--
		}
	}
	return n
}

// writeOver writes to w the records of f, copied as they are, merged by
// path with keys (sorted, each path once), which replace any record of f
// of the same path: n records (countOver's), counted first.
func writeOver(w *hint.Writer, f memFile, keys []*newRec, n int) {
	recs := f.recs
	w.Len(n)
	i := 0
	for _, k := range keys {
		j := i
		_, found := f.seek(&j, k.key)
		for _, rec := range recs[i:j] {
			w.B = append(w.B, rec...)
		}
		writeMemEntry(w, k.key, k.e)
		if i = j; found {
			i++
		}
	}
	for _, rec := range recs[i:] {
		w.B = append(w.B, rec...)
	}
}

// size is the bytes of f's records.
func (f memFile) size() int {
	n := 0
	for _, rec := range f.recs {
		n += len(rec)
	}
	return n
}

// writeMemEntry writes the record readMemEntry reads.
func writeMemEntry(w *hint.Writer, path string, e memEntry) {
	w.Str(path)
	w.Fixed(e.digest[:])
	w.Int(e.size)
	w.Int(e.mtime)
	w.Int(e.ctime)
	w.Uint(e.ino)
	w.Uint(uint64(e.mode))
	w.Int(e.recorded)
}

// Lookup returns the remembered digest of the file at key if st still
// matches and the entry is not racy.
func (m *Memory) Lookup(key string, st workspace.FileStat) (cache.Digest, bool) {
	e, ok := m.recordedEntry(key)
	if !ok && len(m.recent.recs) > 0 {
		e, ok = m.recent.find(key) // never changed once loaded
	}
	if !ok {
		e, ok = m.file.find(key) // nor is the base
	}
	return e.check(ok, st)
}

// Cursor returns a Cursor over m.
func (m *Memory) Cursor() *Cursor { return &Cursor{m: m} }

// A Cursor is Lookup for files looked up in path order (a phase's inputs
// are sorted), as the memory's files are: each lookup resumes where the
// last one ended in each. It is for one goroutine.
type Cursor struct {
	m      *Memory
	at     int // in the base file
	recent recentCursor
}

// Lookup is Memory.Lookup.
func (c *Cursor) Lookup(key string, st workspace.FileStat) (cache.Digest, bool) {
	e, ok := c.m.recordedEntry(key)
	if !ok && len(c.m.recent.recs) > 0 {
		e, ok = c.recent.seek(c.m.recent, key)
	}
	if !ok {
		e, ok = c.m.file.seek(&c.at, key)
	}
	return e.check(ok, st)
}

func (m *Memory) recordedEntry(key string) (memEntry, bool) {
	if !m.anyRecorded.Load() {
		return memEntry{}, false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	d := m.entries[dirOf(key)]
	if d == nil {
		return memEntry{}, false
	}
	return d.find(key)
}

// dirOf is the directory part of the workspace path key.
func dirOf(key string) string {
	if i := strings.LastIndexByte(key, '/'); i >= 0 {
		return key[:i]
	}
	return "."
}

// check returns e's digest if e (found: ok) is of a file of stat st and
// not racy.
func (e memEntry) check(ok bool, st workspace.FileStat) (cache.Digest, bool) {
	if !ok || e.size != st.Size || e.mtime != st.MTime || e.ctime != st.CTime || e.ino != st.Ino || e.mode != uint32(st.Mode) {
		return cache.Digest{}, false
	}
	if workspace.RacyAt(st, e.recorded) {
		return cache.Digest{}, false
	}
	return e.digest, true
}

// Record remembers d as the digest of the file at key, hashed at
// hashedAt, whose stat (taken before hashing) was st.
func (m *Memory) Record(key string, st workspace.FileStat, d cache.Digest, hashedAt time.Time) {
	m.mu.Lock()
	m.record(key, memEntry{digest: d, size: st.Size, mtime: st.MTime, ctime: st.CTime, ino: st.Ino, mode: uint32(st.Mode), recorded: hashedAt.UnixNano()})
	m.dirty = true
	m.mu.Unlock()
}

// record adds e under key to the directory's records; m.mu is held.
func (m *Memory) record(key string, e memEntry) {
	dir := dirOf(key)
	d := m.last
	if d == nil || d.dir != dir {
		if d = m.entries[dir]; d == nil {
			d = &dirRecs{dir: dir}
			m.entries[dir] = d
		}
		m.last = d
	}
	d.add(key, e)
	m.anyRecorded.Store(true)
}

// KnowsUnder reports whether the memory holds a record of a file in the
// directory dir ("." is the workspace's), loaded (of a file anywhere
// below dir, which costs a search of each file) or recorded by this
// process (of a file directly in dir). A directory it knows nothing of is read whole
// anyway: its files may be hashed as they are found.
func (m *Memory) KnowsUnder(dir string) bool {
	prefix := dir + "/"
	if dir == "." {
		prefix = ""
	}
	if m.file.knowsUnder(prefix) || m.recent.knowsUnder(prefix) {
		return true
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.entries[dir]
	return ok
}

// knowsUnder reports whether f holds a record of a path starting with
// prefix.
func (f memFile) knowsUnder(prefix string) bool {
	recs := f.recs
	i := sort.Search(len(recs), func(i int) bool { return recPath(recs[i]) >= prefix })
	return i < len(recs) && strings.HasPrefix(recPath(recs[i]), prefix)
}

// Digest returns the content digest of the file at abs, remembered under
// key, reading the file only when its stat changed or is racy.
func (m *Memory) Digest(key, abs string) (cache.Digest, fs.FileInfo, error) {
	return m.DigestStat(key, abs, nil)
}

// DigestStat is Digest with the file's os.Stat result already in hand
// (fi, if not nil), so an unchanged file costs no system call at all here.
func (m *Memory) DigestStat(key, abs string, fi fs.FileInfo) (cache.Digest, fs.FileInfo, error) {
	if fi == nil {
		var err error
		if fi, err = os.Stat(abs); err != nil {
			return cache.Digest{}, nil, err
		}
	}
	d, err := m.DigestOf(context.Background(), key, abs, workspace.StatOf(fi))
	if err != nil {
		return cache.Digest{}, nil, err
	}
	return d, fi, nil
}

// DigestOf is DigestStat with the file's stat as the memory compares it.
// Hashing stops with ctx's error once ctx is done.
func (m *Memory) DigestOf(ctx context.Context, key, abs string, st workspace.FileStat) (cache.Digest, error) {
	if d, ok := m.Lookup(key, st); ok {
		return d, nil
	}
	hashedAt := m.now()
	d, n, err := cache.HashFileContext(ctx, abs)
	if err != nil {
		return cache.Digest{}, err
	}
	m.hashedFiles.Add(1)
	m.hashedBytes.Add(n)
	// Only remember the digest if the file did not change while hashing.
	if st2, err := workspace.StatPath(abs); err == nil && st2 == st {
		m.Record(key, st, d, hashedAt)
	}
	return d, nil
}

// HashStart is the moment a file's hashing starts, as NoteHashed takes it.
func (m *Memory) HashStart() time.Time { return m.now() }

// NoteHashed counts a file of n bytes read and hashed (started at
// HashStart's hashedAt) outside DigestOf, and remembers its digest d
// under key if the file kept the stat st while it was read (unchanged).
func (m *Memory) NoteHashed(key string, st workspace.FileStat, d cache.Digest, n int64, unchanged bool, hashedAt time.Time) {
	m.hashedFiles.Add(1)
	m.hashedBytes.Add(n)
	if unchanged {
		m.Record(key, st, d, hashedAt)
	}
}

// Hashed returns how many files DigestOf read to hash them, and their
// bytes, since the memory was loaded.
func (m *Memory) Hashed() (files, bytes int64) {
	return m.hashedFiles.Load(), m.hashedBytes.Load()
}
