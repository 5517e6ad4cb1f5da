package upkeep

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairn-run/cairn/cache"
	"github.com/gofrs/flock"
	"github.com/google/go-cmp/cmp"
)

// The fixtures below plant objects straight into the layout, without the
// write protocol's fsyncs, so tests can build caches of thousands of
// objects quickly. They produce exactly what a put would.

// plantBlob stores content as blob (compressed: as one zstd frame) with
// modification time mtime (zero: now), and returns its digest.
func plantBlob(t testing.TB, c *cache.Dir, content []byte, compressed bool, mtime time.Time) cache.Digest {
	t.Helper()
	d := cache.HashBytes(content)
	b := content
	if compressed {
		b = blockEncoder().EncodeAll(content, nil)
	}
	plantFile(t, c, blobPath(c, d, compressed), b, mtime)
	return d
}

// plantFile writes an object file with the mode a put gives it.
func plantFile(t testing.TB, c *cache.Dir, p string, b []byte, mtime time.Time) {
	t.Helper()
	if _, err := c.Mkdir(filepath.Dir(p)); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, objectMode(c)); err != nil {
		t.Fatal(err)
	}
	if !mtime.IsZero() {
		if err := os.Chtimes(p, mtime, mtime); err != nil {
			t.Fatal(err)
		}
	}
}

// testEntry returns a valid entry named by n whose outputs are files with
// the given blobs.
func testEntry(n string, outs ...cache.Digest) *cache.Entry {
	comps := []cache.Component{{Kind: "command", Value: n}}
	e := &cache.Entry{Format: cache.EntryFormat, Key: cache.ComputeKey(comps), Phase: "p", Components: comps}
	for i, d := range outs {
		e.Outputs = append(e.Outputs, cache.OutputFile{Path: fmt.Sprintf("out%d", i), Type: cache.TypeFile, Mode: 0o644, Digest: d})
	}
	return e
}

// plantEntry stores e with modification time mtime.
func plantEntry(t testing.TB, c *cache.Dir, e *cache.Entry, mtime time.Time) string {
	return plantSignedEntry(t, c, nil, e, mtime)
}

// plantSignedEntry is plantEntry signing e with key (nil: unsigned).
func plantSignedEntry(t testing.TB, c *cache.Dir, key []byte, e *cache.Entry, mtime time.Time) string {
	t.Helper()
	b, err := cache.EncodeEntry(e)
	if err != nil {
		t.Fatal(err)
	}
	if key != nil {
		b = sign(key, b)
	}
	p := entryPath(c, e.Key)
	plantFile(t, c, p, b, mtime)
	return p
}

// plantSession writes a session file started at start with the given
// lines after the header, last written at mtime.
func plantSession(t testing.TB, c *cache.Dir, start time.Time, pid int, lines []string, mtime time.Time) string {
	t.Helper()
	dir := filepath.Join(c.Root(), sessionsDir)
	if _, err := c.Mkdir(dir); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, fmt.Sprintf("%d-%d-%016x", start.UnixNano(), pid, pid))
	body := sessionMagic + "\n" + strings.Join(lines, "\n") + "\n"
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(p, mtime, mtime); err != nil {
		t.Fatal(err)
	}
	return p
}

