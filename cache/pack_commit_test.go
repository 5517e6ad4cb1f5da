package cache

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/cairn-run/cairn/internal/fsx"
)

// gatedFS is an fsx.FS that logs, in order, the writes and fsyncs of pack
// files and the links made from them, and holds the first pack fsync
// until the test releases it (then failing it with failFirst, if set): a
// second put then appends its record while the first put's fsync is
// under way, the case group commit must get right.
type gatedFS struct {
	fsx.FS
	failFirst error

	started chan struct{} // closed when the first pack fsync begins
	release chan struct{} // the first pack fsync waits for it
	during  chan struct{} // one send per pack write made after started

	mu    sync.Mutex
	syncs int
	log   []string // "write", "sync+", "sync-" (done), "sync!" (failed), "link <key>"
}

func newGatedFS(failFirst error) *gatedFS {
	return &gatedFS{FS: fsx.OS{}, failFirst: failFirst, started: make(chan struct{}),
		release: make(chan struct{}), during: make(chan struct{}, 16)}
}

func isPackTemp(path string) bool { return strings.HasPrefix(filepath.Base(path), "pack-") }

func (g *gatedFS) add(ev string) {
	g.mu.Lock()
	g.log = append(g.log, ev)
	g.mu.Unlock()
}

func (g *gatedFS) events() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.log)
}

func (g *gatedFS) OpenFile(name string, flag int, perm fs.FileMode) (fsx.File, error) {
	f, err := g.FS.OpenFile(name, flag, perm)
	if err != nil || !isPackTemp(name) {
		return f, err
	}
	return &gatedFile{File: f, g: g}, nil
}

func (g *gatedFS) Link(oldname, newname string) error {
	err := g.FS.Link(oldname, newname)
	if err == nil && isPackTemp(oldname) {
		g.add("link " + filepath.Base(newname))
	}
	return err
}

type gatedFile struct {
	fsx.File
	g *gatedFS
}

func (f *gatedFile) Write(p []byte) (int, error) {
	n, err := f.File.Write(p)
	f.g.add("write")
	f.g.mu.Lock()
	after := f.g.syncs > 0
	f.g.mu.Unlock()
	if after {
		f.g.during <- struct{}{}
	}
	return n, err
}

func (f *gatedFile) Sync() error {
	f.g.mu.Lock()
	first := f.g.syncs == 0
	f.g.syncs++
	f.g.log = append(f.g.log, "sync+")
	f.g.mu.Unlock()
	if first {
		close(f.g.started)
		<-f.g.release
		if f.g.failFirst != nil {
			f.g.add("sync!")
			return &fs.PathError{Op: "sync", Path: f.Name(), Err: f.g.failFirst}
		}
	}
	err := f.File.Sync()
	if err != nil {
		f.g.add("sync!")
	} else {
		f.g.add("sync-")
	}
	return err
}

// putDuringFsync puts eA, and eB while eA's pack fsync is under way (eB's
// record is appended after that fsync began), and returns both errors.
func putDuringFsync(t *testing.T, g *gatedFS, c *Dir, eA, eB *Entry) (errA, errB error) {
	t.Helper()
	doneA, doneB := make(chan error, 1), make(chan error, 1)
	go func() { doneA <- c.PutEntry(eA) }()
	<-g.started
	go func() { doneB <- c.PutEntry(eB) }()
	<-g.during // eB's record is in the pack, after the fsync began
	close(g.release)
	return <-doneA, <-doneB
}

