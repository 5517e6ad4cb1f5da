package memories

import (
	"path/filepath"

	"github.com/cairn-run/cairn/hint"
	"github.com/cairn-run/cairn/internal/fsx"
)

// The digest memory is two files, as git's split index or the first level
// of an LSM tree: the base (digests) and, beside it, the recent file
// (digests-recent) holding records newer than the base's. Rewriting the
// base after a run that hashed a few files would cost in proportion to the
// workspace (tens of megabytes for a million inputs, and the flush of the
// replaced file on rename); a save writes the recent file alone while it
// stays small beside the base, and compacts both into a new base when not.
//
// The recent file names the base it was written over, by the base's
// checksum trailer, and is read only over that very base: a recent file
// left by a compaction that died before removing it, one written over an
// older base by another cairn racing this one, one that outlived its base
// (deleted, damaged or rewritten by an older cairn that knows no recent
// file) is ignored whole, as a damaged file is. So deleting the base still
// forgets everything, and the records read are always a consistent pair.
//
// Which record of a path is read never decides correctness anyway: a
// record is trusted only while the file's size, mtime, ctime, inode and
// mode are those it was hashed at and it is not racy (check), and the
// kernel sets ctime to the current time on every change, so a stat once
// seen with some content is not seen again with another. An older record
// winning over a newer one costs a hash, never a wrong digest; the pairing
// keeps even that from happening.

// recentFormat is the recent file's: another name than the base's, so
// neither is ever read as the other.
var recentFormat = hint.NewFormat("digests-recent", 1, "ws")

// baseID names a base file by its checksum trailer (zero ok: no base).
type baseID struct {
	sum [hint.TrailerSize]byte
	ok  bool
}

// idOf is the baseID of the base file's bytes b (checked).
func idOf(b []byte) baseID {
	id := baseID{ok: true}
	copy(id.sum[:], b[len(b)-hint.TrailerSize:])
	return id
}

// recentPath is the recent file of the base file at path ("": none).
func recentPath(path string) string {
	if path == "" {
		return ""
	}
	return path + "-recent"
}

// The recent file (package hint) holds the checksum trailer of the base it
// was written over, then its records as the base holds them: the count,
// then each record, sorted by path.

// loadRecent reads the recent file at path if it was written over base; a
// missing, damaged or other base's file gives no records.
func loadRecent(path string, base baseID) memFile {
	if path == "" || !base.ok {
		return memFile{}
	}
	r, ok := recentFormat.Read(path)
	if !ok {
		return memFile{}
	}
	over, f, err := indexRecent(r)
	if err != nil || over != base.sum {
		return memFile{}
	}
	return f
}

// indexRecent checks the recent file's body r, keeping its records in
// place, and returns the checksum of the base it was written over.
func indexRecent(r *hint.Reader) (over [hint.TrailerSize]byte, f memFile, err error) {
	r.Fixed(over[:])
	if !r.OK() {
		return over, memFile{}, r.Err()
	}
	f, err = indexMemory(r)
	return over, f, err
}

// recentCursor is a Cursor's place in the recent file: after a seek of
// last, at is the first record not below last and next its path (end:
// none). A key above last and below next is then not in the file, found
// so without reading a record: most keys, the recent file holding a small
// part of the base's paths.
type recentCursor struct {
	at         int
	last, next string
	valid, end bool
}

// seek is f.seek from the cursor's place.
func (c *recentCursor) seek(f memFile, key string) (memEntry, bool) {
	if c.valid && key > c.last && (c.end || key < c.next) {
		c.last = key
		return memEntry{}, false
	}
	e, ok := f.seek(&c.at, key)
	c.last, c.valid = key, true
	if c.end = c.at == len(f.recs); !c.end {
		c.next = recPath(f.recs[c.at])
	}
	return e, ok
}

// recentLimit is how many records the recent file may hold over a base of
// n: a sixteenth of it, so a save never writes more than a sixteenth of
// what a compaction does, and a compaction comes at most once for each
// n/16 paths recorded, rewriting 16 records for each of them; at least
// 4,096 (some 400 KB, as cheap to write as to leave), so a small base is not
// rewritten by every run.
func recentLimit(n int) int { return max(4096, n/16) }

// Save writes the memory back if it changed: the recent file alone while
// it stays within recentLimit of the base, else a new base.
func (m *Memory) Save() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.dirty {
		return nil
	}
	keys := m.sortedKeys()
	var err error
	if n := countOver(m.recent, keys); m.base.ok && n <= recentLimit(len(m.file.recs)) {
		err = m.saveRecent(keys, n)
	} else {
		err = m.compact(keys)
	}
	if err = fsx.NoSpace(err, filepath.Dir(m.path)); err != nil {
		return err
	}
	m.dirty = false
	return nil
}

// saveRecent writes the recent file over the base on disk: the loaded
// recent file's records merged with keys (n records). Written only over
// the base loaded or written by this process, and always holding what the
// loaded one held, it never drops a record the base lacks.
func (m *Memory) saveRecent(keys []*newRec, n int) error {
	w := recentFormat.Writer(len(m.base.sum) + m.recent.size() + len(keys)*96)
	w.Fixed(m.base.sum[:])
	writeOver(w, m.recent, keys, n)
	return recentFormat.Save(recentPath(m.path), w.Finish(), 0o644)
}

// compact writes the base as base, recent file and keys merged, then
// removes the recent file. The base is renamed in place first: a crash
// before the removal leaves a recent file naming the old base, which the
// next load ignores (its records are in the new base anyway). A removal
// that fails leaves the same, so it is no error.
func (m *Memory) compact(keys []*newRec) error {
	data := m.mergedWith(keys)
	if err := digestsFormat.Save(m.path, data, 0o644); err != nil {
		return err
	}
	m.base = idOf(data)
	_ = hint.Remove(recentPath(m.path))
	return nil
}

// merged returns the base file a compaction writes: the loaded base's
// records, copied as they are, merged by path with the recent file's and
// those recorded by this process, the newer replacing the older of a
// path. Records of files no longer in the workspace are kept: telling
// them from files outside this run's targets would cost a stat each, and
// a record is a hundred bytes of a hint (deleting the base drops them all,
// at the price of hashing again).
func (m *Memory) merged() []byte { return m.mergedWith(m.sortedKeys()) }

// mergedWith is merged with this process's records sorted (sortedKeys).
func (m *Memory) mergedWith(keys []*newRec) []byte {
	keys = withRecent(keys, m.recent)
	w := digestsFormat.Writer(m.file.size() + len(keys)*96)
	writeOver(w, m.file, keys, countOver(m.file, keys))
	return w.Finish()
}

// withRecent returns keys (sorted by path, each once) merged by path with
// the records of recent, decoded; a key replaces recent's record of its
// path.
func withRecent(keys []*newRec, recent memFile) []*newRec {
	if len(recent.recs) == 0 {
		return keys
	}
	dec := make([]newRec, len(recent.recs))
	out := make([]*newRec, 0, len(keys)+len(recent.recs))
	i := 0
	for j, rec := range recent.recs {
		path, e := readMemEntry(hint.NewReader(rec))
		for i < len(keys) && keys[i].key < path {
			out = append(out, keys[i])
			i++
		}
		if i < len(keys) && keys[i].key == path {
			continue
		}
		dec[j] = newRec{path, e}
		out = append(out, &dec[j])
	}
	return append(out, keys[i:]...)
}
