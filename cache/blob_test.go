package cache

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var blobCases = map[string]struct {
	content    func(t testing.TB) []byte
	compressed bool // stored as .zst
}{
	"empty":               {func(testing.TB) []byte { return nil }, false},
	"small text":          {func(testing.TB) []byte { return textBytes(10 << 10) }, true},
	"text over sample":    {func(testing.TB) []byte { return textBytes(3*sampleSize + 17) }, true},
	"random 1MiB":         {func(t testing.TB) []byte { return randomBytes(t, 1<<20) }, false},
	"random exact sample": {func(t testing.TB) []byte { return randomBytes(t, sampleSize) }, false},
	"one byte":            {func(testing.TB) []byte { return []byte{7} }, false},
}

func TestPutReadRestore(t *testing.T) {
	t.Parallel()
	for name, tt := range blobCases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c := newDir(t)
			content := tt.content(t)
			want := HashBytes(content)

			d, n, err := c.PutFile(writeFile(t, content))
			if err != nil {
				t.Fatal(err)
			}
			if d != want || n != int64(len(content)) {
				t.Errorf("PutFile = %s, %d; want %s, %d", d.Short(), n, want.Short(), len(content))
			}
			if !c.HasBlob(d) {
				t.Error("HasBlob = false after PutFile")
			}
			if _, err := os.Stat(c.blobPath(d, tt.compressed)); err != nil {
				t.Errorf("stored form (compressed=%v): %v", tt.compressed, err)
			}
			if _, err := os.Stat(c.blobPath(d, !tt.compressed)); err == nil {
				t.Errorf("both raw and compressed copies stored")
			}

			got, err := c.ReadBlob(d)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, content) {
				t.Errorf("ReadBlob returned %d bytes that differ from the %d put", len(got), len(content))
			}

			dst := filepath.Join(t.TempDir(), "out")
			if err := c.RestoreFile(d, dst, 0o751); err != nil {
				t.Fatal(err)
			}
			restored, err := os.ReadFile(dst)
			if err != nil || !bytes.Equal(restored, content) {
				t.Errorf("restored %d bytes (%v), want the %d put", len(restored), err, len(content))
			}
			if st, _ := os.Stat(dst); st.Mode().Perm() != 0o751 {
				t.Errorf("restored mode %v, want 0751", st.Mode().Perm())
			}

			// PutReader and PutBytes agree, and store nothing new.
			if d2, n2, err := c.PutReader(bytes.NewReader(content)); err != nil || d2 != d || n2 != n {
				t.Errorf("PutReader = %s, %d, %v", d2.Short(), n2, err)
			}
			if d3, err := c.PutBytes(content); err != nil || d3 != d {
				t.Errorf("PutBytes = %s, %v", d3.Short(), err)
			}
			assertNoTemps(t, c)
		})
	}
}