// TestPackGroupCommit is a negative control for group commit (FORMAT.md,
// "Packed entries", step 2): a put whose record was appended while
// another put's fsync was under way must not be published on that fsync,
// which need not cover it, but only after one that began after its
// append; and after a failed fsync nothing more is linked from the pack.
// TestPowerLoss replays one goroutine and cannot see either. It swaps the
// process's file layer: not parallel.
func TestPackGroupCommit(t *testing.T) {
	t.Run("append during fsync", func(t *testing.T) {
		g := newGatedFS(nil)
		restore := fsx.Set(g)
		defer restore()
		c := newDir(t)
		defer c.Close()
		d, err := c.PutBytes([]byte("out"))
		if err != nil {
			t.Fatal(err)
		}
		eA, eB := testEntry("commit A", d), testEntry("commit B", d)
		errA, errB := putDuringFsync(t, g, c, eA, eB)
		if errA != nil || errB != nil {
			t.Fatalf("puts: %v, %v", errA, errB)
		}
		// Each name must be linked only after an fsync that began after
		// its record's write and completed: A's record is the second
		// write (after the pack's header line), B's the third.
		ev := g.events()
		for _, c := range []struct {
			key   ActionID
			write int // which pack write holds its record, from 1
		}{{eA.Key, 2}, {eB.Key, 3}} {
			writes, began, covered := 0, false, false
			for _, e := range ev {
				switch {
				case e == "write":
					writes++
				case e == "sync+" && writes >= c.write:
					began = true
				case e == "sync-" && began:
					covered = true
				case e == "sync!":
					began = false
				case e == "link "+c.key.String():
					if !covered {
						t.Errorf("%s linked with no completed fsync begun after its record was written: %q", c.key.Short(), ev)
					}
				}
			}
		}
		for _, e := range []*Entry{eA, eB} {
			if _, err := c.GetEntry(e.Key); err != nil {
				t.Errorf("GetEntry: %v", err)
			}
		}
	})
	t.Run("failed fsync", func(t *testing.T) {
		g := newGatedFS(syscall.EIO)
		restore := fsx.Set(g)
		defer restore()
		c := newDir(t)
		d, err := c.PutBytes([]byte("out"))
		if err != nil {
			t.Fatal(err)
		}
		eA, eB := testEntry("failed A", d), testEntry("failed B", d)
		errA, errB := putDuringFsync(t, g, c, eA, eB)
		if errA != nil || errB != nil {
			t.Fatalf("puts: %v, %v (a failed pack fsync must fall back to files)", errA, errB)
		}
		for _, e := range g.events() {
			if strings.HasPrefix(e, "link ") {
				t.Errorf("a name was linked to a pack whose fsync failed: %q", g.events())
				break
			}
		}
		for _, e := range []*Entry{eA, eB} {
			if _, err := c.GetEntry(e.Key); err != nil {
				t.Errorf("GetEntry: %v", err)
			}
			b, err := os.ReadFile(c.entryPath(e.Key))
			if err != nil {
				t.Fatal(err)
			}
			if bytes.HasPrefix(b, []byte(packHeader)) {
				t.Errorf("%s is a name of the pack whose fsync failed", e.Key.Short())
			}
		}
		assertNoTemps(t, c)
	})
}

// TestPackStaleIndex: the readers' index of a pack is keyed by device and
// inode, which a later pack may reuse once every name of the earlier one
// is gone. An index left from that earlier pack (offsets of other
// records, a scan position past the new pack's end) must cost a rescan,
// never a good name quarantined as corrupt.
func TestPackStaleIndex(t *testing.T) {
	t.Parallel()
	c := newDir(t)
	es := packedEntries(t, c, "stale", 3)
	c.Close()
	st, err := os.Stat(c.entryPath(es[0].Key))
	if err != nil {
		t.Fatal(err)
	}
	dev, ino, _, ok := FileID(st)
	if !ok {
		t.Skip("no inode numbers on this platform")
	}
	// An index left from an earlier pack on this inode, planted before
	// each read: es[1] where es[0]'s record is (another key's record),
	// and a scan position past the end (es[0], es[2]: "not in the pack").
	plant := func() {
		stale := &packIndex{
			locs:    map[ActionID]packLoc{es[1].Key: {off: int64(len(packHeader)), size: recordSize(t, es[0])}},
			scanned: st.Size() + 4096,
		}
		packIndexes.mu.Lock()
		if packIndexes.m == nil {
			packIndexes.m = make(map[packID]*packIndex)
		}
		packIndexes.m[packID{dev, ino}] = stale
		packIndexes.mu.Unlock()
	}
	for _, e := range es {
		plant()
		if _, err := c.GetEntry(e.Key); err != nil {
			t.Errorf("GetEntry %s through a stale index: %v", e.Key.Short(), err)
		}
		if _, err := os.Lstat(c.entryPath(e.Key)); err != nil {
			t.Errorf("name of %s: %v", e.Key.Short(), err)
		}
	}
	if _, err := os.Stat(filepath.Join(c.Root(), QuarantineDir)); err == nil {
		if des, _ := os.ReadDir(filepath.Join(c.Root(), QuarantineDir)); len(des) > 0 {
			t.Errorf("quarantine/ holds %d files after reads through a stale index", len(des))
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
}