// plantTemp writes a file in tmp/ last written at mtime.
func plantTemp(t testing.TB, c *cache.Dir, name string, mtime time.Time) string {
	t.Helper()
	p := filepath.Join(c.Root(), cache.TempDir, name)
	if err := os.WriteFile(p, []byte("partial"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(p, mtime, mtime); err != nil {
		t.Fatal(err)
	}
	return p
}

// removedIDs lists a report's removals as "kind reason id[:8]".
func removedIDs(rep *GCReport) []string {
	var out []string
	for _, it := range rep.Removed {
		id := it.ID
		if it.Kind == "entry" || it.Kind == "blob" {
			id = id[:8]
		}
		out = append(out, it.Kind+" "+it.Reason+" "+id)
	}
	return out
}

func short(s fmt.Stringer) string { return s.String()[:8] }

// blobsByDigest sorts the blob lines of a removedIDs list, as GC removes
// blobs in digest order.
func blobsByDigest(ids []string) []string {
	out := append([]string(nil), ids...)
	sort.SliceStable(out, func(i, j int) bool {
		bi, bj := strings.HasPrefix(out[i], "blob "), strings.HasPrefix(out[j], "blob ")
		return bi && bj && out[i] < out[j]
	})
	return out
}

// lruFixture is a cache with three entries used 3, 2 and 1 hours ago, each
// with its own 100-byte blob stored 5 hours ago.
type lruFixture struct {
	c       *cache.Dir
	now     time.Time
	entries []*cache.Entry // oldest first
	blobs   []cache.Digest
}

func newLRUFixture(t *testing.T) *lruFixture {
	t.Helper()
	f := &lruFixture{c: newDir(t), now: time.Now().Truncate(time.Second)}
	for i, age := range []time.Duration{3 * time.Hour, 2 * time.Hour, time.Hour} {
		d := plantBlob(t, f.c, randomBytes(t, 100+i), false, f.now.Add(-5*time.Hour))
		e := testEntry(fmt.Sprint("lru", i), d)
		plantEntry(t, f.c, e, f.now.Add(-age))
		f.entries = append(f.entries, e)
		f.blobs = append(f.blobs, d)
	}
	return f
}

func (f *lruFixture) entrySize(t *testing.T) int64 {
	st, err := os.Stat(entryPath(f.c, f.entries[0].Key))
	if err != nil {
		t.Fatal(err)
	}
	return st.Size()
}

func (f *lruFixture) clock() func() time.Time { return func() time.Time { return f.now } }

func TestGCEvictsLeastRecentlyUsed(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		opts     func(f *lruFixture, entrySize int64) GCOptions
		sessions func(t *testing.T, f *lruFixture)
		want     func(f *lruFixture) []string
	}{
		"max size keeps the newest": {
			opts: func(f *lruFixture, es int64) GCOptions { return GCOptions{MaxSize: es + 102} },
			want: func(f *lruFixture) []string {
				return []string{
					"entry max-size " + short(f.entries[0].Key), "entry max-size " + short(f.entries[1].Key),
					"blob unreferenced " + short(f.blobs[0]), "blob unreferenced " + short(f.blobs[1]),
				}
			},
		},
		"a session hit makes the oldest the newest": {
			opts: func(f *lruFixture, es int64) GCOptions { return GCOptions{MaxSize: es + 102} },
			sessions: func(t *testing.T, f *lruFixture) {
				plantSession(t, f.c, f.now.Add(-time.Hour), 1, []string{"label run", "hit " + f.entries[0].Key.String(), "end"}, f.now.Add(-30*time.Minute))
			},
			want: func(f *lruFixture) []string {
				return []string{
					"entry max-size " + short(f.entries[1].Key), "entry max-size " + short(f.entries[2].Key),
					"blob unreferenced " + short(f.blobs[1]), "blob unreferenced " + short(f.blobs[2]),
				}
			},
		},
		"a miss is not a use": {
			opts: func(f *lruFixture, es int64) GCOptions { return GCOptions{MaxSize: es + 102} },
			sessions: func(t *testing.T, f *lruFixture) {
				plantSession(t, f.c, f.now.Add(-time.Hour), 1, []string{"miss " + f.entries[0].Key.String(), "end"}, f.now.Add(-30*time.Minute))
			},
			want: func(f *lruFixture) []string {
				return []string{
					"entry max-size " + short(f.entries[0].Key), "entry max-size " + short(f.entries[1].Key),
					"blob unreferenced " + short(f.blobs[0]), "blob unreferenced " + short(f.blobs[1]),
				}
			},
		},
		"max age": {
			opts: func(f *lruFixture, es int64) GCOptions { return GCOptions{MaxAge: 150 * time.Minute} },
			want: func(f *lruFixture) []string {
				return []string{"entry max-age " + short(f.entries[0].Key), "blob unreferenced " + short(f.blobs[0])}
			},
		},
		"big enough: nothing": {
			opts: func(f *lruFixture, es int64) GCOptions { return GCOptions{MaxSize: 1 << 20, MaxAge: 24 * time.Hour} },
			want: func(f *lruFixture) []string { return nil },
		},
		"live session protects": {
			opts: func(f *lruFixture, es int64) GCOptions { return GCOptions{MaxSize: 1} },
			sessions: func(t *testing.T, f *lruFixture) {
				plantSession(t, f.c, f.now.Add(-time.Hour), 1, []string{"put " + f.entries[0].Key.String()}, f.now.Add(-time.Minute))
				// Dead (no end line, silent for longer than SessionTTL):
				// its hit counts as a use 11 minutes ago, not as a
				// protection.
				plantSession(t, f.c, f.now.Add(-time.Hour), 2, []string{"hit " + f.entries[1].Key.String()}, f.now.Add(-SessionTTL-time.Minute))
			},
			want: func(f *lruFixture) []string {
				return []string{
					"entry max-size " + short(f.entries[2].Key), "entry max-size " + short(f.entries[1].Key),
					"blob unreferenced " + short(f.blobs[1]), "blob unreferenced " + short(f.blobs[2]),
				}
			},
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			for _, dry := range []bool{true, false} {
				f := newLRUFixture(t)
				if tt.sessions != nil {
					tt.sessions(t, f)
				}
				before := treeOf(t, f.c.Root())
				opts := tt.opts(f, f.entrySize(t))
				opts.Now, opts.DryRun = f.clock(), dry
				rep, err := GC(f.c, opts)
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(blobsByDigest(tt.want(f)), removedIDs(rep)); diff != "" {
					t.Errorf("DryRun=%v: removed (-want +got):\n%s", dry, diff)
				}
				after := treeOf(t, f.c.Root())
				if dry {
					if diff := cmp.Diff(before, after); diff != "" {
						t.Errorf("dry run changed the cache (-before +after):\n%s", diff)
					}
					continue
				}
				for _, it := range rep.Removed {
					if _, err := os.Lstat(it.Path); !errors.Is(err, os.ErrNotExist) {
						t.Errorf("%s %s still there: %v", it.Kind, it.ID, err)
					}
				}
				if rep.BytesAfter != rep.BytesBefore-rep.BytesRemoved || rep.EntriesKept != 3-rep.EntriesRemoved {
					t.Errorf("report does not add up: %+v", rep)
				}
				// What is left is usable.
				for _, e := range f.entries {
					if _, err := f.c.GetEntry(e.Key); err != nil && !errors.Is(err, cache.ErrNotFound) || errors.Is(err, cache.ErrCorrupt) {
						t.Errorf("GetEntry after GC = %v, want a hit or a miss", err)
					}
				}
			}
		})
	}
}

