package cache

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cairn-run/cairn/internal/fsx"
	"github.com/cairn-run/cairn/internal/fsx/fsxtest"
	"github.com/google/go-cmp/cmp"
)

// packedEntries puts n entries referencing one blob through c and returns
// them in the order put.
func packedEntries(t *testing.T, c *Dir, prefix string, n int) []*Entry {
	t.Helper()
	d, err := c.PutBytes([]byte("packed output"))
	if err != nil {
		t.Fatal(err)
	}
	var es []*Entry
	for i := range n {
		e := testEntry(fmt.Sprintf("%s %d", prefix, i), d)
		if err := c.PutEntry(e); err != nil {
			t.Fatal(err)
		}
		es = append(es, e)
	}
	return es
}

// entryInode returns the inode number of key's entry file and its link
// count.
func entryInode(t *testing.T, c *Dir, key ActionID) (ino, nlink uint64) {
	t.Helper()
	st, err := os.Lstat(c.entryPath(key))
	if err != nil {
		t.Fatal(err)
	}
	_, ino, nlink, ok := FileID(st)
	if !ok {
		t.Skip("no inode numbers on this platform")
	}
	return ino, nlink
}

// recordSize is the bytes a packed entry accounts for.
func recordSize(t *testing.T, e *Entry) int64 {
	t.Helper()
	b, err := EncodeEntry(e)
	if err != nil {
		t.Fatal(err)
	}
	return packRecHeader + int64(len(b))
}

