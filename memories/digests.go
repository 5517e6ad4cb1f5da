package memories

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
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

	mu      sync.Mutex
	entries map[string]memEntry // recorded by this process, over file
	file    memFile             // the memory as loaded
	dirty   bool
}

// memFile is a loaded memory's records, kept in place and found by binary
// search (the file is sorted by path): a no-op run looks up a few of
// them, and building a map of every input of the workspace was a tenth of
// its start.
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
	m := &Memory{path: path, now: time.Now, entries: map[string]memEntry{}}
	if r, ok := digestsFormat.Read(path); ok {
		if f, err := indexMemory(r); err == nil {
			m.file = f // its records share the file's memory
		}
	}
	return m
}

// The file (package hint) holds the entry count, then per entry its
// path, digest, size, mtime, ctime, inode, mode and when it was hashed,
// sorted by path. A file cut short, damaged or out of order fails and is
// dropped whole rather than half used.

// parseMemory reads every entry of the memory file data.
func parseMemory(data []byte) (map[string]memEntry, error) {
	r, err := digestsFormat.Open(data)
	if err != nil {
		return nil, err
	}
	f, err := indexMemory(r)
	if err != nil {
		return nil, err
	}
	return f.all(), nil
}

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
	var e memEntry
	r.Fixed(e.digest[:])
	e.size, e.mtime, e.ctime = r.Int(), r.Int(), r.Int()
	e.ino = r.Uint()
	e.mode = uint32(r.Uint())
	e.recorded = r.Int()
	return path, e
}

// recPath is the path a record (checked by indexMemory) starts with.
func recPath(rec string) string {
	r := hint.NewReader(rec)
	return r.Str()
}

// find returns the entry of path.
func (f memFile) find(path string) (memEntry, bool) {
	i := sort.Search(len(f.recs), func(i int) bool { return recPath(f.recs[i]) >= path })
	if i == len(f.recs) {
		return memEntry{}, false
	}
	p, e := readMemEntry(hint.NewReader(f.recs[i]))
	return e, p == path
}

// all returns every entry.
func (f memFile) all() map[string]memEntry {
	out := make(map[string]memEntry, len(f.recs))
	for _, rec := range f.recs {
		p, e := readMemEntry(hint.NewReader(rec))
		out[p] = e
	}
	return out
}

func encodeMemory(entries map[string]memEntry) []byte {
	keys := make([]string, 0, len(entries))
	for k := range entries {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	w := digestsFormat.Writer(len(keys) * 96)
	w.Len(len(keys))
	for _, k := range keys {
		writeMemEntry(w, k, entries[k])
	}
	return w.Finish()
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
	m.mu.Lock()
	e, ok := m.entries[key]
	m.mu.Unlock()
	if !ok {
		e, ok = m.file.find(key) // never changed once loaded
	}
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
	m.entries[key] = memEntry{digest: d, size: st.Size, mtime: st.MTime, ctime: st.CTime, ino: st.Ino, mode: uint32(st.Mode), recorded: hashedAt.UnixNano()}
	m.dirty = true
	m.mu.Unlock()
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

// Save writes the memory back if it changed.
func (m *Memory) Save() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.dirty {
		return nil
	}
	all := m.file.all()
	for k, e := range m.entries {
		all[k] = e
	}
	if err := cache.NoSpace(digestsFormat.Save(m.path, encodeMemory(all), 0o644), filepath.Dir(m.path)); err != nil {
		return err
	}
	m.dirty = false
	return nil
}