// treeOf lists every path under root with its size, except the gc lock.
func treeOf(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		st, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if !strings.HasPrefix(rel, locksDir) {
			out = append(out, fmt.Sprintf("%s %d", rel, st.Size()))
		}
		return nil
	})
	sort.Strings(out)
	return out
}

func TestGCBlobs(t *testing.T) {
	t.Parallel()
	c := newDir(t)
	now := time.Now()
	old := now.Add(-2 * time.Hour)
	shared := plantBlob(t, c, []byte("shared by two entries"), false, old)
	own := plantBlob(t, c, []byte("only the old entry's"), false, old)
	youngOrphan := plantBlob(t, c, []byte("put a minute ago, entry not written yet"), false, now.Add(-time.Minute))
	oldOrphan := plantBlob(t, c, []byte("left by a crash"), true, old)
	newer := plantBlob(t, c, []byte("referenced by a newer cairn's entry"), false, old)
	olde := testEntry("old", shared, own)
	plantEntry(t, c, olde, old)
	plantEntry(t, c, testEntry("new", shared), now)
	// An entry in a format this cairn cannot read: its blobs stay.
	future := cache.ComputeKey([]cache.Component{{Kind: "future", Value: "x"}})
	plantFile(t, c, entryPath(c, future), []byte("cairn-ac 2\n{\"blobs\":[\""+newer.String()+"\"]}\n"), now)

	rep, err := GC(c, GCOptions{MaxAge: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"entry max-age " + short(olde.Key), "blob unreferenced " + short(oldOrphan), "blob unreferenced " + short(own)}
	sort.Strings(want[1:])
	if diff := cmp.Diff(want, removedIDs(rep)); diff != "" {
		t.Errorf("removed (-want +got):\n%s", diff)
	}
	for _, d := range []cache.Digest{shared, youngOrphan, newer} {
		if !c.HasBlob(d) {
			t.Errorf("blob %s removed", d.Short())
		}
	}
	if rep.BlobsRemoved != 2 || rep.BlobsKept != 3 || rep.EntriesKept != 2 {
		t.Errorf("report: %d blobs removed, %d kept, %d entries kept; want 2, 3, 2", rep.BlobsRemoved, rep.BlobsKept, rep.EntriesKept)
	}
}

func TestGCTempAndSessionFiles(t *testing.T) {
	t.Parallel()
	c := newDir(t)
	now := time.Now()
	young := plantTemp(t, c, "blob-young", now.Add(-time.Minute))
	old := plantTemp(t, c, "blob-old", now.Add(-2*time.Hour))
	nfs := plantTemp(t, c, ".nfs000000000001", now.Add(-48*time.Hour))
	d := plantBlob(t, c, []byte("x"), false, now.Add(-48*time.Hour))
	shardNFS := filepath.Join(filepath.Dir(blobPath(c, d, false)), ".nfs000000000002")
	plantFile(t, c, shardNFS, []byte("open elsewhere"), now.Add(-48*time.Hour))
	week := SessionKeep + time.Hour
	ended := plantSession(t, c, now.Add(-week), 1, []string{"end"}, now.Add(-week))
	dead := plantSession(t, c, now.Add(-week), 2, nil, now.Add(-week))
	recent := plantSession(t, c, now.Add(-time.Hour), 3, []string{"end"}, now.Add(-time.Hour))
	live := plantSession(t, c, now.Add(-week), 4, nil, now.Add(-time.Minute)) // a very long run

	rep, err := GC(c, GCOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"blob unreferenced " + short(d),
		"temp old-temp blob-old",
		"session old-session " + filepath.Base(dead),
		"session old-session " + filepath.Base(ended),
	}
	sort.Strings(want[2:])
	if diff := cmp.Diff(want, removedIDs(rep)); diff != "" {
		t.Errorf("removed (-want +got):\n%s", diff)
	}
	for _, p := range []string{young, nfs, shardNFS, recent, live} {
		if _, err := os.Lstat(p); err != nil {
			t.Errorf("%s: %v, want it kept", filepath.Base(p), err)
		}
	}
	for _, p := range []string{old, ended, dead} {
		if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s: %v, want it removed", filepath.Base(p), err)
		}
	}
}

