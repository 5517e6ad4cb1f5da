package memories

import (
	"bytes"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cairn-run/cairn/cache"
	"github.com/cairn-run/cairn/workspace"
)

// testEntry is the record of a file of content hashed well after it was
// written (trusted).
func testEntry(content string, ino uint64) memEntry {
	old := time.Date(2025, 1, 2, 3, 4, 5, 6, time.UTC).UnixNano()
	return memEntry{digest: cache.HashBytes([]byte(content)), size: int64(len(content)), mtime: old, ctime: old, ino: ino, mode: 0o644, recorded: old + int64(time.Minute)}
}

// baseOf saves, at path, the base file of n records of paths f00000,
// f00002, ... (the odd ones free for new paths) and returns them.
func baseOf(t *testing.T, path string, n int) map[string]memEntry {
	t.Helper()
	m := &Memory{path: path, now: time.Now, entries: map[string]*dirRecs{}, dirty: true}
	recs := map[string]memEntry{}
	for i := range n {
		p := fmt.Sprintf("f%05d", 2*i)
		recs[p] = testEntry(p, uint64(i))
		m.record(p, recs[p])
	}
	if err := m.Save(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(recentPath(path)); !os.IsNotExist(err) {
		t.Fatalf("a first save wrote a recent file (%v)", err)
	}
	return recs
}

// recordAll records recs into m and saves it.
func recordAll(t *testing.T, m *Memory, recs map[string]memEntry) {
	t.Helper()
	for _, p := range slices.Sorted(maps.Keys(recs)) {
		e := recs[p]
		m.Record(p, statOf(e), e.digest, time.Unix(0, e.recorded))
	}
	if err := m.Save(); err != nil {
		t.Fatal(err)
	}
}

// fileState is what a save may change of a file: its bytes and inode (an
// atomic write makes a new one).
type fileState struct {
	data []byte
	ino  uint64
}

func stateOf(t *testing.T, path string) fileState {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fileState{b, workspace.StatOf(fi).Ino}
}

// checkLookups checks that m finds each of want, by Lookup and by a
// Cursor in path order, and no record of another stat.
func checkLookups(t *testing.T, m *Memory, want map[string]memEntry) {
	t.Helper()
	c := m.Cursor()
	for _, p := range slices.Sorted(maps.Keys(want)) {
		e := want[p]
		if d, ok := m.Lookup(p, statOf(e)); !ok || d != e.digest {
			t.Errorf("Lookup(%s) = %v, %v; want %v", p, d.Short(), ok, e.digest.Short())
		}
		if d, ok := c.Lookup(p, statOf(e)); !ok || d != e.digest {
			t.Errorf("Cursor.Lookup(%s) = %v, %v; want %v", p, d.Short(), ok, e.digest.Short())
		}
	}
}

// TestSaveWritesRecentOnly: a save of a few records over a memory of many
// writes the recent file alone, holding just them (and, saved again, what
// it held); the base is untouched; a memory loaded after finds the new
// records, the recent file's record of a path over the base's.
func TestSaveWritesRecentOnly(t *testing.T) {
	p := filepath.Join(t.TempDir(), "digests")
	want := baseOf(t, p, 20000)
	base := stateOf(t, p)
	changed := testEntry("edited", 99999)
	waves := []map[string]memEntry{
		{"f00010": changed, "f00011": testEntry("new", 100000), "g": testEntry("g", 100001)},
		{"f00010": testEntry("edited again", 100002), "a": testEntry("a", 100003)},
	}
	recent := map[string]memEntry{}
	for i, wave := range waves {
		recordAll(t, LoadMemory(p), wave)
		maps.Copy(recent, wave)
		maps.Copy(want, wave)
		if got := stateOf(t, p); got.ino != base.ino || !bytes.Equal(got.data, base.data) {
			t.Fatalf("wave %d: the base was rewritten", i)
		}
		b, err := os.ReadFile(recentPath(p))
		if err != nil {
			t.Fatalf("wave %d: %v", i, err)
		}
		r, err := recentFormat.Open(b)
		if err != nil {
			t.Fatal(err)
		}
		_, f, err := indexRecent(r)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(recent, loadedRecords(&Memory{file: f}), cmp.AllowUnexported(memEntry{})); diff != "" {
			t.Errorf("wave %d: recent file (-want +got):\n%s", i, diff)
		}
		m := LoadMemory(p)
		if diff := cmp.Diff(want, loadedRecords(m), cmp.AllowUnexported(memEntry{})); diff != "" {
			t.Errorf("wave %d: loaded (-want +got):\n%s", i, diff)
		}
		checkLookups(t, m, want)
		if _, ok := m.Lookup("f00010", statOf(testEntry("f00010", 5))); ok {
			t.Errorf("wave %d: the base's record of a path the recent file holds was trusted", i)
		}
	}
}

// TestSaveCompacts: a save of more records than recentLimit allows writes
// a new base holding everything (the recent file's records too) and
// removes the recent file.
func TestSaveCompacts(t *testing.T) {
	p := filepath.Join(t.TempDir(), "digests")
	want := baseOf(t, p, 20000)
	few := map[string]memEntry{"f00010": testEntry("edited", 99999), "f00011": testEntry("new", 100000)}
	recordAll(t, LoadMemory(p), few)
	maps.Copy(want, few)
	many := map[string]memEntry{"f00011": testEntry("newer", 100001)}
	for i := range recentLimit(20000) {
		p := fmt.Sprintf("h%05d", i)
		many[p] = testEntry(p, uint64(200000+i))
	}
	recordAll(t, LoadMemory(p), many)
	maps.Copy(want, many)
	if _, err := os.Stat(recentPath(p)); !os.IsNotExist(err) {
		t.Errorf("the recent file is still there after a compaction (%v)", err)
	}
	got, err := parseMemory(stateOf(t, p).data)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(memEntry{})); diff != "" {
		t.Errorf("compacted base (-want +got):\n%s", diff)
	}
	checkLookups(t, LoadMemory(p), want)
}

