package memories

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cairn-run/cairn/cache"
	"github.com/cairn-run/cairn/hint"
	"github.com/cairn-run/cairn/workspace"
)

func TestMemorySkipsUnchangedFiles(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	os.WriteFile(p, []byte("one"), 0o644)
	calmFiles(t, dir, "f")

	m := LoadMemory(filepath.Join(dir, "digests"))
	d, _, err := m.Digest("f", p)
	if err != nil || d != cache.HashBytes([]byte("one")) {
		t.Fatalf("digest %v, %v", d, err)
	}
	if err := m.Save(); err != nil {
		t.Fatal(err)
	}
	m2 := LoadMemory(filepath.Join(dir, "digests"))
	fi, _ := os.Stat(p)
	if got, ok := m2.Lookup("f", workspace.StatOf(fi)); !ok || got != d {
		t.Errorf("reloaded memory lookup = %v, %v", got, ok)
	}
}

// TestMemoryRacyEntries: a file changed within the timestamp tick after it
// was hashed keeps size and mtime; the memory must not trust that entry.
func TestMemoryRacyEntries(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	mtime := time.Now().Truncate(time.Millisecond)
	os.WriteFile(p, []byte("aaaa"), 0o644)
	os.Chtimes(p, mtime, mtime)

	m := LoadMemory(filepath.Join(dir, "digests"))
	m.now = func() time.Time { return mtime.Add(time.Millisecond) } // hashed right after the write
	if _, _, err := m.Digest("f", p); err != nil {
		t.Fatal(err)
	}
	// Same size, same mtime, new content (ctime differs on a real
	// filesystem, so compare by forcing the stat to match what was seen).
	os.WriteFile(p, []byte("bbbb"), 0o644)
	os.Chtimes(p, mtime, mtime)
	d, _, err := m.Digest("f", p)
	if err != nil {
		t.Fatal(err)
	}
	if d != cache.HashBytes([]byte("bbbb")) {
		t.Errorf("racy entry was trusted: got digest of old content")
	}
	fi, _ := os.Stat(p)
	st := workspace.StatOf(fi)
	m.Record("g", st, d, mtime.Add(time.Millisecond))
	if _, ok := m.Lookup("g", st); ok {
		t.Error("entry recorded within the racy window was trusted")
	}
	m.Record("g", st, d, mtime.Add(time.Second))
	if _, ok := m.Lookup("g", st); !ok {
		t.Error("entry recorded well after mtime was not trusted")
	}
}

func TestMemoryDamagedFileIsEmpty(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "digests")
	good := encodeMemory(map[string]memEntry{"f": {size: 1, mtime: 2}})
	for _, data := range []string{"", "garbage\n", "cairn-digests 1\n", string(good[:len(good)-1]), string(good[:len(good)-hint.TrailerSize-1]) + "\x05" + string(good[len(good)-hint.TrailerSize:])} {
		os.WriteFile(p, []byte(data), 0o644)
		if m := LoadMemory(p); len(m.entries)+len(m.file.recs) != 0 {
			t.Errorf("%q: %d entries, want 0", data, len(m.entries)+len(m.file.recs))
		}
	}
}

// TestMemoryFileInPlace: entries of a loaded file are found in place,
// paths between or beyond them are not, what the process records wins,
// and Save writes both back. A file out of order is empty.
func TestMemoryFileInPlace(t *testing.T) {
	p := filepath.Join(t.TempDir(), "digests")
	old := time.Now().Add(-time.Hour).UnixNano()
	entry := func(content string) memEntry {
		return memEntry{digest: cache.HashBytes([]byte(content)), size: int64(len(content)), mtime: old, ctime: old, ino: 7, mode: 0o644, recorded: old + int64(time.Minute)}
	}
	in := map[string]memEntry{"a": entry("a"), "b/c": entry("bc"), "b/d": entry("bd"), "z": entry("z")}
	if err := os.WriteFile(p, encodeMemory(in), 0o644); err != nil {
		t.Fatal(err)
	}
	m := LoadMemory(p)
	stat := func(e memEntry) workspace.FileStat {
		return workspace.FileStat{Size: e.size, MTime: e.mtime, CTime: e.ctime, Ino: e.ino, Mode: fs.FileMode(e.mode)}
	}
	for path, e := range in {
		if d, ok := m.Lookup(path, stat(e)); !ok || d != e.digest {
			t.Errorf("Lookup(%s) = %v, %v; want its digest", path, d, ok)
		}
	}
	for _, path := range []string{"", "0", "b", "b/cc", "y", "zz"} {
		if _, ok := m.Lookup(path, stat(in["a"])); ok {
			t.Errorf("Lookup(%q) found an entry", path)
		}
	}
	newer := entry("BC")
	m.Record("b/c", stat(newer), newer.digest, time.Unix(0, newer.recorded))
	m.Record("n", stat(newer), newer.digest, time.Unix(0, newer.recorded))
	if d, ok := m.Lookup("b/c", stat(newer)); !ok || d != newer.digest {
		t.Errorf("recorded entry not preferred over the file's")
	}
	if err := m.Save(); err != nil {
		t.Fatal(err)
	}
	want := map[string]memEntry{}
	for k, e := range in {
		want[k] = e
	}
	want["b/c"], want["n"] = newer, newer
	got := loadedRecords(LoadMemory(p))
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(memEntry{})); diff != "" {
		t.Errorf("saved memory (-want +got):\n%s", diff)
	}

	// Records out of order (a checksummed file no cairn writes).
	w := digestsFormat.Writer(0)
	w.Len(2)
	for _, path := range []string{"b", "a"} {
		writeMemEntry(w, path, in["a"])
	}
	if err := os.WriteFile(p, w.Finish(), 0o644); err != nil {
		t.Fatal(err)
	}
	if m := LoadMemory(p); len(m.file.recs) != 0 {
		t.Errorf("a file out of order was loaded")
	}
}

// TestRecordedOutOfOrder: records of a directory that come out of order,
// some of a path recorded before, are found (the last one of a path
// wins) whether few or many came out of order, and saved once each.
func TestRecordedOutOfOrder(t *testing.T) {
	for _, n := range []int{5, 3 * maxUnsorted} {
		m := &Memory{entries: map[string]*dirRecs{}}
		want := map[string]memEntry{}
		rec := func(key string, size int64) {
			e := memEntry{size: size}
			m.record(key, e)
			want[key] = e
		}
		for i := range n {
			rec(fmt.Sprintf("d/f%04d", 2*i), int64(i)) // in order
		}
		for i := range n {
			rec(fmt.Sprintf("d/f%04d", 2*(n-i)-1), int64(1000+i)) // backwards, between them
			rec(fmt.Sprintf("d/f%04d", 2*i), int64(2000+i))       // again
			for key, e := range want {
				if got, ok := m.recordedEntry(key); !ok || got != e {
					t.Fatalf("%d: %s after %d more: %+v, %v; want %+v", n, key, i, got, ok, e)
				}
			}
		}
		got, err := parseMemory(m.merged())
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(want, got, cmp.AllowUnexported(memEntry{})); d != "" {
			t.Errorf("%d: saved (-want +got):\n%s", n, d)
		}
	}
}
