package memories

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/cairn-run/cairn/cache"
	"github.com/cairn-run/cairn/hint"
)

// FuzzKeyIndex: the last-keys file of any content loads without panic;
// what it saves loads back the same.
func FuzzKeyIndex(f *testing.F) {
	f.Add(keysStore.Marshal(map[string]cache.ActionID{"a": {15}, `b["x"]`: {}}))
	f.Add(keysStore.Marshal(nil))
	f.Add([]byte(`{"a":"` + strings.Repeat("0f", 32) + `"}`))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, b []byte) {
		p := filepath.Join(dir, "keys")
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		ki := LoadLastKeys(p)
		for addr := range ki.keys {
			if id, ok := ki.Get(addr); ok {
				ki.Set(addr, id)
			}
		}
		ki.dirty = true
		if err := ki.Save(); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(ki.keys, LoadLastKeys(p).keys, cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("last keys round trip (-saved +loaded):\n%s", diff)
		}
	})
}

// FuzzDigestsMemory: the digests file of any content parses or is refused
// without panic; an accepted one is written back by Save and parses to the
// same entries.
func FuzzDigestsMemory(f *testing.F) {
	d := cache.HashBytes([]byte("x"))
	good := encodeMemory(map[string]memEntry{
		"data/in.csv":      {digest: d, size: 3, mtime: 1700000000000000000, ctime: 1700000000000000000, ino: 42, mode: 0o644, recorded: 1700000001000000000},
		"name with spaces": {digest: d, size: 3, mtime: 1, ctime: 2, ino: 3, mode: 0o644, recorded: 5},
		"crlf\r\nnewline":  {digest: d, mode: 0o755},
	})
	f.Add(good, false)
	f.Add(good[:len(good)-hint.TrailerSize], true)
	f.Add([]byte("garbage"), false)
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, b []byte, fixSum bool) {
		if fixSum {
			b = hint.AppendTrailer(b[:len(b):len(b)])
		}
		entries, err := parseMemory(b)
		if err != nil {
			return
		}
		// Found in place, each entry is the one parsed.
		r, err := digestsFormat.Open(b)
		if err != nil {
			t.Fatal(err)
		}
		f, err := indexMemory(r)
		if err != nil {
			t.Fatal(err)
		}
		for path, want := range entries {
			if got, ok := f.find(path); !ok || got != want {
				t.Fatalf("find(%q) = %+v, %v; parsed %+v", path, got, ok, want)
			}
		}
		// Found in path order by a cursor, each entry is the one parsed.
		paths := slices.Sorted(maps.Keys(entries))
		at := 0
		for _, path := range paths {
			if got, ok := f.seek(&at, path); !ok || got != entries[path] {
				t.Fatalf("seek(%q) in order = %+v, %v; parsed %+v", path, got, ok, entries[path])
			}
		}
		// Saved over the loaded file, every other entry recorded anew and
		// one path added after each: the file then holds the union, the
		// new entries winning.
		want := maps.Clone(entries)
		recorded := map[string]memEntry{}
		for i, path := range paths {
			if i%2 == 0 {
				e := entries[path]
				e.recorded++
				recorded[path], want[path] = e, e
			}
			if _, ok := entries[path+"\x00"]; !ok && i%3 == 0 {
				e := memEntry{size: int64(i)}
				recorded[path+"\x00"], want[path+"\x00"] = e, e
			}
		}
		m := &Memory{path: filepath.Join(dir, "digests"), now: time.Now, file: f, entries: map[string]*dirRecs{}, dirty: true}
		for path, e := range recorded {
			m.record(path, e)
		}
		if err := m.Save(); err != nil {
			t.Fatal(err)
		}
		entries = want
		saved, err := os.ReadFile(m.path)
		if err != nil {
			t.Fatal(err)
		}
		again, err := parseMemory(saved)
		if err != nil {
			t.Fatalf("saved memory does not parse: %v\n%q", err, saved)
		}
		if diff := cmp.Diff(entries, again, cmp.AllowUnexported(memEntry{}), cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("memory round trip (-parsed +reparsed):\n%s", diff)
		}
	})
}

// FuzzDigestsRecent: the recent file of any content is read or refused
// without panic; an accepted one is found in place as parsed, and saved
// with new records over a base, loads back as the base, its records and
// the new ones, the newer winning.
func FuzzDigestsRecent(f *testing.F) {
	d := cache.HashBytes([]byte("x"))
	w := recentFormat.Writer(0)
	w.Fixed(make([]byte, hint.TrailerSize))
	keys := []*newRec{
		{"crlf\r\nnewline", memEntry{digest: d, mode: 0o755}},
		{"data/in.csv", memEntry{digest: d, size: 3, mtime: 1700000000000000000, ctime: 1700000000000000000, ino: 42, mode: 0o644, recorded: 1700000001000000000}},
		{"name with spaces", memEntry{digest: d, size: 3, mtime: 1, ctime: 2, ino: 3, mode: 0o644, recorded: 5}},
	}
	writeOver(w, memFile{}, keys, len(keys))
	good := w.Finish()
	f.Add(good, false)
	f.Add(good[:len(good)-hint.TrailerSize], true)
	f.Add(good[:len(good)-hint.TrailerSize-1], true)
	f.Add([]byte("garbage"), false)
	dir := f.TempDir()
	basePath := filepath.Join(dir, "digests")
	baseRecs := map[string]memEntry{"data/in.csv": {size: 7}, "z": {size: 8}}
	if err := os.WriteFile(basePath, encodeMemory(baseRecs), 0o644); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, b []byte, fixSum bool) {
		if fixSum {
			b = hint.AppendTrailer(b[:len(b):len(b)])
		}
		r, err := recentFormat.Open(b)
		if err != nil {
			return
		}
		_, rf, err := indexRecent(r)
		if err != nil {
			return
		}
		entries := loadedRecords(&Memory{file: rf})
		if len(entries) != len(rf.recs) {
			t.Fatalf("%d records of %d paths accepted", len(rf.recs), len(entries))
		}
		// Sought in path order by a cursor, with paths between them, each
		// is found as parsed and no other.
		var queries []string
		for path := range entries {
			queries = append(queries, path, path+"\x01")
		}
		slices.Sort(queries)
		var c recentCursor
		for _, q := range queries {
			want, wantOK := entries[q]
			if got, ok := c.seek(rf, q); ok != wantOK || ok && got != want {
				t.Fatalf("seek(%q) in order = %+v, %v; parsed %+v, %v", q, got, ok, want, wantOK)
			}
		}
		// Saved over a base with one path added after each third: loaded
		// back, the base's records, then the recent file's, then the new.
		m := LoadMemory(basePath)
		m.recent = rf
		want := maps.Clone(baseRecs)
		maps.Copy(want, entries)
		for i, path := range slices.Sorted(maps.Keys(entries)) {
			if i%3 == 0 {
				e := memEntry{size: int64(i)}
				m.Record(path+"\x00", statOf(e), e.digest, time.Unix(0, 0))
				e.mode = uint32(statOf(e).Mode)
				want[path+"\x00"] = e
			}
		}
		m.dirty = true
		if err := m.Save(); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, loadedRecords(LoadMemory(basePath)), cmp.AllowUnexported(memEntry{}), cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("recent file round trip (-want +loaded):\n%s", diff)
		}
	})
}