func TestPutWriteOnce(t *testing.T) {
	t.Parallel()
	c := newDir(t)
	content := randomBytes(t, 1000)
	d, _, err := c.PutFile(writeFile(t, content))
	if err != nil {
		t.Fatal(err)
	}
	p := c.blobPath(d, false)
	before, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if before.Mode().Perm()&0o222 != 0 {
		t.Errorf("blob mode %v, want read-only", before.Mode())
	}
	if _, _, err := c.PutFile(writeFile(t, content)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.PutReader(bytes.NewReader(content)); err != nil {
		t.Fatal(err)
	}
	after, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if !os.SameFile(before, after) {
		t.Error("second put replaced the blob (different inode)")
	}
	if n := after.Sys().(*syscall.Stat_t).Nlink; n != 1 {
		t.Errorf("blob has %d links, want 1 (temp file left linked)", n)
	}
	assertNoTemps(t, c)
}

func TestPutRepairsDamagedCopy(t *testing.T) {
	t.Parallel()
	content := randomBytes(t, 5000)
	tests := map[string]func(p string) error{
		"truncated":  func(p string) error { return os.WriteFile(p, content[:100], 0o444) },
		"empty file": func(p string) error { return os.WriteFile(p, nil, 0o444) },
		"directory":  func(p string) error { return os.Mkdir(p, 0o755) },
		"symlink":    func(p string) error { return os.Symlink("/etc/passwd", p) },
	}
	for name, plant := range tests {
		for _, via := range []string{"PutBytes", "PutReader"} {
			t.Run(name+"/"+via, func(t *testing.T) {
				t.Parallel()
				c := newDir(t)
				d := HashBytes(content)
				p := c.blobPath(d, false)
				os.MkdirAll(filepath.Dir(p), 0o755)
				if err := plant(p); err != nil {
					t.Fatal(err)
				}
				var err error
				if via == "PutBytes" {
					_, err = c.PutBytes(content)
				} else {
					_, _, err = c.PutReader(bytes.NewReader(content))
				}
				if err != nil {
					t.Fatal(err)
				}
				got, err := c.ReadBlob(d)
				if err != nil || !bytes.Equal(got, content) {
					t.Fatalf("ReadBlob after repairing put = %d bytes, %v", len(got), err)
				}
				if q := listDir(t, filepath.Join(c.Root(), QuarantineDir)); len(q) != 1 {
					t.Errorf("quarantine/ holds %q, want the damaged copy", q)
				}
				assertNoTemps(t, c)
			})
		}
	}
}

func TestHasBlobIgnoresEmptyFile(t *testing.T) {
	t.Parallel()
	c := newDir(t)
	d := HashBytes([]byte("not empty"))
	p := c.blobPath(d, false)
	os.MkdirAll(filepath.Dir(p), 0o755)
	os.WriteFile(p, nil, 0o444)
	if c.HasBlob(d) {
		t.Error("HasBlob = true for a zero-length file of non-empty content")
	}
	if _, err := c.PutBytes(nil); err != nil {
		t.Fatal(err)
	}
	if !c.HasBlob(emptyDigest) {
		t.Error("HasBlob = false for the empty blob")
	}
}

func TestReadBlobNotFound(t *testing.T) {
	t.Parallel()
	c := newDir(t)
	d := HashBytes([]byte("never stored"))
	if c.HasBlob(d) {
		t.Error("HasBlob = true for a missing blob")
	}
	if _, err := c.ReadBlob(d); !errors.Is(err, ErrNotFound) {
		t.Errorf("ReadBlob = %v, want ErrNotFound", err)
	}
	dst := filepath.Join(t.TempDir(), "out")
	if err := c.RestoreFile(d, dst, 0o644); !errors.Is(err, ErrNotFound) {
		t.Errorf("RestoreFile = %v, want ErrNotFound", err)
	}
	if _, err := os.Lstat(dst); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("dst exists after a failed restore: %v", err)
	}
}