// TestRecentFileDamaged: a recent file damaged, out of order, or written
// over another base is ignored whole, the base still read; a base damaged
// or missing takes its recent file with it (whose records would then be
// read over no base: never wrong, but deleting the base is how a user
// makes cairn forget).
func TestRecentFileDamaged(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "digests")
	base := baseOf(t, p, 100)
	recordAll(t, LoadMemory(p), map[string]memEntry{"f00010": testEntry("edited", 999)})
	goodBase, goodRecent := stateOf(t, p).data, stateOf(t, recentPath(p)).data
	other := filepath.Join(dir, "other")
	baseOf(t, other, 101)
	recordAll(t, LoadMemory(other), map[string]memEntry{"f00010": testEntry("edited", 999)})

	outOfOrder := recentFormat.Writer(0)
	outOfOrder.Fixed(goodBase[len(goodBase)-8:])
	outOfOrder.Len(2)
	writeMemEntry(outOfOrder, "f00010", testEntry("edited", 999))
	writeMemEntry(outOfOrder, "f00001", testEntry("x", 998))
	flipped := bytes.Clone(goodRecent)
	flipped[len(flipped)/2] ^= 4
	truncatedBase := goodBase[:len(goodBase)-1]
	for _, tc := range []struct {
		name         string
		base, recent []byte
		want         map[string]memEntry
	}{
		{"truncated", goodBase, goodRecent[:len(goodRecent)-3], base},
		{"flipped byte", goodBase, flipped, base},
		{"out of order", goodBase, outOfOrder.Finish(), base},
		{"over another base", goodBase, stateOf(t, recentPath(other)).data, base},
		{"a base file", goodBase, goodBase, base},
		{"base damaged", truncatedBase, goodRecent, map[string]memEntry{}},
		{"base missing", nil, goodRecent, map[string]memEntry{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			os.Remove(p)
			if tc.base != nil {
				if err := os.WriteFile(p, tc.base, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.WriteFile(recentPath(p), tc.recent, 0o644); err != nil {
				t.Fatal(err)
			}
			m := LoadMemory(p)
			if diff := cmp.Diff(tc.want, loadedRecords(m), cmp.AllowUnexported(memEntry{})); diff != "" {
				t.Errorf("loaded (-want +got):\n%s", diff)
			}
			checkLookups(t, m, tc.want)
		})
	}
}

// TestCompactionCrash: a compaction that died after writing the base and
// before removing the recent file leaves that recent file (a subset of
// the new base, written over the old): the memory loads the same.
func TestCompactionCrash(t *testing.T) {
	p := filepath.Join(t.TempDir(), "digests")
	want := baseOf(t, p, 1000)
	recent := map[string]memEntry{"f00010": testEntry("edited", 999), "f00011": testEntry("new", 1000)}
	recordAll(t, LoadMemory(p), recent)
	maps.Copy(want, recent)
	left := stateOf(t, recentPath(p)).data

	m := LoadMemory(p)
	recordAll(t, m, map[string]memEntry{"f00012": testEntry("x", 1001)})
	data := m.merged()
	if err := digestsFormat.Save(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(recentPath(p), left, 0o644); err != nil {
		t.Fatal(err)
	}
	want["f00012"] = testEntry("x", 1001)
	got := LoadMemory(p)
	if diff := cmp.Diff(want, loadedRecords(got), cmp.AllowUnexported(memEntry{})); diff != "" {
		t.Errorf("loaded (-want +got):\n%s", diff)
	}
	checkLookups(t, got, want)
}