func TestGCLocked(t *testing.T) {
	t.Parallel()
	c := newDir(t)
	if _, err := GC(c, GCOptions{}); err != nil { // creates the lock file
		t.Fatal(err)
	}
	other := flock.New(filepath.Join(c.Root(), locksDir, gcLockName), flock.SetFlag(os.O_RDWR))
	if ok, err := other.TryLock(); !ok || err != nil {
		t.Fatalf("TryLock = %v, %v", ok, err)
	}
	defer other.Unlock()
	_, err := GC(c, GCOptions{})
	if !errors.Is(err, ErrGCRunning) || !strings.Contains(err.Error(), "wait for it") {
		t.Errorf("GC while locked = %v, want ErrGCRunning saying what to do", err)
	}
	if _, err := GC(c, GCOptions{DryRun: true}); err != nil {
		t.Errorf("dry run while locked = %v, want it to run: it takes no lock", err)
	}
	other.Unlock()
	if _, err := GC(c, GCOptions{}); err != nil {
		t.Errorf("GC after unlock = %v", err)
	}
}

// TestGCKeepsRefreshedBlob covers a put that finds its blob already present
// (old and unreferenced) just before GC would remove it: the put refreshes
// the blob, and GC's last look before removing spares it.
func TestGCKeepsRefreshedBlob(t *testing.T) {
	t.Parallel()
	c := newDir(t)
	content := []byte("stored long ago, about to be used again")
	d := plantBlob(t, c, content, false, time.Now().Add(-2*time.Hour))
	if _, err := c.PutBytes(content); err != nil {
		t.Fatal(err)
	}
	rep, err := GC(c, GCOptions{MaxSize: 1})
	if err != nil {
		t.Fatal(err)
	}
	if !c.HasBlob(d) || rep.BlobsRemoved != 0 {
		t.Errorf("GC removed a blob a put just found present (%d removed)", rep.BlobsRemoved)
	}
}

