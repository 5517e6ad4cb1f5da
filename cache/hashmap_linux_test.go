package cache

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"os"
	"path/filepath"
	"testing"

	"github.com/cairn-run/cairn/cache/maphash"
	"github.com/cairn-run/cairn/internal/hashmeter"
)

// withSmallMapping makes files of four windows and more hashed through
// mappings of small windows (16 KiB, or a page where pages are larger:
// a mapping's offset is a multiple of the page size), so that small test
// files cross window boundaries. It returns the window.
func withSmallMapping(t *testing.T) int {
	t.Helper()
	minWas, windowWas := maphash.MinSize, maphash.Window
	w := max(16<<10, os.Getpagesize())
	maphash.MinSize, maphash.Window = 4*int64(w), int64(w)
	t.Cleanup(func() { maphash.MinSize, maphash.Window = minWas, windowWas })
	return w
}

func TestHashFileMappedMatchesRead(t *testing.T) {
	w, page := withSmallMapping(t), os.Getpagesize()
	dir := t.TempDir()
	for _, size := range []int{0, 1, 4*w - 1, 4 * w, 4*w + 1, 5 * w, 6*w + page - 1, 64 * w} {
		b := make([]byte, size)
		rand.Read(b)
		p := filepath.Join(dir, "f")
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		mapped := 0
		maphash.TestHookMapped = func() { mapped++ }
		d, n, err := HashFile(p)
		maphash.TestHookMapped = nil
		if err != nil {
			t.Fatal(err)
		}
		if want := Digest(sha256.Sum256(b)); d != want || n != int64(size) {
			t.Errorf("size %d: HashFile = %s, %d; want %s, %d", size, d.Short(), n, want.Short(), size)
		}
		wantMapped := 0
		if int64(size) >= maphash.MinSize {
			wantMapped = int((int64(size) + maphash.Window - 1) / maphash.Window)
		}
		if mapped != wantMapped {
			t.Errorf("size %d: %d windows mapped, want %d", size, mapped, wantMapped)
		}
	}
}

// A file cut short while mapped (its last pages gone: SIGBUS on reading
// them) is hashed by reading it instead, as it now is; cairn does not
// crash.
func TestHashFileShrunkWhileMapped(t *testing.T) {
	w := withSmallMapping(t)
	p := filepath.Join(t.TempDir(), "f")
	b := make([]byte, 16*w)
	rand.Read(b)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	keep := int64(w + os.Getpagesize())
	cut := false
	maphash.TestHookMapped = func() {
		if !cut {
			cut = true
			if err := os.Truncate(p, keep); err != nil {
				t.Error(err)
			}
		}
	}
	defer func() { maphash.TestHookMapped = nil }()
	d, n, err := HashFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if want := Digest(sha256.Sum256(b[:keep])); d != want || n != keep {
		t.Errorf("HashFile = %s, %d; want the digest of the first %d bytes, %s", d.Short(), n, keep, want.Short())
	}
}

type noSink struct{}

func (noSink) HashProgress(string, hashmeter.Progress) {}

// A large file hashed under a meter counts its bytes window by window,
// not only once it is done.
func TestHashMappedCountsWindows(t *testing.T) {
	w := withSmallMapping(t)
	const size = 20 << 20 // large enough to be watched
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, make([]byte, size), 0o644); err != nil {
		t.Fatal(err)
	}
	m := hashmeter.Start(noSink{}, "scan", 1, size)
	defer m.Done()
	ctx := m.Watch(context.Background(), size)
	var seen []int64
	maphash.TestHookMapped = func() { seen = append(seen, m.Progress().BytesDone) }
	defer func() { maphash.TestHookMapped = nil }()
	if _, _, err := HashFileContext(ctx, p); err != nil {
		t.Fatal(err)
	}
	m.Add(ctx, size)
	if len(seen) != size/w {
		t.Fatalf("%d windows mapped, want %d", len(seen), size/w)
	}
	for i, n := range seen {
		if n != int64(i*w) {
			t.Fatalf("bytes done when window %d was mapped: %d, want %d", i, n, i*w)
		}
	}
	if got := m.Progress(); got.BytesDone != size || got.FilesDone != 1 {
		t.Errorf("done: %d files, %d bytes; want 1, %d", got.FilesDone, got.BytesDone, size)
	}
}