func TestPackConcurrentPuts(t *testing.T) {
	t.Parallel()
	c := newDir(t)
	d, err := c.PutBytes([]byte("shared output"))
	if err != nil {
		t.Fatal(err)
	}
	const goroutines, each = 16, 40
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		all  []*Entry
		errs []error
	)
	for g := range goroutines {
		wg.Go(func() {
			for i := range each {
				e := testEntry(fmt.Sprintf("g%d-%d", g, i), d)
				err := c.PutEntry(e)
				mu.Lock()
				if err != nil {
					errs = append(errs, err)
				}
				all = append(all, e)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		t.Errorf("PutEntry: %v", err)
	}
	// Read back through the writing Dir (its pack still open) and,
	// after Close, through a fresh one.
	for _, e := range all {
		got, err := c.GetEntry(e.Key)
		if err != nil {
			t.Fatalf("GetEntry %s while the pack is open: %v", e.Key.Short(), err)
		}
		if diff := cmp.Diff(e, got); diff != "" {
			t.Fatalf("GetEntry %s (-want +got):\n%s", e.Key.Short(), diff)
		}
	}
	ino, nlink := entryInode(t, c, all[0].Key)
	for _, e := range all {
		if i, _ := entryInode(t, c, e.Key); i != ino {
			t.Fatalf("entry %s is inode %d, the first one %d: not one pack", e.Key.Short(), i, ino)
		}
	}
	if nlink != goroutines*each+1 {
		t.Errorf("pack has %d links, want %d names plus its temp name", nlink, goroutines*each)
	}
	assertNoTemps(t, c)
	c2, err := Open(c.Root())
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range all {
		_, b, err := c2.ReadEntryBytes(e.Key)
		if err != nil {
			t.Fatalf("ReadEntryBytes %s after Close: %v", e.Key.Short(), err)
		}
		if enc, _ := EncodeEntry(e); !bytes.Equal(b, enc) {
			t.Fatalf("stored form of %s differs from its encoding", e.Key.Short())
		}
	}
	if _, n := entryInode(t, c, all[0].Key); n != goroutines*each {
		t.Errorf("after Close the pack has %d links, want %d", n, goroutines*each)
	}
}

func TestPackFirstWriterWins(t *testing.T) {
	t.Parallel()
	c1 := newDir(t)
	e := putSample(t, c1)
	if err := c1.PutEntry(e); err != nil {
		t.Fatal(err)
	}
	c2, err := Open(c1.Root())
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	second := *e
	second.DurationMS = e.DurationMS + 1000 // same key, another run's result
	if err := c2.PutEntry(&second); err != nil {
		t.Fatalf("second writer: %v", err)
	}
	got, err := c2.GetEntry(e.Key)
	if err != nil {
		t.Fatal(err)
	}
	if got.DurationMS != e.DurationMS {
		t.Errorf("GetEntry returned the second writer's entry (duration %d), want the first's (%d)", got.DurationMS, e.DurationMS)
	}
	i1, _ := entryInode(t, c1, e.Key)
	if st, err := os.Lstat(c2.packs.cur.t.path); err != nil {
		t.Fatal(err)
	} else if _, i2, _, _ := FileID(st); i2 == i1 {
		t.Errorf("both writers used one pack")
	}
}

// truncatePack cuts the pack at p (a name of it) to size bytes.
func truncatePack(t *testing.T, p string, size int64) {
	t.Helper()
	if err := os.Chmod(p, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(p, size); err != nil {
		t.Fatal(err)
	}
}

func TestPackTornLastRecord(t *testing.T) {
	t.Parallel()
	c := newDir(t)
	es := packedEntries(t, c, "torn", 3)
	c.Close()
	p := c.entryPath(es[2].Key)
	st, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	last := recordSize(t, es[2])
	for _, cut := range []int64{last - 1, last / 2, last - packRecHeader + 3, 1} {
		t.Run(fmt.Sprintf("cut %d of %d", cut, last), func(t *testing.T) {
			c := newDir(t)
			es := packedEntries(t, c, "torn", 3)
			c.Close()
			p := c.entryPath(es[2].Key)
			truncatePack(t, p, st.Size()-cut)
			for _, e := range es[:2] {
				if _, err := c.GetEntry(e.Key); err != nil {
					t.Errorf("entry before the torn record: %v", err)
				}
			}
			_, err := c.GetEntry(es[2].Key)
			if !errors.Is(err, ErrCorrupt) {
				t.Errorf("torn entry: %v, want ErrCorrupt", err)
			}
			if _, err := os.Lstat(p); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("torn entry's name not quarantined: %v", err)
			}
			// The next put heals it, in a new pack.
			if err := c.PutEntry(es[2]); err != nil {
				t.Fatal(err)
			}
			if _, err := c.GetEntry(es[2].Key); err != nil {
				t.Errorf("after re-put: %v", err)
			}
		})
	}
}

func TestPackFlippedByte(t *testing.T) {
	t.Parallel()
	c := newDir(t)
	es := packedEntries(t, c, "flip", 3)
	c.Close()
	// The middle record's body, halfway in.
	off := int64(len(packHeader)) + recordSize(t, es[0]) + packRecHeader + 40
	p := c.entryPath(es[1].Key)
	corruptFile(t, p, off)
	rep, err := c.Verify(VerifyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Problems) != 1 || rep.Problems[0].ID != es[1].Key.String() || rep.Problems[0].Class != ProblemCorrupt {
		t.Errorf("Verify problems %+v, want the middle entry corrupt", rep.Problems)
	}
	for i, e := range es {
		_, err := c.GetEntry(e.Key)
		switch {
		case i == 1 && !errors.Is(err, ErrCorrupt):
			t.Errorf("flipped entry: %v, want ErrCorrupt", err)
		case i != 1 && err != nil:
			t.Errorf("entry %d beside the flipped one: %v", i, err)
		}
	}
	if _, err := os.Lstat(c.entryPath(es[1].Key)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("flipped entry's name not quarantined")
	}
	for _, i := range []int{0, 2} {
		if _, err := os.Lstat(c.entryPath(es[i].Key)); err != nil {
			t.Errorf("good entry %d's name: %v", i, err)
		}
	}
}

// A name linked to a pack that holds no record for its key (a name planted
// by hand, or a record lost) is corrupt, not another key's entry.
func TestPackWrongKey(t *testing.T) {
	t.Parallel()
	c := newDir(t)
	es := packedEntries(t, c, "wrong", 1)
	c.Close()
	other := testEntry("not in the pack")
	op := c.entryPath(other.Key)
	if err := os.MkdirAll(filepath.Dir(op), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(c.entryPath(es[0].Key), op); err != nil {
		t.Fatal(err)
	}
	if _, err := c.GetEntry(other.Key); !errors.Is(err, ErrCorrupt) {
		t.Errorf("name with no record in its pack: %v, want ErrCorrupt", err)
	}
	if _, err := c.GetEntry(es[0].Key); err != nil {
		t.Errorf("the pack's own entry: %v", err)
	}
}

// TestPackFallbacks swaps the process's file layer: not parallel.
func TestPackFallbacks(t *testing.T) {
	isPacked := func(t *testing.T, c *Dir, key ActionID) bool {
		t.Helper()
		b, err := os.ReadFile(c.entryPath(key))
		if err != nil {
			t.Fatal(err)
		}
		return bytes.HasPrefix(b, []byte(packHeader))
	}
	t.Run("link refused", func(t *testing.T) {
		c := newDir(t)
		d, err := c.PutBytes([]byte("out"))
		if err != nil {
			t.Fatal(err)
		}
		f := &fsxtest.Fault{Base: fsx.OS{}, Op: fsxtest.OpLink, N: 1, Err: syscall.EPERM, Match: string(filepath.Separator) + ACDir + string(filepath.Separator)}
		restore := fsx.Set(f)
		e1, e2 := testEntry("refused 1", d), testEntry("refused 2", d)
		err1, err2 := c.PutEntry(e1), c.PutEntry(e2)
		restore()
		if err1 != nil || err2 != nil {
			t.Fatalf("puts with link refused: %v, %v", err1, err2)
		}
		if isPacked(t, c, e1.Key) || isPacked(t, c, e2.Key) {
			t.Errorf("entries packed although link(2) was refused")
		}
		// The pack that could not be linked is closed and unnamed at
		// once, not kept open until Close (a crash would leave it).
		if got := listDir(t, filepath.Join(c.Root(), TempDir)); len(got) != 0 {
			t.Errorf("tmp/ holds %q after packing was found impossible, want empty before Close", got)
		}
		for _, e := range []*Entry{e1, e2} {
			if _, err := c.GetEntry(e.Key); err != nil {
				t.Errorf("fallback entry: %v", err)
			}
		}
		assertNoTemps(t, c)
	})
	t.Run("too many links", func(t *testing.T) {
		c := newDir(t)
		d, err := c.PutBytes([]byte("out"))
		if err != nil {
			t.Fatal(err)
		}
		e0 := testEntry("mlink 0", d)
		if err := c.PutEntry(e0); err != nil {
			t.Fatal(err)
		}
		f := &fsxtest.Fault{Base: fsx.OS{}, Op: fsxtest.OpLink, N: 1, Err: syscall.EMLINK, Match: string(filepath.Separator) + ACDir + string(filepath.Separator)}
		restore := fsx.Set(f)
		e1 := testEntry("mlink 1", d)
		err = c.PutEntry(e1)
		restore()
		if err != nil {
			t.Fatal(err)
		}
		e2 := testEntry("mlink 2", d)
		if err := c.PutEntry(e2); err != nil {
			t.Fatal(err)
		}
		if isPacked(t, c, e1.Key) || !isPacked(t, c, e2.Key) {
			t.Errorf("EMLINK: want that entry in a file and the next in a pack")
		}
		i0, _ := entryInode(t, c, e0.Key)
		if i2, _ := entryInode(t, c, e2.Key); i0 == i2 {
			t.Errorf("the put after EMLINK used the full pack")
		}
		assertNoTemps(t, c)
	})
	t.Run("temp name removed", func(t *testing.T) {
		c := newDir(t)
		d, err := c.PutBytes([]byte("out"))
		if err != nil {
			t.Fatal(err)
		}
		e0 := testEntry("gone 0", d)
		if err := c.PutEntry(e0); err != nil {
			t.Fatal(err)
		}
		// A GC of old temp files, during a long run.
		if err := os.Remove(c.packs.cur.t.path); err != nil {
			t.Fatal(err)
		}
		e1, e2 := testEntry("gone 1", d), testEntry("gone 2", d)
		if err := c.PutEntry(e1); err != nil {
			t.Fatal(err)
		}
		if err := c.PutEntry(e2); err != nil {
			t.Fatal(err)
		}
		if isPacked(t, c, e1.Key) || !isPacked(t, c, e2.Key) {
			t.Errorf("temp name gone: want that entry in a file and the next in a new pack")
		}
		for _, e := range []*Entry{e0, e1, e2} {
			if _, err := c.GetEntry(e.Key); err != nil {
				t.Errorf("GetEntry: %v", err)
			}
		}
		assertNoTemps(t, c)
	})
}

func TestPackGCMaxSize(t *testing.T) {
	t.Parallel()
	c := newDir(t)
	const n, evict = 20, 5
	es := packedEntries(t, c, "gc", n)
	c.Close()
	d := es[0].Outputs[0].Digest
	blobSize := int64(len("packed output"))
	sizes := map[string]int64{}
	var entryBytes int64
	for _, e := range es {
		sizes[e.Key.String()] = recordSize(t, e)
		entryBytes += sizes[e.Key.String()]
	}
	// One pack, one mtime: least recently used is then key order.
	keys := make([]string, 0, n)
	for k := range sizes {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var first int64
	for _, k := range keys[:evict] {
		first += sizes[k]
	}
	rep, err := c.GC(GCOptions{MaxSize: entryBytes + blobSize - first})
	if err != nil {
		t.Fatal(err)
	}
	if rep.BytesBefore != entryBytes+blobSize {
		t.Errorf("BytesBefore = %d, want %d (records plus the blob), not the pack once per name", rep.BytesBefore, entryBytes+blobSize)
	}
	if rep.EntriesRemoved != evict {
		t.Errorf("evicted %d entries, want %d", rep.EntriesRemoved, evict)
	}
	var removed []string
	for _, it := range rep.Removed {
		if it.Kind != "entry" {
			continue
		}
		removed = append(removed, it.ID)
		if it.Size != sizes[it.ID] {
			t.Errorf("removed entry %s reported as %d bytes, want its record's %d", it.ID[:12], it.Size, sizes[it.ID])
		}
	}
	if diff := cmp.Diff(keys[:evict], removed); diff != "" {
		t.Errorf("evicted (-want +got):\n%s", diff)
	}
	if rep.BytesAfter != entryBytes+blobSize-first {
		t.Errorf("BytesAfter = %d, want %d", rep.BytesAfter, entryBytes+blobSize-first)
	}
	for _, e := range es {
		_, err := c.GetEntry(e.Key)
		gone := slices.Contains(keys[:evict], e.Key.String())
		switch {
		case gone && !errors.Is(err, ErrNotFound):
			t.Errorf("evicted entry: %v, want a miss", err)
		case !gone && err != nil:
			t.Errorf("kept entry: %v", err)
		}
	}
	if !c.HasBlob(d) {
		t.Errorf("the kept entries' blob was removed")
	}
	st, err := c.Stats(0)
	if err != nil {
		t.Fatal(err)
	}
	pst, err := os.Stat(c.entryPath(es[0].Key))
	if errors.Is(err, fs.ErrNotExist) {
		pst, err = os.Stat(c.entryPath(es[n-1].Key))
	}
	if err != nil {
		t.Fatal(err)
	}
	if st.Entries != n-evict || st.EntryBytes != pst.Size() {
		t.Errorf("Stats: %d entries of %d bytes, want %d in one pack of %d bytes", st.Entries, st.EntryBytes, n-evict, pst.Size())
	}
}

func TestPackVerify(t *testing.T) {
	t.Parallel()
	c := newDir(t)
	es := packedEntries(t, c, "verify", 10)
	rep, err := c.Verify(VerifyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var want int64 = int64(len("packed output"))
	for _, e := range es {
		want += recordSize(t, e)
	}
	if len(rep.Problems) != 0 || rep.Entries != len(es) || rep.Bytes != want {
		t.Errorf("Verify with the pack open: %d problems %+v, %d entries, %d bytes; want none, %d, %d", len(rep.Problems), rep.Problems, rep.Entries, rep.Bytes, len(es), want)
	}
	c.Close()
	// Damage the fourth record; repair quarantines that name only.
	off := int64(len(packHeader)) + packRecHeader + 20
	for _, e := range es[:3] {
		off += recordSize(t, e)
	}
	corruptFile(t, c.entryPath(es[3].Key), off)
	rep, err = c.Verify(VerifyOptions{Repair: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Problems) != 1 || rep.Problems[0].ID != es[3].Key.String() || rep.Problems[0].Repair == "" {
		t.Errorf("Verify --repair: %+v, want the fourth entry repaired", rep.Problems)
	}
	rep, err = c.Verify(VerifyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Problems) != 0 || rep.Entries != len(es)-1 {
		t.Errorf("second Verify: %+v, %d entries; want clean, %d", rep.Problems, rep.Entries, len(es)-1)
	}
}

// TestPackVerifyIdleTemp: a process's pack keeps its temp name for as
// long as the process stores entries, and a long phase can leave it
// unchanged for hours. Verify must not report it as a crashed write's
// leftover (orphan-tmp, exit status 1) while names are published from
// it, but does once it has none.
func TestPackVerifyIdleTemp(t *testing.T) {
	t.Parallel()
	c := newDir(t)
	defer c.Close()
	es := packedEntries(t, c, "idle", 2)
	tmp := c.packs.cur.t.path
	if _, nlink := entryInode(t, c, es[0].Key); nlink != 3 {
		t.Fatalf("pack has %d links, want 2 names and its temp name", nlink)
	}
	old := time.Now().Add(-2 * TempGrace)
	if err := os.Chtimes(tmp, old, old); err != nil {
		t.Fatal(err)
	}
	rep, err := c.Verify(VerifyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Problems) != 0 || rep.InFlight != 1 {
		t.Errorf("Verify of a cache whose live pack was last appended to %v ago: problems %+v, %d in flight; want none, 1", 2*TempGrace, rep.Problems, rep.InFlight)
	}
	// Its names gone (evicted), the temp name holds the pack's bytes alone.
	for _, e := range es {
		if err := os.Remove(c.entryPath(e.Key)); err != nil {
			t.Fatal(err)
		}
	}
	rep, err = c.Verify(VerifyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Problems) != 1 || rep.Problems[0].Class != ProblemOrphanTemp || rep.Problems[0].ID != filepath.Base(tmp) {
		t.Errorf("Verify with the pack's names gone: %+v, want its temp name an orphan", rep.Problems)
	}
}

// The workspace memo over packs: a pack changes (appends, links, unlinks)
// under entries it vouches for, which must only cost misses, never return
// another entry.
func TestPackEntryMemo(t *testing.T) {
	t.Parallel()
	root, path := t.TempDir(), filepath.Join(t.TempDir(), "entries")
	c, m := memoDir(t, root, path, Options{})
	es := packedEntries(t, c, "memo", 4)
	m.now = func() time.Time { return time.Now().Add(time.Second) }
	for _, e := range es {
		if _, err := c.GetEntry(e.Key); err != nil {
			t.Fatal(err)
		}
	}
	// The writer appends another entry: every stamp of the pack changes.
	more := testEntry("memo more", es[0].Outputs[0].Digest)
	if err := c.PutEntry(more); err != nil {
		t.Fatal(err)
	}
	for _, e := range es {
		got, err := c.GetEntry(e.Key)
		if err != nil || !cmp.Equal(e, got) {
			t.Fatalf("GetEntry after an append: %v", err)
		}
	}
	if m.Hits() != 0 {
		t.Errorf("memo answered %d times for a pack appended to since", m.Hits())
	}
	c.Close()
	// Read once more after Close (the temp name went: ctime changed),
	// save, and a second process answers from the memo.
	for _, e := range es {
		if _, err := c.GetEntryLean(e.Key); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.Save(); err != nil {
		t.Fatal(err)
	}
	c2, m2 := memoDir(t, root, path, Options{})
	for _, e := range es {
		got, err := c2.GetEntryLean(e.Key)
		if err != nil || !cmp.Equal(leanOf(e), got) {
			t.Fatalf("GetEntryLean from the memo: %v", err)
		}
	}
	if m2.Hits() != int64(len(es)) {
		t.Errorf("memo hits %d, want %d", m2.Hits(), len(es))
	}
	// GC evicts one name: the pack's ctime changes, so the memo vouches
	// for none of its entries; and a new entry stored under the evicted
	// key (another pack) is what a reader gets, never the memo's.
	if err := os.Remove(c.entryPath(es[0].Key)); err != nil {
		t.Fatal(err)
	}
	c3, m3 := memoDir(t, root, path, Options{})
	replaced := *es[0]
	replaced.DurationMS += 7
	if err := c3.PutEntry(&replaced); err != nil {
		t.Fatal(err)
	}
	got, err := c3.GetEntryLean(es[0].Key)
	if err != nil || got.DurationMS != replaced.DurationMS {
		t.Errorf("GetEntryLean of a re-stored key: %v, duration %v; want the new entry", err, got)
	}
	for _, e := range es[1:] {
		if _, err := c3.GetEntryLean(e.Key); err != nil {
			t.Fatal(err)
		}
	}
	if m3.Hits() != 0 {
		t.Errorf("memo answered %d times for a pack whose names changed", m3.Hits())
	}
	c3.Close()
}

// FuzzPackRecord feeds arbitrary bytes to the pack scanner and record
// checker: no panic, every record the scan finds either checks (and then
// re-encodes to the same bytes) or is refused, and records appended in
// front of the arbitrary bytes are all found, in order; read from a file
// under each key, they give that key's first record, also after the file
// is rewritten in place (a new pack on an inode the readers indexed).
func FuzzPackRecord(f *testing.F) {
	key := ComputeKey([]Component{{Kind: "command", Value: "x"}})
	f.Add([]byte{}, []byte("body"))
	f.Add(appendPackRecord(nil, key, []byte("cairn-ac 1\nbody")), []byte{})
	rec := appendPackRecord(nil, key, []byte("0123456789"))
	f.Add(rec[:len(rec)-1], []byte("x"))
	f.Add(append(rec, 0xff, 'c', 'p', 'r', '1'), []byte(nil))
	f.Fuzz(func(t *testing.T, tail, body []byte) {
		check := func(pack []byte) (found []packRecord) {
			end, err := scanPack(bufio.NewReader(bytes.NewReader(pack)), 0, func(r packRecord, off int64) {
				if off < 0 || off+r.size > int64(len(pack)) {
					t.Fatalf("record at %d of %d bytes outside a pack of %d", off, r.size, len(pack))
				}
				got, err := checkPackRecord(pack[off:off+r.size], r.key)
				if err == nil && !bytes.Equal(appendPackRecord(nil, r.key, got), pack[off:off+r.size]) {
					t.Fatalf("a record that checks does not re-encode to itself")
				}
				found = append(found, r)
			})
			if err != nil || end > int64(len(pack)) {
				t.Fatalf("scan of an in-memory pack: end %d of %d, %v", end, len(pack), err)
			}
			return found
		}
		check(tail)
		keys := []ActionID{key, ComputeKey([]Component{{Kind: "command", Value: string(body)}})}
		var pack []byte
		for _, k := range keys {
			pack = appendPackRecord(pack, k, body)
		}
		n := len(pack)
		found := check(append(pack, tail...))
		if len(found) < len(keys) {
			t.Fatalf("scan found %d records, want at least the %d before the tail", len(found), len(keys))
		}
		off := 0
		for i, k := range keys {
			if found[i].key != k {
				t.Fatalf("record %d: key %s, want %s", i, found[i].key.Short(), k.Short())
			}
			got, err := checkPackRecord(pack[off:off+int(found[i].size)], k)
			if err != nil || !bytes.Equal(got, body) {
				t.Fatalf("record %d: %v", i, err)
			}
			off += int(found[i].size)
		}
		if off != n {
			t.Fatalf("records end at %d, want %d", off, n)
		}

		// The same through a file, as a name of a pack is read: each key
		// yields its first record, and a key with none is bad. The file
		// is then rewritten in place with the records in the other order
		// and another body for the second key: a new pack on the same
		// inode, which the readers' index (by device and inode) must not
		// answer for.
		path := filepath.Join(t.TempDir(), "pack")
		absent := ComputeKey([]Component{{Kind: "command", Value: "absent"}})
		body2 := append(slices.Clip(body), '!')
		for _, recs := range [][]struct {
			key  ActionID
			body []byte
		}{{{keys[0], body}, {keys[1], body}}, {{keys[1], body2}, {keys[0], body}}} {
			file := []byte(packHeader)
			for _, r := range recs {
				file = appendPackRecord(file, r.key, r.body)
			}
			if err := os.WriteFile(path, append(file, tail...), 0o644); err != nil {
				t.Fatal(err)
			}
			for _, k := range append(keys, absent) {
				var want []byte // the first record's body
				found := false
				for _, r := range recs {
					if r.key == k {
						want, found = r.body, true
						break
					}
				}
				got, wantBad := []byte(nil), !found || bytes.HasPrefix(want, []byte(packHeader))
				fh, err := os.Open(path)
				if err != nil {
					t.Fatal(err)
				}
				b, _, bad, err := ReadEntryFile(fh, k)
				fh.Close()
				if err != nil {
					t.Fatalf("readEntryFile: %v", err)
				}
				if bad == nil {
					got = b
				}
				switch {
				case wantBad && bad == nil:
					t.Fatalf("key %s: got a record of %d bytes, want none", k.Short(), len(got))
				case !wantBad && !bytes.Equal(got, want):
					t.Fatalf("key %s: got %q (%v), want its first record's body %q", k.Short(), got, bad, want)
				}
			}
		}
	})
}