func TestGCSameObject(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	os.WriteFile(p, []byte("a"), 0o644)
	st1, _ := os.Lstat(p)
	os.Chtimes(p, time.Time{}, st1.ModTime().Add(time.Second))
	st2, _ := os.Lstat(p)
	os.Rename(p, p+".old") // keep the inode in use, so the new file gets another
	os.WriteFile(p, []byte("a"), 0o644)
	os.Chtimes(p, time.Time{}, st1.ModTime())
	st3, _ := os.Lstat(p)
	tests := map[string]struct {
		now  os.FileInfo
		want bool
	}{
		"unchanged":   {st1, true},
		"refreshed":   {st2, false},
		"republished": {st3, false},
	}
	for name, tt := range tests {
		if got := sameObject(tt.now, st1); got != tt.want {
			t.Errorf("%s: sameObject = %v, want %v", name, got, tt.want)
		}
	}
}

// TestGCRacingReaders is T7: GC with a tiny size limit and the default
// grace period runs in a loop while three writers put, get and restore,
// and Verify runs too. Half the entries written are aged at once (entry and
// blob dated two hours back), as if stored long ago, so GC keeps evicting
// them and their blobs while they are read; every fourth put stores
// content an aged blob already holds, racing GC for that blob. A GC race
// must look like a miss: never a corrupt object, never an error, never
// wrong bytes, never a problem reported by Verify. Entries a live session
// used before a GC started are never removed by it.
func TestGCRacingReaders(t *testing.T) {
	t.Parallel()
	c := newDir(t)
	const (
		writers = 3
		maxSize = 4 << 10
	)
	// Run at least minRun, and on until enough was put and evicted to
	// have exercised the race (on a loaded machine that takes longer),
	// but at most maxRun.
	const minRun, maxRun, minPuts, minEvicted = 2 * time.Second, 15 * time.Second, 40, 10
	var (
		stop                           atomic.Bool
		gcStarts                       atomic.Int64
		protected                      sync.Map // key → gcStarts when its use was recorded
		gcRuns, entriesEvicted         atomic.Int64
		blobsEvicted, overshoot        atomic.Int64
		getMisses, restoreMisses, puts atomic.Int64
		putMisses, hits, verifies      atomic.Int64
		dedups                         atomic.Int64
		mu                             sync.Mutex
		failures                       []string
	)
	fail := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		if len(failures) < 20 {
			failures = append(failures, fmt.Sprintf(format, args...))
		}
	}
	// Entries stored long ago, for the first GCs to evict while the
	// writers read them, however slowly the writers get going.
	long := time.Now().Add(-2 * time.Hour)
	var old []*cache.Entry
	for i := range 30 {
		e := testEntry(fmt.Sprint("old ", i), plantBlob(t, c, fmt.Appendf(nil, "old %d", i), i%2 == 0, long))
		plantEntry(t, c, e, long)
		old = append(old, e)
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		for !stop.Load() {
			idx := gcStarts.Add(1)
			rep, err := GC(c, GCOptions{MaxSize: maxSize})
			if err != nil {
				fail("GC: %v", err)
				continue
			}
			gcRuns.Add(1)
			entriesEvicted.Add(int64(rep.EntriesRemoved))
			blobsEvicted.Add(int64(rep.BlobsRemoved))
			if over := rep.BytesAfter - maxSize; over > overshoot.Load() {
				overshoot.Store(over)
			}
			for _, it := range rep.Removed {
				if v, ok := protected.Load(it.ID); ok && it.Kind == "entry" && idx > v.(int64) {
					fail("GC %d removed entry %s, used by a live session before GC %d", idx, it.ID[:12], v.(int64)+1)
				}
			}
			time.Sleep(time.Millisecond) // let the writers in on a starved machine
		}
	})
	wg.Go(func() {
		for !stop.Load() {
			time.Sleep(10 * time.Millisecond)
			rep, err := Verify(c, VerifyOptions{})
			if err != nil {
				fail("Verify: %v", err)
				continue
			}
			verifies.Add(1)
			for _, p := range rep.Problems {
				if p.Class == ProblemOrphanTemp && strings.HasPrefix(p.ID, "pack-") {
					// The writers age entries with Chtimes, which ages
					// their whole pack, temp name included: GC removes
					// that name, and the next put starts a new pack.
					continue
				}
				fail("Verify during GC: %s %s %s: %s", p.Class, p.Kind, p.ID, p.Cause)
			}
		}
	})
	// Writer 0 records its use in a session that stays live until every
	// GC has finished; the others run without one.
	live, err := StartSession(c, "writer 0")
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	var writing atomic.Bool
	writing.Store(true)
	began := time.Now()
	for w := range writers {
		wg.Go(func() {
			var sess *Session
			if w == 0 {
				sess = live
			}
			dst := filepath.Join(t.TempDir(), "out")
			stored := append([]*cache.Entry(nil), old[w*10:w*10+10]...)
			var aged [][]byte // contents of aged blobs
			for i := 0; writing.Load(); i++ {
				content := fmt.Appendf(nil, "writer %d content %d", w, i)
				reused := i%4 == 3 && len(aged) > 0
				if reused {
					content = aged[i%len(aged)]
					dedups.Add(1)
				}
				d, err := c.PutBytes(content)
				if err != nil {
					fail("PutBytes: %v", err)
					continue
				}
				e := testEntry(fmt.Sprintf("w%d-%d", w, i), d)
				switch err := c.PutEntry(e); {
				case errors.Is(err, cache.ErrNotFound):
					putMisses.Add(1) // GC took the blob first: the put is not cached
					continue
				case err != nil:
					fail("PutEntry: %v", err)
					continue
				}
				puts.Add(1)
				stored = append(stored, e)
				if i%2 == 0 && !reused && w != 0 {
					// Stored long ago, as far as GC can tell. Only
					// this writer has this content.
					os.Chtimes(entryPath(c, e.Key), long, long)
					if p, ok := statBlob(c, d); ok {
						os.Chtimes(p, long, long)
					}
					aged = append(aged, content)
				}
				if sess != nil {
					sess.Put(e.Key)
					started := gcStarts.Load()
					if _, err := c.GetEntry(e.Key); err == nil {
						protected.Store(e.Key.String(), started)
					}
				}
				want := stored[len(stored)-1-i%min(len(stored), 10)]
				got, err := c.GetEntry(want.Key)
				switch {
				case errors.Is(err, cache.ErrCorrupt):
					fail("GetEntry %s: %v", want.Key.Short(), err)
					continue
				case errors.Is(err, cache.ErrNotFound):
					getMisses.Add(1)
					continue
				case err != nil:
					fail("GetEntry %s: %v", want.Key.Short(), err)
					continue
				}
				if got.Outputs[0].Digest != want.Outputs[0].Digest {
					fail("GetEntry %s: wrong entry", want.Key.Short())
				}
				sess.Hit(want.Key)
				switch err := c.RestoreFile(got.Outputs[0].Digest, dst, 0o644); {
				case errors.Is(err, cache.ErrNotFound):
					restoreMisses.Add(1) // the entry was evicted after we read it
				case err != nil:
					fail("RestoreFile: %v", err)
				default:
					hits.Add(1)
					if b, _ := os.ReadFile(dst); cache.HashBytes(b) != want.Outputs[0].Digest {
						fail("RestoreFile %s: wrong bytes", want.Key.Short())
					}
				}
			}
		})
	}
	for {
		time.Sleep(20 * time.Millisecond)
		d := time.Since(began)
		if d >= maxRun || d >= minRun && puts.Load() >= minPuts && blobsEvicted.Load() >= minEvicted {
			break
		}
	}
	writing.Store(false)
	time.Sleep(50 * time.Millisecond) // a GC or two after the last put
	stop.Store(true)
	wg.Wait()
	t.Logf("T7 (%v): %d GCs and %d verifies racing %d writers: %d puts (%d reusing an aged blob), %d hits; evicted %d entries and %d blobs; misses caused by GC: %d entries, %d restores, %d puts whose blob went first; failures %d; size overshoot above %d bytes: %d (live session and grace period)",
		time.Since(began).Round(time.Millisecond), gcRuns.Load(), verifies.Load(), writers, puts.Load(), dedups.Load(), hits.Load(),
		entriesEvicted.Load(), blobsEvicted.Load(), getMisses.Load(), restoreMisses.Load(), putMisses.Load(), len(failures), maxSize, overshoot.Load())
	for _, f := range failures {
		t.Error(f)
	}
	if gcRuns.Load() == 0 || entriesEvicted.Load() == 0 || blobsEvicted.Load() == 0 {
		t.Errorf("GC ran %d times and evicted %d entries and %d blobs: the race was not exercised", gcRuns.Load(), entriesEvicted.Load(), blobsEvicted.Load())
	}
}