func TestCorruptBlob(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		content []byte
		damage  func(t *testing.T, p string)
	}{
		"raw bit flip": {randomBytes(t, 4096), func(t *testing.T, p string) { corruptFile(t, p, 100) }},
		"raw truncated": {randomBytes(t, 4096), func(t *testing.T, p string) {
			os.Chmod(p, 0o644)
			os.Truncate(p, 4000)
		}},
		"zst bit flip": {textBytes(64 << 10), func(t *testing.T, p string) { corruptFile(t, p, 200) }},
		"zst garbage": {textBytes(64 << 10), func(t *testing.T, p string) {
			os.Chmod(p, 0o644)
			os.WriteFile(p, []byte("not zstd at all"), 0o644)
		}},
		"zst truncated": {textBytes(1 << 20), func(t *testing.T, p string) {
			os.Chmod(p, 0o644)
			st, _ := os.Stat(p)
			os.Truncate(p, st.Size()/2)
		}},
	}
	for name, tt := range tests {
		for _, via := range []string{"ReadBlob", "RestoreFile"} {
			t.Run(name+"/"+via, func(t *testing.T) {
				t.Parallel()
				c := newDir(t)
				d, err := c.PutBytes(tt.content)
				if err != nil {
					t.Fatal(err)
				}
				p, ok := c.statBlob(d)
				if !ok {
					t.Fatal("blob not stored")
				}
				tt.damage(t, p)

				dst := filepath.Join(t.TempDir(), "out")
				os.WriteFile(dst, []byte("previous"), 0o600)
				if via == "ReadBlob" {
					_, err = c.ReadBlob(d)
				} else {
					err = c.RestoreFile(d, dst, 0o644)
				}
				var ce *CorruptError
				if !errors.Is(err, ErrCorrupt) || !errors.As(err, &ce) {
					t.Fatalf("%s = %v, want a *CorruptError", via, err)
				}
				if ce.Kind != "blob" || ce.ID != d.String() || ce.Path != p || ce.Moved == "" {
					t.Errorf("CorruptError = %+v", ce)
				}
				if _, err := os.Stat(ce.Moved); err != nil {
					t.Errorf("quarantined copy: %v", err)
				}
				if c.HasBlob(d) {
					t.Error("HasBlob = true after quarantine")
				}
				if b, _ := os.ReadFile(dst); string(b) != "previous" {
					t.Errorf("dst = %q, want it untouched", b)
				}
				if got := listDir(t, filepath.Dir(dst)); !cmp.Equal(got, []string{"out"}) {
					t.Errorf("restore left %q in dst's directory", got)
				}
				// The next put heals the cache.
				if _, err := c.PutBytes(tt.content); err != nil {
					t.Fatal(err)
				}
				if got, err := c.ReadBlob(d); err != nil || !bytes.Equal(got, tt.content) {
					t.Errorf("ReadBlob after re-put: %d bytes, %v", len(got), err)
				}
			})
		}
	}
}

func TestPutConcurrentSameContent(t *testing.T) {
	t.Parallel()
	for name, content := range map[string][]byte{
		"random": randomBytes(t, 1<<20+5),
		"text":   textBytes(1<<20 + 5),
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c := newDir(t)
			src := writeFile(t, content)
			var wg sync.WaitGroup
			digests := make([]Digest, 8)
			errs := make([]error, 8)
			for i := range digests {
				wg.Go(func() { digests[i], _, errs[i] = c.PutFile(src) })
			}
			wg.Wait()
			want := HashBytes(content)
			for i := range digests {
				if errs[i] != nil || digests[i] != want {
					t.Errorf("PutFile %d = %s, %v", i, digests[i].Short(), errs[i])
				}
			}
			got, err := c.ReadBlob(want)
			if err != nil || !bytes.Equal(got, content) {
				t.Errorf("ReadBlob = %d bytes, %v", len(got), err)
			}
			shard := filepath.Dir(c.blobPath(want, false))
			if files := listDir(t, shard); len(files) != 1 {
				t.Errorf("shard holds %q, want one object", files)
			}
			assertNoTemps(t, c)
		})
	}
}

// TestPutReaderError checks that a failing source leaves nothing behind.
func TestPutReaderError(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	for name, r := range map[string]io.Reader{
		"in sample":    io.MultiReader(strings.NewReader("abc"), errReader{boom}),
		"after sample": io.MultiReader(bytes.NewReader(randomBytes(t, sampleSize+10)), errReader{boom}),
		"compressed":   io.MultiReader(bytes.NewReader(textBytes(sampleSize+10)), errReader{boom}),
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c := newDir(t)
			if _, _, err := c.PutReader(r); !errors.Is(err, boom) {
				t.Errorf("PutReader = %v, want %v", err, boom)
			}
			assertNoTemps(t, c)
			if got := listDir(t, filepath.Join(c.Root(), CASDir)); len(got) != 0 {
				t.Errorf("cas/ holds %q after a failed put", got)
			}
		})
	}
}

