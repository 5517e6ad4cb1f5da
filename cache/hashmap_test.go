package cache

import (
	"crypto/rand"
	"crypto/sha256"
	"os"
	"path/filepath"
	"testing"
)

// withSmallMapping makes files of 64 KiB and more hashed through mappings
// of 16 KiB windows, so that small test files cross window boundaries.
func withSmallMapping(t *testing.T) {
	t.Helper()
	minWas, windowWas := mmapHashMin, mmapHashWindow
	mmapHashMin, mmapHashWindow = 64<<10, 16<<10
	t.Cleanup(func() { mmapHashMin, mmapHashWindow = minWas, windowWas })
}

func TestHashFileMappedMatchesRead(t *testing.T) {
	withSmallMapping(t)
	dir := t.TempDir()
	for _, size := range []int{0, 1, 64<<10 - 1, 64 << 10, 64<<10 + 1, 80 << 10, 96<<10 + 4095, 1 << 20} {
		b := make([]byte, size)
		rand.Read(b)
		p := filepath.Join(dir, "f")
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		mapped := 0
		testHookMapped = func() { mapped++ }
		d, n, err := HashFile(p)
		testHookMapped = nil
		if err != nil {
			t.Fatal(err)
		}
		if want := Digest(sha256.Sum256(b)); d != want || n != int64(size) {
			t.Errorf("size %d: HashFile = %s, %d; want %s, %d", size, d.Short(), n, want.Short(), size)
		}
		wantMapped := 0
		if int64(size) >= mmapHashMin {
			wantMapped = int((int64(size) + mmapHashWindow - 1) / mmapHashWindow)
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
	withSmallMapping(t)
	p := filepath.Join(t.TempDir(), "f")
	b := make([]byte, 256<<10)
	rand.Read(b)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	const keep = 20 << 10
	cut := false
	testHookMapped = func() {
		if !cut {
			cut = true
			if err := os.Truncate(p, keep); err != nil {
				t.Error(err)
			}
		}
	}
	defer func() { testHookMapped = nil }()
	d, n, err := HashFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if want := Digest(sha256.Sum256(b[:keep])); d != want || n != keep {
		t.Errorf("HashFile = %s, %d; want the digest of the first %d bytes, %s", d.Short(), n, keep, want.Short())
	}
}