// The chunks of an entry's inputs are its blobs: GC keeps those of a live
// entry and removes those only an evicted entry had.
func TestGCChunks(t *testing.T) {
	t.Parallel()
	c := newDir(t)
	now := time.Now()
	old := now.Add(-2 * time.Hour)
	inputs := func(prefix string) []cache.Component {
		var comps []cache.Component
		for i := range 3000 {
			name := fmt.Sprintf("%s/f%05d", prefix, i)
			comps = append(comps, cache.Component{Kind: cache.ChunkKind, Name: name, Value: "-:" + cache.HashBytes([]byte(name)).String()})
		}
		return comps
	}
	store := func(c *cache.Dir, name, prefix string) *cache.Entry {
		e := testEntry(name)
		e.Components = append(e.Components, inputs(prefix)...)
		e.Key = cache.ComputeKey(e.Components)
		if err := c.PutEntry(e); err != nil {
			t.Fatal(err)
		}
		if len(e.Chunks) < 2 {
			t.Fatalf("entry %s stored with %d chunks", name, len(e.Chunks))
		}
		return e
	}
	other, err := cache.Open(c.Root()) // another process: its own pack
	if err != nil {
		t.Fatal(err)
	}
	live, gone := store(c, "live", "a"), store(other, "gone", "b")
	filepath.WalkDir(c.Root(), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			os.Chtimes(p, old, old)
		}
		return nil
	})
	os.Chtimes(entryPath(c, live.Key), now, now) // used since

	if _, err := GC(c, GCOptions{MaxAge: time.Hour}); err != nil {
		t.Fatal(err)
	}
	for _, ch := range live.Chunks {
		if !c.HasBlob(ch.Digest) {
			t.Errorf("chunk %s of the live entry removed", ch.Digest.Short())
		}
	}
	for _, ch := range gone.Chunks {
		if c.HasBlob(ch.Digest) {
			t.Errorf("chunk %s of the evicted entry kept", ch.Digest.Short())
		}
	}
	if _, err := c.GetEntry(live.Key); err != nil {
		t.Errorf("live entry after GC: %v", err)
	}
}
