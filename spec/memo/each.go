package memo

import (
	"sort"
	"strings"

	"github.com/cairn-run/cairn/hint"
)

// The spec memo is all or nothing: after any edit of the spec, the whole
// spec is evaluated again. The for_each memo keeps, beside it, the keys
// of each for_each over strings under a hash of all they were computed
// from (spec.ForEachMemo says which), so that after an edit elsewhere a
// sweep's keys are not computed again.

// eachMemoStore is the for_each memo file: per block, sorted by name, the
// block's name, the hash and the keys.
var eachMemoStore = hint.Store[map[string]eachRecord]{
	Format: hint.NewFormat("each-memo", 1, "each-memo"),
	Perm:   0o600,
	SizeHint: func(recs map[string]eachRecord) int {
		size := 0
		for _, r := range recs {
			size += 80 + 12*len(r.keys)
		}
		return size
	},
	Encode: func(w *hint.Writer, recs map[string]eachRecord) {
		w.Len(len(recs))
		for _, name := range sortedKeys(recs) {
			w.Str(name)
			w.Str(recs[name].hash)
			w.Strs(recs[name].keys)
		}
	},
	Decode: func(r *hint.Reader) (map[string]eachRecord, error) {
		n := r.Len()
		recs := make(map[string]eachRecord, min(n, 1024))
		for i := 0; i < n && r.OK(); i++ {
			name := r.Str()
			recs[name] = eachRecord{hash: r.Str(), keys: r.Strs()}
		}
		return recs, nil
	},
}

// eachMemo is the for_each memory of one load (a spec.ForEachMemo): what
// the file held, and what this load computed (written back when the load
// succeeds).
type eachMemo struct {
	path string

	loaded bool
	old    map[string]eachRecord // block name -> its record
	fresh  map[string]eachRecord
}

// eachRecord is a for_each's keys and the hash of what they came from.
type eachRecord struct {
	hash string
	keys []string
}

// testHookEachMemo, set by tests only, is called with a block's name when
// its instances' keys come from the for_each memo.
var testHookEachMemo func(block string)

// eachMemoPath is the for_each memo kept beside the spec memo memoPath.
func eachMemoPath(memoPath string) string {
	return strings.TrimSuffix(memoPath, ".memo") + ".each"
}

// Salt names the file's format and the cairn build: keys computed by
// another build are never taken.
func (m *eachMemo) Salt() string { return eachMemoStore.Format.Header() + hint.ExeID() }

// Lookup returns the keys of block kept for hash, or false.
func (m *eachMemo) Lookup(block, hash string) ([]string, bool) {
	if !m.loaded {
		m.loaded = true
		m.old, _ = eachMemoStore.Load(m.path)
	}
	rec, ok := m.old[block]
	if !ok || rec.hash != hash {
		return nil, false
	}
	m.keepRecord(block, rec)
	if testHookEachMemo != nil {
		testHookEachMemo(block)
	}
	return rec.keys, true
}

// Keep records block's keys under hash.
func (m *eachMemo) Keep(block, hash string, keys []string) {
	m.keepRecord(block, eachRecord{hash: hash, keys: keys})
}

// keepRecord puts rec in what this load writes back.
func (m *eachMemo) keepRecord(block string, rec eachRecord) {
	if m.fresh == nil {
		m.fresh = map[string]eachRecord{}
	}
	m.fresh[block] = rec
}

// write replaces the file with the records of this load.
func (m *eachMemo) write() error {
	if len(m.fresh) == 0 {
		return hint.Remove(m.path)
	}
	return eachMemoStore.Save(m.path, m.fresh)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