func TestPutFileErrors(t *testing.T) {
	t.Parallel()
	c := newDir(t)
	if _, _, err := c.PutFile(filepath.Join(t.TempDir(), "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("PutFile of a missing file = %v, want ErrNotExist", err)
	}
	if _, _, err := c.PutFile(t.TempDir()); err == nil {
		t.Error("PutFile of a directory succeeded")
	}
	assertNoTemps(t, c)
}

// TestBlobAppearsWithoutTemp checks the stored raw blob is byte-identical
// to the content, which a later reflink restore relies on.
func TestRawBlobIsContent(t *testing.T) {
	t.Parallel()
	c := newDir(t)
	content := randomBytes(t, 100<<10)
	d, _ := c.PutBytes(content)
	b, err := os.ReadFile(c.blobPath(d, false))
	if err != nil || !bytes.Equal(b, content) {
		t.Errorf("raw blob file differs from content (%v)", err)
	}
}

type errReader struct{ err error }

func (r errReader) Read([]byte) (int, error) { return 0, r.err }

// assertNoTemps checks that c, once closed (which ends its pack), left
// nothing in tmp/.
func assertNoTemps(t *testing.T, c *Dir) {
	t.Helper()
	c.Close()
	if got := listDir(t, filepath.Join(c.Root(), TempDir)); len(got) != 0 {
		t.Errorf("tmp/ holds %q, want empty", got)
	}
}

func TestReadBlobNotRegular(t *testing.T) {
	t.Parallel()
	secret := writeFile(t, []byte("secret"))
	tests := map[string]func(p string) error{
		"symlink":   func(p string) error { return os.Symlink(secret, p) },
		"fifo":      func(p string) error { return syscall.Mkfifo(p, 0o644) },
		"directory": func(p string) error { return os.Mkdir(p, 0o755) },
	}
	for name, plant := range tests {
		for _, via := range []string{"ReadBlob", "RestoreFile"} {
			t.Run(name+"/"+via, func(t *testing.T) {
				t.Parallel()
				c := newDir(t)
				d := HashBytes([]byte("secret"))
				p := c.blobPath(d, false)
				os.MkdirAll(filepath.Dir(p), 0o755)
				if err := plant(p); err != nil {
					t.Fatal(err)
				}
				var err error
				if via == "ReadBlob" {
					_, err = c.ReadBlob(d)
				} else {
					err = c.RestoreFile(d, filepath.Join(t.TempDir(), "out"), 0o644)
				}
				if !errors.Is(err, ErrCorrupt) {
					t.Fatalf("%s = %v, want ErrCorrupt", via, err)
				}
				if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("planted %s still in place: %v", name, err)
				}
			})
		}
	}
}

// TestStageSmallFileInline: content of at most InlineMax bytes is offered
// for inlining without touching cas/; committed instead, it is stored
// like any blob (compressed if that pays). Larger content is not offered.
func TestStageSmallFileInline(t *testing.T) {
	t.Parallel()
	c := newDir(t)
	dir := t.TempDir()
	small := bytes.Repeat([]byte("a"), InlineMax) // compresses well
	large := bytes.Repeat([]byte("b"), InlineMax+1)
	for _, tc := range []struct {
		name    string
		data    []byte
		offered bool
	}{{"small", small, true}, {"large", large, false}} {
		p := filepath.Join(dir, tc.name)
		if err := os.WriteFile(p, tc.data, 0o644); err != nil {
			t.Fatal(err)
		}
		b, err := c.StageFile(p, nil)
		if err != nil {
			t.Fatal(err)
		}
		data, ok := b.Inline()
		if ok != tc.offered || (ok && !bytes.Equal(data, tc.data)) {
			t.Errorf("%s: Inline() = %d bytes, %v; want offered=%v", tc.name, len(data), ok, tc.offered)
		}
		if c.HasBlob(b.Digest) {
			t.Errorf("%s: in cas/ before Commit", tc.name)
		}
		if err := b.Commit(); err != nil {
			t.Fatal(err)
		}
		got, err := c.ReadBlob(b.Digest)
		if err != nil || !bytes.Equal(got, tc.data) {
			t.Errorf("%s: ReadBlob after Commit = %d bytes, %v", tc.name, len(got), err)
		}
	}
	if _, err := os.Stat(c.blobPath(HashBytes(small), true)); err != nil {
		t.Errorf("small compressible blob committed: %v, want it stored compressed", err)
	}
	assertNoTemps(t, c)
}
