package cache

import (
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// TestEntryStampDescriptor: the memo stamps entries through a descriptor
// of ac/ opened on first use by concurrent readers; Close closes it, and
// a Dir used after Close (or closed before any use) still answers from
// the memo by the entry's path, and still notices a replaced entry file.
func TestEntryStampDescriptor(t *testing.T) {
	t.Parallel()
	root, path := t.TempDir(), filepath.Join(t.TempDir(), "entries")
	c, m := memoDir(t, root, path, Options{})
	e := putSample(t, c)
	if err := c.PutEntry(e); err != nil {
		t.Fatal(err)
	}
	m.now = func() time.Time { return time.Now().Add(time.Second) }
	if _, err := c.GetEntryLean(e.Key); err != nil {
		t.Fatal(err)
	}
	if err := m.Save(); err != nil {
		t.Fatal(err)
	}

	c2, m2 := memoDir(t, root, path, Options{})
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if _, err := c2.GetEntryLean(e.Key); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if m2.Hits() != 8 || c2.acFD.fd < 0 {
		t.Fatalf("%d memo hits, ac/ descriptor %d; want 8 hits through an open descriptor", m2.Hits(), c2.acFD.fd)
	}
	if err := c2.Close(); err != nil {
		t.Fatal(err)
	}
	if c2.acFD.fd != -1 {
		t.Errorf("after Close, ac/ descriptor %d is still open", c2.acFD.fd)
	}
	if _, err := c2.GetEntryLean(e.Key); err != nil || m2.Hits() != 9 {
		t.Fatalf("after Close: GetEntry error %v, %d memo hits; want a hit", err, m2.Hits())
	}
	if c2.acFD.fd != -1 {
		t.Errorf("after Close, a lookup opened ac/ again (descriptor %d)", c2.acFD.fd)
	}

	// Closed before any use: answered by path, nothing opened.
	c3, m3 := memoDir(t, root, path, Options{})
	if err := c3.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := c3.GetEntryLean(e.Key); err != nil || m3.Hits() != 1 || c3.acFD.fd != -1 {
		t.Fatalf("closed before use: GetEntry error %v, %d memo hits, descriptor %d; want a hit by path", err, m3.Hits(), c3.acFD.fd)
	}

	// A replaced entry file (a new inode) is read again, by path after
	// Close as through the descriptor before.
	p := c2.entryPath(e.Key)
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p+".new", b, 0o444); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(p+".new", p); err != nil {
		t.Fatal(err)
	}
	c4, m4 := memoDir(t, root, path, Options{})
	for _, d := range []*Dir{c2, c4} {
		if _, err := d.GetEntryLean(e.Key); err != nil {
			t.Fatal(err)
		}
	}
	if m2.Hits() != 9 || m4.Hits() != 0 {
		t.Errorf("replaced entry file answered from the memo (hits after Close %d, through the descriptor %d)", m2.Hits()-9, m4.Hits())
	}
}
